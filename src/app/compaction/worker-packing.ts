import { setImmediate as nextTurn } from 'node:timers/promises';
import type { CompactionOutcome, ComputedCompaction } from '../../core/compaction';
import { ledgerFromThread } from '../../core/file-ledger';
import type { CompactionEntry, LogRecord } from '../../core/history';
import { needlesFromThread } from '../../core/needles';
import type { Message } from '../../core/messages';
import type { SummaryRequest } from '../../core/ports';

/**
 * What crosses between the extension host and the compaction worker in slices. A message between
 * threads is copied on both sides in one piece: thousands of objects (a summary request's messages,
 * a compaction's pruned outputs and message ids) made again on the host's thread at once would hold
 * it for milliseconds. Long lists go as JSON text in slices instead: text is copied at once, and the
 * host reads it back a slice at a time, letting its thread go between slices.
 */

/**
 * Most items per slice, and about the most characters a slice may hold: each slice takes the host's
 * thread for about a millisecond at most, however long the items (a few long tool outputs make a
 * slice of their own). Records sent to the worker go in slices of the same size.
 */
const SLICE = 200;
const SLICE_CHARS = 256 * 1024;

/** A summary request as the worker sends it: its message lists as JSON text in slices. */
export type PackedRequest = Omit<SummaryRequest, 'messages' | 'continuation'> & {
  readonly messages: readonly string[];
  readonly continuation?: { readonly messages: readonly string[]; readonly directive: string };
};

/**
 * A computed compaction as the worker sends it: without the view (the host derives it from its own
 * records), its long lists (the pruned outputs, the ids of the messages summarized and of the
 * snapshot it was computed from) emptied, and given apart as JSON text in slices.
 */
type PackedCompaction = ComputedCompaction & {
  readonly lists: {
    readonly outputs: readonly string[];
    readonly compactedMessageIds: readonly string[];
    readonly basisIds: readonly string[];
  };
};

export type PackedOutcome =
  Exclude<CompactionOutcome, { status: 'compacted' }> | { readonly status: 'compacted'; readonly compaction: PackedCompaction };

/** `request` with its message lists as JSON text in slices. */
export function packedRequest(request: SummaryRequest): PackedRequest {
  const { continuation, ...rest } = request;
  return {
    ...rest,
    messages: jsonSlices(request.messages),
    ...(continuation ? { continuation: { directive: continuation.directive, messages: jsonSlices(continuation.messages) } } : {}),
  };
}

/** The request `packedRequest` was made from, its slices read back with the thread let go between them. */
export async function unpackedRequest(request: PackedRequest): Promise<SummaryRequest> {
  const { continuation, ...rest } = request;
  const messages = await readSlices<SummaryRequest['messages'][number]>(request.messages);
  if (!continuation) return { ...rest, messages };
  return { ...rest, messages, continuation: { directive: continuation.directive, messages: await readSlices<Message>(continuation.messages) } };
}

/** `outcome` as the worker sends it (see `PackedCompaction`). */
export function packedOutcome(outcome: CompactionOutcome): PackedOutcome {
  if (outcome.status !== 'compacted') return outcome;
  const { pruning, entry, basis, records } = outcome.compaction;
  const packed = {
    pruning: pruning && { ...pruning, outputs: [] },
    entry: entry && { ...entry, compactedMessageIds: [] },
  };
  return {
    status: 'compacted',
    compaction: {
      ...outcome.compaction,
      ...(packed.pruning ? { pruning: packed.pruning } : {}),
      ...(packed.entry ? { entry: packed.entry } : {}),
      basis: { ...basis, messageIds: [] },
      view: [],
      records: records.map((r) => withEntries(r, packed)),
      lists: {
        outputs: jsonSlices(pruning?.outputs ?? []),
        compactedMessageIds: jsonSlices(entry?.compactedMessageIds ?? []),
        basisIds: jsonSlices(basis.messageIds),
      },
    },
  };
}

/** The outcome `packedOutcome` was made from (its view empty), its slices read back with the thread let go between them. */
export async function unpackedOutcome(outcome: PackedOutcome): Promise<CompactionOutcome> {
  if (outcome.status !== 'compacted') return outcome;
  const { lists, ...compaction } = outcome.compaction;
  const outputs = await readSlices<NonNullable<ComputedCompaction['pruning']>['outputs'][number]>(lists.outputs);
  const compactedMessageIds = await readSlices<string>(lists.compactedMessageIds);
  const messageIds = await readSlices<string>(lists.basisIds);
  const whole = {
    pruning: compaction.pruning && { ...compaction.pruning, outputs },
    entry: compaction.entry && withLedgersFromThread({ ...compaction.entry, compactedMessageIds }),
  };
  return {
    status: 'compacted',
    compaction: {
      ...compaction,
      ...(whole.pruning ? { pruning: whole.pruning } : {}),
      ...(whole.entry ? { entry: whole.entry } : {}),
      basis: { ...compaction.basis, messageIds },
      records: compaction.records.map((r) => withEntries(r, whole)),
    },
  };
}

/** `entry` with its ledgers taken as the worker made them (they are not checked again when stored). */
function withLedgersFromThread(entry: CompactionEntry): CompactionEntry {
  const fileOperations = ledgerFromThread(entry.fileOperations);
  return entry.needles ? { ...entry, fileOperations, needles: needlesFromThread(entry.needles) } : { ...entry, fileOperations };
}

/** `record`, holding `entries.pruning` or `entries.entry` instead when it is the record of that entry. */
function withEntries(record: LogRecord, entries: Pick<ComputedCompaction, 'pruning' | 'entry'>): LogRecord {
  if (record.type === 'pruning' && entries.pruning && record.entry.id === entries.pruning.id) return { ...record, entry: entries.pruning };
  if (record.type === 'compaction' && entries.entry && record.entry.id === entries.entry.id) return { ...record, entry: entries.entry };
  return record;
}

function jsonSlices(items: readonly unknown[]): string[] {
  const slices: string[] = [];
  for (let from = 0; from < items.length;) {
    const end = sliceEnd(items, from);
    slices.push(JSON.stringify(items.slice(from, end)));
    from = end;
  }
  return slices;
}

async function readSlices<T>(slices: readonly string[]): Promise<T[]> {
  const items: T[] = [];
  for (const slice of slices) {
    await nextTurn();
    for (const item of JSON.parse(slice) as T[]) items.push(item);
  }
  return items;
}

/** Where the slice of `all` that begins at `from` ends: `SLICE` items or about `SLICE_CHARS` characters, one item at least. */
export function sliceEnd(all: readonly unknown[], from: number): number {
  let end = from;
  let chars = 0;
  while (end < all.length && end - from < SLICE && chars < SLICE_CHARS) chars += charsOf(all[end++]);
  return end;
}

/** About how many characters `value` holds: its strings' lengths, and a few for anything else; nothing is copied. */
function charsOf(value: unknown, depth = 0): number {
  if (typeof value === 'string') return value.length;
  if (typeof value !== 'object' || value === null || depth > 32) return 8;
  let chars = 0;
  if (Array.isArray(value)) for (const item of value) chars += charsOf(item, depth + 1);
  else for (const key in value) chars += key.length + charsOf((value as Record<string, unknown>)[key], depth + 1);
  return chars;
}
