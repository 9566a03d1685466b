import type { BudgetAssessment } from '../core/budget';
import { decideCompaction, guardAfter, type GuardState } from '../core/compaction-guard';
import { lowGainAt, type CompactionOutcome, type ComputedCompaction } from '../core/compaction';
import type { CompactionConfig } from '../core/config';
import { keepRecentTokens } from '../core/cut-point';
import type { UsageBreakdown } from '../core/budget';
import type { ContextWindow } from '../core/context-window';
import type { EngineMemo } from '../core/engine-memo';
import {
  lastStep,
  summaryMessage,
  undoLastStep,
  type CompactionEntry,
  type CompactionReason,
  type CompactionStep,
  type ConversationLog,
  type LogRecord,
} from '../core/history';
import { withTokenCounts } from '../core/message-tokens';
import type { Message } from '../core/messages';
import type { Summarizer } from '../core/ports';
import type { PruningEntry } from '../core/pruning';
import { archivedItems, formatRecall, recall, type RecallQuery } from '../core/recall';
import type { ContextCount, RequestBasis } from '../core/usage-calibration';
import { IN_THREAD_ENGINE } from './compaction-engine';
import { branchLog, onTurn } from '../core/branches';
import { ConversationMeter, type ModelContext } from './conversation-meter';
import type { CompactOptions, ConversationDeps } from './conversation-deps';
import { ledgersAtApply } from './ledgers-at-apply';
import { ConversationRecords, type BranchOptions } from './conversation-records';

export { ConversationRecords, type BranchOptions };
import { withSummary } from './summary-edit';
import { errorText } from '../core/errors';

/**
 * One conversation: its append-only log (persisted record by record), the model's view of it,
 * its token count and budget, and its compactions. Free of `vscode` so it is tested in Node;
 * the extension wires it to the chat, the gauge and the commands.
 */

export type { ModelContext };

export type { CompactOptions, ConversationDeps };

type Listener = () => void;

/** The title of a conversation before its first request. */
export const NEW_TITLE = 'New conversation';

/** The longest answer of the `recall` tool when it names none, and its bounds by the window. */
const RECALL_DEFAULT_TOKENS = 4_000;
const RECALL_WINDOW_SHARE = 0.1;
const RECALL_MIN_TOKENS = 500;

/** Why a compaction cannot run without a model to write its summary, and what to do. */
const NO_SUMMARIZER = 'No model is available to write the summary. Pick a model in the chat, or set longrun.compaction.model.';

/** A threshold compaction computed ahead of need, from a snapshot taken past the warning level. */
interface Ahead {
  readonly promise: Promise<CompactionOutcome>;
  readonly controller: AbortController;
}

export class Conversation {
  /** The records of this branch: the path to `leaf`, the log everything here is derived from. */
  private records: LogRecord[];
  private readonly shared: ConversationRecords;
  private leafTurn: string | null;
  private readonly listeners = new Set<Listener>();
  private compacting: Promise<CompactionOutcome> | undefined;
  private ahead: Ahead | undefined;
  /** The anti-loop guard of automatic compaction, as the turns of this session left it; made from the log when absent. */
  private guardState: GuardState | undefined;
  /** The view, its count and the provider's reports, kept up to date with this branch's records. */
  private readonly meter: ConversationMeter;
  /** The generation of the shared records `records` was made from (see `ConversationRecords.generation`). */
  private branchGeneration: number;

  constructor(
    readonly id: string,
    log: readonly LogRecord[],
    private readonly deps: ConversationDeps,
    where: BranchOptions = {},
  ) {
    this.shared = where.records ?? new ConversationRecords(log);
    const turns = this.shared.turns();
    const leaf = where.leaf === undefined ? turns.latest() : where.leaf;
    this.leafTurn = leaf !== null && turns.has(leaf) ? leaf : null;
    this.records = branchLog(this.shared.all, this.leafTurn, turns);
    this.branchGeneration = this.shared.generation;
    this.meter = new ConversationMeter({
      conversationId: id,
      records: () => this.records,
      all: () => this.shared.all,
      memo: this.memo(),
      deps,
      changed: () => this.changed(),
    });
  }

