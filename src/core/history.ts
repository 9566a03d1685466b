import type { EngineMemo, RememberedFileLedger } from './engine-memo';
import { renderLoadedSkills } from './loaded-skills';
import { EMPTY_LEDGER, recordFileEvents, type FileLedger } from './file-ledger';
import type { CompactionEntry, CompactionReason, ConversationLog, FileChange, LogRecord, PruningEntry, ReportedUsage, TurnInfo } from './log';
import { text, type Message } from './messages';
import { withStubs } from './pruning';
import { everyValueOf } from './values';
import type { SummaryRole, FileChangeKind } from './log';

export type { CompactionEntry, CompactionReason, ConversationLog, FileChange, FileChangeKind, LogRecord, SummaryRole, TurnInfo };
import { COMPACTION_REASONS, FILE_CHANGE_KINDS, SUMMARY_ROLES } from './log-values';

export { COMPACTION_REASONS, FILE_CHANGE_KINDS, SUMMARY_ROLES };

/**
 * A conversation is an append-only log: messages, compaction entries, prunings and undo marks.
 * Nothing is ever removed from it; the history the model sees (`modelView`) is derived from it, so
 * every compaction and pruning can be shown, undone or re-run from the originals.
 */

/** Every `type` of `LogRecord`: the list fails to compile when it leaves one out or names another. */
export const RECORD_TYPES = everyValueOf<LogRecord['type']>()([
  'message',
  'compaction',
  'pruning',
  'undo',
  'usage',
  'file',
  'change',
  'turn',
  'command',
  'plan',
  'account',
  'subagent',
]);
export type RecordType = (typeof RECORD_TYPES)[number];

/** What the model is told just before a summary. */
export const SUMMARY_PREFIX = 'The conversation history before this point was compacted into the following summary:';

/**
 * Whether a message carries a compaction summary. Known by structure only (the view marks the
 * message it makes from a compaction entry), never by its text: a reply or a quoted file that starts
 * like a summary is ordinary content.
 */
export function isSummaryMessage(message: Message): boolean {
  return message.summaryOf !== undefined;
}

/**
 * The message that carries an entry's summary into the view. The same entry always gives the same
 * message object under one `memo`: entries never change, and a token counter that remembers messages
 * by identity then counts each summary once, however often the view is derived.
 */
export function summaryMessage(entry: CompactionEntry, memo: EngineMemo): Message {
  let message = memo.summaryMessages.get(entry);
  if (!message) {
    const last = memo.lastSummary;
    // A copy of the entry with other numbers (its counts taken again when it is written) shows the
    // same message, so that it is counted once.
    if (last && showsSame(last.entry, entry)) message = last.message;
    else {
      // The skills it carries follow as a part of their own, which the summarizer is never asked to rewrite.
      const skills = renderLoadedSkills(entry.skills);
      message = {
        id: `summary:${entry.id}`,
        role: entry.summaryRole,
        content: [text(`${SUMMARY_PREFIX}\n\n${entry.summary}`), ...(skills ? [text(skills)] : [])],
        summaryOf: entry.id,
      };
    }
    memo.summaryMessages.set(entry, message);
    memo.lastSummary = { entry, message };
  }
  return message;
}

/** Whether two compaction entries make the same summary message. */
function showsSame(a: CompactionEntry, b: CompactionEntry): boolean {
  return a.id === b.id && a.summary === b.summary && a.summaryRole === b.summaryRole && a.skills === b.skills;
}

/** A compaction or a pruning in force. */
export type ActiveStep =
  { readonly kind: 'compaction'; readonly entry: CompactionEntry } | { readonly kind: 'pruning'; readonly entry: PruningEntry };

/**
 * The one fold of the steps in force, record by record: a compaction or a pruning comes into force
 * when written, and leaves it when undone. `activeSteps` and the live view both take records through it.
 */
export class StepsInForce {
  /** Compactions and prunings in force, in log order. */
  readonly steps: ActiveStep[] = [];
  /** The compactions among them, oldest first. */
  readonly compactions: CompactionEntry[] = [];
  /** The prunings among them, oldest first. */
  readonly prunings: PruningEntry[] = [];

