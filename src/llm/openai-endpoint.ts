/**
 * Models of the endpoints in `longrun.endpoints`: each is made by its provider kind's AI SDK package
 * (`./providers`), and an endpoint's models are listed through its provider's API. An endpoint that
 * names no kind is an OpenAI-compatible server, reached through Chat Completions
 * (`POST {baseUrl}/chat/completions`), which every such server speaks.
 */
import { lazily } from '../core/lazy';
import { defaultSettingsMiddleware, wrapLanguageModel, type LanguageModel } from 'ai';
import { z } from 'zod';
import { errorText, hasMarker, mark } from '../core/errors';
import { DEFAULT_PROVIDER_KIND, type ProviderKind } from '../core/provider-kind';
import { apiRoot, providerModel } from './providers';
import { authHeaders } from './providers/auth-headers';

/** One model of a configured endpoint. */
export interface EndpointModel {
  /** The endpoint's name as configured; also the provider name in logs (`name.chat`) for an OpenAI-compatible one. */
  readonly endpoint: string;
  /**
   * The API root, e.g. `http://localhost:11434/v1`, to which `/chat/completions` (or the native
   * provider's own path) is appended; for a native provider, its default root when none was set.
   */
  readonly baseUrl: string;
  /** The wire format the endpoint speaks; `openai-compatible` when absent. */
  readonly provider?: ProviderKind;
  /** The model id the server knows, e.g. `qwen2.5-coder:14b`. */
  readonly id: string;
  /** Tokens the model's window holds, when configured. */
  readonly contextWindow?: number;
  /** The default cap on the answer's length; a call's own `maxOutputTokens` wins over it. */
  readonly maxOutputTokens?: number;
}

/**
 * The AI SDK model for `model`, through the provider package of its kind. Throws a
 * `MissingApiKeyError` for a native provider's endpoint without a key, before anything is sent.
 */
export function createEndpointModel(model: EndpointModel, apiKey: string | undefined, fetchImpl?: typeof fetch): LanguageModel {
  const made = providerModel({
    kind: model.provider ?? DEFAULT_PROVIDER_KIND,
    endpoint: model.endpoint,
    baseUrl: model.baseUrl,
    id: model.id,
    apiKey,
    ...(fetchImpl ? { fetch: fetchImpl } : {}),
  });
  if (model.maxOutputTokens === undefined) return made;
  return wrapLanguageModel({
    model: made as Parameters<typeof wrapLanguageModel>[0]['model'],
    middleware: defaultSettingsMiddleware({ settings: { maxOutputTokens: model.maxOutputTokens } }),
  });
}

const MODEL_LIST = lazily(() => z.object({ data: z.array(z.object({ id: z.string() })) }));
const ANTHROPIC_MODEL_LIST = lazily(() =>
  z.object({ data: z.array(z.object({ id: z.string() })), has_more: z.boolean().optional(), last_id: z.string().nullish() }),
);
const GEMINI_MODEL_LIST = lazily(() =>
  z.object({
    models: z.array(z.object({ name: z.string(), supportedGenerationMethods: z.array(z.string()).optional() })).optional(),
    nextPageToken: z.string().optional(),
  }),
);

const ERROR_MARKER = Symbol.for('longrun.endpoint-error');

/** A failure talking to an endpoint outside a model call (listing its models). */
export class EndpointError extends Error {
  override readonly name = 'EndpointError';

  constructor(
    message: string,
    /** The HTTP status, when the server answered. */
    readonly statusCode?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    mark(this, ERROR_MARKER);
  }

  static isInstance(error: unknown): error is EndpointError {
    return hasMarker(error, ERROR_MARKER);
  }
}

/** Longest a model list may take, from sending the request to the end of its answer. */
export const LIST_TIMEOUT_MS = 30_000;

/** Pages of a paginated list read at most (Anthropic's and Gemini's lists are paginated). */
const MAX_PAGES = 10;

/**
 * The ids of the models an endpoint serves, in the server's order, through its provider's API:
 * `GET {root}/models` (`data[].id`) for OpenAI, OpenRouter and compatible servers; Anthropic's Models
 * API (most recent first, paginated by `after_id`); Gemini's models list (`models[].name` without its
 * `models/` prefix, only those that generate content, paginated by `pageToken`). One deadline of
 * `timeoutMs` runs from sending the first request to the end of the last answer, headers included, so
 * a server that accepts the connection and never answers fails like one that is down.
 */
