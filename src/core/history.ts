import { EMPTY_LEDGER, recordFileEvents, type FileEvent, type FileLedger } from './file-ledger';
import { text, type Message } from './messages';
import type { ReportedUsage } from './usage-calibration';

/**
 * A conversation is an append-only log: messages, compaction entries and undo marks. Nothing is
 * ever removed from it; the history the model sees (`modelView`) is derived from it, so every
 * compaction can be shown, undone or re-run from the originals (seeds 000 and 001).
 */

export type CompactionReason = 'threshold' | 'overflow' | 'manual';

export interface CompactionEntry {
  readonly id: string;
  /** 1 for the first compaction of a conversation, then one more than the entry it replaces. */
  readonly round: number;
  readonly reason: CompactionReason;
  /** The summary as the model sees it after the prefix: model text, repaired, plus the file ledger. */
  readonly summary: string;
  /** The first message kept verbatim after the summary; null when nothing older was kept. */
  readonly firstKeptMessageId: string | null;
  /** Every message this compaction took out of the model's view. */
  readonly compactedMessageIds: readonly string[];
  readonly tokensBefore: number;
  readonly tokensAfter: number;
  /** The cumulative file ledger at the time of the compaction. */
  readonly fileOperations: FileLedger;
  /** The summarizer that wrote the summary (or `extractive-fallback`). */
  readonly model: string;
  readonly durationMs: number;
  /** Milliseconds since the epoch. */
  readonly createdAt: number;
  /** Role of the summary message in the model's view. */
  readonly summaryRole: 'user' | 'assistant';
  /** True when the summarizer failed and the summary was extracted without a model. */
  readonly fallback: boolean;
  /** True when the compaction freed less than the configured minimum share. */
  readonly lowGain: boolean;
  /** The latest user message, kept verbatim although part of its turn was summarized. */
  readonly splitTurn: boolean;
  /** Summarizer calls made: 1, or more when the request had to be split into batches. */
  readonly summarizerCalls: number;
  /** Focus instructions given with `/compact`, if any. */
  readonly focus?: string;
  /** Why the summarizer's text was not used, when `fallback` is true. */
  readonly failure?: string;
}

export type LogRecord =
  | { readonly type: 'message'; readonly message: Message }
  | { readonly type: 'compaction'; readonly entry: CompactionEntry }
  | { readonly type: 'undo'; readonly entryId: string; readonly at: number }
  /** Token usage a provider reported, to calibrate the count after a reload. */
  | { readonly type: 'usage'; readonly usage: ReportedUsage }
  /** A file operation, by the agent's tools or the user's editor, for the file ledger. */
  | { readonly type: 'file'; readonly event: FileEvent };

export type ConversationLog = readonly LogRecord[];

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

export function summaryMessage(entry: CompactionEntry): Message {
  return {
    id: `summary:${entry.id}`,
    role: entry.summaryRole,
    content: [text(`${SUMMARY_PREFIX}\n\n${entry.summary}`)],
    summaryOf: entry.id,
  };
}

