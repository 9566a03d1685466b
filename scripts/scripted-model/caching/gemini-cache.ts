/**
 * The Gemini API's implicit caching, as rules: which part of a request is read from the cache, and what
 * the cache holds afterwards. Pure: the request, the cache and the clock in, the outcome out.
 *
 * The rules it follows:
 * - Implicit caching is on for Gemini 2.5 and later models, with nothing to set; older models have none.
 * - A request reads the longest prefix of its contents (system instruction, tools, then each part of
 *   each turn) that a recent request of the same model sent, when that prefix is at least the model's
 *   minimum: 2,048 tokens for Gemini 2.5, 4,096 for Gemini 3 and later. The API promises no hit; this
 *   stand-in gives the hit whenever the prefix is there, and reports it as `cachedContentTokenCount`.
 * - Nothing is charged for writing; what is read is billed at the cached price.
 * - Gemini states no lifetime for implicit caching, only that requests with the same prefix sent
 *   close together are likelier to hit; here a prefix is kept 5 minutes after its last use.
 */
import { prefixHashes, runningTotals } from './prefix-chain';

export const IMPLICIT_LIFETIME_MS = 5 * 60_000;

/** The shortest prefix a model caches implicitly; undefined for a model without implicit caching. */
export function implicitMinimum(model: string): number | undefined {
  const id = model.toLowerCase();
  if (/gemini-(1\.|2\.0)/.test(id)) return undefined;
  if (/gemini-2\.5/.test(id)) return 2_048;
  return 4_096;
}

/** One part of the request, in the order the model reads them. */
export interface GeminiPart {
  readonly key: string;
  readonly tokens: number;
}

/** When each cached prefix (by its hash, model included) expires. */
export type GeminiCacheState = ReadonlyMap<string, number>;

export interface GeminiCacheOutcome {
  readonly state: GeminiCacheState;
  /** `cachedContentTokenCount`. */
  readonly cached: number;
  readonly input: number;
  readonly total: number;
}

export function applyGeminiCache(
  state: GeminiCacheState,
  request: { readonly model: string; readonly parts: readonly GeminiPart[] },
  now: number,
): GeminiCacheOutcome {
  const ends = runningTotals(request.parts.map((part) => part.tokens));
  const total = ends.at(-1) ?? 0;
  const minimum = implicitMinimum(request.model);
  if (minimum === undefined) return { state, cached: 0, input: total, total };
  const live = new Map([...state].filter(([, expiresAt]) => expiresAt > now));
  const hashes = prefixHashes(
    `gemini\u0000${request.model}`,
    request.parts.map((part) => part.key),
  );
  let cached = 0;
  hashes.forEach((hash, i) => {
    if (ends[i]! >= minimum && live.has(hash)) cached = ends[i]!;
  });
  hashes.forEach((hash, i) => {
    if (ends[i]! >= minimum) live.set(hash, now + IMPLICIT_LIFETIME_MS);
  });
  return { state: live, cached, input: total - cached, total };
}
