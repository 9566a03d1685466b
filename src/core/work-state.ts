import { isSummaryMessage, type ConversationLog } from './history';
import { stringifyOutput, type Message, type ToolCallPart, type ToolResultPart } from './messages';
import { checkPlan } from './plan-check';
import { planCounts, planLines } from './plan-text';
import { normalizePath } from './text';
import { TOOL_NAMES } from './tool-names';

/**
 * Where the work stands, carried whole through every compaction: a block the engine appends to each
 * summary, made from the branch's log when the summary is applied (as the file lists are), never left
 * to the summarizer. It holds
 *
 * - the plan as its last update left it, word for word, each done step with the check's mark
 *   (`plan-check.ts`);
 * - where the agent is: the step in progress, the last tool call and the first lines of its result
 *   (or that its result is kept after the summary, where it is whole), and the files the agent
 *   changed since that step began (since the latest request without one);
 * - the user's latest request, said to be the one kept after the summary (a compaction always keeps
 *   it), or word for word when the view would not hold it;
 * - in a turn under way, that the agent goes on with its step without waiting for the user.
 *
 * Without a plan, the block is made only in the middle of a turn (the agent's calls came last): at
 * the start of one, or after an answer, there is nowhere to be.
 *
 * The block is removed and made anew at every compaction, so it never repeats, and takes at most
 * `WORK_STATE_MAX_TOKENS`: a plan too long for it keeps the step in progress, the steps still to do
 * and the latest done ones.
 */

export const WORK_STATE_OPEN = '<work-state>';
export const WORK_STATE_CLOSE = '</work-state>';

/** Most tokens the block takes. */
export const WORK_STATE_MAX_TOKENS = 2_000;

/** First lines of the last tool call's result shown, each cut at `RESULT_LINE_CHARS`. */
const RESULT_LINES = 5;
const RESULT_LINE_CHARS = 200;
/** The last call's arguments, cut at this many characters. */
const ARGUMENT_CHARS = 300;
/** Files changed since the step began, listed by name up to this many. */
const CHANGED_FILES = 20;
/** A latest request the view would not hold takes at most this share of the block. */
const REQUEST_SHARE = 0.4;

const BLOCK = /<work-state>[\s\S]*?<\/work-state>[ \t]*\n?/g;
const TAG_LINE = /^[ \t]*<\/?work-state>[ \t]*\n?/gm;

/**
 * Removes `<work-state>` blocks: a summarizer that copies the previous summary's block, or a fallback
 * that quotes it, would otherwise carry a stale copy beside the one made for this round.
 */
export function stripWorkState(text: string): string {
  if (!text.includes('work-state>')) return text;
  return text
    .replace(BLOCK, '')
    .replace(TAG_LINE, '')
    .replace(/\n{3,}/g, '\n\n')
    .trimEnd();
}

/** The block a summary carries ('' when it carries none): the last one, should a summary hold several. */
export function workStateOf(summary: string): string {
  return [...summary.matchAll(BLOCK)].at(-1)?.[0].trimEnd() ?? '';
}

/** What the block is made from besides the log. */
export interface WorkStateInput {
  /** The branch's log as the summary is applied to it. */
  readonly log: ConversationLog;
  /** The messages that stay in the model's view beside the summary. */
  readonly inView: readonly Message[];
  readonly countText: (value: string) => number;
  /** Most tokens the block may take; `WORK_STATE_MAX_TOKENS` when absent. */
  readonly budgetTokens?: number;
}

