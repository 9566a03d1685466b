import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import { parseLedger } from '../core/file-ledger';
import type { CompactionReason, LogRecord } from '../core/history';
import { LEGACY_BASIS } from '../core/usage-calibration';

/**
 * Where conversations live between sessions. Deliberately free of `vscode`: the extension passes
 * `context.storageUri.fsPath` and `context.workspaceState`, tests pass a temp dir and a map.
 *
 * A conversation is one JSONL file, `<dir>/conversations/<id>.jsonl`: a header line, then one line
 * per log record. The file is only ever appended to, one line per record, so a crash can cost at
 * most the line being written. Lines that cannot be read back are skipped, reported, and copied to
 * `<id>.damaged.jsonl` beside it; they also stay where they are, since the file is never rewritten.
 */

/** The format version this build writes and reads. */
export const CONVERSATION_FORMAT_VERSION = 1;

// ---------------------------------------------------------------------------------------------
// Schemas of what is stored: they mirror `LogRecord` and everything it holds.

const textPartSchema = z.object({ type: z.literal('text'), text: z.string() });
const reasoningPartSchema = z.object({ type: z.literal('reasoning'), text: z.string() });
const toolCallPartSchema = z.object({
  type: z.literal('tool-call'),
  toolCallId: z.string(),
  toolName: z.string(),
  input: z.unknown(),
});
const toolResultPartSchema = z.object({
  type: z.literal('tool-result'),
  toolCallId: z.string(),
  toolName: z.string(),
  output: z.unknown(),
  isError: z.boolean().optional(),
});
const filePartSchema = z.object({
  type: z.literal('file'),
  mediaType: z.string(),
  name: z.string().optional(),
  size: z.number().min(0).optional(),
});

const messageSchema = z.object({
  id: z.string().min(1),
  role: z.enum(['system', 'user', 'assistant', 'tool']),
  content: z.array(
    z.discriminatedUnion('type', [textPartSchema, reasoningPartSchema, toolCallPartSchema, toolResultPartSchema, filePartSchema]),
  ),
  summaryOf: z.string().optional(),
});

const count = z.number().min(0);
const reasonSchema = z.enum(['threshold', 'overflow', 'manual']);

const ledgerSchema = z.unknown().transform((value, ctx) => {
  const ledger = parseLedger(value);
  if (ledger === undefined) {
    ctx.addIssue({ code: 'custom', message: 'is not a valid file ledger' });
    return z.NEVER;
  }
  return ledger;
});

const compactionEntrySchema = z.object({
  id: z.string().min(1),
  round: z.number().int().min(1),
  reason: reasonSchema,
  summary: z.string(),
  firstKeptMessageId: z.string().nullable(),
  compactedMessageIds: z.array(z.string()),
  tokensBefore: count,
  tokensAfter: count,
  fileOperations: ledgerSchema,
  model: z.string(),
  durationMs: count,
  createdAt: z.number(),
  summaryRole: z.enum(['user', 'assistant']),
  fallback: z.boolean(),
  lowGain: z.boolean(),
  splitTurn: z.boolean(),
  summarizerCalls: z.number().int().min(0),
  focus: z.string().optional(),
  failure: z.string().optional(),
});

// Records written before usage carried its basis have a round number instead: they never calibrate.
const usageSchema = z
  .object({
    anchorMessageId: z.string(),
    inputTokens: count,
    outputTokens: count,
    basis: z.string().nullable().optional(),
    round: z.number().int().min(0).optional(),
    localTokens: count.optional(),
    model: z.string().optional(),
    truncated: z.boolean().optional(),
  })
  .transform(({ round: _round, basis, ...rest }) => ({ ...rest, basis: basis === undefined ? LEGACY_BASIS : basis }));

const fileEventSchema = z
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
  });

/** Typed as `ZodType<LogRecord>` so the compiler checks that the schema and the type agree. */
const logRecordSchema: z.ZodType<LogRecord> = z.discriminatedUnion('type', [
  z.object({ type: z.literal('message'), message: messageSchema }),
  z.object({ type: z.literal('compaction'), entry: compactionEntrySchema }),
  z.object({ type: z.literal('undo'), entryId: z.string().min(1), at: z.number() }),
  z.object({ type: z.literal('usage'), usage: usageSchema }),
  z.object({ type: z.literal('file'), event: fileEventSchema }),
]);

const headerSchema = z.object({
  v: z.literal(CONVERSATION_FORMAT_VERSION),
  kind: z.literal('longrun-conversation'),
  id: z.string(),
  createdAt: z.number(),
});

const recordLineSchema = z.object({ v: z.literal(CONVERSATION_FORMAT_VERSION), record: logRecordSchema });

// ---------------------------------------------------------------------------------------------

const VERSION_ERROR = Symbol.for('longrun.ConversationVersionError');

