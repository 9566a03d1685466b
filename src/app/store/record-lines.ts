import type { z } from 'zod';
import type { LogRecord } from '../../core/history';
import type { KnownSecrets } from '../../core/redact';
import { capRecord } from './cap';
import {
  compactedIdSchema,
  CONVERSATION_FORMAT_VERSION,
  describeIssues,
  plainCompactedId,
  plainPrunedOutput,
  prunedOutputSchema,
  recordLineSchema,
} from './schemas';

/**
 * A record as it is written: its line with its newline, as bytes, and the record that line holds (cut
 * when it was too long). The line's text, as long as the record's content, is made into bytes as soon
 * as it is made and let go: kept as text on the editor's heap while the other records are checked and
 * the write waits for the lock and the disk, it would be copied by each collection of young objects in
 * between.
 */
export interface RecordLine {
  readonly bytes: Buffer;
  readonly stored: LogRecord;
}

/** How long checking and writing records may hold the editor's thread before letting it go (ms). */
const SERIALIZE_SLICE_MS = 2;

/** Items of a record's long array checked and written in one go; a longer array goes in runs of this many. */
const CHECK_RUN = 64;

/** A long array of a record, checked and written apart from the rest of it. */
interface LongArray {
  /** The record with the array cut to its first item. */
  readonly head: LogRecord;
  /** The record's line with the array left empty and last, so that its items can be written after. */
  readonly shell: string;
  readonly items: readonly unknown[];
  readonly item: z.ZodType;
  /** Whether an item is one the item's schema takes, told without making anything; the schema decides when not. */
  readonly plain: (item: unknown) => boolean;
  /** Where the array is in the record's line, for the error. */
  readonly path: string;
}

/**
 * The array of a record that can hold thousands of items (a pruning's outputs, the ids a compaction
 * took out), when it is long: checking it, or writing it as JSON, in one go would hold the editor's
 * thread for milliseconds.
 */
function longArrayOf(record: LogRecord): LongArray | undefined {
  if (record.type === 'pruning' && record.entry.outputs.length > CHECK_RUN) {
    const { entry, ...rest } = record;
    const { outputs, ...fields } = entry;
    const head: LogRecord = { ...record, entry: { ...entry, outputs: outputs.slice(0, 1) } };
    return {
      head,
      shell: lineText({ ...rest, entry: { ...fields, outputs: [] } }),
      items: outputs,
      item: prunedOutputSchema(),
      plain: plainPrunedOutput,
      path: 'record.entry.outputs',
    };
  }
  if (record.type === 'compaction' && record.entry.compactedMessageIds.length > CHECK_RUN) {
    const { entry, ...rest } = record;
    const { compactedMessageIds: ids, ...fields } = entry;
    const head: LogRecord = { ...record, entry: { ...entry, compactedMessageIds: ids.slice(0, 1) } };
    const shell = lineText({ ...rest, entry: { ...fields, compactedMessageIds: [] } });
    return { head, shell, items: ids, item: compactedIdSchema(), plain: plainCompactedId, path: 'record.entry.compactedMessageIds' };
  }
  return undefined;
}

/**
 * The line of a record, checked; for a record with a long array, the rest of the record, then the
 * array's items in runs, each checked and written as JSON, with `letGo` called between runs.
 */
async function checkedLine(record: LogRecord, letGo: () => Promise<void>): Promise<string> {
  const long = longArrayOf(record);
  if (!long) {
    check(recordLineSchema(), { v: CONVERSATION_FORMAT_VERSION, record });
    return lineText(record);
  }
  check(recordLineSchema(), { v: CONVERSATION_FORMAT_VERSION, record: long.head });
  const runs = [JSON.stringify(long.items[0])];
  const run = long.item.array();
  for (let from = 1, end = 1 + CHECK_RUN; from < long.items.length; from = end, end += CHECK_RUN) {
    await letGo();
    const items = long.items.slice(from, end);
    if (!items.every(long.plain)) check(run, items, { path: long.path, from });
    runs.push(JSON.stringify(items).slice(1, -1));
  }
  await letGo();
  return filled(long.shell, runs);
}

