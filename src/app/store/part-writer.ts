import { constants as fsConstants, promises as fs, type Stats } from 'node:fs';
import { isRecord } from '../../core/errors';
import { ConversationChangedError, ConversationConflictError, ConversationVersionError } from './errors';
import { byteAt, isCode, safeJson, writeAll } from './files';
import { futureVersionOf, lineCheck } from './lines';
import { HEADER_KIND, PART_END_KIND, PART_END_VERSION } from './schemas';

/** How much of the file start is read to check its header before an append. */
const HEAD_BYTES = 64 * 1024;

/** A part is closed only once it holds more than a header, so a record larger than a part still lands somewhere. */
const HEADER_ROOM = 1024;

/** Where a store last left the end of a conversation: the last part and its size in bytes. */
export interface Tail {
  readonly part: number;
  readonly size: number;
  /**
   * After a failed write whose end could not be read back: how many of this store's own bytes may
   * have landed after `size`. The part may then end anywhere from `size` to `size + unknownBytes`.
   */
  readonly unknownBytes?: number;
  /**
   * Which file the part was, as last read or written whole: its inode and modification time. A part
   * of the same size but another inode or another time was replaced or rewritten by something else.
   */
  readonly identity?: FileIdentity;
}

/** What tells one file from another of the same size: its inode (0 where the system has none) and modification time. */
export interface FileIdentity {
  readonly ino: number;
  readonly mtimeMs: number;
}

/** The identity of a file as `stat` gives it. */
export function identityOf(stats: Pick<Stats, 'ino' | 'mtimeMs'>): FileIdentity {
  return { ino: stats.ino, mtimeMs: stats.mtimeMs };
}

/** Where a line is: its part, and the bytes of that part's file it takes (newline apart). */
export interface LineLocation {
  readonly part: number;
  readonly offset: number;
  readonly bytes: number;
  /** The check of those bytes as they were written or read (`lineCheck`): a line read back must still have it. */
  readonly check?: number;
}

/** The files of one conversation, as the writer needs them. */
export interface PartFiles {
  readonly id: string;
  /** The file of part `part`. */
  file(part: number): string;
  /** The header line a new part `part` starts with. */
  header(part: number): string;
}

/**
 * The tail after a write of `attempted` bytes at `size` failed: the part's size as it is now, or,
 * when even that cannot be read, the range the failed write may have left it in.
 */
async function tailAfterFailure(handle: fs.FileHandle, part: number, size: number, attempted: number): Promise<Tail> {
  try {
    return { part, size: (await handle.stat()).size };
  } catch {
    return { part, size, unknownBytes: attempted };
  }
}

/**
 * Appends lines to a conversation's parts, closing a part once it has grown past `partBytes` and
 * going on in the next. It knows where it last left each conversation's end, and refuses with
 * `ConversationConflictError` to append to a part another window continued since. Called with the
 * conversation's lock held.
 */
export class PartWriter {
  /** Parts (`id#part`) whose header this writer has already checked for a newer version. */
  private readonly checked = new Set<string>();
  /** The end of each conversation as this store last read or wrote it. */
  private readonly tails = new Map<string, Tail>();

  constructor(private readonly partBytes: number) {}

  tailOf(id: string): Tail | undefined {
    return this.tails.get(id);
  }

  /** Where `id` ends as it was just read: its headers are checked again before the next append. */
  setTail(id: string, tail: Tail): void {
    this.tails.set(id, tail);
    for (const key of this.checked) if (key.startsWith(`${id}#`)) this.checked.delete(key);
  }

  forget(id: string): void {
    this.tails.delete(id);
  }

  /**
   * Appends `bodies` (each a record's line with its newline, in UTF-8) from part `part` on; resolves
   * to where each line landed, in order.
   */
  async write(files: PartFiles, part: number, bodies: readonly Buffer[]): Promise<LineLocation[]> {
    const landed: LineLocation[] = [];
    let next = 0;
    while (next < bodies.length) {
      const handle = await this.openPart(files, part);
      let written: number;
      try {
        written = await this.writeToPart(files, part, handle, bodies, next, landed);
      } finally {
        await handle.close();
      }
      if (written === next) part += 1;
      else await this.noteIdentity(files, part);
      next = written;
    }
    return landed;
  }

  /**
   * Part `part` opened to append to. The part this writer last left the conversation's end in must
   * still be there: a file deleted since is refused, never made again with a header and the record.
   */
  private async openPart(files: PartFiles, part: number): Promise<fs.FileHandle> {
    if (this.tails.get(files.id)?.part !== part) return fs.open(files.file(part), 'a+');
    try {
      return await fs.open(files.file(part), fsConstants.O_RDWR | fsConstants.O_APPEND);
    } catch (error) {
      if (isCode(error, 'ENOENT')) throw new ConversationChangedError(files.id, `${files.file(part)} was deleted or moved`);
      throw error;
    }
  }

