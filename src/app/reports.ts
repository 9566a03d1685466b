import { activeEntries, type CompactionEntry } from '../core/history';
import type { Conversation } from './conversation';
import { gaugePresentation } from './gauge-text';

/** Markdown for `/context`, "Show Context Usage" and `/summary`, "Show Compaction Summary". */

export function contextReport(conversation: Conversation, modelName: string | undefined, now: number): string {
  const count = conversation.count();
  const presentation = gaugePresentation({
    assessment: conversation.assess(),
    breakdown: conversation.breakdown(),
    source: count.source,
    now,
    ...(conversation.lastCompaction() ? { lastCompaction: conversation.lastCompaction()! } : {}),
    ...(modelName ? { modelName } : {}),
  });
  const lines = [presentation.tooltipMarkdown.replace(/\n\nClick to compact the conversation now\.$/, '')];
  const entries = activeEntries(conversation.log());
  if (entries.length) {
    lines.push('', '| round | when | reason | before → after | summarizer |', '|---:|---|---|---|---|');
    for (const e of entries) {
      lines.push(
        `| ${e.round} | ${new Date(e.createdAt).toISOString().replace('T', ' ').slice(0, 16)} | ${e.reason} | ${e.tokensBefore.toLocaleString('en-US')} → ${e.tokensAfter.toLocaleString('en-US')} | ${e.fallback ? 'extractive fallback' : e.model} |`,
      );
    }
  }
  if (count.source === 'provider+local') {
    lines.push('', `Local tokenizer count of the same view: ${count.localTokens.toLocaleString('en-US')} tokens.`);
  }
  return lines.join('\n');
}

export function summaryReport(entry: CompactionEntry): string {
  const meta = [
    `Round ${entry.round}`,
    entry.reason,
    `${entry.tokensBefore.toLocaleString('en-US')} → ${entry.tokensAfter.toLocaleString('en-US')} tokens`,
    `${entry.compactedMessageIds.length} messages summarized`,
    entry.fallback ? `extractive fallback (${entry.failure ?? 'summarizer failed'})` : `by ${entry.model}`,
    new Date(entry.createdAt).toISOString(),
  ];
  const focus = entry.focus ? `\n\nFocus: ${entry.focus}` : '';
  return `# Longrun compaction summary\n\n*${meta.join(' · ')}*${focus}\n\n---\n\n${entry.summary}\n`;
}
