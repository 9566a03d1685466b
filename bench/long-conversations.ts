/**
 * Long conversations as the gauge meets them: reopening one of 10,000 messages until the gauge has
 * its number, and appending to one of 50,000 messages against one of 1,000 while the gauge listens.
 * The conversations are stored by the real store in a temporary folder and hold the compactions a
 * conversation that long has had (a 128k window, compacted at its threshold as it grew).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { applyCompaction, computeCompaction } from '../src/core/compaction';
import { DEFAULT_CONFIG } from '../src/core/config';
import { EngineMemo } from '../src/core/engine-memo';
import { EMPTY_LEDGER } from '../src/core/file-ledger';
import { compactionThreshold } from '../src/core/budget';
import type { LogRecord } from '../src/core/history';
import { MessageTokenCounter, withTokenCounts } from '../src/core/message-tokens';
import { systemClock, type Summarizer } from '../src/core/ports';
import { charEstimator, type TextTokenizer } from '../src/core/tokenizer';
import { Conversation } from '../src/app/conversation/conversation';
import { ConversationRecords } from '../src/app/conversation/conversation-records';
import { ConversationIndex } from '../src/app/store/conversation-index';
import { ConversationStore } from '../src/app/store/conversation-store';
import { random, sessionLog, SMALL_MESSAGES, SUMMARY } from './sessions';
import { elapsedMs, median } from './stats';

const WINDOW = { limit: 128_000, source: 'model' as const };
/** Timed appends per conversation; the median is reported. */
const APPENDS = 101;
const RELOADS = 5;

export interface LongConversationBench {
  /** Median ms to open a 10,000-message conversation with the store and count its view. */
  readonly reload_ms_10k: number;
  /**
   * Its two parts: the store's open (the archive held on disk), and reading back what the view needs
   * then its first count (token cache cold, the counts stored with the messages at hand).
   */
  readonly reload_open_ms_10k: number;
  readonly reload_count_ms_10k: number;
  /** Median ms of an append with the gauge listening, to 1,000 and to 50,000 messages. */
  readonly append_gauge_ms_1k: number;
  readonly append_gauge_ms_50k: number;
  readonly append_ratio_50k_1k: number;
  /** Compactions the 50,000-message conversation holds. */
  readonly compactions_50k: number;
}

/**
 * A conversation of `count` messages compacted as it grew, the way Longrun would have. Counted with
 * the chars/4 estimator while building, which only moves where the cuts fall a little and takes
 * seconds instead of a minute.
 */
async function grownConversation(count: number, seed: number): Promise<{ log: LogRecord[]; compactions: number }> {
  const counter = new MessageTokenCounter(charEstimator);
  const memo = new EngineMemo();
  const summarizer: Summarizer = { name: 'bench', summarize: async () => ({ text: SUMMARY }) };
  const threshold = compactionThreshold(WINDOW.limit, DEFAULT_CONFIG.trigger);
  let log: LogRecord[] = [];
  let tokens = 0;
  let compactions = 0;
  let n = 0;
  for (const record of sessionLog(count, seed, SMALL_MESSAGES)) {
    log.push(record);
    if (record.type === 'message') tokens += counter.countMessage(record.message);
    // Compact between turns, as the agent would (a user message starts one).
    if (
      tokens < threshold ||
      record.type !== 'message' ||
      record.message.role !== 'assistant' ||
      record.message.content.some((p) => p.type === 'tool-call')
    )
      continue;
    const outcome = await computeCompaction(
      { log, reason: 'threshold', config: DEFAULT_CONFIG, window: WINDOW, ledger: EMPTY_LEDGER },
      { counter, summarizer, clock: systemClock, newId: () => `entry${seed}-${n++}`, memo },
    );
    if (outcome.status !== 'compacted') continue;
    const applied = applyCompaction(log, outcome.compaction, memo);
    if (!applied.ok) throw new Error(applied.reason);
    log = [...applied.log];
    tokens = outcome.compaction.tokensAfter;
    compactions++;
  }
  return { log, compactions };
}

/** Stores a conversation as Longrun writes it: each message with its count by the model's tokenizer. */
async function store(dir: string, id: string, log: readonly LogRecord[], tokenizer: TextTokenizer): Promise<void> {
  const writer = new ConversationStore(dir, Date.now);
  const counter = new MessageTokenCounter(tokenizer);
  const counted = log.map((record) => withTokenCounts(record, counter));
  for (let i = 0; i < counted.length; i += 1_000) await writer.appendAll(id, counted.slice(i, i + 1_000));
}

