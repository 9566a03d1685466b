/**
 * Models served by OpenAI-compatible endpoints (OpenAI itself, Ollama, LM Studio, vLLM, llama.cpp,
 * gateways). They are reached through Chat Completions (`POST {baseUrl}/chat/completions`), which
 * every such server speaks; the OpenAI provider's default, the Responses API, is OpenAI's alone.
 */
import { lazily } from '../core/lazy';
import { createOpenAI } from '@ai-sdk/openai';
import { defaultSettingsMiddleware, wrapLanguageModel, type LanguageModel } from 'ai';
import { z } from 'zod';
import { errorText, hasMarker, mark } from '../core/errors';
import type { ProviderKind } from '../core/provider-kind';

/** One model of a configured endpoint. */
export interface EndpointModel {
  /** The endpoint's name as configured; also the provider name in logs (`name.chat`). */
  readonly endpoint: string;
  /** The API root, e.g. `http://localhost:11434/v1`; `/chat/completions` is appended to it. */
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
 * The AI SDK model for `model`. Local servers usually want no key, but the OpenAI provider insists
 * on one (and would fall back to `OPENAI_API_KEY`), so a placeholder is sent instead.
 */
export function createEndpointModel(model: EndpointModel, apiKey: string | undefined, fetchImpl?: typeof fetch): LanguageModel {
  const provider = createOpenAI({
    baseURL: trimSlash(model.baseUrl),
    apiKey: apiKey ?? 'not-needed',
    name: model.endpoint,
    ...(fetchImpl ? { fetch: fetchImpl } : {}),
  });
  const chat = provider.chat(model.id);
  if (model.maxOutputTokens === undefined) return chat;
  return wrapLanguageModel({
    model: chat,
    middleware: defaultSettingsMiddleware({ settings: { maxOutputTokens: model.maxOutputTokens } }),
  });
}

const MODEL_LIST = lazily(() => z.object({ data: z.array(z.object({ id: z.string() })) }));

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

/**
 * The ids of the models an endpoint serves (`GET {baseUrl}/models`), in the server's order. One
 * deadline of `timeoutMs` runs from sending the request to the end of the answer, headers included,
 * so a server that accepts the connection and never answers fails like one that is down.
 */
export async function listEndpointModels(
  baseUrl: string,
  apiKey: string | undefined,
  fetchImpl: typeof fetch = fetch,
  signal?: AbortSignal,
  timeoutMs = LIST_TIMEOUT_MS,
): Promise<string[]> {
  const url = `${trimSlash(baseUrl)}/models`;
  const deadline = AbortSignal.timeout(timeoutMs);
  const combined = signal ? AbortSignal.any([signal, deadline]) : deadline;
  try {
    return await readModelList(url, apiKey, fetchImpl, combined);
  } catch (error) {
    if (signal?.aborted || !deadline.aborted) throw error;
    throw new EndpointError(`${url} did not answer within ${timeoutMs / 1000} s.`, undefined, { cause: error });
  }
}

async function readModelList(url: string, apiKey: string | undefined, fetchImpl: typeof fetch, signal: AbortSignal): Promise<string[]> {
  const headers: Record<string, string> = { Accept: 'application/json' };
  if (apiKey) headers.Authorization = `Bearer ${apiKey}`;

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
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch (error) {
    throw new EndpointError(`${url} did not answer with JSON (is the base URL right? it usually ends in /v1): ${excerpt(body)}`, response.status, {
      cause: error,
    });
  }
  const parsed = MODEL_LIST().safeParse(json);
  if (!parsed.success) {
    throw new EndpointError(`${url} answered JSON that is not a model list ({ "data": [{ "id": … }] }): ${excerpt(body)}`, response.status, {
      cause: parsed.error,
    });
  }
  return [...new Set(parsed.data.data.map((entry) => entry.id))];
}

function trimSlash(url: string): string {
  return url.trim().replace(/\/+$/, '');
}

function excerpt(text: string, limit = 200): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > limit ? `${flat.slice(0, limit)}…` : flat;
}
