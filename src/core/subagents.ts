import type { ConversationLog, SubagentCompacted, SubagentEnd, SubagentEnding, SubagentEvent, SubagentStart } from './log';
import { stringifyOutput, type Message, type ToolCallPart } from './messages';
import { normalizePath } from './text';
import { TOOL_NAMES } from './tool-names';

/**
 * A subagent is a second agent loop the agent hands a self-contained task to (its `delegate` tool):
 * it runs with its own conversation, read-only tools and budgets, and the agent gets back only its
 * report. Its records (`subagent` in `log.ts`) are written to the log of the turn that started it,
 * so they follow the chat's branches, survive reloads and crashes, and `recall` and the export find
 * them; they never enter the agent's view. This file reads them back and says what a subagent did,
 * deterministically, from its tool calls: what the agent is told rests on that, never on the model
 * alone, and a failure always comes back as text that says so.
 */

/** A subagent's records, read back together. */
export interface SubagentRun {
  readonly start: SubagentStart;
  /** Its records in the order they were written: messages and compactions (the end apart). */
  readonly events: readonly SubagentEvent[];
  /** Its conversation's messages, oldest first. */
  readonly messages: readonly Message[];
  readonly end?: SubagentEnd;
  /** How it ended; `interrupted` when no end was written (a crash, a reload while it ran). */
  readonly status: SubagentEnding | 'interrupted';
}

/** The subagents of a log, in the order they started; records of a subagent whose start is missing are left out. */
export function subagentRuns(log: ConversationLog): SubagentRun[] {
  const runs = new Map<string, { start: SubagentStart; events: SubagentEvent[]; messages: Message[]; end?: SubagentEnd }>();
  for (const record of log) {
    if (record.type !== 'subagent') continue;
    const event = record.subagent;
    if (event.kind === 'start') {
      if (!runs.has(event.id)) runs.set(event.id, { start: event, events: [], messages: [] });
      continue;
    }
    const run = runs.get(event.id);
    if (!run || run.end) continue;
    if (event.kind === 'end') run.end = event;
    else {
      run.events.push(event);
      if (event.kind === 'message') run.messages.push(event.message);
    }
  }
  return [...runs.values()].map((run) => ({ ...run, status: run.end?.ending ?? 'interrupted' }));
}

/** One file a subagent read, and the line ranges it read, merged and in order. */
export interface FileRead {
  readonly path: string;
  readonly ranges: ReadonlyArray<readonly [number, number]>;
  /** Lines the file had when it was last read. */
  readonly totalLines?: number;
}

/** What a subagent's tool calls did, read from their results. */
export interface WorkDone {
  readonly reads: readonly FileRead[];
  readonly searches: ReadonlyArray<{ readonly query: string; readonly glob?: string; readonly matches: number }>;
  readonly listings: readonly string[];
  readonly commands: ReadonlyArray<{ readonly command: string; readonly exitCode?: string }>;
  readonly recalls: number;
  /** Tool calls that failed (their result was an error). */
  readonly failed: number;
  /** Tool calls made, answered or not. */
  readonly calls: number;
}

/** The first line of a `read_file` result: `path (lines a-b of n)`. */
const READ_HEADER = /^(.+) \(lines (\d+)-(\d+) of (\d+)\)$/;
/** A match line of a `search_text` result: `path:line: text`. */
const MATCH_LINE = /^[^\n:]+:\d+: /;
const EXIT_CODE = /^Exit code: (.+)$/m;

