import { assessBudget, type BudgetAssessment } from '../core/budget';
import { applyCompaction, computeCompaction, type CompactionOutcome, type CompactionProgress } from '../core/compaction';
import type { CompactionConfig } from '../core/config';
import type { ContextWindow } from '../core/context-window';
import {
  currentBasis,
  isSummaryMessage,
  lastEntry,
  lastUsage,
  ledgerOf,
  modelView,
  undoLastCompaction,
  usageReports,
  type CompactionEntry,
  type CompactionReason,
  type ConversationLog,
  type LogRecord,
} from '../core/history';
import type { MessageTokenCounter } from '../core/message-tokens';
import type { Message } from '../core/messages';
import type { Clock, Summarizer } from '../core/ports';
import { countContext, learnedRatio, type ContextCount, type RequestBasis } from '../core/usage-calibration';
import type { ConversationIndex, ConversationStore } from './conversation-store';
import type { UsageBreakdown } from './gauge-text';
import type { LongrunTelemetry } from '../llm/telemetry';

/**
 * One conversation: its append-only log (persisted record by record), the model's view of it,
 * its token count and budget, and its compactions. Free of `vscode` so it is tested in Node;
 * the extension wires it to the chat, the gauge and the commands.
 */

/** What the conversation needs to know about the model in use. */
export interface ModelContext {
  readonly name: string;
  readonly window: ContextWindow;
  readonly counter: MessageTokenCounter;
  /** Tokens the system prompt and tool definitions take in every request. */
  readonly fixedOverhead: number;
  /** Tokens kept free for the answer (shown in the gauge). */
  readonly outputReserve: number;
  /** Identifies the model across reports (vendor/id), to learn its tokenizer's ratio to the local count. */
  readonly key?: string;
  /** The whole window (input and output) and where its size came from, for the gauge. */
  readonly whole?: { readonly limit: number; readonly origin: string; readonly assumed: boolean };
}


export interface ConversationDeps {
  readonly store: ConversationStore;
  readonly index: ConversationIndex;
  readonly clock: Clock;
  readonly newId: () => string;
  readonly config: () => CompactionConfig;
  readonly model: () => ModelContext;
  /** The summarizer for the next compaction; undefined when no model can summarize. */
  readonly summarizer: () => Summarizer | undefined;
  /** Tracing of compactions (a span each, numbers only, never content). */
  readonly telemetry?: () => LongrunTelemetry;
  /** Cleans provider text (a summarizer's error) of API keys before it is stored or summarized. */
  readonly redact?: (text: string) => string;
}

export interface CompactOptions {
  readonly focus?: string;
  readonly signal?: AbortSignal;
  readonly onProgress?: (progress: CompactionProgress) => void;
}

type Listener = () => void;

/** The title of a conversation before its first request. */
export const NEW_TITLE = 'New conversation';

export class Conversation {
  private records: LogRecord[];
  private readonly listeners = new Set<Listener>();
  private compacting: Promise<CompactionOutcome> | undefined;

  constructor(
    readonly id: string,
    log: readonly LogRecord[],
    private readonly deps: ConversationDeps,
  ) {
    this.records = [...log];
  }

  log(): ConversationLog {
    return this.records;
  }

  view(): Message[] {
    return modelView(this.records);
  }

  isEmpty(): boolean {
    return !this.records.some((r) => r.type === 'message');
  }

  lastCompaction(): CompactionEntry | undefined {
    return lastEntry(this.records);
  }

  round(): number {
    return lastEntry(this.records)?.round ?? 0;
  }

  isCompacting(): boolean {
    return this.compacting !== undefined;
  }

