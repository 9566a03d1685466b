import { structuredPatch } from 'diff';
import { splitLines } from '../core/lines';

/**
 * A short unified diff of one file for the edit confirmation and the chat. Pure (no `vscode`).
 */

/**
 * Beyond this edit distance (in lines) the preview falls back to "all old lines out, all new lines
 * in": a line diff of a large, fully rewritten file would block the extension host for seconds.
 */
const MAX_EDIT_LENGTH = 1_000;

/**
 * Renders the change from `oldText` to `newText` as a unified diff (`--- path`, `+++ path`, hunks with
 * three lines of context). CRLF and LF line endings compare equal. The body (hunk headers and lines)
 * is cut to `maxLines` lines, followed by `… N more lines` when anything was cut; identical texts
 * give the two header lines and `(no changes)`.
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
