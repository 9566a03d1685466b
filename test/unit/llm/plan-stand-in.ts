import { convertArrayToReadableStream, MockLanguageModelV4 } from 'ai/test';

/**
 * A deterministic agent that decides its next step only from what its prompt holds, as a model
 * does: asked to "read" files, it writes a plan of one step per file, then reads the file of the
 * step in progress and marks it done, until every step is done. It finds its plan in its last `plan`
 * call, or, once that call was summarized away, in the summary's `<work-state>` block. When its
 * prompt shows neither, it has lost its place, and stops to ask the user to say "continue".
 */

type Prompt = MockLanguageModelV4['doStreamCalls'][number]['prompt'];
type Message = Prompt[number];

interface Step {
  readonly step: string;
  readonly status: string;
}

export const LOST = 'I have lost track of where I was; say "continue" and I will look again.';
export const FINISHED = 'Every step of the plan is done.';

const usage = (input: number) => ({
  inputTokens: { total: input, noCache: input, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
});

function texts(message: Message): string {
  if (typeof message.content === 'string') return message.content;
  return message.content.map((p) => (p.type === 'text' ? p.text : '')).join('\n');
}

/**
 * The plan the prompt shows: its last `plan` call, else the last work-state block of a summary
 * (unless `blind`: a model shown summaries without one).
 */
export function planInPrompt(prompt: Prompt, blind = false): Step[] | undefined {
  for (let i = prompt.length - 1; i >= 0; i--) {
    const message = prompt[i]!;
    if (message.role !== 'assistant') continue;
    for (const part of [...message.content].reverse()) {
      if (part.type === 'tool-call' && part.toolName === 'plan') return (part.input as { steps: Step[] }).steps;
    }
  }
  const block = [
    ...prompt
      .map(texts)
      .join('\n')
      .matchAll(/<work-state>([\s\S]*?)<\/work-state>/g),
  ].at(-1)?.[1];
  if (!block || blind) return undefined;
  const steps: Step[] = [];
  for (const line of block.split('\n')) {
    const match = /^\d+\. \[([^\]]+)\] (.+?)(?: · .*)?$/.exec(line.trim());
    if (!match) continue;
    const mark = match[1]!;
    const status = mark.startsWith('done') ? 'done' : mark === 'in progress' ? 'in_progress' : mark;
    steps.push({ step: match[2]!, status });
  }
  return steps.length > 0 ? steps : undefined;
}

/** The name and first output line of the tool whose result ends the prompt, if it ends with one. */
function lastResult(prompt: Prompt): { readonly tool: string; readonly output: string } | undefined {
  const last = prompt.at(-1);
  if (last?.role !== 'tool') return undefined;
  const part = last.content.at(-1);
  if (part?.type !== 'tool-result') return undefined;
  const output = part.output.type === 'text' || part.output.type === 'error-text' ? part.output.value : JSON.stringify(part.output);
  return { tool: part.toolName, output };
}

/** What the stand-in does next: a tool call, or an answer. */
export function nextMove(prompt: Prompt, blind = false): { readonly tool: string; readonly input: unknown } | { readonly answer: string } {
  const plan = planInPrompt(prompt, blind);
  const result = lastResult(prompt);
  if (!plan) {
    const request = texts([...prompt].reverse().find((m) => m.role === 'user')!);
    const files = /read ((?:\S+\.ts ?)+)/.exec(request)?.[1]?.trim().split(' ');
    if (result || !files) return { answer: LOST };
    return { tool: 'plan', input: { steps: files.map((f, i) => ({ step: `Read ${f}`, status: i === 0 ? 'in_progress' : 'pending' })) } };
  }
  const current = plan.findIndex((s) => s.status === 'in_progress');
  if (current < 0) return { answer: FINISHED };
  const path = /^Read (\S+)/.exec(plan[current]!.step)![1]!;
  if (result?.tool === 'read_file' && result.output.startsWith(`contents of ${path}`)) {
    const steps = plan.map((s, i) => ({
      step: s.step,
      status: i === current ? 'done' : i === current + 1 ? 'in_progress' : s.status,
    }));
    return { tool: 'plan', input: { steps } };
  }
  return { tool: 'read_file', input: { path } };
}

/** Whether the plan the prompt shows is only in a work-state block: its `plan` calls were summarized away. */
export function planOnlyInWorkState(prompt: Prompt): boolean {
  const called = prompt.some((m) => m.role === 'assistant' && m.content.some((p) => p.type === 'tool-call' && p.toolName === 'plan'));
  return !called && planInPrompt(prompt) !== undefined;
}

/** The stand-in as a model: every call answers with `nextMove` of its prompt (`blind`: not reading work states). */
export function standInModel(blind = false): MockLanguageModelV4 {
  let calls = 0;
  return new MockLanguageModelV4({
    doStream: async ({ prompt }) => {
      const move = nextMove(prompt, blind);
      const read = Math.ceil(JSON.stringify(prompt).length / 4);
      const parts: Array<Record<string, unknown>> = [{ type: 'stream-start', warnings: [] }];
      if ('answer' in move) {
        parts.push({ type: 'text-start', id: 't' }, { type: 'text-delta', id: 't', delta: move.answer }, { type: 'text-end', id: 't' });
        parts.push({ type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage: usage(read) });
      } else {
        parts.push({ type: 'tool-call', toolCallId: `call${++calls}`, toolName: move.tool, input: JSON.stringify(move.input) });
        parts.push({ type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage: usage(read) });
      }
      return { stream: convertArrayToReadableStream(parts as never[]) };
    },
  });
}
