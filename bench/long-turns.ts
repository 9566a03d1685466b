/**
 * Long agentic turns on small windows: generated sessions of single requests that take 30 to 60 tool
 * calls each (file reads, searches, test runs, type checks, diffs, edits, and in each turn one new
 * file larger than the recent part a compaction keeps), played through Longrun's
 * own agent loop, tools and conversation, at 32k and 64k windows. The provider counts 1.22 tokens for
 * each of the local tokenizer's (a Qwen-like tokenizer on code) and refuses any request over its
 * window, as OpenAI-compatible servers do. Measured: the overflow errors, the compactions and the
 * least any of them freed, the file lists and needle ledgers of every summary against those of the
 * log it was applied to, the summarizer's input against the session's unique tokens, and what one
 * compaction takes of the extension host's thread: the session is played again into one conversation
 * kept open, as the extension host keeps it, and each of its compactions made again where the session
 * made it, computed in the compaction worker as the extension ships it and applied on the host's
 * thread, written to a store on disk, while a ticker notes the longest stretch the thread could not
 * run (quiet, and with another process keeping one core busy); and, for the engine's own
 * work, the milliseconds the same compaction takes computed and applied on the host's thread with a
 * summarizer that answers at once and a store that writes nothing.
 *
 * Run alone with `npx tsx bench/long-turns.ts`, or through `npm run bench`.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { APICallError } from 'ai';
import { convertArrayToReadableStream, MockLanguageModelV4 } from 'ai/test';
import { DEFAULT_CONFIG } from '../src/core/config';
import { keepRecentTokens } from '../src/core/cut-point';
import { outputReserveFor } from '../src/core/context-window';
import { EngineMemo } from '../src/core/engine-memo';
import { renderFileOperations } from '../src/core/file-ledger';
import { ledgerOf, type CompactionReason, type ConversationLog, type LogRecord } from '../src/core/history';
import { MessageTokenCounter } from '../src/core/message-tokens';
import { needleLedgerOf } from '../src/core/needles';
import type { Summarizer } from '../src/core/ports';
import { loadTokenizer, type TextTokenizer } from '../src/core/tokenizer';
import { runAgentTurn, toolDefinitionsText } from '../src/llm/agent';
import { createAgentTools } from '../src/llm/agent-tools';
import { Conversation, ConversationRecords, type ConversationDeps } from '../src/app/conversation/conversation';
import { roomForMessages } from '../src/app/compaction/conversation-compactor';
import { ConversationIndex } from '../src/app/store/conversation-index';
import { ConversationStore } from '../src/app/store/conversation-store';
import { WorkerCompactionEngine } from '../src/app/compaction/remote-compaction';
import { BenchWorkspace, moduleText } from './agentic-workspace';
import { agentPort, compactAfterTurn, SILENT_UI, summaryText, TrackedStore } from './agent-session';
import { buildWorker, gapsDuring, startWorker, withBusyCore, type Gaps } from './host-thread';
import { random } from './sessions';
import { median, percentile } from './stats';
import { VirtualClock } from './virtual-time';

/** How many tokens the provider counts for each of the local tokenizer's. */
export const PROVIDER_RATIO = 1.22;
/** The model the sessions run on: its family's prior ratio applies before its first usage report. */
const MODEL_KEY = 'longrun/qwen2.5-coder:14b';
const TURNS = 6;
const SEEDS = [1, 2, 3];
const MAX_OUTPUT = 4_096;
/**
 * The size of the one large file each turn writes, as a multiple of the recent part a compaction keeps
 * at the window: a `create_file` call that no cut can keep with the tail around it (at a 32k window,
 * about 12,700 tokens of content against the tail's 9,400; at 64k, 27,000 against 20,000).
 */
const LARGE_WRITE_SHARE_OF_TAIL = 1.35;

const SYSTEM = [
  "You are Longrun, a coding agent working in the user's VS Code workspace.",
  'Workspace folders: app. Paths are relative to the workspace.',
  'Use the tools to read, list and search files before answering questions about the code; do not guess file contents.',
  'Change files with create_file and edit_file; each edit replaces an exact, unique piece of text. Keep changes minimal and explain them briefly. Run builds, tests and other shell commands with run_command (one line each; the user approves them).',
  'Earlier parts of a long conversation may be replaced by a summary; trust it, and re-read files when you need their exact content.',
  'Answer in Markdown, concisely.',
].join('\n');