/** What the tool calls of `messages` did, from each call and its result (a call without a result counts as made). */
export function workDone(messages: readonly Message[]): WorkDone {
  const calls = new Map<string, ToolCallPart>();
  const reads = new Map<string, { ranges: Array<[number, number]>; totalLines?: number }>();
  const searches: Array<{ query: string; glob?: string; matches: number }> = [];
  const listings: string[] = [];
  const commands: Array<{ command: string; exitCode?: string }> = [];
  let recalls = 0;
  let failed = 0;
  for (const message of messages) {
    for (const part of message.content) {
      if (part.type === 'tool-call') calls.set(part.toolCallId, part);
      if (part.type !== 'tool-result') continue;
      const output = stringifyOutput(part.output);
      if (part.isError || output.startsWith('Error:')) {
        failed++;
        continue;
      }
      const input = (calls.get(part.toolCallId)?.input ?? {}) as Record<string, unknown>;
      switch (part.toolName) {
        case TOOL_NAMES.readFile: {
          const header = READ_HEADER.exec(output.split('\n', 1)[0] ?? '');
          if (!header) break;
          const path = normalizePath(header[1]!);
          const entry = reads.get(path) ?? { ranges: [] };
          entry.ranges.push([Number(header[2]), Number(header[3])]);
          entry.totalLines = Number(header[4]);
          reads.set(path, entry);
          break;
        }
        case TOOL_NAMES.searchText:
          searches.push({
            query: String(input.query ?? ''),
            ...(typeof input.glob === 'string' ? { glob: input.glob } : {}),
            matches: output.split('\n').filter((line) => MATCH_LINE.test(line)).length,
          });
          break;
        case TOOL_NAMES.listFiles:
          listings.push(String(input.glob ?? ''));
          break;
        case TOOL_NAMES.runCommand: {
          const exitCode = EXIT_CODE.exec(output)?.[1];
          commands.push({ command: String(input.command ?? ''), ...(exitCode !== undefined ? { exitCode } : {}) });
          break;
        }
        case TOOL_NAMES.recall:
          recalls++;
          break;
        default:
          break;
      }
    }
  }
  return {
    reads: [...reads].map(([path, r]) => ({
      path,
      ranges: mergeRanges(r.ranges),
      ...(r.totalLines !== undefined ? { totalLines: r.totalLines } : {}),
    })),
    searches,
    listings,
    commands,
    recalls,
    failed,
    calls: calls.size,
  };
}

/** Ranges sorted and merged where they overlap or touch. */
export function mergeRanges(ranges: ReadonlyArray<readonly [number, number]>): Array<[number, number]> {
  const sorted = [...ranges].sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const merged: Array<[number, number]> = [];
  for (const [from, to] of sorted) {
    const last = merged.at(-1);
    if (last && from <= last[1] + 1) last[1] = Math.max(last[1], to);
    else merged.push([from, to]);
  }
  return merged;
}

/** Most files, searches and commands `describeWork` names; the rest are counted. */
const LISTED = 25;

/**
 * What a subagent did, as lines for the agent and the user: the files it read with their line
 * ranges, its searches, listings and commands. "No tool call finished." when there were none.
 */
export function describeWork(work: WorkDone): string[] {
  const lines: string[] = [];
  const more = (count: number, what: string): string[] => (count > LISTED ? [`- and ${count - LISTED} more ${what}`] : []);
  if (work.reads.length > 0) {
    lines.push('Files read (lines):');
    for (const read of work.reads.slice(0, LISTED)) {
      const whole = read.ranges.length === 1 && read.ranges[0]![0] === 1 && read.ranges[0]![1] === read.totalLines;
      const ranges = whole ? 'all' : read.ranges.map(([a, b]) => (a === b ? `${a}` : `${a}-${b}`)).join(', ');
      lines.push(`- ${read.path}: ${ranges}${read.totalLines !== undefined ? ` of ${read.totalLines}` : ''}`);
    }
    lines.push(...more(work.reads.length, 'files'));
  }
  if (work.searches.length > 0) {
    lines.push('Searches:');
    for (const s of work.searches.slice(0, LISTED)) {
      lines.push(`- ${JSON.stringify(s.query)}${s.glob !== undefined ? ` in ${s.glob}` : ''}: ${s.matches} ${s.matches === 1 ? 'match' : 'matches'}`);
    }
    lines.push(...more(work.searches.length, 'searches'));
  }
  if (work.listings.length > 0) lines.push(`Listed: ${work.listings.slice(0, LISTED).join(', ')}${work.listings.length > LISTED ? ', …' : ''}`);
  if (work.commands.length > 0) {
    lines.push('Commands:');
    for (const c of work.commands.slice(0, LISTED)) lines.push(`- \`${c.command}\`${c.exitCode !== undefined ? ` (exit code ${c.exitCode})` : ''}`);
    lines.push(...more(work.commands.length, 'commands'));
  }
  if (work.recalls > 0) lines.push(`Searched the conversation's earlier parts ${work.recalls === 1 ? 'once' : `${work.recalls} times`}.`);
  if (work.failed > 0) lines.push(`${work.failed} tool ${work.failed === 1 ? 'call' : 'calls'} failed.`);
  return lines.length > 0 ? lines : ['No tool call finished.'];
}

