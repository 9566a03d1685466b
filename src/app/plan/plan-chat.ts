import type { PlanStatus } from '../../core/log';
import type { CheckedPlan, CheckedStep } from '../../core/plan-check';
import { escapeMarkdown } from '../turn/chat-text';

/**
 * The plan as the chat shows it when it changes: a heading with how far it is, then one line per
 * step with its mark. Written as Markdown in the response (not a progress line), so it stays in
 * sight when VS Code folds the steps of a finished answer.
 */

const MARKS: Readonly<Record<PlanStatus, string>> = { done: '✓', in_progress: '▸', pending: '○', blocked: '✗' };

/** The plan as Markdown, with `title` ("Plan", "The plan on this branch") before its counts. */
export function planMarkdown(plan: CheckedPlan, title = 'Plan'): string {
  const done = plan.steps.filter((s) => s.status === 'done').length;
  const unverified = plan.steps.filter((s) => s.unverified !== undefined).length;
  const counts = `${done} of ${plan.steps.length} done${unverified > 0 ? `, ${unverified} unverified` : ''}`;
  return [`\n\n**${title}** · ${counts}\n`, ...plan.steps.map(stepMarkdown), '\n'].join('\n');
}

function stepMarkdown(step: CheckedStep): string {
  const text = escapeMarkdown(step.step.replace(/\s+/g, ' ').trim());
  // The reason is Longrun's own words: its commands stay inline code.
  if (step.unverified !== undefined) return `- ⚠ ${text} — *done, unverified: ${step.unverified.replace(/[\\*_[\]]/g, '\\$&')}*`;
  const note = step.note ? ` — *${escapeMarkdown(step.note.replace(/\s+/g, ' ').trim())}*` : '';
  const shown = step.status === 'in_progress' ? `**${text}**` : text;
  return `- ${MARKS[step.status]} ${shown}${step.status === 'blocked' ? ' (blocked)' : ''}${note}`;
}
