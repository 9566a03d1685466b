/**
 * Memory of an opened conversation. A conversation of about 500 MiB on disk (turns of long tool
 * outputs, compacted as it went, as Longrun writes them) is opened in a fresh process the way a
 * window opens it (read, then the model's view and its count), and the growth of the process's
 * resident memory is reported once the process has settled (see `settled`); then a 40 MB answer is
 * appended and the growth reported again, and once more after a session of two thousand more
 * requests, compacted as they came (what a compaction took out is let go). The target is under twice the view plus 50 MB: what the model sees, not
 * how long the history is. Run on its own with `npx tsx bench/memory.ts`.
 */
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as v8 from 'node:v8';
import type { Conversation } from '../src/app/conversation/conversation';
import { ConversationRegistry } from '../src/app/conversation/conversation-registry';
import { ConversationIndex } from '../src/app/store/conversation-index';
import { ConversationStore } from '../src/app/store/conversation-store';
import { DEFAULT_CONFIG } from '../src/core/config';
import { EMPTY_LEDGER } from '../src/core/file-ledger';
import type { LogRecord } from '../src/core/history';
import { MessageTokenCounter, withTokenCounts } from '../src/core/message-tokens';
import { systemClock, type Summarizer } from '../src/core/ports';
import { charEstimator } from '../src/core/tokenizer';

export interface MemoryBench {
  /** Size of the conversation on disk (MiB). */
  readonly stored_mib: number;
  /** The model's view once opened, as JSON (MB). */
  readonly view_mb: number;
  /** Resident memory the opened conversation holds (MB). */
  readonly open_rss_mb: number;
  /** The heap (and memory outside it) the opened conversation holds (MB). */
  readonly open_heap_mb: number;
  /** Resident memory it holds after a 40 MB answer was appended (MB). */
  readonly answer_rss_mb: number;
  /** What a session of `SESSION_TURNS` more requests, compacted as it went, wrote (MB). */
  readonly session_mb: number;
  /** Resident memory held after that session (MB). */
  readonly session_rss_mb: number;
  /** The heap (and memory it manages outside) held after that session (MB). */
  readonly session_heap_mb: number;
}

const ID = 'long';
const TARGET_BYTES = 500 * 1024 * 1024;
/** Characters of each tool output: a file read whole. */
const OUTPUT_CHARS = 24 * 1024;
/** Messages between compactions; each takes out all but the last turns. */
const COMPACT_EVERY = 400;
const KEEP_MESSAGES = 40;
const ANSWER_CHARS = 40 * 1024 * 1024;
/** Requests of the session that goes on after opening. */
const SESSION_TURNS = 2_000;

/** A summarizer that answers at once, with a summary as long as a real one. */
const SUMMARIZER: Summarizer = {
  name: 'bench',
  summarize: async () => ({ text: `## Session Summary\n${'The handlers check their input before retrying. '.repeat(60)}` }),
};

const CODE_LINE = '  const result = await handler.process(input, { retries: 3, timeoutMs: 5_000 }); // keep the order\n';

/** A file's text, different for each read, so that nothing is shared between outputs. */
function output(n: number): string {
  const head = `// read ${n}: src/module${n % 37}/part${n % 11}.ts\n`;
  return head + CODE_LINE.repeat(Math.ceil((OUTPUT_CHARS - head.length) / CODE_LINE.length)).slice(0, OUTPUT_CHARS - head.length);
}

function compaction(n: number, round: number, compacted: readonly string[], firstKept: string): LogRecord {
  return {
    type: 'compaction',
    entry: {
      id: `c${n}`,
      round,
      reason: 'threshold',
      summary: `## Session Summary\n${'The handlers check their input before retrying. '.repeat(60)}`,
      firstKeptMessageId: firstKept,
      compactedMessageIds: compacted,
      tokensBefore: 100_000,
      tokensAfter: 20_000,
      fileOperations: EMPTY_LEDGER,
      model: 'bench',
      durationMs: 1,
      createdAt: 0,
      summaryRole: 'user',
      fallback: false,
      lowGain: false,
      splitTurn: false,
      summarizerCalls: 1,
      needles: { version: 1, through: compacted.at(-1) ?? null, needles: [], openCalls: {} },
    },
  };
}

/** An id as Longrun makes one: the time in base 36, a dash, eight random characters (here drawn from `n`). */
function idOf(n: number): string {
  const random = ((n * 2_654_435_761) >>> 0).toString(36).padStart(8, '0').slice(-8);
  return `${(1_760_000_000_000 + n * 997).toString(36)}-${random}`;
}

