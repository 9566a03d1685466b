/**
 * The offline scripted model: a loopback server that speaks OpenAI's Chat Completions API
 * (`GET /v1/models`, `POST /v1/chat/completions`) for the end-to-end tests and `npm start`.
 *
 * It is a test double for the network boundary, not a model: every answer is either scripted by a
 * test or derived deterministically from the request, and its model ids and `owned_by` say so.
 * It binds 127.0.0.1 only and never contacts another host. It lives outside `src/`, so the
 * extension never imports it and it never ships in the .vsix.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { SUMMARY_PREFIX } from '../../src/core/history';
import { loadTokenizer } from '../../src/core/tokenizer';

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
}

export const DEFAULT_MODELS: readonly ScriptedModelConfig[] = [
  { id: 'scripted', window: 128_000, name: 'Offline scripted model' },
  { id: 'scripted-small', window: 8192, name: 'Offline scripted model (small window)' },
];

// Bounds, so that no request, script or record can grow without limit.
const MAX_BODY_BYTES = 16 * 1024 * 1024;
const MAX_QUEUED_STEPS = 10_000;
const MAX_RECORDED_REQUESTS = 10_000;
const MAX_DELAY_MS = 10 * 60 * 1000;
/** Text and tool arguments are streamed in about this many pieces. */
const STREAM_PIECES = 3;

// ---------------------------------------------------------------------------------------------
// The request: Chat Completions as the AI SDK's OpenAI provider (and other clients) send it.
// Objects are loose because clients send fields this double has no use for (top_p, seed, user…).

const contentPartSchema = z.looseObject({ type: z.string(), text: z.string().optional() });
const contentSchema = z.union([z.string(), z.array(contentPartSchema)]);

const requestToolCallSchema = z.looseObject({
  id: z.string(),
  type: z.literal('function'),
  function: z.looseObject({ name: z.string(), arguments: z.string() }),
});

const messageSchema = z.discriminatedUnion('role', [
  z.looseObject({ role: z.literal('system'), content: contentSchema }),
  z.looseObject({ role: z.literal('developer'), content: contentSchema }),
  z.looseObject({ role: z.literal('user'), content: contentSchema }),
  z.looseObject({
    role: z.literal('assistant'),
    content: contentSchema.nullish(),
    tool_calls: z.array(requestToolCallSchema).optional(),
  }),
  z.looseObject({ role: z.literal('tool'), content: contentSchema, tool_call_id: z.string() }),
]);

const toolSchema = z.looseObject({
  type: z.literal('function'),
  function: z.looseObject({
    name: z.string().min(1),
    description: z.string().optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
    strict: z.boolean().nullish(),
  }),
});

const toolChoiceSchema = z.union([
  z.enum(['none', 'auto', 'required']),
  z.looseObject({ type: z.literal('function'), function: z.looseObject({ name: z.string() }) }),
]);

export const chatCompletionRequestSchema = z.looseObject({
  model: z.string().min(1),
  messages: z.array(messageSchema).min(1),
  tools: z.array(toolSchema).optional(),
  tool_choice: toolChoiceSchema.optional(),
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullish(),
  max_tokens: z.number().int().positive().nullish(),
  max_completion_tokens: z.number().int().positive().nullish(),
  temperature: z.number().min(0).max(2).nullish(),
});

/** A validated `POST /v1/chat/completions` body. */
export type ChatCompletionRequest = z.infer<typeof chatCompletionRequestSchema>;
export type ChatMessage = ChatCompletionRequest['messages'][number];

/** The text of a message's content: the string, or its text parts joined by newlines. */
export function contentText(content: ChatMessage['content']): string {
  if (content === null || content === undefined) return '';
  if (typeof content === 'string') return content;
  return content.flatMap((part) => (typeof part.text === 'string' ? [part.text] : [])).join('\n');
}

/**
 * The prompt tokens the server reports: per message 4 plus its content text and each tool call's
 * name and arguments; 3 for the reply's priming; and the tool definitions as JSON when tools are
 * given. Close to, not the same as, what OpenAI bills; tests compare against this function.
 */
export function countPromptTokens(
  request: Pick<ChatCompletionRequest, 'messages' | 'tools'>,
  countText: (text: string) => number,
): number {
  let total = 3;
  for (const message of request.messages) {
    total += 4 + countText(contentText(message.content));
    if (message.role === 'assistant') {
      for (const call of message.tool_calls ?? []) {
        total += countText(call.function.name) + countText(call.function.arguments);
      }
    }
  }
  if (request.tools && request.tools.length > 0) total += countText(JSON.stringify(request.tools));
  return total;
}

// ---------------------------------------------------------------------------------------------
// Scripts and scenarios.

/** A tool call the model makes. */
export interface ToolCallStep {
  readonly name: string;
  readonly arguments: Record<string, unknown>;
}

