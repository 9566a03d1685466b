/**
 * Longrun's own endpoints, one wire format each: the provider kind an endpoint names decides which
 * of the AI SDK's provider packages makes its models. This file is the folder's only public surface.
 */
import type { LanguageModel } from 'ai';
import type { ProviderKind } from '../../core/provider-kind';
import { anthropicModel } from './anthropic';
import { apiRoot } from './api-roots';
import { googleModel } from './google';
import { MissingApiKeyError } from './missing-api-key';
import { openAIModel } from './openai';
import { openAICompatibleModel } from './openai-compatible';
import { openRouterModel } from './openrouter';

export { apiRoot, defaultApiRoot, DEFAULT_API_ROOTS } from './api-roots';
export { MissingApiKeyError } from './missing-api-key';

/** What {@link providerModel} needs of an endpoint's model. */
export interface ProviderModelRequest {
  readonly kind: ProviderKind;
  /** The endpoint's name in `longrun.endpoints`. */
  readonly endpoint: string;
  /** The endpoint's base URL as configured (or its provider's default root). */
  readonly baseUrl: string;
  /** The model id the provider knows. */
  readonly id: string;
  /** The endpoint's key from secret storage, when one is stored. */
  readonly apiKey: string | undefined;
  readonly fetch?: typeof fetch;
}

/**
 * The AI SDK model of one endpoint model, through its kind's provider package. A native provider's
 * endpoint without a key fails here, with a {@link MissingApiKeyError} that says how to store one,
 * before anything is sent; an OpenAI-compatible server may need none.
 */
export function providerModel(request: ProviderModelRequest): LanguageModel {
  const root = apiRoot(request.kind, request.baseUrl);
  const base = { endpoint: request.endpoint, root, id: request.id, ...(request.fetch ? { fetch: request.fetch } : {}) };
  if (request.kind === 'openai-compatible') return openAICompatibleModel({ ...base, apiKey: request.apiKey });
  const apiKey = request.apiKey?.trim();
  if (!apiKey) throw new MissingApiKeyError(request.endpoint, request.kind);
  const native = { ...base, apiKey };
  switch (request.kind) {
    case 'openai':
      return openAIModel(native);
    case 'anthropic':
      return anthropicModel(native);
    case 'google':
      return googleModel(native);
    case 'openrouter':
      return openRouterModel(native);
  }
}
