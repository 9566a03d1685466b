/**
 * What a long conversation costs against each provider's cache, and whether Longrun says so rightly:
 * the 200-turn session with tool loops at a 128k window (`prefix-reuse.ts`'s), played through
 * Longrun's own turn controller with the real AI SDK provider package of each native provider
 * (`@ai-sdk/anthropic`, `@ai-sdk/openai`) against its loopback stand-in over HTTP. The stand-in
 * applies the provider's caching rules and keeps the provider's bill; Longrun records the usage each
 * answer reports and prices it from its model catalogue, as the gauge and `/context` show it.
 *
 * Time is simulated, and shared by Longrun and the stand-in (whose cache lifetimes run on it): each
 * model step takes 4–20 s; between turns the user pauses 10–120 s, and before one turn in ten
 * 3–10 minutes instead (a meeting, a build, a coffee), so some of those breaks outlast the 5-minute
 * cache. The session runs with the cold-cache compaction (`longrun.cache.coldCompaction`, the
 * default) and without it, to show what it saves and that it costs the cache nothing.
 *
 * What the stand-ins share with Longrun: nothing of its count. Each counts tokens by a rule of its own
 * (`scripts/scripted-model/tokens.ts`: per kind of character, per-message framing, Claude's hidden
 * tool-use prompt, OpenAI's rendered tool definitions), so Longrun learns their counts from their
 * usage as it must a real provider's. Gemini's and OpenRouter's stand-ins are played too, for
 * `native_window_shrunk`: no native API cuts a prompt, so none of their counts may shrink the window.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ConversationRegistry } from '../src/app/conversation/conversation-registry';
import { ModelCatalogue } from '../src/app/models/model-catalogue';
import { readSettings } from '../src/app/settings';
import { ConversationIndex } from '../src/app/store/conversation-index';
import { ConversationStore } from '../src/app/store/conversation-store';
import { RequestSetup } from '../src/app/turn/request-setup';
import { TurnController, type ChatSurface, type TurnModels } from '../src/app/turn/turn-controller';
import { UsageViews } from '../src/app/usage/usage-views';
import { WorkspaceFiles } from '../src/app/workspace/workspace-files';
import { DEFAULT_CONFIG } from '../src/core/config';
import { MessageTokenCounter } from '../src/core/message-tokens';
import { systemClock, type Clock } from '../src/core/ports';
import type { ProviderKind } from '../src/core/provider-kind';
import type { TextTokenizer } from '../src/core/tokenizer';
import { cacheHitShare } from '../src/core/usage-report';
import { createAiSummarizer, type AgentPrefix } from '../src/llm/ai-summarizer';
import { providerModel } from '../src/llm/providers';
import { NO_TELEMETRY } from '../src/llm/telemetry';
import type { Prices } from '../scripts/scripted-model/bill';
import type { Scenario } from '../scripts/scripted-model/scenarios';
import { startScriptedModelServer, type FormatName } from '../scripts/scripted-model/server';
import { contentText } from '../scripts/scripted-model/wire';
import { random, turns, type SessionShape, type TurnScript } from './sessions';

/** Tool loops of 2 to 6 reads of 30 to 90 lines: about 4,000 tokens a turn (as `prefix-reuse.ts`). */
const TOOL_LOOPS: SessionShape = { steps: [2, 6], resultLines: [30, 90] };
const WINDOW = 128_000;
const OUTPUT_RESERVE = 16_384;
/** The stand-in's own window: larger than Longrun's, so that only Longrun's compaction shapes the session. */
const SERVED_WINDOW = 200_000;

/** One provider as the session is played against it. */
interface Provider {
  readonly kind: ProviderKind & FormatName;
  /** A model the catalogue prices exactly as the provider bills it. */
  readonly model: string;
  /** The provider's published prices, in US dollars per million tokens: the stand-in bills at them. */
  readonly prices: Prices;
}

/** Claude Sonnet 4: $3 input, $15 output; cache reads 0.1×, 5-minute writes 1.25×, 1-hour writes 2× the input price. */
const ANTHROPIC: Provider = {
  kind: 'anthropic',
  model: 'claude-sonnet-4-20250514',
  prices: { input: 3, output: 15, cacheRead: 0.3, cacheWrite5m: 3.75, cacheWrite1h: 6 },
};

/** GPT-4.1: $2 input, $0.50 cached input, $8 output; writing to the cache costs nothing extra. */
const OPENAI: Provider = { kind: 'openai', model: 'gpt-4.1', prices: { input: 2, output: 8, cacheRead: 0.5 } };

