/**
 * The gauge against a real server's own counts: llama.cpp's `llama-server` with SmolLM2-135M-Instruct
 * (its tokenizer and chat template, a 4,096-token window), the installed one of
 * `scripts/real-model/install.ts`. A session of turns with code, prose and JSON goes through Longrun's
 * agent loop, request building and calibration, to the real server; before every request the gauge's
 * number is compared with the `prompt_tokens` the server reports for that request. Compactions happen
 * as they would.
 *
 * Nothing is installed here: without the server and model in the cache the measure is "not measured",
 * with the reason. Run alone with `npx tsx bench/real-model.ts`, or through `npm run bench`.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { wrapLanguageModel, type LanguageModel, type LanguageModelMiddleware, type ToolSet } from 'ai';
import { DEFAULT_CONFIG } from '../src/core/config';
import { outputReserveFor } from '../src/core/context-window';
import { MessageTokenCounter } from '../src/core/message-tokens';
import { systemClock, type Summarizer } from '../src/core/ports';
import type { TextTokenizer } from '../src/core/tokenizer';
import { runAgentTurn, toolDefinitionsText } from '../src/llm/agent';
import { createAgentTools } from '../src/llm/agent-tools';
import { createEndpointModel } from '../src/llm/openai-endpoint';
import { Conversation } from '../src/app/conversation/conversation';
import { ConversationIndex } from '../src/app/store/conversation-index';
import { realModelInstalled, realModelPaths } from '../scripts/real-model/install';
import { REAL_MODEL_ID, startLlamaServer } from '../scripts/real-model/server';
import { BenchWorkspace } from './agentic-workspace';
import { agentPort, compactAfterTurn, SILENT_UI, summaryText, TrackedStore } from './agent-session';

const WINDOW = 4_096;
/** Short answers: the measure is the prompt, and a small model on a shared CPU writes slowly. */
const MAX_OUTPUT = 48;
const TURNS = 12;

const SYSTEM = [
  "You are Longrun, a coding agent working in the user's VS Code workspace.",
  'Use the tools to read, list and search files before answering questions about the code; do not guess file contents.',
  'Answer in Markdown, in one or two short sentences.',
].join('\n');

/** What the user says each turn: prose, code and JSON, as a coding session mixes them. */
function userMessage(turn: number): string {
  switch (turn % 3) {
    case 0:
      return `Turn ${turn}: the scheduler retries failed jobs ${turn % 5} times before it gives up. Why would the retry logic fail under load? Answer briefly.`;
    case 1:
      return [
        `Turn ${turn}: what does this function do? One sentence.`,
        '```ts',
        ...Array.from(
          { length: 8 },
          (_, i) => `export function handler${turn}_${i}(request: Request): Promise<Response> { return route(request, '/api/v${i % 3}/items'); }`,
        ),
        '```',
      ].join('\n');
    default:
      return `Turn ${turn}: summarize this log in one sentence.\n${Array.from({ length: 6 }, (_, i) => JSON.stringify({ id: `${turn}-${i}`, status: i % 2 ? 'ok' : 'failed', durationMs: (i * 37) % 1000 })).join('\n')}`;
  }
}

/** What `npm run bench` reports of the gauge against the real server. */
export type RealModelBench =
  | {
      readonly measured: true;
      /** From the second request on: the mean and the largest error against the server's count, in percent. */
      readonly mean_pct: number;
      readonly max_pct: number;
      /** The signed error of each request from the first (positive: the gauge reads high), in percent. */
      readonly by_request_pct: readonly number[];
      readonly requests: number;
      readonly compactions: number;
      readonly seconds: number;
      readonly build: string;
    }
  | { readonly measured: false; readonly reason: string };

export async function benchRealModel(tokenizer: TextTokenizer): Promise<RealModelBench> {
  const installed = realModelInstalled();
  if (!installed) {
    const paths = realModelPaths();
    return { measured: false, reason: `llama-server or its model is not installed (${paths.server}); run npx tsx scripts/real-model/install.ts` };
  }
  const started = Date.now();
  const server = await startLlamaServer(installed, { contextSize: WINDOW });
  const dir = await mkdtemp(join(tmpdir(), 'longrun-bench-real-model-'));
  try {
    const { errors, compactions } = await play(server.url, new TrackedStore(dir, () => Date.now()), tokenizer);
    const later = errors.slice(1).map(Math.abs);
    if (later.length === 0) return { measured: false, reason: 'the server answered fewer than two requests' };
    return {
      measured: true,
      mean_pct: round(later.reduce((a, b) => a + b, 0) / later.length),
      max_pct: round(Math.max(...later)),
      by_request_pct: errors.map(round),
      requests: errors.length,
      compactions,
      seconds: Math.round((Date.now() - started) / 1000),
      build: installed.build,
    };
  } finally {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  }
}