function conversationOver(
  dir: string,
  id: string,
  log: readonly LogRecord[],
  tokenizer: TextTokenizer,
  store = new ConversationStore(dir, Date.now),
  records?: ConversationRecords,
): Conversation {
  const state = new Map<string, unknown>();
  const counter = new MessageTokenCounter(tokenizer);
  let n = 0;
  return new Conversation(
    id,
    records ? [] : log,
    {
      store,
      index: new ConversationIndex({ get: (k) => state.get(k) as never, update: async (k, v) => void state.set(k, v) }),
      clock: systemClock,
      newId: () => `extra-${id}-${n++}`,
      config: () => DEFAULT_CONFIG,
      model: () => ({ name: 'bench', window: WINDOW, counter, requestOverhead: 1_000, outputReserve: 0 }),
      summarizer: async () => undefined,
    },
    records ? { records } : {},
  );
}

/**
 * Opening as the extension does, with a fresh store and a cold token cache, until the count the gauge
 * shows: the archive held on disk, and what the view needs read back.
 */
async function reloadMs(dir: string, id: string, tokenizer: TextTokenizer): Promise<{ total: number; open: number; count: number }> {
  const open: number[] = [];
  const count: number[] = [];
  const total: number[] = [];
  for (let run = 0; run < RELOADS; run++) {
    const start = process.hrtime.bigint();
    const store = new ConversationStore(dir, Date.now);
    const opened = await store.open(id, { holdAway: true });
    const read = process.hrtime.bigint();
    const records = new ConversationRecords(opened.log, undefined, opened.locations);
    const conversation = conversationOver(dir, id, [], tokenizer, store, records);
    await conversation.loadView();
    conversation.count();
    open.push(Number(read - start) / 1e6);
    count.push(elapsedMs(read));
    total.push(elapsedMs(start));
  }
  return { total: median(total), open: median(open), count: median(count) };
}

/**
 * Appends with the gauge listening (an assessment on every change, as the status bar does),
 * alternating between the conversations so that the disk's background work weighs on both alike.
 */
async function appendMs(dir: string, ids: readonly string[], tokenizer: TextTokenizer): Promise<number[]> {
  const conversations: Conversation[] = [];
  for (const id of ids) {
    const store = new ConversationStore(dir, Date.now);
    const conversation = conversationOver(dir, id, (await store.open(id)).log, tokenizer, store);
    conversation.onDidChange(() => void conversation.assess());
    conversation.assess();
    conversations.push(conversation);
  }
  const next = random(11);
  const times = ids.map((): number[] => []);
  for (let n = 0; n < APPENDS; n++) {
    for (const [i, conversation] of conversations.entries()) {
      const text = `Follow-up ${n}: ${'please also check the retry limit of module '.repeat(12)}${Math.floor(next() * 100)}.`;
      const start = process.hrtime.bigint();
      await conversation.append([{ type: 'message', message: { id: `follow-up-${n}`, role: 'user', content: [{ type: 'text', text }] } }]);
      times[i]!.push(elapsedMs(start));
    }
  }
  return times.map(median);
}

/**
 * `reload_ms_10k` alone: the 10,000-message conversation built and stored as for
 * `benchLongConversations`, then reopened, with `during` around the reopening (another process
 * keeping a core busy, say).
 */
export async function benchReload(tokenizer: TextTokenizer, during: <T>(run: () => Promise<T>) => Promise<T> = (run) => run()): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), 'longrun-bench-reload-'));
  try {
    await store(dir, 'c10k', (await grownConversation(10_000, 22)).log, tokenizer);
    return (await during(() => reloadMs(dir, 'c10k', tokenizer))).total;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Builds the three conversations, stores them, and measures. */
export async function benchLongConversations(tokenizer: TextTokenizer): Promise<LongConversationBench> {
  const dir = await mkdtemp(join(tmpdir(), 'longrun-bench-long-'));
  try {
    const small = await grownConversation(1_000, 21);
    const medium = await grownConversation(10_000, 22);
    const large = await grownConversation(50_000, 23);
    await store(dir, 'c1k', small.log, tokenizer);
    await store(dir, 'c10k', medium.log, tokenizer);
    await store(dir, 'c50k', large.log, tokenizer);
    const reload = await reloadMs(dir, 'c10k', tokenizer);
    const [at1k, at50k] = (await appendMs(dir, ['c1k', 'c50k'], tokenizer)) as [number, number];
    return {
      reload_ms_10k: reload.total,
      reload_open_ms_10k: reload.open,
      reload_count_ms_10k: reload.count,
      append_gauge_ms_1k: at1k,
      append_gauge_ms_50k: at50k,
      append_ratio_50k_1k: at50k / at1k,
      compactions_50k: large.compactions,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