/** Writes the conversation through the store, in batches, one turn per request; resolves with its size on disk. */
async function build(store: ConversationStore): Promise<number> {
  const counter = new MessageTokenCounter(charEstimator);
  let written = 0;
  let batch: LogRecord[] = [];
  let ids: string[] = [];
  let round = 0;
  const push = (record: LogRecord): void => {
    const counted = withTokenCounts(record, counter);
    batch.push(counted);
    if (record.type === 'message') ids.push(record.message.id);
  };
  let parent: string | null = null;
  for (let turn = 0; written < TARGET_BYTES; turn++) {
    const call = `call_${idOf(turn * 8 + 7)}`;
    const turnId = idOf(turn * 8);
    batch.push({ type: 'turn', turn: { id: turnId, parent, at: turn } });
    parent = turnId;
    const on = (record: LogRecord): LogRecord => ({ ...record, turnId });
    push(
      on({
        type: 'message',
        message: { id: idOf(turn * 8 + 1), role: 'user', content: [{ type: 'text', text: `Turn ${turn}: read the module and fix it.` }] },
      }),
    );
    push(
      on({
        type: 'message',
        message: {
          id: idOf(turn * 8 + 2),
          role: 'assistant',
          content: [{ type: 'tool-call', toolCallId: call, toolName: 'read_file', input: { path: `src/module${turn % 37}.ts` } }],
        },
      }),
    );
    push(
      on({
        type: 'message',
        message: {
          id: idOf(turn * 8 + 3),
          role: 'tool',
          content: [{ type: 'tool-result', toolCallId: call, toolName: 'read_file', output: output(turn) }],
        },
      }),
    );
    push(
      on({
        type: 'message',
        message: { id: idOf(turn * 8 + 4), role: 'assistant', content: [{ type: 'text', text: `Module ${turn % 37} is fixed.` }] },
      }),
    );
    if (ids.length >= COMPACT_EVERY) {
      const kept = ids.slice(-KEEP_MESSAGES);
      batch.push(on(compaction(turn, ++round, ids.slice(0, -KEEP_MESSAGES), kept[0]!)));
      ids = kept;
    }
    if (batch.length >= 200) {
      await store.appendAll(ID, batch);
      batch = [];
      written = await store.size(ID);
    }
  }
  await store.appendAll(ID, batch);
  return store.size(ID);
}

const CHILD = '--memory-child';

/** Most seconds a reading waits for the process to settle. */
const SETTLE_SECONDS = 45;
/** Committed bytes of V8's young generation at which the process counts as settled. */
const SETTLED_YOUNG_BYTES = 2 * 1024 * 1024;

/** Bytes V8 holds committed for its young generation (objects that have not yet survived a collection). */
function youngBytes(): number {
  return v8.getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')?.physical_space_size ?? 0;
}

/**
 * Resident memory and heap in use after a full collection, once the process has settled (bytes).
 * Reading a large file makes V8 grow its young generation to its most (tens of megabytes, whatever
 * the file holds); it gives it back to the system after some idle seconds, as in a window that
 * settles after opening a conversation. So each reading waits, idle, until that has happened (or
 * `SETTLE_SECONDS` passed): what remains is what the process holds, not what it passed through.
 */
async function settled(): Promise<{ rss: number; heap: number }> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with --expose-gc');
  const deadline = Date.now() + SETTLE_SECONDS * 1000;
  gc();
  while (youngBytes() > SETTLED_YOUNG_BYTES && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    gc();
  }
  gc();
  const usage = process.memoryUsage();
  return { rss: usage.rss, heap: usage.heapUsed + usage.external };
}

