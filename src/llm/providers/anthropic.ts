import { createAnthropic } from '@ai-sdk/anthropic';
import type { LanguageModel } from 'ai';
import type { NativeModelRequest } from './native-model';

/**
 * A Claude model through Anthropic's Messages API (`POST {root}/messages`). The key and the root
 * are always passed, so the SDK never falls back to `ANTHROPIC_API_KEY` or `ANTHROPIC_BASE_URL` in
 * the editor's environment. The provider keeps its own name (`anthropic.messages`), so the cache
 * breakpoints a request sets under `providerOptions.anthropic` are read whatever the endpoint is called.
 */
export function anthropicModel(request: NativeModelRequest): LanguageModel {
  return createAnthropic({
    baseURL: request.root,
    apiKey: request.apiKey,
    ...(request.fetch ? { fetch: request.fetch } : {}),
  })(request.id);
}
