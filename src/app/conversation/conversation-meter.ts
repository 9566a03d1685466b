import { isHeldAway } from '../store/held-away';
import { assessBudget, type BudgetAssessment, type UsageBreakdown } from '../../core/budget';
import { compactionTarget } from '../../core/compaction';
import { isAgentUsage, LiveModelView, type ConversationLog, type LogRecord } from '../../core/history';
import type { MessageTokenCounter, StoredTokens } from '../../core/message-tokens';
import type { Message } from '../../core/messages';
import { charEstimator } from '../../core/tokenizer';
import { familyPrior, type RatioPrior } from '../../core/tokenizer-priors';
import {
  calibratedCount,
  effectiveRatio,
  learnedAddedRatio,
  learnedCalibration,
  rememberedPrior,
  type Calibration,
  type ContextCount,
  type ReportedUsage,
  type RequestBasis,
} from '../../core/usage-calibration';
import { ViewTokens } from '../../core/view-tokens';
import type { CompactionConfig } from '../../core/config';
import type { ContextWindow } from '../../core/context-window';
import type { CalibrationMemory } from '../../core/usage-calibration';
import type { CompactionEngine } from '../compaction/compaction-engine';
import type { EngineMemo } from '../../core/engine-memo';

/** What the conversation needs to know about the model in use. */
export interface ModelContext {
  readonly name: string;
  readonly window: ContextWindow;
  readonly counter: MessageTokenCounter;
  /** Tokens the system prompt and tool definitions take in every request. */
  readonly requestOverhead: number;
  /** Tokens kept free for the answer (shown in the gauge). */
  readonly outputReserve: number;
  /** Identifies the model across reports (vendor/id), to learn its tokenizer's ratio to the local count. */
  readonly key?: string;
  /** The whole window (input and output) and where its size came from, for the gauge. */
  readonly whole?: { readonly limit: number; readonly origin: string; readonly assumed: boolean };
}

/** Text without stored counts past which a view is counted off the editor's thread (about 50,000 tokens). */
const OFF_THREAD_CHARS = 200_000;

/** What the meter reads of its conversation. */
export interface MeterSource {
  readonly conversationId: string;
  /** The records of the branch in use; a branch switched to is another array. */
  records(): LogRecord[];
  /** Every record of the conversation, for the engine that counts off the editor's thread. */
  all(): LogRecord[];
  /** What the engine remembers of the conversation, the view's summary and pruned messages among it. */
  readonly memo: EngineMemo;
  readonly deps: {
    readonly model: () => ModelContext;
    readonly config: () => CompactionConfig;
    readonly engine?: CompactionEngine;
    readonly calibrations?: CalibrationMemory;
  };
  /** Counts that came from off the thread changed what the gauge shows. */
  changed(): void;
}

/**
 * A conversation's meter: the model's view of its branch, the view's token count (with the counts
 * stored with the records, or counted off the editor's thread), the provider's usage reports and the
 * ratio learned from them, and the budget they give. Kept up to date at the cost of what was appended.
 */
export class ConversationMeter {
  // What the gauge reads, kept up to date with the log by `sync` at the cost of what was appended,
  // so that an assessment costs the same at twenty messages and at twenty thousand.
  private readonly liveView: LiveModelView;
  private readonly storedTokens = new WeakMap<Message, StoredTokens>();
  private readonly viewTokens = new ViewTokens(
    (message) => this.storedTokens.get(message),
    (message) => this.pendingCounts.get(message),
  );
  /** Messages of this conversation's records (a pruned output's stub or a summary is not one). */
  private readonly recordMessages = new WeakSet<Message>();
  /** Estimates for the messages being counted off the editor's thread, until their counts come. */
  private readonly pendingCounts = new WeakMap<Message, number>();
  /** The counter and view whose uncounted messages were last looked at (see `countOffThread`). */
  private countedFor: { counter: MessageTokenCounter; generation: number } | undefined;
  private readonly usages: ReportedUsage[] = [];
  private latestUsage: ReportedUsage | undefined;
  private synced: { log: ConversationLog; records: number } | undefined;
  private calibrationMemo: { key: string | undefined; reports: number; calibration: Calibration | undefined; added: number | undefined } | undefined;

  constructor(private readonly source: MeterSource) {
    this.liveView = new LiveModelView(source.memo);
  }

  /** The model's view as of the last record, brought up to date. */
  live(): LiveModelView {
    this.sync();
    return this.liveView;
  }

