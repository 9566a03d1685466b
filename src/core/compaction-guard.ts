import type { BudgetAssessment, BudgetLevel } from './budget';
import type { CacheState } from './cache-lifetime';
import { turnOf } from './branches';
import type { CompactionReason, ConversationLog } from './history';
import { latestPlan, samePlan } from './plan';

/**
 * Every rule for "compact now?", by the moment it is asked at (`decideCompaction`: before a request,
 * at the end of a turn, on overflow, ahead of need; `decideColdCompaction`: at the start of a turn
 * once the provider's cache has expired), the anti-loop guard they read (`CompactionGuard`, which a
 * conversation's compactor owns and alone notes compactions on), and how a summarizer that keeps
 * failing is rested.
 *
 * Anti-loop rules, so compaction cannot repeat itself turn after turn: a compaction that frees less
 * than the configured share is reported and automatic compaction is not tried again on the next
 * turn, unless the next request would not fit the window at all (waiting would only earn an
 * overflow error); a context-overflow error is answered by at most the configured number of
 * compactions per turn; and two summaries in a row inside one turn with no progress between them
 * stop the turn (`stopsForLoop`), never a third (a pruning alone does not count, see `runAgentTurn`).
 */

export interface GuardState {
  /** The current turn, counted from 0. */
  readonly turn: number;
  readonly overflowRetries: number;
  /** The turn of the last low-gain compaction, if any. */
  readonly lowGainTurn?: number;
}

export const INITIAL_GUARD: GuardState = { turn: 0, overflowRetries: 0 };

export type Verdict = { readonly allowed: true } | { readonly allowed: false; readonly reason: string };

export function beginTurn(state: GuardState): GuardState {
  return { ...state, turn: state.turn + 1, overflowRetries: 0 };
}

/**
 * Whether automatic (threshold) compaction may run now, the view being at `budget`'s level. Over the
 * window it always may: the next request would be refused, so there is no loop to break.
 */
export function mayAutoCompact(state: GuardState, budget: { readonly level: BudgetLevel }): Verdict {
  if (budget.level === 'over') return { allowed: true };
  if (state.lowGainTurn !== undefined && state.turn - state.lowGainTurn <= 1) {
    return {
      allowed: false,
      reason: 'the last compaction freed too little, so automatic compaction waits a turn instead of trying again at once',
    };
  }
  return { allowed: true };
}

/** Whether a context-overflow error may be answered by compacting and retrying. */
export function mayRetryOverflow(state: GuardState, retriesPerTurn: number): Verdict {
  if (state.overflowRetries >= retriesPerTurn) {
    return {
      allowed: false,
      reason: `the request overflowed the context window again after ${state.overflowRetries} compaction${state.overflowRetries === 1 ? '' : 's'} in this turn`,
    };
  }
  return { allowed: true };
}

export function noteOverflowRetry(state: GuardState): GuardState {
  return { ...state, overflowRetries: state.overflowRetries + 1 };
}

export function noteCompaction(state: GuardState, lowGain: boolean): GuardState {
  if (lowGain) return { ...state, lowGainTurn: state.turn };
  const { lowGainTurn: _cleared, ...rest } = state;
  return rest;
}

/** What to do about compaction at a moment of a turn. */
export type CompactionDecision =
  | { readonly kind: 'none' }
  | { readonly kind: 'blocked'; readonly reason: string }
  | { readonly kind: 'ask' }
  | { readonly kind: 'compact' }
  | { readonly kind: 'ahead' };

/**
 * The moments a conversation is asked "compact now?", each named by its caller:
 * - `before-request`: before each request of the agent's turn (between its steps too);
 * - `end-of-turn`: once the agent's turn is over, for a compaction in the background;
 * - `overflow`: the provider refused a request as too large for its window;
 * - `ahead`: in the background after a record was appended, whether to prepare a summary ahead of need.
 */
export type CompactionMoment =
  | {
      readonly at: 'before-request';
      /** The user wants to be asked before an automatic compaction. */
      readonly confirm: boolean;
      /** Already asked in this turn (asked once per turn at most). */
      readonly asked: boolean;
      /** The user answered "Not now" in this turn. */
      readonly declined: boolean;
    }
  | { readonly at: 'end-of-turn'; readonly confirm: boolean }
  | { readonly at: 'overflow'; readonly retriesPerTurn: number }
  | {
      readonly at: 'ahead';
      /** The conversation's last summary: its tokens after, and the user's messages since it. */
      readonly last?: { readonly tokensAfter: number; readonly messagesSince: () => number };
    };