/** The entries in force, oldest first: every compaction not undone since. */
export function activeEntries(log: ConversationLog): CompactionEntry[] {
  const active: CompactionEntry[] = [];
  for (const record of log) {
    if (record.type === 'compaction') active.push(record.entry);
    else if (record.type === 'undo') {
      const at = active.findIndex((e) => e.id === record.entryId);
      if (at >= 0) active.splice(at, 1);
    }
  }
  return active;
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
 * The history the model sees (001 `get_llm_history`): the messages kept in front (system
 * messages), then the summary, then every message from the first kept one on that no active
 * compaction took out, including all appended since.
 */
export function modelView(log: ConversationLog): Message[] {
  const entries = activeEntries(log);
  const last = entries.at(-1);
  if (!last) return pairToolTraffic(allMessages(log));
  const removed = new Set<string>();
  for (const entry of entries) for (const id of entry.compactedMessageIds) removed.add(id);

  let keptFrom = -1;
  if (last.firstKeptMessageId !== null) {
    keptFrom = log.findIndex((r) => r.type === 'message' && r.message.id === last.firstKeptMessageId);
  }
  if (keptFrom < 0) keptFrom = log.findIndex((r) => r.type === 'compaction' && r.entry.id === last.id);

  const before: Message[] = [];
  const after: Message[] = [];
  log.forEach((record, index) => {
    if (record.type !== 'message' || removed.has(record.message.id)) return;
    (index < keptFrom ? before : after).push(record.message);
  });
  return pairToolTraffic([...before, summaryMessage(last), ...after]);
}

/** What a tool call that never got its result is answered with in the model's view. */
export const INTERRUPTED_RESULT = 'interrupted: the editor closed (or the request stopped) before this tool finished; Longrun added this result. Run the tool again if its result is needed.';

/**
 * Makes the tool traffic of a view valid for every provider, whatever a crash, a full disk or a
 * damaged line left in the log: a call without its result gets a synthetic one (an error saying it
 * was interrupted) right after its message, and a result without its call is left out of the view.
 * The log itself is not changed; the view is derived anew each time.
 */
export function pairToolTraffic(view: readonly Message[]): Message[] {
  const out: Message[] = [];
  // Calls of the latest assistant message still waiting for results, by id, in order.
  let open = new Map<string, string>();
  let openFrom = '';
  let changed = false;
  const closeOpen = (): void => {
    if (open.size === 0) return;
    out.push({
      id: `interrupted:${openFrom}`,
      role: 'tool',
      content: [...open].map(([toolCallId, toolName]) => ({ type: 'tool-result' as const, toolCallId, toolName, output: INTERRUPTED_RESULT, isError: true })),
    });
    open = new Map();
    changed = true;
  };
  for (const message of view) {
    if (message.role === 'tool') {
      const kept = message.content.filter((part) => part.type !== 'tool-result' || open.delete(part.toolCallId));
      if (kept.length !== message.content.length) changed = true;
      if (kept.length > 0) out.push(kept.length === message.content.length ? message : { ...message, content: kept });
      continue;
    }
    closeOpen();
    out.push(message);
    if (message.role === 'assistant') {
      for (const part of message.content) if (part.type === 'tool-call') open.set(part.toolCallId, part.toolName);
      openFrom = message.id;
    }
  }
  closeOpen();
  return changed ? out : (view as Message[]);
}

/**
 * The compaction state the model's view is in: the id of the entry in force, null before any.
 * A request records it when sent; usage reported under another basis no longer describes the view.
 */
export function currentBasis(log: ConversationLog): string | null {
  return lastEntry(log)?.id ?? null;
}

/** Every usage report in the log, oldest first. */
export function usageReports(log: ConversationLog): ReportedUsage[] {
  const out: ReportedUsage[] = [];
  for (const record of log) if (record.type === 'usage') out.push(record.usage);
  return out;
}

/** The round the next compaction will have. */
export function nextRound(log: ConversationLog): number {
  return (lastEntry(log)?.round ?? 0) + 1;
}

/** The record that undoes the last compaction in force, or why there is none. */
export function undoLastCompaction(log: ConversationLog, at: number): LogRecord | { error: string } {
  const last = lastEntry(log);
  if (!last) return { error: 'There is no compaction to undo.' };
  return { type: 'undo', entryId: last.id, at };
}

/** The first thing the user asked, verbatim: the seeds' "Original Task". */
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

/** The last usage report in the log, if any. */
export function lastUsage(log: ConversationLog): ReportedUsage | undefined {
  for (let i = log.length - 1; i >= 0; i--) {
    const record = log[i]!;
    if (record.type === 'usage') return record.usage;
  }
  return undefined;
}

/** The cumulative file ledger: every file operation the log records, in order. */
export function ledgerOf(log: ConversationLog): FileLedger {
  const events: FileEvent[] = [];
  for (const record of log) if (record.type === 'file') events.push(record.event);
  return events.length ? recordFileEvents(EMPTY_LEDGER, events) : EMPTY_LEDGER;
}