/** The block for a summary applied to `input.log`; '' when there is no plan and no turn under way. */
export function renderWorkState(input: WorkStateInput): string {
  const { log, countText } = input;
  const budget = input.budgetTokens ?? WORK_STATE_MAX_TOKENS;
  const plan = checkPlan(log);
  const turn = turnState(log);
  if (!plan && turn !== 'working') return '';

  const inProgress = plan?.steps.findIndex((s) => s.status === 'in_progress') ?? -1;
  const step = plan && inProgress >= 0 ? plan.steps[inProgress]! : undefined;
  const began = step ? stepBegan(log, step.step, plan!.index) : latestRequestAt(log);
  const head = ["Where the work stands (Longrun keeps this from the conversation's record; the summarizer did not write it):"];
  const where: string[] = [];
  if (plan) where.push(step ? `Step in progress: ${inProgress + 1}. ${step.step}` : 'Step in progress: none.');
  where.push(...lastCall(log, input.inView));
  where.push(changedSince(log, began, step ? 'since that step began' : 'since the latest request'));
  where.push(...latestRequest(log, input.inView, Math.floor(budget * REQUEST_SHARE), countText));
  where.push(directive(turn, plan !== undefined));
  const frame = [WORK_STATE_OPEN, ...head, ...where, WORK_STATE_CLOSE];
  if (!plan) return frame.join('\n');
  const title = `The plan, as its last update left it (${planCounts(plan.steps)}; done steps checked against the record):`;
  const room = budget - countText([...frame, title].join('\n')) - 1;
  const lines = planLines(plan.steps, Math.max(0, room), countText);
  return [WORK_STATE_OPEN, ...head, title, ...lines, ...where, WORK_STATE_CLOSE].join('\n');
}

/** What the agent is told to do next: in a turn under way, go on at once; a compaction never ends a turn. */
function directive(turn: TurnState, planned: boolean): string {
  switch (turn) {
    case 'answered':
      return 'The last request was answered: go on with the plan when the user asks.';
    case 'asked':
      return "Answer the user's latest request, which follows this summary; go on with the plan if it asks you to.";
    case 'working': {
      const what = planned ? 'the step in progress (or the next pending one)' : "the user's latest request";
      return `The turn is under way: go on with ${what} now, without waiting for the user to say "continue".`;
    }
  }
}

/**
 * Where the branch's turn stands, by its last message: a final answer (`answered`), the user's
 * request not yet worked on (`asked`), or the agent at work on it (`working`: its tool calls and
 * their results came last).
 */
export type TurnState = 'answered' | 'asked' | 'working';

export function turnState(log: ConversationLog): TurnState {
  for (let i = log.length - 1; i >= 0; i--) {
    const record = log[i]!;
    if (record.type !== 'message' || isSummaryMessage(record.message)) continue;
    const message = record.message;
    if (message.role === 'system') continue;
    if (message.role === 'user') return 'asked';
    return message.role === 'assistant' && !message.content.some((p) => p.type === 'tool-call') ? 'answered' : 'working';
  }
  return 'answered';
}

/** Where the step of text `text` last began: the first update of the latest run in which it is in progress. */
function stepBegan(log: ConversationLog, text: string, at: number): number {
  let since = at;
  for (let i = at; i >= 0; i--) {
    const record = log[i]!;
    if (record.type !== 'plan') continue;
    if (!record.plan.steps.some((s) => s.step === text && s.status === 'in_progress')) break;
    since = i;
  }
  return since;
}

/** Where the latest request of the user is in the log (0 when there is none). */
function latestRequestAt(log: ConversationLog): number {
  for (let i = log.length - 1; i >= 0; i--) {
    const record = log[i]!;
    if (record.type === 'message' && record.message.role === 'user' && !isSummaryMessage(record.message)) return i;
  }
  return 0;
}

/** The files the agent wrote after position `from`, as one line. */
function changedSince(log: ConversationLog, from: number, when: string): string {
  const paths: string[] = [];
  for (let i = from + 1; i < log.length; i++) {
    const record = log[i]!;
    const path =
      record.type === 'change'
        ? record.change.path
        : record.type === 'file' && record.event.actor === 'agent' && record.event.kind !== 'read'
          ? record.event.path
          : undefined;
    if (path !== undefined && !paths.includes(normalizePath(path))) paths.push(normalizePath(path));
  }
  const shown = paths.slice(0, CHANGED_FILES).join(', ');
  const more = paths.length > CHANGED_FILES ? `, and ${paths.length - CHANGED_FILES} more` : '';
  return `Files the agent changed ${when}: ${paths.length > 0 ? `${shown}${more}` : 'none'}.`;
}

