/**
 * The offline scripted model: a loopback server that speaks OpenAI's Chat Completions API
 * (`GET /v1/models`, `POST /v1/chat/completions`) for the end-to-end tests and `npm start`.
 *
 * It is a test double for the network boundary, not a model: every answer is either scripted by a
 * test or derived deterministically from the request, and its model ids and `owned_by` say so.
 * It binds 127.0.0.1 only and never contacts another host. It lives outside `src/`, so the
 * extension never imports it and it never ships in the .vsix.
 *
 * This file is the server (queues, the request log, the control API, HTTP); `wire.ts` holds the
 * Chat Completions format and `scenarios.ts` what the model answers.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { loadTokenizer } from '../../src/core/tokenizer';
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
import {
  breakStream,
  chatCompletionRequestSchema,
  completionObject,
  contextLengthExceeded,
  countPromptTokens,
  defaultErrorBody,
  invalidRequest,
  serverError,
  streamEvents,
  type ChatCompletionRequest,
  type Completion,
} from './wire';

/** What `/v1/models` reports as the owner of every model: nobody should mistake it for a real one. */
export const OWNED_BY = 'longrun-offline-scripted-model';

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
   * What a prompt over the window gets: OpenAI's 400 `context_length_exceeded` (the default), or
   * Ollama's behaviour: the start of the prompt is dropped until it fits, and nothing is said.
   */
  readonly overflow?: 'error' | 'truncate';
  /**
   * Answers as servers that do not read `tool_choice` do (Ollama's OpenAI layer): a summary request
   * that offers tools is answered with a tool call, even under `tool_choice: "none"`.
   */
  readonly ignoresToolChoice?: boolean;
}

export const DEFAULT_MODELS: readonly ScriptedModelConfig[] = [
  { id: 'scripted', window: 128_000, name: 'Offline scripted model' },
  { id: 'scripted-small', window: 8192, name: 'Offline scripted model (small window)' },
];

// Bounds, so that no request, script or record can grow without limit.
const MAX_BODY_BYTES = 16 * 1024 * 1024;
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
}

/** A running offline scripted model. */
export interface ScriptedModelServer {
  /** The API root for clients, `http://127.0.0.1:PORT/v1`. */
  readonly url: string;
  readonly port: number;
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
  /** Empties the script and the record; restores failures, latency and windows as started. */
  reset(): void;
  /** Stops listening and destroys every connection, hanging ones included. */
  close(): Promise<void>;
}

