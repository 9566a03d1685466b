import type { ComputedCompaction } from '../../core/compaction';
import type { EngineMemo } from '../../core/engine-memo';
import { renderFileOperations, type FileLedger } from '../../core/file-ledger';
import { activeEntries, lastEntry, ledgerOf, type CompactionEntry, type ConversationLog, type LogRecord } from '../../core/history';
import { needleLedgerOf } from '../../core/needles';
import type { MessageTokenCounter } from '../../core/message-tokens';
import { stripFileOperations } from '../../core/summary-repair';
import { stripWorkState, workStateOf } from '../../core/work-state';

/**
 * Summaries the user reads and edits as documents: before a compaction is applied (the preview
 * asked for with `longrun.compaction.requireConfirmation`), and after ("Edit summary").
 *
 * What the user saves is what the model gets, with two exceptions: the `<read-files>` /
 * `<modified-files>` lists are Longrun's record of the files touched, and the `<work-state>` block
 * its record of the agent's plan and where it was, so whatever the user writes there is removed and
 * the compaction's own are put back at the end. A summary that states a file as unread, forgets one
 * that was changed, or marks a step done that the record contradicts would mislead the model.
 *
 * An edit of an applied summary is a compaction entry of its own (`editOf`), appended to the log:
 * nothing is rewritten, the edit survives a reload, and Undo takes it back first (the summary
 * before the save returns; the next Undo brings back the original messages).
 */

/** Where a summary document stands: what saving it does. */
export type SummaryState = 'preview' | 'in-force' | 'replaced' | 'discarded';

/** The longest summary a save may give: the store keeps records under 1 MB. */
export const MAX_SUMMARY_CHARS = 200_000;

/** What a save of a summary document came to. */
export type EditResult =
  | {
      readonly ok: true;
      /** The entry appended with the saved summary; absent when the text did not change. */
      readonly entry?: CompactionEntry;
    }
  | { readonly ok: false; readonly reason: string };

const STALE =
  'This summary is no longer the one the model gets: the conversation was compacted again, or this compaction was undone, since it was opened. Nothing was changed.';

/** The compaction an entry belongs to: its own id, or the one it is an edit of. */
export function compactionIdOf(entry: CompactionEntry): string {
  return entry.editOf ?? entry.id;
}

/**
 * The summary of compaction `compactionId` as it stands in `log`: the entry holding its latest text
 * (the last edit in force, else the last one written), and whether it is the summary the model
 * gets now. Undefined when the log holds no such compaction.
 */
export function summaryOf(log: ConversationLog, compactionId: string): { readonly entry: CompactionEntry; readonly inForce: boolean } | undefined {
  const last = lastEntry(log);
  if (last && compactionIdOf(last) === compactionId) return { entry: last, inForce: true };
  const active = activeEntries(log)
    .filter((e) => compactionIdOf(e) === compactionId)
    .at(-1);
  if (active) return { entry: active, inForce: false };
  let written: CompactionEntry | undefined;
  for (const record of log) if (record.type === 'compaction' && compactionIdOf(record.entry) === compactionId) written = record.entry;
  return written && { entry: written, inForce: false };
}

/** The entries in force whose summary no later edit in force replaced: one per compaction. */
export function latestSummaries(entries: readonly CompactionEntry[]): CompactionEntry[] {
  const latest = new Map<string, CompactionEntry>();
  for (const entry of entries) latest.set(compactionIdOf(entry), entry);
  return entries.filter((e) => latest.get(compactionIdOf(e)) === e);
}

const HEADER = /^\uFEFF?\s*<!--\s*Longrun\b[\s\S]*?-->[ \t]*\n*/;

/** A summary as a document: a comment saying what saving does, then the summary the model gets. */
export function summaryDocument(entry: CompactionEntry, state: SummaryState): string {
  return `${header(entry, state)}\n\n${entry.summary}\n`;
}

function header(entry: CompactionEntry, state: SummaryState): string {
  const title = `Longrun · summary of compaction round ${entry.round}${entry.editOf ? ', edited' : ''}`;
  const ledger =
    "The <work-state> block and the <read-files> and <modified-files> lists at the end are Longrun's record of the agent's plan and of the files touched: whatever you change in them, they are put back as recorded.";
  switch (state) {
    case 'preview':
      return [
        `<!-- ${title} · not applied yet`,
        `Edit it, then save (Ctrl+S / Cmd+S): the model gets exactly the text below this comment in place of the ${entry.compactedMessageIds.length} messages it summarizes.`,
        'Close it without saving to leave the conversation as it is.',
        `${ledger} -->`,
      ].join('\n');
    case 'in-force':
      return [
        `<!-- ${title} · in force`,
        'Edit it and save (Ctrl+S / Cmd+S): the model gets exactly the text below this comment from its next request on.',
        '"Longrun: Undo Last Compaction" then brings back the summary as it was before the save.',
        `${ledger} -->`,
      ].join('\n');
    case 'replaced':
      return [
        `<!-- ${title} · no longer in force`,
        'The conversation was compacted again since, or this compaction was undone: this summary is read-only. -->',
      ].join('\n');
    case 'discarded':
      return [
        `<!-- ${title} · not applied`,
        'It was closed without saving or discarded, its request stopped, or the conversation changed meanwhile: the conversation was left as it was. -->',
      ].join('\n');
  }
}

