import * as path from 'node:path';
import {
  ToolFailure,
  type LineRange,
  type ReadResult,
  type SearchMatch,
  type TextEdit,
  type WorkspacePort,
  type WrittenText,
} from '../../llm/workspace-port';
import { splitLines } from '../../core/lines';
import {
  abortable,
  createConfined,
  kindOfPath,
  overwriteConfined,
  readConfined,
  readManyConfined,
  removeConfined,
  type ConfinedRead,
} from './confined-files';
import { changeIsOnlyTheReplacements, decideApproval } from './approval-policy';
import { unifiedDiff } from './diff-preview';
import { Emitter, type Event } from '../emitter';
import { applyReplacements, locateEdits, type Replacement } from './exact-edits';
import { lexicalTarget, locateReal, resolveInWorkspace, type RealLocation, type ResolvedPath, type WorkspaceRoot } from './path-guard';
import { protectionOf } from './protected-paths';
import { SearchTimedOut, TextSearch, type SearchedFile } from './text-search';

/**
 * The agent's {@link WorkspacePort} over the workspace folders on disk. Free of `vscode`: what only
 * the editor knows (finding files, unsaved text) comes through an {@link EditorPort};
 * `workspace-tools.ts` supplies VS Code's, tests a fake one.
 *
 * Files are read and written through `confined-files.ts`, which checks the handle it opened, so a
 * folder swapped for a link at any moment (during the approval dialog included) cannot lead a read
 * or a write outside the workspace. Writes go to disk directly, not through a save in the editor:
 * an editor save runs formatters and "code actions on save" and normalizes line endings, which would
 * change more than the replacement the user approved. A file open in the editor without unsaved
 * changes reloads from disk (undo included); one with unsaved changes is edited in the editor and
 * left unsaved, so the user's own unsaved text is never written for them.
 */

/** What the agent's tools need from the editor. */
export interface EditorPort {
  /**
   * Absolute paths of files matching `pattern`, as VS Code's `findFiles` finds them (symlinks
   * followed; `node_modules` and `.git` skipped); `root` when the pattern is for one folder only.
   */
  findFiles(root: WorkspaceRoot | undefined, pattern: string, maxResults: number, signal: AbortSignal): Promise<string[]>;
  /** The editor's text of the file when it has unsaved changes; `undefined` otherwise. */
  unsavedText(absolute: string): string | undefined;
  /**
   * Applies `replacements` (offsets in `expected`) to the file's unsaved text in the editor, without
   * saving; false when that text is no longer `expected` or the editor refused.
   */
  editUnsaved(absolute: string, expected: string, replacements: readonly Replacement[]): Promise<boolean>;
}

export interface WorkspaceChange {
  readonly kind: 'created' | 'modified';
  /** Workspace-relative path. */
  readonly path: string;
  /** The whole change as a unified diff. */
  readonly diff: string;
}

/** A write the user is asked to approve: the whole file as it is and as it will be. */
export interface ApprovalRequest {
  readonly verb: 'create' | 'edit';
  /** Workspace-relative path. */
  readonly path: string;
  /** The question, with why it is asked although edits may be auto-approved (a protected file …). */
  readonly question: string;
  /** The text the change was computed from (empty for a new file). */
  readonly before: string;
  /** The text once the change is applied: exactly what is written when the user approves. */
  readonly after: string;
}

export interface WorkspaceFilesDeps {
  /** The open workspace folders. */
  readonly roots: () => WorkspaceRoot[];
  /** When true, writes happen without asking, except to protected files (see `protected-paths.ts`). */
  readonly autoApprove: () => boolean;
  /** `longrun.agent.protectedPaths`: more globs whose files always need approval. */
  readonly protectedPaths?: () => readonly string[];
  /**
   * Whether some command may run without asking (`longrun.agent.allowedCommands` is not empty):
   * the files that decide what commands do (`command-files.ts`) then always need approval.
   */
  readonly commandsRunUnasked?: () => boolean;
  /** Asks the user to allow a write, showing the whole change; true to write it. */
  readonly confirm: (request: ApprovalRequest, signal: AbortSignal) => Promise<boolean>;
  /** Called with the workspace-relative path just before the agent writes it (to tell agent edits from user edits). */
  readonly beforeWrite?: (path: string) => void;
  readonly editor: EditorPort;
  /** Longest a `searchText` may take; default {@link SEARCH_DEADLINE_MS}. */
  readonly searchDeadlineMs?: number;
}

