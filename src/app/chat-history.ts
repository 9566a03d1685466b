/**
 * Which Longrun conversation a VS Code chat continues. Each chat's history holds the results of its
 * earlier requests; Longrun puts the conversation's id in their metadata, so a chat reopened from
 * VS Code's history (or one of two chats open at once) finds its own conversation again. Free of
 * `vscode`: it reads the turns by shape, so it is tested in Node.
 */

interface ResponseTurnLike {
  readonly participant?: unknown;
  readonly result?: { readonly metadata?: unknown };
}

/** The conversation id of the latest response in `history` from `participantId`, if any. */
export function conversationIdOf(history: readonly unknown[], participantId: string): string | undefined {
  for (let i = history.length - 1; i >= 0; i--) {
    const turn = history[i] as ResponseTurnLike | undefined;
    if (!turn || typeof turn !== 'object' || turn.participant !== participantId || !turn.result) continue;
    const metadata = turn.result.metadata;
    if (metadata && typeof metadata === 'object') {
      const id = (metadata as { conversationId?: unknown }).conversationId;
      if (typeof id === 'string' && id.length > 0) return id;
    }
  }
  return undefined;
}
