import { isRecord } from './errors';
import type { ConversationLog, PlanEvidence, PlanStatus, PlanStep, PlanUpdate } from './log';
import { PLAN_STATUSES } from './log-values';

export type { PlanEvidence, PlanStatus, PlanStep, PlanUpdate };

/**
 * The agent's plan: a short list of steps it writes with its `plan` tool, whole at every call (like
 * a to-do list written anew), each step pending, in progress, done or blocked, and a done step with
 * the evidence it rests on (files the agent changed, commands it ran). Each call is a record of the
 * log, so the plan follows the chat's branches, survives reloads, and is carried whole through every
 * compaction (`work-state.ts`); the evidence is checked against the record (`plan-check.ts`).
 *
 * The bounds keep the plan a plan, and its share of every view small.
 */
export const PLAN_LIMITS = {
  /** Steps in a plan. */
  steps: 50,
  /** Characters of a step's text. */
  stepChars: 200,
  /** Files and commands a step names together. */
  evidenceItems: 10,
  /** Characters of one file or command of the evidence. */
  evidenceChars: 200,
  /** Characters of a step's note. */
  noteChars: 200,
} as const;

/** Said after every refusal: a refused update changes nothing. */
export const NOTHING_WRITTEN = 'Nothing was written; the plan is as it was.';

/** What the `plan` tool was given, read: the steps, or why they are refused. */
export type PlanInput = { readonly ok: true; readonly steps: PlanStep[] } | { readonly ok: false; readonly error: string };

/**
 * Reads the `plan` tool's input: `{ steps: [{ step, status, evidence?: { files?, commands? }, note? }] }`,
 * within `PLAN_LIMITS`, at most one step in progress. Text is trimmed; empty evidence lists and
 * notes are left out. A refusal names the first problem (and how many more there are) and the bound
 * it breaks, without repeating the input.
 */
export function readPlanInput(input: unknown): PlanInput {
  const steps = isRecord(input) ? input.steps : undefined;
  if (!Array.isArray(steps)) {
    return refuse([
      'The plan must be an object {"steps": [...]}, each step {"step": "what to do", "status": "pending" | "in_progress" | "done" | "blocked", "evidence"?: {"files"?: [...], "commands"?: [...]}, "note"?: "..."}.',
    ]);
  }
  if (steps.length > PLAN_LIMITS.steps) {
    return refuse([`The plan has ${steps.length} steps; a plan may have at most ${PLAN_LIMITS.steps}. Group the work into fewer, larger steps.`]);
  }
  const problems: string[] = [];
  const read: PlanStep[] = [];
  steps.forEach((raw: unknown, index) => {
    const step = readStep(raw, index + 1, problems);
    if (step) read.push(step);
  });
  const running = read.flatMap((s, i) => (s.status === 'in_progress' ? [i + 1] : []));
  if (running.length > 1) problems.push(`Steps ${running.join(', ')} are all in_progress; at most one step may be in progress at a time.`);
  return problems.length > 0 ? refuse(problems) : { ok: true, steps: read };
}

function refuse(problems: readonly string[]): PlanInput {
  const more = problems.length > 1 ? ` (and ${problems.length - 1} more problem${problems.length === 2 ? '' : 's'})` : '';
  return { ok: false, error: `${problems[0]}${more} ${NOTHING_WRITTEN}` };
}

const STATUS_SET: ReadonlySet<string> = new Set(PLAN_STATUSES);