/** Longest a search may take before it is stopped and reported to the model. */
export const SEARCH_DEADLINE_MS = 10_000;

const MAX_READ_BYTES = 5 * 1024 * 1024;
const MAX_SEARCH_BYTES = 1024 * 1024;
const MAX_READ_CHARS = 20_000;
const BINARY_SNIFF_BYTES = 8 * 1024;
const MAX_SEARCH_FILES = 20_000;
/** Files read at once and handed to the search worker together. */
const SEARCH_BATCH = 64;

const utf8 = new TextDecoder('utf-8');
/** For edits: a file that is not valid UTF-8 would be damaged outside the edit by a round trip. Keeps a BOM. */
const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const encoder = new TextEncoder();

export class WorkspaceFiles implements WorkspacePort {
  private readonly wrote = new Emitter<WorkspaceChange>();
  /** Fires after each successful write, with the whole change, so the chat can show it. */
  readonly onDidWrite: Event<WorkspaceChange> = this.wrote.event;

  constructor(private readonly deps: WorkspaceFilesDeps) {}

  async readFile(path: string, range: LineRange, signal: AbortSignal): Promise<ReadResult> {
    const target = await resolveInWorkspace(this.deps.roots(), path);
    const unsaved = this.deps.editor.unsavedText(target.absolute);
    const text = unsaved ?? utf8.decode(requireText(await readConfined(target, MAX_READ_BYTES, signal), target.relative));
    return sliceLines(target.relative, text, range);
  }

  async listFiles(glob: string, limit: number, signal: AbortSignal): Promise<{ files: string[]; truncated: boolean }> {
    const roots = requireRoots(this.deps.roots());
    const found = await this.find(roots, glob, limit + 1, signal);
    const files: string[] = [];
    for (const file of found) {
      signal.throwIfAborted();
      // findFiles follows symlinks; do not list files the agent may not read.
      if (await isRegularInWorkspace(file)) files.push(file.relative);
    }
    return { files: files.slice(0, limit), truncated: found.length > limit };
  }

  async searchText(
    query: string,
    options: { readonly glob?: string; readonly isRegex: boolean; readonly caseSensitive: boolean; readonly limit: number },
    signal: AbortSignal,
  ): Promise<{ matches: SearchMatch[]; truncated: boolean }> {
    const roots = requireRoots(this.deps.roots());
    const pattern = toRegExp(query, options.isRegex, options.caseSensitive);
    const deadlineMs = this.deps.searchDeadlineMs ?? SEARCH_DEADLINE_MS;
    const search = new TextSearch(pattern, deadlineMs, signal);
    try {
      const files = await stopWith(search, this.find(roots, options.glob ?? '**/*', MAX_SEARCH_FILES, signal));
      const matches: SearchMatch[] = [];
      let next = this.loadBatch(files.slice(0, SEARCH_BATCH), signal);
      for (let at = 0; at < files.length; at += SEARCH_BATCH) {
        const batch = await stopWith(search, next);
        // Read the next batch while the worker searches this one.
        next = this.loadBatch(files.slice(at + SEARCH_BATCH, at + 2 * SEARCH_BATCH), signal);
        next.catch(() => undefined);
        matches.push(...(await search.search(batch, options.limit + 1 - matches.length)));
        if (matches.length > options.limit) return { matches: matches.slice(0, options.limit), truncated: true };
      }
      // Hitting the file cap means some files were never searched.
      return { matches, truncated: files.length >= MAX_SEARCH_FILES };
    } catch (error) {
      if (!(error instanceof SearchTimedOut)) throw error;
      const seconds = Math.round(deadlineMs / 100) / 10;
      throw new ToolFailure(
        options.isRegex && error.matching
          ? `The pattern took longer than ${seconds} s and the search was stopped; simplify it (nested quantifiers such as (a+)+ can take exponential time) or narrow the glob.`
          : `The search took longer than ${seconds} s and was stopped; narrow it with a glob.`,
      );
    } finally {
      search.dispose();
    }
  }

