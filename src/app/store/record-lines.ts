import type { z } from 'zod';
import type { LogRecord } from '../../core/history';
import { capRecord } from './cap';
import { compactedIdSchema, CONVERSATION_FORMAT_VERSION, describeIssues, prunedOutputSchema, recordLineSchema } from './schemas';

/** A record as it is written: its line, and the record that line holds (cut when it was too long). */
export interface RecordLine {
  readonly line: string;
  readonly stored: LogRecord;
}

/** How long checking records may hold the editor's thread before letting it go (ms). */
const SERIALIZE_SLICE_MS = 4;

/** Items of a record's long array checked in one go; a longer array is checked in runs of this many. */
const CHECK_RUN = 256;

/** A long array of a record, checked apart from the rest of it. */
interface LongArray {
  /** The record with the array cut to its first item. */
  readonly head: LogRecord;
  readonly items: readonly unknown[];
  readonly item: z.ZodType;
  /** Where the array is in the record's line, for the error. */
  readonly path: string;
}

/**
 * The array of a record that can hold thousands of items (a pruning's outputs, the ids a compaction
 * took out), when it is long: checking it in one go would hold the editor's thread for milliseconds.
 */
function longArrayOf(record: LogRecord): LongArray | undefined {
  if (record.type === 'pruning' && record.entry.outputs.length > CHECK_RUN) {
    const { outputs } = record.entry;
    const head: LogRecord = { ...record, entry: { ...record.entry, outputs: outputs.slice(0, 1) } };
    return { head, items: outputs, item: prunedOutputSchema(), path: 'record.entry.outputs' };
  }
  if (record.type === 'compaction' && record.entry.compactedMessageIds.length > CHECK_RUN) {
    const ids = record.entry.compactedMessageIds;
    const head: LogRecord = { ...record, entry: { ...record.entry, compactedMessageIds: ids.slice(0, 1) } };
    return { head, items: ids, item: compactedIdSchema(), path: 'record.entry.compactedMessageIds' };
  }
  return undefined;
}

/** The line for a record, cut to `maxRecordBytes`, and the record it holds. */
function lineOf(record: LogRecord, maxRecordBytes: number): RecordLine {
  const line = JSON.stringify({ v: CONVERSATION_FORMAT_VERSION, record });
  if (Buffer.byteLength(line) <= maxRecordBytes) return { line, stored: record };
  const stored = capRecord(line, maxRecordBytes);
  return { line: JSON.stringify({ v: CONVERSATION_FORMAT_VERSION, record: stored }), stored };
}

/** Where in a record a run of a long array's items begins, when it is one that is checked. */
interface Within {
  readonly path: string;
  readonly from: number;
  /**
   * Whether the schema's compiled path checks the run. A long array's item has a small schema that
   * is checked thousands of times a compaction: compiled once in a session (a millisecond or two), it
   * then checks in half the time and makes half the garbage of the plain path.
   */
  readonly compiled: boolean;
}

/** Refuses a record whose line would not read back as one, with the reason. */
function check(schema: z.ZodType, value: unknown, within?: Within): void {
  // A whole record's schema is checked through its plain path: compiling it costs milliseconds of the
  // editor's thread the first time a record type is written in a session, and a record is checked once.
  const result = schema.safeParse(value, { jitless: !within?.compiled });
  if (result.success) return;
  const issues = within
    ? result.error.issues.map((issue) => ({ ...issue, path: [within.path, within.from + Number(issue.path[0]), ...issue.path.slice(1)] }))
    : result.error.issues;
  throw new Error(`Refusing to store an invalid log record: ${describeIssues({ issues })}`);
}

/**
 * The line for each record, cut to `maxRecordBytes`, and checked to read back as a valid record; a
 * record that could not be read back is refused with the reason, and nothing is written. The editor's
 * thread is let go whenever checking held it a few milliseconds, between records and between runs of
 * a long array's items, so a compaction of thousands of messages never holds it long.
 *
 * A record is checked as it is rather than as its line parses back: the check takes an optional
 * field left undefined, and refuses NaN, Infinity or an undefined array item, as it would their JSON;
 * parsing a large line again would cost the editor's thread for nothing.
 */
export async function recordLines(records: readonly LogRecord[], maxRecordBytes: number): Promise<RecordLine[]> {
  const lines: RecordLine[] = [];
  let since = performance.now();
  const letGo = async (): Promise<void> => {
    if (performance.now() - since <= SERIALIZE_SLICE_MS) return;
    await new Promise<void>((resolve) => setImmediate(resolve));
    since = performance.now();
  };
  for (const record of records) {
    await letGo();
    const made = lineOf(record, maxRecordBytes);
    const long = longArrayOf(made.stored);
    check(recordLineSchema(), { v: CONVERSATION_FORMAT_VERSION, record: long?.head ?? made.stored });
    if (long) {
      const run = long.item.array();
      // The first item after the head alone: compiling the item's schema, the first time in a
      // session, takes a stretch of its own.
      for (let from = 1; from < long.items.length; from += from === 1 ? 1 : CHECK_RUN) {
        await letGo();
        const items = long.items.slice(from, from === 1 ? 2 : from + CHECK_RUN);
        check(run, items, { path: long.path, from, compiled: true });
      }
    }
    lines.push(made);
  }
  return lines;
}
