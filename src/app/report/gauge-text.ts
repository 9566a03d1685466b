import type { BudgetAssessment, BudgetLevel, UsageBreakdown } from '../../core/budget';
import type { CompactionEntry } from '../../core/history';
import { prunedCounts, type PruningEntry } from '../../core/pruning';
import { cacheSentence, usageLines, type UsageView } from '../usage/usage-text';

/**
 * What the status-bar gauge says, as pure functions of the numbers (unit-tested in Node):
 * `$(pulse) 63% · 81k/128k`, an accessibility label, a background by level, and a tooltip that
 * breaks the window down and describes the last compaction.
 */

export interface GaugeState {
  readonly assessment: BudgetAssessment;
  readonly breakdown: UsageBreakdown;
  readonly lastCompaction?: CompactionEntry;
  /**
   * The pruning of the last compaction: alone (then `lastCompaction` is absent or older), or made
   * just before `lastCompaction`'s summary (its `pruningId`).
   */
  readonly lastPruning?: PruningEntry;
  readonly modelName?: string;
  /** How the count was made: provider-calibrated or local. */
  readonly source: 'provider+local' | 'local';
  readonly now: number;
  /** What the conversation's requests used and cost, and the state of the provider's cache. */
  readonly usage?: UsageView;
}

export type GaugeBackground = 'none' | 'warning' | 'error';

export interface GaugePresentation {
  readonly text: string;
  readonly accessibilityLabel: string;
  readonly background: GaugeBackground;
  readonly tooltipMarkdown: string;
}

export function compactNumber(n: number): string {
  if (n < 1_000) return String(Math.round(n));
  if (n < 10_000) return `${(n / 1_000).toFixed(1).replace(/\.0$/, '')}k`;
  if (n < 1_000_000) return `${Math.round(n / 1_000)}k`;
  return `${(n / 1_000_000).toFixed(2).replace(/\.?0+$/, '')}M`;
}

export function backgroundFor(level: BudgetLevel): GaugeBackground {
  switch (level) {
    case 'warning':
      return 'warning';
    case 'critical':
    case 'over':
      return 'error';
    default:
      return 'none';
  }
}

export function noConversationPresentation(): GaugePresentation {
  return {
    text: '$(pulse) no conversation',
    accessibilityLabel: 'Longrun context: no conversation yet',
    background: 'none',
    tooltipMarkdown: 'Longrun: no conversation yet. Chat with **@longrun** to start one.',
  };
}

export function gaugePresentation(state: GaugeState): GaugePresentation {
  const a = state.assessment;
  const used = compactNumber(a.used);
  if (a.level === 'unknown') {
    return {
      text: `$(pulse) ${used} tokens`,
      accessibilityLabel: `Longrun context: ${a.used.toLocaleString('en-US')} tokens, window size unknown`,
      background: 'none',
      tooltipMarkdown: tooltip(state),
    };
  }
  const percent = Math.round(a.fraction * 100);
  const expired = state.usage?.cache?.state.kind === 'expired' ? `; ${cacheSentence(state.usage.cache)}` : '';
  return {
    text: `$(pulse) ${percent}% · ${used}/${compactNumber(a.limit)}`,
    accessibilityLabel: `Longrun context ${percent}% full: ${a.used.toLocaleString('en-US')} of ${a.limit.toLocaleString('en-US')} tokens, ${a.level}${expired}`,
    background: backgroundFor(a.level),
    tooltipMarkdown: tooltip(state),
  };
}

