import type { BudgetLevel } from './budget';
import type { CacheTtl } from './log';
import type { ProviderKind } from './provider-kind';
import { billingRulesFor } from './usage-cost';

/**
 * How long a provider keeps a conversation's prompt cache after its last request, whether it still
 * does, and what Longrun does once it does not: the next request re-sends the whole prompt at full
 * price anyway, so the tool outputs pruning otherwise leaves in place (to keep the prefix the cache
 * holds) can be pruned then at no extra cost: a cold cache is a free compaction. The time-based
 * trigger of compaction, made useful: it never calls a summarizer on a timer, runs only when the
 * lifetime has lapsed, at the start of a turn (never in the middle of one), and once per lapse.
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

/** What a cold cache lets Longrun do before the next request. */
export type ColdCompaction =
  | { readonly kind: 'none'; readonly reason: string }
  /** Prune what is no longer needed; `applyAhead`: apply the summary prepared ahead first. */
  | { readonly kind: 'prune'; readonly applyAhead: boolean };

export interface ColdMoment {
  /** `longrun.cache.coldCompaction`. */
  readonly enabled: boolean;
  readonly cache: CacheState;
  /** When the conversation's last request was sent. */
  readonly lastRequestAt: number | undefined;
  /** When a compaction for an expired cache was last applied, if ever. */
  readonly lastColdAt: number | undefined;
  /** A turn is under way: its requests follow each other, and a compaction now would break its cache. */
  readonly midTurn: boolean;
  readonly level: BudgetLevel;
  /** A summary prepared ahead is ready to apply. */
  readonly aheadReady: boolean;
  /** A summary is being prepared ahead: a pruning now would leave it nothing to apply to. */
  readonly aheadRunning: boolean;
}

/** The one rule for a cold cache (see the file's header). */
export function decideColdCompaction(moment: ColdMoment): ColdCompaction {
  if (!moment.enabled) return { kind: 'none', reason: 'longrun.cache.coldCompaction is off' };
  if (moment.midTurn) return { kind: 'none', reason: 'a turn is under way' };
  if (moment.cache.kind !== 'expired')
    return { kind: 'none', reason: moment.cache.kind === 'warm' ? 'the cache is still warm' : "the cache's lifetime is unknown" };
  if (moment.lastColdAt !== undefined && moment.lastRequestAt !== undefined && moment.lastColdAt >= moment.lastRequestAt) {
    return { kind: 'none', reason: 'already done since the last request' };
  }
  const past = moment.level === 'warning' || moment.level === 'critical' || moment.level === 'over';
  if (moment.aheadRunning && !moment.aheadReady && past) return { kind: 'none', reason: 'a summary being prepared would no longer apply' };
  return { kind: 'prune', applyAhead: moment.aheadReady && past };
}