  /** Takes `record` in; true when the steps in force changed. */
  take(record: LogRecord): boolean {
    if (record.type === 'compaction') {
      this.compactions.push(record.entry);
      this.steps.push({ kind: 'compaction', entry: record.entry });
      return true;
    }
    if (record.type === 'pruning') {
      this.prunings.push(record.entry);
      this.steps.push({ kind: 'pruning', entry: record.entry });
      return true;
    }
    if (record.type !== 'undo') return false;
    const at = this.steps.findIndex((s) => s.entry.id === record.entryId);
    if (at < 0) return false;
    const [step] = this.steps.splice(at, 1);
    const list: Array<{ readonly id: string }> = step!.kind === 'compaction' ? this.compactions : this.prunings;
    list.splice(
      list.findIndex((e) => e.id === record.entryId),
      1,
    );
    return true;
  }

  clear(): void {
    this.steps.length = 0;
    this.compactions.length = 0;
    this.prunings.length = 0;
  }
}

/** The compactions and prunings in force, oldest first: every one not undone since. */
export function activeSteps(log: ConversationLog): ActiveStep[] {
  const fold = new StepsInForce();
  for (const record of log) fold.take(record);
  return fold.steps;
}

/** The entries in force, oldest first: every compaction not undone since. */
export function activeEntries(log: ConversationLog): CompactionEntry[] {
  return activeSteps(log).flatMap((s) => (s.kind === 'compaction' ? [s.entry] : []));
}

/** The prunings in force, oldest first. */
export function activePrunings(log: ConversationLog): PruningEntry[] {
  return activeSteps(log).flatMap((s) => (s.kind === 'pruning' ? [s.entry] : []));
}

/**
 * The last compaction as the user asked for it: a summary, a pruning alone, or a pruning and the
 * summary made right after it in the same compaction.
 */
export interface CompactionStep {
  readonly compaction?: CompactionEntry;
  readonly pruning?: PruningEntry;
}

/** The content of every message record held without it. */
const NO_CONTENT: readonly never[] = Object.freeze([]);

/**
 * A message record held without its content (its line's place in the files known, to read it back):
 * its id, role and turn, nothing else; its stored token counts come back with the content.
 */
export function contentHeldAway(record: LogRecord & { type: 'message' }): LogRecord & { type: 'message' } {
  const { tokens: _tokens, ...rest } = record;
  return { ...rest, message: { ...record.message, content: NO_CONTENT as never[] } };
}

/** The last compaction in force (see `CompactionStep`), from the steps in force oldest first. */
export function lastStep(steps: readonly ActiveStep[]): CompactionStep | undefined {
  const last = steps.at(-1);
  if (!last) return undefined;
  if (last.kind === 'pruning') return { pruning: last.entry };
  const before = steps.at(-2);
  const linked = before?.kind === 'pruning' && before.entry.id === last.entry.pruningId;
  return linked ? { compaction: last.entry, pruning: before.entry } : { compaction: last.entry };
}

export function lastEntry(log: ConversationLog): CompactionEntry | undefined {
  return activeEntries(log).at(-1);
}

export function allMessages(log: ConversationLog): Message[] {
  const messages: Message[] = [];
  for (const record of log) if (record.type === 'message') messages.push(record.message);
  return messages;
}

/**
 * The history the model sees: the messages kept in front (system
 * messages), then the summary, then every message from the first kept one on that no active
 * compaction took out, including all appended since. The summary and pruned messages it is made of
 * are remembered in `memo`, so that deriving the view again gives the same objects.
 */
export function modelView(log: ConversationLog, memo: EngineMemo): Message[] {
  const view = new LiveModelView(memo);
  view.update(log);
  return view.messages();
}

/** What a tool call that never got its result is answered with in the model's view. */
export const INTERRUPTED_RESULT =
  'interrupted: the editor closed (or the request stopped) before this tool finished; Longrun added this result. Run the tool again if its result is needed.';

/**
 * Makes the tool traffic of a view valid for every provider, whatever a crash, a full disk or a
 * damaged line left in the log: a call without its result gets a synthetic one (an error saying it
 * was interrupted) right after its message, and a result without its call is left out of the view.
 * The log itself is not changed; the view is derived anew each time.
 */