  async createFile(path: string, content: string, signal: AbortSignal): Promise<{ path: string; written: WrittenText }> {
    const target = await resolveInWorkspace(this.deps.roots(), path, { mustExist: false });
    const where = await locateReal(target.root, target.absolute, target.relative);
    if (where.exists) throw new ToolFailure(`${target.relative} already exists. Use edit_file to change it.`);
    await this.approve(target, where, { verb: 'create', before: '', after: content, onlyTheReplacements: true }, signal);

    this.deps.beforeWrite?.(target.relative);
    if ((await createConfined(target, encoder.encode(content), signal)) === 'exists') {
      throw new ToolFailure(`${target.relative} was created by someone else while waiting for approval. Read it, then use edit_file.`);
    }
    this.wrote.fire({ kind: 'created', path: target.relative, diff: unifiedDiff('', content, target.relative) });
    return { path: target.relative, written: { before: '', after: content } };
  }

  async editFile(
    path: string,
    edits: readonly TextEdit[],
    signal: AbortSignal,
  ): Promise<{ path: string; replacements: number; unsaved?: boolean; written?: WrittenText }> {
    const target = await resolveInWorkspace(this.deps.roots(), path);
    if (edits.length === 0) throw new ToolFailure('No edits were given.');
    const unsaved = this.deps.editor.unsavedText(target.absolute);
    // The bytes on disk, kept to check that the file still holds them when the edit is written.
    const bytes = unsaved === undefined ? requireText(await readConfined(target, MAX_READ_BYTES, signal), target.relative) : undefined;
    const before = unsaved ?? decodeForEdit(bytes ?? new Uint8Array(), target.relative);

    const replacements = locateEdits(before, edits, target.relative);
    const after = applyReplacements(before, replacements);
    const onlyTheReplacements = changeIsOnlyTheReplacements(before, after, edits, replacements);
    await this.approve(
      target,
      await locateReal(target.root, target.absolute, target.relative),
      { verb: 'edit', before, after, onlyTheReplacements },
      signal,
    );

    this.deps.beforeWrite?.(target.relative);
    const changedMeanwhile = `${target.relative} changed while waiting for approval. Read it again and redo the edit.`;
    if (bytes === undefined) {
      if (!(await this.deps.editor.editUnsaved(target.absolute, before, replacements))) throw new ToolFailure(changedMeanwhile);
    } else if ((await overwriteConfined(target, bytes, encoder.encode(after), signal)) === 'changed') {
      throw new ToolFailure(changedMeanwhile);
    }
    this.wrote.fire({ kind: 'modified', path: target.relative, diff: unifiedDiff(before, after, target.relative) });
    // An edit left unsaved in the editor is the editor's to undo; one written to disk can be reverted from its record.
    return {
      path: target.relative,
      replacements: replacements.length,
      ...(bytes === undefined ? { unsaved: true } : { written: { before, after } }),
    };
  }

  /**
   * A file's text as a revert reads it: the editor's unsaved text when there is some (`unsaved`),
   * else the file on disk; undefined when the file does not exist. Confined like every read.
   */
  async textForRevert(path: string, signal: AbortSignal): Promise<{ text: string; unsaved: boolean } | undefined> {
    const target = await resolveInWorkspace(this.deps.roots(), path, { mustExist: false });
    const unsaved = this.deps.editor.unsavedText(target.absolute);
    if (unsaved !== undefined) return { text: unsaved, unsaved: true };
    if (!(await locateReal(target.root, target.absolute, target.relative)).exists) return undefined;
    return { text: decodeForEdit(requireText(await readConfined(target, MAX_READ_BYTES, signal), target.relative), target.relative), unsaved: false };
  }

  /**
   * Writes a revert the user asked for (their click is the approval): `text` replaces the file, or
   * the file is deleted when `text` is undefined, provided the file still holds exactly `expected`;
   * false when it changed meanwhile, and nothing is written.
   */
  async writeRevert(path: string, expected: string, text: string | undefined, signal: AbortSignal): Promise<boolean> {
    const target = await resolveInWorkspace(this.deps.roots(), path);
    this.deps.beforeWrite?.(target.relative);
    const done =
      text === undefined
        ? await removeConfined(target, encoder.encode(expected), signal)
        : await overwriteConfined(target, encoder.encode(expected), encoder.encode(text), signal);
    return done !== 'changed';
  }

