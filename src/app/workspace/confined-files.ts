import { constants, type Stats } from 'node:fs';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { ToolFailure } from '../../llm/workspace-port';
import { isInside, locateReal, type ResolvedPath } from './path-guard';

/**
 * Reads and writes workspace files so that what is read or written is the file inside the workspace
 * at the moment of use, never one a swapped directory or link leads to. Pure Node (no `vscode`).
 *
 * Checking a path and then opening it leaves a window in which a directory on the path can be
 * replaced by a symlink to somewhere else. So every operation opens first and checks what it opened:
 *
 * - On Linux the parent directory is opened (`O_DIRECTORY`, `O_NOFOLLOW`) and `/proc/self/fd/N` tells
 *   where that handle really is; the file is then reached through that handle's own path
 *   (`/proc/self/fd/N/name`, `O_NOFOLLOW`), which no later swap can redirect: in effect `openat`.
 *   New folders for a new file are made the same way, one level at a time.
 * - Elsewhere (no `/proc`) the file is opened by its real path and the handle's device and inode are
 *   compared with a fresh look-up of that path, which must still resolve to itself. A swap exactly
 *   between the two look-ups can still go unnoticed there; writes are checked the same way.
 *
 * Only regular files are opened: FIFOs, sockets and devices are refused before opening (a FIFO's
 * `open` waits for a writer forever), and `O_NONBLOCK` keeps one swapped in at the last moment from
 * blocking. Each call honours its abort signal between steps and returns at once when it fires.
 */

/** What a file is, in words for the model. */
export type FileKind = 'file' | 'directory' | 'symbolic link' | 'FIFO (named pipe)' | 'socket' | 'character device' | 'block device' | 'special file';

export type ConfinedRead =
  { readonly bytes: Uint8Array } | { readonly skipped: 'large'; readonly size: number } | { readonly skipped: 'not-a-file'; readonly kind: FileKind };

const O_NOFOLLOW = constants.O_NOFOLLOW ?? 0;
const O_NONBLOCK = constants.O_NONBLOCK ?? 0;
const O_NOCTTY = constants.O_NOCTTY ?? 0;
const O_DIRECTORY = constants.O_DIRECTORY ?? 0;
/** Reads happen in slices, so that Stop is noticed within one slice. */
const READ_SLICE = 1024 * 1024;

/** The type of file `stats` describes. */
export function kindOf(stats: Stats): FileKind {
  if (stats.isFile()) return 'file';
  if (stats.isDirectory()) return 'directory';
  if (stats.isSymbolicLink()) return 'symbolic link';
  if (stats.isFIFO()) return 'FIFO (named pipe)';
  if (stats.isSocket()) return 'socket';
  if (stats.isCharacterDevice()) return 'character device';
  if (stats.isBlockDevice()) return 'block device';
  return 'special file';
}

/** What `p` is now, following links; `undefined` when nothing is there. */
export async function kindOfPath(p: string): Promise<FileKind | undefined> {
  try {
    return kindOf(await fs.stat(p));
  } catch (error) {
    if (CHANGED_CODES.has(errorCode(error) ?? '')) return undefined;
    throw error;
  }
}

/**
 * The bytes of a regular file, or why they were not read: larger than `maxBytes`, or not a regular
 * file. Throws a {@link ToolFailure} when the path leads outside the workspace or changed while it
 * was being opened, and the signal's reason when it is aborted.
 */
export async function readConfined(target: ResolvedPath, maxBytes: number, signal: AbortSignal): Promise<ConfinedRead> {
  return abortable(signal, async () => readOpened(await openExisting(target, constants.O_RDONLY, signal), maxBytes, signal));
}

/**
 * {@link readConfined} for many files at once, as a search reads them: each folder is opened and
 * checked once for all its files in `targets`. A file that cannot be read safely (gone, outside,
 * changed while being opened) is `undefined`; Stop rejects the whole call at once.
 */
