/**
 * Speed and memory of the conversation store on long conversations. Run on its own with
 * `npx tsx bench/store.ts`, which prints a table; `benchStore()` gives the numbers to other scripts.
 * Nothing here is asserted (timings belong in benchmarks, not tests).
 *
 * The conversations are built through the store itself (in batches, so building 50,000 messages
 * takes seconds rather than one synced write per message), in a temporary folder on the same disk
 * as the system's temp dir, and removed afterwards.
 */
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { LogRecord } from '../src/core/history';
import type { Message } from '../src/core/messages';
import { ConversationStore } from '../src/app/store/conversation-store';

/** What `benchStore` measures. */
export interface StoreBenchResult {
  /** Opening (reading and validating) a 50,000-message conversation in a fresh process, in ms. */
  open_ms_50k: number;
  /** How much that process's resident memory grew while opening it, the log still held, in MB. */
  open_rss_mb_50k: number;
  /** Median time of one append (lock, write, sync) to a 1,000-message conversation, in ms. */
  append_ms_1k: number;
  /** The same for a 50,000-message conversation: it should not depend on the size. */
  append_ms_50k: number;
}

/** Appends timed per conversation size; the median is reported. */
const APPENDS = 101;
/** Records per `appendAll` while building. */
const BATCH = 1_000;

/** A small deterministic generator, so every run builds the same conversation. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    return state / 2 ** 32;
  };
}

const WORDS = 'the file function returns value error test module change handle case config path update when then because'.split(' ');
const CODE_LINE = '  const result = await handler.process(input, { retries: 3, timeoutMs: 5_000 }); // keep the order\n';

function prose(next: () => number, chars: number): string {
  let out = '';
  while (out.length < chars) out += `${WORDS[Math.floor(next() * WORDS.length)]} `;
  return out.slice(0, chars);
}

function code(chars: number): string {
  return CODE_LINE.repeat(Math.ceil(chars / CODE_LINE.length)).slice(0, chars);
}

/**
 * A coding-agent conversation of `count` messages: turns of a user request, a few assistant steps
 * that each call a tool (read, search, edit) with its result, and a final answer. Messages run from
 * a few hundred characters to a few KB, tool results the longest.
 */
function* conversation(count: number, seed = 1): Generator<LogRecord> {
  const next = random(seed);
  const between = (low: number, high: number) => low + Math.floor(next() * (high - low));
  let n = 0;
  const message = (m: Omit<Message, 'id'>): LogRecord => ({ type: 'message', message: { id: `m${n++}`, ...m } });
  while (n < count) {
    yield message({ role: 'user', content: [{ type: 'text', text: prose(next, between(200, 1_200)) }] });
    const steps = between(1, 5);
    for (let step = 0; step < steps && n < count; step++) {
      const callId = `call_${n}`;
      const tool = ['read_file', 'search', 'edit_file'][between(0, 3)]!;
      const input =
        tool === 'edit_file' ? { path: `src/module${n % 97}.ts`, newText: code(between(200, 1_500)) } : { path: `src/module${n % 97}.ts` };
      yield message({
        role: 'assistant',
        content: [
          { type: 'reasoning', text: prose(next, between(100, 400)) },
          { type: 'tool-call', toolCallId: callId, toolName: tool, input },
        ],
      });
      if (n >= count) break;
      yield message({ role: 'tool', content: [{ type: 'tool-result', toolCallId: callId, toolName: tool, output: code(between(500, 4_000)) }] });
    }
    if (n < count) yield message({ role: 'assistant', content: [{ type: 'text', text: prose(next, between(300, 2_500)) }] });
  }
}

async function build(store: ConversationStore, id: string, count: number): Promise<void> {
  let batch: LogRecord[] = [];
  for (const record of conversation(count)) {
    batch.push(record);
    if (batch.length === BATCH) {
      await store.appendAll(id, batch);
      batch = [];
    }
  }
  if (batch.length > 0) await store.appendAll(id, batch);
}

