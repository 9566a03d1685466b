import {
  abandonedPath,
  abandonedWork,
  accountSummary,
  renderAccount,
  worthCarrying,
  type AbandonedFile,
  type AbandonedWork,
  type DiskState,
} from '../../core/branch-account';
import { turnOf } from '../../core/branches';
import type { LogRecord } from '../../core/history';
import { latestPlan, samePlan, type PlanStep } from '../../core/plan';
import { checkPlan } from '../../core/plan-check';
import type { NoticeSurface } from './in-sight-chat';
import { inlineCode } from './chat-text';
import { CARRY_ACCOUNT_COMMAND, REVERT_COMMAND } from '../contributions';
import type { Conversation } from '../conversation/conversation';
import type { ConversationRegistry } from '../conversation/conversation-registry';
import { planMarkdown } from '../plan/plan-chat';
import { revertOffer, textHash, type RevertFiles, type RevertOffer } from './revert-changes';

/**
 * What the chat offers when a request continues from an earlier point than the chat went on from
 * last (Restore Checkpoint, an edited request, a retry, a fork), about the turns it leaves behind:
 * to revert the changes to files they made (`revert-changes.ts`; not in a fork, whose parent chat
 * still holds them), and to carry a short account of what they did into the branch the chat goes
 * on with (`branch-account.ts`). It also shows the plan this point of the chat left, when it is not
 * the one the turns left behind had. Nothing is forced: declined or ignored, an offer changes
 * nothing, and nothing of the old turns reaches the model.
 */

export interface BranchOffersDeps {
  readonly registry: ConversationRegistry;
  /** How the files the abandoned turns changed are read now, to say whether their changes are still there. */
  readonly files: Pick<RevertFiles, 'textForRevert'>;
  readonly newId: () => string;
  readonly now: () => number;
  /** A notice shown in the chat, for the log. */
  readonly said: (message: string) => void;
}

/** What a request's abandoned turns left, found before the request begins its turn. */
export interface LeftBehind {
  readonly work: AbandonedWork;
  /** The plan in force where the turns left behind ended (whoever wrote it); absent when there was none. */
  readonly planThere?: readonly PlanStep[];
  /** The account the user may carry; absent when the turns did nothing worth carrying. */
  readonly account?: string;
}

export class BranchOffers {
  constructor(private readonly deps: BranchOffersDeps) {}

  /**
   * When the request continues from an earlier turn than the chat went on from last, and the turns
   * it leaves behind changed files, the chat says so and offers to revert exactly those changes.
   */
  offerRevert(conversation: Conversation, chat: NoticeSurface, chatId: string | undefined): void {
    const shared = conversation.sharedRecords();
    const offer = revertOffer(shared.all, shared.turns(), conversation.leaf(), chatId);
    if (offer) this.showRevertOffer(conversation.id, offer, chat);
  }

  /** "Start Over" (or a retry of a chat's first request) leaves the chat's whole conversation behind. */
  offerRevertOfStartOver(chat: NoticeSurface, chatId: string | undefined): void {
    const previous = this.deps.registry.currentIfLoaded();
    if (!previous || chatId === undefined) return;
    const shared = previous.sharedRecords();
    const turns = shared.turns();
    const latest = turns.latest();
    if (latest === null || turns.info(latest)?.chat !== chatId) return;
    const offer = revertOffer(shared.all, turns, null, chatId);
    if (offer) this.showRevertOffer(previous.id, offer, chat);
  }

  private showRevertOffer(conversationId: string, offer: RevertOffer, chat: NoticeSurface): void {
    const files = [...new Map(offer.changes.map((c) => [c.path, c])).values()];
    const list = files.map((c) => `${inlineCode(c.path)}${c.kind === 'created' ? ' (created)' : ''}`).join(', ');
    const turns = offer.turns === 1 ? 'The turn this chat no longer holds' : `The ${offer.turns} turns this chat no longer holds`;
    const message = `${turns} changed ${files.length === 1 ? 'a file' : `${files.length} files`}: ${list}. Those changes are still in the workspace.`;
    chat.notice(`\n\n> ${message} "Revert Longrun's changes" shows exactly what it would write back, and asks first.\n\n`, [
      { command: REVERT_COMMAND, title: "Revert Longrun's changes…", arguments: [conversationId, offer.changes.map((c) => c.id)] },
    ]);
    this.deps.said(message);
  }

