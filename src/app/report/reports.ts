import type { ComputedCompaction } from '../../core/compaction';
import { activeEntries, type CompactionEntry, type CompactionStep } from '../../core/history';
import type { Conversation } from '../conversation/conversation';
import { latestSummaries } from '../compaction/summary-edit';
import { compactNumber, gaugePresentation, pruningPhrase } from './gauge-text';
import type { UsageView } from '../usage/usage-text';

/** Markdown for `/context`, "Show Context Usage" and `/summary`, "Show Compaction Summary". */

export function contextReport(conversation: Conversation, modelName: string | undefined, now: number, usage?: UsageView): string {
  const count = conversation.count();
  const step = conversation.lastStep();
  const presentation = gaugePresentation({
    assessment: conversation.assess(),
    breakdown: conversation.breakdown(),
    source: count.source,
    now,
    ...(usage ? { usage } : {}),
    ...(step?.compaction ? { lastCompaction: step.compaction } : {}),
    ...(step?.pruning ? { lastPruning: step.pruning } : {}),
    ...(modelName ? { modelName } : {}),
  });
  const lines = [presentation.tooltipMarkdown.replace(/\n\nClick to compact the conversation now\.$/, '')];
  // An edited summary is one compaction: its row is the edit's.
  const entries = latestSummaries(activeEntries(conversation.log()));
  if (entries.length) {
    lines.push('', '| round | when | reason | before → after | summarizer |', '|---:|---|---|---|---|');
    for (const e of entries) {
      lines.push(
        `| ${e.round} | ${new Date(e.createdAt).toISOString().replace('T', ' ').slice(0, 16)} | ${e.reason} | ${e.tokensBefore.toLocaleString('en-US')} → ${e.tokensAfter.toLocaleString('en-US')} | ${e.fallback ? 'extractive fallback' : e.model}${e.editOf ? ', edited by you' : ''} |`,
      );
    }
  }
  const prunings = conversation.prunings();
  if (prunings.length) {
    const outputs = prunings.reduce((sum, p) => sum + p.outputs.length, 0);
    const freed = prunings.reduce((sum, p) => sum + p.tokensBefore - p.tokensAfter, 0);
    lines.push(
      '',
      `${outputs} tool output${outputs === 1 ? '' : 's'} pruned in ${prunings.length} pruning${prunings.length === 1 ? '' : 's'} (−${freed.toLocaleString('en-US')} tokens when pruned); the agent gets them back with its recall tool.`,
    );
  }
  if (count.source === 'provider+local') {
    lines.push('', `Local tokenizer count of the same view: ${count.localTokens.toLocaleString('en-US')} tokens.`);
  }
  return lines.join('\n');
}

/**
 * One sentence on what a compaction did, each tier with what it freed, for the chat and the
 * notification: "Pruned 7 superseded tool outputs (−12,400 tokens); no summary needed: 41k → 28k
 * tokens", "Pruned 3 … (−2,100 tokens), then summarized 30 messages: 41k → 8k tokens (round 2)", or
 * "Compacted 30 messages: 41k → 8k tokens (round 2)".
 */
export function compactionSentence(compaction: ComputedCompaction): string {
  const numbers = `${compactNumber(compaction.tokensBefore)} → ${compactNumber(compaction.tokensAfter)} tokens`;
  const { entry, pruning } = compaction;
  if (!entry) return pruning ? `${pruningPhrase(pruning)}; no summary needed: ${numbers}` : `Nothing changed: ${numbers}`;
  const summarized = `${compaction.compactedCount} messages: ${numbers} (round ${entry.round})`;
  return pruning ? `${pruningPhrase(pruning)}, then summarized ${summarized}` : `Compacted ${summarized}`;
}

/** What an undo brought back, for the notification. */
export function undoSentence(step: CompactionStep): string {
  if (step.compaction?.editOf)
    return `undid your edit of the summary of round ${step.compaction.round}; the summary before it is back (undo again to bring back the original messages).`;
  const messages = step.compaction ? `the ${step.compaction.compactedMessageIds.length} original messages` : '';
  const outputs = step.pruning ? `${step.pruning.outputs.length} pruned tool output${step.pruning.outputs.length === 1 ? '' : 's'}` : '';
  if (step.compaction && step.pruning)
    return `undid compaction round ${step.compaction.round} and the pruning made with it; ${messages} and ${outputs} are back.`;
  if (step.compaction) return `undid compaction round ${step.compaction.round}; ${messages} are back.`;
  return `undid the pruning; the ${outputs} are back in full.`;
}

export function summaryReport(entry: CompactionEntry): string {
  const meta = [
    `Round ${entry.round}`,
    entry.reason,
    `${entry.tokensBefore.toLocaleString('en-US')} → ${entry.tokensAfter.toLocaleString('en-US')} tokens`,
    `${entry.compactedMessageIds.length} messages summarized`,
    entry.fallback ? `extractive fallback (${entry.failure ?? 'summarizer failed'})` : `by ${entry.model}`,
    ...(entry.editOf ? ['edited by you'] : []),
    new Date(entry.createdAt).toISOString(),
  ];
  const focus = entry.focus ? `\n\nFocus: ${entry.focus}` : '';
  return `# Longrun compaction summary\n\n*${meta.join(' · ')}*${focus}\n\n---\n\n${entry.summary}\n`;
}