/** What the rules read of the budget. */
export type GuardBudget = Pick<BudgetAssessment, 'level' | 'shouldCompact' | 'warningAt'>;

/**
 * The one rule for whether to compact now, by moment:
 * - before a request, at the compaction point: compact (or ask first, once, when the user wants to be
 *   asked; nothing after "Not now"), unless the guard says automatic compaction waits;
 * - at the end of a turn, the same, except that a compaction needing a question waits for the next
 *   turn, which asks in the chat;
 * - on overflow: compact and retry, at most the configured number of times per turn;
 * - ahead: past the warning level a summary may be prepared, unless the last summary could not get
 *   below the warning level and the user has said nothing since (summarizing again would only churn).
 *   The compaction that applies it is decided before the agent's next request.
 */
export function decideCompaction(budget: GuardBudget, guard: GuardState, moment: CompactionMoment): CompactionDecision {
  switch (moment.at) {
    case 'ahead': {
      if (budget.level !== 'warning' && budget.level !== 'critical' && budget.level !== 'over') return { kind: 'none' };
      const last = moment.last;
      if (last && last.tokensAfter >= budget.warningAt && last.messagesSince() === 0) return { kind: 'none' };
      return { kind: 'ahead' };
    }
    case 'overflow': {
      const verdict = mayRetryOverflow(guard, moment.retriesPerTurn);
      return verdict.allowed ? { kind: 'compact' } : { kind: 'blocked', reason: verdict.reason };
    }
    case 'end-of-turn': {
      const decision = atCompactionPoint(budget, guard, moment.confirm, false);
      return decision.kind === 'compact' ? decision : { kind: 'none' };
    }
    case 'before-request':
      if (moment.declined) return { kind: 'none' };
      return atCompactionPoint(budget, guard, moment.confirm, moment.asked);
  }
}

function atCompactionPoint(budget: GuardBudget, guard: GuardState, confirm: boolean, asked: boolean): CompactionDecision {
  if (!budget.shouldCompact) return { kind: 'none' };
  const verdict = mayAutoCompact(guard, budget);
  if (!verdict.allowed) return { kind: 'blocked', reason: verdict.reason };
  if (confirm) return asked ? { kind: 'none' } : { kind: 'ask' };
  return { kind: 'compact' };
}

/**
 * A conversation's anti-loop guard, which the conversation's compactor owns: callers name their moment
 * (`decide`) and say when an agent's turn starts; the compactor alone notes the compactions it made.
 * Until the first turn starts in this session, the guard is the one the log leaves (`fromLog`).
 */
export class CompactionGuard {
  private state: GuardState | undefined;

  constructor(
    private readonly budget: () => GuardBudget,
    private readonly fromLog: () => GuardState = () => INITIAL_GUARD,
  ) {}

  /** The guard as it stands. */
  current(): GuardState {
    return this.state ?? this.fromLog();
  }

  /** An agent's turn starts: the overflow retries of the last one are forgotten. */
  startTurn(): void {
    this.state = beginTurn(this.current());
  }

  /** Whether to compact now, at `moment`. Deciding to retry an overflow counts the retry. */
  decide(moment: CompactionMoment): CompactionDecision {
    const decision = decideCompaction(this.budget(), this.current(), moment);
    if (moment.at === 'overflow' && decision.kind === 'compact') this.state = noteOverflowRetry(this.current());
    return decision;
  }

  /** A compaction for `reason` was applied; only automatic ones (threshold and overflow) are held against the next. */
  noteCompaction(reason: CompactionReason, lowGain: boolean): void {
    if (reason !== 'threshold' && reason !== 'overflow') return;
    this.state = noteCompaction(this.current(), lowGain);
  }
}

/** What a cold cache lets Longrun do before the next request. */
export type ColdCompaction =
  | { readonly kind: 'none'; readonly reason: string }
  /** Prune what is no longer needed; `applyAhead`: apply the summary prepared ahead first. */
  | { readonly kind: 'prune'; readonly applyAhead: boolean };

