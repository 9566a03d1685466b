/**
 * Delegation on the agentic bench workspace (`agentic-workspace.ts`): an investigation (one search,
 * then the files it points at read whole, then a report) played through Longrun's own agent loop,
 * tools, conversation and subagent runner, either in the parent's own conversation or handed to a
 * subagent with the `delegate` tool. The parent's conversation already holds an earlier exchange.
 *
 * Measured:
 * - `delegate_parent_token_ratio`: the tokens the parent's model processes for one investigation
 *   (every request's input as the conversation counts it, plus its output), delegated ÷ done in the
 *   parent. The subagent's own tokens are reported beside it: they are spent on the subagent's model.
 * - `delegate_parallel_speedup`: the wall time of a turn that hands three investigations to subagents
 *   in one step (they run at the same time) against one that hands them over one step after another,
 *   every model call taking `STEP_MS`.
 *
 * Run alone with `npx tsx bench/delegation.ts`, or through `npm run bench`.
 */
import { convertArrayToReadableStream, MockLanguageModelV4 } from 'ai/test';
import { DEFAULT_CONFIG } from '../src/core/config';
import { MessageTokenCounter } from '../src/core/message-tokens';
import type { Message } from '../src/core/messages';
import { loadTokenizer, type TextTokenizer } from '../src/core/tokenizer';
import { runAgentTurn, toolDefinitionsText } from '../src/llm/agent';
import { createAgentTools } from '../src/llm/agent-tools';
import { Conversation } from '../src/app/conversation/conversation';
import type { ModelContext } from '../src/app/conversation/conversation-meter';
import { readSettings } from '../src/app/settings';
import { ConversationIndex } from '../src/app/store/conversation-index';
import { SubagentRunner } from '../src/app/subagents/subagent-runner';
import { BenchWorkspace } from './agentic-workspace';
import { agentPort, SILENT_UI } from './agent-session';
import { median } from './stats';

/** How long every model call takes in the wall-time measure (ms). */
const STEP_MS = 100;
/** Files one investigation reads. */
const READS = 6;
const WINDOW = 200_000;
const OUTPUT_TOKENS = 60;
const SEEDS = [1, 2, 3];
const QUERIES = ['logger.warn', 'timeoutMs', 'safeParse'];

const SYSTEM = [
  "You are Longrun, a coding agent working in the user's VS Code workspace.",
  'Workspace folders: app. Paths are relative to the workspace.',
  'Use the tools to read, list and search files before answering questions about the code; do not guess file contents.',
  'Answer in Markdown, concisely.',
].join('\n');

type Mode = 'inline' | 'delegate-parallel' | 'delegate-serial';

/** What one turn measured. */
interface TurnRun {
  /** Tokens the parent's model processed: every request's input as counted, and its output. */
  readonly parentTokens: number;
  /** Tokens the subagents' model processed, as they reported them. */
  readonly subagentTokens: number;
  readonly wallMs: number;
  /** Delegations whose result was a report (not a failure). */
  readonly reports: number;
}

const usage = (input: number, output: number) => ({
  inputTokens: { total: input, noCache: input, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: output, text: output, reasoning: undefined },
});

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The investigation of `query`: its search, then the first `READS` files it matched. */
function plan(workspace: BenchWorkspace, query: string): Array<{ name: string; input: Record<string, unknown> }> {
  const files = [...new Set(workspace.paths().filter((p) => workspace.files.get(p)!.lines.some((l) => l.includes(query))))].slice(0, READS);
  return [{ name: 'search_text', input: { query, limit: 40 } }, ...files.map((path) => ({ name: 'read_file', input: { path } }))];
}

/** The text of a model message of the prompt the provider gets. */
function promptText(message: { content: unknown }): string {
  if (typeof message.content === 'string') return message.content;
  return (message.content as Array<{ type: string; text?: string }>).map((p) => p.text ?? '').join(' ');
}

/** A report of the length a subagent writes: findings with the lines they rest on. */
function report(query: string, results: number): string {
  const lines = Array.from(
    { length: 12 },
    (_, i) =>
      `- \`${query}\` is used in the ${i % 2 ? 'retry loop' : 'input check'} of module ${i}: src/area/file-${i}.ts:${10 + i * 7}-${20 + i * 7}`,
  );
  return `Findings (${results} tool results read):\n${lines.join('\n')}\nNot finished: the tests were not run.`;
}

