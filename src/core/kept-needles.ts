/**
 * The block of needles a summary lacks: after every summary the engine checks it, and what stays in
 * the view, against the needle ledger (`needles.ts`), and appends what is missing word for word in one
 * `<kept-needles>` block, removed and rendered anew at each round so that it never repeats.
 */

import type { Message } from './messages';
import { NEEDLE_KINDS, normalised, oneLine, searchableText, type Needle, type NeedleKind, type NeedleLedger } from './needles';

export const KEPT_NEEDLES_OPEN = '<kept-needles>';
export const KEPT_NEEDLES_CLOSE = '</kept-needles>';

const KEPT_BLOCK = /<kept-needles>[\s\S]*?<\/kept-needles>[ \t]*\n?/g;
const KEPT_TAG_LINE = /^[ \t]*<\/?kept-needles>[ \t]*\n?/gm;

/**
 * Removes `<kept-needles>` blocks: a model that copies the previous summary's block, or a fallback
 * that quotes it, would otherwise carry a stale copy next to the one rendered for this round.
 */
export function stripKeptNeedles(text: string): string {
  if (!text.includes('kept-needles>')) return text;
  return text
    .replace(KEPT_BLOCK, '')
    .replace(KEPT_TAG_LINE, '')
    .replace(/\n{3,}/g, '\n\n')
    .trimEnd();
}

/** What the summary lacks, and how it is appended. */
export interface KeptNeedles {
  /** The `<kept-needles>` block, or '' when the summary and the view hold every needle. */
  readonly block: string;
  /** The needles the block carries. */
  readonly kept: readonly Needle[];
  /** Needles missing from the summary that did not fit the budget. */
  readonly leftOut: number;
}

/** What the check against the ledger needs. */
export interface KeepNeedlesInput {
  readonly ledger: NeedleLedger;
  /** The summary as it will be shown, its earlier kept block removed. */
  readonly summary: string;
  /** The messages that stay in the model's view beside the summary (system messages, the kept part). */
  readonly inView: readonly Message[];
  /** Most tokens the block may take. */
  readonly budgetTokens: number;
  readonly countText: (value: string) => number;
}

/** The order in which missing needles take the budget: the user's rules first, resolved errors last. */
const PRIORITY = (n: Needle): number => (n.kind === 'constraint' ? 0 : n.kind === 'error' ? (n.resolvedBy === undefined ? 1 : 3) : 2);

/**
 * Checks the summary against the ledger: a needle whose text is neither in the summary nor in a
 * message that stays in the view (compared without case, spacing, quotes style and Markdown
 * emphasis) goes into the block, word for word, as the budget allows: constraints, then unresolved
 * errors, then open tasks, then resolved errors, the newest of each first; the block lists them
 * oldest first within each kind and says how many did not fit.
 */
export function keepNeedles(input: KeepNeedlesInput): KeptNeedles {
  if (input.ledger.needles.length === 0) return { block: '', kept: [], leftOut: 0 };
  // Each text is searched on its own, not joined into one: a normalised needle holds no line break,
  // so it is found in the texts apart exactly where it is found in them joined by line breaks.
  const haystacks = [normalised(input.summary), ...input.inView.map(normalisedText)];
  const missing = input.ledger.needles
    .map((needle, order) => ({ needle, order }))
    .filter(({ needle }) => {
      const text = normalisedNeedle(needle);
      return !haystacks.some((haystack) => haystack.includes(text));
    });
  if (missing.length === 0) return { block: '', kept: [], leftOut: 0 };
  missing.sort((a, b) => PRIORITY(a.needle) - PRIORITY(b.needle) || b.order - a.order);
  let left = input.budgetTokens - input.countText(renderBlock([], 0));
  const chosen: typeof missing = [];
  for (const candidate of missing) {
    const cost = input.countText(`${renderLine(candidate.needle)}\n`);
    if (cost > left) continue;
    left -= cost;
    chosen.push(candidate);
  }
  chosen.sort((a, b) => a.order - b.order);
  const kept = chosen.map((c) => c.needle);
  const leftOut = missing.length - kept.length;
  return { block: kept.length > 0 || leftOut > 0 ? renderBlock(kept, leftOut) : '', kept, leftOut };
}

/**
 * Messages and needles are never changed once made, and the same ones are checked at every
 * compaction of a session: their normalised text is made once, and goes with them.
 */
const normalisedTexts = new WeakMap<Message, string>();
const normalisedNeedles = new WeakMap<Needle, string>();

function normalisedText(message: Message): string {
  let text = normalisedTexts.get(message);
  if (text === undefined) normalisedTexts.set(message, (text = normalised(searchableText(message))));
  return text;
}

function normalisedNeedle(needle: Needle): string {
  let text = normalisedNeedles.get(needle);
  if (text === undefined) normalisedNeedles.set(needle, (text = normalised(needle.text)));
  return text;
}

const HEADINGS: Readonly<Record<NeedleKind, string>> = {
  constraint: "The user's constraints and preferences, in their words:",
  error: 'Errors the tools reported:',
  task: 'Open tasks the user gave:',
};

/**
 * Renders the block, kinds in a fixed order, each under a line that says what it is:
 *
 * ```
 * <kept-needles>
 * Left out of the summary above, kept word for word:
 * The user's constraints and preferences, in their words:
 * - Never edit config.json.
 * Errors the tools reported:
 * - unresolved (run_command npm test): TypeError: Cannot read properties of undefined
 * Open tasks the user gave:
 * - Later, add a CSV export to src/report.ts.
 * </kept-needles>
 * ```
 */
export function renderBlock(kept: readonly Needle[], leftOut: number): string {
  const lines = [KEPT_NEEDLES_OPEN, 'Left out of the summary above, kept word for word:'];
  for (const kind of NEEDLE_KINDS) {
    const ofKind = kept.filter((n) => n.kind === kind);
    if (ofKind.length === 0) continue;
    lines.push(HEADINGS[kind], ...ofKind.map(renderLine));
  }
  if (leftOut > 0) lines.push(`(${leftOut} more left out for length; the original messages are kept in the conversation's history.)`);
  lines.push(KEPT_NEEDLES_CLOSE);
  return lines.join('\n');
}

function renderLine(needle: Needle): string {
  const text = safe(needle.text);
  if (needle.kind !== 'error') return `- ${text}`;
  const status = needle.resolvedBy === undefined ? 'unresolved' : 'resolved later';
  return `- ${status} (${safe(needle.key ?? needle.tool ?? 'tool')}): ${text}`;
}

/** One line, and no tag that would end the block early. */
function safe(value: string): string {
  return oneLine(value).replace(/<(\/?)kept-needles>/g, '‹$1kept-needles›');
}
