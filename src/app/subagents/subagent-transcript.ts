import type { SubagentEnding } from '../../core/log';
import type { SubagentRun } from '../../core/subagents';
import { escapeMarkdown } from '../turn/chat-text';
import { quote, renderMessage, renderSubagentEvent } from '../conversation/conversation-export';
import type { SubagentSummary } from './subagent-runner';

/**
 * What the user sees of a subagent: its line in the chat when it ends (task, how it ended, time,
 * tokens, cost), and its whole transcript, read back from the conversation's log, as the read-only
 * document the chat's "Show transcript" button opens.
 */

/** Longest part of a task the chat's line shows. */
const TASK_CHARS = 100;

const ENDINGS: Record<SubagentEnding | 'interrupted', string> = {
  reported: 'reported',
  failed: 'failed',
  cancelled: 'was stopped',
  interrupted: 'was cut short (no end was recorded: a crash, or the window closed while it ran)',
};

/** The chat's line for a subagent that ended: `**Subagent** task — reported in 12 s · 6 steps · 18,400 tokens · $0.0031`. */
export function subagentLine(s: SubagentSummary): string {
  const task = s.task.replace(/\s+/g, ' ').trim();
  const shown = task.length > TASK_CHARS ? `${task.slice(0, TASK_CHARS - 1)}…` : task;
  return `**Subagent** ${escapeMarkdown(shown)} — ${ENDINGS[s.ending]} in ${seconds(s.durationMs)} · ${figures(s)}`;
}

/** Steps, tokens and, when known, cost. */
function figures(s: { readonly steps: number; readonly inputTokens: number; readonly outputTokens: number; readonly cost?: number }): string {
  const parts = [`${s.steps} step${s.steps === 1 ? '' : 's'}`, `${(s.inputTokens + s.outputTokens).toLocaleString('en-US')} tokens`];
  if (s.cost !== undefined) parts.push(money(s.cost));
  return parts.join(' · ');
}

/** A cost in US dollars, to four significant figures below a cent. */
export function money(cost: number): string {
  return cost >= 0.01 ? `$${cost.toFixed(2)}` : `$${cost.toPrecision(2)}`;
}

function seconds(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  return s < 60 ? `${s} s` : `${Math.floor(s / 60)} min ${s % 60} s`;
}

/** A subagent's transcript as Markdown: its task, how it ended, every message in order, and what the agent got back. */
export function transcriptMarkdown(run: SubagentRun): string {
  const { start, end } = run;
  const lines = [
    `# Subagent ${start.id}`,
    '',
    `Model ${start.model}; budget ${start.budget.steps} steps and ${start.budget.tokens.toLocaleString('en-US')} tokens. It ${ENDINGS[run.status]}${end ? `: ${figures(end)} in ${seconds(end.at - start.at)}` : ''}.`,
    '',
    '## Task',
    '',
    ...quote(start.task),
    ...(start.scope && start.scope.length > 0 ? ['', `Start from: ${start.scope.join(', ')}`] : []),
    '',
  ];
  for (const event of run.events) {
    if (event.kind === 'message') lines.push(...renderMessage(event.message), '');
    else lines.push(...renderSubagentEvent(event, new Set([start.id])));
  }
  if (end) lines.push('## What the agent got back', '', ...quote(end.result), '');
  return `${lines.join('\n').trimEnd()}\n`;
}
