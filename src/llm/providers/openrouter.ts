import { createOpenRouter } from '@openrouter/ai-sdk-provider';
import { wrapLanguageModel, type LanguageModel, type LanguageModelMiddleware } from 'ai';
import type { NativeModelRequest } from './native-model';

/**
 * A model through OpenRouter (`POST {root}/chat/completions`), with OpenRouter's own provider, which
 * passes Anthropic's cache breakpoints (`providerOptions.anthropic.cacheControl`) on to the content
 * parts and reads OpenRouter's usage: `prompt_tokens` counts every prompt token, the ones read from
 * and written to the cache included.
 */
export function openRouterModel(request: NativeModelRequest): LanguageModel {
  const model = createOpenRouter({
    baseURL: request.root,
    apiKey: request.apiKey,
    ...(request.fetch ? { fetch: request.fetch } : {}),
  }).chat(request.id);
  return wrapLanguageModel({ model, middleware: cacheWritesApart });
}

/**
 * The OpenRouter provider counts cache writes among the uncached input tokens; Anthropic's and
 * OpenAI's providers count them apart (uncached + read + written = all input). Written apart here
 * too, so a usage record means the same whichever provider made it.
 */
export function separateCacheWrites(usage: ProviderUsage): ProviderUsage {
  const { total, noCache, cacheRead, cacheWrite } = usage.inputTokens;
  if (cacheWrite === undefined || cacheWrite === 0 || total === undefined) return usage;
  const uncached = Math.max(0, total - (cacheRead ?? 0) - cacheWrite);
  return noCache === uncached ? usage : { ...usage, inputTokens: { ...usage.inputTokens, noCache: uncached } };
}

type Generated = Awaited<ReturnType<NonNullable<LanguageModelMiddleware['wrapGenerate']>>>;
/** Usage as a provider reports it to the AI SDK, before the SDK flattens it. */
type ProviderUsage = Generated['usage'];
type StreamPart = Awaited<ReturnType<NonNullable<LanguageModelMiddleware['wrapStream']>>>['stream'] extends ReadableStream<infer P> ? P : never;

const cacheWritesApart: LanguageModelMiddleware = {
  specificationVersion: 'v4',
  wrapGenerate: async ({ doGenerate }) => {
    const result = await doGenerate();
    return { ...result, usage: separateCacheWrites(result.usage) };
  },
  wrapStream: async ({ doStream }) => {
    const result = await doStream();
    const stream = result.stream.pipeThrough(
      new TransformStream<StreamPart, StreamPart>({
        transform(part, controller) {
          controller.enqueue(part.type === 'finish' ? { ...part, usage: separateCacheWrites(part.usage) } : part);
        },
      }),
    );
    return { ...result, stream };
  },
};
