/**
 * A wire format the scripted model speaks: how a provider's API names its endpoints, checks its key,
 * reads a request, counts and caches its prompt, and answers (streamed or whole, errors included).
 * The server (queues, the request log, the control API) is the same for every format; the scenarios
 * read every request as Chat Completions, which each format turns its requests into.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { TokensByKind } from '../bill';
import type { ChatCompletionRequest } from '../wire';

export const FORMAT_NAMES = ['openai', 'anthropic', 'google', 'openrouter'] as const;
/** The providers whose APIs the scripted model can stand in for. */
export type FormatName = (typeof FORMAT_NAMES)[number];

/** An HTTP error as the provider words it. */
export interface Refusal {
  readonly status: number;
  readonly body: unknown;
}

/** One model call, read from a request of any format. */
export interface ModelCall {
  readonly model: string;
  /** The request as Chat Completions, for the scenarios and the summary check. */
  readonly chat: ChatCompletionRequest;
  readonly stream: boolean;
  /** The longest answer the request asks for, in tokens; 0 when it sets none. */
  readonly maxTokens: number;
  /** The format's own reading of the request, for counting and caching its prompt. */
  readonly native: unknown;
}

/** The prompt of a call as the provider counts and caches it. */
export interface PromptTokens {
  /** Every prompt token. */
  readonly total: number;
  readonly cacheRead: number;
  readonly cacheWrite5m: number;
  readonly cacheWrite1h: number;
}

/** A call's prompt as counted, and the cache as it will be once the call is answered. */
export interface Accounted {
  readonly prompt: PromptTokens;
  commit(): void;
}

/** Whether `value` is a refusal rather than what was asked for. */
export function isRefusal(value: object): value is Refusal {
  return 'status' in value && 'body' in value;
}

/** What the model answers, to be put in the format's words. */
export interface Answer {
  readonly id: string;
  readonly created: number;
  readonly model: string;
  readonly text: string | undefined;
  readonly toolCalls: readonly { readonly id: string; readonly name: string; readonly arguments: string }[];
  readonly finishReason: 'stop' | 'tool_calls' | 'length';
  readonly prompt: PromptTokens;
  readonly outputTokens: number;
}

/** The tokens of an answered call by what they are billed as. */
export function billedTokens(answer: Pick<Answer, 'prompt' | 'outputTokens'>): TokensByKind {
  const { total, cacheRead, cacheWrite5m, cacheWrite1h } = answer.prompt;
  return { input: total - cacheRead - cacheWrite5m - cacheWrite1h, cacheRead, cacheWrite5m, cacheWrite1h, output: answer.outputTokens };
}

/** One API of a format that answers model calls (Chat Completions, Responses, Messages…). */
export interface CompletionApi {
  /** Reads a request body; the path's model and the streaming the path asks for, when the path says. */
  parse(json: unknown, from: { readonly model?: string; readonly stream?: boolean }): ModelCall | Refusal;
  /**
   * Counts the call's prompt and works out the provider's caching at `now`: what it reads and writes,
   * and `commit`, which stores the outcome in the cache once the call is answered (a refused call
   * caches nothing). A refusal when the provider would refuse the cache markers.
   */
  account(call: ModelCall, now: number): Accounted | Refusal;
  /** The answer as server-sent events, each one frame ready to write. */
  frames(answer: Answer, call: ModelCall): string[];
  /** What ends a stream after its frames, if anything. */
  readonly end?: string;
  /** The answer as one JSON body. */
  json(answer: Answer, call: ModelCall): unknown;
  /** The tokens of an answer's text (or a tool call's arguments), as this provider counts them for `model`. */
  countOutput(text: string, model: string): number;
  /** The id of the n-th tool call the stand-in makes, in the provider's style; `call_…` when absent. */
  toolCallId?(n: number): string;
  /** This API's own wording of an overflow, when it differs from the format's. */
  overflow?(window: number, promptTokens: number, maxTokens: number): Refusal;
}

/** A model as the model list describes it. */
export interface ListedModel {
  readonly id: string;
  readonly name?: string;
  readonly window: number;
  readonly maxOutputTokens?: number;
  /** States the window in an OpenAI-style list as vLLM and gateways do. */
  readonly advertiseWindow?: boolean;
}

export type Route =
  | { readonly kind: 'completion'; readonly api: CompletionApi; readonly model?: string; readonly stream?: boolean }
  | { readonly kind: 'models' }
  | { readonly kind: 'model'; readonly id: string };

export interface WireFormat {
  readonly name: FormatName;
  /** The API root's path, which clients are given after the origin: `/v1`, `/v1beta`, `/api/v1`. */
  readonly root: string;
  /** Which endpoint `method path` is, or undefined for none. */
  route(method: string, path: string, search: URLSearchParams): Route | undefined;
  /** Whether the answer's room counts against the window (true when absent); Gemini's input limit is for the input alone. */
  readonly countsOutputInWindow?: boolean;
  /** Whether the request carries a key where this API looks for one (any value is accepted). */
  authorized(headers: IncomingHttpHeaders, search: URLSearchParams): boolean;
  readonly refuse: {
    invalid(message: string, param?: string | null): Refusal;
    unauthorized(): Refusal;
    unknownModel(model: string): Refusal;
    /** The prompt, with the output asked for, does not fit the window. */
    overflow(window: number, promptTokens: number, maxTokens: number): Refusal;
    /** The provider's usual body for a status a script asks for. */
    status(status: number): Refusal;
  };
  listModels(models: readonly ListedModel[]): unknown;
  describeModel(model: ListedModel): unknown;
  /** Forgets what the cache holds. */
  reset(): void;
}

/** One server-sent event as `data:` only, as OpenAI and Gemini send them. */
export function dataFrame(payload: unknown): string {
  return `data: ${JSON.stringify(payload)}\n\n`;
}

/** One server-sent event with its name, as Anthropic and OpenAI's Responses API send them. */
export function namedFrame(event: string, payload: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(payload)}\n\n`;
}

/** The value of a header that may repeat. */
export function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** A bearer token in `Authorization`, as OpenAI and OpenRouter take their keys. */
export function hasBearer(headers: IncomingHttpHeaders): boolean {
  return /^Bearer\s+\S+/i.test(header(headers, 'authorization') ?? '');
}