export async function readManyConfined(
  targets: readonly ResolvedPath[],
  maxBytes: number,
  signal: AbortSignal,
): Promise<(ConfinedRead | undefined)[]> {
  return abortable(signal, async () => {
    const byFolder = new Map<string, number[]>();
    targets.forEach((t, index) => {
      const folder = path.dirname(t.absolute);
      const indexes = byFolder.get(folder);
      if (indexes) indexes.push(index);
      else byFolder.set(folder, [index]);
    });
    const results: (ConfinedRead | undefined)[] = targets.map(() => undefined);
    await Promise.all(
      [...byFolder.values()].map(async (indexes) => {
        const group = indexes.map((i) => targets[i] as ResolvedPath);
        const reads = await readFolder(group, maxBytes, signal);
        indexes.forEach((i, n) => (results[i] = reads[n]));
      }),
    );
    return results;
  });
}

/** Files of one folder: through one checked handle of it on Linux, one by one elsewhere or for links. */
async function readFolder(group: readonly ResolvedPath[], maxBytes: number, signal: AbortSignal): Promise<(ConfinedRead | undefined)[]> {
  const one = (target: ResolvedPath) =>
    unlessUnreadable(async () => readOpened(await openExisting(target, constants.O_RDONLY, signal), maxBytes, signal));
  const first = group[0];
  if (!first || process.platform !== 'linux') return Promise.all(group.map(one));
  const folder = await unlessUnreadable(async () => {
    const { realRoot, real } = await locateReal(first.root, path.dirname(first.absolute), first.relative);
    return openDirectory(realRoot, real, first);
  });
  if (!folder?.checked) {
    await folder?.close();
    return Promise.all(group.map(one));
  }
  try {
    return await Promise.all(
      group.map(async (target) => {
        const name = path.basename(target.absolute);
        const stats = await unlessUnreadable(() => lstatOrChanged(folder.child(name), target));
        // A link may lead anywhere: resolve it the long way.
        if (stats?.isSymbolicLink()) return one(target);
        if (!stats) return undefined;
        if (!stats.isFile()) return { skipped: 'not-a-file', kind: kindOf(stats) } as const;
        return unlessUnreadable(async () => readOpened(await openChild(folder, name, constants.O_RDONLY, target), maxBytes, signal));
      }),
    );
  } finally {
    await folder.close();
  }
}

/** `undefined` for a file that could not be read safely; bugs and Stop go through. */
async function unlessUnreadable<T>(read: () => Promise<T>): Promise<T | undefined> {
  try {
    return await read();
  } catch (error) {
    if (error instanceof ToolFailure || CHANGED_CODES.has(errorCode(error) ?? '') || errorCode(error) === 'EACCES') return undefined;
    throw error;
  }
}

async function readOpened(opened: Opened, maxBytes: number, signal: AbortSignal): Promise<ConfinedRead> {
  if ('kind' in opened) return { skipped: 'not-a-file', kind: opened.kind };
  try {
    if (opened.stats.size > maxBytes) return { skipped: 'large', size: opened.stats.size };
    const bytes = await readAll(opened.handle, maxBytes, signal, opened.stats.size);
    return bytes ? { bytes } : { skipped: 'large', size: maxBytes + 1 };
  } finally {
    await opened.handle.close();
  }
}

/**
 * Replaces the content of an existing regular file, provided it still holds exactly `expected`
 * (the bytes the change was computed from); `'changed'` otherwise, and nothing is written.
 */
export async function overwriteConfined(
  target: ResolvedPath,
  expected: Uint8Array,
  content: Uint8Array,
  signal: AbortSignal,
): Promise<'written' | 'changed'> {
  return abortable(signal, async () => {
    const opened = await openExisting(target, constants.O_RDWR, signal);
    if ('kind' in opened) return 'changed';
    try {
      const current = await readAll(opened.handle, expected.length, signal, opened.stats.size);
      if (!current || !sameBytes(current, expected)) return 'changed';
      signal.throwIfAborted();
      // Only the checked handle is written to: nothing from here on goes by path.
      await writeAll(opened.handle, content);
      await opened.handle.truncate(content.length);
      return 'written';
    } finally {
      await opened.handle.close();
    }
  });
}

/**
 * Deletes an existing regular file, provided it still holds exactly `expected`; `'changed'`
 * otherwise, and nothing is deleted. The name is removed through a checked handle of its folder.
 */
