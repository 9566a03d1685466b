import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import type { LogRecord } from '../../core/history';
import type { Message } from '../../core/messages';
import type { KnownSecrets } from '../../core/redact';
import { thousands } from '../../core/cut-marker';
import { reportOnce, type SkippedLine } from './damaged-lines';
import { ConversationChangedError, ConversationVersionError } from './errors';
import { isCode, isFile } from './files';
import { forEachLine, lineCheck, parseLine, skimMessageLine, type SkimmedMessage } from './lines';
import { ConversationLock } from './lock';
import { recordLines } from './record-lines';
import { CompactedAway, heldAway } from './held-away';
import { identityOf, PartWriter, type LineLocation, type Tail } from './part-writer';
import { SharedIds } from './shared-ids';
import { CONVERSATION_FORMAT_VERSION, HEADER_KIND } from './schemas';

/**
 * Where conversations live between sessions. Deliberately free of `vscode`: the extension passes
 * `context.storageUri.fsPath` and `context.workspaceState`, tests pass a temp dir and a map.
 *
 * The files of conversation `<id>`, in `<dir>/conversations/`:
 *
 * - `<id>.jsonl`, then `<id>.2.jsonl`, `<id>.3.jsonl` …: the conversation, in parts. Each part is a
 *   header line, then one line per log record. Records are only ever appended, each line with a
 *   single write, so a crash costs at most the line being written. When a part has grown past
 *   `partBytes` (32 MiB, read and checked in about a quarter of a second), the next record starts a
 *   new part, so no file grows past what opens quickly or what an editor can show (opening reads
 *   every part: a 50,000-message conversation of 74 MB opens in about 0.6 s, see `bench/store.ts`).
 *   A conversation saved before parts existed is one part and reads as before. The line that closes
 *   a part carries format version 2: a Longrun from before parts refuses the conversation as "saved
 *   by a newer version" rather than showing its first part as if it were all.
 * - `<id>.damaged.jsonl`: lines that could not be read back (damaged, cut off by a crash, written by
 *   a newer Longrun), copied aside; they also stay where they are. A line already copied there is
 *   skipped silently on later opens, so each is reported once.
 * - `<id>.lock`: exists while one window writes (or reads) the conversation, for milliseconds. See
 *   `ConversationConflictError` for what a second window sees.
 *
 * Files are read in chunks, line by line, never as one string: a string cannot hold more than
 * about 512 MiB, and a conversation may be larger. A record is cut to `maxRecordBytes` (1 MB) before
 * it is stored, so one huge tool output or answer cannot make a huge line.
 */

export type { DamagedLine } from './damaged-lines';

/** What `open` read back. */
export interface OpenedConversation {
  /** Every record that could be read, in the order it was written. */
  readonly log: LogRecord[];
  /**
   * One sentence per skipped line not reported by an earlier `open` (or that could not be kept
   * aside), naming its line number. A line reported once is skipped silently afterwards.
   */
  readonly problems: string[];
  /**
   * Where the line of each message record longer than `locateOverBytes` is, by record: such a record
   * can be dropped from memory and read again with `readAt`. Empty when opened without content: the
   * records given without it say where their lines are (`awayAt`).
   */
  readonly locations: ReadonlyMap<LogRecord, RecordLocation>;
}

/** How `open` reads. */
export interface OpenOptions {
  /**
   * Give without their content (an empty `content`, everything else as stored, and where the line
   * is, see `awayAt`) the messages longer than `locateOverBytes` and those a compaction took out of
   * the view (named by a compaction record after them). The conversation is then never all in memory
   * at once, and `readAt` gives the content back where it is needed.
   */
  readonly holdAway?: boolean;
  /**
   * With `holdAway`, parse and check every line even of the messages given without their content. By
   * default those laid out as Longrun writes them are read from their line's two ends (see
   * `skimMessageLine`) and checked only when read back: a conversation of thousands of messages, most
   * of them compacted, opens in a fraction of the time. Asked for when a line read back did not hold
   * what the opening took it for.
   */
  readonly checkAll?: boolean;
}

