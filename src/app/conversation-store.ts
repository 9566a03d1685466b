import { lazily } from '../core/lazy';
import { createHash, randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { z } from 'zod';
import { parseLedger } from '../core/file-ledger';
import { parseNeedleLedger } from '../core/needles';
import type { CompactionReason, LogRecord } from '../core/history';
import { LEGACY_BASIS } from '../core/usage-calibration';
import { errorText, hasMarker, isRecord, mark } from '../core/errors';
import { INDEX_KEY } from './contributions';

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

/** The format version this build writes and reads. */
export const CONVERSATION_FORMAT_VERSION = 1;

/** The version of the line that closes a part; see the module comment for why it is not 1. */
const PART_END_VERSION = 2;
const PART_END_KIND = 'longrun-part-end';

// ---------------------------------------------------------------------------------------------
// Schemas of what is stored: they mirror `LogRecord` and everything it holds.

const textPartSchema = lazily(() => z.object({ type: z.literal('text'), text: z.string() }));
const reasoningPartSchema = lazily(() => z.object({ type: z.literal('reasoning'), text: z.string() }));
const toolCallPartSchema = lazily(() =>
  z.object({
    type: z.literal('tool-call'),
    toolCallId: z.string(),
    toolName: z.string(),
    input: z.unknown(),
  }),
);
const toolResultPartSchema = lazily(() =>
  z.object({
    type: z.literal('tool-result'),
    toolCallId: z.string(),
    toolName: z.string(),
    output: z.unknown(),
    isError: z.boolean().optional(),
  }),
);
const filePartSchema = lazily(() =>
  z.object({
    type: z.literal('file'),
    mediaType: z.string(),
    name: z.string().optional(),
    size: z.number().min(0).optional(),
  }),
);

const messageSchema = lazily(() =>
  z.object({
    id: z.string().min(1),
    role: z.enum(['system', 'user', 'assistant', 'tool']),
    content: z.array(
      z.discriminatedUnion('type', [textPartSchema(), reasoningPartSchema(), toolCallPartSchema(), toolResultPartSchema(), filePartSchema()]),
    ),
    summaryOf: z.string().optional(),
    incomplete: z.literal(true).optional(),
  }),
);

const countSchema = lazily(() => z.number().min(0));
const reasonSchema = lazily(() => z.enum(['threshold', 'overflow', 'manual']));

const ledgerSchema = lazily(() =>
  z.unknown().transform((value, ctx) => {
    const ledger = parseLedger(value);
    if (ledger === undefined) {
      ctx.addIssue({ code: 'custom', message: 'is not a valid file ledger' });
      return z.NEVER;
    }
    return ledger;
  }),
);

const needleLedgerSchema = lazily(() =>
  z.unknown().transform((value, ctx) => {
    const ledger = parseNeedleLedger(value);
    if (ledger === undefined) {
      ctx.addIssue({ code: 'custom', message: 'is not a valid needle ledger' });
      return z.NEVER;
    }
    return ledger;
  }),
);

const compactionEntrySchema = lazily(() =>
  z.object({
    id: z.string().min(1),
    round: z.number().int().min(1),
    reason: reasonSchema(),
    summary: z.string(),
    firstKeptMessageId: z.string().nullable(),
    compactedMessageIds: z.array(z.string()),
    tokensBefore: countSchema(),
    tokensAfter: countSchema(),
    fileOperations: ledgerSchema(),
    model: z.string(),
    durationMs: countSchema(),
    createdAt: z.number(),
    summaryRole: z.enum(['user', 'assistant']),
    fallback: z.boolean(),
    lowGain: z.boolean(),
    splitTurn: z.boolean(),
    summarizerCalls: z.number().int().min(0),
    focus: z.string().optional(),
    failure: z.string().optional(),
    // Added with pruning: a Longrun from before it drops the link and reads the summary as before.
    pruningId: z.string().min(1).optional(),
    // Added with the needle ledger: an entry from before it has none, and the next compaction scans the whole log.
    needles: needleLedgerSchema().optional(),
    // Added with summary editing: a Longrun from before it drops the field and reads the edit as a
    // compaction of its own, which shows the same view with the edited summary.
    editOf: z.string().min(1).optional(),
  }),
);

// Added with pruning. A Longrun from before it keeps such a line aside as an unknown kind of record
// and shows the pruned outputs in full, which is what undoing the pruning would do.
const pruningEntrySchema = lazily(() =>
  z.object({
    id: z.string().min(1),
    reason: reasonSchema(),
    outputs: z
      .array(
        z.object({
          messageId: z.string().min(1),
          toolCallId: z.string(),
          toolName: z.string(),
          // 'truncated' came later: a Longrun from before it keeps such a line aside and shows the outputs whole.
          kind: z.enum(['duplicate', 'stale', 'old', 'truncated']),
          stub: z.string(),
          tokens: countSchema(),
        }),
      )
      .min(1),
    tokensBefore: countSchema(),
    tokensAfter: countSchema(),
    createdAt: z.number(),
  }),
);

// Records written before usage carried its basis have a round number instead: they never calibrate.
const usageSchema = lazily(() =>
  z
    .object({
      anchorMessageId: z.string(),
      inputTokens: countSchema(),
      outputTokens: countSchema(),
      basis: z.string().nullable().optional(),
      round: z.number().int().min(0).optional(),
      localTokens: countSchema().optional(),
      localFraming: countSchema().optional(),
      // Added with the weighing of reports by their messages: a Longrun from before it drops it.
      localFixed: countSchema().optional(),
      model: z.string().optional(),
      truncated: z.boolean().optional(),
    })
    .transform(({ round: _round, basis, ...rest }) => ({ ...rest, basis: basis === undefined ? LEGACY_BASIS : basis })),
);

const fileEventSchema = lazily(() =>
  z
    .object({
      kind: z.enum(['read', 'created', 'modified', 'deleted', 'renamed']),
      path: z.string().min(1),
      actor: z.enum(['agent', 'user']),
      at: z.number(),
      from: z.string().min(1).optional(),
    })
    .refine((event) => event.kind !== 'renamed' || event.from !== undefined, {
      message: 'a rename must say where the file came from',
      path: ['from'],
    }),
);

/** Typed as `ZodType<LogRecord>` so the compiler checks that the schema and the type agree. */
const logRecordSchema = lazily((): z.ZodType<LogRecord> =>
  z.discriminatedUnion('type', [
    // Token counts by tokenizer name, added later: a line without them reads as before, and a Longrun
    // from before them drops them when it reads the line.
    // `turnId` names the turn a record was made on (see src/core/branches.ts); records from before
    // turns have none and form the trunk every branch starts with.
    z.object({
      type: z.literal('message'),
      message: messageSchema(),
      tokens: z.record(z.string(), z.number().int().min(0)).optional(),
      turnId: turnIdSchema(),
    }),
    z.object({ type: z.literal('compaction'), entry: compactionEntrySchema(), turnId: turnIdSchema() }),
    z.object({ type: z.literal('pruning'), entry: pruningEntrySchema(), turnId: turnIdSchema() }),
    z.object({ type: z.literal('undo'), entryId: z.string().min(1), at: z.number(), turnId: turnIdSchema() }),
    z.object({ type: z.literal('usage'), usage: usageSchema(), turnId: turnIdSchema() }),
    z.object({ type: z.literal('file'), event: fileEventSchema(), turnId: turnIdSchema() }),
    z.object({ type: z.literal('change'), change: fileChangeSchema(), turnId: turnIdSchema() }),
    z.object({ type: z.literal('turn'), turn: turnSchema(), turnId: turnIdSchema() }),
  ]),
);

const turnIdSchema = lazily(() => z.string().min(1).optional());

const turnSchema = lazily(() =>
  z.object({ id: z.string().min(1), parent: z.string().min(1).nullable(), at: z.number(), chat: z.string().optional() }),
);

const fileChangeSchema = lazily(() =>
  z.object({
    id: z.string().min(1),
    path: z.string().min(1),
    kind: z.enum(['created', 'modified']),
    beforeHash: z.string(),
    afterHash: z.string(),
    at: z.number().int().min(0),
    removed: z.string(),
    inserted: z.string(),
  }),
);

const headerSchema = lazily(() =>
  z.object({
    v: z.literal(CONVERSATION_FORMAT_VERSION),
    kind: z.literal('longrun-conversation'),
    id: z.string(),
    createdAt: z.number(),
    /** Absent in the first part, which is also how conversations from before parts begin. */
    part: z.number().int().min(2).optional(),
  }),
);

const recordLineSchema = lazily(() => z.object({ v: z.literal(CONVERSATION_FORMAT_VERSION), record: logRecordSchema() }));

// ---------------------------------------------------------------------------------------------

const VERSION_ERROR = Symbol.for('longrun.ConversationVersionError');

/** A conversation file written by a newer Longrun. It is left untouched. */
export class ConversationVersionError extends Error {
  constructor(
    readonly conversationId: string,
    readonly version: number,
    readonly file: string,
  ) {
    super(
      `Conversation "${conversationId}" was saved by a newer version of Longrun (format version ${version}; ` +
        `this version reads ${CONVERSATION_FORMAT_VERSION}). Its whole layout may differ, so this version neither reads nor ` +
        `adds to it. Update Longrun to open it; the file was left unchanged: ${file}`,
    );
    this.name = 'ConversationVersionError';
    mark(this, VERSION_ERROR);
  }

  static isInstance(error: unknown): error is ConversationVersionError {
    return hasMarker(error, VERSION_ERROR);
  }
}

/** Who holds a conversation's lock, as its lock file says. */
export interface LockHolder {
  readonly pid: number;
  /** The computer's host name. */
  readonly host: string;
  /** When the lock was taken, in milliseconds since the epoch. */
  readonly since: number;
}

const CONFLICT_ERROR = Symbol.for('longrun.ConversationConflictError');

/**
 * Another VS Code window is in the way, and nothing was written.
 *
 * Two windows on one workspace share its conversations. Each write takes the conversation's lock for
 * the few milliseconds it lasts, waiting up to `lockWaitMs` for the other window's write to end
 * (`busy` when it does not). Waiting is not enough on its own: a window that read the conversation
 * before the other one added to it holds an out-of-date copy, and adding to it would interleave two
 * different histories in one log. So a store refuses to append when the conversation grew since it
 * last read or wrote it (`changed`): that window's copy is then read-only until the conversation is
 * opened again. A window reloaded after the other one wrote reads everything anew and simply goes on.
 */
export class ConversationConflictError extends Error {
  constructor(
    readonly conversationId: string,
    readonly reason: 'busy' | 'changed',
    readonly holder?: LockHolder,
  ) {
    super(
      reason === 'changed'
        ? `Conversation "${conversationId}" was continued in another VS Code window after this window read it, so this ` +
            `window's copy is out of date and nothing was saved. Reload this window to continue the conversation here, ` +
            `or start a new conversation with /new.`
        : `Conversation "${conversationId}" is being saved by another VS Code window${describeHolder(holder)}, which did not ` +
            `finish in time, so nothing was saved here. Try again in a moment, or close the other window.`,
    );
    this.name = 'ConversationConflictError';
    mark(this, CONFLICT_ERROR);
  }

  static isInstance(error: unknown): error is ConversationConflictError {
    return hasMarker(error, CONFLICT_ERROR);
  }
}

/** What `open` read back. */
export interface OpenedConversation {
  /** Every record that could be read, in the order it was written. */
  readonly log: LogRecord[];
  /**
   * One sentence per skipped line not reported by an earlier `open` (or that could not be kept
   * aside), naming its line number. A line reported once is skipped silently afterwards.
   */
  readonly problems: string[];
}

/** One skipped line, as kept in `<id>.damaged.jsonl`. */
export interface DamagedLine {
  /** The part of the conversation the line is in; absent in entries written before parts (part 1). */
  readonly part?: number;
  /** 1-based line number in its part's file. */
  readonly line: number;
  /** The line; only its start when it was too long to read. */
  readonly text: string;
  readonly error: string;
  /** When it was found, in milliseconds since the epoch. */
  readonly at: number;
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
}

const DEFAULT_OPTIONS: Required<ConversationStoreOptions> = {
  maxRecordBytes: 1_000_000,
  partBytes: 32 * 1024 * 1024,
  readChunkBytes: 1024 * 1024,
  maxLineBytes: 256 * 1024 * 1024,
  lockWaitMs: 10_000,
  lockStaleMs: 120_000,
};

/** Ids become file names, so only characters that are safe on every platform are allowed. */
const ID_PATTERN = /^[A-Za-z0-9_-]{1,200}$/;

/** How much of the file start is read to check its header before an append. */
const HEAD_BYTES = 64 * 1024;

/** A part is closed only once it holds more than a header, so a record larger than a part still lands somewhere. */
const HEADER_ROOM = 1024;

/** How much of a line too long to read is kept aside. */
const KEPT_OF_LONG_LINE = 64 * 1024;

const RECORD_TYPES: ReadonlySet<string> = new Set(['message', 'compaction', 'pruning', 'undo', 'usage', 'file', 'change', 'turn']);

type ParsedLine =
  | { readonly kind: 'blank' }
  | { readonly kind: 'header' }
  | { readonly kind: 'record'; readonly record: LogRecord }
  | { readonly kind: 'future'; readonly version: number }
  | { readonly kind: 'damaged'; readonly error: string };

interface Skipped {
  readonly part: number;
  readonly line: number;
  readonly text: string;
  readonly error: string;
  readonly cutOff: boolean;
}

/** Where a store last left the end of a conversation: the last part and its size in bytes. */
interface Tail {
  readonly part: number;
  readonly size: number;
  /**
   * After a failed write whose end could not be read back: how many of this store's own bytes may
   * have landed after `size`. The part may then end anywhere from `size` to `size + unknownBytes`.
   */
  readonly unknownBytes?: number;
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

/** The per-workspace conversation files. One instance per storage folder (per window). */
export class ConversationStore {
  /** The tail of each conversation's queue of file operations. */
  private readonly queues = new Map<string, Promise<unknown>>();
  /** Parts (`id#part`) whose header this instance has already checked for a newer version. */
  private readonly checked = new Set<string>();
  /** The end of each conversation as this instance last read or wrote it; see `ConversationConflictError`. */
  private readonly tails = new Map<string, Tail>();
  /** Marks this instance's lock files, so it never removes a lock another window took over. */
  private readonly token = randomBytes(8).toString('hex');
  private readonly options: Required<ConversationStoreOptions>;

  /**
   * @param dir the storage folder (VS Code's `context.storageUri.fsPath`); created on first write.
   * @param now the clock, in milliseconds since the epoch. Locks use the system clock instead, since
   *   they compare times written by other processes.
   */
  /** The folder of each conversation found in another of this workspace's storage folders. */
  private readonly homes = new Map<string, string>();

  constructor(
    private readonly dir: string,
    private readonly now: () => number,
    options: ConversationStoreOptions = {},
  ) {
    this.options = { ...DEFAULT_OPTIONS, ...options };
  }

  /**
   * Reads a conversation, part by part and line by line. A missing conversation is empty; one whose
   * header has a newer format is refused with `ConversationVersionError`. Lines that cannot be read
   * are skipped and kept aside; only those not reported before come back as problems.
   */
  async open(id: string): Promise<OpenedConversation> {
    checkId(id);
    return this.enqueue(id, async () => {
      await this.locate(id);
      return this.locked(id, 'read', () => this.read(id));
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
   * checked before any is written.
   */
  async appendAll(id: string, records: readonly LogRecord[]): Promise<LogRecord[]> {
    checkId(id);
    const prepared = records.map((record) => this.serialize(record));
    if (prepared.length > 0) {
      await this.enqueue(id, async () => {
        await this.locate(id);
        await this.locked(id, 'write', () =>
          this.writeLines(
            id,
            prepared.map((p) => p.line),
          ),
        );
      });
    }
    return prepared.map((p) => p.stored);
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

  /** Creates an empty conversation (just its header); does nothing when it already exists. */
  async create(id: string): Promise<void> {
    return this.enqueue(id, async () => {
      await this.locate(id);
      const file = this.partFile(id, 1);
      return this.locked(id, 'write', async () => {
        const header = `${this.header(id, 1)}\n`;
        try {
          await fs.writeFile(file, header, { flag: 'wx' });
          this.tails.set(id, { part: 1, size: Buffer.byteLength(header) });
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
      kind: 'longrun-conversation',
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

  private async read(id: string): Promise<OpenedConversation> {
    const parts = await this.parts(id);
    if (parts.length === 0) {
      this.tails.delete(id);
      return { log: [], problems: [] };
    }
    const log: LogRecord[] = [];
    const skipped: Skipped[] = [];
    let tail: Tail = { part: 1, size: 0 };
    for (const part of parts) {
      const file = this.partFile(id, part);
      const size = await forEachLine(file, this.options.readChunkBytes, this.options.maxLineBytes, (raw) => {
        if (raw.tooLong !== undefined) {
          const error = `the line is ${thousands(raw.tooLong)} bytes long, more than the ${thousands(this.options.maxLineBytes)} Longrun reads in one line; its first ${thousands(Buffer.byteLength(raw.text))} bytes are kept`;
          skipped.push({ part, line: raw.number, text: raw.text, error, cutOff: !raw.complete });
          return;
        }
        const parsed = parseLine(raw.text, raw.number === 1, id, part);
        if (parsed.kind === 'future') throw new ConversationVersionError(id, parsed.version, file);
        if (parsed.kind === 'record') log.push(parsed.record);
        else if (parsed.kind === 'damaged') {
          const error = raw.complete ? parsed.error : `${parsed.error}; the line is incomplete`;
          skipped.push({ part, line: raw.number, text: raw.text, error, cutOff: !raw.complete });
        }
      });
      tail = { part, size: size ?? 0 };
    }
    this.tails.set(id, tail);
    if (skipped.length === 0) return { log, problems: [] };
    return { log, problems: await this.reportOnce(id, skipped) };
  }

  /** Keeps skipped lines aside and describes those not kept aside before: each is reported once. */
  private async reportOnce(id: string, skipped: readonly Skipped[]): Promise<string[]> {
    const damagedFile = this.damagedFileOf(id);
    let kept: Set<string>;
    try {
      kept = await keptAside(damagedFile, this.options);
    } catch {
      // Unreadable: every line is reported, and the copy below will likely fail and say why.
      kept = new Set();
    }
    const fresh = skipped.filter((s) => !kept.has(keyOf(s.part, s.line, s.text)));
    if (fresh.length === 0) return [];

    const problems = fresh.map((s) => {
      const where = s.part === 1 ? `Line ${s.line} of conversation "${id}"` : `Line ${s.line} of part ${s.part} of conversation "${id}"`;
      return s.cutOff
        ? `${where} is incomplete (its write was probably cut off by a crash) and was skipped; a copy is kept in ${damagedFile}.`
        : `${where} could not be read (${s.error}) and was skipped; a copy is kept in ${damagedFile}.`;
    });
    const at = this.now();
    const entries = fresh.map((s): DamagedLine => ({ part: s.part, line: s.line, text: s.text, error: s.error, at }));
    try {
      await appendWhole(damagedFile, entries.map((e) => JSON.stringify(e)).join('\n') + '\n');
    } catch (error) {
      problems.push(
        `The ${fresh.length} unreadable line(s) of conversation "${id}" could not be copied to ${damagedFile} (${errorText(error)}); ` +
          `they remain in the conversation's files and will be reported again.`,
      );
    }
    return problems;
  }

  // -------------------------------------------------------------------------------------------
  // Writing

  /** The line for a record, cut to `maxRecordBytes`, and checked to read back as a valid record. */
  private serialize(record: LogRecord): { line: string; stored: LogRecord } {
    let line = JSON.stringify({ v: CONVERSATION_FORMAT_VERSION, record });
    let stored = record;
    if (Buffer.byteLength(line) > this.options.maxRecordBytes) {
      stored = capRecord(line, this.options.maxRecordBytes);
      line = JSON.stringify({ v: CONVERSATION_FORMAT_VERSION, record: stored });
    }
    // Check what the reader will see, so a record that could not be read back is never written.
    const check = recordLineSchema().safeParse(JSON.parse(line));
    if (!check.success) throw new Error(`Refusing to store an invalid log record: ${describeIssues(check.error)}`);
    return { line, stored };
  }

  private async writeLines(id: string, lines: readonly string[]): Promise<void> {
    const bodies = lines.map((line) => Buffer.from(`${line}\n`, 'utf8'));
    let next = 0;
    let part = this.tails.get(id)?.part ?? (await this.parts(id)).at(-1) ?? 1;
    while (next < bodies.length) {
      const file = this.partFile(id, part);
      const handle = await fs.open(file, 'a+');
      try {
        const { size } = await handle.stat();
        const known = this.tails.get(id);
        if (known !== undefined && known.part === part && !(size >= known.size && size <= known.size + (known.unknownBytes ?? 0))) {
          throw new ConversationConflictError(id, 'changed');
        }
        let lead = '';
        if (size === 0) lead = `${this.header(id, part)}\n`;
        else {
          await this.checkHeader(id, part, file, handle, size);
          if ((await byteAt(handle, size - 1)) !== 0x0a) lead = '\n';
        }
        // As many records as fit in the part; at least one when it holds no record yet.
        let end = next;
        let bytes = Buffer.byteLength(lead);
        while (end < bodies.length && (size + bytes + bodies[end]!.length <= this.options.partBytes || (end === next && size <= HEADER_ROOM))) {
          bytes += bodies[end]!.length;
          end++;
        }
        if (end === next) {
          const close = Buffer.from(`${lead}${JSON.stringify({ v: PART_END_VERSION, kind: PART_END_KIND, next: part + 1 })}\n`, 'utf8');
          try {
            await writeAll(handle, close);
            await handle.datasync();
          } catch (error) {
            this.tails.set(id, await tailAfterFailure(handle, part, size, close.length));
            throw error;
          }
          part += 1;
          continue;
        }
        const data = Buffer.concat([Buffer.from(lead, 'utf8'), ...bodies.slice(next, end)]);
        try {
          await writeAll(handle, data);
          await handle.datasync();
        } catch (error) {
          // Part of the data may have landed. Still holding the lock, read where the file ends now, so
          // the next append keeps checking that no other window continued the conversation.
          this.tails.set(id, await tailAfterFailure(handle, part, size, data.length));
          throw error;
        }
        this.tails.set(id, { part, size: size + data.length });
        next = end;
      } finally {
        await handle.close();
      }
    }
  }

  private async checkHeader(id: string, part: number, file: string, handle: fs.FileHandle, size: number): Promise<void> {
    const key = `${id}#${part}`;
    if (this.checked.has(key)) return;
    const head = Buffer.alloc(Math.min(size, HEAD_BYTES));
    const { bytesRead } = await handle.read(head, 0, head.length, 0);
    const version = futureVersionOf(head.subarray(0, bytesRead).toString('utf8'));
    if (version !== undefined) throw new ConversationVersionError(id, version, file);
    this.checked.add(key);
  }

  // -------------------------------------------------------------------------------------------
  // The lock

  /**
   * Runs `task` holding the conversation's lock. Writes need it; reads take it so they never see a
   * line half written, but go ahead without it where no lock can be made (a read-only folder) or
   * when another window keeps it too long: showing the conversation beats refusing to.
   */
  private async locked<T>(id: string, mode: 'read' | 'write', task: () => Promise<T>): Promise<T> {
    if (mode === 'write') await fs.mkdir(this.folder(id), { recursive: true });
    const file = this.lockFile(id);
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

  /** Takes the lock, waiting up to `lockWaitMs` for another window; gives back when it was taken. */
  private async acquire(id: string, file: string): Promise<number> {
    const deadline = Date.now() + this.options.lockWaitMs;
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
      if (Date.now() >= deadline + this.options.lockWaitMs) throw new ConversationConflictError(id, 'busy', held?.content);
    }
  }

  /** Dead (its process is gone), abandoned (too old), or this instance's own left behind by a failed release. */
  private isStale(held: HeldLock): boolean {
    const since = held.content?.since ?? held.mtimeMs;
    if (Date.now() - since > this.options.lockStaleMs) return true;
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
    if (Date.now() - acquiredAt < this.options.lockStaleMs / 2) {
      await fs.rm(file, { force: true });
      return;
    }
    const held = await readLock(file);
    if (held?.content?.token === this.token) await fs.rm(file, { force: true });
  }
}

// ---------------------------------------------------------------------------------------------
// Lock files

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

/** The file opened for reading; undefined when it does not exist. */
async function openIfExists(file: string): Promise<fs.FileHandle | undefined> {
  try {
    return await fs.open(file, 'r');
  } catch (error) {
    if (isCode(error, 'ENOENT')) return undefined;
    throw error;
  }
}

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

function describeHolder(holder: LockHolder | undefined): string {
  if (!holder) return '';
  const where = holder.host === os.hostname() ? '' : ` on ${holder.host}`;
  const seconds = Math.max(0, Math.round((Date.now() - holder.since) / 1000));
  return ` (process ${holder.pid}${where}, writing for ${seconds} s)`;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// ---------------------------------------------------------------------------------------------
// Files

/** One line of a file as `forEachLine` reads it. */
interface RawLine {
  /** 1-based. */
  readonly number: number;
  /** The line without its newline; only its start when it is too long. */
  readonly text: string;
  /** False for a last line without a newline (a write cut off, or one under way). */
  readonly complete: boolean;
  /** The line's full length in bytes, when it is longer than `maxLineBytes`. */
  readonly tooLong?: number;
}

/**
 * Calls `onLine` for each line of a file, read `chunkBytes` at a time and split at newline bytes (a
 * newline byte never occurs inside a UTF-8 character). Hand-made rather than `readline`, because
 * readline gathers a line of any length into one string, and a line too long for a string must be
 * skipped, not crash the reader. Returns the bytes read, or undefined for a missing file.
 */
async function forEachLine(
  file: string,
  chunkBytes: number,
  maxLineBytes: number,
  onLine: (line: RawLine) => Promise<void> | void,
): Promise<number | undefined> {
  const handle = await openIfExists(file);
  if (!handle) return undefined;
  try {
    const chunk = Buffer.allocUnsafe(Math.max(1, chunkBytes));
    let pieces: Buffer[] = [];
    let pending = 0;
    let number = 1;
    let total = 0;
    const keep = (piece: Buffer): void => {
      if (pending + piece.length <= maxLineBytes) pieces.push(Buffer.from(piece));
      // Over the limit: from here on only the line's start is kept (copied, so the rest can go).
      else if (pending <= maxLineBytes)
        pieces = [Buffer.from(Buffer.concat([...pieces, piece]).subarray(0, Math.min(KEPT_OF_LONG_LINE, maxLineBytes)))];
      pending += piece.length;
    };
    const finish = async (complete: boolean): Promise<void> => {
      const text = Buffer.concat(pieces).toString('utf8');
      const line = pending > maxLineBytes ? { number, text, complete, tooLong: pending } : { number, text, complete };
      pieces = [];
      pending = 0;
      number++;
      await onLine(line);
    };
    for (;;) {
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, null);
      if (bytesRead === 0) break;
      total += bytesRead;
      let start = 0;
      while (start < bytesRead) {
        let end = chunk.indexOf(0x0a, start);
        if (end >= bytesRead) end = -1;
        if (end >= 0 && pending === 0 && end - start <= maxLineBytes) {
          // The usual case, a whole line inside one chunk: decoded in place. A caller that returns a
          // promise (an export writing as it reads) is waited for, so reading keeps its pace.
          const waiting = onLine({ number: number++, text: chunk.toString('utf8', start, end), complete: true });
          if (waiting) await waiting;
          start = end + 1;
          continue;
        }
        keep(chunk.subarray(start, end >= 0 ? end : bytesRead));
        if (end < 0) break;
        await finish(true);
        start = end + 1;
      }
    }
    if (pending > 0) await finish(false);
    return total;
  } finally {
    await handle.close();
  }
}

/** Writes all of `data` with as few writes as the system allows: one, unless a write comes back short. */
async function writeAll(handle: fs.FileHandle, data: Buffer): Promise<void> {
  let offset = 0;
  while (offset < data.length) {
    const { bytesWritten } = await handle.write(data, offset, data.length - offset);
    if (bytesWritten <= 0) throw new Error(`Could not write to the conversation file: ${data.length - offset} bytes were left unwritten.`);
    offset += bytesWritten;
  }
}

async function appendWhole(file: string, text: string): Promise<void> {
  const handle = await fs.open(file, 'a');
  try {
    await writeAll(handle, Buffer.from(text, 'utf8'));
  } finally {
    await handle.close();
  }
}

async function byteAt(handle: fs.FileHandle, position: number): Promise<number | undefined> {
  const buffer = Buffer.alloc(1);
  const { bytesRead } = await handle.read(buffer, 0, 1, position);
  return bytesRead === 1 ? buffer[0] : undefined;
}

async function isFile(file: string): Promise<boolean> {
  try {
    return (await fs.stat(file)).isFile();
  } catch (error) {
    if (isCode(error, 'ENOENT')) return false;
    throw error;
  }
}

/** The lines already kept in a damaged file, as `keyOf` keys. */
async function keptAside(damagedFile: string, options: Required<ConversationStoreOptions>): Promise<Set<string>> {
  const kept = new Set<string>();
  await forEachLine(damagedFile, options.readChunkBytes, options.maxLineBytes, (raw) => {
    const entry = safeJson(raw.text);
    if (!isRecord(entry) || typeof entry.line !== 'number' || typeof entry.text !== 'string') return;
    kept.add(keyOf(typeof entry.part === 'number' ? entry.part : 1, entry.line, entry.text));
  });
  return kept;
}

/** Identifies a skipped line; a digest of its text keeps the set small when lines are long. */
function keyOf(part: number, line: number, text: string): string {
  return `${part}:${line}:${createHash('sha256').update(text).digest('base64')}`;
}

// ---------------------------------------------------------------------------------------------
// Cutting a record to size

/** A string in a record that may be cut, and how to put the cut one in its place. */
interface Slot {
  readonly original: string;
  /** Serialized bytes per character, so cuts are sized in what the line is measured in. */
  readonly density: number;
  set(value: string): void;
}

/** Room for the marker a cut leaves: the text plus JSON escapes of its newlines. */
const MARKER_BYTES = 160;

/**
 * The record of `line` with its longest texts cut in the middle until the line fits `maxBytes`.
 * Only content is cut (message text and reasoning, tool inputs and outputs, summaries); ids and
 * structure never are, since cutting them would change what the conversation means. First the
 * strings inside tool inputs and outputs are cut, keeping their shape; when that is not enough
 * (an output of a million small items), whole inputs and outputs become cut JSON text.
 */
function capRecord(line: string, maxBytes: number): LogRecord {
  const excess = Buffer.byteLength(line) - maxBytes;
  let smallest: LogRecord | undefined;
  for (const whole of [false, true]) {
    const copy = withoutTokenCounts((JSON.parse(line) as { record: LogRecord }).record);
    const slots = contentSlots(copy, whole);
    let target = excess;
    for (let attempt = 0; attempt < 8; attempt++) {
      const enough = cutSlots(slots, target);
      const bytes = Buffer.byteLength(JSON.stringify({ v: CONVERSATION_FORMAT_VERSION, record: copy }));
      if (bytes <= maxBytes) return copy;
      smallest = copy;
      if (!enough) break;
      // Escapes and wide characters are spread unevenly: cut by what is still over, and again.
      target += bytes - maxBytes;
    }
  }
  return smallest!;
}

/** A message cut to fit no longer has the counts of the whole one: a reload counts it anew. */
function withoutTokenCounts(record: LogRecord): LogRecord {
  if (record.type !== 'message' || record.tokens === undefined) return record;
  const { tokens: _tokens, ...rest } = record;
  return rest;
}

function contentSlots(record: LogRecord, whole: boolean): Slot[] {
  const slots: Slot[] = [];
  if (record.type === 'message') {
    for (const part of record.message.content as unknown as Array<Record<string, unknown>>) {
      if (part.type === 'text' || part.type === 'reasoning') stringSlot(slots, part, 'text');
      else if (part.type === 'tool-call') valueSlots(slots, part, 'input', whole, 0);
      else if (part.type === 'tool-result') valueSlots(slots, part, 'output', whole, 0);
    }
  } else if (record.type === 'compaction') {
    const entry = record.entry as unknown as Record<string, unknown>;
    for (const key of ['summary', 'focus', 'failure']) stringSlot(slots, entry, key);
  } else if (record.type === 'change') {
    // A change cut to fit can no longer be reverted; its hashes say so when a revert is asked for.
    const change = record.change as unknown as Record<string, unknown>;
    for (const key of ['removed', 'inserted']) stringSlot(slots, change, key);
  }
  return slots;
}

function stringSlot(slots: Slot[], holder: Record<string, unknown> | unknown[], key: string | number): void {
  const value = (holder as Record<string | number, unknown>)[key];
  if (typeof value !== 'string' || value.length === 0) return;
  const density = Buffer.byteLength(JSON.stringify(value)) / value.length;
  slots.push({ original: value, density, set: (next) => ((holder as Record<string | number, unknown>)[key] = next) });
}

function valueSlots(slots: Slot[], holder: Record<string, unknown> | unknown[], key: string | number, whole: boolean, depth: number): void {
  const value = (holder as Record<string | number, unknown>)[key];
  if (typeof value === 'string') return stringSlot(slots, holder, key);
  if (typeof value !== 'object' || value === null) return;
  if (whole || depth > 64) {
    const text = JSON.stringify(value);
    slots.push({
      original: text,
      density: Buffer.byteLength(JSON.stringify(text)) / text.length,
      set: (next) => ((holder as Record<string | number, unknown>)[key] = next),
    });
    return;
  }
  if (Array.isArray(value)) value.forEach((_, index) => valueSlots(slots, value, index, whole, depth + 1));
  else for (const child of Object.keys(value)) valueSlots(slots, value as Record<string, unknown>, child, whole, depth + 1);
}

/**
 * Cuts the longest slots to a common length, the largest that frees `excess` bytes; every slot
 * is set from its original, so repeated calls do not nest markers. False when even cutting every
 * slot to nothing frees too little (they are then cut to nothing).
 */
function cutSlots(slots: readonly Slot[], excess: number): boolean {
  const freed = (keep: number) => slots.reduce((sum, s) => sum + Math.max(0, (s.original.length - keep) * s.density - MARKER_BYTES), 0);
  let low = 0;
  let high = slots.reduce((max, s) => Math.max(max, s.original.length), 0);
  const enough = freed(0) >= excess;
  if (enough) {
    // The largest length to keep that still frees enough.
    while (low < high) {
      const mid = Math.ceil((low + high) / 2);
      if (freed(mid) >= excess) low = mid;
      else high = mid - 1;
    }
  }
  for (const slot of slots) {
    const cutsSomething = (slot.original.length - low) * slot.density > MARKER_BYTES;
    slot.set(cutsSomething ? cutText(slot.original, low) : slot.original);
  }
  return enough;
}

/** `text` with its middle taken out, keeping about `keep` characters, and a marker in their place. */
function cutText(text: string, keep: number): string {
  let head = Math.ceil(keep / 2);
  let tailStart = text.length - Math.floor(keep / 2);
  // Never split a surrogate pair: half a character is not text.
  if (head > 0 && isHighSurrogate(text.charCodeAt(head - 1))) head--;
  if (tailStart < text.length && isLowSurrogate(text.charCodeAt(tailStart))) tailStart++;
  const tail = text.length - tailStart;
  return `${text.slice(0, head)}\n[… cut by Longrun: ${thousands(text.length)} characters in all; the first ${thousands(head)} and the last ${thousands(tail)} are kept]\n${text.slice(tailStart)}`;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

function thousands(n: number): string {
  return n.toLocaleString('en-US');
}

// ---------------------------------------------------------------------------------------------
// Lines

function parseLine(text: string, first: boolean, id: string, part: number): ParsedLine {
  if (text.trim() === '') return { kind: 'blank' };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { kind: 'damaged', error: `not valid JSON: ${errorText(error)}` };
  }
  if (!isRecord(value)) return { kind: 'damaged', error: 'not a JSON object' };
  const version = value.v;
  if (version === PART_END_VERSION && value.kind === PART_END_KIND) return { kind: 'blank' };
  if (typeof version === 'number' && version > CONVERSATION_FORMAT_VERSION) {
    // A newer header may mean a different layout of the whole file; a newer line among ours is one
    // record this version does not know, and the rest is still readable.
    if (first) return { kind: 'future', version };
    return { kind: 'damaged', error: `it was written by a newer version of Longrun, format version ${version}` };
  }
  if (version !== CONVERSATION_FORMAT_VERSION) return { kind: 'damaged', error: `unknown format version ${JSON.stringify(version) ?? 'undefined'}` };

  if (first) {
    const header = headerSchema().safeParse(value);
    if (!header.success) return { kind: 'damaged', error: `not a valid conversation header: ${describeIssues(header.error)}` };
    if (header.data.id !== id) return { kind: 'damaged', error: `the header names conversation "${header.data.id}"` };
    if ((header.data.part ?? 1) !== part) return { kind: 'damaged', error: `the header names part ${header.data.part ?? 1}` };
    return { kind: 'header' };
  }
  const line = recordLineSchema().safeParse(value);
  if (line.success) return { kind: 'record', record: line.data.record };
  const type = isRecord(value.record) ? value.record.type : undefined;
  if (typeof type === 'string' && !RECORD_TYPES.has(type)) {
    return { kind: 'damaged', error: `an unknown kind of record, "${type}", probably written by a newer version of Longrun` };
  }
  return { kind: 'damaged', error: `not a valid log record: ${describeIssues(line.error)}` };
}

/** The version in a file's first line when it is newer than this build's. */
function futureVersionOf(head: string): number | undefined {
  const newline = head.indexOf('\n');
  const value = safeJson(newline < 0 ? head : head.slice(0, newline));
  if (isRecord(value) && typeof value.v === 'number' && value.v > CONVERSATION_FORMAT_VERSION) return value.v;
  return undefined;
}

function describeIssues(error: z.ZodError): string {
  const [first, ...rest] = error.issues;
  if (!first) return 'invalid';
  const where = first.path.length > 0 ? `${first.path.map(String).join('.')}: ` : '';
  return `${where}${first.message}${rest.length > 0 ? ` (and ${rest.length} more)` : ''}`;
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

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function isCode(error: unknown, code: string): boolean {
  return isRecord(error) && error.code === code;
}

// ---------------------------------------------------------------------------------------------
// The index of conversations and their summaries, kept in VS Code's workspace state.

/** The part of VS Code's `Memento` the index uses (its `Thenable` is a `PromiseLike`). */
export interface MementoLike {
  get<T>(key: string): T | undefined;
  update(key: string, value: unknown): PromiseLike<void>;
}

/** One conversation as listed to the user. */
export interface ConversationInfo {
  readonly id: string;
  readonly title: string;
  /** Milliseconds since the epoch. */
  readonly createdAt: number;
  readonly updatedAt: number;
}

/** A compaction summary as shown in the UI; the full entry lives in the conversation file. */
export interface StoredSummary {
  /** The compaction entry it belongs to. */
  readonly entryId: string;
  readonly round: number;
  readonly reason: CompactionReason;
  readonly summary: string;
  readonly tokensBefore: number;
  readonly tokensAfter: number;
  readonly createdAt: number;
  readonly fallback: boolean;
}

const conversationInfoSchema = lazily(() =>
  z.object({
    id: z.string().min(1),
    title: z.string(),
    createdAt: z.number(),
    updatedAt: z.number(),
  }),
);

const storedSummarySchema = lazily(() =>
  z.object({
    entryId: z.string().min(1),
    round: z.number().int().min(1),
    reason: reasonSchema(),
    summary: z.string(),
    tokensBefore: countSchema(),
    tokensAfter: countSchema(),
    createdAt: z.number(),
    fallback: z.boolean(),
  }),
);

const INDEX_VERSION = 1;
const indexSchema = lazily(() =>
  z.object({
    version: z.literal(INDEX_VERSION),
    current: z.string().optional(),
    conversations: z.array(z.unknown()),
  }),
);
const summariesSchema = lazily(() => z.object({ version: z.literal(INDEX_VERSION), summaries: z.array(z.unknown()) }));

/** The workspace-state key of one conversation's summaries. */
export const summariesKey = (id: string): string => `longrun.summaries.${id}`;

/**
 * The list of conversations, the current one, and each conversation's summaries. Values are read
 * once, validated, and cached; unreadable state counts as empty and is reported in `problems()`.
 */
export class ConversationIndex {
  private readonly reported: string[] = [];
  /** The stored list, read and checked on first use (not when the extension starts). */
  private loaded: { currentId: string | undefined; conversations: ConversationInfo[] } | undefined;
  private readonly summaryCache = new Map<string, StoredSummary[]>();

  constructor(private readonly state: MementoLike) {}

  private get index(): { currentId: string | undefined; conversations: ConversationInfo[] } {
    return (this.loaded ??= this.readIndex());
  }

  private readIndex(): { currentId: string | undefined; conversations: ConversationInfo[] } {
    const stored = this.readList(INDEX_KEY, indexSchema(), 'the list of Longrun conversations');
    const conversations = this.validItems(stored?.conversations ?? [], conversationInfoSchema(), 'conversation', (c) => c.id);
    return { currentId: stored?.current, conversations };
  }

  /** The conversation the chat continues, if any. */
  current(): string | undefined {
    return this.index.currentId;
  }

  async setCurrent(id: string | undefined): Promise<void> {
    this.index.currentId = id;
    await this.saveIndex();
  }

  /** Conversations, most recently updated first. */
  list(): ConversationInfo[] {
    return [...this.index.conversations].sort((a, b) => b.updatedAt - a.updatedAt);
  }

  /** Adds a conversation or replaces the one with the same id. */
  async upsert(info: ConversationInfo): Promise<void> {
    const item = conversationInfoSchema().parse(info);
    const at = this.index.conversations.findIndex((c) => c.id === item.id);
    this.index.conversations = at < 0 ? [...this.index.conversations, item] : this.index.conversations.map((c, i) => (i === at ? item : c));
    await this.saveIndex();
  }

  /** A conversation's summaries, in the order they were added. */
  summaries(id: string): StoredSummary[] {
    return [...this.loadSummaries(id)];
  }

  /** Adds a summary, or replaces the one for the same compaction entry. */
  async addSummary(id: string, summary: StoredSummary): Promise<void> {
    const item = storedSummarySchema().parse(summary);
    const list = this.loadSummaries(id);
    const at = list.findIndex((s) => s.entryId === item.entryId);
    await this.saveSummaries(id, at < 0 ? [...list, item] : list.map((s, i) => (i === at ? item : s)));
  }

  async removeSummary(id: string, entryId: string): Promise<void> {
    await this.saveSummaries(
      id,
      this.loadSummaries(id).filter((s) => s.entryId !== entryId),
    );
  }

  /** What could not be read back from the stored state, one sentence each. */
  problems(): string[] {
    this.loaded ??= this.readIndex();
    return [...this.reported];
  }

  private loadSummaries(id: string): StoredSummary[] {
    let list = this.summaryCache.get(id);
    if (!list) {
      const stored = this.readList(summariesKey(id), summariesSchema(), `the summaries of conversation "${id}"`);
      list = this.validItems(stored?.summaries ?? [], storedSummarySchema(), `summary of conversation "${id}"`, (s) => s.entryId);
      this.summaryCache.set(id, list);
    }
    return list;
  }

  private async saveSummaries(id: string, list: StoredSummary[]): Promise<void> {
    this.summaryCache.set(id, list);
    await this.state.update(summariesKey(id), { version: INDEX_VERSION, summaries: list });
  }

  private async saveIndex(): Promise<void> {
    await this.state.update(INDEX_KEY, {
      version: INDEX_VERSION,
      ...(this.index.currentId !== undefined ? { current: this.index.currentId } : {}),
      conversations: this.index.conversations,
    });
  }

  private readList<T>(key: string, schema: z.ZodType<T>, what: string): T | undefined {
    const raw = this.state.get<unknown>(key);
    if (raw === undefined) return undefined;
    const parsed = schema.safeParse(raw);
    if (parsed.success) return parsed.data;
    const version = isRecord(raw) ? raw.version : undefined;
    const why =
      typeof version === 'number' && version > INDEX_VERSION
        ? `it was saved by a newer version of Longrun (version ${version})`
        : describeIssues(parsed.error);
    this.reported.push(`Longrun could not read ${what} from the workspace state (${why}); treating it as empty.`);
    return undefined;
  }

  private validItems<T>(items: readonly unknown[], schema: z.ZodType<T>, what: string, idOf: (item: T) => string): T[] {
    const out: T[] = [];
    const seen = new Set<string>();
    items.forEach((item, index) => {
      const parsed = schema.safeParse(item);
      if (!parsed.success) {
        this.reported.push(`Longrun left out stored ${what} number ${index + 1}, which is unreadable (${describeIssues(parsed.error)}).`);
        return;
      }
      const key = idOf(parsed.data);
      if (seen.has(key)) {
        this.reported.push(`Longrun left out stored ${what} number ${index + 1}, a duplicate of "${key}".`);
        return;
      }
      seen.add(key);
      out.push(parsed.data);
    });
    return out;
  }
}