export function pairToolTraffic(view: readonly Message[]): Message[] {
  const pairing = new ToolPairing();
  for (const message of view) pairing.push(message);
  return pairing.changed() ? pairing.messages() : (view as Message[]);
}

/**
 * `pairToolTraffic` one message at a time, so that a view that grows at its end is paired at the
 * cost of what was added. The messages pushed so far are paired as `pairToolTraffic` would pair
 * them: `stable` (which later pushes only extend) and `trailing` (the synthetic result for calls
 * still open at the end, which the next push may change).
 */
export class ToolPairing {
  private readonly out: Message[] = [];
  /** Calls of the latest assistant message still waiting for results, by id, in order. */
  private open = new Map<string, string>();
  private openFrom = '';
  /** Whether a result was left out or a synthetic one added: the paired view differs from what was pushed. */
  private altered = false;
  /** The synthetic result for the open calls, made once until they change. */
  private closing: Message | undefined;

  push(message: Message): void {
    if (message.role === 'tool') {
      const kept = message.content.filter((part) => part.type !== 'tool-result' || this.open.delete(part.toolCallId));
      this.closing = undefined;
      if (kept.length !== message.content.length) this.altered = true;
      if (kept.length > 0) this.out.push(kept.length === message.content.length ? message : { ...message, content: kept });
      return;
    }
    const closing = this.trailing();
    if (closing) {
      this.out.push(closing);
      this.altered = true;
      this.open = new Map();
    }
    this.closing = undefined;
    this.out.push(message);
    if (message.role === 'assistant') {
      for (const part of message.content) if (part.type === 'tool-call') this.open.set(part.toolCallId, part.toolName);
      this.openFrom = message.id;
    }
  }

  /** The paired messages that later pushes leave as they are. */
  get stable(): readonly Message[] {
    return this.out;
  }

  /** The synthetic result answering the calls still open at the end, if any. */
  trailing(): Message | undefined {
    if (this.open.size === 0) return undefined;
    this.closing ??= {
      id: `interrupted:${this.openFrom}`,
      role: 'tool',
      content: [...this.open].map(([toolCallId, toolName]) => ({
        type: 'tool-result' as const,
        toolCallId,
        toolName,
        output: INTERRUPTED_RESULT,
        isError: true,
      })),
    };
    return this.closing;
  }

  /** Whether pairing added or left out anything: the paired view differs from the messages pushed. */
  changed(): boolean {
    return this.altered || this.open.size > 0;
  }

  /** The paired view, as a new array. */
  messages(): Message[] {
    const closing = this.trailing();
    return closing ? [...this.out, closing] : [...this.out];
  }
}

/** The stubs of prunings, by message id, then tool call id. */
type Stubs = ReadonlyMap<string, ReadonlyMap<string, string>>;

/**
 * What a view is made of, before its tool traffic is paired: each message as the log holds it
 * (undefined for the summary) and as the view shows it (its pruned outputs replaced by their stubs).
 */
interface Pushed {
  readonly originals: readonly (Message | undefined)[];
  readonly shown: readonly Message[];
}

/**
 * The model's view of a log that only grows, kept up to date record by record: equal to
 * `modelView(log)` after every `update`, at the cost of what was appended. A message appended after
 * the compaction in force joins the end of the view; so does a pruning or a compaction appended at
 * the end, at the cost of the view rather than of the log (what a long conversation's compactions
 * took out is never walked again). An undo, a compaction whose first kept message is not in the view,
 * and the rare message that moves where the kept part begins have the view derived anew, once.
 */
export class LiveModelView {
  private log: ConversationLog | undefined;
  /** Records of `log` taken into account. */
  private seen = 0;
  private readonly inForce = new StepsInForce();
  private removed = new Set<string>();
  /** The stubs of the prunings in force, by message id, then tool call id. */
  private stubs = new Map<string, ReadonlyMap<string, string>>();
  /** The first kept message the entry in force names but the log did not hold when it was derived. */
  private awaitedKeptId: string | null = null;
  private pairing = new ToolPairing();
  /** What was pushed to `pairing`, in order. */
  private pushed: { originals: (Message | undefined)[]; shown: Message[] } = { originals: [], shown: [] };
  /** Whether the messages pushed (the summary aside) are in log order, so that a step at the end can be taken in. */
  private ordered = true;
  /** Messages whose stubs changed since they were pushed: shown again with them when the view is next read. */
  private restub = new Set<string>();
  /** Prunings taken in whose stubs are not in `stubs` yet: added when next needed, for the messages still in the view. */
  private unsettled: PruningEntry[] = [];
  /**
   * Whether `pairing` holds what was pushed: a step taken in leaves it to be made again when the view
   * is next read, so a pruning and a compaction taken in together pair the view once.
   */
  private paired = true;
  private stale = false;
  private generationCount = 0;
  private messageCount = 0;

