/**
 * The offline scripted model: a loopback server that speaks a provider's API for the end-to-end tests,
 * `npm start` and the benchmarks: OpenAI's (Chat Completions, which OpenAI-compatible servers speak,
 * and the Responses API; the default), Anthropic's Messages API, the Gemini API or OpenRouter's. Each
 * format applies that provider's prompt caching (`caching/`), reports it in the provider's usage, and
 * keeps a bill of what it charged (`bill.ts`).
 *
 * It is a test double for the network boundary, not a model: every answer is either scripted by a
 * test or derived deterministically from the request, and its model ids and names say so. It binds
 * 127.0.0.1 only and never contacts another host. It lives outside `src/`, so the extension never
 * imports it and it never ships in the .vsix.
 *
 * This file is the server (queues, the request log, the bill, the control API, HTTP); `formats/` holds
 * each provider's wire format, `wire.ts` Chat Completions, and `scenarios.ts` what the model answers.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { Bill, costOf, type Charge, type Prices, type TokensByKind } from './bill';
import { anthropicFormat } from './formats/anthropic';
import {
  billedTokens,
  isRefusal,
  type Accounted,
  type Answer,
  type CompletionApi,
  type FormatName,
  type ModelCall,
  type Refusal,
  type WireFormat,
} from './formats/format';
import { geminiFormat } from './formats/gemini';
import { openAIFormat, OWNED_BY } from './formats/openai';
import { openRouterFormat } from './formats/openrouter';
import {
  demoScenario,
  isSummaryRequest,
  reachForTool,
  MAX_DELAY_MS,
  scriptStepSchema,
  summaryScenario,
  type Reply,
  type Scenario,
  type ScriptStep,
} from './scenarios';
import { breakStream, isLoopbackHost, MAX_BODY_BYTES, readBody, sendJson, waitUnlessClosed } from './http';
import { tokenRule, type TokenRule } from './tokens';
import { countPromptTokens, serverError, type ChatCompletionRequest } from './wire';

export { OWNED_BY };
export type { FormatName };

/** One model the server offers. */
export interface ScriptedModelConfig {
  /** The id clients send as `model`. */
  readonly id: string;
  /** Its context window: a request whose prompt plus requested output exceeds it is refused. */
  readonly window: number;
  /** A human-readable name, reported by `/v1/models` beside the id. */
  readonly name?: string;
  /** States the window in `/v1/models` as vLLM (`max_model_len`) and gateways (`context_length`) do. */
  readonly advertiseWindow?: boolean;
  /**
   * What a prompt over the window gets: the provider's overflow error (the default), or, with
   * Chat Completions, Ollama's behaviour: the start of the prompt is dropped until it fits, and
   * nothing is said.
   */
  readonly overflow?: 'error' | 'truncate';
  /**
   * Answers as servers that do not read `tool_choice` do (Ollama's OpenAI layer): a summary request
   * that offers tools is answered with a tool call, even under `tool_choice: "none"`.
   */
  readonly ignoresToolChoice?: boolean;
  /** The most the model answers, as the model list states it. */
  readonly maxOutputTokens?: number;
  /** What its tokens cost; the bill has no cost without them. */
  readonly prices?: Prices;
}

export const DEFAULT_MODELS: readonly ScriptedModelConfig[] = [
  { id: 'scripted', window: 128_000, name: 'Offline scripted model' },
  { id: 'scripted-small', window: 8192, name: 'Offline scripted model (small window)' },
];

// Bounds, so that no request, script or record can grow without limit.
const MAX_QUEUED_STEPS = 10_000;
const MAX_RECORDED_REQUESTS = 10_000;

// ---------------------------------------------------------------------------------------------
// The server.

/** One request the server received on `/v1/…` (control requests are not recorded). */
export interface RecordedRequest {
  /** 1, 2, 3… in order of arrival; restarts after `reset()`. */
  readonly seq: number;
  readonly method: string;
  readonly path: string;
  /** The model asked for, once the body validated. */
  readonly model?: string;
  /** The validated request; the JSON as sent when it did not validate; the raw text when not JSON. */
  readonly body?: unknown;
  /** The prompt tokens counted for a valid completion request. */
  readonly promptTokens?: number;
  /** Whether it was answered as a summary request. */
  readonly summary: boolean;
  /** The HTTP status answered; null when no answer was (or will be) sent. */
  readonly status: number | null;
  /** How the request ended so far. */
  readonly outcome: 'pending' | 'answered' | 'error' | 'hung' | 'broken' | 'client-closed';
  /** When the request arrived and when its answer was complete (milliseconds since the epoch). */
  readonly receivedAt: number;
  readonly answeredAt?: number;
  /** Set when the server dropped the start of the prompt to fit its window, without saying so. */
  readonly truncated?: { readonly sentTokens: number; readonly droppedMessages: number };
  /** The tokens an answered request was billed for, by kind (its prompt: input, cache read and written). */
  readonly billed?: TokensByKind;
}