async function play(url: string, store: TrackedStore, tokenizer: TextTokenizer): Promise<{ errors: number[]; compactions: number }> {
  const counter = new MessageTokenCounter(tokenizer);
  const state = new Map<string, unknown>();
  const workspace = new BenchWorkspace(1);
  let n = 0;
  const newId = (): string => `id${++n}`;
  const summarizer: Summarizer = { name: 'bench', summarize: async (request) => ({ text: summaryText(request) }) };
  const reserve = outputReserveFor(WINDOW, MAX_OUTPUT);
  let conversation: Conversation | undefined;
  const tools: ToolSet = createAgentTools(workspace, {
    readOnly: false,
    commands: workspace,
    maxResultChars: 20_000,
    onFileEvent: (e) => void conversation!.append([{ type: 'file', event: { kind: e.kind, path: e.path, actor: 'agent', at: Date.now() } }]),
    recall: { recall: (query) => conversation!.recall(query) },
  });
  const overhead = counter.countText(`${SYSTEM}\n${toolDefinitionsText(tools)}`);
  conversation = new Conversation('bench', [], {
    store,
    index: new ConversationIndex({ get: (k) => state.get(k) as never, update: async (k, v) => void state.set(k, v) }),
    clock: systemClock,
    newId,
    config: () => DEFAULT_CONFIG,
    model: () => ({
      name: 'SmolLM2 on llama-server',
      window: { limit: WINDOW - reserve, source: 'model' as const },
      counter,
      requestOverhead: overhead,
      outputReserve: reserve,
      key: `llama/${REAL_MODEL_ID}`,
    }),
    summarizer: async () => summarizer,
    summarizeAhead: () => true,
  });
  const c = conversation;

  // Before each request, the gauge's number; after it, the server's own count of that request.
  const estimates: number[] = [];
  const counts: number[] = [];
  const measure: LanguageModelMiddleware = {
    specificationVersion: 'v4',
    wrapStream: async ({ doStream }) => {
      const estimate = c.count().tokens;
      const result = await doStream();
      type Part = typeof result.stream extends ReadableStream<infer P> ? P : never;
      const seen = new TransformStream<Part, Part>({
        transform: (part, controller) => {
          const reported = part.type === 'finish' ? part.usage.inputTokens.total : undefined;
          if (reported !== undefined) {
            estimates.push(estimate);
            counts.push(reported);
          }
          controller.enqueue(part);
        },
      });
      return { ...result, stream: result.stream.pipeThrough(seen) };
    },
  };
  const endpoint = createEndpointModel({ endpoint: 'llama', baseUrl: url, id: REAL_MODEL_ID, maxOutputTokens: MAX_OUTPUT }, undefined);
  const model = wrapLanguageModel({ model: endpoint as Parameters<typeof wrapLanguageModel>[0]['model'], middleware: measure }) as LanguageModel;

  let compactions = 0;
  const agentConversation = agentPort(c, newId, (outcome) => {
    if (outcome.status === 'compacted') compactions++;
  });
  for (let turn = 0; turn < TURNS; turn++) {
    await c.append([{ type: 'message', message: { id: newId(), role: 'user', content: [{ type: 'text', text: userMessage(turn) }] } }]);
    const result = await runAgentTurn({
      model,
      system: SYSTEM,
      tools,
      maxSteps: 3,
      maxOutputTokens: () => MAX_OUTPUT,
      signal: new AbortController().signal,
      conversation: agentConversation,
      ui: SILENT_UI,
      overflowRetriesPerTurn: DEFAULT_CONFIG.overflowRetriesPerTurn,
    });
    if (result.error !== undefined) throw result.error instanceof Error ? result.error : new Error(String(result.error));
    compactAfterTurn(c, (outcome) => {
      if (outcome.status === 'compacted') compactions++;
    });
    while (c.isCompacting()) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { errors: estimates.map((estimate, i) => ((estimate - counts[i]!) / counts[i]!) * 100), compactions };
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}

if (require.main === module) {
  void import('../src/core/tokenizer').then(async ({ loadTokenizer }) => {
    console.log(JSON.stringify(await benchRealModel(await loadTokenizer('o200k_base')), null, 2));
  });
}
