/**
 * Deterministic coding-agent sessions for the benchmarks: each turn is a user request, a few steps
 * that each call a tool (read a file) and get its result, and a final answer. Tool results are code,
 * prose or JSON lines that name their turn and step, so no two turns are the same text.
 */
import type { LogRecord } from '../src/core/history';
import type { Message } from '../src/core/messages';

/** One turn as the scripted model plays it. */
export interface TurnScript {
  readonly request: string;
  readonly steps: readonly { readonly path: string; readonly result: string }[];
  readonly answer: string;
}

/** How large turns are: tool steps per turn and lines per tool result, each drawn between min and max. */
export interface SessionShape {
  readonly steps: readonly [number, number];
  readonly resultLines: readonly [number, number];
}

/** About 2,000 tokens a turn (o200k): two tool steps of about 800 tokens on average. */
/** A summary of a realistic length (about 700 tokens), as an instant summarizer returns it. */
export const SUMMARY = `## Session Summary\n### Completed Work\n${'The handlers now check their input before retrying; tests cover each failing case. '.repeat(40)}`;

export const TWO_K_TURNS: SessionShape = { steps: [1, 3], resultLines: [20, 44] };

/** About 200 tokens a message (o200k), for histories measured by their number of messages. */
export const SMALL_MESSAGES: SessionShape = { steps: [1, 4], resultLines: [10, 26] };

/** Deterministic pseudo-random numbers, so every run measures the same sessions. */
export function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    return state / 2 ** 32;
  };
}

function resultLine(kind: number, turn: number, step: number, i: number): string {
  if (kind === 0)
    return `export function handle${turn}_${step}_${i}(request: Request): Promise<Response> { return route(request, '/api/v${i % 3}/items/${turn}'); }`;
  if (kind === 1)
    return `The scheduler of module ${turn} retries failed job ${step}.${i} up to ${i % 5} times, and logs each attempt with its reason and duration.`;
  return JSON.stringify({
    id: `${turn}-${step}-${i}`,
    status: i % 2 ? 'ok' : 'failed',
    durationMs: (i * 37 + turn) % 1000,
    tags: ['build', `m${turn % 7}`],
  });
}

/** The turns of a session, endlessly; take as many as needed. */
export function* turns(seed: number, shape: SessionShape): Generator<TurnScript> {
  const next = random(seed);
  const between = ([low, high]: readonly [number, number]) => low + Math.floor(next() * (high - low + 1));
  for (let turn = 0; ; turn++) {
    const steps = Array.from({ length: between(shape.steps) }, (_, step) => {
      const kind = Math.floor(next() * 3);
      const lines = Array.from({ length: between(shape.resultLines) }, (_, i) => resultLine(kind, turn, step, i));
      return { path: `src/module${turn % 23}/part${step}.ts`, result: lines.join('\n') };
    });
    yield {
      request: `Turn ${turn}: module ${turn % 23} fails its tests since the change to the retry policy. Please find out why, fix it, and tell me what you changed.`,
      steps,
      answer: `Module ${turn % 23} is fixed: the handler now checks its input before it retries, and the failing case ${turn} is covered by a new test. ${'The other modules are unaffected. '.repeat(2)}`,
    };
  }
}

/** A turn as the messages the agent loop would log for it. */
export function turnMessages(turn: TurnScript, newId: () => string): Message[] {
  const messages: Message[] = [{ id: newId(), role: 'user', content: [{ type: 'text', text: turn.request }] }];
  turn.steps.forEach((step, i) => {
    const toolCallId = `call_${newId()}_${i}`;
    messages.push({
      id: newId(),
      role: 'assistant',
      content: [
        { type: 'text', text: `Reading ${step.path}.` },
        { type: 'tool-call', toolCallId, toolName: 'read_file', input: { path: step.path } },
      ],
    });
    messages.push({ id: newId(), role: 'tool', content: [{ type: 'tool-result', toolCallId, toolName: 'read_file', output: step.result }] });
  });
  messages.push({ id: newId(), role: 'assistant', content: [{ type: 'text', text: turn.answer }] });
  return messages;
}

/** The first `count` messages of a session, as log records (the last turn may be cut short). */
export function sessionLog(count: number, seed: number, shape: SessionShape): LogRecord[] {
  let n = 0;
  const newId = (): string => `m${n++}`;
  const log: LogRecord[] = [];
  for (const turn of turns(seed, shape)) {
    for (const message of turnMessages(turn, newId)) {
      if (log.length === count) return log;
      log.push({ type: 'message', message });
    }
  }
  return log;
}