/** Gemini 2.5 Flash: $0.30 input, $0.075 cached input (its implicit cache), $2.50 output. */
const GOOGLE: Provider = { kind: 'google', model: 'gemini-2.5-flash', prices: { input: 0.3, output: 2.5, cacheRead: 0.075 } };

/** Claude Sonnet 4 through OpenRouter, billed as Anthropic bills it. */
const OPENROUTER: Provider = {
  kind: 'openrouter',
  model: 'anthropic/claude-sonnet-4',
  prices: { input: 3, output: 15, cacheRead: 0.3, cacheWrite5m: 3.75, cacheWrite1h: 6 },
};

/** How long things take, in simulated milliseconds, drawn from `random`. */
const SECOND = 1_000;
const MINUTE = 60 * SECOND;
/** One model step (the request, the answer, the tool it calls): 4 to 20 s. */
const stepMs = (next: () => number): number => 4 * SECOND + Math.floor(next() * 16 * SECOND);
/** The user's pause before a turn: 10 to 120 s, and one time in ten a break of 3 to 10 minutes. */
const pauseMs = (next: () => number): number =>
  next() < 0.1 ? 3 * MINUTE + Math.floor(next() * 7 * MINUTE) : 10 * SECOND + Math.floor(next() * 110 * SECOND);

