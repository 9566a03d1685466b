import { crc32 } from 'node:zlib';
import { errorText, isRecord } from '../../core/errors';
import { RECORD_TYPES, type LogRecord } from '../../core/history';
import { ROLES, type Role } from '../../core/messages';
import { openIfExists, safeJson } from './files';
import { CONVERSATION_FORMAT_VERSION, PART_END_KIND, PART_END_VERSION, describeIssues, headerSchema, recordLineSchema } from './schemas';

/** How much of a line too long to read is kept aside. */
const KEPT_OF_LONG_LINE = 64 * 1024;

const KNOWN_RECORD_TYPES: ReadonlySet<string> = new Set<string>(RECORD_TYPES);

export type ParsedLine =
  | { readonly kind: 'blank' }
  | { readonly kind: 'header' }
  | { readonly kind: 'record'; readonly record: LogRecord }
  | { readonly kind: 'future'; readonly version: number }
  | { readonly kind: 'damaged'; readonly error: string };

/** One line of a file as `forEachLine` reads it. */
export interface RawLine {
  /** 1-based. */
  readonly number: number;
  /** Where the line starts in the file, in bytes. */
  readonly offset: number;
  /** The line's length in bytes, without its newline. */
  readonly bytes: number;
  /** The line without its newline; only its start when it is too long. */
  readonly text: string;
  /** False for a last line without a newline (a write cut off, or one under way). */
  readonly complete: boolean;
  /** The line's full length in bytes, when it is longer than `maxLineBytes`. */
  readonly tooLong?: number;
  /** The line's check (`lineCheck`, newline apart), when asked for and the line is not too long. */
  readonly check: number | undefined;
}

/**
 * A line's check: the lowest 30 bits of the CRC-32 of its bytes. Thirty bits make a small integer,
 * which a record held without its content keeps inside itself; a full 32-bit value would be a number
 * object of its own on most records (16 bytes each, in a conversation of a hundred thousand records).
 */
export function lineCheck(bytes: Uint8Array): number {
  return crc32(bytes) & 0x3fffffff;
}

/** How `forEachLine` reads. */
export interface LineOptions {
  /** Give each line's check (`RawLine.check`), taken from its bytes as they are read. */
  readonly checks?: boolean;
}

/**
 * Calls `onLine` for each line of a file, read `chunkBytes` at a time and split at newline bytes (a
 * newline byte never occurs inside a UTF-8 character). Hand-made rather than `readline`, because
 * readline gathers a line of any length into one string, and a line too long for a string must be
 * skipped, not crash the reader. Returns the bytes read, or undefined for a missing file.
 */
export async function forEachLine(
  file: string,
  chunkBytes: number,
  maxLineBytes: number,
  onLine: (line: RawLine) => Promise<void> | void,
  options: LineOptions = {},
): Promise<number | undefined> {
  const checks = options.checks === true;
  const handle = await openIfExists(file);
  if (!handle) return undefined;
  try {
    const chunk = Buffer.allocUnsafe(Math.max(1, chunkBytes));
    let pieces: Buffer[] = [];
    let pending = 0;
    let number = 1;
    let total = 0;
    /** Where the line being gathered in `pieces` starts. */
    let lineStart = 0;
    const keep = (piece: Buffer): void => {
      if (pending + piece.length <= maxLineBytes) pieces.push(Buffer.from(piece));
      // Over the limit: from here on only the line's start is kept (copied, so the rest can go).
      else if (pending <= maxLineBytes)
        pieces = [Buffer.from(Buffer.concat([...pieces, piece]).subarray(0, Math.min(KEPT_OF_LONG_LINE, maxLineBytes)))];
      pending += piece.length;
    };
    const finish = async (complete: boolean): Promise<void> => {
      const gathered = Buffer.concat(pieces);
      const text = gathered.toString('utf8');
      const long = pending > maxLineBytes;
      const where = { number, offset: lineStart, bytes: pending, check: checks && !long ? lineCheck(gathered) : undefined };
      const line = long ? { ...where, text, complete, tooLong: pending } : { ...where, text, complete };
      pieces = [];
      pending = 0;
      number++;
      await onLine(line);
    };
    for (;;) {
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, null);
      if (bytesRead === 0) break;
      const chunkStart = total;
      total += bytesRead;
      let start = 0;
      while (start < bytesRead) {
        let end = chunk.indexOf(0x0a, start);
        if (end >= bytesRead) end = -1;
        if (end >= 0 && pending === 0 && end - start <= maxLineBytes) {
          // The usual case, a whole line inside one chunk: decoded in place. A caller that returns a
          // promise (an export writing as it reads) is waited for, so reading keeps its pace.
          const text = chunk.toString('utf8', start, end);
          const check = checks ? lineCheck(chunk.subarray(start, end)) : undefined;
          const waiting = onLine({ number: number++, offset: chunkStart + start, bytes: end - start, text, complete: true, check });
          if (waiting) await waiting;
          start = end + 1;
          continue;
        }
        if (pending === 0) lineStart = chunkStart + start;
        keep(chunk.subarray(start, end >= 0 ? end : bytesRead));
        if (end < 0) break;
        await finish(true);
        start = end + 1;
      }
    }
    if (pending > 0) await finish(false);
    return total;
  } finally {
    await handle.close();
  }
}

