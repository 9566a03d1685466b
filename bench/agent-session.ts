/**
 * A coding-agent session played through Longrun's own agent loop (`runAgentTurn`) and conversation
 * (`Conversation` over a real `ConversationStore`), with a scripted model and summarizer that take
 * simulated time (`VirtualClock`). Two designs run the same sessions:
 *
 * - `longrun`: what the chat participant does (src/vscode/chat-participant.ts): past the warning level
 *   the conversation summarizes in the background, and the compaction point applies the ready summary
 *   at the start of a step; a turn that ends at the threshold is compacted right away in the
 *   background, while the user reads and types;
 * - `blocking`: compaction only at the start of a step, the request waiting for it.
 *
 * The wait a user sees from compaction is, per turn, the turn's time less the model's.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tool, type ToolSet } from 'ai';
import { convertArrayToReadableStream, MockLanguageModelV4 } from 'ai/test';
import { z } from 'zod';
import { DEFAULT_CONFIG } from '../src/core/config';
import type { LogRecord } from '../src/core/history';
import { MessageTokenCounter } from '../src/core/message-tokens';
import type { Summarizer, SummaryRequest } from '../src/core/ports';
import type { TextTokenizer } from '../src/core/tokenizer';
import { runAgentTurn, type AgentConversation, type AgentUi } from '../src/llm/agent';
import { Conversation } from '../src/app/conversation/conversation';
import { ConversationIndex } from '../src/app/store/conversation-index';
import { ConversationStore } from '../src/app/store/conversation-store';
import { turns, TWO_K_TURNS, type TurnScript } from './sessions';
import { percentile } from './stats';
import { VirtualClock } from './virtual-time';

/** Which compaction design runs the session. */
export type Design = 'longrun' | 'blocking';

/** One simulated session: its design, length, window and times. */
export interface SessionOptions {
  readonly design: Design;
  readonly turns: number;
  readonly seed: number;
  /** The model's context window, in tokens. */
  readonly window: number;
  /** Simulated time one summarizer call takes. */
  readonly summarizerMs: number;
  /** Simulated time one model call (one step) takes. */
  readonly modelStepMs: number;
  /** Simulated time between the end of a turn and the user's next request. */
  readonly userPauseMs: number;
  readonly tokenizer: TextTokenizer;
}

/** What a simulated session measured. */
export interface SessionRun {
  /** Per turn, the simulated ms the user waited on compaction. */
  readonly waits: readonly number[];
  readonly compactions: number;
  /** Tokens of every request the summarizer was sent (system prompt and messages), summed. */
  readonly summarizerInputTokens: number;
  readonly summarizerCalls: number;
  /** Tokens of the session's messages, each counted once. */
  readonly uniqueTokens: number;
}

const SYSTEM = "You are Longrun, a coding agent working in the user's VS Code workspace. Use the tools to read files before answering.";

/** The fixed framing of a summarizer message (role and separators), as the local count has it. */
const PER_MESSAGE = 4;

/** An agent UI that shows nothing: the benchmarks measure, nobody watches. */
export const SILENT_UI: AgentUi = {
  text: () => undefined,
  toolCall: () => undefined,
  compacting: () => undefined,
  compacted: () => undefined,
  notice: () => undefined,
};

/** The agent's port to `conversation`, as the extension gives it, telling `onCompacted` of each compaction the agent ran. */
export function agentPort(
  conversation: Conversation,
  newId: () => string,
  onCompacted: (outcome: Awaited<ReturnType<Conversation['compact']>>) => void,
): AgentConversation {
  return {
    view: () => conversation.view(),
    append: (records) => conversation.append(records),
    assess: () => conversation.assess(),
    compact: async (reason, signal) => {
      const outcome = await conversation.compact(reason, { signal });
      onCompacted(outcome);
      return outcome;
    },
    requestBasis: () => conversation.requestBasis(),
    newId,
    guard: conversation.guard(),
  };
}

/** A summary of the size Longrun asks for (about 800 tokens by default), its sections filled. */
export function summaryText(request: SummaryRequest): string {
  const sections = ['Completed Work', 'Key Technical Decisions', 'Current State', 'Pending Work', 'Errors & Resolutions', 'Next Steps'];
  const body = sections
    .map((s, i) => `### ${s}\n${`- Module ${i}: the retry policy checks its input first; tests cover the failing cases. `.repeat(6)}`)
    .join('\n');
  return `## Session Summary\nSummarized ${request.messages.length} messages.\n${body}`;
}

/** The store, counting writes under way so that simulated time never overtakes them. */
export class TrackedStore extends ConversationStore {
  private pending = 0;