/** The content of a reply: what the model says and which tools it calls. */
export interface Reply {
  readonly text?: string;
  /** Tool calls, in order; the finish reason becomes `tool_calls`. */
  readonly toolCalls?: readonly ToolCallStep[];
}

/** An HTTP error to answer with instead of a completion. */
export interface ErrorStep {
  readonly status: number;
  /** The JSON body; OpenAI's usual body for the status when absent. */
  readonly body?: unknown;
  /** Sent as the `Retry-After` header. */
  readonly retryAfterSeconds?: number;
}

/**
 * One scripted reply. Without `text` and `toolCalls` the scenario's reply is sent, so a step can
 * only delay or break an ordinary answer.
 */
export interface ScriptStep extends Reply {
  /** Wait this long before answering, on top of the server's latency. */
  readonly delayMs?: number;
  /** Answer with an HTTP error. */
  readonly error?: ErrorStep;
  /** Never answer: the client's timeout or abort (or `close()`) must end the request. */
  readonly hang?: boolean;
  /** Send this many SSE chunks, then destroy the socket; a non-streaming request gets no answer. */
  readonly breakStreamAfterChunks?: number;
}

// Strict, so that a misspelt field in a test's script fails loudly instead of being ignored.
export const scriptStepSchema: z.ZodType<ScriptStep> = z.strictObject({
  text: z.string().optional(),
  toolCalls: z
    .array(z.strictObject({ name: z.string().min(1), arguments: z.record(z.string(), z.unknown()) }))
    .optional(),
  delayMs: z.number().int().min(0).max(MAX_DELAY_MS).optional(),
  error: z
    .strictObject({
      status: z.number().int().min(400).max(599),
      body: z.unknown().optional(),
      retryAfterSeconds: z.number().min(0).optional(),
    })
    .optional(),
  hang: z.boolean().optional(),
  breakStreamAfterChunks: z.number().int().min(0).optional(),
});

/** What a scenario decides from. */
export interface ScenarioInput {
  /** The whole parsed request. */
  readonly request: ChatCompletionRequest;
  /** Its prompt tokens, as reported in `usage`. */
  readonly promptTokens: number;
  /** The requested model's context window. */
  readonly window: number;
}

/** Decides a reply from a request. Must be deterministic. */
export type Scenario = (input: ScenarioInput) => Reply;

const PATH_EXTENSIONS =
  'md|markdown|txt|json|jsonc|ya?ml|toml|ini|cfg|lock|ts|tsx|mts|cts|js|jsx|mjs|cjs|py|rs|go|java|kt|swift|c|h|cc|cpp|hpp|cs|rb|php|html|css|scss|less|vue|svelte|sh|sql|xml|csv|env';
// A relative path ending in a known extension (README.md, src/x.ts, ./a/b.json), not part of a URL.
const PATH_SOURCE = `(?<![\\w./:@-])(?:[\\w.@-]+/)*[\\w.@-]*\\.(?:${PATH_EXTENSIONS})(?![\\w/-])`;

/** The workspace-looking paths in a text, in order of appearance, without a leading `./`. */
export function workspacePaths(text: string): string[] {
  return Array.from(text.matchAll(new RegExp(PATH_SOURCE, 'gi')), (match) => match[0].replace(/^(?:\.\/)+/, ''));
}

const CREATE_PATTERN = new RegExp(`\\bcreate\\s+(?:(?:a\\s+)?(?:new\\s+)?file\\s+)?[\`'"]?(${PATH_SOURCE})`, 'i');

function offersTool(request: ChatCompletionRequest, name: string): boolean {
  const choice = request.tool_choice;
  if (choice === 'none') return false;
  if (typeof choice === 'object' && choice.function.name !== name) return false;
  return (request.tools ?? []).some((tool) => tool.function.name === name);
}

function lastIndexOf<T>(items: readonly T[], predicate: (item: T) => boolean): number {
  for (let i = items.length - 1; i >= 0; i--) {
    if (predicate(items[i] as T)) return i;
  }
  return -1;
}

/**
 * The default scenario: after a tool result, a short text quoting its first line; for a request
 * naming a path, a `create_file` ("create <path>") or `read_file` call when that tool is offered;
 * otherwise an acknowledgement with the prompt's token count.
 */
