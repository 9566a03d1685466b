import { setImmediate as nextTurn } from 'node:timers/promises';
import {
  CompactionGuard,
  guardAfter,
  maySummarize,
  noteSummary,
  restNotice,
  type SummaryResult,
  type SummaryStreak,
} from '../../core/compaction-guard';
import { computeColdPruning, lowGain, tokensAfterAt, type CompactionOutcome, type ComputedCompaction } from '../../core/compaction';
import type { CompactionConfig } from '../../core/config';
import type { ContextWindow } from '../../core/context-window';
import { keepRecentTokens } from '../../core/cut-point';
import type { EngineMemo } from '../../core/engine-memo';
import { summaryMessage, type CompactionEntry, type CompactionReason, type LogRecord } from '../../core/history';
import type { Message } from '../../core/messages';
import { withSummarize, type Summarizer, type SummaryUsage } from '../../core/ports';
import { SUMMARY_BASIS } from '../../core/usage-calibration';
import { IN_THREAD_ENGINE } from './compaction-engine';
import type { CompactOptions, ConversationDeps } from '../conversation/conversation-deps';
import type { ConversationMeter, ModelContext } from '../conversation/conversation-meter';
import { ledgersAtApply } from './ledgers-at-apply';
import { SummaryAhead, type AheadState } from './summary-ahead';
import { withSummary } from './summary-edit';

/** Why a compaction cannot run without a model to write its summary, and what to do. */
const NO_SUMMARIZER = 'No model is available to write the summary. Pick a model in the chat, or set longrun.compaction.model.';

/** What the compactor reads of its conversation and how it writes to it. */
export interface CompactorSource {
  readonly conversationId: string;
  readonly deps: ConversationDeps;
  readonly meter: ConversationMeter;
  /** The records of the branch in use; a branch switched to is another array. */
  records(): LogRecord[];
  /** Every record of the conversation, on every branch. */
  all(): LogRecord[];
  /** The turn at the tip of the branch in use. */
  leaf(): string | null;
  memo(): EngineMemo;
  /** Writes records on the branch's leaf turn and takes them into the branch; resolves to what was stored. */
  write(records: readonly LogRecord[]): Promise<LogRecord[]>;
  /** The compactor started or ended a compaction, or the guard changed. */
  changed(): void;
  /** Lets go of what a compaction applied just now took out of the view (see `Conversation`). */
  letGoArchived(): void;
}

/**
 * A conversation's compactions: the one running (a second request joins it), the summary prepared
 * ahead once the view passes the warning level, the anti-loop guard of automatic compaction, and
 * computing, reviewing and applying a compaction to the log as it is when the summary comes back.
 */
export class ConversationCompactor {
  private compacting: Promise<CompactionOutcome> | undefined;
  /** Why the last computed compaction no longer applied to the log (for the message that says so). */
  private missed: string | undefined;
  /** The threshold compaction computed ahead of need, from a snapshot taken past the warning level. */
  private readonly ahead = new SummaryAhead();
  /** The anti-loop guard: as the turns of this session left it; until the first, as the log leaves it. */
  readonly guard: CompactionGuard;
  /** How the summarizer did in this session's compactions: one that keeps failing is not asked every time. */
  private streak: SummaryStreak | undefined;
  /** What the chat is to be told, once, about the summarizer (see `takeNotice`). */
  private notice: string | undefined;

  constructor(private readonly source: CompactorSource) {
    this.guard = new CompactionGuard(
      () => source.meter.assess(),
      () => {
        const last = this.lastCompaction();
        return guardAfter(last, last?.lowGain ? this.userMessagesSince(last.id) : 0);
      },
    );
  }

  /**
   * What the chat is to be told about compaction and has not been yet (summaries that keep failing
   * and are no longer asked for), once: the next chat that shows a compaction or starts a turn.
   */
  takeNotice(): string | undefined {
    const notice = this.notice;
    this.notice = undefined;
    return notice;
  }

  isCompacting(): boolean {
    return this.compacting !== undefined;
  }

  /** Whether a summary is being prepared ahead of need or is ready (for the gauge and tests). */
  isSummarizingAhead(): boolean {
    return this.ahead.pending();
  }

  /** Where the summary prepared ahead stands (see `SummaryAhead`). */
  aheadState(): AheadState {
    return this.ahead.state();
  }

  /** Drops a summary prepared ahead (the conversation was left, or undone past it). */
  cancelAhead(): void {
    this.ahead.cancel();
  }

