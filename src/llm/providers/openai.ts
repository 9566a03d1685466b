import { createOpenAI } from '@ai-sdk/openai';
import { wrapLanguageModel, type LanguageModel, type LanguageModelMiddleware } from 'ai';
import type { NativeModelRequest } from './native-model';

/**
 * An OpenAI model through the Responses API (`POST {root}/responses`), OpenAI's own API, rather than
 * Chat Completions, which every compatible server speaks. Both report the cached part of the prompt
 * (`input_tokens_details.cached_tokens` here, `prompt_tokens_details.cached_tokens` there) and take a
 * `prompt_cache_key`; the Responses API also keeps a reasoning model's reasoning between the steps of
 * a tool loop, so the prefix the next step sends is the one the cache holds, and it alone takes the
 * longer cache lifetimes of the newest models. A compatible server is the `openai-compatible` kind.
 *
 * Its requests say `store: false`: the conversation is Longrun's to keep, and a reasoning model then
 * returns its reasoning encrypted (the package asks for `reasoning.encrypted_content`), which goes back
 * whole with each request, however long ago it was made, rather than as a reference to an item the
 * API keeps for a while.
 */
export function openAIModel(request: NativeModelRequest): LanguageModel {
  const model = createOpenAI({
    baseURL: request.root,
    apiKey: request.apiKey,
    ...(request.fetch ? { fetch: request.fetch } : {}),
  }).responses(request.id);
  return wrapLanguageModel({ model, middleware: storeNothing });
}

/** `store: false` on every request that does not say otherwise. */
const storeNothing: LanguageModelMiddleware = {
  specificationVersion: 'v4',
  transformParams: async ({ params }) => ({
    ...params,
    providerOptions: { ...params.providerOptions, openai: { store: false, ...params.providerOptions?.['openai'] } },
  }),
};