const REQUESTS = [
  'The retry logic fails under load. Read the jobs and storage modules, find why, fix it and run the tests. Never change the public API of src/api.',
  'Add input validation to every billing handler, with tests. Do not touch src/auth. Later, update the changelog.',
  'The type checker reports errors after the last change: fix them all, then run the tests again.',
  'Go through the search and reports modules and make the timeouts configurable. Always keep the defaults as they are.',
  'Find every place that logs a webhook payload and make sure no token is logged. Run the tests when done.',
  'Refactor the notify module to share one retry helper with jobs; read both first, then change them, then run the type checker.',
];

/** What one session measured. */
interface SessionResult {
  readonly overflows: number;
  /** Overflow errors of the first request before it had any reply: a request that cannot fit. */
  readonly firstRequestOverflows: number;
  readonly gains: number[];
  readonly summaries: number;
  readonly ledgerErrors: number;
  readonly summarizerInput: number;
  readonly uniqueTokens: number;
  readonly hostMs: number[];
  /** Per compaction, the longest stretch of the host's thread, the compaction computed in the worker. */
  readonly hostStretchMs: Gaps[];
  /** The same with one core kept busy. */
  readonly hostStretchMsBusy: Gaps[];
  readonly messages: number;
  readonly toolCalls: number;
  /** The local tokens of the content of each turn's large file. */
  readonly largeWriteTokens: number;
}

/** A store that writes nothing, for timing the host's own work. */
class NullStore extends ConversationStore {
  override async appendAll(_id: string, records: readonly LogRecord[]): Promise<LogRecord[]> {
    return [...records];
  }
}

