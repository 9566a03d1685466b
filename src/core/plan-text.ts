import type { CheckedStep } from './plan-check';
import type { PlanStatus } from './log';
import { statusCounts } from './plan';

/**
 * The plan as text for the model: one line per step, its number, its status (a done step with the
 * check's mark) and its words as the agent wrote them, then its evidence and note. Within a token
 * budget, the steps that matter most for going on are kept: the one in progress, then those still to
 * do in order, then the latest done; the others are named by count where they were left out.
 */

const STATUS_WORDS: Readonly<Record<PlanStatus, string>> = {
  pending: 'pending',
  in_progress: 'in progress',
  done: 'done',
  blocked: 'blocked',
};

/** A step's mark: its status, and for a done step the check's verdict when its evidence does not hold. */
export function stepMark(step: CheckedStep): string {
  return step.unverified !== undefined ? `done — unverified: ${step.unverified}` : STATUS_WORDS[step.status];
}

/** One step as a line: `3. [in progress] Wire it in · evidence: src/a.ts, \`npm test\` · note: …`. */
export function stepLine(step: CheckedStep, number: number): string {
  const evidence = [...(step.evidence?.files ?? []), ...(step.evidence?.commands ?? []).map(code)];
  const tail = [evidence.length > 0 ? `evidence: ${evidence.join(', ')}` : '', step.note ? `note: ${oneLine(step.note)}` : ''].filter(Boolean);
  return [`${number}. [${stepMark(step)}] ${oneLine(step.step)}`, ...tail].join(' · ');
}

/** A command as inline code. */
export function code(command: string): string {
  return command.includes('`') ? JSON.stringify(command) : `\`${command}\``;
}

function oneLine(value: string): string {
  return value.replace(/\s+/g, ' ').trim();
}

/** "5 steps: 2 done (1 unverified), 1 in progress, 2 pending". */
export function planCounts(steps: readonly CheckedStep[]): string {
  const counts = statusCounts(steps);
  const unverified = steps.filter((s) => s.unverified !== undefined).length;
  const parts = [
    counts.done > 0 ? `${counts.done} done${unverified > 0 ? ` (${unverified} unverified)` : ''}` : '',
    counts.in_progress > 0 ? `${counts.in_progress} in progress` : '',
    counts.pending > 0 ? `${counts.pending} pending` : '',
    counts.blocked > 0 ? `${counts.blocked} blocked` : '',
  ].filter(Boolean);
  return `${steps.length} step${steps.length === 1 ? '' : 's'}${parts.length > 0 ? `: ${parts.join(', ')}` : ''}`;
}

/**
 * The plan's lines within `budgetTokens`: all of them when they fit; otherwise the step in progress,
 * then the steps still to do (pending and blocked, in order), then the latest done steps, as many as
 * fit, in the plan's order, each run of steps left out named by a line of its own. The step in
 * progress is always kept.
 */
export function planLines(steps: readonly CheckedStep[], budgetTokens: number, countText: (value: string) => number): string[] {
  const lines = steps.map((step, i) => stepLine(step, i + 1));
  const cost = lines.map((line) => countText(line) + 1);
  if (cost.reduce((sum, c) => sum + c, 0) <= budgetTokens) return lines;
  const order = steps
    .map((step, i) => ({ step, i }))
    .sort((a, b) => priority(a.step) - priority(b.step) || (a.step.status === 'done' ? b.i - a.i : a.i - b.i));
  // Room for the lines that name what was left out: one per run, at most one per kept step and one more.
  const gapCost = countText(gapLine(steps, 0, steps.length)) + 1;
  const kept = new Set<number>();
  let used = gapCost;
  for (const { step, i } of order) {
    const extra = cost[i]! + gapCost;
    if (step.status !== 'in_progress' && used + extra > budgetTokens) continue;
    kept.add(i);
    used += extra;
  }
  const out: string[] = [];
  for (let i = 0; i < steps.length;) {
    if (kept.has(i)) {
      out.push(lines[i]!);
      i++;
      continue;
    }
    let end = i;
    while (end < steps.length && !kept.has(end)) end++;
    out.push(gapLine(steps, i, end));
    i = end;
  }
  return out;
}

function priority(step: CheckedStep): number {
  if (step.status === 'in_progress') return 0;
  return step.status === 'done' ? 2 : 1;
}

/** The line standing for steps `from` to `to` (exclusive) left out. */
function gapLine(steps: readonly CheckedStep[], from: number, to: number): string {
  const counts = statusCounts(steps.slice(from, to));
  const what = (['done', 'pending', 'blocked', 'in_progress'] as const)
    .filter((status) => counts[status] > 0)
    .map((status) => `${counts[status]} ${STATUS_WORDS[status]}`)
    .join(', ');
  const which = to - from === 1 ? `step ${from + 1}` : `steps ${from + 1}–${to}`;
  return `… (${which} left out for length: ${what})`;
}