  /** The token counts stored with `message`'s record, if any. */
  storedOf(message: Message): StoredTokens | undefined {
    return this.storedTokens.get(message);
  }

  /** The tokens of the model's view, calibrated by the provider's last report when it still applies. */
  count(): ContextCount {
    const model = this.source.deps.model();
    const tokens = this.tokensOfView(model.counter);
    const ratio = this.guess(model.key);
    return calibratedCount(
      tokens.total(),
      (id) => tokens.after(id),
      this.latestUsage,
      this.basis(),
      model.requestOverhead,
      ratio,
      this.addedRatio(model.key) ?? ratio,
    );
  }

  /** The basis a request sent now is built on: stamped on the usage it gets back. */
  requestBasis(): RequestBasis & { readonly model?: string } {
    const model = this.source.deps.model();
    const tokens = this.tokensOfView(model.counter);
    const localTokens = tokens.total() + model.requestOverhead;
    const ratio = this.ratio(model.key);
    const counted = this.count();
    const added =
      counted.source === 'provider+local' ? counted.tokens - (this.latestUsage?.inputTokens ?? 0) - (this.latestUsage?.outputTokens ?? 0) : undefined;
    return {
      basis: this.basis(),
      localTokens,
      localFraming: tokens.framing(),
      localFixed: model.requestOverhead,
      ...(ratio !== undefined ? { ratio } : {}),
      expected: counted.tokens,
      ...(added !== undefined ? { sinceReport: Math.max(0, added) } : {}),
      ...(model.key !== undefined ? { model: model.key } : {}),
    };
  }

  assess(): BudgetAssessment {
    const config = this.source.deps.config();
    return assessBudget(this.count().tokens, this.source.deps.model().window, config.trigger, config.autoCompact);
  }

  breakdown(): UsageBreakdown {
    const model = this.source.deps.model();
    const parts = this.tokensOfView(model.counter).parts();
    return {
      requestOverhead: model.requestOverhead + parts.system,
      summary: parts.summary,
      messages: parts.messages,
      toolResults: parts.toolResults,
      outputReserve: model.outputReserve,
      ...(model.whole ? { window: model.whole } : {}),
    };
  }

  /**
   * Takes in the records appended since the last call, however they were appended: the view, its
   * counts and the usage reports follow the log at the cost of what was added. A log replaced by
   * another array is taken in from its start.
   */
  sync(): void {
    const log = this.source.records();
    if (this.synced?.log !== log || this.synced.records > log.length) {
      this.synced = { log, records: 0 };
      this.usages.length = 0;
      this.latestUsage = undefined;
      this.calibrationMemo = undefined;
    }
    for (let i = this.synced.records; i < log.length; i++) {
      const record = log[i]!;
      if (record.type === 'usage' && isAgentUsage(record.usage)) {
        this.usages.push(record.usage);
        this.latestUsage = record.usage;
      } else if (record.type === 'message') {
        // A message held without its content is read back before any view shows it.
        if (!isHeldAway(record)) this.recordMessages.add(record.message);
        if (record.tokens) this.storedTokens.set(record.message, record.tokens);
      }
    }
    this.synced.records = log.length;
    this.liveView.update(log);
  }

  tokensOfView(counter: MessageTokenCounter): ViewTokens {
    this.sync();
    this.countOffThread(counter);
    this.viewTokens.update(this.liveView, counter);
    return this.viewTokens;
  }

  /**
   * A view with much text its records hold no count of for this counter's tokenizer (a conversation
   * from before counts were stored, records cut to fit, another model's tokenizer) is counted by the
   * engine, off the editor's thread; the gauge reads an estimate of those messages until it is done.
   */
  private countOffThread(counter: MessageTokenCounter): void {
    const engine = this.source.deps.engine;
    const name = counter.tokenizer.name;
    if (!engine?.count || name === charEstimator.name) return;
    if (this.countedFor?.counter === counter && this.countedFor.generation === this.liveView.generation) return;
    this.countedFor = { counter, generation: this.liveView.generation };
    const missing: Message[] = [];
    const estimates: number[] = [];
    let chars = 0;
    for (const message of this.liveView.stable) {
      if (!this.recordMessages.has(message) || this.storedTokens.get(message)?.[name] !== undefined) continue;
      if (counter.isCounted(message) || this.pendingCounts.has(message)) continue;
      const estimate = counter.estimate(message);
      missing.push(message);
      estimates.push(estimate.tokens);
      chars += estimate.chars;
    }
    if (chars < OFF_THREAD_CHARS) return;
    missing.forEach((message, i) => this.pendingCounts.set(message, estimates[i]!));
    const settle = (counts: ReadonlyMap<string, number>): void => {
      for (const message of missing) {
        this.pendingCounts.delete(message);
        const tokens = counts.get(message.id);
        if (tokens !== undefined) this.storedTokens.set(message, { ...this.storedTokens.get(message), [name]: tokens });
      }
      this.viewTokens.reset();
      this.source.changed();
    };
    engine
      .count({ conversationId: this.source.conversationId, all: this.source.all(), ids: missing.map((m) => m.id), tokenizer: name })
      .then(settle, () => settle(new Map()));
  }