  /** `memo` remembers the summary and pruned messages the view is made of. */
  constructor(private readonly memo: EngineMemo) {}

  /**
   * Takes in what was appended to `log` since the last update. A log that is not the one seen
   * before, or is shorter, is taken in from its start.
   */
  update(log: ConversationLog): void {
    if (log !== this.log || log.length < this.seen) this.reset(log);
    for (; this.seen < log.length; this.seen++) this.take(log[this.seen]!);
    if (this.stale) this.derive(log);
  }

  /**
   * The view once `records` (prunings and compactions) are appended to the log this view is up to
   * date with, without taking them in; undefined when only deriving the view from the whole log
   * can tell (see the class comment).
   */
  after(records: readonly LogRecord[]): Message[] | undefined {
    if (this.stale) return undefined;
    let pushed: Pushed = this.pushed;
    const prunings = [...this.unsettled];
    for (const record of records) {
      if (record.type === 'pruning') {
        prunings.push(record.entry);
      } else if (record.type === 'compaction') {
        const next = this.ordered ? afterCompaction(pushed, record.entry, this.memo) : undefined;
        if (!next) return undefined;
        pushed = next;
      } else {
        return undefined;
      }
    }
    // Only the messages still in the view are given their stubs.
    const inView = new Set<string>();
    for (const original of pushed.originals) if (original !== undefined) inView.add(original.id);
    const added = stubsAdding(this.stubs, prunings, inView);
    const pairing = new ToolPairing();
    pushed.originals.forEach((original, i) => {
      const restubbed = original !== undefined && (added.has(original.id) || this.restub.has(original.id));
      const byCall = restubbed ? (added.get(original.id) ?? this.stubs.get(original.id)) : undefined;
      pairing.push(byCall ? withStubs(original!, byCall, this.memo) : pushed.shown[i]!);
    });
    return pairing.messages();
  }

  /** The view, as a new array. */
  messages(): Message[] {
    return this.pairingNow().messages();
  }

  /** The view but its last message when that is a synthetic result for open calls (see `ToolPairing`). */
  get stable(): readonly Message[] {
    return this.pairingNow().stable;
  }

  /** The synthetic result that ends the view while tool calls are open. */
  trailing(): Message | undefined {
    return this.pairingNow().trailing();
  }

  /** Changes each time the view is derived anew: positions in `stable` from before no longer hold. */
  get generation(): number {
    return this.generationCount;
  }

  /** The entries in force, oldest first, as `activeEntries` gives them. */
  entries(): readonly CompactionEntry[] {
    return this.inForce.compactions;
  }

  /** The prunings in force, oldest first, as `activePrunings` gives them. */
  prunedBy(): readonly PruningEntry[] {
    return this.inForce.prunings;
  }

  /** The compactions and prunings in force, in log order, as `activeSteps` gives them. */
  activeSteps(): readonly ActiveStep[] {
    return this.inForce.steps;
  }

  /** Whether the log holds any message. */
  hasMessages(): boolean {
    return this.messageCount > 0;
  }

  /** Whether a compaction in force took message `id` out of the view. */
  removes(id: string): boolean {
    return this.removed.has(id);
  }

  private reset(log: ConversationLog): void {
    this.log = log;
    this.seen = 0;
    this.inForce.clear();
    this.messageCount = 0;
    this.stale = true;
  }

  private take(record: LogRecord): void {
    if (record.type === 'message') {
      this.messageCount++;
      if (this.stale) return;
      // The first kept message arriving late moves where the kept part begins, removed or not.
      if (this.awaitedKeptId !== null && record.message.id === this.awaitedKeptId) this.stale = true;
      else if (!this.removed.has(record.message.id)) this.push(record.message, this.shown(record.message));
    } else if (this.inForce.take(record) && !this.stale && !this.takeStep(record)) {
      this.stale = true;
    }
  }