function elapsedMs(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e6;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/**
 * Median time of one append of an ordinary message to each conversation, by stores that have
 * opened them. The appends alternate between the conversations, so the disk's background work
 * (writing back what the build left) weighs on each alike.
 */
async function appendMs(dir: string, ids: readonly string[]): Promise<number[]> {
  const stores = ids.map(() => new ConversationStore(dir, Date.now));
  for (const [i, id] of ids.entries()) await stores[i]!.open(id);
  const times = ids.map((): number[] => []);
  for (let n = 0; n < APPENDS; n++) {
    for (const [i, id] of ids.entries()) {
      const record: LogRecord = {
        type: 'message',
        message: { id: `extra${n}`, role: 'user', content: [{ type: 'text', text: prose(random(n), 600) }] },
      };
      const start = process.hrtime.bigint();
      await stores[i]!.append(id, record);
      times[i]!.push(elapsedMs(start));
    }
  }
  return times.map(median);
}

/**
 * Opens a conversation in a fresh process and reports the time and the growth of its resident
 * memory: in this process the heap left over from building would hide part of the growth.
 */
async function openInChild(dir: string, id: string): Promise<{ ms: number; rssMb: number }> {
  const child = spawn(process.execPath, [...process.execArgv, __filename, OPEN_CHILD, dir, id], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`opening in a child process failed (exit code ${code})`);
  return JSON.parse(out) as { ms: number; rssMb: number };
}

const OPEN_CHILD = '--open-child';

async function openChild(dir: string, id: string): Promise<void> {
  const store = new ConversationStore(dir, Date.now);
  const rssBefore = process.memoryUsage().rss;
  const start = process.hrtime.bigint();
  const opened = await store.open(id);
  const ms = elapsedMs(start);
  const rssMb = (process.memoryUsage().rss - rssBefore) / 1e6;
  if (opened.problems.length > 0) throw new Error(`the conversation did not read back cleanly: ${opened.problems[0]}`);
  process.stdout.write(JSON.stringify({ ms, rssMb, records: opened.log.length }));
}

/** Builds 1,000- and 50,000-message conversations in a temp dir and measures opening and appending. */
export async function benchStore(): Promise<StoreBenchResult> {
  return (await measure()).result;
}

async function measure(): Promise<{ result: StoreBenchResult; bytes: number; parts: number }> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'longrun-bench-store-'));
  try {
    const builder = new ConversationStore(dir, Date.now);
    await build(builder, 'small', 1_000);
    await build(builder, 'large', 50_000);
    const files = (await fs.readdir(path.join(dir, 'conversations'))).filter((name) => /^large(\.\d+)?\.jsonl$/.test(name));
    let bytes = 0;
    for (const name of files) bytes += (await fs.stat(path.join(dir, 'conversations', name))).size;

    const { ms: open_ms_50k, rssMb: open_rss_mb_50k } = await openInChild(dir, 'large');
    const [append_ms_1k, append_ms_50k] = (await appendMs(dir, ['small', 'large'])) as [number, number];
    return { result: { open_ms_50k, open_rss_mb_50k, append_ms_1k, append_ms_50k }, bytes, parts: files.length };
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const { result, bytes, parts } = await measure();
  console.log(`conversation store, 50,000 messages: ${(bytes / 1e6).toFixed(1)} MB in ${parts} part file(s)`);
  console.table({
    'open 50,000 messages': { value: Number(result.open_ms_50k.toFixed(0)), unit: 'ms' },
    'memory to open them': { value: Number(result.open_rss_mb_50k.toFixed(0)), unit: 'MB resident, growth' },
    'append to 1,000 messages': { value: Number(result.append_ms_1k.toFixed(2)), unit: 'ms, median' },
    'append to 50,000 messages': { value: Number(result.append_ms_50k.toFixed(2)), unit: 'ms, median' },
  });
}

// Run only when started as a script, not when another benchmark imports `benchStore`.
if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === path.resolve(__filename)) {
  if (process.argv[2] === OPEN_CHILD) void openChild(process.argv[3]!, process.argv[4]!);
  else void main();
}