/**
 * The last tool call on the branch and the first lines of its result; only said to be kept when its
 * result stays in the view after the summary (where it is whole).
 */
function lastCall(log: ConversationLog, inView: readonly Message[]): string[] {
  let call: ToolCallPart | undefined;
  let at = -1;
  for (let i = log.length - 1; i >= 0 && !call; i--) {
    const record = log[i]!;
    if (record.type !== 'message' || record.message.role !== 'assistant') continue;
    // A message held without its content (taken out of the view and let go) says nothing of its calls.
    if (record.message.content.length === 0) return [];
    call = record.message.content.filter((p): p is ToolCallPart => p.type === 'tool-call').at(-1);
    at = i;
  }
  if (!call) return [];
  const shown =
    call.toolName === TOOL_NAMES.plan
      ? `${call.toolName} (the update above)`
      : `${call.toolName} ${cut(oneLine(stringifyOutput(call.input)), ARGUMENT_CHARS)}`;
  const found = resultOf(log, call.toolCallId, at);
  if (!found) return [`Last tool call: ${shown}; it has no result yet.`];
  if (inView.some((m) => m.id === found.messageId)) return [`Last tool call: ${shown}; its result is kept after this summary.`];
  const result = found.part;
  const lines = stringifyOutput(result.output)
    .split('\n')
    .filter((line) => line.trim() !== '');
  const first = lines.slice(0, RESULT_LINES).map((line) => `    ${cut(line, RESULT_LINE_CHARS)}`);
  const more = lines.length > RESULT_LINES ? [`    (${lines.length - RESULT_LINES} more lines)`] : [];
  return [`Last tool call: ${shown}; ${result.isError ? 'it failed, and its result' : 'its result'} began:`, ...first, ...more];
}

function resultOf(log: ConversationLog, id: string, after: number): { readonly part: ToolResultPart; readonly messageId: string } | undefined {
  for (let i = after; i < log.length; i++) {
    const record = log[i]!;
    if (record.type !== 'message') continue;
    const part = record.message.content.find((p): p is ToolResultPart => p.type === 'tool-result' && p.toolCallId === id);
    if (part) return { part, messageId: record.message.id };
  }
  return undefined;
}

/**
 * Where the user's latest request is: kept after the summary (a compaction always keeps it), or, when
 * the view would not hold it, the request itself, cut to `maxTokens` with a marker.
 */
function latestRequest(log: ConversationLog, inView: readonly Message[], maxTokens: number, countText: (value: string) => number): string[] {
  const at = latestRequestAt(log);
  const record = log[at];
  if (record?.type !== 'message' || record.message.role !== 'user') return [];
  if (inView.some((m) => m.id === record.message.id)) return ["The user's latest request is kept word for word after this summary."];
  const text = record.message.content
    .map((p) => (p.type === 'text' ? p.text : ''))
    .join('\n')
    .trim();
  if (text === '') return [];
  return ["The user's latest request, word for word:", ...quoted(text, maxTokens, countText)];
}

function quoted(text: string, maxTokens: number, countText: (value: string) => number): string[] {
  const total = countText(text);
  let kept = text;
  if (total > maxTokens) {
    kept = text.slice(0, Math.max(0, Math.floor((text.length * maxTokens) / total) - 80));
    while (kept.length > 0 && countText(kept) > maxTokens - 30) kept = kept.slice(0, Math.floor(kept.length * 0.9));
    kept = `${kept.trimEnd()}\n[… the request goes on: the rest is in the conversation's history]`;
  }
  return kept.split('\n').map((line) => `> ${line}`);
}

function oneLine(value: string): string {
  return value.replace(/\s+/g, ' ').trim();
}

function cut(value: string, max: number): string {
  return value.length > max ? `${value.slice(0, max)}…` : value;
}
