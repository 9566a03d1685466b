/**
 * What VS Code's chat folds of a finished response. Once a response is complete (and while
 * `chat.agent.collapseCompletedResponses` is on, its default), the chat puts everything the
 * response showed before its final text into a closed fold titled "Completed N steps"; the final
 * text and whatever follows it stay in sight. The final text is the last run of consecutive
 * Markdown parts that holds any text (VS Code merges adjacent Markdown into one part). The fold is
 * made only when at least two steps precede that text, each Markdown run, button or progress line
 * counting as one. A response still under way is never folded.
 */

/** One part a response showed, as the fold rule sees it. */
export interface ShownPart {
  readonly kind: 'markdown' | 'other';
  /** For Markdown: whether it holds no text at all. */
  readonly empty?: boolean;
}

/**
 * Where what stays in sight of a finished response begins: the parts before this index are folded
 * out of sight, those from it on are shown. 0 when nothing is folded.
 */
export function firstInSight(parts: readonly ShownPart[]): number {
  let last = parts.length - 1;
  while (last >= 0 && !(parts[last]!.kind === 'markdown' && !parts[last]!.empty)) last--;
  if (last < 0) return 0;
  let start = last;
  while (start > 0 && parts[start - 1]!.kind === 'markdown') start--;
  return steps(parts.slice(0, start)) >= 2 ? start : 0;
}

/** How many steps a fold of these parts would count: each run of Markdown is one, each other part one. */
function steps(parts: readonly ShownPart[]): number {
  let count = 0;
  parts.forEach((part, i) => {
    if (part.kind !== 'markdown' || i === 0 || parts[i - 1]!.kind !== 'markdown') count++;
  });
  return count;
}