/** Starts the server on 127.0.0.1 and resolves once it listens. */
export async function startScriptedModelServer(options: ScriptedModelServerOptions = {}): Promise<ScriptedModelServer> {
  const tokenizer = await loadTokenizer('o200k_base');
  const models = options.models ?? DEFAULT_MODELS;
  for (const model of models) assertWindow(model.window);
  const latencyMs = options.latencyMs ?? 0;
  assertLatency(latencyMs);
  const instance = new ScriptedModel(
    models,
    (text) => tokenizer.count(text),
    options.scenario ?? demoScenario,
    options.summaryScenario ?? summaryScenario,
    latencyMs,
  );
  await instance.listen(options.port ?? 0);
  return instance;
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
  private summaryFailure: ScriptStep | undefined;
  private latencyMs: number;
  private sequence = 0;
  private replies = 0;
  private toolCallIds = 0;
  private closing: Promise<void> | undefined;
  port = 0;
  url = '';

  constructor(
    private readonly models: readonly ScriptedModelConfig[],
    private readonly countText: (text: string) => number,
    private readonly scenario: Scenario,
    private readonly summaryScenario: Scenario,
    private readonly initialLatencyMs: number,
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

  get requests(): readonly RecordedRequest[] {
    return this.recorded;
  }

  listen(port: number): Promise<void> {
    return new Promise((resolve, reject) => {
      this.http.once('error', reject);
      this.http.listen(port, '127.0.0.1', () => {
        this.http.off('error', reject);
        this.port = (this.http.address() as AddressInfo).port;
        this.url = `http://127.0.0.1:${this.port}/v1`;
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
      sendJson(res, 403, invalidRequest('Only loopback hosts (127.0.0.1, localhost) may call the offline scripted model.'));
      return;
    }
    const method = req.method ?? 'GET';
    const path = new URL(req.url ?? '/', 'http://127.0.0.1').pathname.replace(/\/+$/, '') || '/';

    if (path.startsWith('/v1/')) {
      const entry = this.record(method, path);
      if (method === 'GET' && path === '/v1/models') {
        answerJson(entry, res, 200, this.modelList());
      } else if (method === 'POST' && path === '/v1/chat/completions') {
        await this.completion(req, res, entry);
      } else {
        answerError(entry, res, 404, invalidRequest(`Invalid URL (${method} ${path})`));
      }
      return;
    }
    await this.control(method, path, req, res);
  }

  private modelList(): unknown {
    return {
      object: 'list',
      data: this.models.map((model) => ({
        id: model.id,
        object: 'model',
        created: 0,
        owned_by: OWNED_BY,
        name: model.name ?? `Offline scripted model ${model.id}`,
        ...(model.advertiseWindow ? { context_length: this.windows.get(model.id), max_model_len: this.windows.get(model.id) } : {}),
      })),
    };
  }

  private async completion(req: IncomingMessage, res: ServerResponse, entry: MutableRecord): Promise<void> {
    const body = await readBody(req);
    if (body.kind === 'closed') {
      entry.outcome = 'client-closed';
      return;
    }
    if (body.kind === 'too-large') {
      answerError(entry, res, 413, invalidRequest(`The request body is larger than ${MAX_BODY_BYTES} bytes.`));
      return;
    }
    entry.body = body.text;
    let json: unknown;
    try {
      json = JSON.parse(body.text);
    } catch {
      answerError(entry, res, 400, invalidRequest('We could not parse the JSON body of your request. The OpenAI API expects a JSON payload.'));
      return;
    }
    entry.body = json;
    const parsed = chatCompletionRequestSchema.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const param = issue ? formatPath(issue.path) : null;
      answerError(entry, res, 400, invalidRequest(`Invalid request body: ${z.prettifyError(parsed.error)}`, param || null));
      return;
    }
    let request = parsed.data;
    entry.body = request;
    entry.model = request.model;
    const window = this.windows.get(request.model);
    if (window === undefined) {
      answerError(entry, res, 404, {
        error: {
          message: `The model \`${request.model}\` does not exist or you do not have access to it.`,
          type: 'invalid_request_error',
          param: null,
          code: 'model_not_found',
        },
      });
      return;
    }

    let promptTokens = countPromptTokens(request, this.countText);
    entry.promptTokens = promptTokens;
    entry.summary = isSummaryRequest(request);
    const maxTokens = request.max_completion_tokens ?? request.max_tokens ?? 0;
    const overflowMode = this.models.find((m) => m.id === request.model)?.overflow ?? 'error';
    if (overflowMode === 'truncate' && promptTokens > window) {
      // Ollama's way: the prompt loses its beginning, the system prompt included, and the usage
      // reports only what was read. The answer is made from what is left.
      const cut = truncateToWindow(request, window, this.countText);
      entry.truncated = { sentTokens: promptTokens, droppedMessages: request.messages.length - cut.request.messages.length };
      request = cut.request;
      promptTokens = cut.tokens;
      entry.promptTokens = promptTokens;
    } else if (overflowMode === 'error' && promptTokens + maxTokens > window) {
      answerError(entry, res, 400, contextLengthExceeded(window, promptTokens, maxTokens));
      return;
    }

    const config = this.models.find((m) => m.id === request.model);
    // A server that does not read `tool_choice` lets the model decide as if it were absent.
    if (config?.ignoresToolChoice) request = withoutToolChoice(request);
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
      answerError(entry, res, step.error.status, step.error.body ?? defaultErrorBody(step.error.status), headers);
      return;
    }

    const scripted = step && (step.text !== undefined || step.toolCalls !== undefined);
    const reached = entry.summary && config?.ignoresToolChoice ? reachForTool(request) : undefined;
    const reply = scripted ? step : (reached ?? (entry.summary ? this.summaryScenario : this.scenario)({ request, promptTokens, window }));
    const completion = this.complete(request.model, reply, promptTokens, maxTokens);
    const breakAfter = step?.breakStreamAfterChunks;

    if (request.stream) {
      const events = streamEvents(completion, request.stream_options?.include_usage === true);
      res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', Connection: 'keep-alive' });
      entry.status = 200;
      if (breakAfter !== undefined) {
        entry.outcome = 'broken';
        breakStream(res, events.slice(0, breakAfter));
        return;
      }
      for (const event of events) res.write(`data: ${JSON.stringify(event)}\n\n`);
      res.end('data: [DONE]\n\n');
      entry.outcome = 'answered';
      entry.answeredAt = Date.now();
      return;
    }
    if (breakAfter !== undefined) {
      entry.outcome = 'broken';
      res.destroy();
      return;
    }
    answerJson(entry, res, 200, completionObject(completion));
  }

  private complete(model: string, reply: Reply, promptTokens: number, maxTokens = 0): Completion {
    const toolCalls = (reply.toolCalls ?? []).map((call) => ({
      id: `call_scripted_${++this.toolCallIds}`,
      name: call.name,
      arguments: JSON.stringify(call.arguments),
    }));
    // As servers do, a text answer stops at `max_tokens` with finish_reason "length".
    const cut = maxTokens > 0 && toolCalls.length === 0 && reply.text !== undefined ? this.cutToTokens(reply.text, maxTokens) : undefined;
    const text = cut ?? reply.text;
    const completionTokens = this.countText(text ?? '') + toolCalls.reduce((sum, call) => sum + this.countText(call.arguments), 0);
    return {
      id: `chatcmpl-scripted-${++this.replies}`,
      created: Math.floor(Date.now() / 1000),
      model,
      text,
      toolCalls,
      finishReason: cut !== undefined ? 'length' : toolCalls.length > 0 ? 'tool_calls' : 'stop',
      usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens },
    };
  }

  /** The longest start of `text` within `maxTokens`; undefined when the whole text fits. */
  private cutToTokens(text: string, maxTokens: number): string | undefined {
    if (this.countText(text) <= maxTokens) return undefined;
    const chars = [...text];
    let low = 0;
    let high = chars.length;
    while (low < high) {
      const middle = Math.ceil((low + high) / 2);
      if (this.countText(chars.slice(0, middle).join('')) <= maxTokens) low = middle;
      else high = middle - 1;
    }
    return chars.slice(0, low).join('');
  }

  private async control(method: string, path: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const route = `${method} ${path}`;
    if (route === 'GET /__control/requests') {
      sendJson(res, 200, this.recorded);
      return;
    }
    if (!CONTROL_POSTS.has(route)) {
      sendJson(res, 404, invalidRequest(`Invalid URL (${route})`));
      return;
    }
    const body = await readBody(req);
    if (body.kind !== 'ok') {
      if (body.kind === 'too-large') sendJson(res, 413, invalidRequest('The control request is too large.'));
      return;
    }
    let json: unknown = null;
    try {
      if (body.text.trim()) json = JSON.parse(body.text);
    } catch {
      sendJson(res, 400, invalidRequest('The control request body is not JSON.'));
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
        sendJson(res, 400, invalidRequest(error.message));
        return;
      }
      throw error;
    }
  }
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

function isLoopbackHost(host: string | undefined): boolean {
  if (!host) return false;
  const name = host.replace(/:\d+$/, '').toLowerCase();
  return name === '127.0.0.1' || name === 'localhost';
}

type Body = { kind: 'ok'; text: string } | { kind: 'too-large' } | { kind: 'closed' };

async function readBody(req: IncomingMessage): Promise<Body> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of req) {
      const buffer = chunk as Buffer;
      size += buffer.length;
      // Past the limit the rest is drained, not kept, so that a 413 can still be answered.
      if (size <= MAX_BODY_BYTES) chunks.push(buffer);
    }
  } catch {
    return { kind: 'closed' };
  }
  if (size > MAX_BODY_BYTES) return { kind: 'too-large' };
  return { kind: 'ok', text: Buffer.concat(chunks).toString('utf8') };
}