/** Where a record's line is: its part, the bytes of that part's file it takes (newline apart), and their check (`lineCheck`). */
export type RecordLocation = LineLocation;

/** A message record's line to read back (`readAt`): where it is, and the message it must hold. */
export interface ExpectedLine {
  readonly at: RecordLocation;
  readonly messageId: string;
}

/** Limits of a `ConversationStore`. The defaults are meant for real use; tests set small ones. */
export interface ConversationStoreOptions {
  /** Most bytes one stored line may take; longer text in a record is cut, keeping head and tail. Default 1,000,000. */
  readonly maxRecordBytes?: number;
  /** Size past which the next record starts a new part file. Default 32 MiB. */
  readonly partBytes?: number;
  /** How much of a file is read at a time. Default 1 MiB. */
  readonly readChunkBytes?: number;
  /** Lines longer than this are skipped as damaged rather than read into one string. Default 256 MiB. */
  readonly maxLineBytes?: number;
  /** How long an operation waits for another window's write to finish. Default 10 s. */
  readonly lockWaitMs?: number;
  /**
   * A lock older than this is taken over even when its process still runs (a hung window, a process
   * id reused after a crash). Locks last milliseconds, so this can be generous. Default 2 min.
   */
  readonly lockStaleMs?: number;
  /** Message lines longer than this are located when read (see `OpenedConversation.locations`). Default 2 KiB. */
  readonly locateOverBytes?: number;
  /**
   * The API keys in use: a record that holds one (an error body that echoed it, a file that holds it)
   * is stored, and kept in memory, with it replaced by `[redacted]`. Absent: none is looked for.
   */
  readonly secrets?: KnownSecrets;
}

const DEFAULT_OPTIONS: Required<Omit<ConversationStoreOptions, 'secrets'>> = {
  maxRecordBytes: 1_000_000,
  partBytes: 32 * 1024 * 1024,
  readChunkBytes: 1024 * 1024,
  maxLineBytes: 256 * 1024 * 1024,
  lockWaitMs: 10_000,
  lockStaleMs: 120_000,
  locateOverBytes: 2 * 1024,
};

/** Ids become file names, so only characters that are safe on every platform are allowed. */
const ID_PATTERN = /^[A-Za-z0-9_-]{1,200}$/;

/** The per-workspace conversation files. One instance per storage folder (per window). */
export class ConversationStore {
  /** The tail of each conversation's queue of file operations. */
  private readonly queues = new Map<string, Promise<unknown>>();
  /** Appends lines across each conversation's parts, knowing where this instance last left each. */
  private readonly writer: PartWriter;
  /** This instance's lock files: see `ConversationLock`. */
  private readonly lock: ConversationLock;
  private readonly options: Required<Omit<ConversationStoreOptions, 'secrets'>>;
  private readonly secrets: KnownSecrets | undefined;
  /** The folder of each conversation found in another of this workspace's storage folders. */
  private readonly homes = new Map<string, string>();

  /**
   * @param dir the storage folder (VS Code's `context.storageUri.fsPath`); created on first write.
   * @param now the clock, in milliseconds since the epoch. Locks use the system clock instead, since
   *   they compare times written by other processes.
   */
  constructor(
    private readonly dir: string,
    private readonly now: () => number,
    options: ConversationStoreOptions = {},
  ) {
    const { secrets, ...limits } = options;
    this.options = { ...DEFAULT_OPTIONS, ...limits };
    this.secrets = secrets;
    this.lock = new ConversationLock(this.options.lockWaitMs, this.options.lockStaleMs);
    this.writer = new PartWriter(this.options.partBytes);
  }

  /**
   * Reads a conversation, part by part and line by line. A missing conversation is empty; one whose
   * header has a newer format is refused with `ConversationVersionError`. Lines that cannot be read
   * are skipped and kept aside; only those not reported before come back as problems.
   */
  async open(id: string, options: OpenOptions = {}): Promise<OpenedConversation> {
    checkId(id);
    return this.enqueue(id, async () => {
      await this.locate(id);
      return this.locked(id, 'read', () => this.read(id, options));
    });
  }

