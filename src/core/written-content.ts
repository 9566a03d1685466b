import { isRecord } from './errors';
import type { FileLedger } from './file-ledger';
import type { ConversationLog } from './log';
import { normalizePath } from './text';
import { TOOL_NAMES } from './tool-names';

/**
 * The content a write call carries (`create_file`'s whole file, `edit_file`'s replacements): once the
 * call is older than the recent part a compaction keeps, that content is on disk, and the model's view
 * carries a one-line stub in its place, saying what was written where and how to get the call back.
 * The call stays well formed for every provider: its input is still an object the tool accepts, the
 * path kept and the content replaced by the stub. The original stays in the log, where `recall` finds it.
 *
 * A write is stubbed only while its file holds what it wrote as far as the log knows: the file exists
 * under that name (the file ledger has not seen it deleted or renamed away), and no revert of the
 * agent's changes to it was recorded after the call.
 */

/** The write tools whose content can be stubbed, and how their input carries it. */
const WRITE_TOOLS: ReadonlySet<string> = new Set([TOOL_NAMES.createFile, TOOL_NAMES.editFile]);

/** Whether `toolName` is a write tool whose content can be replaced by a stub. */
export function isStubbableWrite(toolName: string): boolean {
  return WRITE_TOOLS.has(toolName);
}

/**
 * The one line that stands for what a write call wrote: what and where, and how to see it again.
 * `tokens` is the local count of the content replaced. Undefined when the input is not a write's.
 */
export function writtenStub(toolName: string, toolCallId: string, input: unknown, tokens: number): string | undefined {
  if (!WRITE_TOOLS.has(toolName) || !isRecord(input) || typeof input.path !== 'string') return undefined;
  const path = JSON.stringify(input.path.trim());
  const size = `${thousands(tokens)} tokens`;
  const what =
    toolName === TOOL_NAMES.createFile
      ? `wrote ${plural(lineCount(input.content), 'line')} (${size}) to ${path}`
      : `made ${plural(Array.isArray(input.edits) ? input.edits.length : 0, 'replacement')} (${size}) in ${path}`;
  return `[Pruned by Longrun: this ${toolName} call ${what}; the file holds them. Read the file for its current content, or call recall with query "${toolCallId}" for this call as written.]`;
}

/** The characters of the content a write call carries (what its stub would replace); 0 for other calls. */
export function writtenChars(toolName: string, input: unknown): number {
  if (!isRecord(input)) return 0;
  if (toolName === TOOL_NAMES.createFile) return typeof input.content === 'string' ? input.content.length : 0;
  if (toolName !== TOOL_NAMES.editFile || !Array.isArray(input.edits)) return 0;
  let chars = 0;
  for (const edit of input.edits as unknown[]) {
    if (!isRecord(edit)) continue;
    if (typeof edit.oldText === 'string') chars += edit.oldText.length;
    if (typeof edit.newText === 'string') chars += edit.newText.length;
  }
  return chars;
}

/**
 * The input of a write call with its content replaced by `stub`: `create_file`'s content is the stub,
 * `edit_file`'s replacements one replacement whose new text is the stub. Still an object the tool's
 * schema accepts, with the path of the original.
 */
export function withWrittenStub(toolName: string, input: unknown, stub: string): unknown {
  if (!isRecord(input)) return input;
  if (toolName === TOOL_NAMES.createFile) return { ...input, content: stub };
  if (toolName === TOOL_NAMES.editFile) return { ...input, edits: [{ oldText: '…', newText: stub }] };
  return input;
}

/**
 * Whether the file at `path` (normalized) still holds what the write call of message `messageId`
 * wrote, as far as `log` and its cumulative `ledger` know. A file the ledger does not know (no event
 * recorded its write), knows as deleted, or knows under another name does not; nor does one whose
 * revert was recorded after the message.
 */
export function filesHoldingWrites(log: ConversationLog, ledger: FileLedger): (messageId: string, path: string) => boolean {
  const lastRevert = new Map<string, number>();
  log.forEach((record, at) => {
    if (record.type === 'file' && record.event.revert) lastRevert.set(normalizePath(record.event.path), at);
  });
  let positions: Map<string, number> | undefined;
  const positionOf = (messageId: string): number => {
    if (!positions) {
      positions = new Map();
      log.forEach((record, at) => {
        if (record.type === 'message') positions!.set(record.message.id, at);
      });
    }
    return positions.get(messageId) ?? -1;
  };
  return (messageId, path) => {
    const file = Object.hasOwn(ledger.files, path) ? ledger.files[path] : undefined;
    if (!file || file.deleted) return false;
    const revertedAt = lastRevert.get(path);
    return revertedAt === undefined || revertedAt < positionOf(messageId);
  };
}

function lineCount(content: unknown): number {
  if (typeof content !== 'string' || content === '') return 0;
  const lines = content.split('\n').length;
  return content.endsWith('\n') ? lines - 1 : lines;
}

function plural(count: number, one: string): string {
  return `${thousands(count)} ${one}${count === 1 ? '' : 's'}`;
}

function thousands(n: number): string {
  return String(Math.round(n)).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}
