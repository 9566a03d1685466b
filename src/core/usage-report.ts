import type { ReportedUsage } from './log';
import type { CostBreakdown } from './usage-cost';
import { LEGACY_BASIS } from './usage-calibration';

/**
 * A conversation's usage as the gauge, `/context` and the export show it: the tokens of the last
 * request and of the whole conversation by kind, the share read from the provider's cache, what they
 * cost, and what compactions cost: their summary requests, and the cache rewrite after each (the
 * first request after a compaction finds none of the prefix it changed in the cache), and what the
 * subagents the agent delegated to spent.
 */

/** Requests' tokens by kind and their cost. */
export interface UsageTotals {
  readonly requests: number;
  /** Every input token, cached or not. */
  readonly input: number;
  readonly cacheRead: number;
  readonly cacheWrite: number;
  readonly output: number;
  /** Requests whose provider reported its cache (reads or writes, even none): the hit share means something only for them. */
  readonly cacheReported: number;
  /** What the requests with a known price cost, in US dollars. */
  readonly cost: number;
  /** Requests without a known price: their tokens are counted, their cost is not. */
  readonly unpriced: number;
  /** Requests whose counts are Longrun's estimate (VS Code's models report no usage). */
  readonly estimated: number;
}

/** The input a compaction made the provider take again at full price (or write to its cache again). */
export interface RewriteTotals {
  readonly requests: number;
  readonly tokens: number;
  readonly cost: number;
  readonly unpriced: number;
}

export interface UsageReport {
  /** The agent's last request; absent before any. */
  readonly last?: UsageTotals;
  /** Every request: the agent's, the summarizer's and the subagents'. */
  readonly conversation: UsageTotals;
  /** The summarizer's requests. */
  readonly summaries: UsageTotals;
  /** The subagents' requests (their steps and their own summaries): on a prompt of their own, never the agent's last request. */
  readonly subagents: UsageTotals;
  /** The first request after each compaction: the part of its input the cache did not hold. */
  readonly rewrites: RewriteTotals;
}

export const NO_USAGE: UsageTotals = {
  requests: 0,
  input: 0,
  cacheRead: 0,
  cacheWrite: 0,
  output: 0,
  cacheReported: 0,
  cost: 0,
  unpriced: 0,
  estimated: 0,
};

const NO_REWRITES: RewriteTotals = { requests: 0, tokens: 0, cost: 0, unpriced: 0 };

/** The share of the input read from the cache; undefined when no request reported its cache. */
export function cacheHitShare(totals: UsageTotals): number | undefined {
  if (totals.cacheReported === 0 || totals.input <= 0) return undefined;
  return totals.cacheRead / totals.input;
}

/** What a request cost: what its provider billed when it said, else its tokens at the model's prices (`breakdown`); an estimate has none. */
export function costOf(usage: ReportedUsage, breakdown: CostBreakdown | undefined): number | undefined {
  if (usage.estimated) return undefined;
  return usage.cost ?? breakdown?.total;
}

function add(totals: UsageTotals, usage: ReportedUsage, cost: number | undefined): UsageTotals {
  const reported = usage.cacheReadTokens !== undefined || usage.cacheWriteTokens !== undefined;
  return {
    requests: totals.requests + 1,
    input: totals.input + usage.inputTokens,
    cacheRead: totals.cacheRead + (usage.cacheReadTokens ?? 0),
    cacheWrite: totals.cacheWrite + (usage.cacheWriteTokens ?? 0),
    output: totals.output + usage.outputTokens,
    cacheReported: totals.cacheReported + (reported && !usage.estimated ? 1 : 0),
    cost: totals.cost + (cost ?? 0),
    unpriced: totals.unpriced + (cost === undefined ? 1 : 0),
    estimated: totals.estimated + (usage.estimated ? 1 : 0),
  };
}

/**
 * What the first request after a compaction took again: the tokens it wrote to the cache when its
 * provider reports writes (Anthropic), else those it did not read from it (OpenAI, Gemini), and
 * what they cost.
 */
function addRewrite(totals: RewriteTotals, usage: ReportedUsage, breakdown: CostBreakdown | undefined): RewriteTotals {
  const writes = usage.cacheWriteTokens !== undefined;
  const tokens = writes ? usage.cacheWriteTokens! : Math.max(0, usage.inputTokens - (usage.cacheReadTokens ?? 0));
  const cost = usage.estimated || !breakdown ? undefined : writes ? breakdown.cacheWrite : breakdown.uncached + breakdown.cacheWrite;
  return {
    requests: totals.requests + 1,
    tokens: totals.tokens + tokens,
    cost: totals.cost + (cost ?? 0),
    unpriced: totals.unpriced + (cost === undefined ? 1 : 0),
  };
}

/**
 * The report of `usages` (every usage record of the conversation, in the order written).
 * `price` gives a request's cost by kind at its model's prices (undefined: no price known);
 * `free` tells the bases of prunings made because the cache had expired anyway, whose rewrite is no
 * compaction's cost.
 */
export function usageReport(
  usages: readonly ReportedUsage[],
  price: (usage: ReportedUsage) => CostBreakdown | undefined,
  free: (basis: string) => boolean = () => false,
): UsageReport {
  let conversation = NO_USAGE;
  let summaries = NO_USAGE;
  let subagents = NO_USAGE;
  let rewrites = NO_REWRITES;
  let last: UsageTotals | undefined;
  let basis: string | null | undefined;
  for (const usage of usages) {
    const breakdown = usage.estimated ? undefined : price(usage);
    const cost = costOf(usage, breakdown);
    conversation = add(conversation, usage, cost);
    if (usage.purpose === 'summary') {
      summaries = add(summaries, usage, cost);
      continue;
    }
    // A subagent's prompt is its own: it neither is the agent's last request nor follows its compactions.
    if (usage.purpose === 'subagent') {
      subagents = add(subagents, usage, cost);
      continue;
    }
    last = add(NO_USAGE, usage, cost);
    const changed = basis !== undefined && usage.basis !== basis && usage.basis !== null && usage.basis !== LEGACY_BASIS;
    if (changed && !free(usage.basis!)) rewrites = addRewrite(rewrites, usage, breakdown);
    basis = usage.basis;
  }
  return { ...(last ? { last } : {}), conversation, summaries, subagents, rewrites };
}