  /**
   * Appends one record as one line, and gives back the record as stored. Text that would make the
   * line longer than `maxRecordBytes` is cut in the middle with a marker saying how long it was; the
   * caller may keep its full record for the rest of the session (the model has seen it whole), and a
   * reopened conversation has the cut one. Calls for the same conversation run one after another in
   * call order. Writes the header first when the part is new, and a newline first when the previous
   * write was cut off, so the record always starts a line of its own. Rejects with
   * `ConversationConflictError` when another window is in the way (nothing is written then).
   */
  async append(id: string, record: LogRecord): Promise<LogRecord> {
    const [stored] = await this.appendAll(id, [record]);
    return stored!;
  }

  /**
   * Appends records in order, as `append` does each, but under one lock and with one write per part:
   * much faster for many records, and no other window's record lands between them. Every record is
   * checked before any is written. `onLocated` is told where each stored message record landed, as
   * `open` locates it: such a record can be dropped from memory and read again with `readAt`.
   */
  async appendAll(
    id: string,
    records: readonly LogRecord[],
    onLocated?: (stored: LogRecord, location: RecordLocation) => void,
  ): Promise<LogRecord[]> {
    checkId(id);
    if (records.length === 0) return [];
    // Queued first, so that appends are written in the order they were asked for, however long a
    // large record (a compaction of thousands of messages) takes to check.
    return this.enqueue(id, async () => {
      const prepared = await recordLines(records, this.options.maxRecordBytes, this.secrets);
      const stored = prepared.map((p) => p.stored);
      const bodies = prepared.map((p) => p.bytes);
      await this.locate(id);
      const landed = await this.locked(id, 'write', () => this.writeLines(id, bodies));
      if (onLocated) {
        stored.forEach((record, i) => {
          const location = landed[i]!;
          if (record.type === 'message') onLocated(record, location);
        });
      }
      return stored;
    });
  }

  /**
   * Calls `onRecord` for each record of a conversation as stored, straight from its files, one at a
   * time and waiting for each call: memory stays bounded whatever the conversation's size (for an
   * export). Lines that cannot be read are passed over (`open` reports them), and so is a last line a
   * write is still adding. Takes no lock, so a long read never keeps a window from saving.
   */
  async readRecords(id: string, onRecord: (record: LogRecord) => Promise<void> | void): Promise<void> {
    checkId(id);
    for (const part of await this.parts(id)) {
      await forEachLine(this.partFile(id, part), this.options.readChunkBytes, this.options.maxLineBytes, (raw) => {
        if (raw.tooLong !== undefined || !raw.complete) return;
        const parsed = parseLine(raw.text, raw.number === 1, id, part);
        if (parsed.kind === 'future') throw new ConversationVersionError(id, parsed.version, this.partFile(id, part));
        return parsed.kind === 'record' ? onRecord(parsed.record) : undefined;
      });
    }
  }

  /**
   * The message records of `lines` (each where `open` or `appendAll` located it, and the message it
   * must be), read again from the conversation's files, in the order asked. Lines are only ever
   * appended, so a location stays right while the files are Longrun's; each line read is checked to
   * be the very one located there (its check, when located with one, and its message's id) before
   * any is given back. A line that is not (the files were changed, replaced or deleted by something
   * else) rejects with `ConversationChangedError`.
   */
  async readAt(id: string, lines: readonly ExpectedLine[]): Promise<LogRecord[]> {
    checkId(id);
    const records: LogRecord[] = [];
    const handles = new Map<number, fs.FileHandle>();
    try {
      for (const { at, messageId } of lines) {
        const file = this.partFile(id, at.part);
        let handle = handles.get(at.part);
        if (!handle) {
          handle = await openToReadBack(id, file);
          handles.set(at.part, handle);
        }
        const buffer = Buffer.alloc(at.bytes);
        const { bytesRead } = await handle.read(buffer, 0, at.bytes, at.offset);
        const same = bytesRead === at.bytes && (at.check === undefined || lineCheck(buffer) === at.check);
        const parsed = same ? parseLine(buffer.toString('utf8'), false, id, at.part) : undefined;
        if (parsed?.kind === 'damaged' && at.check !== undefined) {
          throw new ConversationChangedError(id, `the line at byte ${at.offset} of ${file}, message "${messageId}", is ${parsed.error}`, true);
        }
        if (parsed?.kind !== 'record' || parsed.record.type !== 'message' || parsed.record.message.id !== messageId) {
          throw new ConversationChangedError(
            id,
            `the line at byte ${at.offset} of ${file} is no longer the message "${messageId}" Longrun read there`,
          );
        }
        records.push(parsed.record);
      }
      return records;
    } finally {
      await Promise.all([...handles.values()].map((h) => h.close().catch(() => undefined)));
    }
  }