export async function removeConfined(target: ResolvedPath, expected: Uint8Array, signal: AbortSignal): Promise<'removed' | 'changed'> {
  return abortable(signal, async () => {
    const opened = await openExisting(target, constants.O_RDONLY, signal);
    if ('kind' in opened) return 'changed';
    try {
      const current = await readAll(opened.handle, expected.length, signal, opened.stats.size);
      if (!current || !sameBytes(current, expected)) return 'changed';
    } finally {
      await opened.handle.close();
    }
    signal.throwIfAborted();
    const { realRoot, real } = await locateReal(target.root, target.absolute, target.relative);
    const dir = await openDirectory(realRoot, path.dirname(real), target);
    try {
      await dir.stillHere();
      await fs.unlink(dir.child(path.basename(real)));
      return 'removed';
    } finally {
      await dir.close();
    }
  });
}

/**
 * Creates a new regular file with `content`, and the folders leading to it; `'exists'` when
 * something is already there (a symlink put there at the last moment included: the file is created
 * with `O_EXCL`, which never writes through a link).
 */
export async function createConfined(target: ResolvedPath, content: Uint8Array, signal: AbortSignal): Promise<'created' | 'exists'> {
  return abortable(signal, async () => {
    const { realRoot, real, exists } = await locateReal(target.root, target.absolute, target.relative);
    if (exists) return 'exists';
    const missing: string[] = [];
    let existing = path.dirname(real);
    while (!(await isDirectoryNow(existing, target))) {
      missing.unshift(path.basename(existing));
      const parent = path.dirname(existing);
      if (parent === existing || !isInside(realRoot, parent)) throw changed(target);
      existing = parent;
    }
    signal.throwIfAborted();
    let dir = await openDirectory(realRoot, existing, target);
    try {
      for (const name of missing) {
        await dir.mkdir(name);
        const next = await dir.openDirectory(name);
        await dir.close();
        dir = next;
        signal.throwIfAborted();
      }
      // Creating is itself a write: by path, the folder is checked once more just before.
      await dir.stillHere();
      let handle: fs.FileHandle;
      try {
        handle = await fs.open(
          dir.child(path.basename(real)),
          constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | O_NOFOLLOW | O_NOCTTY,
          0o666,
        );
      } catch (error) {
        if (errorCode(error) === 'EEXIST') return 'exists';
        throw error;
      }
      try {
        await dir.verify(handle, path.basename(real));
        await writeAll(handle, content);
      } finally {
        await handle.close();
      }
      return 'created';
    } finally {
      await dir.close();
    }
  });
}

/**
 * Runs `operation` and settles as soon as `signal` aborts, with its reason; the operation goes on
 * in the background only to close what it opened.
 */
export async function abortable<T>(signal: AbortSignal, operation: () => Promise<T>): Promise<T> {
  signal.throwIfAborted();
  const running = operation();
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([running, aborted]);
  } finally {
    if (onAbort) signal.removeEventListener('abort', onAbort);
    // The loser must not become an unhandled rejection.
    running.catch(() => undefined);
    aborted.catch(() => undefined);
  }
}

type Opened = { readonly handle: fs.FileHandle; readonly stats: Stats } | { readonly kind: FileKind };

/** Opens an existing file with `flags` after checking it is a regular file; the handle is checked too. */
async function openExisting(target: ResolvedPath, flags: number, signal: AbortSignal): Promise<Opened> {
  const { realRoot, real, exists } = await locateReal(target.root, target.absolute, target.relative);
  if (!exists) throw new ToolFailure(`File not found: ${target.relative}`);
  if (real === realRoot) return { kind: 'directory' };
  const dir = await openDirectory(realRoot, path.dirname(real), target);
  try {
    signal.throwIfAborted();
    const before = await lstatOrChanged(dir.child(path.basename(real)), target);
    // `real` has no links left in it; a link here now means it was just swapped in.
    if (before.isSymbolicLink()) throw changed(target);
    if (!before.isFile()) return { kind: kindOf(before) };
    return await openChild(dir, path.basename(real), flags, target);
  } finally {
    await dir.close();
  }
}

/**
 * Opens the regular file `name` of a checked directory, never through a link, never blocking on a
 * FIFO swapped in after the type was checked; the handle is checked too.
 */
