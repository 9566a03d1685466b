import type { Conversation } from '../conversation/conversation';
import type { TurnMetadata } from './chat-history';
import type { TurnRequest } from './chat-surface';
import type { NoticeSurface } from './in-sight-chat';

/**
 * One chat request as the turn controller handles it: what VS Code sent, the chat it answers in, its
 * Stop, and what its result's metadata says. Each request has its own, so two chats answering at
 * once share nothing; the work a request starts (its tools' writes, the approvals they ask for)
 * finds its turn again through `TurnController.activeSurface`.
 */
export class Turn {
  /** What VS Code keeps with the response: the conversation and the turn it answered, so far. */
  metadata: TurnMetadata = {};
  private open = true;

  constructor(
    readonly request: TurnRequest,
    readonly chat: NoticeSurface,
    readonly signal: AbortSignal,
  ) {}

  /** The chat while VS Code still takes what the request shows; undefined once the request has ended. */
  shownIn(): NoticeSurface | undefined {
    return this.open ? this.chat : undefined;
  }

  /** The request has ended: VS Code takes nothing more from it. */
  end(): void {
    this.open = false;
  }
}

/** The result's metadata for a request on `conversation`: its id and its branch's leaf turn. */
export function metadataOf(conversation: Pick<Conversation, 'id' | 'leaf'>): TurnMetadata {
  const turnId = conversation.leaf();
  return { conversationId: conversation.id, ...(turnId !== null ? { turnId } : {}) };
}