  /**
   * Asks unless edits are auto-approved; a protected file, or a change beyond the replacements, is
   * always asked for, with the reason (see `approval-policy.ts`). Both the path as asked and its
   * real path are checked, so a link to `.git` is still `.git`.
   */
  private async approve(
    target: ResolvedPath,
    where: RealLocation,
    change: { readonly verb: 'create' | 'edit'; readonly before: string; readonly after: string; readonly onlyTheReplacements: boolean },
    signal: AbortSignal,
  ): Promise<void> {
    const { verb, before, after } = change;
    const names = [path.relative(target.root.fsPath, target.absolute), path.relative(where.realRoot, where.real)];
    const protection = protectionOf(names, this.deps.protectedPaths?.() ?? [], target.relative, this.deps.commandsRunUnasked?.() ?? false);
    const decision = decideApproval({
      verb,
      path: target.relative,
      autoApprove: this.deps.autoApprove(),
      ...(protection ? { protection } : {}),
      onlyTheReplacements: change.onlyTheReplacements,
    });
    if (!decision.ask) return;
    // The question may not close by itself when Stop is pressed, but Stop must not wait for it.
    const allowed = await abortable(signal, () =>
      this.deps.confirm({ verb, path: target.relative, question: decision.question, before, after }, signal),
    );
    signal.throwIfAborted();
    if (!allowed) throw new ToolFailure(`The user declined to ${verb} ${target.relative}. Ask them how to proceed instead of retrying.`);
  }

  /** The files matching `glob`, sorted by their workspace-relative path; checked only where they are read. */
  private async find(roots: readonly WorkspaceRoot[], glob: string, maxResults: number, signal: AbortSignal): Promise<ResolvedPath[]> {
    const { root, pattern } = splitGlob(roots, glob);
    const found = await abortable(signal, () => this.deps.editor.findFiles(root, pattern, maxResults, signal));
    const files: ResolvedPath[] = [];
    for (const absolute of found) {
      const target = lexicalTarget(roots, absolute);
      if (target) files.push(target);
    }
    return files.sort((a, b) => (a.relative < b.relative ? -1 : a.relative > b.relative ? 1 : 0));
  }

  /** The searchable text of each file, skipping what cannot be searched (gone, outside, binary, large, not a file). */
  private async loadBatch(files: readonly ResolvedPath[], signal: AbortSignal): Promise<SearchedFile[]> {
    const unsaved = files.map((f) => this.deps.editor.unsavedText(f.absolute));
    const fromDisk = await readManyConfined(
      files.filter((_, i) => unsaved[i] === undefined),
      MAX_SEARCH_BYTES,
      signal,
    );
    const loaded: SearchedFile[] = [];
    let next = 0;
    files.forEach((file, i) => {
      const text = unsaved[i];
      if (text !== undefined) {
        loaded.push({ path: file.relative, text });
        return;
      }
      const read = fromDisk[next++];
      if (read && 'bytes' in read && !isBinary(read.bytes)) loaded.push({ path: file.relative, text: utf8.decode(read.bytes) });
    });
    return loaded;
  }
}

/** Waits for `work` unless the search stops first (deadline or Stop), which then wins. */
function stopWith<T>(search: TextSearch, work: Promise<T>): Promise<T> {
  work.catch(() => undefined);
  return Promise.race([work, search.stopped]);
}

function requireRoots(roots: WorkspaceRoot[]): WorkspaceRoot[] {
  if (roots.length === 0) throw new ToolFailure('No workspace folder is open, so there are no files to work with.');
  return roots;
}

function isBinary(bytes: Uint8Array): boolean {
  return bytes.subarray(0, BINARY_SNIFF_BYTES).includes(0);
}

