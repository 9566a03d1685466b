/**
 * What the scripted model answers: steps a test queues, and the deterministic scenarios used when
 * none is queued (a demo agent that reads and creates the files a request names, and summaries).
 */
import { z } from 'zod';
import { contentText, type ChatCompletionRequest } from './wire';

/** The longest a scripted step may delay its answer. */
export const MAX_DELAY_MS = 10 * 60 * 1000;

// ---------------------------------------------------------------------------------------------
// Scripts and scenarios.

/** A tool call the model makes. */
export interface ToolCallStep {
  readonly name: string;
  readonly arguments: Record<string, unknown>;
}

/** The content of a reply: what the model says and which tools it calls. */
export interface Reply {
  readonly text?: string;
  /** Tool calls, in order; the finish reason becomes `tool_calls`. */
  readonly toolCalls?: readonly ToolCallStep[];
}

/** An HTTP error to answer with instead of a completion. */
export interface ErrorStep {
  readonly status: number;
  /** The JSON body; OpenAI's usual body for the status when absent. */
  readonly body?: unknown;
  /** Sent as the `Retry-After` header. */
  readonly retryAfterSeconds?: number;
}

/**
 * One scripted reply. Without `text` and `toolCalls` the scenario's reply is sent, so a step can
 * only delay or break an ordinary answer.
 */
export interface ScriptStep extends Reply {
  /** Wait this long before answering, on top of the server's latency. */
  readonly delayMs?: number;
  /** Answer with an HTTP error. */
  readonly error?: ErrorStep;
  /** Never answer: the client's timeout or abort (or `close()`) must end the request. */
  readonly hang?: boolean;
  /** Send this many SSE chunks, then destroy the socket; a non-streaming request gets no answer. */
  readonly breakStreamAfterChunks?: number;
}

// Strict, so that a misspelt field in a test's script fails loudly instead of being ignored.
export const scriptStepSchema: z.ZodType<ScriptStep> = z.strictObject({
  text: z.string().optional(),
  toolCalls: z.array(z.strictObject({ name: z.string().min(1), arguments: z.record(z.string(), z.unknown()) })).optional(),
  delayMs: z.number().int().min(0).max(MAX_DELAY_MS).optional(),
  error: z
    .strictObject({
      status: z.number().int().min(400).max(599),
      body: z.unknown().optional(),
      retryAfterSeconds: z.number().min(0).optional(),
    })
    .optional(),
  hang: z.boolean().optional(),
  breakStreamAfterChunks: z.number().int().min(0).optional(),
});

/** What a scenario decides from. */
export interface ScenarioInput {
  /** The whole parsed request. */
  readonly request: ChatCompletionRequest;
  /** Its prompt tokens, as reported in `usage`. */
  readonly promptTokens: number;
  /** The requested model's context window. */
  readonly window: number;
}

/** Decides a reply from a request. Must be deterministic. */
export type Scenario = (input: ScenarioInput) => Reply;

const PATH_EXTENSIONS =
  'md|markdown|txt|json|jsonc|ya?ml|toml|ini|cfg|lock|ts|tsx|mts|cts|js|jsx|mjs|cjs|py|rs|go|java|kt|swift|c|h|cc|cpp|hpp|cs|rb|php|html|css|scss|less|vue|svelte|sh|sql|xml|csv|env';
// A relative path ending in a known extension (README.md, src/x.ts, ./a/b.json), not part of a URL.
const PATH_SOURCE = `(?<![\\w./:@-])(?:[\\w.@-]+/)*[\\w.@-]*\\.(?:${PATH_EXTENSIONS})(?![\\w/-])`;

/** The workspace-looking paths in a text, in order of appearance, without a leading `./`. */
export function workspacePaths(text: string): string[] {
  return Array.from(text.matchAll(new RegExp(PATH_SOURCE, 'gi')), (match) => match[0].replace(/^(?:\.\/)+/, ''));
}

