import { structuredPatch } from 'diff';
import { splitLines } from '../../core/lines';

/**
 * Unified diffs of one file, for the chat and the "Show diff" document. Pure (no `vscode`).
 */

/**
 * Beyond this edit distance (in lines) the preview falls back to "all old lines out, all new lines
 * in": a line diff of a large, fully rewritten file would block the extension host for seconds.
 */
const MAX_EDIT_LENGTH = 1_000;

/**
 * The whole change from `oldText` to `newText` as a unified diff (`--- path`, `+++ path`, hunks with
 * three lines of context). CRLF and LF line endings compare equal; identical texts give the two
 * header lines and `(no changes)`.
 */
export function unifiedDiff(oldText: string, newText: string, path: string): string {
  return unifiedDiffPreview(oldText, newText, path, Number.POSITIVE_INFINITY);
}

/**
 * {@link unifiedDiff} with its body (hunk headers and lines) cut to `maxLines` lines, followed by
 * `… N more lines` when anything was cut.
 */
export function unifiedDiffPreview(oldText: string, newText: string, path: string, maxLines = 40): string {
  const header = [`--- ${path}`, `+++ ${path}`];
  const patch = structuredPatch(path, path, oldText, newText, undefined, undefined, {
    context: 3,
    stripTrailingCr: true,
    maxEditLength: MAX_EDIT_LENGTH,
  });
  const hunks = patch ? patch.hunks : [wholeFileHunk(oldText, newText)];
  const body: string[] = [];
  for (const hunk of hunks) {
    body.push(`@@ -${range(hunk.oldStart, hunk.oldLines)} +${range(hunk.newStart, hunk.newLines)} @@`);
    // "\ No newline at end of file" is noise in a preview.
    for (const line of hunk.lines) if (!line.startsWith('\\')) body.push(line);
  }
  if (body.length === 0) return [...header, '(no changes)'].join('\n');
  if (body.length <= maxLines) return [...header, ...body].join('\n');
  const limit = Math.max(0, Math.floor(maxLines));
  const shown = body.slice(0, limit);
  if (body.length > limit) shown.push(`… ${body.length - limit} more lines`);
  return [...header, ...shown].join('\n');
}

/** As `diff -u` writes it: an empty side points at the line before (`-0,0` for a new file). */
function range(start: number, lines: number): string {
  if (lines === 0) return `${start - 1},0`;
  return lines === 1 ? `${start}` : `${start},${lines}`;
}

/** Used when the texts differ too much for a line diff to be worth computing. */
function wholeFileHunk(oldText: string, newText: string) {
  const oldLines = splitLines(oldText);
  const newLines = splitLines(newText);
  return {
    oldStart: 1,
    oldLines: oldLines.length,
    newStart: 1,
    newLines: newLines.length,
    lines: [...oldLines.map((l) => `-${l}`), ...newLines.map((l) => `+${l}`)],
  };
}

/** What a unified diff of {@link unifiedDiff} changes: lines added and removed, and its length without the file headers. */
export function diffStats(diff: string): { readonly added: number; readonly removed: number; readonly bodyLines: number } {
  const body = diff.split('\n').slice(2);
  let added = 0;
  let removed = 0;
  for (const line of body) {
    if (line.startsWith('+')) added++;
    else if (line.startsWith('-')) removed++;
  }
  return { added, removed, bodyLines: body.length };
}

/** `text` in a Markdown code fence longer than any run of backticks in it, so no line of it can close the fence. */
export function fencedBlock(text: string, language: string): string {
  const longestRun = Math.max(0, ...(text.match(/`+/g) ?? []).map((run) => run.length));
  const fence = '`'.repeat(Math.max(3, longestRun + 1));
  return `${fence}${language}\n${text}\n${fence}`;
}
