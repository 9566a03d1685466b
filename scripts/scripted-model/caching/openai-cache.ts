/**
 * OpenAI's automatic prompt caching, as rules: which part of a prompt is read from the cache, and what
 * the cache holds afterwards. Pure: the request, the cache and the clock in, the outcome out.
 *
 * The rules it follows:
 * - Caching is automatic, for prompts of 1,024 tokens or more; a shorter prompt is neither read nor
 *   cached. Writing costs nothing extra; what is read is billed at the cached-input price.
 * - A request reads the longest exact prefix, in tokens, that a recent request of the same model and
 *   the same `prompt_cache_key` sent: requests are routed by a hash of their prompt's start combined
 *   with that key, so another key (or none) reaches another cache.
 * - What is read counts in steps: the first 1,024 tokens, then every further 128 (1,024, 1,152,
 *   1,280…); a partial step is not read.
 * - Every prompt is cached in its turn, for the requests after it.
 * - Lifetime: kept in memory, a cached prefix is cleared after 5 to 10 minutes of inactivity (5 here)
 *   and within an hour in any case; `prompt_cache_retention: "24h"` keeps it up to 24 hours. A read
 *   or a write renews it.
 */
import { prefixHashes } from './prefix-chain';

export const MINIMUM_CACHED_TOKENS = 1_024;
export const CACHE_STEP_TOKENS = 128;
export const IN_MEMORY_MS = 5 * 60_000;
export const EXTENDED_MS = 24 * 60 * 60_000;

export type Retention = 'in_memory' | '24h';

export interface OpenAICacheRequest {
  readonly model: string;
  /** `prompt_cache_key`, when the request sets one. */
  readonly cacheKey?: string;
  /** The prompt as the model reads it, token by token. */
  readonly tokens: readonly number[];
  readonly retention?: Retention;
}

/** The cache: when each cached prefix (by its hash, model and key included) expires. */
export type OpenAICacheState = ReadonlyMap<string, number>;

export interface OpenAICacheOutcome {
  readonly state: OpenAICacheState;
  /** `cached_tokens`. */
  readonly cached: number;
  /** The tokens not read from the cache. */
  readonly input: number;
  readonly total: number;
}

/** The lengths a cached prefix can have within `total` tokens: 1,024, then every 128 more. */
export function cacheSteps(total: number): number[] {
  const steps: number[] = [];
  for (let end = MINIMUM_CACHED_TOKENS; end <= total; end += CACHE_STEP_TOKENS) steps.push(end);
  return steps;
}

/** What the request reads from `state` at `now`, and the cache after it is stored. */
export function applyOpenAICache(state: OpenAICacheState, request: OpenAICacheRequest, now: number): OpenAICacheOutcome {
  const total = request.tokens.length;
  const live = new Map([...state].filter(([, expiresAt]) => expiresAt > now));
  const steps = cacheSteps(total);
  const pieces = steps.map((end, i) => request.tokens.slice(i === 0 ? 0 : end - CACHE_STEP_TOKENS, end).join(','));
  const hashes = prefixHashes(`openai\u0000${request.model}\u0000${request.cacheKey ?? ''}`, pieces);
  let cached = 0;
  hashes.forEach((hash, i) => {
    if (live.has(hash)) cached = steps[i]!;
  });
  const expiresAt = now + (request.retention === '24h' ? EXTENDED_MS : IN_MEMORY_MS);
  for (const hash of hashes) live.set(hash, expiresAt);
  return { state: live, cached, input: total - cached, total };
}