/** What one line of a part is; `first` for the line that must be the part's header. */
export function parseLine(text: string, first: boolean, id: string, part: number): ParsedLine {
  if (text.trim() === '') return { kind: 'blank' };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { kind: 'damaged', error: `not valid JSON: ${errorText(error)}` };
  }
  if (!isRecord(value)) return { kind: 'damaged', error: 'not a JSON object' };
  const version = value.v;
  if (version === PART_END_VERSION && value.kind === PART_END_KIND) return { kind: 'blank' };
  if (typeof version === 'number' && version > CONVERSATION_FORMAT_VERSION) {
    // A newer header may mean a different layout of the whole file; a newer line among ours is one
    // record this version does not know, and the rest is still readable.
    if (first) return { kind: 'future', version };
    return { kind: 'damaged', error: `it was written by a newer version of Longrun, format version ${version}` };
  }
  if (version !== CONVERSATION_FORMAT_VERSION) return { kind: 'damaged', error: `unknown format version ${JSON.stringify(version) ?? 'undefined'}` };

  if (first) {
    const header = headerSchema().safeParse(value);
    if (!header.success) return { kind: 'damaged', error: `not a valid conversation header: ${describeIssues(header.error)}` };
    if (header.data.id !== id) return { kind: 'damaged', error: `the header names conversation "${header.data.id}"` };
    if ((header.data.part ?? 1) !== part) return { kind: 'damaged', error: `the header names part ${header.data.part ?? 1}` };
    return { kind: 'header' };
  }
  const line = recordLineSchema().safeParse(value);
  if (line.success) return { kind: 'record', record: line.data.record };
  const type = isRecord(value.record) ? value.record.type : undefined;
  if (typeof type === 'string' && !KNOWN_RECORD_TYPES.has(type)) {
    return { kind: 'damaged', error: `an unknown kind of record, "${type}", probably written by a newer version of Longrun` };
  }
  return { kind: 'damaged', error: `not a valid log record: ${describeIssues(line.error)}` };
}

/** The version in a file's first line when it is newer than this build's. */
export function futureVersionOf(head: string): number | undefined {
  const newline = head.indexOf('\n');
  const value = safeJson(newline < 0 ? head : head.slice(0, newline));
  if (isRecord(value) && typeof value.v === 'number' && value.v > CONVERSATION_FORMAT_VERSION) return value.v;
  return undefined;
}

/** A message record as `skimMessageLine` reads it: everything but its content (and its token counts). */
export interface SkimmedMessage {
  readonly id: string;
  readonly role: Role;
  readonly turnId?: string;
  readonly summaryOf?: string;
  readonly incomplete?: true;
}

/**
 * The start of a message record's line as Longrun writes it, up to its content's opening bracket:
 * the version, the record's type, then the message's id (without escapes) and role.
 */
const MESSAGE_LINE_START = new RegExp(
  `^\\{"v":${CONVERSATION_FORMAT_VERSION},"record":\\{"type":"message","message":\\{"id":"([^"\\\\]+)","role":"(${ROLES.join('|')})","content":\\[`,
);

const ROLE_NAMES: ReadonlyMap<string, Role> = new Map(ROLES.map((role) => [role, role]));

