import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  LOOKBACK_BLOCKS,
  MAX_BREAKPOINTS,
  lastCacheablePart,
  messageBlocks,
  planBreakpoints,
  type BreakpointPlan,
} from '../../../src/core/cache-breakpoints';
import type { Message, Part } from '../../../src/core/messages';
import { assistant, toolResult, user } from './fixtures';

/**
 * A stand-in for the provider's cache, as its documentation describes it: a breakpoint caches the
 * prefix that ends at its block; a request reads the longest prefix an earlier request cached that
 * ends at one of its breakpoints or at most `LOOKBACK_BLOCKS - 1` blocks before one. Prefixes are
 * keyed by their last block's position within a generation of the view (a compaction starts another).
 */
class ProviderCache {
  private readonly cached = new Set<string>();

  /** The position of the last block read from the cache (-1: only the head, -2: nothing), then caches at each breakpoint. */
  request(view: readonly Message[], plan: BreakpointPlan, generation: number): number {
    const positions = plan.messages.map((i) => markPosition(view, i));
    let read = plan.head && this.cached.has('head') ? -1 : -2;
    for (const mark of positions) {
      for (let p = mark; p > mark - LOOKBACK_BLOCKS && p >= 0; p--) {
        if (this.cached.has(`${generation}:${p}`)) {
          read = Math.max(read, p);
          break;
        }
      }
    }
    if (plan.head) this.cached.add('head');
    for (const mark of positions) this.cached.add(`${generation}:${mark}`);
    return read;
  }
}

/** The position of the block a breakpoint on message `index` sits on. */
function markPosition(view: readonly Message[], index: number): number {
  let position = 0;
  for (let i = 0; i < index; i++) position += messageBlocks(view[i]!).count;
  return position + messageBlocks(view[index]!).lastCacheable;
}

/** The position of the last cacheable block of the first `end` messages: where a request of them ends. */
function endPosition(view: readonly Message[], end: number): number {
  for (let i = end - 1; i >= 0; i--) if (messageBlocks(view[i]!).lastCacheable >= 0) return markPosition(view, i);
  return -1;
}

