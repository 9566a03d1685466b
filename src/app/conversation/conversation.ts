import type { BudgetAssessment, UsageBreakdown } from '../../core/budget';
import { branchLog, onTurn } from '../../core/branches';
import type { CompactionGuard } from '../../core/compaction-guard';
import type { AheadState } from '../compaction/summary-ahead';
import type { CompactionOutcome } from '../../core/compaction';
import type { EngineMemo } from '../../core/engine-memo';
import {
  isSummaryMessage,
  lastStep,
  LiveModelView,
  stablePartEnd,
  undoLastStep,
  type CompactionEntry,
  type CompactionReason,
  type CompactionStep,
  type ConversationLog,
  type LogRecord,
} from '../../core/history';
import { skillsLoadedIn, type LoadedSkill } from '../../core/loaded-skills';
import { withTokenCounts } from '../../core/message-tokens';
import type { Message } from '../../core/messages';
import type { PruningEntry } from '../../core/pruning';
import { archivedId, ArchiveReader, formatRecall, RecallSearch, type RecallQuery } from '../../core/recall';
import type { ContextCount, RequestBasis } from '../../core/usage-calibration';
import { ConversationCompactor } from '../compaction/conversation-compactor';
import type { CompactOptions, ConversationDeps } from './conversation-deps';
import { ConversationMeter, type ModelContext } from './conversation-meter';
import { ConversationRecords, ViewNotWholeError, type BranchOptions, type ReadRecordsAt } from './conversation-records';
import { ConversationChangedError } from '../store/errors';

export { ConversationRecords, type BranchOptions };

/**
 * One conversation: its append-only log (persisted record by record), the model's view of it,
 * its token count and budget, and its compactions. Free of `vscode` so it is tested in Node;
 * the extension wires it to the chat, the gauge and the commands.
 */

export type { ModelContext };

export type { CompactOptions, ConversationDeps };

type Listener = () => void;

/** What an undo refused because the files changed says it did. */
const NOTHING_UNDONE =
  'Nothing was undone or written. Longrun reads the conversation again from disk as it is now; run Undo again to undo its last compaction.';

/** What a view is checked against, with the generations it was found at (see `loadView`). */
interface ViewState {
  readonly records: LogRecord[];
  readonly shared: number;
  readonly view: number;
}

/** The title of a conversation before its first request. */
export const NEW_TITLE = 'New conversation';

/** The longest answer of the `recall` tool when it names none, and its bounds by the window. */
const RECALL_DEFAULT_TOKENS = 4_000;
const RECALL_WINDOW_SHARE = 0.1;
const RECALL_MIN_TOKENS = 500;
/** Most tokens the skills loaded on a branch may take together, and their share of a smaller window. */
export const MAX_SKILL_TOKENS = 12_000;
const SKILL_WINDOW_SHARE = 0.2;