  busy(): boolean {
    return this.pending > 0;
  }

  override async appendAll(id: string, records: readonly LogRecord[]): Promise<LogRecord[]> {
    this.pending++;
    try {
      return await super.appendAll(id, records);
    } finally {
      this.pending--;
    }
  }
}

const usage = (input: number, output: number) => ({
  inputTokens: { total: input, noCache: input, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: output, text: output, reasoning: undefined },
});

/** Plays `options.turns` turns of a session and reports the waits and the summarizer's input. */
export async function runSession(options: SessionOptions): Promise<SessionRun> {
  const dir = await mkdtemp(join(tmpdir(), 'longrun-bench-session-'));
  let store: TrackedStore | undefined;
  const clock = new VirtualClock(() => store?.busy() ?? false);
  store = new TrackedStore(dir, () => clock.now());
  try {
    return await clock.run(() => play(options, store!, clock));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function play(options: SessionOptions, store: ConversationStore, clock: VirtualClock): Promise<SessionRun> {
  const counter = new MessageTokenCounter(options.tokenizer);
  const state = new Map<string, unknown>();
  let n = 0;
  const newId = (): string => `id${++n}`;
  let summarizerInputTokens = 0;
  let summarizerCalls = 0;
  const summarizer: Summarizer = {
    name: 'bench',
    summarize: async (request) => {
      summarizerCalls++;
      summarizerInputTokens += counter.countText(request.system);
      for (const m of request.messages) summarizerInputTokens += counter.countText(m.content) + PER_MESSAGE;
      await clock.sleep(options.summarizerMs);
      return { text: summaryText(request) };
    },
  };
  // What each tool call of the current turn reads, set by the scripted model as it calls.
  const results = new Map<string, string>();
  const tools: ToolSet = {
    read_file: tool({
      description: 'Read a file of the workspace.',
      inputSchema: z.object({ path: z.string() }),
      execute: async ({ path }) => results.get(path) ?? '',
    }),
  };
  const overhead = counter.countText(SYSTEM) + 60;
  const conversation = new Conversation('bench', [], {
    store,
    index: new ConversationIndex({ get: (k) => state.get(k) as never, update: async (k, v) => void state.set(k, v) }),
    clock,
    newId,
    config: () => DEFAULT_CONFIG,
    model: () => ({
      name: 'bench',
      window: { limit: options.window, source: 'model' },
      counter,
      requestOverhead: overhead,
      outputReserve: 0,
      key: 'bench',
    }),
    summarizer: async () => summarizer,
    // Longrun summarizes ahead of need past the warning level, as the extension does.
    summarizeAhead: () => options.design === 'longrun',
  });

  // The scripted model: the current turn's tool steps, then its answer; usage as a provider reports it.
  let script: TurnScript | undefined;
  let step = 0;
  let modelCalls = 0;
  const model = new MockLanguageModelV4({
    doStream: async () => {
      modelCalls++;
      // What the provider reads is the prompt as sent, before the time the model then takes.
      const input = conversation.count().localTokens;
      await clock.sleep(options.modelStepMs);
      const current = script!.steps[step];
      const parts: Record<string, unknown>[] = [{ type: 'stream-start', warnings: [] }];
      if (current) {
        const callId = `call_${newId()}`;
        step++;
        results.set(current.path, current.result);
        parts.push(
          { type: 'text-start', id: 't' },
          { type: 'text-delta', id: 't', delta: `Reading ${current.path}.` },
          { type: 'text-end', id: 't' },
          { type: 'tool-call', toolCallId: callId, toolName: 'read_file', input: JSON.stringify({ path: current.path }) },
          { type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage: usage(input, 20) },
        );
      } else {
        parts.push(
          { type: 'text-start', id: 'a' },
          { type: 'text-delta', id: 'a', delta: script!.answer },
          { type: 'text-end', id: 'a' },
          { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage: usage(input, counter.countText(script!.answer)) },
        );
      }
      return { stream: convertArrayToReadableStream(parts as never[]) };
    },
  });

  let compactions = 0;
  const countCompaction = (outcome: { status: string; joined?: boolean }): void => {
    if (outcome.status === 'compacted' && !outcome.joined) compactions++;
  };
  const agentConversation = agentPort(conversation, newId, countCompaction);
  const ui = SILENT_UI;

  const waits: number[] = [];
  const session = turns(options.seed, TWO_K_TURNS);
  for (let t = 0; t < options.turns; t++) {
    script = session.next().value as TurnScript;
    step = 0;
    await conversation.append([{ type: 'message', message: { id: newId(), role: 'user', content: [{ type: 'text', text: script.request }] } }]);
    const started = clock.now();
    const callsBefore = modelCalls;
    const result = await runAgentTurn({
      model,
      system: SYSTEM,
      tools,
      maxSteps: 25,
      signal: new AbortController().signal,
      conversation: agentConversation,
      ui,
      overflowRetriesPerTurn: DEFAULT_CONFIG.overflowRetriesPerTurn,
    });
    if (result.error !== undefined) throw new Error(`turn ${t} failed: ${String(result.error)}`);
    waits.push(clock.now() - started - (modelCalls - callsBefore) * options.modelStepMs);
    if (options.design === 'longrun') compactAfterTurn(conversation, countCompaction);
    await clock.sleep(options.userPauseMs);
  }
  // A compaction still running in the background belongs to the session too.
  while (conversation.isCompacting()) await clock.sleep(100);

  let uniqueTokens = 0;
  for (const record of conversation.log()) if (record.type === 'message') uniqueTokens += counter.countMessage(record.message);
  return { waits, compactions, summarizerInputTokens, summarizerCalls, uniqueTokens };
}

/** The chat participant's `compactInBackgroundIfNeeded`, on this conversation. */
export function compactAfterTurn(conversation: Conversation, done: (outcome: Awaited<ReturnType<Conversation['compact']>>) => void): void {
  if (conversation.isCompacting() || conversation.guard().decide({ at: 'end-of-turn', confirm: false }).kind !== 'compact') return;
  void conversation.compact('threshold', { signal: new AbortController().signal }).then(done);
}

/** The simulated times of a session: a 2 s summarizer, a model that takes 3 s a step, a user who takes 15 s to read and ask again. */
export const TIMES = { summarizerMs: 2_000, modelStepMs: 3_000, userPauseMs: 15_000 } as const;

/** Waits from compaction, Longrun against the blocking design. */
export interface StallBench {
  /** Longrun's p95 wait from compaction over the blocking design's, over the same sessions. */
  readonly stall_p95_ratio: number;
  readonly stall_p95_ms_longrun: number;
  readonly stall_p95_ms_blocking: number;
  readonly stall_turns: number;
  readonly compactions_longrun: number;
  readonly compactions_blocking: number;
  /** Turns in which the user waited at all, per design. */
  readonly waited_turns_longrun: number;
  readonly waited_turns_blocking: number;
}

/** Three 60-turn sessions of ~2k tokens a turn in a 32k window, each played by both designs. */
export async function benchStall(tokenizer: TextTokenizer, seeds: readonly number[] = [1, 2, 3]): Promise<StallBench> {
  const waits: Record<Design, number[]> = { longrun: [], blocking: [] };
  const compactions: Record<Design, number> = { longrun: 0, blocking: 0 };
  for (const seed of seeds) {
    for (const design of ['blocking', 'longrun'] as const) {
      const run = await runSession({ design, turns: 60, seed, window: 32_000, tokenizer, ...TIMES });
      waits[design].push(...run.waits);
      compactions[design] += run.compactions;
    }
  }
  const p95 = (design: Design) => percentile(waits[design], 0.95);
  return {
    stall_p95_ratio: p95('longrun') / p95('blocking'),
    stall_p95_ms_longrun: p95('longrun'),
    stall_p95_ms_blocking: p95('blocking'),
    stall_turns: waits.longrun.length,
    compactions_longrun: compactions.longrun,
    compactions_blocking: compactions.blocking,
    waited_turns_longrun: waits.longrun.filter((w) => w > 0).length,
    waited_turns_blocking: waits.blocking.filter((w) => w > 0).length,
  };
}

/** How much the summarizer is sent over a long session. */
export interface SummarizerInputBench {
  /** Tokens sent to the summarizer over the session's unique tokens. */
  readonly summarizer_input_ratio: number;
  readonly summarizer_input_tokens: number;
  readonly session_unique_tokens: number;
  readonly summarizer_calls: number;
}

/** A 300-turn session in a 32k window, as Longrun plays it. */
export async function benchSummarizerInput(tokenizer: TextTokenizer): Promise<SummarizerInputBench> {
  const run = await runSession({ design: 'longrun', turns: 300, seed: 4, window: 32_000, tokenizer, ...TIMES });
  return {
    summarizer_input_ratio: run.summarizerInputTokens / run.uniqueTokens,
    summarizer_input_tokens: run.summarizerInputTokens,
    session_unique_tokens: run.uniqueTokens,
    summarizer_calls: run.summarizerCalls,
  };
}