type MutableRecord = { -readonly [K in keyof RecordedRequest]: RecordedRequest[K] };

export interface ScriptedModelServerOptions {
  /** 0 (the default) picks a free port. */
  readonly port?: number;
  /** The models offered; `DEFAULT_MODELS` when absent. */
  readonly models?: readonly ScriptedModelConfig[];
  /** Decides replies when the script is empty; `demoScenario` when absent. */
  readonly scenario?: Scenario;
  /** Decides summary replies; `summaryScenario` when absent. */
  readonly summaryScenario?: Scenario;
  /** Added before every completion answer, in milliseconds. */
  readonly latencyMs?: number;
  /** The provider whose API it speaks; OpenAI's when absent. */
  readonly format?: FormatName;
  /** The time the caches' lifetimes are measured in; the system clock when absent. */
  readonly clock?: () => number;
}

/** A running offline scripted model. */
export interface ScriptedModelServer {
  /** The API root for clients: `http://127.0.0.1:PORT` and the format's root (`/v1`, `/v1beta`, `/api/v1`). */
  readonly url: string;
  readonly port: number;
  /** The provider whose API it speaks. */
  readonly format: FormatName;
  /** What it charged for each answered request, by kind of token, and the sums. */
  readonly bill: { readonly charges: readonly Charge[]; total(): { readonly tokens: TokensByKind; readonly cost?: number } };
  /** Every `/v1/…` request received since start or the last `reset()`, oldest first. */
  readonly requests: readonly RecordedRequest[];
  /** Queues replies for the next non-summary completion requests, consumed in order. */
  script(steps: readonly ScriptStep[]): void;
  /** Answers every summary request with this step (e.g. an error) until called with undefined. */
  failSummaries(step: ScriptStep | undefined): void;
  /** Delay before every completion answer, in milliseconds. */
  setLatency(ms: number): void;
  /** Changes a configured model's context window. */
  setWindow(model: string, window: number): void;
  /** Empties the script, the record, the bill and the cache; restores failures, latency and windows as started. */
  reset(): void;
  /** Stops listening and destroys every connection, hanging ones included. */
  close(): Promise<void>;
}

/** Starts the server on 127.0.0.1 and resolves once it listens. */
export async function startScriptedModelServer(options: ScriptedModelServerOptions = {}): Promise<ScriptedModelServer> {
  const models = options.models ?? DEFAULT_MODELS;
  for (const model of models) assertWindow(model.window);
  const latencyMs = options.latencyMs ?? 0;
  assertLatency(latencyMs);
  // Chat Completions as the openai format serves it (the only one that may cut a prompt) is counted by OpenAI's rule.
  const rule = tokenRule('openai');
  const prices = new Map(models.flatMap((model) => (model.prices ? [[model.id, model.prices] as const] : [])));
  const instance = new ScriptedModel(
    makeFormat(options.format ?? 'openai', (answer) => {
      const found = prices.get(answer.model);
      return found ? costOf(billedTokens(answer), found) : undefined;
    }),
    models,
    rule,
    options.scenario ?? demoScenario,
    options.summaryScenario ?? summaryScenario,
    latencyMs,
    options.clock ?? Date.now,
  );
  await instance.listen(options.port ?? 0);
  return instance;
}

function makeFormat(name: FormatName, cost: (answer: Answer) => number | undefined): WireFormat {
  switch (name) {
    case 'openai':
      return openAIFormat(tokenRule('openai'));
    case 'anthropic':
      return anthropicFormat(tokenRule('anthropic'));
    case 'google':
      return geminiFormat(tokenRule('google'));
    case 'openrouter':
      return openRouterFormat(cost);
  }
}

function assertWindow(window: number): void {
  if (!Number.isInteger(window) || window < 1) throw new RangeError(`A context window must be a positive integer, not ${window}.`);
}