/** One field of a message after its content: `summaryOf` (its value captured) or `incomplete`. */
const MESSAGE_FIELD = /,"summaryOf":"([^"\\\]]+)"|,"incomplete":true/y;
/** One field of a message record after its message: `turnId` (its value captured) or `tokens` (the counts inside its braces captured). */
const RECORD_FIELD = /,"turnId":"([^"\\\]]+)"|,"tokens":\{("[^"\\\]]+":(?:0|[1-9]\d*)(?:,"[^"\\\]]+":(?:0|[1-9]\d*))*)?\}/y;

/**
 * What a message record's line holds apart from its content, read from the line's two ends without
 * parsing the content: the start up to the content's opening bracket (`MESSAGE_LINE_START`), and what
 * follows the content's closing bracket, the last of the line: only the message's `summaryOf` and
 * `incomplete`, then the record's `turnId` and `tokens` (whole numbers), each at most once and none
 * holding a bracket, a quote or a backslash. Undefined for any line not laid out so, which is then
 * parsed whole. The content is not checked: a record read this way is checked when its line is read
 * back (see `ConversationStore.readAt`).
 */
export function skimMessageLine(text: string): SkimmedMessage | undefined {
  const start = MESSAGE_LINE_START.exec(text);
  if (!start) return undefined;
  const open = start[0].length - 1;
  const close = text.lastIndexOf(']');
  // The content's last part is an object, or the content is empty.
  if (close <= open || (close > open + 1 && text.charCodeAt(close - 1) !== 0x7d)) return undefined;
  let summaryOf: string | undefined;
  let incomplete = false;
  const afterMessage = readFields(text, close + 1, MESSAGE_FIELD, (field) => {
    if (field[1] === undefined) return !incomplete && (incomplete = true);
    if (summaryOf !== undefined) return false;
    summaryOf = own(field[1]);
    return summaryOf !== undefined;
  });
  if (afterMessage === undefined || text.charCodeAt(afterMessage) !== 0x7d) return undefined;
  let turnId: string | undefined;
  let counted = false;
  const end = readFields(text, afterMessage + 1, RECORD_FIELD, (field) => {
    if (field[1] === undefined) return !counted && (field[2] === undefined || !hasRepeatedKey(field[2])) && (counted = true);
    if (turnId !== undefined) return false;
    turnId = own(field[1]);
    return turnId !== undefined;
  });
  const id = own(start[1]!);
  if (id === undefined || end !== text.length - 2 || !text.endsWith('}}')) return undefined;
  return {
    id,
    // The one string of each role, rather than a copy per line.
    role: ROLE_NAMES.get(start[2]!)!,
    ...(turnId !== undefined ? { turnId } : {}),
    ...(summaryOf !== undefined ? { summaryOf } : {}),
    ...(incomplete ? { incomplete: true as const } : {}),
  };
}

/**
 * Reads the fields `pattern` (sticky) matches one after another from `at`, giving each to `take`, which
 * says false for one not allowed there; the end of the last field read, or undefined when one was refused.
 */
function readFields(text: string, at: number, pattern: RegExp, take: (field: RegExpExecArray) => boolean): number | undefined {
  for (let from = at; ; from = pattern.lastIndex) {
    pattern.lastIndex = from;
    const field = pattern.exec(text);
    if (!field) return from;
    if (!take(field)) return undefined;
  }
}

/**
 * A copy of `part` (a piece of a line without quotes or backslashes) that does not hold the line:
 * the runtime may keep a substring as a view of the string it was taken from, and an id kept for
 * the session would then keep its whole line, content and all, in memory. A string parsed from JSON
 * is a string of its own.
 */
function own(part: string): string | undefined {
  try {
    return JSON.parse(`"${part}"`) as string;
  } catch {
    // A control character, which JSON writes escaped: not a line Longrun wrote.
    return undefined;
  }
}

/** Whether the token counts `"a":1,"b":2` name a tokenizer twice (a line Longrun never writes). */
function hasRepeatedKey(counts: string): boolean {
  if (!counts.includes(',')) return false;
  const keys = counts.split(',').map((pair) => pair.slice(0, pair.indexOf(':')));
  return new Set(keys).size !== keys.length;
}