export interface ColdMoment {
  /** `longrun.cache.coldCompaction`. */
  readonly enabled: boolean;
  readonly cache: CacheState;
  /** When the conversation's last request was sent. */
  readonly lastRequestAt: number | undefined;
  /** When a compaction for an expired cache was last applied, if ever. */
  readonly lastColdAt: number | undefined;
  /** A turn is under way: its requests follow each other, and a compaction now would break its cache. */
  readonly midTurn: boolean;
  readonly level: BudgetLevel;
  /** A summary prepared ahead is ready to apply. */
  readonly aheadReady: boolean;
  /** A summary is being prepared ahead: a pruning now would leave it nothing to apply to. */
  readonly aheadRunning: boolean;
}

/**
 * The rule for a cold cache, asked at the start of a turn: the time-based trigger of compaction, made
 * useful. It never calls a summarizer on a timer, runs only when the cache's lifetime has lapsed, at
 * the start of a turn (never in the middle of one), and once per lapse.
 */
export function decideColdCompaction(moment: ColdMoment): ColdCompaction {
  if (!moment.enabled) return { kind: 'none', reason: 'longrun.cache.coldCompaction is off' };
  if (moment.midTurn) return { kind: 'none', reason: 'a turn is under way' };
  if (moment.cache.kind !== 'expired')
    return { kind: 'none', reason: moment.cache.kind === 'warm' ? 'the cache is still warm' : "the cache's lifetime is unknown" };
  if (moment.lastColdAt !== undefined && moment.lastRequestAt !== undefined && moment.lastColdAt >= moment.lastRequestAt) {
    return { kind: 'none', reason: 'already done since the last request' };
  }
  const past = moment.level === 'warning' || moment.level === 'critical' || moment.level === 'over';
  if (moment.aheadRunning && !moment.aheadReady && past) return { kind: 'none', reason: 'a summary being prepared would no longer apply' };
  return { kind: 'prune', applyAhead: moment.aheadReady && past };
}

/**
 * The guard as a conversation's log leaves it, so that it outlives a reload. Automatic compaction waits
 * after a low-gain compaction for the rest of its turn and the whole next one: while the user has sent
 * at most one message since it, the one of the turn under way (a turn's message is in the log before
 * its turn begins).
 */
export function guardAfter(lastCompaction: { readonly lowGain: boolean } | undefined, userMessagesSince: number): GuardState {
  if (!lastCompaction?.lowGain) return INITIAL_GUARD;
  return { turn: userMessagesSince - 1, overflowRetries: 0, lowGainTurn: 0 };
}

/**
 * How a summarizer has done in a conversation's latest compactions. Once `SUMMARY_FAILURES_TO_REST`
 * of its summaries in a row failed, the next `RESTING_COMPACTIONS` automatic compactions do not ask
 * it: each would cost a request (and up to the summarizer's time limit) likely to fail again, while
 * the extractive summary compacts at once. Then it is asked again. A compaction the user asks for
 * always asks it, and one summary it writes ends the streak. Only real failures count (an error, a
 * time-out, no text, noise): a summary turned down for its shape or length is real text, and leaves
 * the streak as it was.
 */
export interface SummaryStreak {
  /** The summarizer, by name: another one starts afresh. */
  readonly summarizer: string;
  /** Its summaries that failed in a row. */
  readonly failures: number;
  /** Why the last one failed. */
  readonly lastFailure: string;
  /** Automatic compactions that will still not ask it. */
  readonly resting: number;
}

export const SUMMARY_FAILURES_TO_REST = 2;
export const RESTING_COMPACTIONS = 4;

/**
 * What became of a compaction's summary: written by the summarizer, failed, turned down for its shape
 * or length (`misshapen`), not asked for, or not needed.
 */
export type SummaryResult =
  | { readonly kind: 'written' }
  | { readonly kind: 'failed'; readonly failure: string }
  | { readonly kind: 'misshapen' }
  | { readonly kind: 'rested' }
  | { readonly kind: 'none' };

