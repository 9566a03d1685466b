/**
 * What a VS Code chat's history says about the Longrun conversation a request continues. VS Code
 * owns the chat: Restore Checkpoint, Retry, an edited request and Fork all come to a history that
 * holds fewer (or copied) turns, and the history is what the user sees. Each Longrun response
 * carries, in its result's metadata, the conversation's id and the id of the turn it answered, so
 * the responses still in the history name the path the next request continues: its parent is the
 * last turn they name. Free of `vscode`: the history is read by shape, so it is tested in Node.
 */

/** What Longrun puts in a response's metadata. */
export interface TurnMetadata {
  readonly conversationId?: string;
  /** The turn the response answered, or the turn a command that changed nothing read. */
  readonly turnId?: string;
  readonly compactions?: number;
  readonly command?: string;
}

/** Where a chat stands, by its history. */
export interface ChatPosition {
  /** Whether the history holds any turn at all (an empty one is a new chat, or one started over). */
  readonly empty: boolean;
  /** Whether Longrun answered in this chat. */
  readonly answered: boolean;
  /** The conversation the latest Longrun response names, if any names one. */
  readonly conversationId?: string;
  /**
   * The turns of that conversation the history's responses name, oldest first: the last one is the
   * parent of the next turn. Empty when the responses name none (they come from a Longrun from
   * before turns were kept: the conversation continues its trunk).
   */
  readonly turns: readonly string[];
}

interface ResponseTurnLike {
  readonly participant?: unknown;
  readonly result?: { readonly metadata?: unknown };
}

/** The position of a chat whose history is `history`, for the participant `participantId`. */
export function chatPosition(history: readonly unknown[], participantId: string): ChatPosition {
  const responses: TurnMetadata[] = [];
  for (const turn of history) {
    const metadata = longrunMetadata(turn, participantId);
    if (metadata) responses.push(metadata);
  }
  let conversationId: string | undefined;
  for (const m of responses) if (m.conversationId !== undefined) conversationId = m.conversationId;
  const turns: string[] = [];
  for (const m of responses) {
    if (m.conversationId !== conversationId || m.turnId === undefined) continue;
    if (turns.at(-1) !== m.turnId) turns.push(m.turnId);
  }
  return { empty: history.length === 0, answered: responses.length > 0, ...(conversationId ? { conversationId } : {}), turns };
}

/** The metadata of a response turn of Longrun's, read defensively; undefined for any other turn. */
function longrunMetadata(turn: unknown, participantId: string): TurnMetadata | undefined {
  if (!turn || typeof turn !== 'object') return undefined;
  const response = turn as ResponseTurnLike;
  if (response.participant !== participantId || !response.result || typeof response.result !== 'object') return undefined;
  const metadata = response.result.metadata;
  if (!metadata || typeof metadata !== 'object') return {};
  const { conversationId, turnId } = metadata as { conversationId?: unknown; turnId?: unknown };
  return {
    ...(typeof conversationId === 'string' && conversationId.length > 0 ? { conversationId } : {}),
    ...(typeof turnId === 'string' && turnId.length > 0 ? { turnId } : {}),
  };
}