  /**
   * Compacts the conversation. The summary is computed from a snapshot while the conversation may
   * go on; it is then applied to the log as it is, keeping whatever was appended meanwhile.
   * One compaction runs at a time: a second request while one runs waits for it and gets its outcome.
   */
  compact(reason: CompactionReason, options: CompactOptions = {}): Promise<CompactionOutcome & { readonly joined?: boolean }> {
    // Joined, not started: the caller shows the outcome but does not log it a second time.
    if (this.compacting) return this.compacting.then((outcome) => ({ ...outcome, joined: true }));
    const telemetry = this.source.deps.telemetry;
    const traced = telemetry
      ? telemetry().span('longrun.compaction', { 'longrun.reason': reason, 'longrun.conversation': this.source.conversationId }, async (span) => {
          const outcome = await this.runCompaction(reason, options);
          span.setAttributes(spanAttributes(outcome));
          return outcome;
        })
      : this.runCompaction(reason, options);
    const run = traced
      .then(async (outcome) => {
        if (outcome.status !== 'compacted') return outcome;
        this.guard.noteCompaction(reason, outcome.compaction.lowGain);
        // What it took out is let go before another compaction can start (one asked for meanwhile
        // joins this one), in a stretch of the editor's thread apart from applying it.
        await nextTurn();
        this.source.letGoArchived();
        return outcome;
      })
      .finally(() => {
        this.compacting = undefined;
        this.source.changed();
      });
    this.compacting = run;
    this.source.changed();
    return run;
  }

  /**
   * Starts summarizing in the background, on a snapshot, once the view passes the warning level (in
   * the middle of a tool loop too): when the compaction point is reached, the summary is ready and
   * applied at once. One at a time; a compaction, an undo or a new conversation ends it.
   */
  summarizeAheadIfDue(): void {
    const { deps } = this.source;
    if (this.ahead.pending() || this.compacting || !deps.summarizeAhead?.() || !deps.config().autoCompact) return;
    const last = this.lastCompaction();
    const moment = {
      at: 'ahead',
      ...(last ? { last: { tokensAfter: last.tokensAfter, messagesSince: () => this.userMessagesSince(last.id) } } : {}),
    } as const;
    if (this.guard.decide(moment).kind !== 'ahead') return;
    this.ahead.start((signal) => this.computeAhead(signal));
  }

  private lastCompaction(): CompactionEntry | undefined {
    return this.source.meter.live().entries().at(-1);
  }

  /** The user's messages on this branch since the compaction `entryId`. */
  private userMessagesSince(entryId: string): number {
    const records = this.source.records();
    let count = 0;
    for (let i = records.length - 1; i >= 0; i--) {
      const record = records[i]!;
      if (record.type === 'compaction' && record.entry.id === entryId) return count;
      if (record.type === 'message' && record.message.role === 'user') count++;
    }
    return count;
  }

  /**
   * The summary prepared ahead, on a snapshot taken once the summarizer is at hand. Without a
   * summarizer nothing is prepared: the next message past the warning level asks again.
   */
  private async computeAhead(signal: AbortSignal): Promise<CompactionOutcome> {
    const { deps, meter } = this.source;
    const summarizer = await deps.summarizer();
    if (!summarizer) {
      this.ahead.abandon(signal);
      return { status: 'failed', reason: NO_SUMMARIZER };
    }
    if (signal.aborted) return { status: 'cancelled', reason: 'Compaction was cancelled.' };
    // Messages keep coming until the compaction point: keep that much less now, so that the kept
    // part is what the setting asks for when the summary is applied, not that plus the growth.
    const budget = meter.assess();
    const config = deps.config();
    const growth = Math.max(0, budget.compactAt - budget.used);
    const keepRecent =
      config.keepRecent.mode === 'tokens'
        ? {
            ...config.keepRecent,
            tokens: Math.max(0, keepRecentTokens(config.keepRecent, roomForMessages(deps.model()).limit) - growth),
            tokensShare: 1,
          }
        : config.keepRecent;
    return this.computeOn(summarizer, 'threshold', { signal }, { ...config, keepRecent }, meter.pruneTarget(growth));
  }

