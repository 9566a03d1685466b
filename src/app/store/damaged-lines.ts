import { createHash } from 'node:crypto';
import { errorText, isRecord } from '../../core/errors';
import { appendWhole, safeJson } from './files';
import { forEachLine } from './lines';

/** One skipped line, as kept in `<id>.damaged.jsonl`. */
export interface DamagedLine {
  /** The part of the conversation the line is in; absent in entries written before parts (part 1). */
  readonly part?: number;
  /** 1-based line number in its part's file. */
  readonly line: number;
  /** The line; only its start when it was too long to read. */
  readonly text: string;
  readonly error: string;
  /** When it was found, in milliseconds since the epoch. */
  readonly at: number;
}

/** A line skipped while a conversation was read. */
export interface SkippedLine {
  readonly part: number;
  readonly line: number;
  readonly text: string;
  readonly error: string;
  /** The line ends the file without its newline: its write was cut off. */
  readonly cutOff: boolean;
}

/** How the damaged file is read. */
export interface DamagedFileLimits {
  readonly readChunkBytes: number;
  readonly maxLineBytes: number;
}

/**
 * Keeps the skipped lines of conversation `id` aside in `damagedFile` and describes those not kept
 * aside before, a sentence each: each line is reported once.
 */
export async function reportOnce(
  id: string,
  damagedFile: string,
  skipped: readonly SkippedLine[],
  limits: DamagedFileLimits,
  now: number,
): Promise<string[]> {
  let kept: Set<string>;
  try {
    kept = await keptAside(damagedFile, limits);
  } catch {
    // Unreadable: every line is reported, and the copy below will likely fail and say why.
    kept = new Set();
  }
  const fresh = skipped.filter((s) => !kept.has(keyOf(s.part, s.line, s.text)));
  if (fresh.length === 0) return [];

  const problems = fresh.map((s) => {
    const where = s.part === 1 ? `Line ${s.line} of conversation "${id}"` : `Line ${s.line} of part ${s.part} of conversation "${id}"`;
    return s.cutOff
      ? `${where} is incomplete (its write was probably cut off by a crash) and was skipped; a copy is kept in ${damagedFile}.`
      : `${where} could not be read (${s.error}) and was skipped; a copy is kept in ${damagedFile}.`;
  });
  const entries = fresh.map((s): DamagedLine => ({ part: s.part, line: s.line, text: s.text, error: s.error, at: now }));
  try {
    await appendWhole(damagedFile, entries.map((e) => JSON.stringify(e)).join('\n') + '\n');
  } catch (error) {
    problems.push(
      `The ${fresh.length} unreadable line(s) of conversation "${id}" could not be copied to ${damagedFile} (${errorText(error)}); ` +
        `they remain in the conversation's files and will be reported again.`,
    );
  }
  return problems;
}

/** The lines already kept in a damaged file, as `keyOf` keys. */
async function keptAside(damagedFile: string, limits: DamagedFileLimits): Promise<Set<string>> {
  const kept = new Set<string>();
  await forEachLine(damagedFile, limits.readChunkBytes, limits.maxLineBytes, (raw) => {
    const entry = safeJson(raw.text);
    if (!isRecord(entry) || typeof entry.line !== 'number' || typeof entry.text !== 'string') return;
    kept.add(keyOf(typeof entry.part === 'number' ? entry.part : 1, entry.line, entry.text));
  });
  return kept;
}

/** Identifies a skipped line; a digest of its text keeps the set small when lines are long. */
function keyOf(part: number, line: number, text: string): string {
  return `${part}:${line}:${createHash('sha256').update(text).digest('base64')}`;
}