/** In the child: opens the conversation as a window does and measures what it holds. */
async function child(dir: string): Promise<void> {
  const store = new ConversationStore(dir, Date.now);
  const state = new Map<string, unknown>();
  const index = new ConversationIndex({ get: (k) => state.get(k) as never, update: async (k, v) => void state.set(k, v) });
  const counter = new MessageTokenCounter(charEstimator);
  let ids = 0;
  const before = await settled();
  const registry = new ConversationRegistry({
    store,
    index,
    clock: systemClock,
    newId: () => `bench-${++ids}`,
    conversationDeps: () => ({
      store,
      index,
      clock: systemClock,
      newId: () => `bench-${++ids}`,
      config: () => DEFAULT_CONFIG,
      model: () => ({ name: 'bench', window: { limit: 1_000_000, source: 'model' }, counter, requestOverhead: 0, outputReserve: 0 }),
      summarizer: () => Promise.resolve(SUMMARIZER),
    }),
    warn: (message) => void process.stderr.write(`${message}\n`),
    error: (message) => void process.stderr.write(`${message}\n`),
    info: () => undefined,
    changed: () => undefined,
  });
  const conversation = await registry.open(ID);
  if (!conversation) throw new Error('the conversation did not open');
  const viewBytes = Buffer.byteLength(JSON.stringify(conversation.view()));
  conversation.assess();
  const open = await settled();
  await conversation.append([
    { type: 'message', message: { id: 'answer', role: 'assistant', content: [{ type: 'text', text: 'x'.repeat(ANSWER_CHARS) }] } },
  ]);
  conversation.assess();
  const answer = await settled();
  const sessionBytes = await session(conversation);
  const afterSession = await settled();
  process.stdout.write(
    JSON.stringify({
      viewBytes,
      open: open.rss - before.rss,
      answer: answer.rss - before.rss,
      openHeap: open.heap - before.heap,
      session: afterSession.rss - before.rss,
      sessionHeap: afterSession.heap - before.heap,
      sessionBytes,
      records: conversation.allRecords().length,
    }),
  );
}

/**
 * The window goes on with the conversation it opened: `SESSION_TURNS` more requests, each a file
 * read of its own, compacted every `COMPACT_EVERY` messages as they come; resolves with the bytes
 * the session added to the files.
 */
async function session(conversation: Conversation): Promise<number> {
  let added = 0;
  for (let turn = 0; turn < SESSION_TURNS; turn++) {
    const n = 1_000_000 + turn;
    const call = `call_${idOf(n * 8 + 7)}`;
    await conversation.beginTurn(idOf(n * 8));
    const records: LogRecord[] = [
      {
        type: 'message',
        message: { id: idOf(n * 8 + 1), role: 'user', content: [{ type: 'text', text: `Turn ${n}: read the module and fix it.` }] },
      },
      {
        type: 'message',
        message: {
          id: idOf(n * 8 + 2),
          role: 'assistant',
          content: [{ type: 'tool-call', toolCallId: call, toolName: 'read_file', input: { path: `src/module${n % 37}.ts` } }],
        },
      },
      {
        type: 'message',
        message: {
          id: idOf(n * 8 + 3),
          role: 'tool',
          content: [{ type: 'tool-result', toolCallId: call, toolName: 'read_file', output: output(n) }],
        },
      },
      { type: 'message', message: { id: idOf(n * 8 + 4), role: 'assistant', content: [{ type: 'text', text: `Module ${n % 37} is fixed.` }] } },
    ];
    await conversation.append(records);
    added += Buffer.byteLength(JSON.stringify(records));
    if ((turn + 1) % (COMPACT_EVERY / 4) === 0) {
      const outcome = await conversation.compact('manual');
      if (outcome.status !== 'compacted') throw new Error(`a compaction of the session did not apply: ${outcome.status}`);
    }
  }
  return added;
}

export async function benchMemory(): Promise<MemoryBench> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'longrun-bench-memory-'));
  try {
    const stored = await build(new ConversationStore(dir, Date.now));
    const out = await new Promise<string>((resolve, reject) => {
      const run = spawn(process.execPath, [...process.execArgv, '--expose-gc', __filename, CHILD, dir], { stdio: ['ignore', 'pipe', 'inherit'] });
      let text = '';
      run.stdout.on('data', (chunk: Buffer) => (text += chunk.toString()));
      run.once('exit', (code) => (code === 0 ? resolve(text) : reject(new Error(`the memory child failed (exit code ${code})`))));
    });
    const measured = JSON.parse(out) as {
      viewBytes: number;
      open: number;
      answer: number;
      openHeap: number;
      session: number;
      sessionHeap: number;
      sessionBytes: number;
    };
    return {
      stored_mib: stored / 1024 / 1024,
      view_mb: measured.viewBytes / 1e6,
      open_rss_mb: measured.open / 1e6,
      open_heap_mb: measured.openHeap / 1e6,
      answer_rss_mb: measured.answer / 1e6,
      session_mb: measured.sessionBytes / 1e6,
      session_rss_mb: measured.session / 1e6,
      session_heap_mb: measured.sessionHeap / 1e6,
    };
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}

// Run only when started as a script, not when another benchmark imports `benchMemory`.
if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === path.resolve(__filename)) {
  if (process.argv[2] === CHILD) void child(process.argv[3]!);
  else void benchMemory().then((result) => console.table(result));
}
