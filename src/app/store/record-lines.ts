import type { LogRecord } from '../../core/history';
import { capRecord } from './cap';
import { CONVERSATION_FORMAT_VERSION, describeIssues, recordLineSchema } from './schemas';

/** A record as it is written: its line, and the record that line holds (cut when it was too long). */
export interface RecordLine {
  readonly line: string;
  readonly stored: LogRecord;
}

/** How long checking records may hold the editor's thread before letting it go (ms). */
const SERIALIZE_SLICE_MS = 4;

/** The content of every record `open` gives without it. */
const NO_CONTENT: readonly never[] = Object.freeze([]);

/**
 * The line for a record, cut to `maxRecordBytes`, and checked to read back as a valid record; a
 * record that could not be read back is refused with the reason.
 */
export function recordLine(record: LogRecord, maxRecordBytes: number): RecordLine {
  let line = JSON.stringify({ v: CONVERSATION_FORMAT_VERSION, record });
  let stored = record;
  if (Buffer.byteLength(line) > maxRecordBytes) {
    stored = capRecord(line, maxRecordBytes);
    line = JSON.stringify({ v: CONVERSATION_FORMAT_VERSION, record: stored });
  }
  // The record is checked as it is rather than as its line parses back: the check takes an optional
  // field left undefined, and refuses NaN, Infinity or an undefined array item, as it would their
  // JSON; parsing a large line again would cost the editor's thread for nothing.
  const check = recordLineSchema().safeParse({ v: CONVERSATION_FORMAT_VERSION, record: stored });
  if (!check.success) throw new Error(`Refusing to store an invalid log record: ${describeIssues(check.error)}`);
  return { line, stored };
}

/**
 * `recordLine` for each record, in order, letting the editor's thread go whenever a few milliseconds
 * went by: checking a large record holds the thread for a while, and two of them should not hold it
 * twice as long.
 */
export async function recordLines(records: readonly LogRecord[], maxRecordBytes: number): Promise<RecordLine[]> {
  const lines: RecordLine[] = [];
  let since = performance.now();
  for (const record of records) {
    if (performance.now() - since > SERIALIZE_SLICE_MS) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      since = performance.now();
    }
    lines.push(recordLine(record, maxRecordBytes));
  }
  return lines;
}

/**
 * A message record as `open` gives it without its content: its id, role and turn, nothing else (its
 * stored token counts come back with the content).
 */
export function withoutContent(record: LogRecord & { type: 'message' }): LogRecord {
  const { tokens: _tokens, ...rest } = record;
  return { ...rest, message: { ...record.message, content: NO_CONTENT as never[] } };
}
