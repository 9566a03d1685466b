import { ToolFailure, type TextEdit } from '../../llm/workspace-port';

/**
 * `edit_file`'s replacements, located in a file's text exactly as it is. Pure (no `vscode`).
 *
 * The applied change is the replacement and nothing else: every character outside the replaced
 * ranges stays as it was, line endings included. The model writes LF; a file's text may use CRLF,
 * or both (a file VS Code has not normalized, as on disk). So the edit is found in an LF view of the
 * text and mapped back, and `newText` takes the line ending of the text it replaces.
 */

/** One replacement, in offsets of the text it was located in. */
export interface Replacement {
  readonly start: number;
  readonly end: number;
  /** With the line endings of the replaced text. */
  readonly newText: string;
}

/**
 * Where each edit applies in `text`; every `oldText` must occur exactly once and edits may not
 * overlap, else a {@link ToolFailure} tells the model what to fix. Sorted by position.
 */
export function locateEdits(text: string, edits: readonly TextEdit[], path: string): Replacement[] {
  const view = lfView(text);
  const located = edits.map((edit, index) => {
    const oldText = toLf(edit.oldText);
    const label = edits.length > 1 ? `Edit ${index + 1}: ` : '';
    if (oldText === '') throw new ToolFailure(`${label}oldText is empty.`);
    const count = countOccurrences(view.text, oldText);
    if (count === 0) {
      throw new ToolFailure(`${label}oldText was not found in ${path}. Read the file again and copy the text exactly.`);
    }
    if (count > 1) {
      throw new ToolFailure(`${label}oldText occurs ${count} times in ${path}. Include more surrounding lines so it occurs exactly once.`);
    }
    const at = view.text.indexOf(oldText);
    const start = view.toOriginal(at);
    const end = view.toOriginal(at + oldText.length);
    const eol = lineEndingAt(text, start, end);
    return { start, end, newText: toLf(edit.newText).replace(/\n/g, eol), index };
  });
  located.sort((a, b) => a.start - b.start);
  for (let i = 1; i < located.length; i++) {
    const previous = located[i - 1];
    const next = located[i];
    if (previous && next && next.start < previous.end) {
      throw new ToolFailure(`Edits ${previous.index + 1} and ${next.index + 1} overlap. Combine them into one edit.`);
    }
  }
  return located.map(({ start, end, newText }) => ({ start, end, newText }));
}

/** `text` with the replacements (sorted, not overlapping) applied. */
export function applyReplacements(text: string, replacements: readonly Replacement[]): string {
  let result = '';
  let at = 0;
  for (const r of replacements) {
    result += text.slice(at, r.start) + r.newText;
    at = r.end;
  }
  return result + text.slice(at);
}

function toLf(s: string): string {
  return s.replace(/\r\n/g, '\n');
}

/** The text with CRLF as LF, and the way back from its offsets to the original's. */
function lfView(text: string): { text: string; toOriginal(offset: number): number } {
  // Offsets, in the LF text, of each `\n` that was a `\r\n`.
  const collapsed: number[] = [];
  for (let i = text.indexOf('\r\n'); i !== -1; i = text.indexOf('\r\n', i + 2)) collapsed.push(i - collapsed.length);
  if (collapsed.length === 0) return { text, toOriginal: (offset) => offset };
  return {
    text: toLf(text),
    // A boundary before a collapsed `\n` maps before its `\r`, one after it maps after the `\n`:
    // a range never splits a CRLF.
    toOriginal: (offset) => offset + countBelow(collapsed, offset),
  };
}

/** How many of the sorted `values` are below `limit`. */
function countBelow(values: readonly number[], limit: number): number {
  let low = 0;
  let high = values.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if ((values[mid] as number) < limit) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** The line ending `newText` gets: the replaced text's own, else that of the line it sits on, else LF. */
function lineEndingAt(text: string, start: number, end: number): string {
  const replaced = text.slice(start, end);
  if (replaced.includes('\r\n')) return '\r\n';
  if (replaced.includes('\n')) return '\n';
  const next = text.indexOf('\n', end);
  if (next !== -1) return text[next - 1] === '\r' ? '\r\n' : '\n';
  const previous = text.lastIndexOf('\n', start - 1);
  if (previous !== -1) return text[previous - 1] === '\r' ? '\r\n' : '\n';
  return '\n';
}

function countOccurrences(text: string, part: string): number {
  let count = 0;
  // Overlapping occurrences count too: they make the match just as ambiguous.
  for (let at = text.indexOf(part); at !== -1; at = text.indexOf(part, at + 1)) count++;
  return count;
}