function assertLatency(ms: number): void {
  if (!Number.isInteger(ms) || ms < 0 || ms > MAX_DELAY_MS)
    throw new RangeError(`Latency must be an integer from 0 to ${MAX_DELAY_MS} ms, not ${ms}.`);
}

class ScriptedModel implements ScriptedModelServer {
  private readonly http: Server;
  private readonly windows = new Map<string, number>();
  private readonly queue: ScriptStep[] = [];
  private readonly recorded: MutableRecord[] = [];
  private readonly charges = new Bill();
  private summaryFailure: ScriptStep | undefined;
  private latencyMs: number;
  private sequence = 0;
  private replies = 0;
  private toolCallIds = 0;
  private closing: Promise<void> | undefined;
  port = 0;
  url = '';

  constructor(
    private readonly wire: WireFormat,
    private readonly models: readonly ScriptedModelConfig[],
    private readonly chatRule: TokenRule,
    private readonly scenario: Scenario,
    private readonly summaryScenario: Scenario,
    private readonly initialLatencyMs: number,
    private readonly clock: () => number,
  ) {
    this.latencyMs = initialLatencyMs;
    this.restoreWindows();
    this.http = createServer((req, res) => {
      this.handle(req, res).catch((error: unknown) => {
        // A bug in this double: answer 500 if still possible, and say why on stderr.
        console.error('[offline scripted model]', error);
        if (!res.headersSent && !res.destroyed) sendJson(res, 500, serverError(String(error)));
        else res.destroy();
      });
    });
  }

  get format(): FormatName {
    return this.wire.name;
  }

  get bill(): Bill {
    return this.charges;
  }

  get requests(): readonly RecordedRequest[] {
    return this.recorded;
  }

  listen(port: number): Promise<void> {
    return new Promise((resolve, reject) => {
      this.http.once('error', reject);
      this.http.listen(port, '127.0.0.1', () => {
        this.http.off('error', reject);
        this.port = (this.http.address() as AddressInfo).port;
        this.url = `http://127.0.0.1:${this.port}${this.wire.root}`;
        resolve();
      });
    });
  }

  script(steps: readonly ScriptStep[]): void {
    const parsed = z.array(scriptStepSchema).parse(steps);
    if (this.queue.length + parsed.length > MAX_QUEUED_STEPS) {
      throw new RangeError(`The script may hold at most ${MAX_QUEUED_STEPS} steps.`);
    }
    this.queue.push(...parsed);
  }

  failSummaries(step: ScriptStep | undefined): void {
    this.summaryFailure = step === undefined ? undefined : scriptStepSchema.parse(step);
  }

  setLatency(ms: number): void {
    assertLatency(ms);
    this.latencyMs = ms;
  }

  setWindow(model: string, window: number): void {
    if (!this.windows.has(model)) throw new RangeError(`No model "${model}"; this server offers ${[...this.windows.keys()].join(', ')}.`);
    assertWindow(window);
    this.windows.set(model, window);
  }

  reset(): void {
    this.queue.length = 0;
    this.recorded.length = 0;
    this.charges.clear();
    this.wire.reset();
    this.summaryFailure = undefined;
    this.latencyMs = this.initialLatencyMs;
    this.sequence = 0;
    this.replies = 0;
    this.toolCallIds = 0;
    this.restoreWindows();
  }

  close(): Promise<void> {
    this.closing ??= new Promise<void>((resolve) => {
      this.http.close(() => resolve());
      // Keep-alive and hanging connections would otherwise hold `close` open forever.
      this.http.closeAllConnections();
    });
    return this.closing;
  }

  private restoreWindows(): void {
    this.windows.clear();
    for (const model of this.models) this.windows.set(model.id, model.window);
  }

  private record(method: string, path: string): MutableRecord {
    const entry: MutableRecord = { seq: ++this.sequence, method, path, summary: false, status: null, outcome: 'pending', receivedAt: Date.now() };
    this.recorded.push(entry);
    if (this.recorded.length > MAX_RECORDED_REQUESTS) this.recorded.shift();
    return entry;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // Only pages on this machine's loopback names may talk to it (no DNS rebinding onto the control API).
    if (!isLoopbackHost(req.headers.host)) {
      sendJson(res, 403, this.wire.refuse.invalid('Only loopback hosts (127.0.0.1, localhost) may call the offline scripted model.').body);
      return;
    }
    const method = req.method ?? 'GET';
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const path = url.pathname.replace(/\/+$/, '') || '/';