  onDidChange(listener: Listener): { dispose(): void } {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  /**
   * Appends records in one write (an assistant step and its tool results land together, so a crash
   * cannot leave a call on disk without its result); they join the log once they are on disk.
   */
  async append(records: readonly LogRecord[]): Promise<void> {
    if (records.length === 0) return;
    await this.deps.store.appendAll(this.id, records);
    this.records.push(...records);
    if (records.some((r) => r.type === 'message')) {
      const info = this.deps.index.list().find((c) => c.id === this.id);
      await this.deps.index.upsert({
        id: this.id,
        // A conversation is named after its first request, once it has one.
        title: info && info.title !== NEW_TITLE ? info.title : this.title(),
        createdAt: info?.createdAt ?? this.deps.clock.now(),
        updatedAt: this.deps.clock.now(),
      });
    }
    this.changed();
  }

  /** The tokens of the model's view, calibrated by the provider's last report when it still applies. */
  count(): ContextCount {
    const model = this.deps.model();
    const ratio = learnedRatio(usageReports(this.records), model.key) ?? 1;
    return countContext(this.view(), model.counter, lastUsage(this.records), currentBasis(this.records), model.fixedOverhead, ratio);
  }

  /** The basis a request sent now is built on: stamped on the usage it gets back. */
  requestBasis(): RequestBasis & { readonly model?: string } {
    const model = this.deps.model();
    const ratio = learnedRatio(usageReports(this.records), model.key);
    const localTokens = model.counter.countMessages(this.view()) + model.fixedOverhead;
    return {
      basis: currentBasis(this.records),
      localTokens,
      ...(ratio !== undefined ? { ratio } : {}),
      ...(model.key !== undefined ? { model: model.key } : {}),
    };
  }

  assess(): BudgetAssessment {
    const config = this.deps.config();
    return assessBudget(this.count().tokens, this.deps.model().window, config.trigger, config.autoCompact);
  }

  breakdown(): UsageBreakdown {
    const model = this.deps.model();
    let summary = 0;
    let messages = 0;
    let toolResults = 0;
    let system = model.fixedOverhead;
    for (const m of this.view()) {
      const n = model.counter.countMessage(m);
      if (isSummaryMessage(m)) summary += n;
      else if (m.role === 'tool') toolResults += n;
      else if (m.role === 'system') system += n;
      else messages += n;
    }
    return {
      systemAndTools: system,
      summary,
      messages,
      toolResults,
      outputReserve: model.outputReserve,
      ...(model.whole ? { window: model.whole } : {}),
    };
  }

  /**
   * Compacts the conversation. The summary is computed from a snapshot while the conversation may
   * go on; it is then applied to the log as it is, keeping whatever was appended meanwhile.
   * One compaction runs at a time: a second request while one runs waits for it and gets its outcome.
   */
  compact(reason: CompactionReason, options: CompactOptions = {}): Promise<CompactionOutcome & { readonly joined?: boolean }> {
    // Joined, not started: the caller shows the outcome but does not log it a second time.
    if (this.compacting) return this.compacting.then((outcome) => ({ ...outcome, joined: true }));
    const traced = this.deps.telemetry
      ? this.deps.telemetry().span('longrun.compaction', { 'longrun.reason': reason, 'longrun.conversation': this.id }, async (span) => {
          const outcome = await this.runCompaction(reason, options);
          const attributes: Record<string, string | number | boolean> = { 'longrun.status': outcome.status };
          if (outcome.status === 'compacted') {
            const e = outcome.compaction.entry;
            Object.assign(attributes, {
              'longrun.round': e.round,
              'longrun.tokens_before': e.tokensBefore,
              'longrun.tokens_after': e.tokensAfter,
              'longrun.duration_ms': e.durationMs,
              'longrun.messages_compacted': outcome.compaction.compactedCount,
              'longrun.fallback': e.fallback,
              'longrun.summarizer_calls': e.summarizerCalls,
            });
          }
          span.setAttributes(attributes);
          return outcome;
        })
      : this.runCompaction(reason, options);
    const run = traced.finally(() => {
      this.compacting = undefined;
      this.changed();
    });
    this.compacting = run;
    this.changed();
    return run;
  }

  private async runCompaction(reason: CompactionReason, options: CompactOptions): Promise<CompactionOutcome> {
    const summarizer = this.deps.summarizer();
    if (!summarizer) return { status: 'failed', reason: 'No model is available to write the summary. Pick a model in the chat, or set longrun.compaction.model.' };
    const model = this.deps.model();
    const snapshot = [...this.records];
    const outcome = await computeCompaction(
      {
        log: snapshot,
        reason,
        config: this.deps.config(),
        window: model.window,
        ledger: ledgerOf(snapshot),
        ...(options.focus ? { focus: options.focus } : {}),
        ...(options.signal ? { signal: options.signal } : {}),
        ...(options.onProgress ? { onProgress: options.onProgress } : {}),
      },
      { counter: model.counter, summarizer, clock: this.deps.clock, newId: this.deps.newId, ...(this.deps.redact ? { redact: this.deps.redact } : {}) },
    );
    if (outcome.status !== 'compacted') return outcome;
    const applied = applyCompaction(this.records, outcome.compaction);
    if (!applied.ok) return { status: 'failed', reason: `${applied.reason} Nothing was changed.` };
    const entry = outcome.compaction.entry;
    await this.deps.store.append(this.id, outcome.compaction.record);
    this.records.push(outcome.compaction.record);
    await this.deps.index.addSummary(this.id, {
      entryId: entry.id,
      round: entry.round,
      reason: entry.reason,
      summary: entry.summary,
      tokensBefore: entry.tokensBefore,
      tokensAfter: entry.tokensAfter,
      createdAt: entry.createdAt,
      fallback: entry.fallback,
    });
    return outcome;
  }

  /** Undoes the last compaction: the originals come back into the model's view. */
  async undo(): Promise<{ ok: true; entry: CompactionEntry } | { ok: false; reason: string }> {
    if (this.compacting) return { ok: false, reason: 'A compaction is running; try again when it has finished.' };
    const last = lastEntry(this.records);
    const record = undoLastCompaction(this.records, this.deps.clock.now());
    if ('error' in record || !last) return { ok: false, reason: 'error' in record ? record.error : 'There is no compaction to undo.' };
    await this.deps.store.append(this.id, record);
    this.records.push(record);
    await this.deps.index.removeSummary(this.id, last.id);
    this.changed();
    return { ok: true, entry: last };
  }

  private title(): string {
    const first = this.records.find((r) => r.type === 'message' && r.message.role === 'user');
    if (!first || first.type !== 'message') return NEW_TITLE;
    const text = first.message.content.map((p) => (p.type === 'text' ? p.text : '')).join(' ').replace(/\s+/g, ' ').trim();
    return text.length > 60 ? `${text.slice(0, 57)}…` : text || NEW_TITLE;
  }

  private changed(): void {
    for (const listener of [...this.listeners]) listener();
  }
}