  /** The records of this branch (the path to its leaf turn), oldest first. */
  log(): ConversationLog {
    return this.records;
  }

  /** Every record of the conversation, on every branch, in the order they were written. */
  allRecords(): ConversationLog {
    return this.shared.all;
  }

  /** What the compaction engine remembers of the conversation's records, shared with its other branches. */
  memo(): EngineMemo {
    return this.shared.memo;
  }

  /** The conversation's records, to make another branch of it that shares them. */
  sharedRecords(): ConversationRecords {
    return this.shared;
  }

  /**
   * Reads back from disk the messages this branch's view needs that are held without their content
   * (after an undo, a rewind, or another branch was used); resolves once the view is whole.
   */
  async loadView(): Promise<void> {
    this.rebranchIfStale();
    if (this.shared.awayCount() === 0) return;
    const live = this.meter.live();
    const last = live.entries().at(-1);
    // A summary from before needle ledgers were kept makes the next compaction scan every message.
    const scansAll = last !== undefined && !last.needles;
    const wanted = this.records.filter((r) => r.type === 'message' && this.shared.isAway(r) && (scansAll || !live.removes(r.message.id)));
    if (wanted.length === 0) return;
    await this.shared.fill(wanted, (locations) => this.deps.store.readAt(this.id, locations));
    this.rebranch();
    // The worker's copy holds these records without their content: it is sent the log again.
    this.deps.engine?.forget(this.id);
    this.changed();
  }

  /** Makes this branch's log again from the shared records (some were replaced in place). */
  private rebranch(): void {
    this.records = branchLog(this.shared.all, this.leafTurn, this.shared.turns());
    this.branchGeneration = this.shared.generation;
  }

  /** `rebranch` when another branch read records back since this one's log was made. */
  private rebranchIfStale(): void {
    if (this.branchGeneration !== this.shared.generation) this.rebranch();
  }

  /** The turn at the tip of this branch; null before the first turn (or for a conversation from before turns). */
  leaf(): string | null {
    return this.leafTurn;
  }

  /**
   * Starts a turn on this branch: a request of the chat continuing the branch's leaf. What is
   * appended from now on is made on it.
   */
  async beginTurn(id: string, chat?: string): Promise<void> {
    const turn = { id, parent: this.leafTurn, at: this.deps.clock.now(), ...(chat !== undefined ? { chat } : {}) };
    await this.write([{ type: 'turn', turn }]);
    this.leafTurn = id;
  }

  /** Writes records made on this branch's leaf turn, in one write, and takes them into the branch. */
  private async write(records: readonly LogRecord[]): Promise<LogRecord[]> {
    const made = records.map((record) => onTurn(record, this.leafTurn));
    // What is kept in memory is what was stored: a record cut to fit its line is held cut, as a reload
    // reads it, so memory does not grow with an answer larger than the store keeps.
    const stored = await this.deps.store.appendAll(this.id, made);
    this.shared.all.push(...stored);
    this.records.push(...stored);
    return stored;
  }

  /** The model's view of the log, as `modelView(log())` derives it. */
  view(): Message[] {
    return this.meter.live().messages();
  }

  isEmpty(): boolean {
    return !this.meter.live().hasMessages();
  }

  lastCompaction(): CompactionEntry | undefined {
    return this.meter.live().entries().at(-1);
  }

  /** The anti-loop guard: as the last turn left it, or, after a reload, as the log leaves it. */
  guard(): GuardState {
    if (this.guardState) return this.guardState;
    const last = this.lastCompaction();
    return guardAfter(last, last?.lowGain ? this.userMessagesSince(last.id) : 0);
  }

  setGuard(guard: GuardState): void {
    this.guardState = guard;
  }