  /** Creates an empty conversation (just its header); does nothing when it already exists. */
  async create(id: string): Promise<void> {
    return this.enqueue(id, async () => {
      await this.locate(id);
      const file = this.partFile(id, 1);
      return this.locked(id, 'write', async () => {
        const header = `${this.header(id, 1)}\n`;
        try {
          await fs.writeFile(file, header, { flag: 'wx' });
          this.writer.setTail(id, { part: 1, size: Buffer.byteLength(header) });
        } catch (error) {
          if (!isCode(error, 'EEXIST')) throw error;
        }
      });
    });
  }

  async exists(id: string): Promise<boolean> {
    await this.locate(id);
    return isFile(this.partFile(id, 1));
  }

  /** Bytes the conversation takes on disk, all its parts together; 0 when it does not exist. */
  async size(id: string): Promise<number> {
    await this.locate(id);
    let total = 0;
    for (let part = 1; ; part++) {
      try {
        total += (await fs.stat(this.partFile(id, part))).size;
      } catch (error) {
        if (isCode(error, 'ENOENT')) return total;
        throw error;
      }
    }
  }

  /** The ids of all stored conversations, sorted. */
  async list(): Promise<string[]> {
    let names: string[];
    try {
      names = await fs.readdir(this.folder());
    } catch (error) {
      if (isCode(error, 'ENOENT')) return [];
      throw error;
    }
    // Later parts (`<id>.2.jsonl`) and damaged copies have a dot in what would be the id.
    return names
      .filter((name) => name.endsWith('.jsonl'))
      .map((name) => name.slice(0, -'.jsonl'.length))
      .filter((id) => ID_PATTERN.test(id))
      .sort();
  }

  /** Where a conversation's skipped lines are kept. */
  damagedFileOf(id: string): string {
    return path.join(this.folder(id), `${checkId(id)}.damaged.jsonl`);
  }

  /** The file of one part of a conversation: `<id>.jsonl` for the first, `<id>.<n>.jsonl` after. */
  partFile(id: string, part: number): string {
    return path.join(this.folder(id), part === 1 ? `${checkId(id)}.jsonl` : `${checkId(id)}.${part}.jsonl`);
  }

  /** The folder of conversation `id` (see `locate`); this window's own folder without one. */
  private folder(id?: string): string {
    return (id !== undefined ? this.homes.get(id) : undefined) ?? path.join(this.dir, 'conversations');
  }

  /**
   * Finds the folder conversation `id` lives in. VS Code gives a window's extension host the
   * workspace's storage folder, or `<folder>-1`, `-2`… up to `-9` while an earlier extension host
   * still holds it (a window reloaded before the old one has exited, or a second window of the
   * workspace): a conversation started in one of them is looked for in all of them, so that a reload
   * never loses it. The per-conversation lock keeps two windows that reach one file apart.
   */
  private async locate(id: string): Promise<void> {
    if (this.homes.has(id)) return;
    for (const dir of storageSiblings(this.dir)) {
      const folder = path.join(dir, 'conversations');
      if (await isFile(path.join(folder, `${checkId(id)}.jsonl`))) {
        this.homes.set(id, folder);
        return;
      }
    }
  }

  private lockFile(id: string): string {
    return path.join(this.folder(id), `${checkId(id)}.lock`);
  }

  private header(id: string, part: number): string {
    return JSON.stringify({
      v: CONVERSATION_FORMAT_VERSION,
      kind: HEADER_KIND,
      id,
      createdAt: this.now(),
      ...(part > 1 ? { part } : {}),
    });
  }