/** One step of a generated session. */
type Step =
  | { readonly kind: 'user'; readonly parts: number }
  | { readonly kind: 'tools'; readonly calls: number; readonly text: boolean; readonly reasoning: boolean }
  | { readonly kind: 'answer'; readonly text: boolean }
  | { readonly kind: 'compact'; readonly keep: number }
  | { readonly kind: 'summary'; readonly back: number };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('user' as const), parts: fc.integer({ min: 1, max: 3 }) }) },
  {
    weight: 8,
    arbitrary: fc.record({
      kind: fc.constant('tools' as const),
      // Mostly one or a few calls; sometimes a wide step of parallel calls, far over the look-back.
      calls: fc.oneof({ weight: 4, arbitrary: fc.integer({ min: 1, max: 4 }) }, { weight: 1, arbitrary: fc.integer({ min: 5, max: 40 }) }),
      text: fc.boolean(),
      reasoning: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('answer' as const), text: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('compact' as const), keep: fc.integer({ min: 0, max: 6 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('summary' as const), back: fc.integer({ min: 0, max: 12 }) }) },
);

/** Replays `steps` as requests, checking every plan against the stand-in cache. */
function replay(steps: readonly Step[]): void {
  const cache = new ProviderCache();
  let view: Message[] = [user('u0', 'start')];
  let generation = 0;
  let stableEnd: string | undefined;
  let id = 0;
  /** Where each request of this generation ended (block position of its last cacheable block). */
  let ends: number[] = [];
  const next = (): string => `m${++id}`;

  const send = (messages: readonly Message[], volatileTail = 0): { plan: BreakpointPlan; read: number } => {
    const plan = planBreakpoints(messages, { head: true, ...(stableEnd !== undefined ? { stableEnd } : {}), volatileTail });
    assert.ok((plan.head ? 1 : 0) + plan.messages.length <= MAX_BREAKPOINTS, 'at most four breakpoints');
    for (const i of plan.messages) {
      assert.ok(i < messages.length - volatileTail, 'no breakpoint on a part later requests do not send');
      assert.ok(messageBlocks(messages[i]!).lastCacheable >= 0, 'a breakpoint only on a block that takes one');
    }
    // None wasted: a breakpoint the next one looks back over would read nothing the next one does not.
    const positions = plan.messages.map((i) => markPosition(messages, i));
    for (let k = 1; k < positions.length; k++) {
      assert.ok(positions[k]! - positions[k - 1]! >= LOOKBACK_BLOCKS, `a needless breakpoint at ${positions[k - 1]} (${positions.join(', ')})`);
    }
    return { plan, read: cache.request(messages, plan, generation) };
  };

  /** The agent's request of the view as it is; what was sent before it in this generation must be read back. */
  const agentRequest = (): void => {
    const { read } = send(view);
    const previous = ends.at(-1);
    if (previous !== undefined) assert.ok(read >= previous, `the request reads what the one before it sent (read ${read}, sent ${previous})`);
    ends.push(endPosition(view, view.length));
  };

  agentRequest();
  for (const step of steps) {
    switch (step.kind) {
      case 'user':
        view.push({ id: next(), role: 'user', content: Array.from({ length: step.parts }, (_, i) => ({ type: 'text', text: `part ${i}` })) });
        agentRequest();
        break;
      case 'tools': {
        const calls = Array.from({ length: step.calls }, () => `c${++id}`);
        const content: Part[] = [
          ...(step.reasoning ? [{ type: 'reasoning', text: 'thinking' } as Part] : []),
          ...(step.text ? [{ type: 'text', text: 'let me look' } as Part] : []),
          ...calls.map((callId): Part => ({ type: 'tool-call', toolCallId: callId, toolName: 'read_file', input: { path: callId } })),
        ];
        view.push({ id: next(), role: 'assistant', content });
        view.push({
          id: next(),
          role: 'tool',
          content: calls.map((callId): Part => ({ type: 'tool-result', toolCallId: callId, toolName: 'read_file', output: 'text' })),
        });
        agentRequest();
        break;
      }
      case 'answer':
        view.push(assistant(next(), step.text ? 'done' : 'ok'));
        view.push(user(next(), 'and then?'));
        agentRequest();
        break;
      case 'compact': {
        const kept = view.slice(Math.max(1, view.length - step.keep));
        // The kept part starts at a user message, never between a call and its result.
        const start = kept.findIndex((m) => m.role === 'user');
        view = [user(next(), 'summary of what came before'), ...(start >= 0 ? kept.slice(start) : [])];
        generation++;
        stableEnd = view.at(-1)!.id;
        ends = [];
        agentRequest();
        break;
      }
      case 'summary': {
        // A summary continues the conversation through a message that ended a request or its answer.
        const cut = Math.max(1, view.length - step.back);
        const through = view.slice(0, cut);
        const { read } = send([...through, user('directive', 'summarize')], 1);
        const before = ends.filter((e) => e <= endPosition(through, through.length));
        const last = before.at(-1);
        if (last !== undefined && !hasOpenCalls(through)) {
          assert.ok(read >= last, `the summary request reads the history the agent sent (read ${read}, sent ${last})`);
        }
        break;
      }
    }
  }
}

/** Whether the last assistant message's calls have no results yet (a cut the engine never makes). */
function hasOpenCalls(messages: readonly Message[]): boolean {
  return messages.at(-1)?.role === 'assistant' && messages.at(-1)!.content.some((p) => p.type === 'tool-call');
}

describe('cache breakpoints', () => {
  it('counts the blocks a message becomes, and which one may carry a breakpoint', () => {
    assert.deepEqual(messageBlocks(user('u', 'hi')), { count: 1, lastCacheable: 0 });
    const thinking: Message = {
      id: 'a',
      role: 'assistant',
      content: [
        { type: 'text', text: '' },
        { type: 'tool-call', toolCallId: 'c', toolName: 't', input: {} },
        { type: 'reasoning', text: 'hm' },
      ],
    };
    assert.deepEqual(messageBlocks(thinking), { count: 2, lastCacheable: 0 });
    assert.equal(lastCacheablePart(thinking), 1);
    const results: Message = {
      id: 't',
      role: 'tool',
      content: [1, 2, 3].map((n): Part => ({ type: 'tool-result', toolCallId: `c${n}`, toolName: 't', output: 'x' })),
    };
    assert.deepEqual(messageBlocks(results), { count: 3, lastCacheable: 2 });
  });

  it('marks the head and the end of the request, and nothing else while the step was small', () => {
    const view = [user('u', 'go'), assistant('a', '', { callId: 'c', tool: 'read_file' }), toolResult('t', 'c', 'read_file', 'x')];
    assert.deepEqual(planBreakpoints(view, { head: true }), { head: true, messages: [2] });
  });

  it('marks the end of the request before, when a step of many calls put it out of the look-back', () => {
    const calls = Array.from({ length: 15 }, (_, i) => ({ callId: `c${i}`, tool: 'read_file' }));
    const results: Message = {
      id: 't',
      role: 'tool',
      content: calls.map((c): Part => ({ type: 'tool-result', toolCallId: c.callId, toolName: c.tool, output: 'x' })),
    };
    const view = [user('u', 'go'), assistant('a', 'reading', ...calls), results];
    // 16 + 15 blocks after the user's message: the rolling breakpoint alone would not find it.
    assert.deepEqual(planBreakpoints(view, { head: true }), { head: true, messages: [0, 2] });
  });

  it('marks the end of the stable part after a compaction only when no other breakpoint reaches it', () => {
    const near = [user('summary', 'summary'), user('k', 'kept'), assistant('a', 'ok'), user('u', 'next')];
    assert.deepEqual(planBreakpoints(near, { head: true, stableEnd: 'k' }).messages, [3]);
    const far = [user('summary', 'summary'), user('k', 'kept'), ...Array.from({ length: 25 }, (_, i) => user(`u${i}`, 'more'))];
    assert.deepEqual(planBreakpoints(far, { head: true, stableEnd: 'k' }).messages, [1, 26]);
  });

  it('never marks the directive of a summary request', () => {
    const view = [user('u', 'go'), assistant('a', 'done'), user('d', 'summarize the conversation')];
    assert.deepEqual(planBreakpoints(view, { head: true, volatileTail: 1 }).messages, [1]);
  });

  it('places nothing where the provider takes no breakpoint, and no more than it is allowed', () => {
    assert.deepEqual(planBreakpoints([], { head: true }), { head: true, messages: [] });
    const calls = Array.from({ length: 30 }, (_, i) => ({ callId: `c${i}`, tool: 't' }));
    const view = [
      user('s', 'summary'),
      ...Array.from({ length: 30 }, (_, i) => user(`k${i}`, 'kept')),
      assistant('a', '', ...calls),
      {
        id: 't',
        role: 'tool',
        content: calls.map((c): Part => ({ type: 'tool-result', toolCallId: c.callId, toolName: 't', output: '' })),
      } as Message,
    ];
    const plan = planBreakpoints(view, { head: true, stableEnd: 's', max: 3 });
    assert.equal((plan.head ? 1 : 0) + plan.messages.length, 3);
    assert.deepEqual(plan.messages, [30, 32]);
  });

  it('property: over a 50-step tool loop, every request reads all the one before sent, with at most four breakpoints', function () {
    this.timeout(60_000);
    const toolStep = fc.record({
      kind: fc.constant('tools' as const),
      calls: fc.integer({ min: 1, max: 40 }),
      text: fc.boolean(),
      reasoning: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.array(toolStep, { minLength: 50, maxLength: 50 }), (steps) => replay(steps)),
      { numRuns: 200 },
    );
  });

  it('property: with turns, compactions and summary requests mixed in, the cache is always read back', function () {
    this.timeout(60_000);
    fc.assert(
      fc.property(fc.array(stepArb, { minLength: 1, maxLength: 80 }), (steps) => replay(steps)),
      { numRuns: 300 },
    );
  });
});
