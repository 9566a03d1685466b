import { PARTICIPANT_ID } from '../contributions';
import type { Conversation } from '../conversation/conversation';
import type { ConversationRegistry } from '../conversation/conversation-registry';
import { ConversationChangedError } from '../store/errors';
import type { BranchOffers } from './branch-offers';
import { chatPosition } from './chat-history';
import type { TurnRequest } from './chat-surface';
import type { ChatNotices } from './chat-notices';
import { READ_AGAIN } from './error-text';
import type { NoticeSurface } from './in-sight-chat';

export interface BranchRoutingDeps {
  readonly registry: ConversationRegistry;
  readonly log: { warn(message: string): void };
  readonly notices: ChatNotices;
  readonly offers: BranchOffers;
}

/**
 * Which conversation, and which branch of it, a chat request continues: from the chat's history,
 * since VS Code owns the chat, and its Restore Checkpoint, Retry, edited requests, Fork and Start
 * Over decide what the conversation is.
 */
export class BranchRouting {
  constructor(private readonly deps: BranchRoutingDeps) {}

  /**
   * The conversation, on the branch the chat's history names: the conversation its latest Longrun
   * response names, continued from the last turn the history still holds (a rewound, retried or
   * edited turn is not in it, so the new turn becomes its sibling; a forked chat holds copies of its
   * parent chat's responses, so it continues from the fork point on a branch of its own). A new chat
   * continues the conversation picked with "Open Conversation…", else starts a new one (agent
   * requests only); a chat Longrun answered before turns were kept continues the current one.
   */
  async conversationOf(request: TurnRequest, agentRequest: boolean, chat: NoticeSurface): Promise<Conversation | undefined> {
    try {
      return await this.conversationIn(request, agentRequest, chat);
    } catch (error) {
      if (!ConversationChangedError.isInstance(error)) throw error;
      // The registry has dropped its out-of-date copy: found again, the conversation is read anew.
      this.deps.notices.say(chat, `${error.message} ${READ_AGAIN}`);
      return this.conversationIn(request, agentRequest, chat);
    }
  }

  /** `conversationOf`, its view read back whole; rejects with `ConversationChangedError` when the files changed under it. */
  private async conversationIn(request: TurnRequest, agentRequest: boolean, chat: NoticeSurface): Promise<Conversation | undefined> {
    const found = await this.findConversation(request, agentRequest, chat);
    await found?.loadView();
    return found;
  }

  private async findConversation(request: TurnRequest, agentRequest: boolean, chat: NoticeSurface): Promise<Conversation | undefined> {
    const { registry } = this.deps;
    const position = chatPosition(request.history, PARTICIPANT_ID);
    // A conversation picked for "the next new chat" is for a new chat only; a request elsewhere drops it.
    if (agentRequest && !position.empty) registry.takePendingOpen();
    if (position.conversationId !== undefined) {
      const id = position.conversationId;
      const found = await registry.branch(id, await this.parentIn(id, position.turns));
      if (found) return found;
      this.deps.log.warn(`The chat's conversation ${id} is not in this workspace's storage; starting a new one.`);
      return agentRequest ? registry.startNew() : undefined;
    }
    if (position.empty) {
      if (agentRequest) this.deps.offers.offerRevertOfStartOver(chat, request.chat);
      const picked = registry.takePendingOpen();
      const opened = picked
        ? await registry.open(picked).catch((error: unknown) => {
            // Still the one to continue when it is read again.
            registry.continueInNextChat(picked);
            throw error;
          })
        : undefined;
      if (opened) return opened;
      return agentRequest ? registry.startNew() : registry.current();
    }
    return position.answered || !agentRequest ? registry.current() : registry.startNew();
  }

  /**
   * The turn the next one continues: the last of the chat's turns the conversation holds (null when
   * the chat names none: a conversation from before turns, whose trunk it continues). Turns the
   * records lack (a damaged line) are skipped, said in the log.
   */
  private async parentIn(id: string, turns: readonly string[]): Promise<string | null> {
    for (let i = turns.length - 1; i >= 0; i--) {
      const turn = turns[i]!;
      if (await this.deps.registry.hasTurn(id, turn)) {
        if (i < turns.length - 1) this.deps.log.warn(`Conversation ${id} lacks the chat's latest turns; continuing from turn ${turn}.`);
        return turn;
      }
    }
    if (turns.length > 0) this.deps.log.warn(`Conversation ${id} holds none of the chat's turns; continuing from its start.`);
    return null;
  }
}
