import type { CacheState } from '../../core/cache-lifetime';
import { cacheHitShare, type UsageReport, type UsageTotals } from '../../core/usage-report';

/**
 * The usage and cost table of the gauge's tooltip, `/context` and the export, as Markdown lines:
 * the last request and the whole conversation by kind of token, the share read from the cache, the
 * cost, what compactions and subagents cost, and whether the cache has expired.
 */

export interface UsageView {
  readonly report: UsageReport;
  /** The model in use is one of VS Code's, which reports no usage. */
  readonly editorModel?: boolean;
  /** The conversation has answers, but their provider reported no usage for any of them. */
  readonly unreported?: boolean;
  /** The day of the model catalogue's prices (its snapshot), shown with the cost. */
  readonly catalogueDate?: string;
  /** The provider's cache, and the tokens the next request sends (for "re-sends ~N tokens"). */
  readonly cache?: { readonly state: CacheState; readonly nextRequestTokens: number; readonly now: number };
}

const tokens = (n: number): string => Math.round(n).toLocaleString('en-US');

/** US dollars: cents from a dollar on, a tenth of a cent below, never rounded to nothing. */
export function dollars(amount: number): string {
  if (amount === 0) return '$0.00';
  if (amount >= 1) return `$${amount.toFixed(2)}`;
  if (amount >= 0.01) return `$${amount.toFixed(3)}`;
  return amount >= 0.0001 ? `$${amount.toFixed(4)}` : '<$0.0001';
}

function share(totals: UsageTotals | undefined): string {
  const hit = totals ? cacheHitShare(totals) : undefined;
  return hit === undefined ? '—' : `${Math.round(hit * 1000) / 10}%`;
}

/** A cost, or why there is none: a request without a price counts its tokens only. */
function cost(totals: UsageTotals | undefined): string {
  if (!totals || totals.requests === 0) return '—';
  if (totals.unpriced === totals.requests) return 'no price known';
  return totals.unpriced > 0 ? `${dollars(totals.cost)} + ${totals.unpriced} unpriced` : dollars(totals.cost);
}

function minutes(ms: number): string {
  const m = Math.round(ms / 60_000);
  return m < 1 ? 'under a minute' : m === 1 ? '1 min' : m < 120 ? `${m} min` : `${Math.round(m / 60)} h`;
}

/** The cache's state in one sentence, once it has expired (a warm cache's time left would be stale in a tooltip). */
export function cacheSentence(cache: NonNullable<UsageView['cache']>): string | undefined {
  const { state, now, nextRequestTokens } = cache;
  if (state.kind === 'expired') {
    return `Cache expired ${minutes(now - state.since)} ago: the next request re-sends ~${tokens(nextRequestTokens)} tokens at full price.`;
  }
  return undefined;
}

/** The table and the sentences after it; empty before the first request. */
export function usageLines(view: UsageView): string[] {
  const { report } = view;
  const lines: string[] = [];
  if (view.editorModel && report.conversation.requests === report.conversation.estimated) {
    lines.push("VS Code's models report no token usage: the counts here are Longrun's own, and no cost or cache share is known.");
    return lines;
  }
  if (report.conversation.requests === 0) {
    if (view.unreported)
      lines.push("The model's server reported no token usage: Longrun counts the window itself, and no cost or cache share is known.");
    return lines;
  }
  const last = report.last;
  const both = (label: string, pick: (t: UsageTotals) => string): string =>
    `| ${label} | ${last ? pick(last) : '—'} | ${pick(report.conversation)} |`;
  lines.push(
    '| usage | last request | conversation |',
    '|---|---:|---:|',
    both('Input tokens', (t) => tokens(t.input)),
    both('· read from the cache', (t) => tokens(t.cacheRead)),
    both('· written to the cache', (t) => tokens(t.cacheWrite)),
    both('Output tokens', (t) => tokens(t.output)),
    `| Cache hit share | ${share(last)} | ${share(report.conversation)} |`,
    `| Cost${view.catalogueDate ? ` (catalogue of ${view.catalogueDate})` : ''} | ${cost(last)} | ${cost(report.conversation)} |`,
  );
  const { summaries, rewrites } = report;
  if (summaries.requests > 0 || rewrites.requests > 0) {
    const summaryPart = `${summaries.requests} summary request${summaries.requests === 1 ? '' : 's'} (${tokens(summaries.input + summaries.output)} tokens, ${cost(summaries)})`;
    const rewritePart = `the cache written again after them (${tokens(rewrites.tokens)} tokens, ${rewrites.requests === 0 ? '—' : rewrites.unpriced === rewrites.requests ? 'no price known' : dollars(rewrites.cost)})`;
    lines.push('', `Compactions cost ${summaryPart} and ${rewritePart}.`);
  }
  const { subagents } = report;
  if (subagents.requests > 0) {
    const cache = subagents.cacheReported > 0 ? `, ${tokens(subagents.cacheRead)} read from the cache, ${tokens(subagents.cacheWrite)} written` : '';
    lines.push(
      '',
      `Subagents: ${subagents.requests} request${subagents.requests === 1 ? '' : 's'} (${tokens(subagents.input)} input tokens${cache}; ${tokens(subagents.output)} output), ${cost(subagents)}.`,
    );
  }
  if (report.conversation.unpriced > report.conversation.estimated) {
    lines.push('', 'A model without a known price shows its tokens only: set its prices in longrun.models.overrides.');
  }
  if (report.conversation.estimated > 0)
    lines.push(
      '',
      `${report.conversation.estimated} request${report.conversation.estimated === 1 ? ' was' : 's were'} answered by VS Code's models, which report no usage: counted by Longrun, not priced.`,
    );
  const sentence = view.cache ? cacheSentence(view.cache) : undefined;
  if (sentence) lines.push('', sentence);
  return lines;
}
