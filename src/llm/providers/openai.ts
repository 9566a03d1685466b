import { createOpenAI } from '@ai-sdk/openai';
import type { LanguageModel } from 'ai';
import type { NativeModelRequest } from './native-model';

/**
 * An OpenAI model through the Responses API (`POST {root}/responses`), OpenAI's own API, rather than
 * Chat Completions, which every compatible server speaks. Both report the cached part of the prompt
 * (`input_tokens_details.cached_tokens` here, `prompt_tokens_details.cached_tokens` there) and take a
 * `prompt_cache_key`; the Responses API also keeps a reasoning model's reasoning between the steps of
 * a tool loop, so the prefix the next step sends is the one the cache holds, and it alone takes the
 * longer cache lifetimes of the newest models. A compatible server is the `openai-compatible` kind.
 */
export function openAIModel(request: NativeModelRequest): LanguageModel {
  return createOpenAI({
    baseURL: request.root,
    apiKey: request.apiKey,
    ...(request.fetch ? { fetch: request.fetch } : {}),
  }).responses(request.id);
}
