import { createOpenAI } from '@ai-sdk/openai';
import type { LanguageModel } from 'ai';

/**
 * A model of a server that speaks OpenAI's Chat Completions (`POST {root}/chat/completions`): Ollama,
 * LM Studio, vLLM, llama.cpp and most gateways. Local servers usually want no key, but the OpenAI
 * provider insists on one (and would fall back to `OPENAI_API_KEY`), so a placeholder is sent instead.
 * The provider is named after the endpoint (`name.chat` in logs and traces).
 */
export function openAICompatibleModel(request: {
  readonly endpoint: string;
  readonly root: string;
  readonly id: string;
  readonly apiKey: string | undefined;
  readonly fetch?: typeof fetch;
}): LanguageModel {
  return createOpenAI({
    baseURL: request.root,
    apiKey: request.apiKey ?? 'not-needed',
    name: request.endpoint,
    ...(request.fetch ? { fetch: request.fetch } : {}),
  }).chat(request.id);
}