  private async runCompaction(reason: CompactionReason, options: CompactOptions): Promise<CompactionOutcome> {
    if (reason === 'cache-expired') return this.runColdCompaction(options);
    const ahead = this.ahead.take();
    // A summary prepared ahead serves the threshold, and a manual compaction without focus; an
    // overflow (perhaps a smaller window) or a focus needs one of its own. A pruning alone prepared
    // ahead is made again now, when it costs no more and sees what came since.
    if (ahead && !options.keepLess && (reason === 'threshold' || (reason === 'manual' && !options.focus))) {
      const ready = await ahead.outcome;
      // Prepared on an older snapshot, it may cover too little of the log as it grew: made again then.
      if (ready.status === 'compacted' && ready.compaction.entry && !this.staleAhead(ready.compaction)) {
        const reviewed = await this.reviewed(ready, options);
        if (reviewed.status !== 'compacted') {
          ahead.stale();
          return reviewed;
        }
        const applied = await this.applyComputed(reviewed, reason);
        if (applied) {
          ahead.applied();
          return applied;
        }
      }
    }
    ahead?.stale();
    const { deps, meter } = this.source;
    const summarizer = await deps.summarizer();
    if (!summarizer) return { status: 'failed', reason: NO_SUMMARIZER };
    const config = options.keepLess ? keepingLess(deps.config(), roomForMessages(deps.model()).limit) : deps.config();
    // A compaction that no longer applies when it is done is computed once more, on the log as it then
    // is and from a copy of the records sent whole again, unless the user reviewed its summary.
    for (let attempt = 0; ; attempt++) {
      const computed = await this.computeOn(summarizer, reason, options, config, meter.pruneTarget());
      if (computed.status !== 'compacted') return computed;
      const outcome = await this.reviewed(computed, options);
      if (outcome.status !== 'compacted') return outcome;
      const applied = await this.applyComputed(outcome, reason);
      if (applied) return applied;
      if (attempt >= 1 || options.review || options.signal?.aborted) {
        return {
          status: 'failed',
          reason: `The conversation changed while it was compacted: ${this.missed ?? 'it no longer applies.'} Nothing was changed.`,
        };
      }
      deps.engine?.forget(this.source.conversationId);
    }
  }

  /**
   * The compaction an expired cache makes free: the summary prepared ahead, when asked for and ready
   * (and it still frees enough), else the pruning of every output no longer needed. No summarizer is asked.
   */
  private async runColdCompaction(options: CompactOptions): Promise<CompactionOutcome> {
    const ahead = options.applyAhead && this.ahead.state() === 'ready' ? this.ahead.take() : undefined;
    if (ahead) {
      const ready = await ahead.outcome;
      if (ready.status === 'compacted' && ready.compaction.entry && !this.staleAhead(ready.compaction)) {
        const applied = await this.applyComputed(ready, 'cache-expired');
        if (applied) {
          ahead.applied();
          return applied;
        }
      }
      ahead.stale();
    }
    const { deps, meter } = this.source;
    const model = deps.model();
    const pruned = computeColdPruning(
      { log: this.source.records(), view: meter.live().messages(), reason: 'cache-expired', config: deps.config(), window: roomForMessages(model) },
      { counter: model.counter, clock: deps.clock, newId: deps.newId, memo: this.source.memo() },
    );
    if (pruned.status !== 'compacted') return pruned;
    // Prepared on the view before this pruning, a summary under way would no longer apply.
    this.cancelAhead();
    return (await this.applyComputed(pruned, 'cache-expired')) ?? { status: 'noop', reason: 'The conversation changed while it was pruned.' };
  }

  /**
   * The summarizer, with each call's usage written to the log as a summary's (a compaction's cost),
   * whether or not the compaction is applied in the end.
   */
  private recording(summarizer: Summarizer): Summarizer {
    const record = (usage: SummaryUsage, at: number): Promise<unknown> => {
      const anchor = this.source.records().findLast((r) => r.type === 'message');
      return this.source.write([
        {
          type: 'usage',
          usage: {
            ...usage,
            anchorMessageId: anchor?.type === 'message' ? anchor.message.id : '',
            basis: SUMMARY_BASIS,
            purpose: 'summary',
            at,
            model: summarizer.name,
          },
        },
      ]);
    };
    return withSummarize(summarizer, async (request, signal) => {
      const at = this.source.deps.clock.now();
      const response = await summarizer.summarize(request, signal);
      // What a compaction cost is reported, never a reason for it to fail.
      if (response.usage) await record(response.usage, at).catch(() => undefined);
      return response;
    });
  }

