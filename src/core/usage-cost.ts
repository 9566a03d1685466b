import type { CacheTtl } from './log';
import type { ProviderKind } from './provider-kind';

/**
 * What one model call cost, from the tokens its provider reported by kind and the model's prices,
 * by the provider's billing rules. A price the rules cannot supply makes the cost unknown: no figure
 * is ever made up.
 *
 * Every provider's `inputTokens` counts all the input, the cached part included (the AI SDK adds
 * Anthropic's `cache_read_input_tokens` and `cache_creation_input_tokens` to its `input_tokens`);
 * the part billed at the plain input price is what is neither read from nor written to the cache.
 */

/** A model's prices, in US dollars per million tokens. */
export interface ModelPrices {
  readonly input: number;
  readonly output: number;
  /** A token read from the prompt cache; by the provider's rule when absent. */
  readonly cacheRead?: number;
  /** A token written to the prompt cache (at Anthropic's 5-minute lifetime); by the provider's rule when absent. */
  readonly cacheWrite?: number;
  /** A token written to the prompt cache at Anthropic's 1-hour lifetime; by the provider's rule when absent. */
  readonly cacheWrite1h?: number;
  /**
   * The prices of a request whose prompt is long: above a tier's `above` tokens of input (every
   * input token, cached or not), each kind of token it names costs its price, every token of that
   * kind in the request, not only those past the mark (Gemini 2.5 Pro above 200k). The highest tier
   * the prompt passes applies.
   */
  readonly tiers?: readonly PriceTier[];
}

/** The flat prices of one kind of request, without tiers. */
export type FlatPrices = Omit<ModelPrices, 'tiers'>;

/** The prices of a request whose prompt holds more than `above` input tokens, for the kinds of token it names. */
export interface PriceTier extends Partial<FlatPrices> {
  readonly above: number;
}

/** Whose rules price the cache reads and writes a model's price list leaves out. */
export type BillingRules = 'anthropic' | 'openai' | 'google' | 'unknown';

/** Anthropic bills a cache read at a tenth of the input price, a write at 1.25 times it (5 minutes) or twice it (1 hour). */
export const ANTHROPIC_CACHE_READ = 0.1;
export const ANTHROPIC_CACHE_WRITE_5M = 1.25;
export const ANTHROPIC_CACHE_WRITE_1H = 2;

/** The tokens of one call, by kind. */
export interface TokenUse {
  /** Every input token, cached or not. */
  readonly input: number;
  readonly cacheRead: number;
  readonly cacheWrite: number;
  readonly output: number;
  /** The lifetime the call asked its cache writes to have (Anthropic); five minutes when absent. */
  readonly cacheTtl?: CacheTtl;
}

/** What a call cost, by kind of token, in US dollars. */
export interface CostBreakdown {
  /** Input neither read from nor written to the cache, at the input price. */
  readonly uncached: number;
  readonly cacheRead: number;
  readonly cacheWrite: number;
  readonly output: number;
  readonly total: number;
}

/**
 * The rules of the provider that bills a model: Anthropic's, OpenAI's and Google's own, and through
 * OpenRouter those of the model's maker (its id's prefix, `anthropic/claude-sonnet-4`); unknown for
 * other OpenAI-compatible servers, which may bill anything or nothing.
 */
export function billingRulesFor(provider: ProviderKind | undefined, modelId: string | undefined): BillingRules {
  switch (provider) {
    case 'anthropic':
      return 'anthropic';
    case 'openai':
      return 'openai';
    case 'google':
      return 'google';
    case 'openrouter': {
      const maker = modelId?.split('/')[0]?.toLowerCase();
      return maker === 'anthropic' ? 'anthropic' : maker === 'openai' ? 'openai' : maker === 'google' ? 'google' : 'unknown';
    }
    default:
      return 'unknown';
  }
}

/** Tokens, in millions, times a price per million; 0 tokens cost nothing whatever the price. */
function priced(tokens: number, perMillion: number | undefined): number | undefined {
  if (tokens <= 0) return 0;
  return perMillion === undefined ? undefined : (tokens * perMillion) / 1_000_000;
}

/** The price of a cache read: the list's, else Anthropic's tenth of the input price; OpenAI and Google list their own. */
function readPrice(prices: FlatPrices, rules: BillingRules): number | undefined {
  if (prices.cacheRead !== undefined) return prices.cacheRead;
  return rules === 'anthropic' ? prices.input * ANTHROPIC_CACHE_READ : undefined;
}

/**
 * The price of a cache write: the list's (its 1-hour price for a 1-hour write), else Anthropic's
 * multiple of the input price; OpenAI bills what it caches as plain input. Google reports no writes.
 */
function writePrice(prices: FlatPrices, rules: BillingRules, ttl: CacheTtl | undefined): number | undefined {
  if (ttl === '1h') {
    if (prices.cacheWrite1h !== undefined) return prices.cacheWrite1h;
    return rules === 'anthropic' ? prices.input * ANTHROPIC_CACHE_WRITE_1H : undefined;
  }
  if (prices.cacheWrite !== undefined) return prices.cacheWrite;
  if (rules === 'anthropic') return prices.input * ANTHROPIC_CACHE_WRITE_5M;
  return rules === 'openai' ? prices.input : undefined;
}

/** The prices a request of `promptTokens` input tokens pays: the base prices, with those of every tier it passes over them. */
export function pricesAtPrompt(prices: ModelPrices, promptTokens: number): FlatPrices {
  const { tiers, ...flat } = prices;
  if (!tiers) return flat;
  let at: FlatPrices = flat;
  for (const { above, ...tier } of [...tiers].sort((a, b) => a.above - b.above)) {
    if (promptTokens > above) at = { ...at, ...tier };
  }
  return at;
}

/** What `use` cost at `prices` by `rules` (the tier its own prompt falls in); undefined when a kind of token it holds has no price. */
export function callCost(use: TokenUse, listed: ModelPrices, rules: BillingRules): CostBreakdown | undefined {
  const prices = pricesAtPrompt(listed, use.input);
  const cacheRead = Math.max(0, use.cacheRead);
  const cacheWrite = Math.max(0, use.cacheWrite);
  const uncachedTokens = Math.max(0, use.input - cacheRead - cacheWrite);
  const parts = {
    uncached: priced(uncachedTokens, prices.input),
    cacheRead: priced(cacheRead, readPrice(prices, rules)),
    cacheWrite: priced(cacheWrite, writePrice(prices, rules, use.cacheTtl)),
    output: priced(Math.max(0, use.output), prices.output),
  };
  if (parts.uncached === undefined || parts.cacheRead === undefined || parts.cacheWrite === undefined || parts.output === undefined) return undefined;
  return {
    uncached: parts.uncached,
    cacheRead: parts.cacheRead,
    cacheWrite: parts.cacheWrite,
    output: parts.output,
    total: parts.uncached + parts.cacheRead + parts.cacheWrite + parts.output,
  };
}