export async function listEndpointModels(
  baseUrl: string,
  apiKey: string | undefined,
  fetchImpl: typeof fetch = fetch,
  signal?: AbortSignal,
  timeoutMs = LIST_TIMEOUT_MS,
  provider: ProviderKind = DEFAULT_PROVIDER_KIND,
): Promise<string[]> {
  const url = `${apiRoot(provider, baseUrl)}/models`;
  const deadline = AbortSignal.timeout(timeoutMs);
  const combined = signal ? AbortSignal.any([signal, deadline]) : deadline;
  try {
    const ids: string[] = [];
    let page: string | undefined;
    for (let pages = 0; pages < MAX_PAGES; pages++) {
      const json = await readJson(pageUrl(provider, url, page), authHeaders(provider, apiKey), fetchImpl, combined);
      const read = modelIds(provider, url, json);
      ids.push(...read.ids);
      page = read.next;
      if (page === undefined) break;
    }
    return [...new Set(ids)];
  } catch (error) {
    if (signal?.aborted || !deadline.aborted) throw error;
    throw new EndpointError(`${url} did not answer within ${timeoutMs / 1000} s.`, undefined, { cause: error });
  }
}

function pageUrl(provider: ProviderKind, url: string, page: string | undefined): string {
  switch (provider) {
    case 'anthropic':
      return `${url}?limit=1000${page !== undefined ? `&after_id=${encodeURIComponent(page)}` : ''}`;
    case 'google':
      return `${url}?pageSize=1000${page !== undefined ? `&pageToken=${encodeURIComponent(page)}` : ''}`;
    default:
      return url;
  }
}

/** The ids on one page of a provider's model list, and where the next page starts. */
function modelIds(provider: ProviderKind, url: string, json: unknown): { ids: string[]; next?: string } {
  const notAList = (shape: string, error: unknown): EndpointError =>
    new EndpointError(`${url} answered JSON that is not a model list (${shape}): ${excerpt(JSON.stringify(json))}`, undefined, { cause: error });
  if (provider === 'anthropic') {
    const parsed = ANTHROPIC_MODEL_LIST().safeParse(json);
    if (!parsed.success) throw notAList('{ "data": [{ "id": … }], "has_more": … }', parsed.error);
    const { data, has_more: more, last_id: last } = parsed.data;
    return { ids: data.map((m) => m.id), ...(more && last ? { next: last } : {}) };
  }
  if (provider === 'google') {
    const parsed = GEMINI_MODEL_LIST().safeParse(json);
    if (!parsed.success) throw notAList('{ "models": [{ "name": "models/…" }] }', parsed.error);
    const generating = (parsed.data.models ?? []).filter((m) => m.supportedGenerationMethods?.includes('generateContent') ?? true);
    const next = parsed.data.nextPageToken;
    return { ids: generating.map((m) => m.name.replace(/^models\//, '')), ...(next ? { next } : {}) };
  }
  const parsed = MODEL_LIST().safeParse(json);
  if (!parsed.success) throw notAList('{ "data": [{ "id": … }] }', parsed.error);
  return { ids: parsed.data.data.map((entry) => entry.id) };
}

async function readJson(url: string, auth: Record<string, string>, fetchImpl: typeof fetch, signal: AbortSignal): Promise<unknown> {
  const headers: Record<string, string> = { Accept: 'application/json', ...auth };
  let response: Response;
  try {
    response = await fetchImpl(url, { method: 'GET', headers, signal });
  } catch (error) {
    if (signal.aborted) throw error;
    throw new EndpointError(`Could not reach ${url}: ${errorText(error)}`, undefined, { cause: error });
  }
  const body = await response.text();
  if (!response.ok) {
    throw new EndpointError(
      `Listing models at ${url} failed: HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ''}${body.trim() ? `: ${excerpt(body)}` : ''}`,
      response.status,
    );
  }
  try {
    return JSON.parse(body);
  } catch (error) {
    throw new EndpointError(`${url} did not answer with JSON (is the base URL right? it usually ends in /v1): ${excerpt(body)}`, response.status, {
      cause: error,
    });
  }
}

function excerpt(text: string, limit = 200): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > limit ? `${flat.slice(0, limit)}…` : flat;
}