  private enqueue<T>(id: string, task: () => Promise<T>): Promise<T> {
    const previous = this.queues.get(id) ?? Promise.resolve();
    // A failed operation must not block the ones queued after it.
    const result = previous.then(task, task);
    const tail = result.catch(() => undefined);
    this.queues.set(id, tail);
    void tail.then(() => {
      if (this.queues.get(id) === tail) this.queues.delete(id);
    });
    return result;
  }

  // -------------------------------------------------------------------------------------------
  // Reading

  /** The parts that exist, in order: 1, 2, … up to the first one missing. */
  private async parts(id: string): Promise<number[]> {
    const parts: number[] = [];
    while (await isFile(this.partFile(id, parts.length + 1))) parts.push(parts.length + 1);
    return parts;
  }

  private async read(id: string, options: OpenOptions): Promise<OpenedConversation> {
    const parts = await this.parts(id);
    if (parts.length === 0) {
      this.writer.forget(id);
      return { log: [], problems: [], locations: new Map() };
    }
    let log: LogRecord[] = [];
    const locations = new Map<LogRecord, RecordLocation>();
    const skipped: SkippedLine[] = [];
    let tail: Tail = { part: 1, size: 0 };
    const shared = new SharedIds();
    const compacted = new CompactedAway();
    const skims = options.holdAway === true && options.checkAll !== true;
    /** Messages read without their content that no compaction has taken out yet, by index in `log`: parsed once all is read. */
    const unparsed = new Map<number, UnparsedLine>();
    for (const part of parts) {
      const file = this.partFile(id, part);
      const size = await forEachLine(
        file,
        this.options.readChunkBytes,
        this.options.maxLineBytes,
        (raw) => {
          if (raw.tooLong !== undefined) {
            const error = `the line is ${thousands(raw.tooLong)} bytes long, more than the ${thousands(this.options.maxLineBytes)} Longrun reads in one line; its first ${thousands(Buffer.byteLength(raw.text))} bytes are kept`;
            skipped.push({ part, line: raw.number, text: raw.text, error, cutOff: !raw.complete });
            return;
          }
          const skimmed = skims && raw.complete && raw.number > 1 ? skimMessageLine(raw.text) : undefined;
          if (skimmed) {
            const at: RecordLocation = { part, offset: raw.offset, bytes: raw.bytes, check: raw.check };
            const record = skimmedRecord(skimmed, shared);
            if (raw.bytes <= this.options.locateOverBytes) {
              compacted.note(record.message.id, log.length, at);
              unparsed.set(log.length, { part, line: raw.number, text: raw.text });
            }
            log.push(heldAway(record, at));
            return;
          }
          const parsed = parseLine(raw.text, raw.number === 1, id, part);
          if (parsed.kind === 'future') throw new ConversationVersionError(id, parsed.version, file);
          if (parsed.kind === 'record') {
            let record = shared.share(parsed.record);
            if (record.type === 'message') {
              const at: RecordLocation = { part, offset: raw.offset, bytes: raw.bytes, check: raw.check };
              const long = raw.bytes > this.options.locateOverBytes;
              if (options.holdAway && long) record = heldAway(record, at);
              else if (options.holdAway) compacted.note(record.message.id, log.length, at);
              else if (long) locations.set(record, at);
            }
            if (record.type === 'compaction' && options.holdAway) {
              compacted.takeOut(record.entry.compactedMessageIds, log, (index) => unparsed.delete(index));
            }
            log.push(record);
          } else if (parsed.kind === 'damaged') {
            const error = raw.complete ? parsed.error : `${parsed.error}; the line is incomplete`;
            skipped.push({ part, line: raw.number, text: raw.text, error, cutOff: !raw.complete });
          }
        },
        { checks: true },
      );
      tail = { part, size: size ?? 0 };
    }
    if (unparsed.size > 0) log = parsedWhole(log, unparsed, shared, skipped, id);
    this.writer.setTail(id, await withIdentity(tail, this.partFile(id, tail.part)));
    if (skipped.length === 0) return { log, problems: [], locations };
    skipped.sort((a, b) => a.part - b.part || a.line - b.line);
    return { log, problems: await reportOnce(id, this.damagedFileOf(id), skipped, this.options, this.now()), locations };
  }

