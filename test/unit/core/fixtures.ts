import { DEFAULT_CONFIG, type CompactionConfig } from '../../../src/core/config';
import type { LogRecord } from '../../../src/core/history';
import { MessageTokenCounter } from '../../../src/core/message-tokens';
import type { Message, Part } from '../../../src/core/messages';
import type { Clock, Summarizer, SummaryRequest, SummaryResponse } from '../../../src/core/ports';
import { charEstimator } from '../../../src/core/tokenizer';

/** Builders for test conversations. Ids are given explicitly so tests can name messages. */
export const sys = (id: string, body: string): Message => ({ id, role: 'system', content: [{ type: 'text', text: body }] });
export const user = (id: string, body: string): Message => ({ id, role: 'user', content: [{ type: 'text', text: body }] });
export const assistant = (id: string, body: string, ...calls: Array<{ callId: string; tool: string; input?: unknown }>): Message => ({
  id,
  role: 'assistant',
  content: [
    ...(body ? [{ type: 'text', text: body } as Part] : []),
    ...calls.map((c): Part => ({ type: 'tool-call', toolCallId: c.callId, toolName: c.tool, input: c.input ?? {} })),
  ],
});
export const toolResult = (id: string, callId: string, tool: string, output: unknown, isError = false): Message => ({
  id,
  role: 'tool',
  content: [{ type: 'tool-result', toolCallId: callId, toolName: tool, output, isError }],
});

export const asLog = (messages: readonly Message[]): LogRecord[] => messages.map((message) => ({ type: 'message', message }));

/** A turn: a user request, then `steps` tool round trips, then a final answer. */
export function turn(prefix: string, request: string, steps: number, resultText = 'ok'): Message[] {
  const out: Message[] = [user(`${prefix}-u`, request)];
  for (let s = 0; s < steps; s++) {
    out.push(assistant(`${prefix}-a${s}`, `step ${s}`, { callId: `${prefix}-c${s}`, tool: 'read_file', input: { path: `src/f${s}.ts` } }));
    out.push(toolResult(`${prefix}-t${s}`, `${prefix}-c${s}`, 'read_file', resultText));
  }
  out.push(assistant(`${prefix}-done`, `finished ${request}`));
  return out;
}

export const estimatingCounter = (): MessageTokenCounter => new MessageTokenCounter(charEstimator);

export function config(overrides: (c: CompactionConfig) => CompactionConfig = (c) => c): CompactionConfig {
  return overrides(structuredClone(DEFAULT_CONFIG));
}

/** A clock whose time moves only when told, and whose timers fire when time passes them. */
export class FakeClock implements Clock {
  private time = 1_700_000_000_000;
  private timers: Array<{ at: number; fn: () => void; live: boolean }> = [];
  now(): number {
    return this.time;
  }
  setTimer(ms: number, fn: () => void): () => void {
    const timer = { at: this.time + ms, fn, live: true };
    this.timers.push(timer);
    return () => {
      timer.live = false;
    };
  }
  advance(ms: number): void {
    this.time += ms;
    for (const timer of this.timers) {
      if (timer.live && timer.at <= this.time) {
        timer.live = false;
        timer.fn();
      }
    }
  }
}

/**
 * A summary in the template's shape, `body` under Completed Work, of the length a summarizer asked
 * for a few hundred tokens writes: the engine rejects text without substance (a loop, an empty
 * template) or under a tenth of the expected length, and uses its extractive fallback instead.
 */
export function templateSummary(body: string): string {
  return [
    '## Session Summary',
    '### Completed Work',
    body,
    '### Current State',
    '- Working through the task one step at a time; every file named above is saved and up to date.',
    '### Pending Work',
    '- [ ] The remaining steps of the task, in the order the user gave them, then the tests.',
    '### Next Steps',
    '1. Continue with the next step of the task as planned.',
    '2. Run the tests again and report what changed, with the files touched.',
  ].join('\n');
}

/** A summarizer that records its requests and answers with a summary built from them. */
export class RecordingSummarizer implements Summarizer {
  readonly name = 'fake:summarizer';
  readonly requests: SummaryRequest[] = [];
  constructor(
    private readonly answer: (request: SummaryRequest, index: number) => Promise<SummaryResponse> | SummaryResponse = (r) => ({
      text: templateSummary(`Summarized ${r.messages.length} messages; purpose ${r.purpose}.`),
    }),
    readonly contextWindow?: number,
  ) {}
  async summarize(request: SummaryRequest): Promise<SummaryResponse> {
    this.requests.push(request);
    return this.answer(request, this.requests.length - 1);
  }
}

export function idGenerator(prefix = 'entry'): () => string {
  let n = 0;
  return () => `${prefix}-${++n}`;
}
