import * as vscode from 'vscode';
import {
  ToolFailure,
  type LineRange,
  type ReadResult,
  type SearchMatch,
  type TextEdit,
  type WorkspacePort,
} from '../llm/workspace-port';
import { unifiedDiffPreview } from './diff-preview';
import { resolveInWorkspace, toWorkspaceRelative, type WorkspaceRoot } from './path-guard';
import { splitLines } from '../core/lines';

/**
 * The agent's {@link WorkspacePort} in VS Code: reads through `workspace.fs` (or the editor's
 * unsaved text), finds files with `workspace.findFiles`, writes with one `WorkspaceEdit` per tool
 * call so the user can undo it. Every path goes through `resolveInWorkspace`.
 */

export interface WorkspaceChange {
  readonly kind: 'created' | 'modified';
  /** Workspace-relative path. */
  readonly path: string;
  /** Short unified diff of the change. */
  readonly diff: string;
}

export interface VsCodeWorkspaceDeps {
  /** The open workspace folders. */
  readonly roots: () => WorkspaceRoot[];
  /** When true, writes happen without asking. */
  readonly autoApprove: () => boolean;
  /** Asks the user to allow a write; `detail` is a diff preview. */
  readonly confirm: (title: string, detail: string) => Promise<boolean>;
  /** Called with the workspace-relative path just before the agent writes it (to tell agent edits from user edits). */
  readonly beforeWrite?: (path: string) => void;
  /** Called after a successful write. */
  readonly onChanged?: (change: WorkspaceChange) => void;
}

const MAX_READ_BYTES = 5 * 1024 * 1024;
const MAX_SEARCH_BYTES = 1024 * 1024;
const MAX_READ_CHARS = 20_000;
const BINARY_SNIFF_BYTES = 8 * 1024;
const MAX_SEARCH_FILES = 20_000;
const EXCLUDE = '**/{node_modules,.git}/**';

type Loaded = { readonly text: string } | { readonly skipped: 'directory' | 'large' | 'binary' };

export class VsCodeWorkspace implements WorkspacePort {
  constructor(private readonly deps: VsCodeWorkspaceDeps) {}

  async readFile(path: string, range: LineRange, signal: AbortSignal): Promise<ReadResult> {
    const target = await resolveInWorkspace(this.deps.roots(), path);
    signal.throwIfAborted();
    const text = requireText(await load(vscode.Uri.file(target.absolute), MAX_READ_BYTES), target.relative);
    return sliceLines(target.relative, text, range);
  }

  async listFiles(glob: string, limit: number, signal: AbortSignal): Promise<{ files: string[]; truncated: boolean }> {
    const roots = requireRoots(this.deps.roots());
    const uris = await findFiles(roots, glob, limit + 1, signal);
    const files: string[] = [];
    for (const file of relativePaths(roots, uris)) {
      // findFiles follows symlinks; do not list files the agent may not read.
      if (await isReadable(roots, file.path)) files.push(file.path);
    }
    return { files: files.slice(0, limit), truncated: uris.length > limit };
  }

  async searchText(
    query: string,
    options: { readonly glob?: string; readonly isRegex: boolean; readonly caseSensitive: boolean; readonly limit: number },
    signal: AbortSignal,
  ): Promise<{ matches: SearchMatch[]; truncated: boolean }> {
    const roots = requireRoots(this.deps.roots());
    const pattern = toRegExp(query, options.isRegex, options.caseSensitive);
    const uris = await findFiles(roots, options.glob ?? '**/*', MAX_SEARCH_FILES, signal);
    const matches: SearchMatch[] = [];
    for (const file of relativePaths(roots, uris)) {
      signal.throwIfAborted();
      // findFiles follows symlinks; reading must stay inside the workspace.
      if (!(await isReadable(roots, file.path))) continue;
      const loaded = await load(file.uri, MAX_SEARCH_BYTES).catch(skipVanished);
      if (!loaded || !('text' in loaded)) continue;
      for (const [index, line] of splitLines(loaded.text).entries()) {
        if (!pattern.test(line)) continue;
        if (matches.length >= options.limit) return { matches, truncated: true };
        matches.push({ path: file.path, line: index + 1, text: line });
      }
    }
    // Hitting the file cap means some files were never searched.
    return { matches, truncated: uris.length >= MAX_SEARCH_FILES };
  }