  /** The last compaction in force as the user asked for it: a summary, a pruning, or both (see `lastStep`). */
  lastStep(): CompactionStep | undefined {
    return lastStep(this.meter.live().activeSteps());
  }

  /** The prunings in force, oldest first. */
  prunings(): readonly PruningEntry[] {
    return this.meter.live().prunedBy();
  }

  /** Whether part of the conversation is out of the model's view: summarized or pruned. */
  hasArchive(): boolean {
    return this.meter.live().activeSteps().length > 0;
  }

  /**
   * Searches what compaction and pruning took out of the model's view (the `recall` tool). The
   * answer is cut to `maxTokens`, at most a tenth of the window when the window is known, since it
   * joins the view as a tool result. Messages held without their content are read from disk for the
   * search, and not kept.
   */
  async recall(query: RecallQuery): Promise<string> {
    const model = this.deps.model();
    const cap = model.window.limit > 0 ? Math.max(RECALL_MIN_TOKENS, Math.floor(model.window.limit * RECALL_WINDOW_SHARE)) : RECALL_DEFAULT_TOKENS;
    const maxTokens = Math.min(query.maxTokens ?? RECALL_DEFAULT_TOKENS, cap);
    this.rebranchIfStale();
    const log = await this.shared.readThrough(this.records, (locations) => this.deps.store.readAt(this.id, locations));
    const result = recall(archivedItems(log), { ...query, maxTokens }, (text) => model.counter.countText(text));
    return formatRecall(result);
  }

  round(): number {
    return this.lastCompaction()?.round ?? 0;
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
    const counter = this.deps.model().counter;
    // Counted now rather than by the gauge just after, so that the count is stored with the message.
    await this.write(records.map((record) => withTokenCounts(record, counter)));
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
    this.summarizeAheadIfDue();
  }

  /**
   * Starts summarizing in the background, on a snapshot, once the view passes the warning level (in
   * the middle of a tool loop too): when the compaction point is reached, the summary is ready and
   * applied at once. One at a time; a compaction, an undo or a new conversation ends it.
   */
  private summarizeAheadIfDue(): void {
    if (this.ahead || this.compacting || !this.deps.summarizeAhead?.() || !this.deps.config().autoCompact) return;
    const budget = this.assess();
    if (decideCompaction(budget, this.guard(), { confirm: false, ahead: true }).kind !== 'ahead') return;
    // The last compaction could not get below the warning level: summarizing again now would only churn.
    const last = this.lastCompaction();
    if (last && last.tokensAfter >= budget.warningAt && this.userMessagesSince(last.id) === 0) return;
    const controller = new AbortController();
    const ahead: Ahead = {
      promise: this.computeAhead(controller.signal).catch((error: unknown): CompactionOutcome => ({ status: 'failed', reason: errorText(error) })),
      controller,
    };
    this.ahead = ahead;
  }

  /**
   * The summary prepared ahead, on a snapshot taken once the summarizer is at hand. Without a
   * summarizer nothing is prepared: the next message past the warning level asks again.
   */
  private async computeAhead(signal: AbortSignal): Promise<CompactionOutcome> {
    const summarizer = await this.deps.summarizer();
    if (!summarizer) {
      if (this.ahead?.controller.signal === signal) this.ahead = undefined;
      return { status: 'failed', reason: NO_SUMMARIZER };
    }
    if (signal.aborted) return { status: 'cancelled', reason: 'Compaction was cancelled.' };
    // Messages keep coming until the compaction point: keep that much less now, so that the kept
    // part is what the setting asks for when the summary is applied, not that plus the growth.
    const budget = this.assess();
    const config = this.deps.config();
    const growth = Math.max(0, budget.compactAt - budget.used);
    const keepRecent =
      config.keepRecent.mode === 'tokens'
        ? {
            ...config.keepRecent,
            tokens: Math.max(0, keepRecentTokens(config.keepRecent, roomForMessages(this.deps.model()).limit) - growth),
            tokensShare: 1,
          }
        : config.keepRecent;
    return this.computeOn(summarizer, [...this.records], 'threshold', { signal }, { ...config, keepRecent }, this.meter.pruneTarget(growth));
  }

