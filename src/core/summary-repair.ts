import type { SummaryConfig } from './config';
import type { Message } from './messages';
import type { MessageTokenCounter } from './message-tokens';
import { keepNeedles, stripKeptNeedles, type KeptNeedles } from './kept-needles';
import type { NeedleLedger } from './needles';
import { summaryHeading } from './summary-request';
import { substanceFault } from './summary-substance';
import { stripWorkState } from './work-state';

/**
 * Checks a model-written summary before it replaces anything, and repairs what can be repaired
 * deterministically: the summary must be text with substance (in the template's shape or its own), the
 * user's original task must be in it verbatim (up to a cap), no file lists, kept needles or work
 * state of its own may remain (the file ledger, the needle ledger and the plan are never left to the
 * model: they are appended by the engine, so exactly one of each ends every summary), and the needles
 * the summary left out are appended word for word.
 */

const MIN_USABLE_CHARS = 40;

/** Letters must be at least this share of the visible characters (tables and code stay well above). */
const MIN_LETTER_SHARE = 0.3;

/** Control, replacement, private-use and unassigned characters may be at most this share. */
const MAX_NOISE_SHARE = 0.1;

/** The original task is kept verbatim up to this many tokens; the rest is summarized like any content. */
export const ORIGINAL_TASK_MAX_TOKENS = 2_000;

/** What a whole summary is checked against, beyond being text. */
export interface SummaryExpectations {
  /** About how many tokens the summary should have: the target, or what it summarizes when that is less. */
  readonly expectedTokens: number;
  readonly countText: (value: string) => number;
  /** The instructions the summarizer was given, without the task it is to copy: a summary that says them back is not one. */
  readonly prompt?: string;
}

/** The expectations for a summary of `input` (the messages summarized and the previous summary), asked for with `prompt`. */
export function expectationsFor(
  summary: SummaryConfig,
  input: readonly Message[],
  counter: MessageTokenCounter,
  prompt?: string,
): SummaryExpectations {
  return {
    expectedTokens: Math.min(summary.targetTokens, counter.countMessages(input)),
    countText: (value) => counter.countText(value),
    ...(prompt ? { prompt } : {}),
  };
}

/**
 * Why a summary cannot be used, and whether that is the summarizer's failure. A `fault` (no text,
 * not text, a loop, the instructions said back, an empty template) counts against the summarizer
 * when deciding whether to ask it next time; a `shape` rejection (real text, too short for what it
 * replaces) does not: the summarizer answers, and its next summary may well be used.
 */
export interface Rejection {
  readonly reason: string;
  readonly kind: 'fault' | 'shape';
}

/**
 * Why a summary cannot be used, or `undefined` when it can. Every summary must hold text: letters,
 * and not mostly control or replacement characters (a broken stream or a wrong encoding). With
 * `expected` (a whole summary, not one batch of several) it must also have substance (see
 * `summary-substance.ts`): its headings, the template's or its own, are not required. The reason is
 * stored with the fallback summary used instead and shown to the user.
 */
export function unusableReason(summary: string, expected?: SummaryExpectations): string | undefined {
  return rejectionOf(summary, expected)?.reason;
}

/** Why a summary cannot be used and of which kind (see `Rejection`), or `undefined` when it can. */
export function rejectionOf(summary: string, expected?: SummaryExpectations): Rejection | undefined {
  const fault = (reason: string): Rejection => ({ reason, kind: 'fault' });
  const trimmed = summary.trim();
  if (!trimmed) return fault('the summarizer returned no text');
  const chars = [...trimmed];
  const visible = chars.filter((c) => !/\s/u.test(c)).length;
  const letters = chars.filter((c) => /\p{L}/u.test(c)).length;
  const noise = chars.filter((c) => NOISE.test(c)).length;
  if (letters === 0) return fault(`the summarizer's text was rejected: it has no letters (${describeChars(chars.length, noise)})`);
  if (noise > chars.length * MAX_NOISE_SHARE) {
    return fault(
      `the summarizer's text was rejected: it is mostly not text (${noise} of its ${chars.length} characters are control or replacement characters)`,
    );
  }
  if (letters < visible * MIN_LETTER_SHARE) {
    return fault(`the summarizer's text was rejected: it is mostly not text (only ${letters} of its ${visible} visible characters are letters)`);
  }
  if (trimmed.length < MIN_USABLE_CHARS) return fault(`the summarizer returned only ${trimmed.length} characters`);
  if (!expected) return undefined;
  const lacking = substanceFault(trimmed, expected);
  if (!lacking) return undefined;
  return { reason: lacking.reason, kind: lacking.kind === 'noise' ? 'fault' : 'shape' };
}