async function playSession(window: number, seed: number, tokenizer: TextTokenizer, workerFile: string): Promise<SessionResult> {
  const dir = await mkdtemp(join(tmpdir(), 'longrun-bench-long-turns-'));
  let store: TrackedStore | undefined;
  const clock = new VirtualClock(() => store?.busy() ?? false);
  store = new TrackedStore(dir, () => clock.now());
  try {
    const { log, model, ...played } = await clock.run(() => play(window, seed, tokenizer, store!, clock));
    return {
      ...played,
      hostMs: await hostMs(log, model),
      hostStretchMs: await hostStretches(log, model, workerFile, join(dir, 'quiet')),
      hostStretchMsBusy: await withBusyCore(() => hostStretches(log, model, workerFile, join(dir, 'busy'))),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

type Played = Omit<SessionResult, 'hostMs' | 'hostStretchMs' | 'hostStretchMsBusy'> & {
  readonly log: ConversationLog;
  readonly model: ConversationDeps['model'];
};

async function play(window: number, seed: number, tokenizer: TextTokenizer, store: ConversationStore, clock: VirtualClock): Promise<Played> {
  const counter = new MessageTokenCounter(tokenizer);
  const state = new Map<string, unknown>();
  const workspace = new BenchWorkspace(seed);
  const next = random(seed * 104_729 + window);
  let n = 0;
  const newId = (): string => `id${++n}`;
  let summarizerInput = 0;
  const summarizer: Summarizer = {
    name: 'bench',
    summarize: async (request) => {
      summarizerInput += counter.countText(request.system);
      for (const m of request.messages) summarizerInput += counter.countText(m.content) + 4;
      await clock.sleep(2_000);
      return { text: summaryText(request) };
    },
  };
  const reserve = outputReserveFor(window, MAX_OUTPUT);
  const inputLimit = window - reserve;
  let conversation: Conversation | undefined;
  const tools = createAgentTools(workspace, {
    readOnly: false,
    commands: workspace,
    maxResultChars: 20_000,
    onFileEvent: (e) => void conversation!.append([{ type: 'file', event: { kind: e.kind, path: e.path, actor: 'agent', at: clock.now() } }]),
    recall: { recall: (query) => conversation!.recall(query) },
  });
  const overhead = counter.countText(`${SYSTEM}\n${toolDefinitionsText(tools)}`);
  const model = () => ({
    name: 'bench',
    window: { limit: inputLimit, source: 'model' as const },
    counter,
    requestOverhead: overhead,
    outputReserve: reserve,
    key: MODEL_KEY,
  });
  conversation = new Conversation('bench', [], {
    store,
    index: new ConversationIndex({ get: (k) => state.get(k) as never, update: async (k, v) => void state.set(k, v) }),
    clock,
    newId,
    config: () => DEFAULT_CONFIG,
    model,
    summarizer: async () => summarizer,
    summarizeAhead: () => true,
  });
  const c = conversation;

  // The scripted model: each turn's tool calls, then its answer; what the provider counts, and refuses.
  let plan: Array<() => { name: string; input: Record<string, unknown> }> = [];
  let step = 0;
  let overflows = 0;
  let firstRequestOverflows = 0;
  let toolCalls = 0;
  const read: string[] = [];
  const providerModel = new MockLanguageModelV4({
    doStream: async () => {
      const sent = Math.round(c.count().localTokens * PROVIDER_RATIO);
      if (sent > inputLimit) {
        overflows++;
        if (c.log().filter((r) => r.type === 'message' && r.message.role === 'assistant').length === 0) firstRequestOverflows++;
        throw new APICallError({
          message: `This model's maximum context length is ${window} tokens. However, you requested ${sent + reserve} tokens (${sent} in the messages, ${reserve} in the completion).`,
          url: 'http://127.0.0.1/v1/chat/completions',
          requestBodyValues: {},
          statusCode: 400,
          responseBody: JSON.stringify({ error: { code: 'context_length_exceeded', message: 'too long' } }),
          isRetryable: false,
        });
      }
      await clock.sleep(3_000);
      // The answer: the step's tool call, or the turn's closing text. Its usage counts what it wrote,
      // arguments included, as providers do: a large file written is that many output tokens.
      const call = step < plan.length ? plan[step++]!() : undefined;
      const text = call
        ? `Next: ${call.name} on ${JSON.stringify(call.input).slice(0, 60)}.`
        : 'Done: the changes are made and the tests pass; the files touched are listed above.';
      const output = Math.round(counter.countText(call ? `${text}${call.name}${JSON.stringify(call.input)}` : text) * PROVIDER_RATIO);
      const usage = {
        inputTokens: { total: sent, noCache: sent, cacheRead: undefined, cacheWrite: undefined },
        outputTokens: { total: output, text: output, reasoning: undefined },
      };
      const parts: Record<string, unknown>[] = [{ type: 'stream-start', warnings: [] }];
      if (call) {
        toolCalls++;
        parts.push(
          { type: 'text-start', id: 't' },
          { type: 'text-delta', id: 't', delta: text },
          { type: 'text-end', id: 't' },
          { type: 'tool-call', toolCallId: `call_${newId()}`, toolName: call.name, input: JSON.stringify(call.input) },
          { type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage },
        );
      } else {
        parts.push(
          { type: 'text-start', id: 'a' },
          { type: 'text-delta', id: 'a', delta: text },
          { type: 'text-end', id: 'a' },
          { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage },
        );
      }
      return { stream: convertArrayToReadableStream(parts as never[]) };
    },
  });

  const paths = workspace.paths();
  const toolCall = (): { name: string; input: Record<string, unknown> } => {
    const roll = next();
    if (roll < 0.52) {
      const again = read.length > 0 && next() < 0.15;
      const path = again ? read[Math.floor(next() * read.length)]! : paths[Math.floor(next() * paths.length)]!;
      read.push(path);
      return {
        name: 'read_file',
        input: next() < 0.15 ? { path, startLine: 1 + Math.floor(next() * 100), endLine: 150 + Math.floor(next() * 100) } : { path },
      };
    }
    if (roll < 0.66)
      return {
        name: 'search_text',
        input: { query: ['retries', 'timeoutMs', 'logger.warn', 'safeParse', 'Error('][Math.floor(next() * 5)]!, limit: 60 },
      };
    if (roll < 0.8) return { name: 'run_command', input: { command: ['npm test', 'npx tsc --noEmit', 'git diff'][Math.floor(next() * 3)]! } };
    if (roll < 0.93 && read.length > 0) {
      const path = read[Math.floor(next() * read.length)]!;
      const oldText = workspace.editableLine(path, next);
      if (oldText)
        return {
          name: 'edit_file',
          input: { path, edits: [{ oldText, newText: oldText.replace(/timeoutMs: \d+/, `timeoutMs: ${1_000 + Math.floor(next() * 9_000)}`) }] },
        };
    }
    if (roll < 0.97) {
      const path = `src/new/helper-${n}.ts`;
      return {
        name: 'create_file',
        input: { path, content: Array.from({ length: 40 }, (_, i) => `export const helper${n}_${i} = ${i};`).join('\n') },
      };
    }
    return { name: 'list_files', input: { glob: 'src/**' } };
  };
  // One new module per turn larger than the kept tail: code the model writes whole, which is on disk after.
  const largeWriteTokens = Math.round(LARGE_WRITE_SHARE_OF_TAIL * keepRecentTokens(DEFAULT_CONFIG.keepRecent, roomForMessages(model()).limit));
  const largeWrite = (): { name: string; input: Record<string, unknown> } => {
    const path = `src/new/module-${n}.ts`;
    const lines = moduleText(next, 'jobs', Math.ceil(largeWriteTokens / 4)).split('\n');
    // As many whole lines as the size takes, found by halving.
    let low = 1;
    let high = lines.length;
    while (low < high) {
      const middle = Math.ceil((low + high) / 2);
      if (counter.countText(lines.slice(0, middle).join('\n')) <= largeWriteTokens) low = middle;
      else high = middle - 1;
    }
    return { name: 'create_file', input: { path, content: lines.slice(0, low).join('\n') } };
  };

  const gains: number[] = [];
  const counted = (outcome: Awaited<ReturnType<Conversation['compact']>>): void => {
    if (outcome.status !== 'compacted' || outcome.joined) return;
    gains.push((outcome.compaction.tokensBefore - outcome.compaction.tokensAfter) / outcome.compaction.tokensBefore);
  };
  const agentConversation = agentPort(c, newId, counted);
  const ui = SILENT_UI;

  for (let t = 0; t < TURNS; t++) {
    const calls = 30 + Math.floor(next() * 31);
    const largeAt = Math.floor(calls * (0.3 + next() * 0.6));
    plan = Array.from({ length: calls }, (_, i) => (i === largeAt ? largeWrite : toolCall));
    step = 0;
    await c.append([
      { type: 'message', message: { id: newId(), role: 'user', content: [{ type: 'text', text: REQUESTS[(t + seed) % REQUESTS.length]! }] } },
    ]);
    await runAgentTurn({
      model: providerModel,
      system: SYSTEM,
      tools,
      maxSteps: calls + 5,
      signal: new AbortController().signal,
      conversation: agentConversation,
      ui,
      overflowRetriesPerTurn: DEFAULT_CONFIG.overflowRetriesPerTurn,
    });
    // A turn that failed is not retried: its overflow is counted, and the next request goes on.
    compactAfterTurn(c, counted);
    await clock.sleep(15_000);
  }
  while (c.isCompacting()) await clock.sleep(100);

  const log = c.log();
  let uniqueTokens = 0;
  let messages = 0;
  for (const record of log) {
    if (record.type !== 'message') continue;
    uniqueTokens += counter.countMessage(record.message);
    messages++;
  }
  const summaries = log.filter((r) => r.type === 'compaction').length;
  return {
    overflows,
    firstRequestOverflows,
    gains,
    summaries,
    ledgerErrors: ledgerErrors(log),
    summarizerInput,
    uniqueTokens,
    log,
    model,
    messages,
    toolCalls,
    largeWriteTokens,
  };
}

/**
 * At every summary, the paths its file lists get wrong against the file operations of the log it was
 * applied to (a path missing, extra, or under the wrong status), and one more when its needle ledger
 * is not that of the log.
 */
export function ledgerErrors(log: ConversationLog): number {
  const memo = new EngineMemo();
  let errors = 0;
  log.forEach((record, at) => {
    if (record.type !== 'compaction') return;
    const before = log.slice(0, at);
    const expected = new Set(renderFileOperations(ledgerOf(before)).split('\n'));
    const start = record.entry.summary.lastIndexOf('<read-files>');
    const shown = new Set(start >= 0 ? record.entry.summary.slice(start).split('\n') : []);
    for (const line of expected) if (!shown.has(line)) errors++;
    for (const line of shown) if (!expected.has(line)) errors++;
    if (JSON.stringify(record.entry.needles) !== JSON.stringify(needleLedgerOf(before, memo))) errors++;
  });
  return errors;
}

/**
 * For each compaction of the session, the host's milliseconds to compute and apply it again on the log
 * as it stood: the summarizer answers at once and the store writes nothing, so what is timed is the
 * engine's own work (selection, pruning, the summary request, repairs, ledgers, the new view), with
 * the token counts of the session at hand as in the extension.
 */
async function hostMs(log: ConversationLog, model: ConversationDeps['model']): Promise<number[]> {
  const instant: Summarizer = { name: 'instant', summarize: async (request) => ({ text: summaryText(request) }) };
  const times: number[] = [];
  const state = new Map<string, unknown>();
  // One memo for the session, as the extension keeps one for a conversation: each compaction finds
  // what the ones before it remembered.
  const memo = new EngineMemo();
  for (const { at, reason } of compactionsOf(log)) {
    const records = log.slice(0, at);
    const deps: ConversationDeps = {
      store: new NullStore(tmpdir(), () => 0),
      index: new ConversationIndex({ get: (k) => state.get(k) as never, update: async (k, v) => void state.set(k, v) }),
      clock: { now: () => 0, setTimer: () => () => undefined },
      newId: () => `replay${at}`,
      config: () => DEFAULT_CONFIG,
      model,
      summarizer: async () => instant,
    };
    const conversation = new Conversation('replay', records, deps, { records: new ConversationRecords(records, memo) });
    conversation.count();
    const start = process.hrtime.bigint();
    await conversation.compact(reason);
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  return times;
}

/** The compactions of a session to make again: where each begins in the log, and why it ran. */
function compactionsOf(log: ConversationLog): Array<{ readonly at: number; readonly reason: CompactionReason }> {
  const found: Array<{ at: number; reason: CompactionReason }> = [];
  log.forEach((record, at) => {
    // The first record of each compaction: a pruning, or a summary not made with the pruning before it.
    const first =
      record.type === 'pruning' || (record.type === 'compaction' && !(log[at - 1]?.type === 'pruning' && record.entry.pruningId !== undefined));
    if (first) found.push({ at, reason: record.entry.reason === 'manual' ? 'threshold' : record.entry.reason });
  });
  return found;
}

/**
 * For each compaction of the session, made again through the compaction worker (built from
 * `workerFile`) and applied on this thread to one conversation stored in `dir`, as the extension host
 * keeps a conversation open: the session's records are appended to it as they came, between its
 * compactions (the session's own compaction records left out: the conversation makes its own), and
 * each compaction runs where the session's did: the longest stretch this thread could not run (ms).
 * The worker is sent what came since the compaction before as part of each compaction, as in the
 * session. The summarizer answers at once; its calls come from the worker and are made here, as the
 * extension makes them.
 */
async function hostStretches(log: ConversationLog, model: ConversationDeps['model'], workerFile: string, dir: string): Promise<Gaps[]> {
  const instant: Summarizer = { name: 'instant', summarize: async (request) => ({ text: summaryText(request) }) };
  let failed: string | undefined;
  const engine = new WorkerCompactionEngine(
    (priority) => startWorker(workerFile, priority),
    (message) => void (failed = message),
  );
  const store = new ConversationStore(dir, () => 0);
  const state = new Map<string, unknown>();
  const id = 'replay';
  const longest: Gaps[] = [];
  try {
    const compactions = compactionsOf(log);
    const first = compactions[0]?.at ?? log.length;
    const opening = await store.appendAll(id, log.slice(0, first));
    const conversation = new Conversation(
      id,
      opening,
      {
        store,
        index: new ConversationIndex({ get: (k) => state.get(k) as never, update: async (k, v) => void state.set(k, v) }),
        clock: { now: () => 0, setTimer: () => () => undefined },
        newId: () => `${id}-${Math.random().toString(36).slice(2)}`,
        config: () => DEFAULT_CONFIG,
        model,
        summarizer: async () => instant,
        engine,
      },
      { records: new ConversationRecords(opening, new EngineMemo()) },
    );
    let next = first;
    for (const { at, reason } of compactions) {
      // What the session added since its compaction before, its compaction records left out.
      await conversation.append(log.slice(next, at));
      conversation.count();
      let status = '';
      const gaps = await gapsDuring(async () => {
        status = (await conversation.compact(reason)).status;
      });
      if (failed) throw new Error(`the compaction worker failed: ${failed}`);
      // The conversation's own summaries may leave the view under the threshold where the session's
      // was over it: nothing is compacted there, and nothing measured.
      if (status === 'compacted') longest.push(gaps);
      next = at;
      while (next < log.length && (log[next]!.type === 'pruning' || log[next]!.type === 'compaction')) next++;
    }
    if (longest.length < compactions.length * 0.9) {
      throw new Error(`only ${longest.length} of the session's ${compactions.length} compactions compacted the conversation made again`);
    }
  } finally {
    engine.dispose();
  }
  return longest;
}

/** What `npm run bench` reports of the long turns, per window. */
export interface LongTurnsBench {
  readonly window: number;
  readonly sessions: number;
  readonly requests: number;
  readonly tool_calls: number;
  readonly messages: number;
  /** The local tokens of the file each turn writes whole, larger than the recent part a compaction keeps. */
  readonly large_write_tokens: number;
  readonly overflow_errors: number;
  readonly first_request_overflows: number;
  readonly compactions: number;
  readonly summaries: number;
  readonly min_gain_pct: number;
  readonly ledger_errors: number;
  readonly summarizer_input_ratio: number;
  /** The host's thread, the compaction computed and applied there with a store that writes nothing (ms). */
  readonly host_ms_median: number;
  readonly host_ms_max: number;
  /** How many of the session's compactions compacted the conversation made again (see `hostStretches`), quiet. */
  readonly host_stretch_compactions: number;
  /** The longest stretch of the host's thread one compaction took, computed in the worker and applied on the host (ms). */
  readonly host_stretch_ms_median: number;
  /** 95 compactions in 100 hold the host's thread no longer than this (ms). */
  readonly host_stretch_ms_p95: number;
  readonly host_stretch_ms_max: number;
  /** The same with one core kept busy (ms). */
  readonly host_stretch_ms_p95_busy: number;
  readonly host_stretch_ms_max_busy: number;
  /** How much of each maximum the garbage collector held the host's thread (ms). */
  readonly host_stretch_ms_max_collector: number;
  readonly host_stretch_ms_max_busy_collector: number;
  /** The share of those compactions (quiet and busy) in which the host's heap was collected at least once. */
  readonly host_collected_share: number;
}

export async function benchLongTurns(tokenizer: TextTokenizer, windows: readonly number[] = [32_768, 65_536]): Promise<LongTurnsBench[]> {
  const out: LongTurnsBench[] = [];
  const dir = await mkdtemp(join(tmpdir(), 'longrun-bench-worker-'));
  try {
    const workerFile = await buildWorker(dir);
    for (const window of windows) out.push(await benchWindow(window, tokenizer, workerFile));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return out;
}

async function benchWindow(window: number, tokenizer: TextTokenizer, workerFile: string): Promise<LongTurnsBench> {
  const runs: SessionResult[] = [];
  for (const seed of SEEDS) runs.push(await playSession(window, seed, tokenizer, workerFile));
  const sum = (f: (r: SessionResult) => number): number => runs.reduce((total, r) => total + f(r), 0);
  const gains = runs.flatMap((r) => r.gains);
  const host = runs.flatMap((r) => r.hostMs);
  const stretches = runs.flatMap((r) => r.hostStretchMs.map((g) => g.longest));
  const busyStretches = runs.flatMap((r) => r.hostStretchMsBusy.map((g) => g.longest));
  const longestOf = (all: Gaps[]): Gaps => all.reduce((a, b) => (b.longest > a.longest ? b : a));
  return {
    window,
    sessions: runs.length,
    requests: runs.length * TURNS,
    tool_calls: sum((r) => r.toolCalls),
    messages: sum((r) => r.messages),
    large_write_tokens: Math.max(...runs.map((r) => r.largeWriteTokens)),
    overflow_errors: sum((r) => r.overflows),
    first_request_overflows: sum((r) => r.firstRequestOverflows),
    compactions: gains.length,
    summaries: sum((r) => r.summaries),
    min_gain_pct: gains.length > 0 ? Math.round(Math.min(...gains) * 1000) / 10 : 0,
    ledger_errors: sum((r) => r.ledgerErrors),
    summarizer_input_ratio: sum((r) => r.summarizerInput) / sum((r) => r.uniqueTokens),
    host_ms_median: median(host),
    host_ms_max: Math.max(...host),
    host_stretch_compactions: stretches.length,
    host_stretch_ms_median: median(stretches),
    host_stretch_ms_p95: percentile(stretches, 0.95),
    host_stretch_ms_max: Math.max(...stretches),
    host_stretch_ms_p95_busy: percentile(busyStretches, 0.95),
    host_stretch_ms_max_busy: Math.max(...busyStretches),
    host_stretch_ms_max_collector: longestOf(runs.flatMap((r) => r.hostStretchMs)).collector,
    host_stretch_ms_max_busy_collector: longestOf(runs.flatMap((r) => r.hostStretchMsBusy)).collector,
    host_collected_share: collectedShare(runs.flatMap((r) => [...r.hostStretchMs, ...r.hostStretchMsBusy])),
  };
}

/** The share of `all` in which the host's heap was collected at least once. */
function collectedShare(all: readonly Gaps[]): number {
  return all.length > 0 ? all.filter((g) => g.collections > 0).length / all.length : 0;
}

if (require.main === module) {
  void loadTokenizer('o200k_base').then(async (tokenizer) => {
    console.log(JSON.stringify(await benchLongTurns(tokenizer), null, 2));
  });
}