  /** Takes in a pruning or a compaction appended at the end, from the view as it is; false when it cannot. */
  private takeStep(record: LogRecord): boolean {
    if (record.type === 'pruning') {
      this.unsettled.push(record.entry);
    } else if (record.type === 'compaction' && this.ordered) {
      const pushed = afterCompaction(this.pushed, record.entry, this.memo);
      if (!pushed) return false;
      this.pushed = pushed;
      for (const id of record.entry.compactedMessageIds) this.removed.add(id);
      this.awaitedKeptId = null;
    } else {
      return false;
    }
    this.generationCount++;
    this.paired = false;
    return true;
  }

  private push(original: Message | undefined, shown: Message): void {
    const pairing = this.pairingNow();
    this.pushed.originals.push(original);
    this.pushed.shown.push(shown);
    pairing.push(shown);
  }

  /** The pairing of what was pushed, made when a step taken in left it behind. */
  private pairingNow(): ToolPairing {
    if (!this.paired) {
      this.settleStubs();
      const { originals, shown } = this.pushed;
      if (this.restub.size > 0) {
        originals.forEach((original, i) => {
          if (original !== undefined && this.restub.has(original.id)) shown[i] = this.shown(original);
        });
        this.restub.clear();
      }
      this.pairing = new ToolPairing();
      for (const shown of this.pushed.shown) this.pairing.push(shown);
      this.paired = true;
    }
    return this.pairing;
  }

  /** The view derived from the whole log, as it always was. */
  private derive(log: ConversationLog): void {
    this.stale = false;
    this.restub.clear();
    this.unsettled = [];
    this.generationCount++;
    this.pairing = new ToolPairing();
    this.paired = true;
    this.pushed = { originals: [], shown: [] };
    this.removed = new Set();
    this.awaitedKeptId = null;
    this.stubs = stubsAdding(new Map(), this.inForce.prunings);
    const last = this.inForce.compactions.at(-1);
    // With nothing kept, system messages stay in front of messages before them: not in log order.
    this.ordered = last === undefined || last.firstKeptMessageId !== null;
    if (!last) {
      for (const record of log) if (record.type === 'message') this.push(record.message, this.shown(record.message));
      return;
    }
    for (const entry of this.inForce.compactions) for (const id of entry.compactedMessageIds) this.removed.add(id);

    let keptFrom = -1;
    if (last.firstKeptMessageId !== null) {
      keptFrom = log.findIndex((r) => r.type === 'message' && r.message.id === last.firstKeptMessageId);
      if (keptFrom < 0) this.awaitedKeptId = last.firstKeptMessageId;
    }
    if (keptFrom < 0) keptFrom = log.findIndex((r) => r.type === 'compaction' && r.entry.id === last.id);

    // With nothing kept, what came after the last compacted message (appended while the summary was
    // computed) follows the summary too; only system messages stay in front.
    const takenUpTo = last.firstKeptMessageId === null ? afterLastTaken(log, last, keptFrom) : keptFrom;
    const after: Message[] = [];
    log.forEach((record, index) => {
      if (record.type !== 'message' || this.removed.has(record.message.id)) return;
      if (index < keptFrom && (index < takenUpTo || record.message.role === 'system')) this.push(record.message, this.shown(record.message));
      else after.push(record.message);
    });
    this.push(undefined, summaryMessage(last, this.memo));
    for (const message of after) this.push(message, this.shown(message));
  }

  /**
   * Adds to `stubs` those of the prunings taken in since, for the messages no compaction took out,
   * and has those messages shown again.
   */
  private settleStubs(): void {
    if (this.unsettled.length === 0) return;
    const added = stubsAdding(this.stubs, this.unsettled, { has: (id) => !this.removed.has(id) });
    this.unsettled = [];
    for (const [id, byCall] of added) {
      this.stubs.set(id, byCall);
      this.restub.add(id);
    }
  }

  /** A message as the view shows it: with the outputs a pruning in force replaced by their stubs. */
  private shown(message: Message): Message {
    this.settleStubs();
    const stubs = this.stubs.get(message.id);
    return stubs ? withStubs(message, stubs, this.memo) : message;
  }
}

