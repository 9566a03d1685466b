/**
 * How much of each request a provider's prompt cache could serve: a generated 200-turn session with
 * tool loops at a 128k window, played through Longrun's own turn controller (the system prompt, the
 * tools, the conversation's view, compaction in the loop and in the background) against a scripted
 * model that records every request it is sent. For each request, the tokens it shares as a prefix
 * with the request before it are what a cache keyed on prefixes (OpenAI's, a local server's KV
 * cache) could serve; a request that does not start with the whole previous one is a cache break.
 * Requests are compared as the provider reads them: the tool definitions first, then the messages
 * in order, each rendered as JSON and counted with o200k.
 */
import { usageReport } from '../src/core/usage-report';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { convertArrayToReadableStream, MockLanguageModelV4 } from 'ai/test';
import { ConversationRegistry } from '../src/app/conversation/conversation-registry';
import { ConversationIndex } from '../src/app/store/conversation-index';
import { ConversationStore } from '../src/app/store/conversation-store';
import { readSettings } from '../src/app/settings';
import { RequestSetup } from '../src/app/turn/request-setup';
import { TurnController, type ChatSurface, type TurnModels } from '../src/app/turn/turn-controller';
import { WorkspaceFiles } from '../src/app/workspace/workspace-files';
import { DEFAULT_CONFIG } from '../src/core/config';
import { MessageTokenCounter } from '../src/core/message-tokens';
import { systemClock, type Summarizer } from '../src/core/ports';
import type { TextTokenizer } from '../src/core/tokenizer';
import { createAiSummarizer, type AgentPrefix } from '../src/llm/ai-summarizer';
import { NO_TELEMETRY } from '../src/llm/telemetry';
import { SUMMARY, turns, type SessionShape, type TurnScript } from './sessions';

/** Tool loops of 2 to 6 reads of 30 to 90 lines: about 4,000 tokens a turn. */
const TOOL_LOOPS: SessionShape = { steps: [2, 6], resultLines: [30, 90] };
const WINDOW = 128_000;
const OUTPUT_RESERVE = 16_384;

type Call = MockLanguageModelV4['doStreamCalls'][number];

export interface PrefixReuse {
  /** Over every request after the first, the share of its tokens that the previous request began with. */
  readonly prefix_reuse_share: number;
  /** Requests that did not start with the whole previous request, per 100 requests. */
  readonly cache_breaks_per_100_requests: number;
  readonly requests: number;
  readonly breaks: number;
  /** Breaks at a request whose view a compaction or a pruning had changed since the previous request. */
  readonly breaks_at_compactions: number;
  /** Compactions (summaries and prunings) in force or undone in the session's log. */
  readonly compactions: number;
  /** Tokens of the summarizer's requests that the agent's previous request did not begin with, over all of them. */
  readonly summarizer_uncached_input_ratio: number;
  readonly summarizer_calls: number;
  readonly turns: number;
}

/** Token counts of rendered messages, each counted once however often it is sent. */
class RenderedCounts {
  private readonly counts = new Map<string, number>();
  constructor(private readonly tokenizer: TextTokenizer) {}
  count(text: string): number {
    let n = this.counts.get(text);
    if (n === undefined) this.counts.set(text, (n = this.tokenizer.count(text)));
    return n;
  }
  /** Tokens two texts share from their start (the last, perhaps cut, token aside). */
  sharedPrefix(a: string, b: string): number {
    let same = 0;
    while (same < a.length && same < b.length && a.charCodeAt(same) === b.charCodeAt(same)) same++;
    return same === 0 ? 0 : Math.max(0, this.tokenizer.count(a.slice(0, same)) - 1);
  }
  total(request: readonly string[]): number {
    return request.reduce((n, text) => n + this.count(text), 0);
  }
}

/** A request as the provider reads it: the tools, then each message, rendered. */
function rendered(call: Pick<Call, 'tools' | 'prompt'>): string[] {
  return [JSON.stringify(call.tools ?? []), ...call.prompt.map((m) => JSON.stringify(m))];
}

/** Tokens of `request` that `previous` began with, and whether all of `previous` is a prefix of it. */
function reuse(counts: RenderedCounts, previous: readonly string[], request: readonly string[]): { shared: number; whole: boolean } {
  let shared = 0;
  for (let i = 0; i < request.length; i++) {
    const before = previous[i];
    if (before === undefined) return { shared, whole: true };
    if (before !== request[i]) return { shared: shared + counts.sharedPrefix(before, request[i]!), whole: false };
    shared += counts.count(request[i]!);
  }
  return { shared, whole: previous.length <= request.length };
}