  /** The user's messages on this branch since the compaction `entryId`. */
  private userMessagesSince(entryId: string): number {
    let count = 0;
    for (let i = this.records.length - 1; i >= 0; i--) {
      const record = this.records[i]!;
      if (record.type === 'compaction' && record.entry.id === entryId) return count;
      if (record.type === 'message' && record.message.role === 'user') count++;
    }
    return count;
  }

  /** Whether a summary is being prepared ahead of need (for the gauge and tests). */
  isSummarizingAhead(): boolean {
    return this.ahead !== undefined;
  }

  /** Drops a summary prepared ahead (the conversation was left, or undone past it). */
  cancelAhead(): void {
    this.ahead?.controller.abort();
    this.ahead = undefined;
  }

  /** The tokens of the model's view, calibrated by the provider's last report when it still applies. */
  count(): ContextCount {
    return this.meter.count();
  }

  /** The basis a request sent now is built on: stamped on the usage it gets back. */
  requestBasis(): RequestBasis & { readonly model?: string } {
    return this.meter.requestBasis();
  }

  assess(): BudgetAssessment {
    return this.meter.assess();
  }

  breakdown(): UsageBreakdown {
    return this.meter.breakdown();
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
    const ahead = this.ahead;
    this.ahead = undefined;
    // A summary prepared ahead serves the threshold, and a manual compaction without focus; an
    // overflow (perhaps a smaller window) or a focus needs one of its own. A pruning alone prepared
    // ahead is made again now, when it costs no more and sees what came since.
    if (ahead && (reason === 'threshold' || (reason === 'manual' && !options.focus))) {
      const ready = await ahead.promise;
      // Prepared on an older snapshot, it may cover too little of the log as it grew: made again then.
      if (ready.status === 'compacted' && ready.compaction.entry && !this.freesTooLittle(ready.compaction)) {
        const reviewed = await this.reviewed(ready, options);
        if (reviewed.status !== 'compacted') return reviewed;
        const applied = await this.applyComputed(reviewed, reason);
        if (applied) return applied;
      }
    } else {
      ahead?.controller.abort();
    }
    const summarizer = await this.deps.summarizer();
    if (!summarizer) return { status: 'failed', reason: NO_SUMMARIZER };
    const computed = await this.computeOn(summarizer, [...this.records], reason, options, this.deps.config(), this.meter.pruneTarget());
    if (computed.status !== 'compacted') return computed;
    const outcome = await this.reviewed(computed, options);
    if (outcome.status !== 'compacted') return outcome;
    return (
      (await this.applyComputed(outcome, reason)) ?? {
        status: 'failed',
        reason: 'The conversation changed while it was compacted (another compaction or an undo). Nothing was changed.',
      }
    );
  }

  /** The local count of `messages`, with the counts stored with their records (nothing counted twice). */
  private countStored(messages: readonly Message[]): number {
    const counter = this.deps.model().counter;
    let total = 0;
    for (const message of messages) total += counter.countMessage(message, this.meter.storedOf(message));
    return total;
  }

  /** Whether `computed`, applied to the log as it is now, would free less than the configured share of the view. */
  private freesTooLittle(computed: ComputedCompaction): boolean {
    const counter = this.deps.model().counter;
    const tokensBefore = this.meter.tokensOfView(counter).total();
    return lowGainAt(this.records, computed, tokensBefore, (view) => this.countStored(view), this.deps.config(), this.memo());
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
    const counter = this.deps.model().counter;
    const memo = this.memo();
    const delta = edited.entry ? counter.countMessage(summaryMessage(edited.entry, memo)) - counter.countMessage(summaryMessage(entry, memo)) : 0;
    return { status: 'compacted', compaction: { ...edited, tokensAfter: edited.tokensAfter + delta } };
  }