/** The file's bytes when it is a readable text file; a {@link ToolFailure} saying why not otherwise. */
function requireText(read: ConfinedRead, path: string): Uint8Array {
  if ('bytes' in read) {
    if (isBinary(read.bytes)) throw new ToolFailure(`${path} is a binary file; only text files can be read.`);
    return read.bytes;
  }
  if (read.skipped === 'large') {
    throw new ToolFailure(`${path} is larger than 5 MB and cannot be read. Use search_text to find what you need in it.`);
  }
  if (read.kind === 'directory') throw new ToolFailure(`${path} is a directory. Use list_files to see what it contains.`);
  throw new ToolFailure(`${path} is a ${read.kind}, not a regular file; only regular files can be read or edited.`);
}

function decodeForEdit(bytes: Uint8Array, path: string): string {
  try {
    return strictUtf8.decode(bytes);
  } catch {
    throw new ToolFailure(`${path} is not valid UTF-8 text, so it cannot be edited without damaging it. Ask the user to edit it.`);
  }
}

function isFileSystemError(error: unknown): boolean {
  return error instanceof Error && 'code' in error && typeof error.code === 'string';
}

async function isRegularInWorkspace(file: ResolvedPath): Promise<boolean> {
  try {
    const { real } = await locateReal(file.root, file.absolute, file.relative);
    return (await kindOfPath(real)) === 'file';
  } catch (error) {
    if (error instanceof ToolFailure || isFileSystemError(error)) return false;
    throw error;
  }
}

/** A string glob matches in every folder; `folder-name/…` in a multi-root workspace targets one. */
function splitGlob(roots: readonly WorkspaceRoot[], glob: string): { root: WorkspaceRoot | undefined; pattern: string } {
  let pattern = glob.trim().replace(/\\/g, '/');
  while (pattern.startsWith('./')) pattern = pattern.slice(2);
  if (pattern === '') throw new ToolFailure('The glob pattern is empty.');
  if (roots.length > 1) {
    const byName = [...roots].sort((a, b) => b.name.length - a.name.length);
    const root = byName.find((r) => pattern.startsWith(`${r.name}/`));
    if (root) return { root, pattern: pattern.slice(root.name.length + 1) };
  }
  return { root: undefined, pattern };
}

function toRegExp(query: string, isRegex: boolean, caseSensitive: boolean): RegExp {
  if (query === '') throw new ToolFailure('The search query is empty.');
  const flags = caseSensitive ? '' : 'i'; // no `g`: test() must not keep state between lines
  if (!isRegex) return new RegExp(query.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), flags);
  try {
    return new RegExp(query, flags);
  } catch (error) {
    // SyntaxError messages read "Invalid regular expression: /x(/i: Unterminated group".
    const message = error instanceof Error ? error.message : `Invalid regular expression: ${String(error)}`;
    throw new ToolFailure(`${message}. Set isRegex to false to search for the text literally.`);
  }
}

/** The requested lines, cut at a line boundary to {@link MAX_READ_CHARS} (mid-line only for a single huge line). */
function sliceLines(path: string, text: string, range: LineRange): ReadResult {
  const lines = splitLines(text);
  const total = lines.length;
  if (total === 0) return { path, text: '', startLine: 1, endLine: 0, totalLines: 0, truncated: false };
  const start = Math.max(1, Math.floor(range.start ?? 1));
  if (start > total) throw new ToolFailure(`startLine ${start} is past the end of ${path} (${total} lines).`);
  const end = Math.min(total, Math.floor(range.end ?? total));
  if (end < start) throw new ToolFailure(`endLine ${end} is before startLine ${start}.`);

  const selected = lines.slice(start - 1, end);
  let kept = 0;
  let length = 0;
  for (const line of selected) {
    const added = line.length + (kept > 0 ? 1 : 0);
    if (length + added > MAX_READ_CHARS) break;
    length += added;
    kept++;
  }
  if (kept === selected.length) {
    return { path, text: selected.join('\n'), startLine: start, endLine: end, totalLines: total, truncated: false };
  }
  const shown = kept > 0 ? selected.slice(0, kept).join('\n') : (selected[0] ?? '').slice(0, MAX_READ_CHARS);
  const last = start + Math.max(kept, 1) - 1;
  return { path, text: shown, startLine: start, endLine: last, totalLines: total, truncated: true };
}
