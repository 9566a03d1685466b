/**
 * The size cap for text the agent hands the model from outside its own tools (other extensions'
 * tool results, what the user attached): the rule Longrun's own tool results follow, so that one
 * huge result cannot fill the window.
 */

/**
 * `text` when it fits in `maxChars`; else its start, cut at a line boundary (inside the first line
 * when even that does not fit), then a note saying how much was left out, and `hint` (how to see
 * more). The result is never longer than `maxChars`.
 */
export function capText(text: string, maxChars: number, hint: string): string {
  if (text.length <= maxChars) return text;
  // The note's numbers depend on the cut and the cut on the note's length: size the note for the
  // largest numbers it can hold (everything cut), then cut.
  const note = (rest: string): string => {
    const lines = rest.split('\n').filter((line) => line !== '').length;
    return `[Truncated at ${maxChars.toLocaleString('en-US')} characters: ${rest.length.toLocaleString('en-US')} more characters (${lines} ${lines === 1 ? 'line' : 'lines'}) not shown.${hint ? ` ${hint}` : ''}]`;
  };
  const budget = maxChars - note(text).length - 1;
  if (budget <= 0) return note(text).slice(0, maxChars);
  const boundary = text.lastIndexOf('\n', budget);
  const kept = boundary > 0 ? text.slice(0, boundary) : text.slice(0, budget);
  return `${kept}\n${note(text.slice(kept.length))}`;
}
