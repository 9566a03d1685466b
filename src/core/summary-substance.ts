/**
 * Whether a model-written summary has substance, whatever its shape: words enough for what it
 * summarizes, not one phrase said over and over, not the request's own instructions said back, not
 * the template's headings with nothing under them. Pure: the same text and budget give the same answer.
 *
 * A summary is judged by what it says, not by its headings: a model that writes its own shape
 * (`## Session Summary` and a list of what was done) has written a summary all the same, and the
 * engine appends its own parts (the work state, the file lists, the kept needles) to any of them.
 */

/** What a summary's substance is judged against. */
export interface SubstanceBudget {
  /** About how many tokens the summary should have (its target, or what it summarizes when that is less). */
  readonly expectedTokens: number;
  readonly countText: (value: string) => number;
  /** The instructions the summarizer was given (system prompt and directive, without the task it is to copy). */
  readonly prompt?: string;
}

/**
 * What is wrong with a summary's substance: `noise` is the summarizer's failure (it looped, said the
 * prompt back or filled in nothing), `short` is real text, too little for what it replaces.
 */
export type SubstanceFault = { readonly kind: 'noise'; readonly reason: string } | { readonly kind: 'short'; readonly reason: string };

/** A summary, headings included, must reach this share of the expected tokens (80 of 800); its words beside the headings are held to `MIN_BODY_WORDS`. */
export const MIN_BODY_SHARE = 0.1;

/** Fewer words than this beside the headings is an empty template, however little is expected. */
export const MIN_BODY_WORDS = 3;

/** Runs of this many words are compared to find repetition and echo. */
const SHINGLE = 5;

/** A text whose runs of words are more than this share repeats of its earlier runs is a loop. */
export const MAX_REPEATED_SHARE = 0.5;

/** A text more than this share of whose words are in runs copied from the prompt says the prompt back. */
export const MAX_ECHOED_SHARE = 0.6;

/** Why `summary` has no substance for `budget`, or `undefined` when it has. */
export function substanceFault(summary: string, budget: SubstanceBudget): SubstanceFault | undefined {
  const words = wordsOf(summary);
  const body = bodyOf(summary);
  const bodyWords = wordsOf(body);
  if (bodyWords.length < MIN_BODY_WORDS) {
    return {
      kind: 'noise',
      reason: `the summarizer's text was rejected: it has ${bodyWords.length} word${bodyWords.length === 1 ? '' : 's'} beside its headings (an empty template)`,
    };
  }
  const distinct = new Set(words).size;
  if (distinct < distinctFloor(words.length)) {
    return { kind: 'noise', reason: `the summarizer's text was rejected: it repeats itself (${distinct} different words in ${words.length})` };
  }
  const repeated = repeatedShare(words);
  if (repeated > MAX_REPEATED_SHARE) {
    return { kind: 'noise', reason: `the summarizer's text was rejected: it repeats itself (${percent(repeated)} of its phrases are repeats)` };
  }
  if (budget.prompt) {
    const echoed = echoedShare(bodyWords, budget.prompt);
    if (echoed > MAX_ECHOED_SHARE) {
      return {
        kind: 'noise',
        reason: `the summarizer's text was rejected: it says back the instructions (${percent(echoed)} of its words are theirs)`,
      };
    }
  }
  const tokens = budget.countText(summary.trim());
  const floor = Math.ceil(budget.expectedTokens * MIN_BODY_SHARE);
  if (tokens < floor) {
    return {
      kind: 'short',
      reason: `the summarizer's text was rejected: it has ${tokens} tokens, under a tenth of the ${budget.expectedTokens} expected`,
    };
  }
  return undefined;
}

/** The words of a text, lower-cased: letters first, then letters, digits and the joiners of names and paths. */
export function wordsOf(text: string): string[] {
  return (text.toLowerCase().match(/\p{L}[\p{L}\p{N}'’_./-]*/gu) ?? []).map((word) => word.replace(/[./-]+$/, ''));
}

/**
 * The text without its scaffolding: heading lines, a label alone on its line, table rules, empty
 * checklist boxes and the placeholders a template offers ("…", "None", "N/A").
 */
export function bodyOf(text: string): string {
  return text
    .split('\n')
    .filter((line) => !isScaffolding(line))
    .map((line) => line.replace(/[…]|\.{3}|\[ \]|\[x\]/giu, ' '))
    .join('\n');
}

function isScaffolding(line: string): boolean {
  const trimmed = line.trim();
  if (!trimmed) return true;
  if (/^#{1,6}\s/.test(trimmed)) return true;
  if (/^(?:\*\*|__)[^*_]*(?:\*\*|__):?$/.test(trimmed)) return true;
  if (/^[|\s:-]+$/.test(trimmed)) return true;
  // A label with nothing after it ("Next steps:", "- Working on: …").
  if (/^[-*\d.\s]*[^:]{0,40}:\s*(?:…|\.{3}|none|n\/a|-)?\s*$/iu.test(trimmed)) return true;
  return /^[-*\d.\s]*(?:none|n\/a|tbd|todo|…|\.{3})\.?$/iu.test(trimmed);
}

/**
 * The fewest different words `count` words of prose have: a share of them in a short text, and in a
 * long one a bound that grows as the square root of its length (a text's vocabulary grows more
 * slowly than the text), well under what real summaries use.
 */
export function distinctFloor(count: number): number {
  return Math.min(count * 0.3, 2.5 * Math.sqrt(count));
}

/** The share of a text's runs of words that are repeats of a run earlier in it. */
export function repeatedShare(words: readonly string[]): number {
  const runs = shinglesOf(words);
  if (runs.length === 0) return repeatedWordShare(words);
  const seen = new Set<string>();
  let repeats = 0;
  for (const run of runs) {
    if (seen.has(run)) repeats++;
    else seen.add(run);
  }
  return repeats / runs.length;
}

/** For a text too short for runs: the share of its words that are one word said again. */
function repeatedWordShare(words: readonly string[]): number {
  if (words.length < 2) return 0;
  return 1 - new Set(words).size / words.length;
}

/**
 * The share of a text's words that lie in a run of words the prompt holds too: lines copied from the
 * prompt in another order are all covered, whatever the runs that join them.
 */
export function echoedShare(words: readonly string[], prompt: string): number {
  if (words.length === 0) return 0;
  const theirs = new Set(shinglesOf(wordsOf(prompt)));
  const covered = new Array<boolean>(words.length).fill(false);
  shinglesOf(words).forEach((run, at) => {
    if (theirs.has(run)) covered.fill(true, at, at + SHINGLE);
  });
  return covered.filter(Boolean).length / words.length;
}

function shinglesOf(words: readonly string[]): string[] {
  const runs: string[] = [];
  for (let i = 0; i + SHINGLE <= words.length; i++) runs.push(words.slice(i, i + SHINGLE).join(' '));
  return runs;
}

function percent(share: number): string {
  return `${Math.round(share * 100)}%`;
}