  /** The local count of `messages`, with the counts stored with their records (nothing counted twice). */
  private countStored(messages: readonly Message[]): number {
    const { deps, meter } = this.source;
    const counter = deps.model().counter;
    let total = 0;
    for (const message of messages) total += counter.countMessage(message, meter.storedOf(message));
    return total;
  }

  /**
   * Whether `computed`, applied to the log as it is now, would free less than the configured share of
   * the view, or leave the next request over the window (a large file written since it was prepared).
   */
  private staleAhead(computed: ComputedCompaction): boolean {
    const { deps, meter } = this.source;
    const tokensBefore = meter.tokensOfView(deps.model().counter).total();
    const after = tokensAfterAt(this.source.records(), computed, (view) => this.countStored(view), this.source.memo(), meter.live());
    if (after === undefined) return false;
    const fitLimit = meter.fitLimit();
    return lowGain(tokensBefore, after, deps.config()) || (fitLimit !== undefined && after > fitLimit);
  }

  /** The computed compaction with the summary the user saved in `options.review`; cancelled when they saved none. */
  private async reviewed(outcome: CompactionOutcome & { status: 'compacted' }, options: CompactOptions): Promise<CompactionOutcome> {
    const entry = outcome.compaction.entry;
    if (!options.review || !entry) return outcome;
    const summary = await options.review(entry);
    if (summary === undefined)
      return { status: 'cancelled', reason: 'The summary was closed without saving, so the conversation was not compacted.' };
    const edited = withSummary(outcome.compaction, summary);
    // The summary saved is the one counted after the compaction.
    const counter = this.source.deps.model().counter;
    const memo = this.source.memo();
    const delta = edited.entry ? counter.countMessage(summaryMessage(edited.entry, memo)) - counter.countMessage(summaryMessage(entry, memo)) : 0;
    return { status: 'compacted', compaction: { ...edited, tokensAfter: edited.tokensAfter + delta } };
  }

  /**
   * Computes a compaction of a snapshot of the branch as it is now, off the editor's thread when an
   * engine is given. An automatic one does not ask a summarizer that keeps failing.
   */
  private async computeOn(
    summarizer: Summarizer,
    reason: CompactionReason,
    options: CompactOptions,
    config: CompactionConfig,
    pruneTarget?: number,
  ): Promise<CompactionOutcome> {
    const { deps, meter } = this.source;
    const model = deps.model();
    const asked = maySummarize(this.streak, summarizer.name, reason);
    const outcome = await (deps.engine ?? IN_THREAD_ENGINE).compute({
      conversationId: this.source.conversationId,
      all: this.source.all(),
      leaf: this.source.leaf(),
      snapshot: [...this.source.records()],
      request: {
        reason,
        config,
        window: roomForMessages(model),
        overWindow: meter.assess().level === 'over',
        ...(pruneTarget !== undefined ? { pruneTarget } : {}),
        ...(options.focus ? { focus: options.focus } : {}),
        ...(options.signal ? { signal: options.signal } : {}),
        ...(options.onProgress ? { onProgress: options.onProgress } : {}),
        ...(asked.allowed ? {} : { summarizerResting: asked.reason }),
      },
      deps: {
        counter: model.counter,
        summarizer: this.recording(summarizer),
        clock: deps.clock,
        newId: deps.newId,
        memo: this.source.memo(),
        ...(deps.redact ? { redact: deps.redact } : {}),
      },
    });
    const before = this.streak;
    this.streak = noteSummary(before, summarizer.name, summaryResult(outcome, !asked.allowed));
    this.notice = restNotice(before, this.streak) ?? this.notice;
    return outcome;
  }