function tooltip(state: GaugeState): string {
  const a = state.assessment;
  const b = state.breakdown;
  const rows: Array<[string, number]> = [
    ['System and tools', b.requestOverhead],
    ['Summary', b.summary],
    ['Messages', b.messages],
    ['Tool results', b.toolResults],
    ['Reserved for output', b.outputReserve],
  ];
  const lines = [`**Longrun context**${state.modelName ? ` — ${escapeMarkdown(state.modelName)}` : ''}`, '', '| | tokens |', '|---|---:|'];
  for (const [label, value] of rows) lines.push(`| ${label} | ${value.toLocaleString('en-US')} |`);
  if (a.limit > 0) {
    // The budget's limit is what the conversation may fill: the window less the output reserve.
    const free = Math.max(0, a.limit - a.used);
    lines.push(`| Free | ${free.toLocaleString('en-US')} |`);
    lines.push(`| **Window** | **${(b.window?.limit ?? a.limit + b.outputReserve).toLocaleString('en-US')}** |`);
  }
  if (b.window) {
    const reserve =
      b.outputReserve > 0
        ? `; ${b.outputReserve.toLocaleString('en-US')} of it kept for the answer, ${a.limit.toLocaleString('en-US')} for the conversation`
        : '';
    lines.push(
      '',
      `${b.window.assumed ? '$(warning) ' : ''}Window ${b.window.limit.toLocaleString('en-US')} tokens, ${escapeMarkdown(b.window.origin)}${reserve}.`,
    );
  }
  lines.push('', a.explanation);
  lines.push(
    '',
    state.source === 'provider+local'
      ? 'Counted from the provider’s last reported usage plus a local count of what came since.'
      : 'Counted locally with the tokenizer.',
  );
  const usage = state.usage ? usageLines(state.usage) : [];
  if (usage.length > 0) lines.push('', ...usage);
  const last = state.lastCompaction;
  const pruning = state.lastPruning;
  lines.push('');
  if (last && pruning && last.pruningId === pruning.id) {
    const fallback = last.fallback ? ', extractive fallback' : '';
    lines.push(
      `Last compaction: round ${last.round}, ${ago(state.now - last.createdAt)} (${last.reason}${fallback}): ${lowerFirst(pruningPhrase(pruning))}, then summarized: ${compactNumber(last.tokensBefore)} → ${compactNumber(last.tokensAfter)} tokens.`,
    );
  } else if (pruning) {
    lines.push(
      `Last compaction: ${ago(state.now - pruning.createdAt)} (${pruning.reason}): ${lowerFirst(pruningPhrase(pruning))}; no summary needed: ${compactNumber(pruning.tokensBefore)} → ${compactNumber(pruning.tokensAfter)} tokens.`,
    );
  } else if (last) {
    const fallback = last.fallback ? ', extractive fallback' : '';
    lines.push(
      `Last compaction: round ${last.round}, ${ago(state.now - last.createdAt)} (${last.reason}${fallback}): ${compactNumber(last.tokensBefore)} → ${compactNumber(last.tokensAfter)} tokens.`,
    );
  } else {
    lines.push('No compaction yet.');
  }
  lines.push('', 'Click to compact the conversation now.');
  return lines.join('\n');
}

/**
 * What a pruning did: "Pruned 5 superseded and 2 old large tool outputs (−12,400 tokens)", with ", stubbed
 * the content of 1 file write" when what write calls wrote (on disk) was replaced by a stub, and ", cut 3
 * large ones to fit the window" when outputs were cut to their head and tail.
 */
export function pruningPhrase(pruning: PruningEntry): string {
  const { superseded, old, truncated, written } = prunedCounts(pruning.outputs);
  const outputs = (n: number) => `tool output${n === 1 ? '' : 's'}`;
  const pruned =
    superseded > 0 && old > 0
      ? `${superseded} superseded and ${old} old large ${outputs(old)}`
      : superseded > 0
        ? `${superseded} superseded ${outputs(superseded)}`
        : old > 0
          ? `${old} old large ${outputs(old)}`
          : '';
  const clauses = [
    pruned ? `pruned ${pruned}` : '',
    written > 0 ? `stubbed the content of ${written} file write${written === 1 ? '' : 's'}` : '',
    truncated > 0 ? `cut ${truncated} large ${outputs(truncated)} to fit the window` : '',
  ].filter((c) => c !== '');
  const what = clauses.join(', ');
  return `${what.charAt(0).toUpperCase()}${what.slice(1)} (−${(pruning.tokensBefore - pruning.tokensAfter).toLocaleString('en-US')} tokens)`;
}

function lowerFirst(text: string): string {
  return text.charAt(0).toLowerCase() + text.slice(1);
}

function ago(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return 'just now';
  const m = Math.round(s / 60);
  if (m < 60) return `${m} min ago`;
  const h = Math.round(m / 60);
  if (h < 48) return `${h} h ago`;
  return `${Math.round(h / 24)} days ago`;
}

function escapeMarkdown(value: string): string {
  return value.replace(/[\\`*_{}[\]()#+\-.!|<>]/g, '\\$&');
}