    if (path.startsWith(`${this.wire.root}/`)) {
      const entry = this.record(method, path);
      const route = this.wire.route(method, path, url.searchParams);
      if (!route) {
        answerRefusal(entry, res, { status: 404, body: this.wire.refuse.invalid(`Invalid URL (${method} ${path})`).body });
        return;
      }
      if (!this.wire.authorized(req.headers, url.searchParams)) {
        answerRefusal(entry, res, this.wire.refuse.unauthorized());
        return;
      }
      if (route.kind === 'models') answerJson(entry, res, 200, this.wire.listModels(this.listed()));
      else if (route.kind === 'model') {
        const id = this.servedId(route.id);
        const model = this.listed().find((m) => m.id === id);
        if (model) answerJson(entry, res, 200, this.wire.describeModel(model));
        else answerRefusal(entry, res, this.wire.refuse.unknownModel(route.id));
      } else
        await this.completion(req, res, entry, route.api, {
          ...(route.model !== undefined ? { model: route.model } : {}),
          ...(route.stream !== undefined ? { stream: route.stream } : {}),
        });
      return;
    }
    await this.control(method, path, req, res);
  }

  private listed() {
    return this.models.map((model) => ({
      id: model.id,
      window: this.windows.get(model.id) ?? model.window,
      ...(model.name !== undefined ? { name: model.name } : {}),
      ...(model.maxOutputTokens !== undefined ? { maxOutputTokens: model.maxOutputTokens } : {}),
      ...(model.advertiseWindow ? { advertiseWindow: true } : {}),
    }));
  }

  private async completion(
    req: IncomingMessage,
    res: ServerResponse,
    entry: MutableRecord,
    api: CompletionApi,
    from: { readonly model?: string; readonly stream?: boolean },
  ): Promise<void> {
    const read = await this.readCall(req, entry, api, from);
    if (read === undefined) return;
    if (isRefusal(read)) {
      answerRefusal(entry, res, read);
      return;
    }
    const { call, accounted, window } = read;
    // A server that does not read `tool_choice` lets the model decide as if it were absent.
    const config = this.models.find((m) => m.id === call.model);
    const step = entry.summary ? this.summaryFailure : this.queue.shift();
    const stillOpen = await waitUnlessClosed(res, this.latencyMs + (step?.delayMs ?? 0));
    if (!stillOpen) {
      entry.outcome = 'client-closed';
      return;
    }
    if (step?.hang) {
      // The socket stays open until the client gives up or the server closes.
      entry.outcome = 'hung';
      return;
    }
    if (step?.error) {
      const headers: Record<string, string> = {};
      if (step.error.retryAfterSeconds !== undefined) headers['Retry-After'] = String(step.error.retryAfterSeconds);
      answerRefusal(entry, res, { status: step.error.status, body: step.error.body ?? this.wire.refuse.status(step.error.status).body }, headers);
      return;
    }

    const scripted = step && (step.text !== undefined || step.toolCalls !== undefined);
    const reached = entry.summary && config?.ignoresToolChoice ? reachForTool(withoutToolChoice(call.chat)) : undefined;
    const reply = scripted
      ? step
      : (reached ?? (entry.summary ? this.summaryScenario : this.scenario)({ request: call.chat, promptTokens: accounted.prompt.total, window }));
    const answer = this.answer(api, call, reply, accounted.prompt);
    accounted.commit();
    const breakAfter = step?.breakStreamAfterChunks;
    const charge = (): void => {
      const billed = billedTokens(answer);
      entry.billed = billed;
      this.charges.charge(entry.seq, call.model, billed, this.models.find((m) => m.id === call.model)?.prices);
    };

    if (call.stream) {
      const frames = api.frames(answer, call);
      res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', Connection: 'keep-alive' });
      entry.status = 200;
      if (breakAfter !== undefined) {
        entry.outcome = 'broken';
        breakStream(res, frames.slice(0, breakAfter));
        return;
      }
      for (const frame of frames) res.write(frame);
      res.end(api.end ?? '');
      charge();
      entry.outcome = 'answered';
      entry.answeredAt = Date.now();
      return;
    }
    if (breakAfter !== undefined) {
      entry.outcome = 'broken';
      res.destroy();
      return;
    }
    charge();
    answerJson(entry, res, 200, api.json(answer, call));
  }

