import type { LanguageModelUsage, ProviderMetadata } from 'ai';
import { isRecord } from '../core/errors';
import type { ReportedUsage } from '../core/log';
import type { ProviderKind } from '../core/provider-kind';

/**
 * What a model call's usage says, as a usage record keeps it: the tokens by kind as the provider
 * reported them through its AI SDK package, and what the provider said about the call besides
 * (OpenRouter: the provider that served it and what it cost; VS Code's models: that the counts are
 * an estimate).
 *
 * Each package's `inputTokens` counts every input token, cached or not: Anthropic's adds
 * `cache_read_input_tokens` and `cache_creation_input_tokens` to `input_tokens`; OpenAI's is
 * `prompt_tokens` (or `input_tokens`), which includes `cached_tokens`; Google's is `promptTokenCount`
 * (with `toolUsePromptTokenCount`), which includes `cachedContentTokenCount`; OpenRouter's is
 * `prompt_tokens`. Only the totals read from and written to the cache are kept: the package's own
 * `noCache` is not the same sum everywhere (OpenRouter's leaves the cache writes in it).
 */
export type CallUsage = Pick<
  ReportedUsage,
  'inputTokens' | 'outputTokens' | 'cacheReadTokens' | 'cacheWriteTokens' | 'modelId' | 'servedBy' | 'cost' | 'estimated'
>;

/** Providers whose packages report the cache (a 0 then means nothing was read); other servers' zeros mean nothing. */
const REPORTS_CACHE: ReadonlySet<ProviderKind> = new Set(['anthropic', 'openai', 'google', 'openrouter']);

/**
 * The usage of one call; undefined when the provider reported no input count. `provider` is the wire
 * format of the endpoint; `modelId` the model the response names.
 */
export function callUsage(
  usage: LanguageModelUsage,
  metadata: ProviderMetadata | undefined,
  provider: ProviderKind | undefined,
  modelId?: string,
): CallUsage | undefined {
  if (usage.inputTokens === undefined) return undefined;
  const reports = provider !== undefined && REPORTS_CACHE.has(provider);
  const read = usage.inputTokenDetails.cacheReadTokens;
  const written = usage.inputTokenDetails.cacheWriteTokens;
  const openrouter = isRecord(metadata?.openrouter) ? metadata.openrouter : undefined;
  const billed = isRecord(openrouter?.usage) ? openrouter.usage.cost : undefined;
  const estimated = isRecord(metadata?.['vscode-lm']) && metadata['vscode-lm'].usageEstimated === true;
  return {
    inputTokens: usage.inputTokens,
    outputTokens: usage.outputTokens ?? 0,
    ...(read !== undefined && (reports || read > 0) ? { cacheReadTokens: read } : {}),
    ...(written !== undefined && (reports || written > 0) ? { cacheWriteTokens: written } : {}),
    ...(modelId ? { modelId } : {}),
    ...(typeof openrouter?.provider === 'string' && openrouter.provider !== '' ? { servedBy: openrouter.provider } : {}),
    ...(typeof billed === 'number' && Number.isFinite(billed) && billed >= 0 ? { cost: billed } : {}),
    ...(estimated ? { estimated: true } : {}),
  };
}