export const demoScenario: Scenario = ({ request, promptTokens }) => {
  const { messages } = request;
  const last = messages[messages.length - 1];
  if (last?.role === 'tool') {
    const firstLine = contentText(last.content).trim().split('\n', 1)[0]?.trim().slice(0, 200) ?? '';
    return {
      text: firstLine
        ? `Offline scripted model: the tool returned "${firstLine}".`
        : 'Offline scripted model: the tool returned nothing.',
    };
  }
  const userIndex = lastIndexOf(messages, (m) => m.role === 'user');
  const user = messages[userIndex];
  const answered = messages.slice(userIndex + 1).some((m) => m.role === 'tool');
  if (user && !answered) {
    const text = contentText(user.content);
    const created = CREATE_PATTERN.exec(text)?.[1]?.replace(/^(?:\.\/)+/, '');
    if (created && offersTool(request, 'create_file')) {
      return {
        toolCalls: [{ name: 'create_file', arguments: { path: created, content: `Created by the offline scripted model.\n` } }],
      };
    }
    const path = workspacePaths(text)[0];
    if (path && offersTool(request, 'read_file')) {
      return { toolCalls: [{ name: 'read_file', arguments: { path } }] };
    }
  }
  return { text: `Offline scripted model: I received your message (${promptTokens} tokens in context).` };
};

const SUMMARY_MARKERS = ['## Session Summary (Compaction Round', 'Write exactly these sections'];

/**
 * Whether a request asks for a compaction summary: its last message is a user directive carrying
 * one of the markers. A summary carried in an ordinary conversation (it starts with the history's
 * summary prefix) is not a directive.
 */
export function isSummaryRequest(request: ChatCompletionRequest): boolean {
  const last = request.messages[request.messages.length - 1];
  if (last?.role !== 'user') return false;
  const text = contentText(last.content);
  if (text.startsWith(SUMMARY_PREFIX)) return false;
  return SUMMARY_MARKERS.some((marker) => text.includes(marker));
}

/**
 * Answers a summary request from its input, so that tests can check what reached the summarizer:
 * the round from the directive, the original task between `<original-task>` tags, every
 * workspace path in the request, the number of messages before the directive (system messages
 * included) and the focus after "focus on:".
 */
export const summaryScenario: Scenario = ({ request }) => {
  const { messages } = request;
  const directive = contentText(messages[messages.length - 1]?.content);
  const round = /## Session Summary \(Compaction Round (\d+)\)/.exec(directive)?.[1] ?? '1';
  const task = /<original-task>([\s\S]*?)<\/original-task>/.exec(directive)?.[1]?.trim();
  const focus = /focus on:[ \t]*(.+)/i.exec(directive)?.[1]?.trim();

  const mentioned = new Set<string>();
  for (const message of messages) {
    for (const path of workspacePaths(contentText(message.content))) mentioned.add(path);
    if (message.role === 'assistant') {
      for (const call of message.tool_calls ?? []) for (const path of workspacePaths(call.function.arguments)) mentioned.add(path);
    }
  }
  const paths = [...mentioned].sort();

  const lines = [
    `## Session Summary (Compaction Round ${round})`,
    '',
    '### Original Task',
    task || '(no original task was given to the offline scripted model)',
    '',
    '### Completed Work',
    `- Files mentioned: ${paths.length > 0 ? paths.join(', ') : 'none'}`,
    '',
    '### Key Technical Decisions',
    '- None recorded by the offline scripted model.',
    '',
    '### Current State',
    `- Summarized ${messages.length - 1} messages.`,
    '',
    '### Pending Work',
    '- [ ] Continue from the summarized conversation.',
    '',
    '### Errors & Resolutions',
    '- None',
    '',
    '### User Preferences and Constraints',
    '- None recorded by the offline scripted model.',
    '',
    '### Next Steps',
    '1. Continue the original task.',
  ];
  if (focus) lines.push('', '### Focus', `- ${focus}`);
  return { text: lines.join('\n') };
};

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
  if (!Number.isInteger(ms) || ms < 0 || ms > MAX_DELAY_MS) throw new RangeError(`Latency must be an integer from 0 to ${MAX_DELAY_MS} ms, not ${ms}.`);
}

interface Completion {
  readonly id: string;
  readonly created: number;
  readonly model: string;
  readonly text: string | undefined;
  readonly toolCalls: readonly { readonly id: string; readonly name: string; readonly arguments: string }[];
  readonly finishReason: 'stop' | 'tool_calls';
  readonly usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
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
    const reply = scripted ? step : (entry.summary ? this.summaryScenario : this.scenario)({ request, promptTokens, window });
    const completion = this.complete(request.model, reply, promptTokens);
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

