/**
 * The engine on million-token conversations: how long a compaction takes before its first
 * summarizer call, and how long one budget assessment (what the gauge does on every change) takes
 * over a view of a million tokens that holds a summary.
 */
import { applyCompaction, computeCompaction } from '../src/core/compaction';
import { DEFAULT_CONFIG, type CompactionConfig } from '../src/core/config';
import { EngineMemo } from '../src/core/engine-memo';
import { EMPTY_LEDGER } from '../src/core/file-ledger';
import { modelView, type LogRecord } from '../src/core/history';
import { MessageTokenCounter } from '../src/core/message-tokens';
import { systemClock, type Summarizer } from '../src/core/ports';
import type { TextTokenizer } from '../src/core/tokenizer';
import { Conversation } from '../src/app/conversation/conversation';
import { ConversationIndex } from '../src/app/store/conversation-index';
import { ConversationStore } from '../src/app/store/conversation-store';
import { sessionLog, SMALL_MESSAGES, SUMMARY } from './sessions';
import { elapsedMs, median, percentile } from './stats';

/** GPT-4.1's window: a conversation of a million tokens is at its compaction point. */
const MILLION_WINDOW = 1_047_576;
/** A 2M window (Gemini's), where a million-token view is what a compaction keeps. */
const TWO_MILLION_WINDOW = 2_097_152;

export interface EngineBench {
  /** Median ms from the start of a compaction to its first summarizer call (5,000 messages), after one compaction of the same conversation. */
  readonly engine_ms_5k: number;
  /** The same for the first compaction of the conversation in the process (token counts known, nothing else computed yet). */
  readonly engine_ms_5k_first: number;
  readonly engine_tokens_5k: number;
  readonly engine_summarizer_calls_5k: number;
  /** p95 ms of one `Conversation.assess()` over a view of about a million tokens, right after a compaction. */
  readonly gauge_update_ms_1m: number;
  readonly gauge_update_view_tokens: number;
}

/** A summarizer that answers at once and notes when it was first called. */
function timingSummarizer(): Summarizer & { firstCallAt?: bigint; calls: number } {
  const summarizer: Summarizer & { firstCallAt?: bigint; calls: number } = {
    name: 'bench',
    calls: 0,
    summarize: async () => {
      summarizer.firstCallAt ??= process.hrtime.bigint();
      summarizer.calls++;
      return { text: SUMMARY };
    },
  };
  return summarizer;
}

let ids = 0;
const newId = (): string => `bench-entry-${ids++}`;

/**
 * Start of a compaction to its first summarizer call, on 5,000 messages (~1M tokens), the token
 * cache warm: the first run, and the median of the runs after it. The host compacts the same
 * growing conversation again and again, so what it remembers from the previous compaction (scores,
 * stubs, counts of rendered messages) is what a compaction usually finds.
 */
async function engineToFirstCall(tokenizer: TextTokenizer, runs: number): Promise<{ ms: number; first: number; tokens: number; calls: number }> {
  const log = sessionLog(5_000, 5, SMALL_MESSAGES);
  const counter = new MessageTokenCounter(tokenizer);
  const memo = new EngineMemo();
  const tokens = counter.countMessages(modelView(log, memo));
  const times: number[] = [];
  let calls = 0;
  for (let run = 0; run < runs; run++) {
    const summarizer = timingSummarizer();
    const start = process.hrtime.bigint();
    // A target no pruning reaches: the engine prunes what is superseded, then calls the summarizer.
    const outcome = await computeCompaction(
      { log, reason: 'threshold', config: DEFAULT_CONFIG, window: { limit: MILLION_WINDOW, source: 'model' }, ledger: EMPTY_LEDGER, pruneTarget: 0 },
      { counter, summarizer, clock: systemClock, newId, memo },
    );
    if (outcome.status !== 'compacted' || summarizer.firstCallAt === undefined)
      throw new Error(`the 5,000-message compaction did not run: ${outcome.status}`);
    times.push(Number(summarizer.firstCallAt - start) / 1e6);
    calls = summarizer.calls;
  }
  return { ms: median(times.slice(1)), first: times[0]!, tokens, calls };
}

/** p95 of one budget assessment over a million-token view that holds a summary. */
async function assessAfterCompaction(tokenizer: TextTokenizer, runs: number): Promise<{ ms: number; tokens: number }> {
  // 6,500 messages (~1.3M tokens), compacted to keep the latest million.
  // Without pruning: this session reads the same files again and again, and pruning would leave far less than a million tokens.
  const config: CompactionConfig = {
    ...DEFAULT_CONFIG,
    keepRecent: { ...DEFAULT_CONFIG.keepRecent, tokens: 1_000_000, tokensShare: 0.5 },
    pruning: { ...DEFAULT_CONFIG.pruning, enabled: false },
  };
  const window = { limit: TWO_MILLION_WINDOW, source: 'model' as const };
  let log: readonly LogRecord[] = sessionLog(6_500, 6, SMALL_MESSAGES);
  const counter = new MessageTokenCounter(tokenizer);
  const memo = new EngineMemo();
  const outcome = await computeCompaction(
    { log, reason: 'manual', config, window, ledger: EMPTY_LEDGER },
    { counter, summarizer: timingSummarizer(), clock: systemClock, newId, memo },
  );
  if (outcome.status !== 'compacted') throw new Error(`the million-token compaction did not run: ${outcome.status}`);
  const applied = applyCompaction(log, outcome.compaction, memo);
  if (!applied.ok) throw new Error(applied.reason);
  log = applied.log;

  const state = new Map<string, unknown>();
  const conversation = new Conversation('bench', log, {
    // Assessing never writes; the store is only there because a conversation has one.
    store: new ConversationStore('/nonexistent-longrun-bench', Date.now),
    index: new ConversationIndex({ get: (k) => state.get(k) as never, update: async (k, v) => void state.set(k, v) }),
    clock: systemClock,
    newId,
    config: () => config,
    model: () => ({ name: 'bench', window, counter, requestOverhead: 1_000, outputReserve: 0 }),
    summarizer: async () => undefined,
  });
  const times: number[] = [];
  let tokens = 0;
  for (let run = 0; run < runs; run++) {
    const start = process.hrtime.bigint();
    tokens = conversation.assess().used;
    times.push(elapsedMs(start));
  }
  return { ms: percentile(times, 0.95), tokens };
}

/** Runs both measurements. */
/** `engine_ms_5k` alone: the median of the compactions after the first, to the first summarizer call (ms). */
export async function benchEngineMs(tokenizer: TextTokenizer): Promise<number> {
  return (await engineToFirstCall(tokenizer, 6)).ms;
}

export async function benchEngine(tokenizer: TextTokenizer): Promise<EngineBench> {
  const engine = await engineToFirstCall(tokenizer, 6);
  const gauge = await assessAfterCompaction(tokenizer, 101);
  return {
    engine_ms_5k: engine.ms,
    engine_ms_5k_first: engine.first,
    engine_tokens_5k: engine.tokens,
    engine_summarizer_calls_5k: engine.calls,
    gauge_update_ms_1m: gauge.ms,
    gauge_update_view_tokens: gauge.tokens,
  };
}