/**
 * The stubs `entries` set (of the messages `only` has, when given), merged with those `stubs` holds
 * for the same messages (a later pruning's stub wins): by message id.
 */
function stubsAdding(stubs: Stubs, entries: readonly PruningEntry[], only?: { has(id: string): boolean }): Map<string, ReadonlyMap<string, string>> {
  const changed = new Map<string, Map<string, string>>();
  for (const entry of entries) {
    for (const output of entry.outputs) {
      if (only && !only.has(output.messageId)) continue;
      let byCall = changed.get(output.messageId);
      if (!byCall) changed.set(output.messageId, (byCall = new Map(stubs.get(output.messageId))));
      byCall.set(output.toolCallId, output.stub);
    }
  }
  return changed;
}

/**
 * `pushed` (in log order, the summary aside) once compaction `entry` comes into force at the end of
 * the log, as deriving the view would make it: the messages before its first kept one stay in front
 * unless it took them out, then its summary, then the messages from the first kept one on that it did
 * not take out. Undefined when its first kept message is not in the view: only deriving can tell.
 */
function afterCompaction(
  pushed: Pushed,
  entry: CompactionEntry,
  memo: EngineMemo,
): { originals: (Message | undefined)[]; shown: Message[] } | undefined {
  if (entry.firstKeptMessageId === null) return undefined;
  // Every message no compaction took out is pushed, so the first pushed with the id is the log's first.
  const kept = pushed.originals.findIndex((m) => m?.id === entry.firstKeptMessageId);
  if (kept < 0) return undefined;
  const taken = new Set(entry.compactedMessageIds);
  const originals: (Message | undefined)[] = [];
  const shown: Message[] = [];
  const keep = (i: number): void => {
    const original = pushed.originals[i];
    if (original === undefined || taken.has(original.id)) return;
    originals.push(original);
    shown.push(pushed.shown[i]!);
  };
  for (let i = 0; i < kept; i++) keep(i);
  originals.push(undefined);
  shown.push(summaryMessage(entry, memo));
  for (let i = kept; i < pushed.originals.length; i++) keep(i);
  return { originals, shown };
}

/**
 * The position just after the last message `entry` compacted, looking only before `end` (the entry's
 * own record: an id repeated after it by a damaged log does not count); -1 when there is none.
 */
function afterLastTaken(log: ConversationLog, entry: CompactionEntry, end: number): number {
  const taken = new Set(entry.compactedMessageIds);
  for (let i = Math.min(end, log.length) - 1; i >= 0; i--) {
    const record = log[i]!;
    if (record.type === 'message' && taken.has(record.message.id)) return i + 1;
  }
  return -1;
}

/**
 * The compaction state the model's view is in: the id of the latest compaction or pruning in force,
 * null before any.
 * A request records it when sent; usage reported under another basis no longer describes the view.
 */
export function currentBasis(log: ConversationLog): string | null {
  return activeSteps(log).at(-1)?.entry.id ?? null;
}

/**
 * Whether a usage report is of one of the agent's requests, whose prompt is the view: a summarizer
 * call's is not, so it never calibrates the count (it is counted only as what a compaction cost).
 */
export function isAgentUsage(usage: ReportedUsage): boolean {
  return usage.purpose === undefined;
}

/**
 * Every usage report of the agent's requests in the log, oldest first. The extension keeps them as
 * they are appended (`ConversationMeter`); this reading of a whole log is what the tests check that
 * against.
 */
export function usageReports(log: ConversationLog): ReportedUsage[] {
  const out: ReportedUsage[] = [];
  for (const record of log) if (record.type === 'usage' && isAgentUsage(record.usage)) out.push(record.usage);
  return out;
}

/**
 * Where the part of the view that stays the same until the next compaction ends: the last message of
 * `view` that was in the log when the latest compaction or pruning in force (`stepId`) was applied,
 * or that compaction's summary. Every request until the next compaction begins with the view up to
 * it. Undefined before any compaction or pruning, or when the view holds nothing from before it.
 */