/** The text of a record's line. */
function lineText(record: LogRecord): string {
  return JSON.stringify({ v: CONVERSATION_FORMAT_VERSION, record });
}

/** The shell's line with the items whose JSON `runs` hold (each a run of items, brackets taken off) in its empty array. */
function filled(shell: string, runs: readonly string[]): string {
  // The array is the last field of the entry, the last field of the record, the last of the line.
  const end = ']}}}';
  if (!shell.endsWith(`[${end}`)) throw new Error('A long array is not where its line was made to hold it.');
  return `${shell.slice(0, -end.length)}${runs.join(',')}${end}`;
}

/** Where in a record a run of a long array's items begins, when it is one that is checked. */
interface Within {
  readonly path: string;
  readonly from: number;
}

/** Refuses a record whose line would not read back as one, with the reason. */
function check(schema: z.ZodType, value: unknown, within?: Within): void {
  // Checked through the schema's plain path: compiling a schema costs milliseconds of the editor's
  // thread the first time in a session, and each is checked once a record (a long array's items only
  // when a plain check refused one).
  const result = schema.safeParse(value, { jitless: true });
  if (result.success) return;
  const issues = within
    ? result.error.issues.map((issue) => ({ ...issue, path: [within.path, within.from + Number(issue.path[0]), ...issue.path.slice(1)] }))
    : result.error.issues;
  throw new Error(`Refusing to store an invalid log record: ${describeIssues({ issues })}`);
}

/**
 * The line for each record, cut to `maxRecordBytes`, and checked to read back as a valid record; a
 * record that could not be read back is refused with the reason, and nothing is written. The editor's
 * thread is let go whenever checking and writing held it a few milliseconds, between records and
 * between runs of a long array's items (checked and written as JSON a run at a time), so a compaction
 * of thousands of messages never holds it long.
 *
 * A record that holds one of `secrets` is written, and given back, with it redacted from its texts.
 *
 * A record is checked as it is rather than as its line parses back: the check takes an optional
 * field left undefined, and refuses NaN, Infinity or an undefined array item, as it would their JSON;
 * parsing a large line again would cost the editor's thread for nothing.
 */
export async function recordLines(records: readonly LogRecord[], maxRecordBytes: number, secrets?: KnownSecrets): Promise<RecordLine[]> {
  const lines: RecordLine[] = [];
  let since = performance.now();
  const letGo = async (): Promise<void> => {
    if (performance.now() - since <= SERIALIZE_SLICE_MS) return;
    await new Promise<void>((resolve) => setImmediate(resolve));
    since = performance.now();
  };
  for (const given of records) {
    await letGo();
    let record = given;
    let line = await checkedLine(record, letGo);
    // Looked for in the line, where every form of a key in the record shows, and taken out of the
    // record's texts rather than the line's, so that the line stays the record's.
    if (secrets?.found(line)) {
      record = secrets.redactDeep(record);
      line = await checkedLine(record, letGo);
    }
    const size = Buffer.byteLength(line, 'utf8');
    if (size <= maxRecordBytes) {
      lines.push({ bytes: bytesOf(line, size), stored: record });
      continue;
    }
    // A line too long is cut before it is made into bytes: only the line stored is.
    await letGo();
    const stored = capRecord(line, maxRecordBytes);
    const cut = await checkedLine(stored, letGo);
    lines.push({ bytes: bytesOf(cut, Buffer.byteLength(cut, 'utf8')), stored });
  }
  return lines;
}

/** `line` (`size` bytes in UTF-8) and its newline, in UTF-8. */
function bytesOf(line: string, size: number): Buffer {
  const bytes = Buffer.allocUnsafe(size + 1);
  bytes.write(line, 0, 'utf8');
  bytes[size] = 0x0a;
  return bytes;
}
