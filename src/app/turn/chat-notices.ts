import type { CompactionOutcome } from '../../core/compaction';
import type { CompactionReason } from '../../core/history';
import { showOutcome } from '../compaction/compaction-dialog';
import type { Conversation } from '../conversation/conversation';
import type { NoticeSurface } from './in-sight-chat';

/** Notices kept for the status of tests and tools. */
const KEPT_NOTICES = 20;

export interface ChatNoticesDeps {
  readonly reporter: { report(outcome: CompactionOutcome, reason: CompactionReason): void };
  readonly log: { info(message: string): void };
  /** Whether a compaction's summary can be opened from the chat. */
  readonly summariesShown: boolean;
}

/**
 * What the turns tell the chat besides the agent's answer (why a compaction ran, a cut prompt, a
 * tool not offered …): each also goes to the log, and the latest are kept for the status of tests
 * and tools.
 */
export class ChatNotices {
  private readonly notices: string[] = [];

  constructor(private readonly deps: ChatNoticesDeps) {}

  /** A notice said in the chat: to the log, and kept. */
  remember(message: string): void {
    this.deps.log.info(`Said in the chat: ${message}`);
    this.notices.push(message);
    if (this.notices.length > KEPT_NOTICES) this.notices.shift();
  }

  /** Says `message` in `chat` as a notice, and remembers it. */
  say(chat: NoticeSurface, message: string): void {
    chat.notice(`\n\n> ${message}\n\n`);
    this.remember(message);
  }

  /** Says in the chat what the conversation's compactions have to say and have not said yet. */
  tell(conversation: Conversation, chat: NoticeSurface): void {
    const notice = conversation.takeNotice();
    if (notice) this.say(chat, notice);
  }

  /** A compaction's outcome: logged (unless it was joined while it ran elsewhere, which logged it) and shown in the chat. */
  reportOutcome(outcome: CompactionOutcome & { joined?: boolean }, reason: CompactionReason, chat: NoticeSurface, conversationId: string): void {
    if (!outcome.joined) this.deps.reporter.report(outcome, reason);
    showOutcome(outcome, reason, chat, conversationId, this.deps.summariesShown);
  }

  /** The latest notices shown in the chat, newest last. */
  recent(): readonly string[] {
    return this.notices;
  }
}