export function stablePartEnd(log: ConversationLog, view: readonly Message[], stepId: string | null): string | undefined {
  if (stepId === null) return undefined;
  const after = new Set<string>();
  let found = false;
  for (let i = log.length - 1; i >= 0; i--) {
    const record = log[i]!;
    if ((record.type === 'compaction' || record.type === 'pruning') && record.entry.id === stepId) {
      found = true;
      break;
    }
    if (record.type === 'message') after.add(record.message.id);
  }
  if (!found) return undefined;
  for (let i = view.length - 1; i >= 0; i--) {
    const id = view[i]!.id;
    // A result Longrun adds for a call left open is not in the log: it may be replaced.
    if (!after.has(id) && !id.startsWith('interrupted:')) return id;
  }
  return undefined;
}

/** The round the next compaction will have. */
export function nextRound(log: ConversationLog): number {
  return (lastEntry(log)?.round ?? 0) + 1;
}

/**
 * The record that undoes the last compaction entry in force (prunings aside), or why there is none.
 * The extension undoes a whole step (`undoLastStep`: a compaction with the pruning made with it);
 * this simpler rule is the one the property tests state the log's undo by.
 */
export function undoLastCompaction(log: ConversationLog, at: number): LogRecord | { error: string } {
  const last = lastEntry(log);
  if (!last) return { error: 'There is no compaction to undo.' };
  return { type: 'undo', entryId: last.id, at };
}

/**
 * The records that undo the last compaction in force as the user asked for it (see `lastStep`): its
 * summary and the pruning made with it, or a pruning alone; or why there is none.
 */
export function undoLastStep(
  log: ConversationLog,
  at: number,
): { readonly records: LogRecord[]; readonly step: CompactionStep } | { readonly error: string } {
  const step = lastStep(activeSteps(log));
  if (!step) return { error: 'There is no compaction to undo.' };
  const records: LogRecord[] = [];
  if (step.compaction) records.push({ type: 'undo', entryId: step.compaction.id, at });
  if (step.pruning) records.push({ type: 'undo', entryId: step.pruning.id, at });
  return { records, step };
}

/** The first thing the user asked, verbatim: the summary's "Original Task". */
export function originalTask(log: ConversationLog): string | undefined {
  for (const record of log) {
    if (record.type !== 'message') continue;
    const m = record.message;
    if (m.role !== 'user' || isSummaryMessage(m)) continue;
    const parts = m.content.filter((p) => p.type === 'text').map((p) => (p.type === 'text' ? p.text : ''));
    const joined = parts.join('\n').trim();
    if (joined) return joined;
  }
  return undefined;
}

/** The last usage report of the agent's requests in the log, if any. */
export function lastUsage(log: ConversationLog): ReportedUsage | undefined {
  for (let i = log.length - 1; i >= 0; i--) {
    const record = log[i]!;
    if (record.type === 'usage' && isAgentUsage(record.usage)) return record.usage;
  }
  return undefined;
}

/**
 * The cumulative file ledger: every file operation the log records, in order. With `memo`, the file
 * records the ledger it last made took in are remembered with it: a log whose file records begin with
 * those same records replays only the operations after them (a log only grows at its end).
 */
export function ledgerOf(log: ConversationLog, memo?: EngineMemo): FileLedger {
  const known = memo?.fileLedger;
  const resumed = known !== undefined && startsWithFiles(log, known);
  const taken: Array<LogRecord & { type: 'file' }> = [];
  let skipped = 0;
  for (const record of log) {
    if (record.type !== 'file') continue;
    if (resumed && skipped < known.files.length) skipped++;
    else taken.push(record);
  }
  const start = resumed ? known.ledger : EMPTY_LEDGER;
  if (taken.length === 0) return start;
  const ledger = recordFileEvents(
    start,
    taken.map((record) => record.event),
  );
  if (memo) {
    // The remembered list grows in place: the memo holds no other ledger made from it.
    const files = resumed ? known.files : [];
    for (const record of taken) files.push(record);
    memo.fileLedger = { files, ledger };
  }
  return ledger;
}

/** Whether the first file records of `log` are `known`'s, the same records in the same order. */
function startsWithFiles(log: ConversationLog, known: RememberedFileLedger): boolean {
  let at = 0;
  for (const record of log) {
    if (at === known.files.length) return true;
    if (record.type !== 'file') continue;
    if (record !== known.files[at]) return false;
    at++;
  }
  return at === known.files.length;
}
