import type { CacheTtl } from './log';
import type { ProviderKind } from './provider-kind';
import { billingRulesFor } from './usage-cost';

/**
 * How long a provider keeps a conversation's prompt cache after its last request, whether it still
 * does, and what Longrun does once it does not: the next request re-sends the whole prompt at full
 * price anyway, so the tool outputs pruning otherwise leaves in place (to keep the prefix the cache
 * holds) can be pruned then at no extra cost: a cold cache is a free compaction (decided, with the
 * other moments of compaction, by `decideColdCompaction` in `compaction-guard.ts`).
 */

/** What sets a provider's cache lifetime. */
export interface CacheLifetimeSettings {
  /** Anthropic's breakpoints (directly or through OpenRouter): five minutes or an hour. */
  readonly ttl: CacheTtl;
  /** OpenAI's extended retention. */
  readonly openaiRetention24h: boolean;
}

const MINUTE = 60_000;
const TTL_MS: Readonly<Record<CacheTtl, number>> = { '5m': 5 * MINUTE, '1h': 60 * MINUTE };
/** OpenAI keeps in-memory cached prefixes five to ten minutes after their last use: gone after ten. */
const OPENAI_IN_MEMORY_MS = 10 * MINUTE;
const OPENAI_EXTENDED_MS = 24 * 60 * MINUTE;

/**
 * The provider's cache lifetime, from the last request; undefined when it is not known: Gemini's
 * implicit cache and other servers say nothing of theirs, and VS Code's models report no provider.
 */
export function cacheLifetimeMs(
  provider: ProviderKind | undefined,
  modelId: string | undefined,
  settings: CacheLifetimeSettings,
): number | undefined {
  const rules = billingRulesFor(provider, modelId);
  if (rules === 'anthropic') return TTL_MS[settings.ttl];
  if (provider === 'openai') return settings.openaiRetention24h ? OPENAI_EXTENDED_MS : OPENAI_IN_MEMORY_MS;
  // Through OpenRouter, an OpenAI model is cached in memory: no retention option is passed on.
  if (rules === 'openai') return OPENAI_IN_MEMORY_MS;
  return undefined;
}

export type CacheState =
  { readonly kind: 'unknown' } | { readonly kind: 'warm'; readonly expiresAt: number } | { readonly kind: 'expired'; readonly since: number };

/** Whether the cache still holds the conversation at `now`, from its last request and the provider's lifetime. */
export function cacheState(lastRequestAt: number | undefined, lifetimeMs: number | undefined, now: number): CacheState {
  if (lastRequestAt === undefined || lifetimeMs === undefined) return { kind: 'unknown' };
  const expiresAt = lastRequestAt + lifetimeMs;
  return now < expiresAt ? { kind: 'warm', expiresAt } : { kind: 'expired', since: expiresAt };
}