async function openChild(dir: Directory, name: string, flags: number, target: ResolvedPath): Promise<Opened> {
  const handle = await openOrChanged(dir.child(name), flags | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, target);
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) {
      await handle.close();
      return { kind: kindOf(stats) };
    }
    await dir.verify(handle, name);
    return { handle, stats };
  } catch (error) {
    await handle.close();
    throw error;
  }
}

/** A directory checked to be where it should be, and the way to reach names inside it. */
interface Directory {
  /**
   * True when it is held by a handle whose location was checked, so that what `child` reaches is
   * inside it whatever is renamed meanwhile (Linux); false when names are reached by path.
   */
  readonly checked: boolean;
  /** The path that reaches `name` inside this very directory. */
  child(name: string): string;
  /** Makes the folder `name` inside it (an existing folder is fine). */
  mkdir(name: string): Promise<void>;
  openDirectory(name: string): Promise<Directory>;
  /** Throws unless `handle`, opened as `name` (no link), is that file of this directory inside the workspace. */
  verify(handle: fs.FileHandle, name: string): Promise<void>;
  /** Throws unless the directory is still where it was checked to be, and no link leads to it. */
  stillHere(): Promise<void>;
  close(): Promise<void>;
}

async function openDirectory(realRoot: string, dirPath: string, target: ResolvedPath): Promise<Directory> {
  if (process.platform === 'linux') {
    const handle = await openOrChanged(dirPath, constants.O_RDONLY | O_DIRECTORY | O_NOFOLLOW, target);
    const where = await procPath(handle);
    if (where !== undefined) {
      if (where !== dirPath || !isInside(realRoot, where)) {
        await handle.close();
        throw changed(target);
      }
      return procDirectory(realRoot, handle, dirPath, target);
    }
    await handle.close();
  }
  return pathDirectory(realRoot, dirPath, target);
}

/** Linux: names are reached through `/proc/self/fd/N/`, which stays this directory whatever is renamed. */
function procDirectory(realRoot: string, handle: fs.FileHandle, dirPath: string, target: ResolvedPath): Directory {
  const child = (name: string): string => `/proc/self/fd/${handle.fd}/${name}`;
  return {
    checked: true,
    child,
    mkdir: (name) => mkdirIfMissing(child(name)),
    openDirectory: async (name) => {
      const next = await openOrChanged(child(name), constants.O_RDONLY | O_DIRECTORY | O_NOFOLLOW, target);
      const where = await procPath(next);
      const expected = path.join(dirPath, name);
      if (where !== expected || !isInside(realRoot, expected)) {
        await next.close();
        throw changed(target);
      }
      return procDirectory(realRoot, next, expected, target);
    },
    // Opened through this directory's own handle with O_NOFOLLOW: it cannot be anywhere else.
    verify: async () => undefined,
    // The handle is the directory, wherever it is moved.
    stillHere: async () => undefined,
    close: () => handle.close(),
  };
}

/**
 * Without `/proc`: names are reached by path, and an opened file is accepted only when its device
 * and inode are those of its real path looked up again, and that path still has no link in it.
 */
function pathDirectory(realRoot: string, dirPath: string, target: ResolvedPath): Directory {
  const child = (name: string): string => path.join(dirPath, name);
  return {
    checked: false,
    child,
    mkdir: async (name) => {
      await mkdirIfMissing(child(name));
      if ((await realpathOrChanged(child(name), target)) !== child(name)) throw changed(target);
    },
    openDirectory: async (name) => pathDirectory(realRoot, child(name), target),
    verify: async (file, name) => {
      const expected = child(name);
      const opened = await file.stat();
      const now = await statOrChanged(expected, target);
      const again = await locateReal(target.root, target.absolute, target.relative);
      if (opened.dev !== now.dev || opened.ino !== now.ino || again.real !== expected || !isInside(realRoot, expected)) {
        throw changed(target);
      }
      if ((await realpathOrChanged(expected, target)) !== expected) throw changed(target);
    },
    stillHere: async () => {
      if ((await realpathOrChanged(dirPath, target)) !== dirPath || !isInside(realRoot, dirPath)) throw changed(target);
    },
    close: async () => undefined,
  };
}

/** Where an open handle really is, or `undefined` where the system has no `/proc/self/fd`. */
async function procPath(handle: fs.FileHandle): Promise<string | undefined> {
  try {
    return await fs.readlink(`/proc/self/fd/${handle.fd}`);
  } catch (error) {
    const code = errorCode(error);
    if (code === 'ENOENT' || code === 'EACCES' || code === 'EPERM' || code === 'ENOTDIR') return undefined;
    throw error;
  }
}