/** "use the skill <name>" (or "use skill <name>"), as a user asks the agent to follow one. */
const SKILL_PATTERN = /\buse (?:the )?skill [`'"]?([a-z0-9]+(?:-[a-z0-9]+)*)/i;

const CREATE_PATTERN = new RegExp(`\\bcreate\\s+(?:(?:a\\s+)?(?:new\\s+)?file\\s+)?[\`'"]?(${PATH_SOURCE})`, 'i');

function offersTool(request: ChatCompletionRequest, name: string): boolean {
  const choice = request.tool_choice;
  if (choice === 'none') return false;
  if (typeof choice === 'object' && choice.function.name !== name) return false;
  return (request.tools ?? []).some((tool) => tool.function.name === name);
}

function lastIndexOf<T>(items: readonly T[], predicate: (item: T) => boolean): number {
  for (let i = items.length - 1; i >= 0; i--) {
    if (predicate(items[i] as T)) return i;
  }
  return -1;
}

/**
 * The default scenario: a request "work through step by step: <paths>" is worked through with a
 * plan (`planScenario`); otherwise, after a tool result, a short text quoting its first line; for a
 * request asking to "use the skill <name>", a `skill` call when that tool is offered; for a request
 * naming a path, a `create_file` ("create <path>") or `read_file` call when that tool is offered;
 * otherwise an acknowledgement with the prompt's token count.
 */
export const demoScenario: Scenario = (input) => {
  const planned = planScenario(input);
  if (planned) return planned;
  const { request, promptTokens } = input;
  const { messages } = request;
  const last = messages[messages.length - 1];
  if (last?.role === 'tool') {
    const firstLine = contentText(last.content).trim().split('\n', 1)[0]?.trim().slice(0, 200) ?? '';
    return {
      text: firstLine ? `Offline scripted model: the tool returned "${firstLine}".` : 'Offline scripted model: the tool returned nothing.',
    };
  }
  const userIndex = lastIndexOf(messages, (m) => m.role === 'user');
  const user = messages[userIndex];
  const answered = messages.slice(userIndex + 1).some((m) => m.role === 'tool');
  if (user && !answered) {
    const text = contentText(user.content);
    const skill = SKILL_PATTERN.exec(text)?.[1];
    if (skill && offersTool(request, 'skill')) return { toolCalls: [{ name: 'skill', arguments: { name: skill.toLowerCase() } }] };
    const created = CREATE_PATTERN.exec(text)?.[1]?.replace(/^(?:\.\/)+/, '');
    if (created && offersTool(request, 'create_file')) {
      return {
        toolCalls: [{ name: 'create_file', arguments: { path: created, content: `Created by the offline scripted model.\n` } }],
      };
    }
    const path = workspacePaths(text)[0];
    if (path && offersTool(request, 'read_file')) {
      return { toolCalls: [{ name: 'read_file', arguments: { path } }] };
    }
  }
  return { text: `Offline scripted model: I received your message (${promptTokens} tokens in context).` };
};

/**
 * What a model that `tool_choice` does not hold back does with a summary request that offers tools:
 * it reaches for one instead of writing the summary, reading the first file the conversation names
 * (or calling the first tool offered). Undefined when no tool is offered.
 */
export function reachForTool(request: ChatCompletionRequest): Reply | undefined {
  const tools = request.tools ?? [];
  if (tools.length === 0) return undefined;
  if (offersTool(request, 'read_file')) {
    const path = request.messages.flatMap((m) => workspacePaths(contentText(m.content)))[0];
    if (path) return { toolCalls: [{ name: 'read_file', arguments: { path } }] };
  }
  return { toolCalls: [{ name: tools[0]!.function.name, arguments: {} }] };
}

const SUMMARY_MARKERS = ['## Session Summary (Compaction Round', 'Write exactly these sections'];

/** How a summary carried in the conversation begins, as the model reads it there: the words that introduce it. */
const CARRIED_SUMMARY = /^The conversation history before this point was compacted into/;

/**
 * Whether a request asks for a compaction summary: its last message is a user directive carrying
 * one of the markers. A summary carried in an ordinary conversation (it starts with the history's
 * summary prefix) is not a directive.
 */
export function isSummaryRequest(request: ChatCompletionRequest): boolean {
  const last = request.messages[request.messages.length - 1];
  if (last?.role !== 'user') return false;
  const text = contentText(last.content);
  if (CARRIED_SUMMARY.test(text)) return false;
  return SUMMARY_MARKERS.some((marker) => text.includes(marker));
}

/**
 * Answers a summary request from its input, so that tests can check what reached the summarizer:
 * the round from the directive, the original task between `<original-task>` tags, every
 * workspace path in the request, the number of messages before the directive (system messages
 * included) and the focus after "focus on:".
 */
export const summaryScenario: Scenario = ({ request }) => {
  const { messages } = request;
  const directive = contentText(messages[messages.length - 1]?.content);
  const round = /## Session Summary \(Compaction Round (\d+)\)/.exec(directive)?.[1] ?? '1';
  const task = /<original-task>([\s\S]*?)<\/original-task>/.exec(directive)?.[1]?.trim();
  const focus = /focus on:[ \t]*(.+)/i.exec(directive)?.[1]?.trim();

  const mentioned = new Set<string>();
  for (const message of messages) {
    for (const path of workspacePaths(contentText(message.content))) mentioned.add(path);
    if (message.role === 'assistant') {
      for (const call of message.tool_calls ?? []) for (const path of workspacePaths(call.function.arguments)) mentioned.add(path);
    }
  }
  const paths = [...mentioned].sort();

  const lines = [
    `## Session Summary (Compaction Round ${round})`,
    '',
    '### Original Task',
    task || '(no original task was given to the offline scripted model)',
    '',
    '### Completed Work',
    `- Files mentioned: ${paths.length > 0 ? paths.join(', ') : 'none'}`,
    '',
    '### Key Technical Decisions',
    '- None recorded by the offline scripted model.',
    '',
    '### Current State',
    `- Summarized ${messages.length - 1} messages.`,
    '',
    '### Pending Work',
    '- [ ] Continue from the summarized conversation.',
    '',
    '### Errors & Resolutions',
    '- None',
    '',
    '### User Preferences and Constraints',
    '- None recorded by the offline scripted model.',
    '',
    '### Next Steps',
    '1. Continue the original task.',
  ];
  if (focus) lines.push('', '### Focus', `- ${focus}`);
  return { text: lines.join('\n') };
};

// ---------------------------------------------------------------------------------------------
// Working through a plan.

/** The request that starts a plan, on its first line: "work through step by step: src/a.ts src/b.ts …". */
const PLAN_REQUEST = /^(?:@\S+\s+)?work through step by step: ((?:\S+ ?)+)/i;

/** What a plan's step is, as the scenario writes it and reads it back. */
interface PlanStepText {
  readonly step: string;
  readonly status: string;
  readonly evidence?: { readonly files?: readonly string[] };
}

/** Said when the request shows tool work but no plan: the scenario lost its place, as a model would. */
export const LOST_PLACE = 'Offline scripted model: I have lost track of the plan; say "continue" and I will look again.';

const noteOf = (path: string): string => `notes/${path.replace(/^.*\//, '').replace(/\.\w+$/, '')}.md`;

/**
 * A deterministic agent that decides each step only from what the request holds, for a request
 * "work through step by step: <paths>": it writes a plan of one step per path ("Note <path>"), then
 * for the step in progress reads the file, writes `notes/<name>.md` and marks the step done with that
 * file as evidence, until every step is done. It finds its plan in its last `plan` call or, once that
 * was summarized away, in the summary's `<work-state>` block; when the request shows neither, it has
 * lost its place and says so (a turn that would wait for "continue"). Undefined for other requests.
 */
export const planScenario = ({ request }: ScenarioInput): Reply | undefined => {
  const { messages } = request;
  const userText = [...messages].reverse().find((m) => m.role === 'user' && !CARRIED_SUMMARY.test(contentText(m.content)));
  const paths = PLAN_REQUEST.exec(contentText(userText?.content))?.[1]?.trim().split(/\s+/);
  if (!paths || !offersTool(request, 'plan')) return undefined;
  // A plan of an earlier request (other paths) is not this one's.
  const found = planIn(messages);
  const plan = found && found.map((s) => s.step).join('\n') === paths.map((p) => `Note ${p}`).join('\n') ? found : undefined;
  const last = lastCall(messages);
  if (!plan) {
    if (last) return { text: LOST_PLACE };
    return {
      toolCalls: [{ name: 'plan', arguments: { steps: paths.map((p, i) => ({ step: `Note ${p}`, status: i === 0 ? 'in_progress' : 'pending' })) } }],
    };
  }
  const current = plan.findIndex((s) => s.status === 'in_progress');
  if (current < 0) return { text: `Offline scripted model: all ${plan.length} steps of the plan are done.` };
  const path = /^Note (\S+)/.exec(plan[current]!.step)?.[1] ?? '';
  if (last?.name === 'plan' && last.output.startsWith('Error:')) return { text: `Offline scripted model: the plan was refused: ${last.output}` };
  if (last?.name === 'read_file' && last.arguments.includes(path)) {
    return { toolCalls: [{ name: 'create_file', arguments: { path: noteOf(path), content: `Notes on ${path}.\n` } }] };
  }
  if (last?.name === 'create_file' && last.arguments.includes(noteOf(path))) {
    const steps = plan.map((s, i) =>
      i === current
        ? { step: s.step, status: 'done', evidence: { files: [noteOf(path)] } }
        : i === current + 1
          ? { step: s.step, status: 'in_progress' }
          : { step: s.step, status: s.status, ...(s.evidence ? { evidence: s.evidence } : {}) },
    );
    return { toolCalls: [{ name: 'plan', arguments: { steps } }] };
  }
  return { toolCalls: [{ name: 'read_file', arguments: { path } }] };
};

/** The plan the request shows: the arguments of its last `plan` call, else the steps of its last work state. */
function planIn(messages: ChatCompletionRequest['messages']): PlanStepText[] | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i]!;
    if (message.role !== 'assistant') continue;
    const call = [...(message.tool_calls ?? [])].reverse().find((c) => c.function.name === 'plan');
    if (call) return (JSON.parse(call.function.arguments) as { steps: PlanStepText[] }).steps;
  }
  const block = [
    ...messages
      .map((m) => contentText(m.content))
      .join('\n')
      .matchAll(/<work-state>([\s\S]*?)<\/work-state>/g),
  ].at(-1)?.[1];
  const steps: PlanStepText[] = [];
  for (const line of block?.split('\n') ?? []) {
    const match = /^\d+\. \[([^\]]+)\] (.+?)(?: · evidence: (.+))?$/.exec(line.trim());
    if (!match) continue;
    const mark = match[1]!;
    const status = mark.startsWith('done') ? 'done' : mark === 'in progress' ? 'in_progress' : mark;
    steps.push({ step: match[2]!, status, ...(match[3] ? { evidence: { files: match[3].split(', ') } } : {}) });
  }
  return steps.length > 0 ? steps : undefined;
}

/** The tool call whose result ends the request: its name, arguments and output; undefined when it ends otherwise. */
function lastCall(messages: ChatCompletionRequest['messages']): { name: string; arguments: string; output: string } | undefined {
  const last = messages[messages.length - 1];
  if (last?.role !== 'tool') return undefined;
  for (let i = messages.length - 2; i >= 0; i--) {
    const message = messages[i]!;
    const call = message.role === 'assistant' ? message.tool_calls?.find((c) => c.id === last.tool_call_id) : undefined;
    if (call) return { name: call.function.name, arguments: call.function.arguments, output: contentText(last.content) };
  }
  return undefined;
}