/** The text of a message's text parts, joined. */
export function answerText(message: Message | undefined): string {
  if (!message) return '';
  return message.content
    .filter((p) => p.type === 'text')
    .map((p) => p.text)
    .join('\n')
    .trim();
}

/** The text of the last assistant message that has any; '' when none has. */
export function lastAnswer(messages: readonly Message[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i]!;
    if (message.role !== 'assistant') continue;
    const text = answerText(message);
    if (text !== '') return text;
  }
  return '';
}

/** What a report or a failure is made from. */
export interface ReportInput {
  readonly task: string;
  readonly work: WorkDone;
  readonly steps: number;
  readonly tokens: number;
  /** The longest the whole text may be, in tokens. */
  readonly maxTokens: number;
  readonly countText: (text: string) => number;
}

/**
 * The subagent's report as the agent gets it: its answer, cut to fit, then what Longrun knows of
 * its work from its tool calls (the files and line ranges its answer rests on), within `maxTokens`.
 */
export function reportText(answer: string, input: ReportInput): string {
  const head = `Subagent report (${plural(input.steps, 'step')}, ${input.tokens.toLocaleString('en-US')} tokens):`;
  const tail = [
    '',
    "What the subagent's tool calls show (recorded by Longrun):",
    ...describeWork(input.work),
    '',
    'Its whole transcript is kept in the conversation; the recall tool finds what it read.',
  ].join('\n');
  return `${head}\n\n${fit(answer, input.maxTokens - input.countText(`${head}\n\n\n${tail}`), input.countText)}\n${tail}`;
}

/**
 * The failure the agent gets instead of a report: `Subagent failed: <reason>. Done so far: …`, with
 * what its tool calls did and its last notes (an answer cut short), within `maxTokens`.
 */
export function failureText(reason: string, notes: string, input: ReportInput): string {
  const head = `Subagent failed: ${reason.replace(/\.$/, '')}. Done so far (${plural(input.steps, 'step')}, ${input.tokens.toLocaleString('en-US')} tokens):`;
  const work = describeWork(input.work).join('\n');
  const advice =
    'Its transcript is kept in the conversation; the recall tool finds what it read. Do the rest yourself, or delegate it again with a narrower task.';
  if (notes === '') return `${head}\n${work}\n\n${advice}`;
  const room = input.maxTokens - input.countText(`${head}\n${work}\n\nIts last notes:\n\n\n${advice}`);
  return `${head}\n${work}\n\nIts last notes:\n${fit(notes, room, input.countText)}\n\n${advice}`;
}

/** `text` within `budget` tokens, cut at a line end near the limit with a note saying so. */
function fit(text: string, budget: number, countText: (text: string) => number): string {
  if (countText(text) <= budget) return text;
  const note = '\n[… cut to fit the report; the rest is in the transcript]';
  const room = Math.max(0, budget - countText(note));
  let low = 0;
  let high = text.length;
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (countText(text.slice(0, mid)) <= room) low = mid;
    else high = mid - 1;
  }
  const cut = text.slice(0, low);
  const lineEnd = cut.lastIndexOf('\n');
  return `${lineEnd > low * 0.8 ? cut.slice(0, lineEnd) : cut}${note}`;
}

/** What a subagent's last step is told when its budget is nearly spent (sent with tool use off). */
export const WRAP_UP =
  'Your budget is nearly spent: this is your last step and no tool will run. Write your report now from what you have found: the findings, the files and line ranges they rest on, and what you did not finish.';

/** Whether a compaction event of `run`. */
export function isCompacted(event: SubagentEvent): event is SubagentCompacted {
  return event.kind === 'compacted';
}

function plural(count: number, word: string): string {
  return `${count} ${word}${count === 1 ? '' : 's'}`;
}