  private computeOn(
    summarizer: Summarizer,
    snapshot: LogRecord[],
    reason: CompactionReason,
    options: CompactOptions,
    config: CompactionConfig,
    pruneTarget?: number,
  ): Promise<CompactionOutcome> {
    const model = this.deps.model();
    return (this.deps.engine ?? IN_THREAD_ENGINE).compute({
      conversationId: this.id,
      all: this.shared.all,
      leaf: this.leafTurn,
      snapshot,
      request: {
        reason,
        config,
        window: roomForMessages(model),
        overWindow: this.assess().level === 'over',
        ...(pruneTarget !== undefined ? { pruneTarget } : {}),
        ...(options.focus ? { focus: options.focus } : {}),
        ...(options.signal ? { signal: options.signal } : {}),
        ...(options.onProgress ? { onProgress: options.onProgress } : {}),
      },
      deps: {
        counter: model.counter,
        summarizer,
        clock: this.deps.clock,
        newId: this.deps.newId,
        memo: this.memo(),
        ...(this.deps.redact ? { redact: this.deps.redact } : {}),
      },
    });
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
    const counter = this.deps.model().counter;
    const check = await ledgersAtApply(
      () => this.records,
      outcome.compaction,
      (text) => counter.countText(text),
      this.memo(),
    );
    if (!check.ok) return undefined;
    const computed = check.compaction;
    // Counted with the counts stored with the records: after a reload nothing is tokenized again here.
    const tokensBefore = this.meter.tokensOfView(counter).total();
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
    const written = await this.write(records);
    if (entry) {
      await this.deps.index.addSummary(this.id, {
        entryId: entry.id,
        round: entry.round,
        reason: entry.reason,
        tokensBefore: entry.tokensBefore,
        tokensAfter: entry.tokensAfter,
        createdAt: entry.createdAt,
        fallback: entry.fallback,
      });
    }
    const compaction = { ...computed, records: written, view: this.view(), tokensBefore, tokensAfter };
    return { status: 'compacted', compaction: { ...compaction, ...(entry ? { entry } : {}), ...(pruning ? { pruning } : {}) } };
  }

  /**
   * Undoes the last compaction: the originals come back into the model's view. A summary made
   * right after a pruning, in the same compaction, is undone with it.
   */
  async undo(): Promise<{ ok: true; step: CompactionStep } | { ok: false; reason: string }> {
    if (this.compacting) return { ok: false, reason: 'A compaction is running; try again when it has finished.' };
    const undo = undoLastStep(this.records, this.deps.clock.now());
    if ('error' in undo) return { ok: false, reason: undo.error };
    // What was being summarized ahead was built on the compaction being undone.
    this.cancelAhead();
    await this.write(undo.records);
    if (undo.step.compaction) await this.deps.index.removeSummary(this.id, undo.step.compaction.id);
    // The originals are back in the view: those held without their content are read again.
    await this.loadView();
    this.changed();
    return { ok: true, step: undo.step };
  }

  private title(): string {
    const first = this.records.find((r) => r.type === 'message' && r.message.role === 'user');
    if (!first || first.type !== 'message') return NEW_TITLE;
    const text = first.message.content
      .map((p) => (p.type === 'text' ? p.text : ''))
      .join(' ')
      .replace(/\s+/g, ' ')
      .trim();
    return text.length > 60 ? `${text.slice(0, 57)}…` : text || NEW_TITLE;
  }

  private changed(): void {
    for (const listener of [...this.listeners]) listener();
  }
}

/**
 * The part of the window the conversation's messages have: every request also carries the system
 * prompt and the tool definitions. What a compaction keeps and how long its summary may be are
 * shares of this room, so a small local model whose tools take a third of its window is not
 * compacted again two turns later.
 */
export function roomForMessages(model: Pick<ModelContext, 'window' | 'fixedOverhead'>): ContextWindow {
  if (model.window.limit <= 0) return model.window;
  return { ...model.window, limit: Math.max(1, model.window.limit - model.fixedOverhead) };
}