/** A turn of the parent's that investigates `queries`: itself (`inline`, one query), or by delegating each. */
async function playTurn(mode: Mode, queries: readonly string[], seed: number, tokenizer: TextTokenizer, stepMs: number): Promise<TurnRun> {
  const counter = new MessageTokenCounter(tokenizer);
  const workspace = new BenchWorkspace(seed);
  let n = 0;
  const newId = (): string => `id${++n}`;
  const memory = (id: string): Conversation => {
    const listing = new Map<string, unknown>();
    return new Conversation(id, [], {
      store: {
        appendAll: async (_id, records) => [...records],
        readAt: () => Promise.reject(new Error('held in memory')),
      },
      index: new ConversationIndex({ get: (key) => listing.get(key) as never, update: async (key, value) => void listing.set(key, value) }),
      clock: { now: Date.now, setTimer: (ms, fn) => clearer(setTimeout(fn, ms)) },
      newId,
      config: () => DEFAULT_CONFIG,
      model: () => context,
      summarizer: async () => undefined,
    });
  };
  const context0 = (overheadText: string): ModelContext => ({
    name: 'bench',
    window: { limit: WINDOW, source: 'model' },
    counter,
    requestOverhead: counter.countText(overheadText),
    outputReserve: 4_096,
    key: 'longrun/bench/model',
  });
  let context = context0('');
  const parent = memory('parent');
  const settings = readSettings(() => undefined).settings;
  const runner = new SubagentRunner({
    model: async () => ({
      key: 'longrun/bench/model',
      name: 'bench',
      languageModel: async () => model,
      context: context0,
      maxOutputTokens: () => undefined,
      summarizer: async () => undefined,
      learnWindow: () => undefined,
      servedByEndpoint: false,
    }),
    settings: () => settings,
    files: workspace,
    parent,
    folders: () => ['app'],
    now: Date.now,
    newId,
    ui: { started: () => undefined, ended: () => undefined },
    maxResultChars: 20_000,
    countText: (text) => counter.countText(text),
  });
  const tools = createAgentTools(workspace, { readOnly: true, maxResultChars: 20_000, recall: parent, delegate: runner });
  context = context0(`${SYSTEM}\n${toolDefinitionsText(tools)}`);

  // The parent's earlier exchange: a question, and an answer that quoted two files.
  const earlier = workspace.paths().slice(0, 2);
  const quoted = await Promise.all(earlier.map(async (path) => (await workspace.readFile(path, {})).text));
  const history: Message[] = [
    { id: newId(), role: 'user', content: [{ type: 'text', text: 'Explain how the api module validates its input.' }] },
    { id: newId(), role: 'assistant', content: [{ type: 'text', text: `Here is how, from ${earlier.join(' and ')}:\n${quoted.join('\n')}` }] },
  ];
  await parent.append(history.map((message) => ({ type: 'message', message })));

  let parentTokens = 0;
  let subagentTokens = 0;
  let delegated = 0;
  const model = new MockLanguageModelV4({
    doStream: async ({ prompt }) => {
      await sleep(stepMs);
      const subagent = promptText(prompt[0]!).startsWith('You are a subagent');
      const tail = prompt.slice(prompt.findLastIndex((m) => m.role === 'user') + 1);
      const results = tail.filter((m) => m.role === 'tool').length;
      const parts: Record<string, unknown>[] = [{ type: 'stream-start', warnings: [] }];
      const input = subagent ? Math.ceil(JSON.stringify(prompt).length / 4) : parent.count().localTokens;
      if (subagent) subagentTokens += input + OUTPUT_TOKENS;
      else parentTokens += input + OUTPUT_TOKENS;
      const finish = (reason: 'tool-calls' | 'stop') => ({
        type: 'finish',
        finishReason: { unified: reason, raw: reason === 'stop' ? 'stop' : 'tool_calls' },
        usage: usage(input, OUTPUT_TOKENS),
      });
      // A subagent's task names its query in quotes.
      const query = subagent ? promptText(prompt.find((m) => m.role === 'user')!).split('"')[1]! : queries[0]!;
      const steps = subagent || mode === 'inline' ? plan(workspace, query) : [];
      if (steps[results]) {
        const call = steps[results]!;
        parts.push({ type: 'tool-call', toolCallId: `c${newId()}`, toolName: call.name, input: JSON.stringify(call.input) }, finish('tool-calls'));
      } else if (!subagent && mode !== 'inline' && delegated < queries.length) {
        const now = mode === 'delegate-parallel' ? queries : [queries[delegated]!];
        for (const query of now) {
          const task = `Find where "${query}" is used and say in which module and why.`;
          parts.push({ type: 'tool-call', toolCallId: `d${newId()}`, toolName: 'delegate', input: JSON.stringify({ task }) });
        }
        delegated += now.length;
        parts.push(finish('tool-calls'));
      } else {
        const text = subagent ? report(query, results) : `Done: ${report(queries.join(', '), results)}`;
        parts.push({ type: 'text-start', id: 't' }, { type: 'text-delta', id: 't', delta: text }, { type: 'text-end', id: 't' }, finish('stop'));
      }
      return { stream: convertArrayToReadableStream(parts as never[]) };
    },
  });

  await parent.append([
    { type: 'message', message: { id: newId(), role: 'user', content: [{ type: 'text', text: 'Where is logging of retries decided?' }] } },
  ]);
  const started = Date.now();
  const result = await runAgentTurn({
    model,
    system: SYSTEM,
    tools,
    maxSteps: 20,
    signal: new AbortController().signal,
    conversation: agentPort(parent, newId, () => undefined),
    ui: SILENT_UI,
    overflowRetriesPerTurn: DEFAULT_CONFIG.overflowRetriesPerTurn,
  }).finally(() => runner.idle());
  const wallMs = Date.now() - started;
  if (result.error !== undefined) throw result.error instanceof Error ? result.error : new Error(String(result.error));
  let reports = 0;
  for (const record of parent.log()) {
    if (record.type !== 'message') continue;
    for (const part of record.message.content) {
      if (part.type === 'tool-result' && part.toolName === 'delegate' && !part.isError) reports++;
    }
  }
  return { parentTokens, subagentTokens, wallMs, reports };
}