export class Conversation {
  /** The records of this branch: the path to `leaf`, the log everything here is derived from. */
  private records: LogRecord[];
  private readonly shared: ConversationRecords;
  private leafTurn: string | null;
  /**
   * The turn records written from now on are made on: the leaf, or the turn being started once its
   * record is on its way to the files. A record is on a path only when it was written before the
   * path's next turn began, so one written while a turn starts (a compaction applied just then) is
   * made on the new turn: written before the turn's record, it would be off the path the chat goes on.
   */
  private writingOn: string | null;
  private readonly listeners = new Set<Listener>();
  /** The view, its count and the provider's reports, kept up to date with this branch's records. */
  private readonly meter: ConversationMeter;
  /** The compaction running, the summary prepared ahead and the anti-loop guard. */
  private readonly compactor: ConversationCompactor;
  /** The generation of the shared records `records` was made from (see `ConversationRecords.generation`). */
  private branchGeneration: number;
  /** What `loadView` last found needing nothing read back: this branch's records, and the generations of the records and of the view. */
  private wholeView: ViewState | undefined;
  /** What `view` last found holding every message with its content, as `wholeView` says it. */
  private sendable: ViewState | undefined;
  /** Reads this conversation's messages held without their content back from its files. */
  private readonly readAt: ReadRecordsAt;

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
    this.writingOn = this.leafTurn;
    this.records = branchLog(this.shared.all, this.leafTurn, turns);
    this.branchGeneration = this.shared.generation;
    this.readAt = (lines) => this.deps.store.readAt(this.id, lines);
    this.meter = new ConversationMeter({
      conversationId: id,
      records: () => this.records,
      all: () => this.shared.all,
      memo: this.memo(),
      deps,
      changed: () => this.changed(),
    });
    this.compactor = new ConversationCompactor({
      conversationId: id,
      deps,
      meter: this.meter,
      records: () => this.records,
      all: () => this.shared.all,
      leaf: () => this.leafTurn,
      memo: () => this.memo(),
      write: (records) => this.write(records),
      changed: () => this.changed(),
      // What a compaction took out is let go at once: a long turn that compacts many times holds only its view.
      letGoArchived: () => this.letGoArchived(),
    });
  }

  /** The records of this branch (the path to its leaf turn), oldest first. */
  log(): ConversationLog {
    return this.records;
  }

  /** The records of this branch, with those held without their content read back from disk (not kept). */
  async wholeLog(): Promise<readonly LogRecord[]> {
    this.rebranchIfStale();
    return this.shared.readThrough(this.records, this.readAt);
  }

  /** `records` (of this conversation, any branch), those held without their content read back from disk (not kept). */
  recordsRead(records: readonly LogRecord[]): Promise<readonly LogRecord[]> {
    return this.shared.readThrough(records, this.readAt);
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
   * (after an undo, a rewind, or another branch was used); resolves once the view is whole. Rejects
   * with `ConversationChangedError` when the files no longer hold them as they were read.
   */
  async loadView(): Promise<void> {
    this.rebranchIfStale();
    if (this.shared.awayCount() === 0) return;
    const live = this.meter.live();
    // The view was found whole, and neither the branch's records nor the view have changed since.
    const whole = this.wholeView;
    if (whole?.records === this.records && whole.shared === this.shared.generation && whole.view === live.generation) return;
    const wanted = this.neededBy(this.records, live);
    if (wanted.length === 0) {
      this.wholeView = { records: this.records, shared: this.shared.generation, view: live.generation };
      return;
    }
    await this.readBack(wanted);
  }

  /**
   * The messages of `records` held without their content that a view of them (`live`) needs: those it
   * shows, and the branch's first request, which every summary restates.
   */
  private neededBy(records: readonly LogRecord[], live: LiveModelView): LogRecord[] {
    const last = live.entries().at(-1);
    // A summary from before needle ledgers were kept makes the next compaction scan every message.
    const scansAll = last !== undefined && !last.needles;
    const wanted = records.filter((r) => r.type === 'message' && this.shared.isAway(r) && (scansAll || !live.removes(r.message.id)));
    const task = this.originalRequest();
    if (task && this.shared.isAway(task) && !wanted.includes(task)) wanted.push(task);
    return wanted;
  }

  /** Reads `wanted` back into the shared records, checked to be what was read from the files before. */
  private async readBack(wanted: readonly LogRecord[]): Promise<void> {
    await this.shared.readBack(wanted, this.readAt);
    this.rebranch();
    // The worker's copy holds these records without their content: it is sent the log again.
    this.deps.engine?.forget(this.id);
    this.changed();
  }

  /**
   * The branch's first request: the task summaries restate and the conversation's title, held with
   * its content wherever it is.
   */
  private originalRequest(): LogRecord | undefined {
    return this.records.find((r) => r.type === 'message' && r.message.role === 'user' && !isSummaryMessage(r.message));
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
    const parent = this.writingOn;
    const turn = { id, parent, at: this.deps.clock.now(), ...(chat !== undefined ? { chat } : {}) };
    // Records written from now on follow the turn's record in the files: they are made on it.
    this.writingOn = id;
    try {
      await this.write([{ type: 'turn', turn }]);
    } catch (error) {
      if (this.writingOn === id) this.writingOn = parent;
      throw error;
    }
    this.leafTurn = id;
  }

  /**
   * Writes records made on this branch's leaf turn, in one write, and takes them into the branch.
   * Records found out of date (their files changed under them) write nothing more: what they would
   * add would follow a history the files no longer hold.
   */
  private async write(records: readonly LogRecord[]): Promise<LogRecord[]> {
    if (this.shared.changed) throw this.shared.changed;
    const made = records.map((record) => onTurn(record, this.writingOn));
    let stored: LogRecord[];
    try {
      // What is kept in memory is what was stored: a record cut to fit its line is held cut, as a
      // reload reads it, so memory does not grow with an answer larger than the store keeps.
      stored = await this.deps.store.appendAll(this.id, made, (record, location) => this.shared.locate(record, location));
    } catch (error) {
      if (ConversationChangedError.isInstance(error)) this.shared.markChanged(error);
      throw error;
    }
    this.shared.all.push(...stored);
    this.records.push(...stored);
    return stored;
  }

  /**
   * The model's view of the log, as `modelView(log())` derives it: what a request sends. Throws
   * `ViewNotWholeError` rather than give a view holding a message without its content (one
   * `loadView` did not read back): such a message must never reach the model.
   */
  view(): Message[] {
    const live = this.meter.live();
    this.checkWhole(live);
    return live.messages();
  }

  /** Throws when the view would show a message held without its content. */
  private checkWhole(live: LiveModelView): void {
    if (this.shared.awayCount() === 0) return;
    const known = this.sendable;
    if (known?.records === this.records && known.shared === this.shared.generation && known.view === live.generation) return;
    let away = 0;
    for (const r of this.records) if (r.type === 'message' && this.shared.isAway(r) && !live.removes(r.message.id)) away++;
    if (away > 0) throw new ViewNotWholeError(this.id, away);
    this.sendable = { records: this.records, shared: this.shared.generation, view: live.generation };
  }

  isEmpty(): boolean {
    return !this.meter.live().hasMessages();
  }

  lastCompaction(): CompactionEntry | undefined {
    return this.meter.live().entries().at(-1);
  }

  /** The anti-loop guard, which its compactor advances: callers name their moment (see `CompactionGuard`). */
  guard(): CompactionGuard {
    return this.compactor.guard;
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
   * The skills the agent loaded on this branch: those the summary in force carries, then those the
   * view's tool results hold (see `loaded-skills.ts`); each once.
   */
  loadedSkills(): readonly LoadedSkill[] {
    const carried = this.lastCompaction()?.skills ?? [];
    const names = new Set(carried.map((s) => s.name));
    return [...carried, ...skillsLoadedIn(this.view()).filter((s) => !names.has(s.name))];
  }

  /** Most tokens the loaded skills may take together: a fifth of the window, at most {@link MAX_SKILL_TOKENS}. */
  skillBudgetTokens(): number {
    const limit = this.deps.model().window.limit;
    return limit > 0 ? Math.min(MAX_SKILL_TOKENS, Math.floor(limit * SKILL_WINDOW_SHARE)) : MAX_SKILL_TOKENS;
  }

  /** The tokens of `text` by the model's tokenizer. */
  countText(text: string): number {
    return this.deps.model().counter.countText(text);
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
    const records = this.records.slice();
    const read = this.readAt;
    const archive = new ArchiveReader(records);
    const search = new RecallSearch({ ...query, maxTokens }, (text) => model.counter.countText(text));
    if (!archive.empty) {
      for await (const run of this.shared.readInRuns(records, read)) {
        for (const record of run) {
          const found = archive.take(record);
          if (found) search.add(found);
        }
      }
    }
    // Only what the answer shows is read a second time.
    const wanted = search.wanted();
    const shown = await this.shared.readThrough(
      records.filter((r) => wanted.has(archivedId(r) ?? '')),
      read,
    );
    const texts = new Map<string, string>();
    for (const record of shown) {
      const id = archivedId(record);
      if (id === undefined || texts.has(id)) continue;
      const again = archive.again(record, wanted.get(id)!);
      if (again) texts.set(id, again.text);
    }
    return formatRecall(search.result(texts));
  }

  round(): number {
    return this.lastCompaction()?.round ?? 0;
  }

  isCompacting(): boolean {
    return this.compactor.isCompacting();
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
    this.compactor.summarizeAheadIfDue();
  }

  /** Whether a summary is being prepared ahead of need (for the gauge and tests). */
  isSummarizingAhead(): boolean {
    return this.compactor.isSummarizingAhead();
  }

  /** Where the summary prepared ahead stands: idle, preparing, ready, stale or applied (see `SummaryAhead`). */
  aheadState(): AheadState {
    return this.compactor.aheadState();
  }

  /**
   * The id of the message that ends the part of the view the last compaction or pruning left as it
   * will stay until the next (see `stablePartEnd`): a cache breakpoint there keeps it.
   */
  stableEnd(): string | undefined {
    const live = this.meter.live();
    return stablePartEnd(this.records, live.stable, live.activeSteps().at(-1)?.entry.id ?? null);
  }

  /** Drops a summary prepared ahead (the conversation was left, or undone past it). */
  cancelAhead(): void {
    this.compactor.cancelAhead();
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
  async compact(reason: CompactionReason, options: CompactOptions = {}): Promise<CompactionOutcome & { readonly joined?: boolean }> {
    // An out-of-date copy would summarize, and ask the model, for a history the files no longer hold.
    const changed = this.shared.changed;
    if (changed) return { status: 'failed', reason: `${changed.message} Nothing was compacted.` };
    return this.compactor.compact(reason, options);
  }

  /** What the chat is to be told about compaction and has not been yet, once (see `ConversationCompactor.takeNotice`). */
  takeNotice(): string | undefined {
    return this.compactor.takeNotice();
  }

  /**
   * Lets go of the content of the messages a compaction took out of this branch's view, where their
   * lines are known, as a reload would hold them: memory follows what the model sees. They are read
   * back when a view needs them again (an undo, another branch, `recall`, an export).
   */
  private letGoArchived(): void {
    const held = [...this.shared.heldWithContent()];
    if (held.length === 0) return;
    this.rebranchIfStale();
    const live = this.meter.live();
    const last = live.entries().at(-1);
    // A summary from before needle ledgers were kept makes the next compaction scan every message.
    if (last !== undefined && !last.needles) return;
    const task = this.originalRequest();
    const letGo = held.filter((r) => r !== task && r.type === 'message' && live.removes(r.message.id));
    if (letGo.length === 0) return;
    const { replaced, positions } = this.shared.letGo(letGo);
    // This branch's log is kept, its records replaced in place: its view is made of the same messages.
    for (let i = 0; i < this.records.length; i++) this.records[i] = replaced.get(this.records[i]!) ?? this.records[i]!;
    this.branchGeneration = this.shared.generation;
    this.deps.engine?.letGo?.(this.id, positions);
  }

  /**
   * Undoes the last compaction: the originals come back into the model's view. A summary made
   * right after a pruning, in the same compaction, is undone with it. The originals held only on
   * disk are read back, and checked, before the undo is written: when the files no longer hold them
   * as they were read, nothing is written, and the reason says what happened.
   */
  async undo(): Promise<{ ok: true; step: CompactionStep } | { ok: false; reason: string }> {
    if (this.compactor.isCompacting()) return { ok: false, reason: 'A compaction is running; try again when it has finished.' };
    this.rebranchIfStale();
    const undo = undoLastStep(this.records, this.deps.clock.now());
    if ('error' in undo) return { ok: false, reason: undo.error };
    const after = [...this.records, ...undo.records];
    const live = new LiveModelView(this.memo());
    live.update(after);
    try {
      const wanted = this.neededBy(after, live);
      if (wanted.length > 0) await this.readBack(wanted);
      // What was being summarized ahead was built on the compaction being undone.
      this.cancelAhead();
      await this.write(undo.records);
    } catch (error) {
      if (!ConversationChangedError.isInstance(error)) throw error;
      return { ok: false, reason: `${error.message} ${NOTHING_UNDONE}` };
    }
    if (undo.step.compaction) await this.deps.index.removeSummary(this.id, undo.step.compaction.id);
    // The originals are back in the view, read again above; a summary from before needle ledgers may want more.
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
