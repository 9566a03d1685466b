/**
 * How long the extension host's thread is held up by the first compaction after a reload: a
 * conversation of 5,000 messages (about a million tokens, their counts stored with the records as
 * Longrun writes them) is opened from its files afresh, as a window opens it after a reload, with
 * nothing counted or computed yet in this process, and
 * compacted through the compaction worker, then on the host's own thread for comparison. A ticker
 * on the host's thread measures the longest stretch it could not run, from the compaction's start
 * until the result is applied.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IN_THREAD_ENGINE, type CompactionEngine } from '../src/app/compaction/compaction-engine';
import { ConversationRegistry } from '../src/app/conversation/conversation-registry';
import { ConversationIndex } from '../src/app/store/conversation-index';
import { ConversationStore } from '../src/app/store/conversation-store';
import { WorkerCompactionEngine } from '../src/app/compaction/remote-compaction';
import { DEFAULT_CONFIG } from '../src/core/config';
import type { LogRecord } from '../src/core/history';
import { MessageTokenCounter, withTokenCounts } from '../src/core/message-tokens';
import { systemClock, type Summarizer } from '../src/core/ports';
import { loadTokenizer, type TextTokenizer } from '../src/core/tokenizer';
import { buildWorker, gapsDuring, startWorker, withBusyCore, type Gaps } from './host-thread';
import { sessionLog, SMALL_MESSAGES, SUMMARY } from './sessions';

const MILLION_WINDOW = 1_047_576;

export interface EngineHostBench {
  /** The longest the host's thread was held up by a cold compaction computed in the worker (ms). */
  readonly engine_host_ms_cold: number;
  /** The same compaction computed on the host's thread (ms). */
  readonly engine_host_ms_cold_in_thread: number;
  /** All the host's time that compaction took, in stretches over 1 ms (ms). */
  readonly engine_host_busy_ms_cold: number;
  /** How much of `engine_host_ms_cold` the garbage collector held the host's thread (ms). */
  readonly engine_host_collector_ms_cold: number;
  readonly messages: number;
}

/** The records of a 5,000-message conversation, each message with its count stored, as on disk. */
async function storedLog(tokenizer: TextTokenizer): Promise<LogRecord[]> {
  const counter = new MessageTokenCounter(tokenizer);
  return sessionLog(5_000, 5, SMALL_MESSAGES).map((record) => withTokenCounts(record, counter));
}

async function coldCompaction(dir: string, log: readonly LogRecord[], tokenizer: TextTokenizer, engine: CompactionEngine): Promise<Gaps> {
  const writer = new ConversationStore(dir, () => Date.now());
  for (let i = 0; i < log.length; i += 1_000) await writer.appendAll('bench', log.slice(i, i + 1_000));
  const store = new ConversationStore(dir, () => Date.now());
  const state = new Map<string, unknown>();
  const index = new ConversationIndex({ get: (k) => state.get(k) as never, update: async (k, v) => void state.set(k, v) });
  // A counter that has counted nothing yet: a window just reloaded.
  const counter = new MessageTokenCounter(tokenizer);
  let ids = 0;
  const summarizer: Summarizer = { name: 'bench', summarize: async () => ({ text: SUMMARY }) };
  const deps = {
    store,
    index,
    clock: systemClock,
    newId: () => `bench-${++ids}`,
    config: () => DEFAULT_CONFIG,
    model: () => ({ name: 'bench', window: { limit: MILLION_WINDOW, source: 'model' as const }, counter, requestOverhead: 0, outputReserve: 0 }),
    summarizer: async () => summarizer,
    engine,
  };
  // Opened from its files as a window opens it after a reload.
  const registry = new ConversationRegistry({
    ...deps,
    conversationDeps: () => deps,
    warn: () => undefined,
    error: (message) => void process.stderr.write(`${message}\n`),
    info: () => undefined,
    changed: () => undefined,
  });
  const conversation = await registry.open('bench');
  if (!conversation) throw new Error('the conversation did not open');
  // What the gauge does when the conversation opens: its count, from the stored counts.
  conversation.assess();
  const measured = await gapsDuring(async () => {
    const outcome = await conversation.compact('manual');
    if (outcome.status !== 'compacted') throw new Error(`the cold compaction did not run: ${outcome.status}`);
  });
  registry.dispose();
  return measured;
}

export async function benchEngineHost(tokenizer: TextTokenizer): Promise<EngineHostBench> {
  const dir = await mkdtemp(join(tmpdir(), 'longrun-bench-host-'));
  const log = await storedLog(tokenizer);
  const workerFile = await buildWorker(dir);
  let failed: string | undefined;
  const worker = new WorkerCompactionEngine(
    (priority) => startWorker(workerFile, priority),
    (message) => void (failed = message),
  );
  try {
    // The worker's own start (loading the engine and the vocabulary) is not the host's time: warm it up.
    await coldCompaction(join(dir, 'warm'), log.slice(0, 40), tokenizer, worker);
    const remote = await coldCompaction(join(dir, 'remote'), log, tokenizer, worker);
    if (failed) throw new Error(failed);
    const local = await coldCompaction(join(dir, 'local'), log, tokenizer, IN_THREAD_ENGINE);
    return {
      engine_host_ms_cold: remote.longest,
      engine_host_ms_cold_in_thread: local.longest,
      engine_host_busy_ms_cold: remote.busy,
      engine_host_collector_ms_cold: remote.collector,
      messages: log.filter((r) => r.type === 'message').length,
    };
  } finally {
    worker.dispose();
    await rm(dir, { recursive: true, force: true });
  }
}

// Run only when started as a script: `npx tsx bench/engine-host.ts [--busy] [runs]`.
if (require.main === module) {
  const busy = process.argv.includes('--busy');
  const runs = Number(process.argv.find((a) => /^\d+$/.test(a)) ?? 1);
  void loadTokenizer('o200k_base').then(async (tokenizer) => {
    for (let run = 0; run < runs; run++) {
      const result = await (busy ? withBusyCore(() => benchEngineHost(tokenizer)) : benchEngineHost(tokenizer));
      console.log(JSON.stringify(result));
    }
  });
}