/** Whether a compaction for `reason` asks `summarizer` for its summary, and if not, why. */
export function maySummarize(streak: SummaryStreak | undefined, summarizer: string, reason: CompactionReason): Verdict {
  if (reason === 'manual' || streak?.summarizer !== summarizer || streak.resting <= 0) return { allowed: true };
  return {
    allowed: false,
    reason: `${summarizer} was not asked, since its last ${streak.failures} summaries failed (the last: ${streak.lastFailure})`,
  };
}

/** The streak after a compaction's summary came out as `result`. */
export function noteSummary(streak: SummaryStreak | undefined, summarizer: string, result: SummaryResult): SummaryStreak | undefined {
  const own = streak?.summarizer === summarizer ? streak : undefined;
  switch (result.kind) {
    case 'written':
      return undefined;
    case 'none':
    case 'misshapen':
      return streak;
    case 'rested':
      return own ? { ...own, resting: Math.max(0, own.resting - 1) } : streak;
    case 'failed': {
      const failures = (own?.failures ?? 0) + 1;
      return { summarizer, failures, lastFailure: result.failure, resting: failures >= SUMMARY_FAILURES_TO_REST ? RESTING_COMPACTIONS : 0 };
    }
  }
}

/**
 * What the chat is told when automatic compaction first stops asking the summarizer (after the
 * failure that starts its first rest); undefined after any other summary.
 */
export function restNotice(before: SummaryStreak | undefined, after: SummaryStreak | undefined): string | undefined {
  if (!after || after.failures !== SUMMARY_FAILURES_TO_REST || after.resting === 0 || before?.failures === after.failures) return undefined;
  return (
    `Summaries by ${after.summarizer} failed ${after.failures} times in a row (the last: ${after.lastFailure}). ` +
    `The next ${RESTING_COMPACTIONS} automatic compactions do not ask it: they use an extractive summary (what was said and done, without a model), then it is asked again. ` +
    'Compact Conversation asks it at any time.'
  );
}

/**
 * Whether the work moved on after the summary `compactionId` of `log`: in what was
 * appended since, the plan changed, the agent wrote a file, a command it ran exited 0, or it read a
 * file the turn had not read before that compaction (a search that goes on through new files).
 * Reading again what the turn read before, searching and failing do not count: a turn that only does those
 * between two compactions fills the window again without getting anywhere. True when that compaction
 * is not in `log` (undone, or on another branch): there is then nothing to hold against the turn.
 */
export function progressSince(log: ConversationLog, compactionId: string): boolean {
  let at = -1;
  for (let i = log.length - 1; i >= 0 && at < 0; i--) {
    const record = log[i]!;
    if (record.type === 'compaction' && record.entry.id === compactionId) at = i;
  }
  if (at < 0) return true;
  // What the turn of that compaction had read before it: reading it again goes round in a circle.
  const turn = turnOf(log[at]!);
  const readBefore = new Set<string>();
  for (let i = 0; i < at; i++) {
    const record = log[i]!;
    if (record.type === 'file' && record.event.kind === 'read' && turnOf(record) === turn) readBefore.add(record.event.path);
  }
  let plan = latestPlan(log, at)?.update.steps;
  for (let i = at + 1; i < log.length; i++) {
    const record = log[i]!;
    switch (record.type) {
      case 'change':
        return true;
      case 'file':
        if (record.event.actor === 'agent' && (record.event.kind === 'created' || record.event.kind === 'modified')) return true;
        if (record.event.actor === 'agent' && record.event.kind === 'read' && !readBefore.has(record.event.path)) return true;
        break;
      case 'command':
        if (record.run.exitCode === 0 && !record.run.stopped) return true;
        break;
      case 'plan':
        if (!plan || !samePlan(plan, record.plan.steps)) return true;
        plan = record.plan.steps;
        break;
      default:
        break;
    }
  }
  return false;
}

/**
 * The rule against compaction loops: a compaction inside a turn never ends it, but when the one
 * before it in the same turn (`earlierInTurn`) was followed by no progress (`progressSince`), the
 * turn stops after this one, with an offer to the user, rather than going on to compact a third
 * time. `log` is the branch's log before this compaction.
 */
export function stopsForLoop(log: ConversationLog, earlierInTurn: string | undefined): boolean {
  return earlierInTurn !== undefined && !progressSince(log, earlierInTurn);
}