  async createFile(path: string, content: string, signal: AbortSignal): Promise<{ path: string }> {
    const target = await resolveInWorkspace(this.deps.roots(), path, { mustExist: false });
    const uri = vscode.Uri.file(target.absolute);
    if (await exists(uri)) throw new ToolFailure(`${target.relative} already exists. Use edit_file to change it.`);
    const diff = unifiedDiffPreview('', content, target.relative);
    await this.approve(`Allow Longrun to create ${target.relative}?`, diff, signal, `create ${target.relative}`);

    const edit = new vscode.WorkspaceEdit();
    edit.createFile(uri, { contents: new TextEncoder().encode(content) });
    this.deps.beforeWrite?.(target.relative);
    if (!(await vscode.workspace.applyEdit(edit))) throw new ToolFailure(`VS Code could not create ${target.relative}.`);
    const document = await vscode.workspace.openTextDocument(uri);
    if (document.isDirty) await document.save();
    this.deps.onChanged?.({ kind: 'created', path: target.relative, diff });
    return { path: target.relative };
  }

  async editFile(
    path: string,
    edits: readonly TextEdit[],
    signal: AbortSignal,
  ): Promise<{ path: string; replacements: number }> {
    const target = await resolveInWorkspace(this.deps.roots(), path);
    if (edits.length === 0) throw new ToolFailure('No edits were given.');
    const uri = vscode.Uri.file(target.absolute);
    const open = openDocument(uri);
    // Refuse directories, huge and binary files before VS Code loads them as a document.
    if (!open) requireText(await load(uri, MAX_READ_BYTES), target.relative);
    const document = open ?? (await vscode.workspace.openTextDocument(uri));
    signal.throwIfAborted();

    const before = document.getText();
    const eol = document.eol === vscode.EndOfLine.CRLF ? '\r\n' : '\n';
    const located = locateEdits(before, edits, eol, target.relative);
    const diff = unifiedDiffPreview(before, applyLocated(before, located), target.relative);
    await this.approve(`Allow Longrun to edit ${target.relative}?`, diff, signal, `edit ${target.relative}`);

    // The user may have typed while the confirmation was open: the offsets would then be wrong.
    const current = document.isClosed ? await vscode.workspace.openTextDocument(uri) : document;
    if (current.getText() !== before) {
      throw new ToolFailure(`${target.relative} changed while waiting for approval. Read it again and redo the edit.`);
    }
    const edit = new vscode.WorkspaceEdit();
    for (const l of located) {
      edit.replace(uri, new vscode.Range(current.positionAt(l.start), current.positionAt(l.end)), l.newText);
    }
    this.deps.beforeWrite?.(target.relative);
    if (!(await vscode.workspace.applyEdit(edit))) {
      throw new ToolFailure(`VS Code could not apply the edit to ${target.relative}.`);
    }
    await current.save();
    this.deps.onChanged?.({ kind: 'modified', path: target.relative, diff });
    return { path: target.relative, replacements: located.length };
  }

  private async approve(title: string, detail: string, signal: AbortSignal, what: string): Promise<void> {
    if (this.deps.autoApprove()) return;
    const allowed = await this.deps.confirm(title, detail);
    signal.throwIfAborted();
    if (!allowed) throw new ToolFailure(`The user declined to ${what}. Ask them how to proceed instead of retrying.`);
  }
}

function requireRoots(roots: WorkspaceRoot[]): WorkspaceRoot[] {
  if (roots.length === 0) throw new ToolFailure('No workspace folder is open, so there are no files to work with.');
  return roots;
}

function openDocument(uri: vscode.Uri): vscode.TextDocument | undefined {
  return vscode.workspace.textDocuments.find((d) => d.uri.scheme === 'file' && d.uri.fsPath === uri.fsPath);
}

async function exists(uri: vscode.Uri): Promise<boolean> {
  try {
    await vscode.workspace.fs.stat(uri);
    return true;
  } catch (error) {
    if (error instanceof vscode.FileSystemError && error.code === 'FileNotFound') return false;
    throw error;
  }
}

/** The file's text: the editor's unsaved text when it has some, else the file on disk. */
async function load(uri: vscode.Uri, maxBytes: number): Promise<Loaded> {
  const open = openDocument(uri);
  if (open?.isDirty) return { text: open.getText() };
  const stat = await vscode.workspace.fs.stat(uri);
  if (stat.type & vscode.FileType.Directory) return { skipped: 'directory' };
  if (stat.size > maxBytes) return { skipped: 'large' };
  const bytes = await vscode.workspace.fs.readFile(uri);
  if (bytes.subarray(0, BINARY_SNIFF_BYTES).includes(0)) return { skipped: 'binary' };
  return { text: new TextDecoder('utf-8').decode(bytes) };
}

