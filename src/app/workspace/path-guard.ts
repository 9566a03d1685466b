import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { ToolFailure } from '../../llm/workspace-port';

/**
 * Confines the agent's paths to the workspace folders. Pure Node (no `vscode` import) so it can be
 * tested on real directories and symlinks; `workspace-files.ts` calls it for every path.
 *
 * Paths shown to the model are POSIX and workspace-relative: `src/a.ts` in a single-root
 * workspace, `folder-name/src/a.ts` in a multi-root one.
 */

/** One workspace folder, as `vscode.workspace.workspaceFolders` describes it. */
export interface WorkspaceRoot {
  /** The folder's display name; the first path segment in a multi-root workspace. */
  name: string;
  /** Absolute path of the folder on disk. */
  fsPath: string;
}

export interface ResolvedPath {
  /** Absolute path built lexically from the root (symlinks not followed), as editors know the file. */
  absolute: string;
  /** POSIX path as shown to the model. */
  relative: string;
  root: WorkspaceRoot;
}

/** Symlink hops followed through dangling links before giving up, as the OS does (ELOOP). */
const MAX_LINK_HOPS = 40;

/**
 * Resolves a path the model asked for to a file inside a workspace folder.
 *
 * Accepts workspace-relative paths (`src/a.ts`, `./src/a.ts`, `src\a.ts`), absolute paths inside a
 * folder, and in a multi-root workspace the folder name as first segment (`api/src/a.ts`).
 * Refuses, with a {@link ToolFailure} the model can act on: no open folder, an empty path, NUL bytes,
 * a path outside every folder (absolute, or escaping with `..`), and a path whose real location —
 * after following symlinks at any level, including a final or dangling link and the folder itself —
 * lies outside its folder.
 *
 * @param options.mustExist when true (the default) a missing file is a `ToolFailure` too.
 */
export async function resolveInWorkspace(
  roots: readonly WorkspaceRoot[],
  requested: string,
  options: { mustExist?: boolean } = {},
): Promise<ResolvedPath> {
  const mustExist = options.mustExist ?? true;
  if (roots.length === 0) {
    throw new ToolFailure('No workspace folder is open, so there are no files to work with.');
  }
  if (requested.trim() === '') throw new ToolFailure('The path is empty.');
  if (requested.includes('\0')) throw new ToolFailure('The path contains a NUL byte.');

  const slashed = requested.replace(/\\/g, '/');
  const { root, absolute } = path.isAbsolute(slashed)
    ? await locateAbsolute(roots, path.resolve(slashed), requested)
    : locateRelative(roots, slashed, requested);

  const { exists } = await locateReal(root, absolute, requested);
  const relative = display(roots, root, path.relative(root.fsPath, absolute));
  if (mustExist && !exists) throw new ToolFailure(`File not found: ${relative}`);
  return { absolute, relative, root };
}

/** Where a path under a workspace folder really is at the moment it was checked. */
export interface RealLocation {
  /** The folder's own real path. */
  readonly realRoot: string;
  /** The file's real path: every symlink followed; for a missing file, its deepest existing ancestor's real path and the rest. */
  readonly real: string;
  readonly exists: boolean;
}

/**
 * Follows every symlink of `absolute` (a path under `root`, as {@link resolveInWorkspace} gives it)
 * now, and refuses with a {@link ToolFailure} when it leads outside the folder. A check is only
 * true when it is made: callers that open or write a file check again at that moment, and check
 * the opened handle (see `confined-files.ts`).
 *
 * @param requested the path as the model wrote it, for the message.
 */
export async function locateReal(root: WorkspaceRoot, absolute: string, requested: string): Promise<RealLocation> {
  const realRoot = (await realLocation(root.fsPath)).real;
  const { real, exists } = await realLocation(absolute);
  if (!isInside(realRoot, real)) {
    throw new ToolFailure(`"${requested}" goes through a symbolic link that points outside the workspace folder, which is not allowed.`);
  }
  return { realRoot, real, exists };
}

/**
 * The path the model would use for `absolute` (for editor events), or `undefined` when it lies
 * outside every folder. Lexical only: symlinks are not followed.
 */
export function toWorkspaceRelative(roots: readonly WorkspaceRoot[], absolute: string): string | undefined {
  return lexicalTarget(roots, absolute)?.relative;
}

/**
 * `absolute` as a {@link ResolvedPath}, without looking at the disk: for paths the editor found,
 * which are checked where they are used (`confined-files.ts`). `undefined` outside every folder.
 */
export function lexicalTarget(roots: readonly WorkspaceRoot[], absolute: string): ResolvedPath | undefined {
  const resolved = path.resolve(absolute);
  const root = deepestContaining(roots, resolved, (r) => r.fsPath);
  return root ? { absolute: resolved, relative: display(roots, root, path.relative(root.fsPath, resolved)), root } : undefined;
}

function display(roots: readonly WorkspaceRoot[], root: WorkspaceRoot, nativeRelative: string): string {
  const rel = nativeRelative.split(path.sep).join('/');
  if (roots.length === 1) return rel === '' ? '.' : rel;
  return rel === '' ? root.name : `${root.name}/${rel}`;
}