  /**
   * The call a request makes, its prompt counted and cached as its provider does, once it is known to
   * fit: a refusal in the provider's words when it does not, undefined when the client left.
   */
  /**
   * The served model a request names: its id, or, on Anthropic's API, the alias of a dated snapshot
   * served (`claude-sonnet-4-5` for `claude-sonnet-4-5-20250929`), which that API answers as the snapshot.
   */
  private servedId(id: string): string {
    if (this.windows.has(id) || this.wire.name !== 'anthropic') return id;
    return [...this.windows.keys()].find((served) => served.startsWith(`${id}-`) && /^\d{8}$/.test(served.slice(id.length + 1))) ?? id;
  }

  private async readCall(
    req: IncomingMessage,
    entry: MutableRecord,
    api: CompletionApi,
    from: { readonly model?: string; readonly stream?: boolean },
  ): Promise<{ call: ModelCall; accounted: Accounted; window: number } | Refusal | undefined> {
    const body = await readBody(req);
    if (body.kind === 'closed') {
      entry.outcome = 'client-closed';
      return undefined;
    }
    if (body.kind === 'too-large')
      return { status: 413, body: this.wire.refuse.invalid(`The request body is larger than ${MAX_BODY_BYTES} bytes.`).body };
    entry.body = body.text;
    let json: unknown;
    try {
      json = JSON.parse(body.text);
    } catch {
      return this.wire.refuse.invalid('We could not parse the JSON body of your request. The API expects a JSON payload.');
    }
    entry.body = json;
    const parsed = api.parse(json, from);
    if (isRefusal(parsed)) return parsed;
    entry.model = parsed.model;
    let call: ModelCall = { ...parsed, model: this.servedId(parsed.model) };
    const window = this.windows.get(call.model);
    if (window === undefined) return this.wire.refuse.unknownModel(call.model);

    entry.summary = isSummaryRequest(call.chat);
    const now = this.clock();
    const overflowMode = this.models.find((m) => m.id === call.model)?.overflow ?? 'error';
    let accounted = api.account(call, now);
    if (isRefusal(accounted)) return accounted;
    entry.promptTokens = accounted.prompt.total;
    const room = this.wire.countsOutputInWindow === false ? 0 : call.maxTokens;
    if (overflowMode === 'truncate' && this.wire.name === 'openai' && isChatRequest(call.native) && accounted.prompt.total > window) {
      // Ollama's way: the prompt loses its beginning, the system prompt included, and the usage
      // reports only what was read. The answer is made from what is left.
      const cut = truncateToWindow(call.native, window, this.chatRule);
      entry.truncated = { sentTokens: accounted.prompt.total, droppedMessages: call.native.messages.length - cut.request.messages.length };
      call = { ...call, chat: cut.request, native: cut.request };
      accounted = api.account(call, now);
      if (isRefusal(accounted)) return accounted;
      entry.promptTokens = accounted.prompt.total;
    } else if (overflowMode === 'error' && accounted.prompt.total + room > window) {
      return (
        api.overflow?.(window, accounted.prompt.total, call.maxTokens) ?? this.wire.refuse.overflow(window, accounted.prompt.total, call.maxTokens)
      );
    }
    return { call, accounted, window };
  }

  private answer(api: CompletionApi, call: ModelCall, reply: Reply, prompt: Answer['prompt']): Answer {
    const toolCalls = (reply.toolCalls ?? []).map((toolCall) => {
      const n = ++this.toolCallIds;
      return { id: api.toolCallId?.(n) ?? `call_scripted_${n}`, name: toolCall.name, arguments: JSON.stringify(toolCall.arguments) };
    });
    const count = (text: string): number => api.countOutput(text, call.model);
    // As servers do, a text answer stops at the output limit, marked as cut ("length", "max_tokens").
    const cut = call.maxTokens > 0 && toolCalls.length === 0 && reply.text !== undefined ? cutToTokens(reply.text, call.maxTokens, count) : undefined;
    const text = cut ?? reply.text;
    return {
      id: `scripted-${++this.replies}`,
      created: Math.floor(Date.now() / 1000),
      model: call.model,
      text,
      toolCalls,
      finishReason: cut !== undefined ? 'length' : toolCalls.length > 0 ? 'tool_calls' : 'stop',
      prompt,
      outputTokens: count(text ?? '') + toolCalls.reduce((sum, toolCall) => sum + count(toolCall.arguments), 0),
    };
  }