function requireText(loaded: Loaded, path: string): string {
  if ('text' in loaded) return loaded.text;
  switch (loaded.skipped) {
    case 'directory':
      throw new ToolFailure(`${path} is a directory. Use list_files to see what it contains.`);
    case 'large':
      throw new ToolFailure(`${path} is larger than 5 MB and cannot be read. Use search_text to find what you need in it.`);
    case 'binary':
      throw new ToolFailure(`${path} is a binary file; only text files can be read.`);
  }
}

/** A file found but deleted (or unreadable) before it was read is skipped by the search. */
function skipVanished(error: unknown): undefined {
  if (error instanceof vscode.FileSystemError) return undefined;
  throw error;
}

async function isReadable(roots: readonly WorkspaceRoot[], path: string): Promise<boolean> {
  try {
    await resolveInWorkspace(roots, path);
    return true;
  } catch (error) {
    if (error instanceof ToolFailure) return false;
    throw error;
  }
}

async function findFiles(
  roots: readonly WorkspaceRoot[],
  glob: string,
  maxResults: number,
  signal: AbortSignal,
): Promise<vscode.Uri[]> {
  signal.throwIfAborted();
  const source = new vscode.CancellationTokenSource();
  const cancel = (): void => source.cancel();
  signal.addEventListener('abort', cancel, { once: true });
  try {
    const uris = await vscode.workspace.findFiles(toGlobPattern(roots, glob), EXCLUDE, maxResults, source.token);
    signal.throwIfAborted();
    return uris;
  } finally {
    signal.removeEventListener('abort', cancel);
    source.dispose();
  }
}

/** A string glob matches in every folder; `folder-name/…` in a multi-root workspace targets one. */
function toGlobPattern(roots: readonly WorkspaceRoot[], glob: string): vscode.GlobPattern {
  let pattern = glob.trim().replace(/\\/g, '/');
  while (pattern.startsWith('./')) pattern = pattern.slice(2);
  if (pattern === '') throw new ToolFailure('The glob pattern is empty.');
  if (roots.length > 1) {
    const byName = [...roots].sort((a, b) => b.name.length - a.name.length);
    const root = byName.find((r) => pattern.startsWith(`${r.name}/`));
    if (root) return new vscode.RelativePattern(vscode.Uri.file(root.fsPath), pattern.slice(root.name.length + 1));
  }
  return pattern;
}

function relativePaths(roots: readonly WorkspaceRoot[], uris: readonly vscode.Uri[]): { uri: vscode.Uri; path: string }[] {
  const files: { uri: vscode.Uri; path: string }[] = [];
  for (const uri of uris) {
    const path = toWorkspaceRelative(roots, uri.fsPath);
    if (path !== undefined) files.push({ uri, path });
  }
  return files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
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

interface Located {
  readonly start: number;
  readonly end: number;
  readonly newText: string;
}

/** Where each edit applies in `text`; every oldText must occur exactly once and edits may not overlap. */
function locateEdits(text: string, edits: readonly TextEdit[], eol: string, path: string): Located[] {
  // The model sees LF lines; the document may use CRLF.
  const withEol = (s: string): string => s.replace(/\r\n/g, '\n').replace(/\n/g, eol);
  const located = edits.map((edit, index) => {
    const oldText = withEol(edit.oldText);
    const label = edits.length > 1 ? `Edit ${index + 1}: ` : '';
    if (oldText === '') throw new ToolFailure(`${label}oldText is empty.`);
    const count = countOccurrences(text, oldText);
    if (count === 0) {
      throw new ToolFailure(`${label}oldText was not found in ${path}. Read the file again and copy the text exactly.`);
    }
    if (count > 1) {
      throw new ToolFailure(
        `${label}oldText occurs ${count} times in ${path}. Include more surrounding lines so it occurs exactly once.`,
      );
    }
    const start = text.indexOf(oldText);
    return { start, end: start + oldText.length, newText: withEol(edit.newText), index };
  });
  located.sort((a, b) => a.start - b.start);
  for (let i = 1; i < located.length; i++) {
    const previous = located[i - 1];
    const next = located[i];
    if (previous && next && next.start < previous.end) {
      throw new ToolFailure(`Edits ${previous.index + 1} and ${next.index + 1} overlap. Combine them into one edit.`);
    }
  }
  return located;
}

function countOccurrences(text: string, part: string): number {
  let count = 0;
  // Overlapping occurrences count too: they make the match just as ambiguous.
  for (let at = text.indexOf(part); at !== -1; at = text.indexOf(part, at + 1)) count++;
  return count;
}

function applyLocated(text: string, located: readonly Located[]): string {
  let result = '';
  let at = 0;
  for (const l of located) {
    result += text.slice(at, l.start) + l.newText;
    at = l.end;
  }
  return result + text.slice(at);
}