function clearer(timer: ReturnType<typeof setTimeout>): () => void {
  return () => clearTimeout(timer);
}

export interface DelegationBench {
  /** Parent tokens for one investigation, delegated ÷ in the parent (median over the seeds). */
  readonly delegate_parent_token_ratio: number;
  /** Wall time of three delegations one after another ÷ all three in one step (median over the seeds). */
  readonly delegate_parallel_speedup: number;
  readonly parent_tokens_inline: number;
  readonly parent_tokens_delegated: number;
  readonly subagent_tokens: number;
  readonly serial_ms: number;
  readonly parallel_ms: number;
  /** Delegations that came back without a report, over every run: the target is none. */
  readonly missing_reports: number;
  readonly seeds: number;
  readonly step_ms: number;
}

export async function benchDelegation(tokenizer: TextTokenizer): Promise<DelegationBench> {
  const ratios: number[] = [];
  const speedups: number[] = [];
  const inline: number[] = [];
  const delegated: number[] = [];
  const subagent: number[] = [];
  const serial: number[] = [];
  const parallel: number[] = [];
  let missing = 0;
  for (const seed of SEEDS) {
    // The same investigation, done by the parent itself and handed to one subagent.
    const query = [QUERIES[seed % QUERIES.length]!];
    const own = await playTurn('inline', query, seed, tokenizer, 0);
    const one = await playTurn('delegate-serial', query, seed, tokenizer, 0);
    missing += 1 - one.reports;
    ratios.push(one.parentTokens / own.parentTokens);
    inline.push(own.parentTokens);
    delegated.push(one.parentTokens);
    subagent.push(one.subagentTokens);
    const inTurn = await playTurn('delegate-serial', QUERIES, seed, tokenizer, STEP_MS);
    const atOnce = await playTurn('delegate-parallel', QUERIES, seed, tokenizer, STEP_MS);
    missing += 2 * QUERIES.length - inTurn.reports - atOnce.reports;
    speedups.push(inTurn.wallMs / atOnce.wallMs);
    serial.push(inTurn.wallMs);
    parallel.push(atOnce.wallMs);
  }
  return {
    delegate_parent_token_ratio: median(ratios),
    delegate_parallel_speedup: median(speedups),
    parent_tokens_inline: median(inline),
    parent_tokens_delegated: median(delegated),
    subagent_tokens: median(subagent),
    serial_ms: median(serial),
    parallel_ms: median(parallel),
    missing_reports: missing,
    seeds: SEEDS.length,
    step_ms: STEP_MS,
  };
}

if (require.main === module) {
  void (async () => {
    const result = await benchDelegation(await loadTokenizer('o200k_base'));
    console.log(JSON.stringify(result, null, 2));
  })();
}