  private complete(model: string, reply: Reply, promptTokens: number): Completion {
    const toolCalls = (reply.toolCalls ?? []).map((call) => ({
      id: `call_scripted_${++this.toolCallIds}`,
      name: call.name,
      arguments: JSON.stringify(call.arguments),
    }));
    const text = reply.text;
    const completionTokens = this.countText(text ?? '') + toolCalls.reduce((sum, call) => sum + this.countText(call.arguments), 0);
    return {
      id: `chatcmpl-scripted-${++this.replies}`,
      created: Math.floor(Date.now() / 1000),
      model,
      text,
      toolCalls,
      finishReason: toolCalls.length > 0 ? 'tool_calls' : 'stop',
      usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens },
    };
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

interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

function invalidRequest(message: string, param: string | null = null): OpenAIErrorBody {
  return { error: { message, type: 'invalid_request_error', param, code: null } };
}

function serverError(message: string): OpenAIErrorBody {
  return { error: { message, type: 'server_error', param: null, code: null } };
}

/** OpenAI's answer to a prompt (plus requested output) that does not fit the window, word for word. */
function contextLengthExceeded(window: number, promptTokens: number, maxTokens: number): OpenAIErrorBody {
  const message =
    maxTokens > 0
      ? `This model's maximum context length is ${window} tokens. However, you requested ${promptTokens + maxTokens} tokens (${promptTokens} in the messages, ${maxTokens} in the completion). Please reduce the length of the messages or completion.`
      : `This model's maximum context length is ${window} tokens. However, your messages resulted in ${promptTokens} tokens. Please reduce the length of the messages.`;
  return { error: { message, type: 'invalid_request_error', param: 'messages', code: 'context_length_exceeded' } };
}

/** OpenAI's usual body for a status, marked as scripted. */
function defaultErrorBody(status: number): OpenAIErrorBody {
  const note = ' (scripted by the offline scripted model)';
  switch (status) {
    case 401:
      return { error: { message: `Incorrect API key provided.${note}`, type: 'invalid_request_error', param: null, code: 'invalid_api_key' } };
    case 429:
      return { error: { message: `Rate limit reached for requests.${note}`, type: 'requests', param: null, code: 'rate_limit_exceeded' } };
    case 500:
      return serverError(`The server had an error while processing your request. Sorry about that!${note}`);
    case 503:
      return serverError(`The engine is currently overloaded, please try again later.${note}`);
    default:
      return status >= 500 ? serverError(`Server error ${status}.${note}`) : invalidRequest(`Request failed with status ${status}.${note}`);
  }
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

/** Splits text into about `count` pieces of whole code points. */
function pieces(text: string, count: number): string[] {
  const chars = Array.from(text);
  if (chars.length === 0) return [];
  const size = Math.ceil(chars.length / count);
  const out: string[] = [];
  for (let i = 0; i < chars.length; i += size) out.push(chars.slice(i, i + size).join(''));
  return out;
}

function completionObject(completion: Completion): unknown {
  return {
    id: completion.id,
    object: 'chat.completion',
    created: completion.created,
    model: completion.model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: completion.text ?? null,
          refusal: null,
          ...(completion.toolCalls.length > 0
            ? {
                tool_calls: completion.toolCalls.map((call) => ({
                  id: call.id,
                  type: 'function',
                  function: { name: call.name, arguments: call.arguments },
                })),
              }
            : {}),
        },
        logprobs: null,
        finish_reason: completion.finishReason,
      },
    ],
    usage: completion.usage,
  };
}

/**
 * The `chat.completion.chunk` events OpenAI sends: the role first, content in pieces, each tool
 * call opened with its index, id and name and then its arguments in pieces, the finish reason,
 * and, when asked for, a last chunk with no choices and the usage.
 */
function streamEvents(completion: Completion, includeUsage: boolean): unknown[] {
  const chunk = (delta: Record<string, unknown>, finishReason: string | null = null): unknown => ({
    id: completion.id,
    object: 'chat.completion.chunk',
    created: completion.created,
    model: completion.model,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    // OpenAI sends `usage: null` on every chunk but the last when usage is asked for.
    ...(includeUsage ? { usage: null } : {}),
  });
  const events: unknown[] = [chunk({ role: 'assistant', content: completion.text === undefined ? null : '', refusal: null })];
  for (const piece of pieces(completion.text ?? '', STREAM_PIECES)) events.push(chunk({ content: piece }));
  completion.toolCalls.forEach((call, index) => {
    events.push(chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }));
    for (const piece of pieces(call.arguments, STREAM_PIECES)) {
      events.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
    }
  });
  events.push(chunk({}, completion.finishReason));
  if (includeUsage) {
    events.push({
      id: completion.id,
      object: 'chat.completion.chunk',
      created: completion.created,
      model: completion.model,
      choices: [],
      usage: completion.usage,
    });
  }
  return events;
}

/** Sends `events`, then destroys the socket once they are written, before `[DONE]`. */
function breakStream(res: ServerResponse, events: readonly unknown[]): void {
  if (events.length === 0) {
    res.flushHeaders();
    setImmediate(() => res.destroy());
    return;
  }
  events.forEach((event, i) => {
    const last = i === events.length - 1;
    res.write(`data: ${JSON.stringify(event)}\n\n`, last ? () => res.destroy() : undefined);
  });
}