/** A conversation file written by a newer Longrun. It is left untouched. */
export class ConversationVersionError extends Error {
  private readonly [VERSION_ERROR] = true;

  constructor(
    readonly conversationId: string,
    readonly version: number,
    readonly file: string,
  ) {
    super(
      `Conversation "${conversationId}" was saved by a newer version of Longrun (format version ${version}; ` +
        `this version reads ${CONVERSATION_FORMAT_VERSION}). Update Longrun to open it; the file was left unchanged: ${file}`,
    );
    this.name = 'ConversationVersionError';
  }

  static isInstance(error: unknown): error is ConversationVersionError {
    return typeof error === 'object' && error !== null && VERSION_ERROR in error;
  }
}

/** What `open` read back. */
export interface OpenedConversation {
  /** Every record that could be read, in the order it was written. */
  readonly log: LogRecord[];
  /** One sentence per line that was skipped (or could not be kept aside), naming its line number. */
  readonly problems: string[];
}

/** One skipped line, as kept in `<id>.damaged.jsonl`. */
export interface DamagedLine {
  /** 1-based line number in the conversation file. */
  readonly line: number;
  readonly text: string;
  readonly error: string;
  /** When it was found, in milliseconds since the epoch. */
  readonly at: number;
}

/** Ids become file names, so only characters that are safe on every platform are allowed. */
const ID_PATTERN = /^[A-Za-z0-9_-]{1,200}$/;

/** How much of the file start is read to check its header before an append. */
const HEAD_BYTES = 64 * 1024;

type ParsedLine =
  | { readonly kind: 'blank' }
  | { readonly kind: 'header' }
  | { readonly kind: 'record'; readonly record: LogRecord }
  | { readonly kind: 'future'; readonly version: number }
  | { readonly kind: 'damaged'; readonly error: string };

/** The per-workspace conversation files. One instance per storage folder. */
export class ConversationStore {
  /** The tail of each conversation's queue of file operations. */
  private readonly queues = new Map<string, Promise<unknown>>();
  /** Conversations whose header this instance has already checked for a newer version. */
  private readonly checked = new Set<string>();

  /**
   * @param dir the storage folder (VS Code's `context.storageUri.fsPath`); created on first write.
   * @param now the clock, in milliseconds since the epoch.
   */
  constructor(
    private readonly dir: string,
    private readonly now: () => number,
  ) {}

  /** Reads a conversation. A missing file is an empty conversation; a newer format is refused. */
  async open(id: string): Promise<OpenedConversation> {
    const file = this.fileOf(id);
    return this.enqueue(id, () => this.read(id, file));
  }

  /**
   * Appends one record as one line. Calls for the same conversation run one after another in call
   * order. Writes the header first when the file is new, and a newline first when the previous
   * write was cut off, so the record always starts a line of its own.
   */
  async append(id: string, record: LogRecord): Promise<void> {
    const file = this.fileOf(id);
    const line = serialize(record);
    return this.enqueue(id, () => this.appendLine(id, file, line));
  }

  /** Creates an empty conversation (just its header); does nothing when it already exists. */
  async create(id: string): Promise<void> {
    const file = this.fileOf(id);
    return this.enqueue(id, async () => {
      await fs.mkdir(path.dirname(file), { recursive: true });
      try {
        await fs.writeFile(file, `${this.header(id)}\n`, { flag: 'wx' });
      } catch (error) {
        if (!isCode(error, 'EEXIST')) throw error;
      }
    });
  }

