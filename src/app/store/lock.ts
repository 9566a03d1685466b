import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import { z } from 'zod';
import { lazily } from '../../core/lazy';
import { ConversationConflictError, type LockHolder } from './errors';
import { isCode, openIfExists, safeJson } from './files';

/**
 * The lock files of one `ConversationStore`: `<id>.lock` exists while one window writes (or reads)
 * conversation `<id>`, for milliseconds. A lock holds its process, host and start time, and a token
 * that marks the instance that made it, so that instance never removes a lock another window took over.
 */
export class ConversationLock {
  /** Marks this instance's lock files. */
  private readonly token = randomBytes(8).toString('hex');

  /**
   * @param waitMs how long an operation waits for another window's write to finish.
   * @param staleMs age past which a lock is taken over even when its process still runs.
   */
  constructor(
    private readonly waitMs: number,
    private readonly staleMs: number,
  ) {}

  /**
   * Runs `task` holding the lock file `file` of conversation `id`. Writes need it; reads take it so
   * they never see a line half written, but go ahead without it where no lock can be made (a
   * read-only folder) or when another window keeps it too long: showing the conversation beats
   * refusing to.
   */
  async run<T>(id: string, file: string, mode: 'read' | 'write', task: () => Promise<T>): Promise<T> {
    let acquiredAt: number | undefined;
    try {
      acquiredAt = await this.acquire(id, file);
    } catch (error) {
      const unlockable = ['ENOENT', 'EACCES', 'EPERM', 'EROFS'].some((code) => isCode(error, code));
      if (mode === 'write' || !(unlockable || ConversationConflictError.isInstance(error))) throw error;
    }
    try {
      return await task();
    } finally {
      if (acquiredAt !== undefined) await this.release(file, acquiredAt);
    }
  }

  /** Takes the lock, waiting up to `waitMs` for another window; gives back when it was taken. */
  private async acquire(id: string, file: string): Promise<number> {
    const deadline = Date.now() + this.waitMs;
    let delay = 2;
    for (;;) {
      const mine: LockFileContent = { pid: process.pid, host: os.hostname(), since: Date.now(), token: this.token };
      try {
        await fs.writeFile(file, JSON.stringify(mine), { flag: 'wx' });
        return mine.since;
      } catch (error) {
        if (!isCode(error, 'EEXIST')) throw error;
      }
      const held = await readLock(file);
      if (held !== undefined && this.isStale(held)) await this.takeOver(file, held);
      else if (held !== undefined) {
        if (Date.now() >= deadline) throw new ConversationConflictError(id, 'busy', held.content);
        await sleep(delay);
        delay = Math.min(delay * 2, 50);
      }
      // A lock that vanished or was taken over: try again at once. The deadline still bounds the loop.
      if (Date.now() >= deadline + this.waitMs) throw new ConversationConflictError(id, 'busy', held?.content);
    }
  }

  /** Dead (its process is gone), abandoned (too old), or this instance's own left behind by a failed release. */
  private isStale(held: HeldLock): boolean {
    const since = held.content?.since ?? held.mtimeMs;
    if (Date.now() - since > this.staleMs) return true;
    const content = held.content;
    // Unreadable content is a lock being written right now.
    if (content === undefined || content.host !== os.hostname()) return false;
    if (content.pid === process.pid) return content.token === this.token;
    return !processAlive(content.pid);
  }

  /**
   * Removes a stale lock so a fresh one can be made. It is moved aside first and checked: if another
   * window replaced it between our reading and moving it, that window's fresh lock is put back.
   */
  private async takeOver(file: string, stale: HeldLock): Promise<void> {
    const aside = `${file}.${this.token}.stale`;
    try {
      await fs.rename(file, aside);
    } catch (error) {
      if (isCode(error, 'ENOENT')) return;
      throw error;
    }
    const moved = await readLock(aside);
    if (moved !== undefined && !sameLock(moved, stale)) {
      // `link` fails when a lock exists again, so it never replaces a newer one.
      await fs.link(aside, file).catch(() => undefined);
    }
    await fs.rm(aside, { force: true });
  }

  private async release(file: string, acquiredAt: number): Promise<void> {
    // A live lock well within the stale limit is never taken over, so it is still ours. Only an
    // operation that ran long has to check before removing the lock.
    if (Date.now() - acquiredAt < this.staleMs / 2) {
      await fs.rm(file, { force: true });
      return;
    }
    const held = await readLock(file);
    if (held?.content?.token === this.token) await fs.rm(file, { force: true });
  }
}

interface LockFileContent extends LockHolder {
  /** The store instance that holds it. */
  readonly token: string;
}

interface HeldLock {
  /** Undefined while the lock's creator has not written it yet, or when it is damaged. */
  readonly content: LockFileContent | undefined;
  readonly mtimeMs: number;
}

const lockFileSchema = lazily(() => z.object({ pid: z.number().int(), host: z.string(), since: z.number(), token: z.string() }));

async function readLock(file: string): Promise<HeldLock | undefined> {
  const handle = await openIfExists(file);
  if (!handle) return undefined;
  try {
    const { mtimeMs } = await handle.stat();
    const buffer = Buffer.alloc(4096);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    const parsed = lockFileSchema().safeParse(safeJson(buffer.toString('utf8', 0, bytesRead)));
    return { content: parsed.success ? parsed.data : undefined, mtimeMs };
  } finally {
    await handle.close();
  }
}

function sameLock(a: HeldLock, b: HeldLock): boolean {
  return a.content !== undefined && b.content !== undefined
    ? a.content.token === b.content.token && a.content.since === b.content.since
    : a.mtimeMs === b.mtimeMs;
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, it just belongs to someone else.
    return isCode(error, 'EPERM');
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