/** True when `child` is `parent` or below it (both absolute, native). */
export function isInside(parent: string, child: string): boolean {
  const rel = path.relative(parent, child);
  if (rel === '') return true;
  if (path.isAbsolute(rel)) return false; // another drive on Windows
  return rel !== '..' && !rel.startsWith(`..${path.sep}`);
}

/** The root holding `absolute` whose folder is deepest (nested folders are allowed in VS Code). */
function deepestContaining(roots: readonly WorkspaceRoot[], absolute: string, folderOf: (root: WorkspaceRoot) => string): WorkspaceRoot | undefined {
  let best: WorkspaceRoot | undefined;
  let bestLength = -1;
  for (const root of roots) {
    const folder = path.resolve(folderOf(root));
    if (isInside(folder, absolute) && folder.length > bestLength) {
      best = root;
      bestLength = folder.length;
    }
  }
  return best;
}

async function locateAbsolute(
  roots: readonly WorkspaceRoot[],
  absolute: string,
  requested: string,
): Promise<{ root: WorkspaceRoot; absolute: string }> {
  const lexical = deepestContaining(roots, absolute, (r) => r.fsPath);
  if (lexical) return { root: lexical, absolute };
  // The model may have seen a real path (say /private/tmp/x for a folder opened as /tmp/x):
  // accept it and rebuild it under the folder's own path.
  const real = new Map<WorkspaceRoot, string>();
  for (const root of roots) real.set(root, (await realLocation(root.fsPath)).real);
  const byReal = deepestContaining(roots, absolute, (r) => real.get(r) ?? r.fsPath);
  if (byReal) {
    const rel = path.relative(real.get(byReal) ?? byReal.fsPath, absolute);
    return { root: byReal, absolute: path.join(path.resolve(byReal.fsPath), rel) };
  }
  throw new ToolFailure(`"${requested}" is outside the workspace. Use a path relative to the workspace${describeRoots(roots)}.`);
}

function locateRelative(roots: readonly WorkspaceRoot[], slashed: string, requested: string): { root: WorkspaceRoot; absolute: string } {
  let root: WorkspaceRoot | undefined;
  let rest = slashed;
  while (rest.startsWith('./')) rest = rest.slice(2);
  if (roots.length === 1) {
    root = roots[0];
  } else {
    // Longest name first, so a folder named `a/b` wins over one named `a`.
    const byName = [...roots].sort((a, b) => b.name.length - a.name.length);
    root = byName.find((r) => rest === r.name || rest.startsWith(`${r.name}/`));
    if (!root) {
      throw new ToolFailure(
        `"${requested}" does not start with a workspace folder name. This workspace has several folders; ` +
          `write paths as "<folder>/<path>"${describeRoots(roots)}.`,
      );
    }
    rest = rest.slice(root.name.length).replace(/^\/+/, '');
  }
  if (!root) throw new ToolFailure('No workspace folder is open, so there are no files to work with.');
  const base = path.resolve(root.fsPath);
  const absolute = path.resolve(base, ...rest.split('/').filter((s) => s !== ''));
  if (!isInside(base, absolute)) {
    throw new ToolFailure(`"${requested}" points outside the workspace folder (it escapes with "..").`);
  }
  return { root, absolute };
}

function describeRoots(roots: readonly WorkspaceRoot[]): string {
  return roots.length > 1 ? ` (folders: ${roots.map((r) => r.name).join(', ')})` : '';
}

function errorCode(error: unknown): string | undefined {
  return error instanceof Error && 'code' in error && typeof error.code === 'string' ? error.code : undefined;
}

/**
 * Where `p` really is once every symlink is followed. For a path that does not exist yet, the
 * deepest existing ancestor is resolved and the missing tail appended; a dangling link is followed
 * to its target (which may itself be missing), so a link pointing outside is caught before the
 * file is created through it.
 */
async function realLocation(p: string, hops = 0): Promise<{ real: string; exists: boolean }> {
  try {
    return { real: await fs.realpath(p), exists: true };
  } catch (error) {
    const code = errorCode(error);
    if (code === 'ELOOP') throw new ToolFailure('The path goes through a symbolic link loop.');
    if (code === 'EACCES' || code === 'EPERM') throw new ToolFailure('Permission denied while resolving the path.');
    if (code !== 'ENOENT' && code !== 'ENOTDIR') throw error;
  }
  let link: string | undefined;
  try {
    const stat = await fs.lstat(p);
    if (stat.isSymbolicLink()) link = await fs.readlink(p);
  } catch (error) {
    const code = errorCode(error);
    if (code === 'EINVAL') {
      // A link a moment ago, something else now: the path is being changed; look again.
      if (hops >= MAX_LINK_HOPS) throw new ToolFailure('The path kept changing while it was being resolved.');
      return realLocation(p, hops + 1);
    }
    if (code !== 'ENOENT' && code !== 'ENOTDIR') throw error;
  }
  if (link !== undefined) {
    if (hops >= MAX_LINK_HOPS) throw new ToolFailure('The path goes through a symbolic link loop.');
    const target = await realLocation(path.resolve(path.dirname(p), link), hops + 1);
    return { real: target.real, exists: false };
  }
  const parent = path.dirname(p);
  if (parent === p) return { real: p, exists: false };
  const resolvedParent = await realLocation(parent, hops);
  return { real: path.join(resolvedParent.real, path.basename(p)), exists: false };
}