/** Control characters other than line breaks and tabs, the replacement character, private-use and unassigned code points. */
const NOISE = /[\p{Cc}\p{Co}\p{Cn}\uFFFD](?<![\n\r\t])/u;

function describeChars(total: number, noise: number): string {
  if (noise === total) return `${total} characters, all of them control or replacement characters`;
  return noise > 0 ? `${total} characters, ${noise} of them control or replacement characters` : `${total} characters`;
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
  /** The needles appended because the summary left them out (none without a ledger). */
  readonly needles?: KeptNeedles;
}

/** The needle ledger and what the check needs besides the summary. */
export interface NeedleCheck {
  readonly ledger: NeedleLedger;
  /** The messages that stay in the model's view beside the summary: a needle in them is not missing. */
  readonly inView: readonly Message[];
  /** The summary's target length: the appended block takes at most half of it. */
  readonly summaryTargetTokens: number;
  readonly countText: (value: string) => number;
}

/** The share of the summary's target the kept needles may take. */
export const NEEDLE_BUDGET_SHARE = 0.5;

const ORIGINAL_TASK_SECTION = /^###\s*Original Task\b/i;
const NEXT_HEADING = /^#{1,3}\s/;

/**
 * Repairs a summary: its heading, the original task verbatim in its own section (whatever the model
 * wrote there is replaced, so a model that copied a long task in full does not grow the summary),
 * no file lists or kept needles of the model's own (or quoted from an earlier summary), and, given
 * the needle ledger, a `<kept-needles>` block at its end with every needle it left out.
 */
export function repairSummary(summary: string, round: number, originalTask: string | undefined, needles?: NeedleCheck): Repaired {
  const repairs: string[] = [];
  let text = summary.trim();
  const stripped = stripFileOperations(text);
  if (stripped !== text) {
    text = stripped;
    repairs.push('earlier file lists removed');
  }
  // Removed before the check: a copied block must not count as the summary keeping its needles.
  const unkept = stripKeptNeedles(text);
  if (unkept !== text) {
    text = unkept;
    repairs.push('earlier kept needles removed');
  }
  // The work state is the engine's, made anew for this round: a copy of the last one is stale.
  const unstated = stripWorkState(text);
  if (unstated !== text) {
    text = unstated;
    repairs.push('earlier work state removed');
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
  if (!needles) return { text, repairs };
  const kept = keepNeedles({
    ledger: needles.ledger,
    summary: text,
    inView: needles.inView,
    budgetTokens: Math.floor(needles.summaryTargetTokens * NEEDLE_BUDGET_SHARE),
    countText: needles.countText,
  });
  if (kept.block) {
    text = `${text}\n\n${kept.block}`;
    repairs.push(
      `${kept.kept.length} needle${kept.kept.length === 1 ? '' : 's'} kept verbatim${kept.leftOut > 0 ? `, ${kept.leftOut} left out for length` : ''}`,
    );
  }
  return { text, repairs, needles: kept };
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
  return text
    .replace(LEDGER_BLOCK, '')
    .replace(LEDGER_TAG_LINE, '')
    .replace(/\n{3,}/g, '\n\n')
    .trimEnd();
}

function normalised(value: string): string {
  return value.replace(/\s+/g, ' ').trim().toLowerCase();
}