/** Writes the files the session's tool calls read. */
async function workspaceFor(workspace: string, turnCount: number): Promise<TurnScript[]> {
  const script: TurnScript[] = [];
  const generator = turns(24, TOOL_LOOPS);
  for (let t = 0; t < turnCount; t++) {
    const turn = generator.next().value as TurnScript;
    script.push(turn);
    for (const step of turn.steps) {
      await mkdir(dirname(join(workspace, step.path)), { recursive: true });
      await writeFile(join(workspace, step.path), step.result);
    }
  }
  return script;
}

/**
 * How summaries are asked for: as a continuation of the conversation (the agent's own model, the
 * default) or as a separate structured request (a summarizer model of its own).
 */
export type SummaryMode = 'continuation' | 'structured';

export async function benchPrefixReuse(tokenizer: TextTokenizer, mode: SummaryMode, turnCount = 200): Promise<PrefixReuse> {
  const dir = await mkdtemp(join(tmpdir(), 'longrun-bench-prefix-'));
  try {
    return await play(dir, tokenizer, mode, turnCount);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function play(dir: string, tokenizer: TextTokenizer, mode: SummaryMode, turnCount: number): Promise<PrefixReuse> {
  const workspace = join(dir, 'ws');
  const script = await workspaceFor(workspace, turnCount);
  const counts = new RenderedCounts(tokenizer);
  const requests: string[][] = [];
  /** For each request, the compaction state of the view it was built from (the step in force last). */
  const bases: Array<string | null> = [];
  const summary = { tokens: 0, uncached: 0, calls: 0 };
  let registry: ConversationRegistry | undefined;

  const model = new MockLanguageModelV4({
    doStream: async (call) => {
      const request = rendered(call);
      requests.push(request);
      bases.push(registry?.currentIfLoaded()?.requestBasis().basis ?? null);
      return { stream: convertArrayToReadableStream(reply(call.prompt, script, counts.total(request)) as never[]) };
    },
  });
  // The summaries' requests, as the provider reads them, compared with the agent's request before each.
  const noteSummary = (sent: string[]): void => {
    const total = counts.total(sent);
    summary.calls++;
    summary.tokens += total;
    summary.uncached += total - reuse(counts, requests.at(-1) ?? [], sent).shared;
  };
  let prefix: AgentPrefix | undefined;
  const summaryModel = new MockLanguageModelV4({
    doGenerate: async (call) => {
      noteSummary(rendered(call));
      return {
        content: [{ type: 'text', text: SUMMARY }],
        finishReason: { unified: 'stop', raw: 'stop' },
        usage: {
          inputTokens: { total: 0, noCache: 0, cacheRead: undefined, cacheWrite: undefined },
          outputTokens: { total: 0, text: 0, reasoning: undefined },
        },
        warnings: [],
      } as never;
    },
  });
  const summarizer: Summarizer = createAiSummarizer({
    model: summaryModel,
    name: 'bench',
    ...(mode === 'continuation' ? { continueFrom: () => prefix } : {}),
  });
  const built = controllerFor(dir, workspace, tokenizer, model, summarizer, (p) => void (prefix = p));
  registry = built.registry;
  const surface: ChatSurface = { markdown: () => undefined, progress: () => undefined, button: () => undefined, diffButton: () => undefined };
  const history: unknown[] = [];
  for (let t = 0; t < turnCount; t++) {
    const result = await built.controller.handle(
      { prompt: `task ${t}: ${script[t]!.request}`, history, chat: 'bench', attachments: [], instructions: [], toolReferences: [] },
      surface,
      new AbortController().signal,
    );
    history.push({ prompt: '', participant: 'longrun.agent' }, { participant: 'longrun.agent', result: { metadata: result.metadata } });
    await idle(registry);
  }

  let shared = 0;
  let total = 0;
  let breaks = 0;
  let breaksAtCompactions = 0;
  for (let i = 1; i < requests.length; i++) {
    const r = reuse(counts, requests[i - 1]!, requests[i]!);
    shared += r.shared;
    total += counts.total(requests[i]!);
    if (r.whole) continue;
    breaks++;
    if (bases[i] !== bases[i - 1]) breaksAtCompactions++;
  }
  const log = registry.currentIfLoaded()!.log();
  return {
    prefix_reuse_share: total > 0 ? shared / total : 1,
    cache_breaks_per_100_requests: (breaks / Math.max(1, requests.length - 1)) * 100,
    requests: requests.length,
    breaks,
    breaks_at_compactions: breaksAtCompactions,
    compactions: log.filter((r) => r.type === 'compaction' || r.type === 'pruning').length,
    summarizer_uncached_input_ratio: summary.tokens > 0 ? summary.uncached / summary.tokens : 0,
    summarizer_calls: summary.calls,
    turns: turnCount,
  };
}

/** The scripted model's reply: the turn's next read while there is one, then its answer. */
function reply(prompt: Call['prompt'], script: readonly TurnScript[], read: number): Record<string, unknown>[] {
  let userIndex = prompt.length - 1;
  while (userIndex > 0 && prompt[userIndex]!.role !== 'user') userIndex--;
  const turn = script[Number(/task (\d+)/.exec(JSON.stringify(prompt[userIndex]?.content ?? ''))?.[1] ?? -1)];
  const done = prompt.slice(userIndex + 1).filter((m) => m.role === 'tool').length;
  const usage = {
    inputTokens: { total: read, noCache: read, cacheRead: undefined, cacheWrite: undefined },
    outputTokens: { total: 40, text: 40, reasoning: undefined },
  };
  const step = turn?.steps[done];
  if (step) {
    return [
      { type: 'stream-start', warnings: [] },
      { type: 'tool-call', toolCallId: `c${userIndex}-${done}`, toolName: 'read_file', input: JSON.stringify({ path: step.path }) },
      { type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage },
    ];
  }
  return [
    { type: 'stream-start', warnings: [] },
    { type: 'text-start', id: 't' },
    { type: 'text-delta', id: 't', delta: turn?.answer ?? 'Done.' },
    { type: 'text-end', id: 't' },
    { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage },
  ];
}

/** A turn controller as the extension builds it, over a store in `dir` and the workspace folder. */
function controllerFor(
  dir: string,
  workspace: string,
  tokenizer: TextTokenizer,
  model: MockLanguageModelV4,
  summarizer: Summarizer,
  setAgentPrefix: (prefix: AgentPrefix) => void,
) {
  const clock = systemClock;
  const store = new ConversationStore(join(dir, 'storage'), () => clock.now());
  const state = new Map<string, unknown>();
  const index = new ConversationIndex({ get: (k) => state.get(k) as never, update: async (k, v) => void state.set(k, v) });
  const counter = new MessageTokenCounter(tokenizer);
  let ids = 0;
  const newId = (): string => `id${++ids}`;
  const registry = new ConversationRegistry({
    store,
    index,
    clock,
    newId,
    conversationDeps: () => ({
      store,
      index,
      clock,
      newId,
      config: () => DEFAULT_CONFIG,
      model: () => ({
        name: 'bench',
        window: { limit: WINDOW - OUTPUT_RESERVE, source: 'model' },
        counter,
        requestOverhead: counter.countText(setup.overheadText(undefined)),
        outputReserve: OUTPUT_RESERVE,
      }),
      summarizer: async () => summarizer,
      summarizeAhead: () => true,
    }),
    warn: () => undefined,
    error: () => undefined,
    info: () => undefined,
    changed: () => undefined,
  });
  const models: TurnModels = {
    languageModel: async () => model,
    learnWindow: () => undefined,
    windowIsLowerBound: () => false,
    contextWindow: () => undefined,
    maxOutputTokens: () => OUTPUT_RESERVE,
    telemetry: () => NO_TELEMETRY,
    truncationAdvice: () => undefined,
    observeUsage: () => undefined,
    redact: (text) => text,
    servedByEndpoint: () => false,
    setAgentPrefix,
    modelName: () => 'bench',
    newId,
    providerKind: () => undefined,
    usageView: (conversation) => ({
      report: usageReport(
        conversation.allRecords().flatMap((r) => (r.type === 'usage' ? [r.usage] : [])),
        () => undefined,
      ),
    }),
    subagentModel: async () => undefined,
  };
  const roots = [{ name: 'ws', fsPath: workspace }];
  const editor = { findFiles: async () => [], unsavedText: () => undefined, editUnsaved: async () => false };
  const files = new WorkspaceFiles({ roots: () => roots, autoApprove: () => true, confirm: async () => true, editor });
  const settings = readSettings(() => undefined).settings;
  const turnWorkspace = { files, trusted: () => true, roots: () => roots };
  const setup = new RequestSetup({ workspace: turnWorkspace, settings: () => ({ ...settings, agent: { ...settings.agent, maxSteps: 50 } }) });
  const controller = new TurnController({
    registry,
    models,
    workspace: turnWorkspace,
    settings: () => ({ ...settings, agent: { ...settings.agent, maxSteps: 50 } }),
    setup,
    reporter: { report: () => undefined },
    log: { info: () => undefined, warn: () => undefined, error: () => undefined },
    now: () => clock.now(),
  });
  return { controller, registry };
}

/** Waits for a compaction the last turn left running in the background. */
async function idle(registry: ConversationRegistry): Promise<void> {
  for (let i = 0; i < 400 && registry.currentIfLoaded()?.isCompacting(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
}