  /**
   * Notes which file the part just written is, once closed (a system may set its time when the
   * file is closed), when it ends where this writer left it.
   */
  private async noteIdentity(files: PartFiles, part: number): Promise<void> {
    const tail = this.tails.get(files.id);
    if (tail?.part !== part || tail.unknownBytes !== undefined) return;
    try {
      const stats = await fs.stat(files.file(part));
      if (stats.size === tail.size) this.tails.set(files.id, { ...tail, identity: identityOf(stats) });
    } catch {
      // Unknown: the next append checks the size alone.
    }
  }

  /**
   * Writes as many of `bodies` from `next` on as fit in part `part` (at least one when it holds no
   * record yet), or closes the part when none fits; resolves to the index of the first body left,
   * once `landed` has where each body written went.
   */
  private async writeToPart(
    files: PartFiles,
    part: number,
    handle: fs.FileHandle,
    bodies: readonly Buffer[],
    next: number,
    landed: LineLocation[],
  ): Promise<number> {
    const { id } = files;
    const stats = await handle.stat();
    const { size } = stats;
    const known = this.tails.get(id);
    if (known !== undefined && known.part === part) checkSamePart(files.id, files.file(part), known, stats);
    let lead = '';
    if (size === 0) lead = `${files.header(part)}\n`;
    else {
      await this.checkHeader(files, part, handle, size);
      if ((await byteAt(handle, size - 1)) !== 0x0a) lead = '\n';
    }
    let end = next;
    let bytes = Buffer.byteLength(lead);
    while (end < bodies.length && (size + bytes + bodies[end]!.length <= this.partBytes || (end === next && size <= HEADER_ROOM))) {
      bytes += bodies[end]!.length;
      end++;
    }
    const data =
      end === next
        ? Buffer.from(`${lead}${JSON.stringify({ v: PART_END_VERSION, kind: PART_END_KIND, next: part + 1 })}\n`, 'utf8')
        : Buffer.concat([Buffer.from(lead, 'utf8'), ...bodies.slice(next, end)]);
    try {
      await writeAll(handle, data);
      await handle.datasync();
    } catch (error) {
      // Part of the data may have landed. Still holding the lock, read where the file ends now, so
      // the next append keeps checking that no other window continued the conversation.
      this.tails.set(id, await tailAfterFailure(handle, part, size, data.length));
      throw error;
    }
    // A closed part is not this conversation's end any more: the next part's is checked from its start.
    if (end !== next) this.tails.set(id, { part, size: size + data.length });
    let offset = size + Buffer.byteLength(lead);
    for (let i = next; i < end; i++) {
      const body = bodies[i]!;
      landed.push({ part, offset, bytes: body.length - 1, check: lineCheck(body.subarray(0, body.length - 1)) });
      offset += body.length;
    }
    return end;
  }

  /**
   * Refuses a part written by a newer Longrun, or one whose header names another conversation (a
   * file copied over this one's): a record added to it would join a history that is not this one.
   */
  private async checkHeader(files: PartFiles, part: number, handle: fs.FileHandle, size: number): Promise<void> {
    const key = `${files.id}#${part}`;
    if (this.checked.has(key)) return;
    const head = Buffer.alloc(Math.min(size, HEAD_BYTES));
    const { bytesRead } = await handle.read(head, 0, head.length, 0);
    const text = head.subarray(0, bytesRead).toString('utf8');
    const version = futureVersionOf(text);
    if (version !== undefined) throw new ConversationVersionError(files.id, version, files.file(part));
    const other = headerIdOf(text);
    if (other !== undefined && other !== files.id)
      throw new ConversationChangedError(files.id, `${files.file(part)} now holds conversation "${other}"`);
    this.checked.add(key);
  }
}

/**
 * Refuses to append to a part that is no longer the one this writer left: grown past what it
 * wrote, another window continued it (`ConversationConflictError`); shorter, another file, or
 * rewritten at the same size, something other than Longrun changed it (`ConversationChangedError`).
 * Only ever appended to, a part Longrun wrote keeps its inode, and its time changes only as it grows.
 */
function checkSamePart(id: string, file: string, known: Tail, now: Stats): void {
  const was = known.identity;
  const otherFile = was !== undefined && was.ino !== 0 && now.ino !== 0 && was.ino !== now.ino;
  if (otherFile || now.size < known.size) throw new ConversationChangedError(id, `${file} was replaced or cut short`);
  if (now.size > known.size + (known.unknownBytes ?? 0)) throw new ConversationConflictError(id, 'changed');
  if (was !== undefined && now.size === known.size && now.mtimeMs !== was.mtimeMs) throw new ConversationChangedError(id, `${file} was rewritten`);
}

/** The conversation id a part's header (the start of its file) names, when it is one. */
function headerIdOf(head: string): string | undefined {
  const newline = head.indexOf('\n');
  const value = safeJson(newline < 0 ? head : head.slice(0, newline));
  return isRecord(value) && value.kind === HEADER_KIND && typeof value.id === 'string' ? value.id : undefined;
}