/** Resolves true after `ms`, or false as soon as the client's connection closes. */
function waitUnlessClosed(res: ServerResponse, ms: number): Promise<boolean> {
  if (res.destroyed) return Promise.resolve(false);
  if (ms <= 0) return Promise.resolve(true);
  return new Promise((resolve) => {
    const onClose = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      res.off('close', onClose);
      resolve(true);
    }, ms);
    res.once('close', onClose);
  });
}

function formatPath(path: readonly PropertyKey[]): string {
  return path.map((key, i) => (typeof key === 'number' ? `[${key}]` : `${i > 0 ? '.' : ''}${String(key)}`)).join('');
}

function withoutToolChoice(request: ChatCompletionRequest): ChatCompletionRequest {
  const { tool_choice: _ignored, ...rest } = request;
  return rest;
}

/** Drops messages from the start of a request until its prompt fits `window` (the last one always stays). */
function truncateToWindow(
  request: ChatCompletionRequest,
  window: number,
  countText: (text: string) => number,
): { request: ChatCompletionRequest; tokens: number } {
  let messages = request.messages;
  let tokens = countPromptTokens(request, countText);
  while (tokens > window && messages.length > 1) {
    messages = messages.slice(1);
    tokens = countPromptTokens({ ...request, messages }, countText);
  }
  return { request: { ...request, messages }, tokens };
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'Content-Type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

function answerJson(entry: MutableRecord, res: ServerResponse, status: number, body: unknown): void {
  entry.status = status;
  entry.outcome = 'answered';
  entry.answeredAt = Date.now();
  sendJson(res, status, body);
}

function answerError(entry: MutableRecord, res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  entry.status = status;
  entry.outcome = 'error';
  sendJson(res, status, body, headers);
}