  // -------------------------------------------------------------------------------------------
  // Writing

  private async writeLines(id: string, bodies: readonly Buffer[]): Promise<LineLocation[]> {
    const part = this.writer.tailOf(id)?.part ?? (await this.parts(id)).at(-1) ?? 1;
    return this.writer.write({ id, file: (n) => this.partFile(id, n), header: (n) => this.header(id, n) }, part, bodies);
  }

  /** Runs `task` holding the conversation's lock (see `ConversationLock.run`); a write first makes the folder. */
  private async locked<T>(id: string, mode: 'read' | 'write', task: () => Promise<T>): Promise<T> {
    if (mode === 'write') await fs.mkdir(this.folder(id), { recursive: true });
    return this.lock.run(id, this.lockFile(id), mode, task);
  }
}

/** A message line read without its content while a conversation is opened. */
interface UnparsedLine {
  readonly part: number;
  /** 1-based, in its part. */
  readonly line: number;
  readonly text: string;
}

/** The message record `skimmed` reads, without its content, its ids shared. */
function skimmedRecord(skimmed: SkimmedMessage, shared: SharedIds): LogRecord & { type: 'message' } {
  const { id, role, turnId, summaryOf, incomplete } = skimmed;
  // Written out, so that the message has the shape of one parsed from its line.
  const message: Message =
    summaryOf === undefined && incomplete === undefined
      ? { id: shared.of(id), role, content: [] }
      : { id: shared.of(id), role, content: [], ...(summaryOf !== undefined ? { summaryOf } : {}), ...(incomplete ? { incomplete } : {}) };
  return turnId === undefined ? { type: 'message', message } : { type: 'message', message, turnId: shared.of(turnId) };
}

/**
 * `log` with the messages of `unparsed` (still in the view once every line was read) parsed whole
 * from their lines; a line that is not a valid record is left out and added to `skipped`.
 */
function parsedWhole(
  log: LogRecord[],
  unparsed: ReadonlyMap<number, UnparsedLine>,
  shared: SharedIds,
  skipped: SkippedLine[],
  id: string,
): LogRecord[] {
  const damaged = new Set<number>();
  for (const [index, line] of unparsed) {
    const parsed = parseLine(line.text, false, id, line.part);
    if (parsed.kind === 'record') {
      log[index] = shared.share(parsed.record);
      continue;
    }
    damaged.add(index);
    const error = parsed.kind === 'damaged' ? parsed.error : 'not a record';
    skipped.push({ part: line.part, line: line.line, text: line.text, error, cutOff: false });
  }
  return damaged.size === 0 ? log : log.filter((_, index) => !damaged.has(index));
}

/** A part's file opened to read lines back from; one deleted since it was read is said to be. */
async function openToReadBack(id: string, file: string): Promise<fs.FileHandle> {
  try {
    return await fs.open(file, 'r');
  } catch (error) {
    if (isCode(error, 'ENOENT')) throw new ConversationChangedError(id, `${file} was deleted or moved`);
    throw error;
  }
}

/** `tail` with the identity of its part's file, when the file still ends there (see `Tail.identity`). */
async function withIdentity(tail: Tail, file: string): Promise<Tail> {
  try {
    const stats = await fs.stat(file);
    return stats.size === tail.size ? { ...tail, identity: identityOf(stats) } : tail;
  } catch {
    return tail;
  }
}

/** `dir` first, then the other storage folders VS Code may give the same workspace (`<base>`, `<base>-1` … `<base>-9`). */
function storageSiblings(dir: string): string[] {
  const base = dir.replace(/-[1-9]$/, '');
  const all = [dir, base, ...Array.from({ length: 9 }, (_, i) => `${base}-${i + 1}`)];
  return [...new Set(all)];
}

function checkId(id: string): string {
  if (!ID_PATTERN.test(id)) throw new Error(`Invalid conversation id ${JSON.stringify(id)}: use 1 to 200 letters, digits, "_" or "-".`);
  return id;
}