/**
 * The summary a saved document gives: its text without the header comment, without any file lists
 * or work state, then the compaction's own work state (`workState`, the block of the summary it
 * replaces) and file lists (`ledger`). An error when nothing is left, or too much.
 */
export function savedSummary(documentText: string, ledger: FileLedger, workState = ''): { readonly summary: string } | { readonly error: string } {
  const body = stripWorkState(stripFileOperations(documentText.replace(/\r\n?/g, '\n').replace(HEADER, ''))).trim();
  if (!body)
    return {
      error: 'The summary is empty, so the model would know nothing of what it replaces. Write a summary, or close the document without saving.',
    };
  if (body.length > MAX_SUMMARY_CHARS) {
    return {
      error: `The summary has ${body.length.toLocaleString('en-US')} characters; Longrun keeps summaries under ${MAX_SUMMARY_CHARS.toLocaleString('en-US')}.`,
    };
  }
  return { summary: [body, workState, renderFileOperations(ledger)].filter(Boolean).join('\n\n') };
}

/**
 * A computed compaction with another summary (the one the user saved in the preview). Only the
 * entry and its record change; the applying side takes the view and its counts again.
 */
export function withSummary(computed: ComputedCompaction, summary: string): ComputedCompaction {
  const entry = computed.entry;
  if (!entry) return computed;
  const edited: CompactionEntry = { ...entry, summary };
  const records = computed.records.map((r) =>
    r.type === 'compaction' && r.entry.id === entry.id ? { type: 'compaction' as const, entry: edited } : r,
  );
  return { ...computed, entry: edited, records };
}

/** What making an edit entry needs. */
export interface EditDeps {
  readonly newId: () => string;
  readonly counter: MessageTokenCounter;
}

/**
 * The entry that replaces the summary in force, `current`, with `summary`: the same compaction
 * (round, messages, kept part, ledgers) under a new id, `editOf` naming the compaction, and the
 * count after it moved by the difference in length. Not linked to a pruning: undoing it undoes
 * the edit alone.
 */
export function editEntry(current: CompactionEntry, summary: string, deps: EditDeps): CompactionEntry {
  const { pruningId: _pruningId, ...rest } = current;
  const delta = deps.counter.countText(summary) - deps.counter.countText(current.summary);
  return { ...rest, id: deps.newId(), editOf: compactionIdOf(current), summary, tokensAfter: Math.max(0, current.tokensAfter + delta) };
}

/** What a summary edit needs of a conversation. */
export interface EditedConversation {
  isCompacting(): boolean;
  log(): ConversationLog;
  /** What the compaction engine remembers of the conversation. */
  memo(): EngineMemo;
  /** Drops a summary being prepared ahead of need. */
  cancelAhead(): void;
  append(records: readonly LogRecord[]): Promise<unknown>;
}

/**
 * Saves `documentText` as the summary of compaction `compactionId`, which must be the summary in
 * force: an edit of anything else (compacted again, undone) is refused, since it would change
 * nothing the model sees or undo the wrong thing.
 */
export async function editSummary(conversation: EditedConversation, compactionId: string, documentText: string, deps: EditDeps): Promise<EditResult> {
  if (conversation.isCompacting()) return { ok: false, reason: 'A compaction is running; save again once it has finished.' };
  const current = summaryOf(conversation.log(), compactionId);
  if (!current?.inForce) return { ok: false, reason: STALE };
  // The file lists and the needle ledger are those of the log as it is when the edit is saved.
  const log = conversation.log();
  const fileOperations = ledgerOf(log);
  const saved = savedSummary(documentText, fileOperations, workStateOf(current.entry.summary));
  if ('error' in saved) return { ok: false, reason: saved.error };
  if (saved.summary === current.entry.summary) return { ok: true };
  const entry = { ...editEntry(current.entry, saved.summary, deps), fileOperations, needles: needleLedgerOf(log, conversation.memo()) };
  // A summary prepared ahead was written from the summary being replaced: the next one must start from the edit.
  conversation.cancelAhead();
  await conversation.append([{ type: 'compaction', entry }]);
  return { ok: true, entry };
}