function readStep(raw: unknown, number: number, problems: string[]): PlanStep | undefined {
  if (!isRecord(raw)) {
    problems.push(`Step ${number} is not an object {"step", "status"}.`);
    return undefined;
  }
  const text = typeof raw.step === 'string' ? raw.step.trim() : '';
  if (text === '') problems.push(`Step ${number} has no text ("step").`);
  else if (text.length > PLAN_LIMITS.stepChars) {
    problems.push(`Step ${number} has ${text.length} characters; a step may have at most ${PLAN_LIMITS.stepChars}. Say it shorter, or split it.`);
  }
  const status = raw.status;
  if (typeof status !== 'string' || !STATUS_SET.has(status)) {
    problems.push(`Step ${number} has status ${JSON.stringify(status ?? null)}; it must be one of ${PLAN_STATUSES.join(', ')}.`);
  }
  const evidence = readEvidence(raw.evidence, number, problems);
  const note = raw.note === undefined || raw.note === null ? undefined : typeof raw.note === 'string' ? raw.note.trim() : undefined;
  if (raw.note !== undefined && raw.note !== null && typeof raw.note !== 'string') problems.push(`Step ${number}'s note must be text.`);
  else if (note !== undefined && note.length > PLAN_LIMITS.noteChars) {
    problems.push(`Step ${number}'s note has ${note.length} characters; a note may have at most ${PLAN_LIMITS.noteChars}.`);
  }
  if (text === '' || typeof status !== 'string' || !STATUS_SET.has(status)) return undefined;
  return {
    step: text,
    status: status as PlanStatus,
    ...(evidence ? { evidence } : {}),
    ...(note ? { note } : {}),
  };
}

function readEvidence(raw: unknown, number: number, problems: string[]): PlanEvidence | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (!isRecord(raw)) {
    problems.push(`Step ${number}'s evidence must be an object {"files"?: [...], "commands"?: [...]}.`);
    return undefined;
  }
  const files = readList(raw.files, `Step ${number}'s evidence files`, problems);
  const commands = readList(raw.commands, `Step ${number}'s evidence commands`, problems);
  const count = (files?.length ?? 0) + (commands?.length ?? 0);
  if (count > PLAN_LIMITS.evidenceItems) {
    problems.push(
      `Step ${number} names ${count} pieces of evidence; a step may name at most ${PLAN_LIMITS.evidenceItems} files and commands together.`,
    );
  }
  if (count === 0) return undefined;
  return { ...(files?.length ? { files } : {}), ...(commands?.length ? { commands } : {}) };
}

function readList(raw: unknown, what: string, problems: string[]): string[] | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (!Array.isArray(raw) || raw.some((item) => typeof item !== 'string')) {
    problems.push(`${what} must be a list of text.`);
    return undefined;
  }
  const items = (raw as string[]).map((item) => item.trim()).filter((item) => item !== '');
  const long = items.find((item) => item.length > PLAN_LIMITS.evidenceChars);
  if (long !== undefined) {
    problems.push(`${what} hold one of ${long.length} characters; each may have at most ${PLAN_LIMITS.evidenceChars}.`);
  }
  return [...new Set(items)];
}

/** The latest plan on a branch's log (before position `end`), with its position; undefined before the agent made one. */
export function latestPlan(log: ConversationLog, end = log.length): { readonly update: PlanUpdate; readonly index: number } | undefined {
  for (let i = Math.min(end, log.length) - 1; i >= 0; i--) {
    const record = log[i]!;
    if (record.type === 'plan') return { update: record.plan, index: i };
  }
  return undefined;
}

/** Whether two plans say the same: the same steps, statuses, evidence and notes, in the same order. */
export function samePlan(a: readonly PlanStep[], b: readonly PlanStep[]): boolean {
  return a.length === b.length && a.every((step, i) => stepKey(step) === stepKey(b[i]!));
}

function stepKey(step: PlanStep): string {
  return JSON.stringify([step.step, step.status, step.evidence?.files ?? [], step.evidence?.commands ?? [], step.note ?? '']);
}

/** A command line as commands are compared: its words, single-spaced. */
export function commandKey(command: string): string {
  return command.trim().replace(/\s+/g, ' ');
}

/** How many steps have each status. */
export function statusCounts(steps: readonly PlanStep[]): Readonly<Record<PlanStatus, number>> {
  const counts: Record<PlanStatus, number> = { pending: 0, in_progress: 0, done: 0, blocked: 0 };
  for (const step of steps) counts[step.status]++;
  return counts;
}