  /**
   * Applies a computed compaction to the log as it is now, when the snapshot it was computed from is
   * still a prefix of it; undefined when it is not (a compaction or an undo came between). The
   * numbers are taken again, since messages may have come after the snapshot.
   */
  private async applyComputed(
    outcome: CompactionOutcome & { status: 'compacted' },
    reason: CompactionReason,
  ): Promise<CompactionOutcome | undefined> {
    const { deps, meter } = this.source;
    const counter = deps.model().counter;
    const check = await ledgersAtApply(
      () => this.source.records(),
      outcome.compaction,
      // The kept needles' lines and the work state come back at every compaction: counted once.
      (text) => counter.countRemembered(text),
      this.source.memo(),
      () => meter.live(),
      (message, stored) => counter.countMessage(message, stored),
    );
    if (!check.ok) {
      this.missed = check.reason;
      return undefined;
    }
    const computed = check.compaction;
    // Counted with the counts stored with the records: after a reload nothing is tokenized again here.
    const tokensBefore = meter.tokensOfView(counter).total();
    const tokensAfter = this.countStored(check.view);
    const records: LogRecord[] = [];
    let pruning = computed.pruning;
    if (pruning) {
      // Messages appended since the snapshot are not pruned: the pruning frees what it freed then.
      const freed = pruning.tokensBefore - pruning.tokensAfter;
      pruning = { ...pruning, reason, tokensBefore, tokensAfter: computed.entry ? tokensBefore - freed : tokensAfter };
      records.push({ type: 'pruning', entry: pruning });
    }
    let entry = computed.entry;
    if (entry) {
      entry = { ...entry, reason, tokensBefore, tokensAfter };
      records.push({ type: 'compaction', entry });
    }
    const written = await this.source.write(records);
    if (entry) {
      await deps.index.addSummary(this.source.conversationId, {
        entryId: entry.id,
        round: entry.round,
        reason: entry.reason,
        tokensBefore: entry.tokensBefore,
        tokensAfter: entry.tokensAfter,
        createdAt: entry.createdAt,
        fallback: entry.fallback,
      });
    }
    const compaction = { ...computed, records: written, view: meter.live().messages(), tokensBefore, tokensAfter };
    return { status: 'compacted', compaction: { ...compaction, ...(entry ? { entry } : {}), ...(pruning ? { pruning } : {}) } };
  }
}

/** What became of a compaction's summary; `rested` when the summarizer was not asked. */
function summaryResult(outcome: CompactionOutcome, rested: boolean): SummaryResult {
  const entry = outcome.status === 'compacted' ? outcome.compaction.entry : undefined;
  const failure = entry?.fallback ? (entry.failure ?? 'the summarizer failed') : outcome.status === 'failed' ? outcome.summarizerFailure : undefined;
  const misshapen = outcome.status === 'compacted' ? outcome.compaction.summaryMisshapen : outcome.status === 'failed' && outcome.summaryMisshapen;
  if (failure !== undefined && rested) return { kind: 'rested' };
  if (failure !== undefined) return misshapen ? { kind: 'misshapen' } : { kind: 'failed', failure };
  return entry ? { kind: 'written' } : { kind: 'none' };
}

/** What a compaction's span records of its outcome. */
function spanAttributes(outcome: CompactionOutcome): Record<string, string | number | boolean> {
  const attributes: Record<string, string | number | boolean> = { 'longrun.status': outcome.status };
  if (outcome.status !== 'compacted') return attributes;
  const c = outcome.compaction;
  Object.assign(attributes, {
    'longrun.tokens_before': c.tokensBefore,
    'longrun.tokens_after': c.tokensAfter,
    'longrun.messages_compacted': c.compactedCount,
    'longrun.outputs_pruned': c.pruning?.outputs.length ?? 0,
    'longrun.summarizer_calls': c.entry?.summarizerCalls ?? 0,
  });
  if (c.entry) {
    Object.assign(attributes, {
      'longrun.round': c.entry.round,
      'longrun.duration_ms': c.entry.durationMs,
      'longrun.fallback': c.entry.fallback,
    });
  }
  return attributes;
}

/** A compaction keeps this share of the recent part the settings keep, when asked to keep less. */
const KEEP_LESS_SHARE = 0.25;

/** `config` keeping a quarter of the recent tokens it keeps (by tokens, whatever its mode). */
export function keepingLess(config: CompactionConfig, limit: number): CompactionConfig {
  const tokens = Math.floor(keepRecentTokens(config.keepRecent, limit) * KEEP_LESS_SHARE);
  return { ...config, keepRecent: { ...config.keepRecent, mode: 'tokens', tokens, tokensShare: 1 } };
}

/**
 * The part of the window the conversation's messages have: every request also carries the system
 * prompt and the tool definitions. What a compaction keeps and how long its summary may be are
 * shares of this room, so a small local model whose tools take a third of its window is not
 * compacted again two turns later.
 */
export function roomForMessages(model: Pick<ModelContext, 'window' | 'requestOverhead'>): ContextWindow {
  if (model.window.limit <= 0) return model.window;
  return { ...model.window, limit: Math.max(1, model.window.limit - model.requestOverhead) };
}
