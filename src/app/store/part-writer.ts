import { promises as fs } from 'node:fs';
import { ConversationConflictError, ConversationVersionError } from './errors';
import { byteAt, writeAll } from './files';
import { futureVersionOf } from './lines';
import { PART_END_KIND, PART_END_VERSION } from './schemas';

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
}

/** Where a line is: its part, and the bytes of that part's file it takes (newline apart). */
export interface LineLocation {
  readonly part: number;
  readonly offset: number;
  readonly bytes: number;
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

  setTail(id: string, tail: Tail): void {
    this.tails.set(id, tail);
  }

  forget(id: string): void {
    this.tails.delete(id);
  }

  /**
   * Appends `lines`, each a record's line without its newline, from part `part` on; resolves to
   * where each line landed, in order.
   */
  async write(files: PartFiles, part: number, lines: readonly string[]): Promise<LineLocation[]> {
    const bodies = lines.map((line) => Buffer.from(`${line}\n`, 'utf8'));
    const landed: LineLocation[] = [];
    let next = 0;
    while (next < bodies.length) {
      const handle = await fs.open(files.file(part), 'a+');
      try {
        const written = await this.writeToPart(files, part, handle, bodies, next, landed);
        if (written === next) part += 1;
        next = written;
      } finally {
        await handle.close();
      }
    }
    return landed;
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
    const { size } = await handle.stat();
    const known = this.tails.get(id);
    if (known !== undefined && known.part === part && !(size >= known.size && size <= known.size + (known.unknownBytes ?? 0))) {
      throw new ConversationConflictError(id, 'changed');
    }
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
      landed.push({ part, offset, bytes: bodies[i]!.length - 1 });
      offset += bodies[i]!.length;
    }
    return end;
  }

  private async checkHeader(files: PartFiles, part: number, handle: fs.FileHandle, size: number): Promise<void> {
    const key = `${files.id}#${part}`;
    if (this.checked.has(key)) return;
    const head = Buffer.alloc(Math.min(size, HEAD_BYTES));
    const { bytesRead } = await handle.read(head, 0, head.length, 0);
    const version = futureVersionOf(head.subarray(0, bytesRead).toString('utf8'));
    if (version !== undefined) throw new ConversationVersionError(files.id, version, files.file(part));
    this.checked.add(key);
  }
}