  async exists(id: string): Promise<boolean> {
    try {
      return (await fs.stat(this.fileOf(id))).isFile();
    } catch (error) {
      if (isCode(error, 'ENOENT')) return false;
      throw error;
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
    return names
      .filter((name) => name.endsWith('.jsonl') && !name.endsWith('.damaged.jsonl'))
      .map((name) => name.slice(0, -'.jsonl'.length))
      .filter((id) => ID_PATTERN.test(id))
      .sort();
  }

  /** Where a conversation's skipped lines are kept. */
  damagedFileOf(id: string): string {
    return path.join(this.folder(), `${checkId(id)}.damaged.jsonl`);
  }

  private folder(): string {
    return path.join(this.dir, 'conversations');
  }

  private fileOf(id: string): string {
    return path.join(this.folder(), `${checkId(id)}.jsonl`);
  }

  private header(id: string): string {
    return JSON.stringify({ v: CONVERSATION_FORMAT_VERSION, kind: 'longrun-conversation', id, createdAt: this.now() });
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

  private async read(id: string, file: string): Promise<OpenedConversation> {
    let content: string;
    try {
      content = await fs.readFile(file, 'utf8');
    } catch (error) {
      if (isCode(error, 'ENOENT')) return { log: [], problems: [] };
      throw error;
    }

    const lines = content.split('\n');
    // The text after the last newline: empty when the file ends cleanly, else an unfinished line.
    const unfinished = lines.pop() ?? '';
    const log: LogRecord[] = [];
    const damaged: Array<{ line: number; text: string; error: string; cutOff: boolean }> = [];

    const all = unfinished === '' ? lines : [...lines, unfinished];
    for (let index = 0; index < all.length; index++) {
      const text = all[index]!;
      const parsed = parseLine(text, index === 0, id);
      if (parsed.kind === 'future') throw new ConversationVersionError(id, parsed.version, file);
      if (parsed.kind === 'record') log.push(parsed.record);
      else if (parsed.kind === 'damaged') {
        const cutOff = unfinished !== '' && index === all.length - 1;
        damaged.push({ line: index + 1, text, error: cutOff ? `${parsed.error}; the line is incomplete` : parsed.error, cutOff });
      }
    }
    this.checked.add(id);
    if (damaged.length === 0) return { log, problems: [] };

    const damagedFile = this.damagedFileOf(id);
    const problems = damaged.map((d) =>
      d.cutOff
        ? `Line ${d.line} of conversation "${id}" is incomplete (its write was probably cut off by a crash) and was skipped; a copy is kept in ${damagedFile}.`
        : `Line ${d.line} of conversation "${id}" could not be read (${d.error}) and was skipped; a copy is kept in ${damagedFile}.`,
    );
    try {
      await this.keepAside(damagedFile, damaged);
    } catch (error) {
      problems.push(
        `The ${damaged.length} unreadable line(s) of conversation "${id}" could not be copied to ${damagedFile} (${errorText(error)}); they remain in ${file}.`,
      );
    }
    return { log, problems };
  }

  /** Copies skipped lines to the damaged file, once: lines already kept there are not repeated. */
  private async keepAside(damagedFile: string, damaged: ReadonlyArray<{ line: number; text: string; error: string }>): Promise<void> {
    const kept = new Set<string>();
    try {
      for (const raw of (await fs.readFile(damagedFile, 'utf8')).split('\n')) {
        const entry = safeJson(raw);
        if (isRecord(entry) && typeof entry.line === 'number' && typeof entry.text === 'string') kept.add(keyOf(entry.line, entry.text));
      }
    } catch (error) {
      if (!isCode(error, 'ENOENT')) throw error;
    }
    const at = this.now();
    const fresh = damaged
      .filter((d) => !kept.has(keyOf(d.line, d.text)))
      .map((d): DamagedLine => ({ line: d.line, text: d.text, error: d.error, at }));
    if (fresh.length === 0) return;
    await appendText(damagedFile, fresh.map((d) => JSON.stringify(d)).join('\n') + '\n', () => '');
  }

  private async appendLine(id: string, file: string, line: string): Promise<void> {
    await fs.mkdir(path.dirname(file), { recursive: true });
    await appendText(file, `${line}\n`, ({ size }) => (size === 0 ? `${this.header(id)}\n` : ''), async (head) => {
      if (this.checked.has(id)) return;
      const version = futureVersionOf(head);
      if (version !== undefined) throw new ConversationVersionError(id, version, file);
      this.checked.add(id);
    });
  }
}

/**
 * Appends `text` with a single write. A newline goes first when the file does not end with one
 * (the previous write was cut off), `prefix` when the file is empty; `check` may refuse the append
 * by throwing, after seeing the start of a non-empty file.
 */
async function appendText(
  file: string,
  text: string,
  prefix: (file: { size: number }) => string,
  check?: (head: string) => Promise<void>,
): Promise<void> {
  const handle = await fs.open(file, 'a+');
  try {
    const { size } = await handle.stat();
    let lead = prefix({ size });
    if (size > 0) {
      if (check) {
        const head = Buffer.alloc(Math.min(size, HEAD_BYTES));
        const { bytesRead } = await handle.read(head, 0, head.length, 0);
        await check(head.subarray(0, bytesRead).toString('utf8'));
      }
      const last = Buffer.alloc(1);
      await handle.read(last, 0, 1, size - 1);
      if (last[0] !== 0x0a) lead = '\n' + lead;
    }
    await handle.appendFile(lead + text, 'utf8');
    await handle.datasync();
  } finally {
    await handle.close();
  }
}

function serialize(record: LogRecord): string {
  const line = JSON.stringify({ v: CONVERSATION_FORMAT_VERSION, record });
  // Check what the reader will see, so a record that could not be read back is never written.
  const check = recordLineSchema.safeParse(JSON.parse(line));
  if (!check.success) throw new Error(`Refusing to store an invalid log record: ${describeIssues(check.error)}`);
  return line;
}

function parseLine(text: string, first: boolean, id: string): ParsedLine {
  if (text.trim() === '') return { kind: 'blank' };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { kind: 'damaged', error: `not valid JSON: ${errorText(error)}` };
  }
  if (!isRecord(value)) return { kind: 'damaged', error: 'not a JSON object' };
  const version = value.v;
  if (typeof version === 'number' && version > CONVERSATION_FORMAT_VERSION) return { kind: 'future', version };
  if (version !== CONVERSATION_FORMAT_VERSION) return { kind: 'damaged', error: `unknown format version ${JSON.stringify(version) ?? 'undefined'}` };

  if (first) {
    const header = headerSchema.safeParse(value);
    if (!header.success) return { kind: 'damaged', error: `not a valid conversation header: ${describeIssues(header.error)}` };
    if (header.data.id !== id) return { kind: 'damaged', error: `the header names conversation "${header.data.id}"` };
    return { kind: 'header' };
  }
  const line = recordLineSchema.safeParse(value);
  if (!line.success) return { kind: 'damaged', error: `not a valid log record: ${describeIssues(line.error)}` };
  return { kind: 'record', record: line.data.record };
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

function checkId(id: string): string {
  if (!ID_PATTERN.test(id)) throw new Error(`Invalid conversation id ${JSON.stringify(id)}: use 1 to 200 letters, digits, "_" or "-".`);
  return id;
}

function keyOf(line: number, text: string): string {
  return `${line}\u0000${text}`;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isCode(error: unknown, code: string): boolean {
  return isRecord(error) && error.code === code;
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
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

const conversationInfoSchema = z.object({
  id: z.string().min(1),
  title: z.string(),
  createdAt: z.number(),
  updatedAt: z.number(),
});

const storedSummarySchema = z.object({
  entryId: z.string().min(1),
  round: z.number().int().min(1),
  reason: reasonSchema,
  summary: z.string(),
  tokensBefore: count,
  tokensAfter: count,
  createdAt: z.number(),
  fallback: z.boolean(),
});

const INDEX_VERSION = 1;
const indexSchema = z.object({
  version: z.literal(INDEX_VERSION),
  current: z.string().optional(),
  conversations: z.array(z.unknown()),
});
const summariesSchema = z.object({ version: z.literal(INDEX_VERSION), summaries: z.array(z.unknown()) });

/** The workspace-state key of the conversation index. */
export const INDEX_KEY = 'longrun.conversations';
/** The workspace-state key of one conversation's summaries. */
export const summariesKey = (id: string): string => `longrun.summaries.${id}`;

/**
 * The list of conversations, the current one, and each conversation's summaries. Values are read
 * once, validated, and cached; unreadable state counts as empty and is reported in `problems()`.
 */
export class ConversationIndex {
  private readonly reported: string[] = [];
  private currentId: string | undefined;
  private conversations: ConversationInfo[];
  private readonly summaryCache = new Map<string, StoredSummary[]>();

  constructor(private readonly state: MementoLike) {
    const stored = this.readList(INDEX_KEY, indexSchema, 'the list of Longrun conversations');
    this.currentId = stored?.current;
    this.conversations = this.validItems(stored?.conversations ?? [], conversationInfoSchema, 'conversation', (c) => c.id);
  }

  /** The conversation the chat continues, if any. */
  current(): string | undefined {
    return this.currentId;
  }

  async setCurrent(id: string | undefined): Promise<void> {
    this.currentId = id;
    await this.saveIndex();
  }

  /** Conversations, most recently updated first. */
  list(): ConversationInfo[] {
    return [...this.conversations].sort((a, b) => b.updatedAt - a.updatedAt);
  }

  /** Adds a conversation or replaces the one with the same id. */
  async upsert(info: ConversationInfo): Promise<void> {
    const item = conversationInfoSchema.parse(info);
    const at = this.conversations.findIndex((c) => c.id === item.id);
    this.conversations = at < 0 ? [...this.conversations, item] : this.conversations.map((c, i) => (i === at ? item : c));
    await this.saveIndex();
  }

  /** A conversation's summaries, in the order they were added. */
  summaries(id: string): StoredSummary[] {
    return [...this.loadSummaries(id)];
  }

  /** Adds a summary, or replaces the one for the same compaction entry. */
  async addSummary(id: string, summary: StoredSummary): Promise<void> {
    const item = storedSummarySchema.parse(summary);
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
    return [...this.reported];
  }

  private loadSummaries(id: string): StoredSummary[] {
    let list = this.summaryCache.get(id);
    if (!list) {
      const stored = this.readList(summariesKey(id), summariesSchema, `the summaries of conversation "${id}"`);
      list = this.validItems(stored?.summaries ?? [], storedSummarySchema, `summary of conversation "${id}"`, (s) => s.entryId);
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
      ...(this.currentId !== undefined ? { current: this.currentId } : {}),
      conversations: this.conversations,
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