  /** The compaction state of the view (see `currentBasis`). */
  basis(): string | null {
    this.sync();
    return this.liveView.activeSteps().at(-1)?.entry.id ?? null;
  }

  /**
   * The local count of the view (messages only) that compaction aims under: what the gauge will show
   * as just below the compaction target once the view changed (the count is then local, scaled by the
   * learned ratio, with the system prompt and tools). `less` lowers it (calibrated tokens), for a
   * compaction prepared ahead of the growth still to come. Undefined when the window is unknown.
   */
  pruneTarget(less = 0): number | undefined {
    const budget = this.assess();
    if (budget.limit <= 0 || budget.warningAt <= 0) return undefined;
    const model = this.source.deps.model();
    const ratio = this.guess(model.key);
    // Over the window, the aim is to fit again with as much of the turn under way kept as can be.
    const target = budget.level === 'over' ? budget.warningAt : compactionTarget(budget.limit, budget.warningAt, this.source.deps.config());
    return Math.max(0, Math.floor((target - less) / ratio) - model.requestOverhead - 1);
  }

  /**
   * The local count of the view (messages only) above which the next request would not fit the window:
   * the window scaled by the ratio learned, less the system prompt and tools; undefined when unknown.
   */
  fitLimit(): number | undefined {
    const model = this.source.deps.model();
    if (model.window.limit <= 0) return undefined;
    return Math.max(0, Math.floor(model.window.limit / this.guess(model.key)) - model.requestOverhead);
  }

  /**
   * The provider's count over the local count for the view as it is now: `learnedCalibration` over the
   * usage reports, weighed by the view's share of framing.
   */
  private ratio(key: string | undefined): number | undefined {
    const calibration = this.calibrated(key).calibration;
    if (calibration === undefined) return undefined;
    const model = this.source.deps.model();
    const tokens = this.tokensOfView(model.counter);
    return effectiveRatio(calibration, tokens.total() + model.requestOverhead, tokens.framing());
  }

  /** What the provider counts for a local token of the messages added since its last report (see `learnedAddedRatio`). */
  private addedRatio(key: string | undefined): number | undefined {
    return this.calibrated(key).added;
  }

  /** What the reports say, worked out again only when a report came or the model changed. */
  private calibrated(key: string | undefined): { calibration: Calibration | undefined; added: number | undefined } {
    this.sync();
    const memo = this.calibrationMemo;
    if (memo && memo.key === key && memo.reports === this.usages.length) return memo;
    const prior = this.priorOf(key);
    this.calibrationMemo = {
      key,
      reports: this.usages.length,
      calibration: learnedCalibration(this.usages, key, prior),
      added: learnedAddedRatio(this.usages, key, prior),
    };
    const remembered = key !== undefined ? rememberedPrior(this.usages, key, prior) : undefined;
    if (key !== undefined && remembered) this.source.deps.calibrations?.learned(key, remembered);
    return this.calibrationMemo;
  }

  /**
   * What is known of `key`'s ratio before this conversation's reports: learned in earlier conversations,
   * else its family's table figure. Taken once per model, so that what this conversation teaches the
   * memory does not come back to it as a prior.
   */
  private priorOf(key: string | undefined): RatioPrior | undefined {
    if (!this.priors.has(key)) this.priors.set(key, this.source.deps.calibrations?.prior(key) ?? familyPrior(key));
    return this.priors.get(key);
  }

  private readonly priors = new Map<string | undefined, RatioPrior | undefined>();

  /** The ratio to count with: the one learned from the reports, else the prior, else none (1). */
  guess(key: string | undefined): number {
    return this.ratio(key) ?? this.priorOf(key)?.ratio ?? 1;
  }
}