/** What one session measured, against one provider, with or without the cold-cache compaction. */
export interface BilledSession {
  readonly provider: ProviderKind;
  readonly model: string;
  readonly coldCompaction: boolean;
  readonly turns: number;
  /** Requests the stand-in answered and billed (the agent's, the summaries' and the subagents'). */
  readonly requests: number;
  /** Of them, the subagents' as Longrun recorded them, and what Longrun says they cost (US dollars). */
  readonly subagentRequests: number;
  readonly subagent_usd: number;
  /** Usage records Longrun kept: one per billed request when nothing was lost. */
  readonly recorded: number;
  readonly summaryRequests: number;
  /** By the stand-in's bill: cache-read input ÷ all input. */
  readonly cache_read_share: number;
  /** The same as Longrun's usage report shows it (the gauge's "cache hit share"). */
  readonly reported_share: number | undefined;
  /** Of the summary requests alone, by the bill. */
  readonly summary_read_share: number;
  /** What the stand-in billed, in US dollars. */
  readonly billed_usd: number;
  /** What Longrun's usage report says the conversation cost, in US dollars. */
  readonly reported_usd: number;
  /** |reported − billed| ÷ billed, in %. */
  readonly cost_error_pct: number;
  /** Requests Longrun could not price. */
  readonly unpriced: number;
  /** Compactions and prunings in the log, and of them those made because the cache had expired. */
  readonly compactions: number;
  readonly cold_prunes: number;
  /** Tokens of the view the cold-cache prunes took out (their `tokensBefore − tokensAfter`, summed). */
  readonly cold_prune_tokens: number;
  /** Pauses that outlasted the provider's cache lifetime as the stand-in keeps it. */
  readonly long_breaks: number;
  /** Times the session shrank the model's window from what it learned of the server (an error's statement or a cut prompt). */
  readonly window_shrunk: number;
  /** Simulated hours the session took. */
  readonly hours: number;
  /** Real seconds it took to play. */
  readonly seconds: number;
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

/** The task a turn's first step hands a subagent: the turn's reads, which it does, then reports on. */
const SUBAGENT_TASK = /^Read these files and report what they hold: (.+)$/;

/**
 * The model's part, as the stand-in plays it from each request: the turn's next read while there is
 * one (counted from the tool results after the turn's request), then its answer. With `delegateEvery`,
 * every so many turns begin by handing the turn's reads to a subagent (the `delegate` tool), which
 * reads them one a step and reports; the turn then goes on with its own reads.
 */
function scriptedModel(script: readonly TurnScript[], delegateEvery?: number): Scenario {
  return ({ request }) => {
    const messages = request.messages;
    const first = messages.find((m) => m.role === 'user');
    const task = SUBAGENT_TASK.exec(contentText(first?.content).trim());
    if (task) {
      const paths = task[1]!.split(', ');
      const read = messages.filter((m) => m.role === 'tool').length;
      const path = paths[read];
      if (path !== undefined) return { text: `Reading ${path}.`, toolCalls: [{ name: 'read_file', arguments: { path } }] };
      return { text: `Findings: ${paths.join(', ')} read; each holds the code the task names.` };
    }
    let userIndex = messages.length - 1;
    while (userIndex > 0 && !(messages[userIndex]!.role === 'user' && /task \d+:/.test(contentText(messages[userIndex]!.content)))) userIndex--;
    const index = Number(/task (\d+):/.exec(contentText(messages[userIndex]?.content))?.[1] ?? -1);
    const turn = script[index];
    const delegates = turn !== undefined && delegateEvery !== undefined && index % delegateEvery === 0;
    const results = messages.slice(userIndex + 1).filter((m) => m.role === 'tool').length;
    if (delegates && results === 0) {
      const paths = turn.steps.map((step) => step.path).join(', ');
      return {
        text: 'Handing the reads to a subagent.',
        toolCalls: [{ name: 'delegate', arguments: { task: `Read these files and report what they hold: ${paths}` } }],
      };
    }
    const step = turn?.steps[results - (delegates ? 1 : 0)];
    if (step) return { text: `Reading ${step.path}.`, toolCalls: [{ name: 'read_file', arguments: { path: step.path } }] };
    return { text: turn?.answer ?? 'Done.' };
  };
}

/** Plays the session against `provider`'s stand-in. */
export async function benchBilledSession(
  tokenizer: TextTokenizer,
  provider: Provider,
  coldCompaction: boolean,
  turnCount = 200,
  delegateEvery?: number,
): Promise<BilledSession> {
  const dir = await mkdtemp(join(tmpdir(), 'longrun-bench-bills-'));
  try {
    return await play(dir, tokenizer, provider, coldCompaction, turnCount, delegateEvery);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function play(
  dir: string,
  tokenizer: TextTokenizer,
  provider: Provider,
  coldCompaction: boolean,
  turnCount: number,
  delegateEvery: number | undefined,
): Promise<BilledSession> {
  const started = Date.now();
  const workspace = join(dir, 'ws');
  const script = await workspaceFor(workspace, turnCount);
  const start = Date.UTC(2026, 0, 5, 9);
  let time = start;
  const clock: Clock = { now: () => time, setTimer: systemClock.setTimer };
  const server = await startScriptedModelServer({
    format: provider.kind,
    models: [{ id: provider.model, window: SERVED_WINDOW, prices: provider.prices }],
    scenario: scriptedModel(script, delegateEvery),
    clock: () => time,
  });
  try {
    const steps = random(7);
    // Each answer takes its time once it has arrived: the next request is sent that much later.
    const timedFetch: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      time += stepMs(steps);
      return response;
    };
    const model = providerModel({
      kind: provider.kind,
      endpoint: 'bench',
      baseUrl: server.url,
      id: provider.model,
      apiKey: 'bench-key',
      fetch: timedFetch,
    });
    let prefix: AgentPrefix | undefined;
    const summarizer = createAiSummarizer({ model, name: `longrun/bench/${provider.model}`, continueFrom: () => prefix, provider: provider.kind });
    const settings = readSettings(() => undefined).settings;
    const built = controllerFor(dir, workspace, tokenizer, clock, {
      model,
      provider: provider.kind,
      modelKey: `longrun/bench/${provider.model}`,
      summarizer,
      setAgentPrefix: (p) => void (prefix = p),
      settings: { ...settings, agent: { ...settings.agent, maxSteps: 50 }, cache: { ...settings.cache, coldCompaction } },
    });
    const surface: ChatSurface = { markdown: () => undefined, progress: () => undefined, button: () => undefined, diffButton: () => undefined };
    const shrunk = built.shrunk;
    const history: unknown[] = [];
    const pauses = random(11);
    let longBreaks = 0;
    for (let t = 0; t < turnCount; t++) {
      if (t > 0) {
        const pause = pauseMs(pauses);
        if (pause > 5 * MINUTE) longBreaks++;
        time += pause;
      }
      const result = await built.controller.handle(
        { prompt: `task ${t}: ${script[t]!.request}`, history, chat: 'bench', attachments: [], instructions: [], toolReferences: [] },
        surface,
        new AbortController().signal,
      );
      if (result.errorDetails) throw new Error(`turn ${t} failed: ${result.errorDetails.message}`);
      history.push({ prompt: '', participant: 'longrun.agent' }, { participant: 'longrun.agent', result: { metadata: result.metadata } });
      await idle(built.registry);
    }

    const conversation = built.registry.currentIfLoaded()!;
    const report = built.usage.report(conversation);
    const bill = server.bill.total();
    const billedInput = (t: { input: number; cacheRead: number; cacheWrite5m: number; cacheWrite1h: number }): number =>
      t.input + t.cacheRead + t.cacheWrite5m + t.cacheWrite1h;
    const summarySeqs = new Set(server.requests.filter((r) => r.summary).map((r) => r.seq));
    const summaryCharges = server.bill.charges.filter((c) => summarySeqs.has(c.seq));
    const summaryInput = summaryCharges.reduce((sum, c) => sum + billedInput(c.tokens), 0);
    const summaryRead = summaryCharges.reduce((sum, c) => sum + c.tokens.cacheRead, 0);
    const billed = bill.cost ?? 0;
    const log = conversation.allRecords();
    const cold = log.flatMap((r) => ((r.type === 'pruning' || r.type === 'compaction') && r.entry.reason === 'cache-expired' ? [r.entry] : []));
    return {
      provider: provider.kind,
      model: provider.model,
      coldCompaction,
      turns: turnCount,
      requests: server.bill.charges.length,
      subagentRequests: report.subagents.requests,
      subagent_usd: report.subagents.cost,
      recorded: report.conversation.requests,
      summaryRequests: summaryCharges.length,
      cache_read_share: bill.tokens.cacheRead / Math.max(1, billedInput(bill.tokens)),
      reported_share: cacheHitShare(report.conversation),
      summary_read_share: summaryRead / Math.max(1, summaryInput),
      billed_usd: billed,
      reported_usd: report.conversation.cost,
      cost_error_pct: billed > 0 ? (Math.abs(report.conversation.cost - billed) / billed) * 100 : 0,
      unpriced: report.conversation.unpriced,
      compactions: log.filter((r) => r.type === 'compaction' || r.type === 'pruning').length,
      cold_prunes: cold.length,
      cold_prune_tokens: cold.reduce((sum, entry) => sum + Math.max(0, entry.tokensBefore - entry.tokensAfter), 0),
      long_breaks: longBreaks,
      window_shrunk: shrunk.length,
      hours: (time - start) / (60 * MINUTE),
      seconds: (Date.now() - started) / 1000,
    };
  } finally {
    await server.close();
  }
}

interface ControllerModels {
  readonly model: ReturnType<typeof providerModel>;
  readonly provider: ProviderKind;
  /** The key usage records are stamped with, `longrun/<endpoint>/<id>`, as for a model of `longrun.endpoints`. */
  readonly modelKey: string;
  readonly summarizer: ReturnType<typeof createAiSummarizer>;
  readonly setAgentPrefix: (prefix: AgentPrefix) => void;
  readonly settings: ReturnType<typeof readSettings>['settings'];
}

/** A turn controller as the extension builds it for a model of one of its endpoints, over a store in `dir`. */
function controllerFor(dir: string, workspace: string, tokenizer: TextTokenizer, clock: Clock, models: ControllerModels) {
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
        name: models.modelKey,
        window: { limit: WINDOW - OUTPUT_RESERVE, source: 'model' },
        counter,
        requestOverhead: counter.countText(setup.overheadText(undefined)),
        outputReserve: OUTPUT_RESERVE,
      }),
      summarizer: async () => models.summarizer,
      summarizeAhead: () => true,
    }),
    warn: () => undefined,
    error: () => undefined,
    info: () => undefined,
    changed: () => undefined,
  });
  const usage = new UsageViews({ catalogue: new ModelCatalogue(), settings: () => models.settings, now: () => clock.now() });
  const shrunk: number[] = [];
  const turnModels: TurnModels = {
    languageModel: async () => models.model,
    learnWindow: (limit) => void (limit < WINDOW && shrunk.push(limit)),
    windowIsLowerBound: () => false,
    contextWindow: () => undefined,
    maxOutputTokens: () => OUTPUT_RESERVE,
    telemetry: () => NO_TELEMETRY,
    truncationAdvice: () => undefined,
    observeUsage: () => undefined,
    redact: (text) => text,
    servedByEndpoint: () => true,
    setAgentPrefix: models.setAgentPrefix,
    modelName: () => models.modelKey,
    newId,
    providerKind: () => models.provider,
    // Subagents run on the conversation's model, as they do unless longrun.subagent.model names another.
    subagentModel: async () => ({
      key: models.modelKey,
      name: models.modelKey,
      languageModel: async () => models.model,
      context: (overheadText) => ({
        name: models.modelKey,
        window: { limit: WINDOW - OUTPUT_RESERVE, source: 'model' },
        counter,
        requestOverhead: counter.countText(overheadText),
        outputReserve: OUTPUT_RESERVE,
      }),
      maxOutputTokens: () => OUTPUT_RESERVE,
      summarizer: async () => undefined,
      learnWindow: () => undefined,
      servedByEndpoint: true,
      provider: models.provider,
    }),
    usageView: (conversation) => usage.of(conversation, false),
  };
  const roots = [{ name: 'ws', fsPath: workspace }];
  const editor = { findFiles: async () => [], unsavedText: () => undefined, editUnsaved: async () => false };
  const files = new WorkspaceFiles({ roots: () => roots, autoApprove: () => true, confirm: async () => true, editor });
  const turnWorkspace = { files, trusted: () => true, roots: () => roots };
  const setup = new RequestSetup({ workspace: turnWorkspace, settings: () => models.settings });
  const controller = new TurnController({
    registry,
    models: turnModels,
    workspace: turnWorkspace,
    settings: () => models.settings,
    setup,
    reporter: { report: () => undefined },
    log: { info: () => undefined, warn: () => undefined, error: () => undefined },
    now: () => clock.now(),
  });
  return { controller, registry, usage, shrunk };
}

