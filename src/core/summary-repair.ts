import { summaryHeading } from './summary-request';

/**
 * Checks a model-written summary before it replaces anything, and repairs what can be repaired
 * deterministically: the summary must exist, the user's original task must be in it verbatim (up
 * to a cap), and no file lists of its own may remain: the file ledger is never left to the model,
 * it is appended separately, so exactly one pair ends every summary.
 */

const MIN_USABLE_CHARS = 40;

/** The original task is kept verbatim up to this many tokens; the rest is summarized like any content. */
export const ORIGINAL_TASK_MAX_TOKENS = 2_000;

export function unusableReason(summary: string): string | undefined {
  const trimmed = summary.trim();
  if (!trimmed) return 'the summarizer returned no text';
  if (trimmed.length < MIN_USABLE_CHARS) return `the summarizer returned only ${trimmed.length} characters`;
  return undefined;
}

export interface BoundedTask {
  /** The task as the summary carries it: verbatim, or its beginning and a marker. */
  readonly text: string;
  /** Tokens of `text`. */
  readonly tokens: number;
  readonly cut: boolean;
}

/**
 * The original task, cut to `maxTokens` with a marker when longer: a pasted log or spec must not be
 * copied into every summary (it would crowd out the work itself). What is cut is still summarized
 * with the conversation it came in.
 */
export function boundTask(task: string, maxTokens: number, countText: (value: string) => number): BoundedTask {
  const total = countText(task);
  if (total <= maxTokens) return { text: task, tokens: total, cut: false };
  const marker = (kept: number): string =>
    `\n[… the original task continues: ${(total - kept).toLocaleString('en-US')} of its ${total.toLocaleString('en-US')} tokens are cut here and summarized with the conversation]`;
  const room = Math.max(0, maxTokens - countText(marker(maxTokens)));
  // Start from the proportional length, then shrink until the head fits; a few passes at most.
  let chars = Math.floor((task.length * room) / total);
  let head = task.slice(0, chars);
  let used = countText(head);
  while (used > room && chars > 0) {
    chars = Math.floor((chars * room) / Math.max(used, 1)) - 1;
    head = task.slice(0, Math.max(0, chars));
    used = countText(head);
  }
  const text = `${head.trimEnd()}${marker(used)}`;
  return { text, tokens: countText(text), cut: true };
}

export interface Repaired {
  readonly text: string;
  /** What was added or removed, for the log. */
  readonly repairs: readonly string[];
}

const ORIGINAL_TASK_SECTION = /^###\s*Original Task\b/i;
const NEXT_HEADING = /^#{1,3}\s/;

/**
 * Repairs a summary: its heading, the original task verbatim in its own section (whatever the model
 * wrote there is replaced, so a model that copied a long task in full does not grow the summary),
 * and no file lists of the model's own (or quoted from an earlier summary).
 */
export function repairSummary(summary: string, round: number, originalTask: string | undefined): Repaired {
  const repairs: string[] = [];
  let text = summary.trim();
  const stripped = stripFileOperations(text);
  if (stripped !== text) {
    text = stripped;
    repairs.push('earlier file lists removed');
  }
  const heading = summaryHeading(round);
  if (!text.includes(heading)) {
    text = `${heading}\n\n${text}`;
    repairs.push('heading');
  }
  if (originalTask) {
    const replaced = setTaskSection(text, heading, originalTask);
    if (!normalised(text).includes(normalised(originalTask))) repairs.push('original task');
    text = replaced;
  }
  return { text, repairs };
}

function setTaskSection(text: string, heading: string, task: string): string {
  const lines = text.split('\n');
  const block = `### Original Task (verbatim)\n${task}`;
  const at = lines.findIndex((line) => ORIGINAL_TASK_SECTION.test(line));
  if (at < 0) {
    const headingAt = lines.findIndex((line) => line.includes(heading));
    return join(lines.slice(0, headingAt + 1), block, lines.slice(headingAt + 1));
  }
  let end = at + 1;
  while (end < lines.length && !NEXT_HEADING.test(lines[end]!)) end++;
  return join(lines.slice(0, at), block, lines.slice(end));
}

/** Puts a block between two runs of lines with one blank line on each side. */
function join(before: readonly string[], block: string, after: readonly string[]): string {
  const head = before.join('\n').trimEnd();
  const tail = after.join('\n').trimStart();
  return [head, block, tail].filter(Boolean).join('\n\n');
}

const LEDGER_BLOCK = /<(read-files|modified-files)>[\s\S]*?<\/\1>[ \t]*\n?/g;
const LEDGER_TAG_LINE = /^[ \t]*<\/?(read-files|modified-files)>[ \t]*\n?/gm;

/**
 * Removes `<read-files>` / `<modified-files>` lists from text: a summary that quotes an earlier one
 * (an extractive fallback does) or a model that imitates the format would otherwise end with two
 * contradicting pairs. The current ledger is appended after this.
 */
export function stripFileOperations(text: string): string {
  if (!text.includes('-files>')) return text;
  return text.replace(LEDGER_BLOCK, '').replace(LEDGER_TAG_LINE, '').replace(/\n{3,}/g, '\n\n').trimEnd();
}

function normalised(value: string): string {
  return value.replace(/\s+/g, ' ').trim().toLowerCase();
}