  /**
   * What the turns a request on `conversation` (at its leaf, before its turn begins) leaves behind
   * did, with the account the user may carry; undefined when it leaves none behind.
   */
  async leftBehind(conversation: Conversation, signal: AbortSignal): Promise<LeftBehind | undefined> {
    const shared = conversation.sharedRecords();
    const abandoned = abandonedPath(shared.all, shared.turns(), conversation.leaf());
    if (!abandoned) return undefined;
    // Their messages may be held without their content (another branch's): read back for the account.
    const left = new Set(abandoned.turns);
    const theirs = abandoned.path.filter((r) => left.has(turnOf(r) ?? ''));
    const whole = await conversation.recordsRead(theirs);
    const replaced = new Map<LogRecord, LogRecord>(theirs.map((r, i) => [r, whole[i] ?? r]));
    const work = abandonedWork({ ...abandoned, path: abandoned.path.map((r) => replaced.get(r) ?? r) });
    const there = latestPlan(abandoned.path)?.update.steps;
    const planThere = there ? { planThere: there } : {};
    if (!worthCarrying(work)) return { work, ...planThere };
    const disk = new Map<string, DiskState>();
    for (const file of work.files) disk.set(file.path, await this.diskState(file, signal));
    return { work, ...planThere, account: renderAccount(work, disk) };
  }

  /**
   * Says in the chat, once the request's turn has begun on `conversation`: the plan this point of the
   * chat left, when the turns left behind had another; and the offer to carry their account.
   */
  show(left: LeftBehind | undefined, conversation: Conversation, chat: NoticeSurface): void {
    if (!left) return;
    const here = checkPlan(conversation.log());
    if (here && (!left.planThere || !samePlan(here.update.steps, left.planThere)))
      chat.markdown(planMarkdown(here, 'The plan at this point of the chat'));
    if (!left.account) return;
    const turn = conversation.leaf();
    const turns =
      left.work.turns.length === 1 ? 'The turn this chat no longer holds' : `The ${left.work.turns.length} turns this chat no longer holds`;
    const message = `${turns} left ${accountSummary(left.work)}.`;
    chat.notice(
      `\n\n> ${message} "Carry over what they learned" adds a short account of them (their requests, plan, files and errors) to your next request; without it, nothing of them reaches the model.\n\n`,
      [{ command: CARRY_ACCOUNT_COMMAND, title: 'Carry over what they learned', arguments: [conversation.id, turn, left.account, left.work.turns] }],
    );
    this.deps.said(message);
  }

  /**
   * Carries an account into the branch holding `turn` (the one the offer was made on, or one that
   * went on from it): a record of that branch, which its next request takes in. Carried once, however
   * often the button is clicked. False when the conversation or the turn is gone.
   */
  async carry(conversationId: unknown, turn: unknown, text: unknown, turns: unknown): Promise<boolean> {
    if (typeof conversationId !== 'string' || typeof turn !== 'string' || typeof text !== 'string' || !Array.isArray(turns)) return false;
    const told = turns.filter((t): t is string => typeof t === 'string');
    const conversation = await this.deps.registry.branchHolding(conversationId, turn);
    if (!conversation) return false;
    const key = told.join(' ');
    if (conversation.log().some((r) => r.type === 'account' && r.account.turns.join(' ') === key)) return true;
    await conversation.append([{ type: 'account', account: { id: this.deps.newId(), text, turns: told, at: this.deps.now() } }]);
    this.deps.said('What the turns left behind had done goes to the model with the next request.');
    return true;
  }

  /** Whether `file` still holds what the abandoned turns left in it. */
  private async diskState(file: AbandonedFile, signal: AbortSignal): Promise<DiskState> {
    try {
      const now = await this.deps.files.textForRevert(file.path, signal);
      if (now === undefined) return 'gone';
      return textHash(now.text) === file.afterHash ? 'as-left' : 'changed';
    } catch {
      return 'unknown';
    }
  }
}