/** Waits for a compaction the last turn left running in the background. */
async function idle(registry: ConversationRegistry): Promise<void> {
  for (let i = 0; i < 2_000 && registry.currentIfLoaded()?.isCompacting(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
}

/** The figures `npm run bench` keeps, and the sessions behind them. */
export interface CacheBills {
  /** Cache-read input ÷ all input as Anthropic's stand-in billed it, with the cold-cache compaction (the default). */
  readonly cache_read_share_anthropic: number;
  /** The same against OpenAI's stand-in. */
  readonly cache_read_share_openai: number;
  /**
   * The largest |Longrun's cost − the stand-in's bill| ÷ the bill of the sessions, in % (a request
   * Longrun did not record or price counts in it), the sessions whose turns delegate to subagents among them.
   */
  readonly cost_error_pct: number;
  /** Tokens the cold-cache prunes took out of the view, both providers. */
  readonly cold_prune_tokens: number;
  /** How much lower Anthropic's cache-read share is with the cold-cache compaction than without it (0 when not lower). */
  readonly cold_prune_share_loss: number;
  /**
   * Times a window was shrunk over the sessions against every native stand-in (Anthropic's, OpenAI's,
   * Gemini's, OpenRouter's), which count tokens their own way and never cut a prompt.
   */
  readonly native_window_shrunk: number;
  readonly sessions: readonly BilledSession[];
}

/** Turns of the sessions that delegate, and how often a turn hands its reads to a subagent. */
const DELEGATED_TURNS = 30;
const DELEGATE_EVERY = 3;

/**
 * The session against each provider with the cold-cache compaction, and against Anthropic's (whose
 * 5-minute cache the breaks outlast most) once more without it; and a shorter one against each in
 * which every third turn hands its reads to a subagent, so that the cost's error counts theirs.
 */
export async function benchCacheBills(tokenizer: TextTokenizer, turnCount = 200): Promise<CacheBills> {
  const anthropic = await benchBilledSession(tokenizer, ANTHROPIC, true, turnCount);
  const anthropicWarm = await benchBilledSession(tokenizer, ANTHROPIC, false, turnCount);
  const openai = await benchBilledSession(tokenizer, OPENAI, true, turnCount);
  const delegated = [
    await benchBilledSession(tokenizer, ANTHROPIC, true, Math.min(turnCount, DELEGATED_TURNS), DELEGATE_EVERY),
    await benchBilledSession(tokenizer, OPENAI, true, Math.min(turnCount, DELEGATED_TURNS), DELEGATE_EVERY),
  ];
  const sessions = [anthropic, anthropicWarm, openai, ...delegated];
  // Billed as each provider bills, but priced by a catalogue that may not list them exactly: for the window alone.
  const others = [await benchBilledSession(tokenizer, GOOGLE, true, turnCount), await benchBilledSession(tokenizer, OPENROUTER, true, turnCount)];
  return {
    cache_read_share_anthropic: anthropic.cache_read_share,
    cache_read_share_openai: openai.cache_read_share,
    cost_error_pct: Math.max(...sessions.map((s) => s.cost_error_pct)),
    cold_prune_tokens: anthropic.cold_prune_tokens + openai.cold_prune_tokens,
    cold_prune_share_loss: Math.max(0, anthropicWarm.cache_read_share - anthropic.cache_read_share),
    native_window_shrunk: [...sessions, ...others].reduce((sum, s) => sum + s.window_shrunk, 0),
    sessions: [...sessions, ...others],
  };
}

// A run of its own: `npx tsx bench/cache-bills.ts [turns]` prints each session as JSON.
if (require.main === module) {
  void (async () => {
    const { loadTokenizer } = await import('../src/core/tokenizer');
    const tokenizer = await loadTokenizer('o200k_base');
    const bills = await benchCacheBills(tokenizer, Number(process.argv[2] ?? 200));
    for (const session of bills.sessions) console.log(JSON.stringify(session));
    const { sessions: _, ...figures } = bills;
    console.log(JSON.stringify(figures));
  })();
}