  private async control(method: string, path: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const route = `${method} ${path}`;
    if (route === 'GET /__control/requests') {
      sendJson(res, 200, this.recorded);
      return;
    }
    if (route === 'GET /__control/bill') {
      sendJson(res, 200, { charges: this.charges.charges, total: this.charges.total() });
      return;
    }
    if (!CONTROL_POSTS.has(route)) {
      sendJson(res, 404, this.wire.refuse.invalid(`Invalid URL (${route})`).body);
      return;
    }
    const body = await readBody(req);
    if (body.kind !== 'ok') {
      if (body.kind === 'too-large') sendJson(res, 413, this.wire.refuse.invalid('The control request is too large.').body);
      return;
    }
    let json: unknown = null;
    try {
      if (body.text.trim()) json = JSON.parse(body.text);
    } catch {
      sendJson(res, 400, this.wire.refuse.invalid('The control request body is not JSON.').body);
      return;
    }
    try {
      switch (route) {
        case 'POST /__control/script': {
          this.script(parseControl(z.array(scriptStepSchema), json));
          sendJson(res, 200, { queued: this.queue.length });
          return;
        }
        case 'POST /__control/fail-summaries': {
          this.failSummaries(parseControl(scriptStepSchema.nullable(), json) ?? undefined);
          sendJson(res, 200, { ok: true });
          return;
        }
        case 'POST /__control/reset': {
          this.reset();
          sendJson(res, 200, { ok: true });
          return;
        }
        case 'POST /__control/window': {
          const { model, window } = parseControl(windowSchema, json);
          this.setWindow(model, window);
          sendJson(res, 200, { ok: true });
          return;
        }
        case 'POST /__control/latency': {
          this.setLatency(parseControl(latencySchema, json).ms);
          sendJson(res, 200, { ok: true });
          return;
        }
      }
    } catch (error) {
      if (error instanceof ControlError || error instanceof RangeError) {
        sendJson(res, 400, this.wire.refuse.invalid(error.message).body);
        return;
      }
      throw error;
    }
  }
}

/** Whether a format's own reading of a call is a Chat Completions request. */
function isChatRequest(native: unknown): native is ChatCompletionRequest {
  return typeof native === 'object' && native !== null && Array.isArray((native as { messages?: unknown }).messages) && 'model' in native;
}

/** The longest start of `text` within `maxTokens`; undefined when the whole text fits. */
function cutToTokens(text: string, maxTokens: number, count: (text: string) => number): string | undefined {
  if (count(text) <= maxTokens) return undefined;
  const chars = [...text];
  let low = 0;
  let high = chars.length;
  while (low < high) {
    const middle = Math.ceil((low + high) / 2);
    if (count(chars.slice(0, middle).join('')) <= maxTokens) low = middle;
    else high = middle - 1;
  }
  return chars.slice(0, low).join('');
}

const CONTROL_POSTS = new Set([
  'POST /__control/script',
  'POST /__control/fail-summaries',
  'POST /__control/reset',
  'POST /__control/window',
  'POST /__control/latency',
]);
const windowSchema = z.strictObject({ model: z.string().min(1), window: z.number().int().positive() });
const latencySchema = z.strictObject({ ms: z.number().int().min(0).max(MAX_DELAY_MS) });

class ControlError extends Error {}

function parseControl<T>(schema: z.ZodType<T>, value: unknown): T {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new ControlError(`Invalid control request: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

// ---------------------------------------------------------------------------------------------
// Bodies and wire formats.

/** Drops messages from the start of a request until its prompt fits `window` (the last one always stays). */
function truncateToWindow(request: ChatCompletionRequest, window: number, rule: TokenRule): { request: ChatCompletionRequest; tokens: number } {
  let messages = request.messages;
  let tokens = countPromptTokens(request, rule);
  while (tokens > window && messages.length > 1) {
    messages = messages.slice(1);
    tokens = countPromptTokens({ ...request, messages }, rule);
  }
  return { request: { ...request, messages }, tokens };
}

function answerJson(entry: MutableRecord, res: ServerResponse, status: number, body: unknown): void {
  entry.status = status;
  entry.outcome = 'answered';
  entry.answeredAt = Date.now();
  sendJson(res, status, body);
}

function answerRefusal(entry: MutableRecord, res: ServerResponse, refusal: Refusal, headers: Record<string, string> = {}): void {
  entry.status = refusal.status;
  entry.outcome = 'error';
  sendJson(res, refusal.status, refusal.body, headers);
}

/** The request as a server that does not read `tool_choice` takes it: as if the field were absent. */
function withoutToolChoice(request: ChatCompletionRequest): ChatCompletionRequest {
  const { tool_choice: _ignored, ...rest } = request;
  return rest;
}
