import { createGoogle } from '@ai-sdk/google';
import type { LanguageModel } from 'ai';
import type { NativeModelRequest } from './native-model';

/**
 * A Gemini model through the Gemini API (`POST {root}/models/{id}:streamGenerateContent?alt=sse`,
 * the key in `x-goog-api-key`). The key is always passed, so the SDK never reads
 * `GOOGLE_GENERATIVE_AI_API_KEY` from the editor's environment.
 */
export function googleModel(request: NativeModelRequest): LanguageModel {
  return createGoogle({
    baseURL: request.root,
    apiKey: request.apiKey,
    ...(request.fetch ? { fetch: request.fetch } : {}),
  })(request.id);
}