async function isDirectoryNow(p: string, target: ResolvedPath): Promise<boolean> {
  try {
    const stats = await fs.lstat(p);
    if (stats.isDirectory()) return true;
    // The real path of an existing ancestor has no links; one now means a swap.
    if (stats.isSymbolicLink()) throw changed(target);
    throw new ToolFailure(`Cannot create ${target.relative}: ${path.basename(p)} on its path is a ${kindOf(stats)}, not a folder.`);
  } catch (error) {
    // ENOTDIR: a file further up; climbing on reaches it and says so.
    if (errorCode(error) === 'ENOENT' || errorCode(error) === 'ENOTDIR') return false;
    throw error;
  }
}

async function mkdirIfMissing(p: string): Promise<void> {
  try {
    await fs.mkdir(p);
  } catch (error) {
    if (errorCode(error) !== 'EEXIST') throw error;
  }
}

/** File-system errors that mean "what was checked is no longer there as it was". */
const CHANGED_CODES = new Set(['ENOENT', 'ENOTDIR', 'ELOOP', 'EMLINK', 'ENXIO']);

async function openOrChanged(p: string, flags: number, target: ResolvedPath): Promise<fs.FileHandle> {
  try {
    return await fs.open(p, flags);
  } catch (error) {
    throw translate(error, target);
  }
}

async function lstatOrChanged(p: string, target: ResolvedPath): Promise<Stats> {
  try {
    return await fs.lstat(p);
  } catch (error) {
    throw translate(error, target);
  }
}

async function statOrChanged(p: string, target: ResolvedPath): Promise<Stats> {
  try {
    return await fs.stat(p);
  } catch (error) {
    throw translate(error, target);
  }
}

async function realpathOrChanged(p: string, target: ResolvedPath): Promise<string> {
  try {
    return await fs.realpath(p);
  } catch (error) {
    throw translate(error, target);
  }
}

function translate(error: unknown, target: ResolvedPath): unknown {
  const code = errorCode(error);
  if (code !== undefined && CHANGED_CODES.has(code)) return changed(target);
  if (code === 'EACCES' || code === 'EPERM') return new ToolFailure(`Permission denied: ${target.relative}`);
  return error;
}

function changed(target: ResolvedPath): ToolFailure {
  return new ToolFailure(
    `${target.relative} changed while it was being opened (a file or folder on its path was replaced). Try again; if it keeps happening, something is rewriting that folder.`,
  );
}

/**
 * Reads the whole file from the start; `undefined` when it holds more than `maxBytes`.
 * @param sizeHint the size `fstat` gave: buffers are sized for it, plus one byte to see the end.
 */
async function readAll(handle: fs.FileHandle, maxBytes: number, signal: AbortSignal, sizeHint = READ_SLICE): Promise<Uint8Array | undefined> {
  const chunks: Buffer[] = [];
  let total = 0;
  for (;;) {
    signal.throwIfAborted();
    // One byte more than allowed, to tell "exactly at the limit" from "over it".
    const want = Math.min(READ_SLICE, maxBytes + 1 - total, Math.max(sizeHint - total, 0) + 1);
    if (want <= 0) return undefined;
    const buffer = Buffer.allocUnsafe(want);
    const { bytesRead } = await handle.read(buffer, 0, want, total);
    chunks.push(buffer.subarray(0, bytesRead));
    total += bytesRead;
    // Short after the size fstat gave means the end: no need for one more call to learn that.
    if (bytesRead === 0 || (bytesRead < want && total >= sizeHint)) break;
  }
  return total > maxBytes ? undefined : Buffer.concat(chunks, total);
}

async function writeAll(handle: fs.FileHandle, content: Uint8Array): Promise<void> {
  let written = 0;
  while (written < content.length) {
    const { bytesWritten } = await handle.write(content, written, content.length - written, written);
    written += bytesWritten;
  }
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.compare(a, b) === 0;
}

function errorCode(error: unknown): string | undefined {
  return error instanceof Error && 'code' in error && typeof error.code === 'string' ? error.code : undefined;
}
