import assert from 'node:assert/strict';
import { recentPartStart, selectForCompaction, validCuts, keepRecentTokens, type SelectionOptions } from '../../../src/core/cut-point';
import { SUMMARY_PREFIX } from '../../../src/core/history';
import type { Message } from '../../../src/core/messages';
import { assistant, config, estimatingCounter, sys, toolResult, turn, user } from './fixtures';

const counter = estimatingCounter();
const options = (over: Partial<SelectionOptions> = {}): SelectionOptions => ({
  keepRecent: { ...config().keepRecent, mode: 'messages', messages: 4 },
  limit: 100_000,
  countMessage: (m) => counter.countMessage(m),
  keepSystemMessages: true,
  maxKeptTokens: Number.POSITIVE_INFINITY,
  ...over,
});
const ids = (messages: readonly Message[]) => messages.map((m) => m.id);

describe('cut point: what to compact and what to keep', () => {
  it('keeps system messages in front and never summarizes them', () => {
    const view = [sys('s', 'be careful'), ...turn('t1', 'first', 3), ...turn('t2', 'second', 3)];
    const result = selectForCompaction(view, options());
    assert.ok(result.ok);
    assert.deepEqual(ids(result.selection.pinned), ['s']);
    assert.ok(!ids(result.selection.toCompact).includes('s'));
  });

  it('keeps a tool call with its result when the cut falls between them', () => {
    // Keeping the last 4 messages would start the kept part at a tool result (t2-t1).
    const view = [
      ...turn('t1', 'first', 2),
      user('t2-u', 'second'),
      assistant('t2-a0', '', { callId: 'x0', tool: 'grep' }),
      toolResult('t2-t0', 'x0', 'grep', 'hit'),
      assistant('t2-a1', '', { callId: 'x1', tool: 'grep' }),
      toolResult('t2-t1', 'x1', 'grep', 'hit'),
      assistant('t2-done', 'done'),
    ];
    const result = selectForCompaction(view, options({ keepRecent: { ...config().keepRecent, mode: 'messages', messages: 3 } }));
    assert.ok(result.ok);
    const kept = result.selection.kept;
    assert.notEqual(kept[0]!.role, 'tool');
    const keptCalls = new Set(kept.flatMap((m) => m.content.flatMap((p) => (p.type === 'tool-call' ? [p.toolCallId] : []))));
    for (const m of kept)
      for (const p of m.content) if (p.type === 'tool-result') assert.ok(keptCalls.has(p.toolCallId), `orphan result ${p.toolCallId}`);
  });

  it('treats parallel tool calls answered by several tool messages as one unit', () => {
    const body = [
      user('u', 'go'),
      assistant('a', '', { callId: 'p1', tool: 'read_file' }, { callId: 'p2', tool: 'read_file' }),
      toolResult('r1', 'p1', 'read_file', 'x'),
      toolResult('r2', 'p2', 'read_file', 'y'),
      assistant('b', 'done'),
    ];
    assert.deepEqual(validCuts(body), [true, true, false, false, true, true]);
  });

  it('pairs a tool result with the nearest call of its id, so ids reused in later turns still allow cuts between turns', () => {
    const body = [
      user('u1', 'one'),
      assistant('a1', '', { callId: 'call_1', tool: 'read_file' }),
      toolResult('t1', 'call_1', 'read_file', 'x'),
      assistant('d1', 'done'),
      user('u2', 'two'),
      assistant('a2', '', { callId: 'call_1', tool: 'read_file' }),
      toolResult('t2', 'call_1', 'read_file', 'y'),
      assistant('d2', 'done'),
    ];
    assert.deepEqual(validCuts(body), [true, true, false, true, true, true, false, true, true]);
  });

  it('never separates the latest user message from what answers it', () => {
    const view = [...turn('t1', 'first', 2), ...turn('t2', 'latest', 4)];
    // Keeping only 2 messages would cut inside the latest turn.
    const result = selectForCompaction(view, options({ keepRecent: { ...config().keepRecent, mode: 'messages', messages: 2 } }));
    assert.ok(result.ok);
    assert.equal(result.selection.kept[0]!.id, 't2-u');
    assert.ok(!result.selection.splitTurn);
  });

  it('keeps the recent part by tokens, 20,000 or 35% of the window', () => {
    assert.equal(keepRecentTokens(config().keepRecent, 1_000_000), 20_000);
    assert.equal(keepRecentTokens(config().keepRecent, 32_000), 11_200);
    const big = 'x'.repeat(4_000); // about 1,000 tokens per result
    const view = [...turn('t1', 'first', 10, big), ...turn('t2', 'second', 10, big), ...turn('t3', 'third', 2, 'small')];
    const result = selectForCompaction(view, options({ keepRecent: { ...config().keepRecent, mode: 'tokens', tokens: 5_000 } }));
    assert.ok(result.ok);
    const keptTokens = counter.countMessages(result.selection.kept);
    assert.ok(keptTokens >= 5_000, `kept ${keptTokens}`);
    // The cut lands at the latest valid point that keeps at least the target, so not much more.
    assert.ok(keptTokens < 5_000 + 2 * 1_100, `kept ${keptTokens}`);
  });

  it('keeps the last five messages when counting by messages, cutting between a tool result and the next call', () => {
    const view = [...turn('t1', 'a', 6), ...turn('t2', 'b', 6), ...turn('t3', 'c', 0)];
    const result = selectForCompaction(view, options({ keepRecent: { ...config().keepRecent, mode: 'messages', messages: 5 } }));
    assert.ok(result.ok);
    assert.deepEqual(ids(result.selection.kept), ['t2-a5', 't2-t5', 't2-done', 't3-u', 't3-done']);
    assert.deepEqual(ids(result.selection.toCompact), ids(view.slice(0, -5)));
    assert.equal(result.selection.toCompact.at(-1)?.id, 't2-t4');
  });

  it('recognises an earlier summary by structure and sets it aside to be chained', () => {
    const summary: Message = { id: 'summary:e1', role: 'user', content: [{ type: 'text', text: `${SUMMARY_PREFIX}\n\nold` }], summaryOf: 'e1' };
    const view = [sys('s', 'sys'), summary, ...turn('t1', 'a', 4), ...turn('t2', 'b', 4)];
    const result = selectForCompaction(view, options());
    assert.ok(result.ok);
    assert.equal(result.selection.previousSummary?.id, summary.id);
    assert.ok(!ids(result.selection.toCompact).includes(summary.id));
  });

  it('treats a message that only looks like a summary as ordinary content', () => {
    // A reply, or a file the agent quoted, that starts with the summary's words.
    const lookalike: Message = { id: 'm0', role: 'assistant', content: [{ type: 'text', text: `${SUMMARY_PREFIX}\n\nnot really` }] };
    const view = [sys('s', 'sys'), ...turn('t0', 'first', 1), lookalike, ...turn('t1', 'a', 4), ...turn('t2', 'b', 4)];
    const result = selectForCompaction(view, options());
    assert.ok(result.ok);
    assert.equal(result.selection.previousSummary, undefined);
    assert.ok(ids(result.selection.toCompact).includes('m0'), 'it is compacted like any message');
  });

  it('is a no-op with a reason when everything is recent', () => {
    const result = selectForCompaction(turn('t1', 'only', 1), options({ keepRecent: { ...config().keepRecent, mode: 'messages', messages: 10 } }));
    assert.equal(result.ok, false);
    assert.match(!result.ok ? result.reason : '', /Nothing to compact/);
  });

  it('splits one turn larger than the budget: keeps its request, summarizes its early part', () => {
    const big = 'y'.repeat(8_000); // about 2,000 tokens per result
    const view = [...turn('t1', 'old', 1), ...turn('t2', 'huge task', 12, big)];
    const result = selectForCompaction(
      view,
      options({ keepRecent: { ...config().keepRecent, mode: 'tokens', tokens: 4_000 }, maxKeptTokens: 10_000 }),
    );
    assert.ok(result.ok);
    const s = result.selection;
    assert.ok(s.splitTurn);
    assert.equal(s.kept[0]!.id, 't2-u', 'the latest request stays verbatim');
    assert.ok(ids(s.toCompact).includes('t2-a0'), 'the early part of the turn is summarized');
    assert.ok(counter.countMessages(s.kept) <= 10_000);
    assert.notEqual(s.kept[1]?.role, 'tool');
  });
});

describe('cut point: the recent part counted in tokens inside a long turn', () => {
  const tokens = (n: number) => ({ ...config().keepRecent, mode: 'tokens' as const, tokens: n });
  const previous: Message = {
    id: 'summary:e1',
    role: 'user',
    content: [{ type: 'text', text: `${SUMMARY_PREFIX}\n\nearlier work` }],
    summaryOf: 'e1',
  };

  it('cuts between the steps of the latest turn when the recent tokens all lie inside it, keeping its request verbatim', () => {
    const big = 'z'.repeat(4_000); // about 1,000 tokens per result
    // The latest turn (about 12,000 tokens) fits the kept part's bound, but the recent part is 4,000.
    const view = [previous, ...turn('t1', 'earlier', 1), ...turn('t2', 'long task', 12, big)];
    const result = selectForCompaction(view, options({ keepRecent: tokens(4_000), maxKeptTokens: 20_000 }));
    assert.ok(result.ok);
    const s = result.selection;
    assert.ok(s.splitTurn);
    assert.equal(s.kept[0]!.id, 't2-u', 'the request stays verbatim');
    assert.ok(ids(s.toCompact).includes('t2-a0') && ids(s.toCompact).includes('t2-t5'), 'the early steps are summarized');
    const keptSteps = counter.countMessages(s.kept.slice(1));
    assert.ok(keptSteps >= 4_000 && keptSteps < 4_000 + 2_200, `kept ${keptSteps} tokens of steps`);
    assert.notEqual(s.kept[1]?.role, 'tool', 'no result without its call');
  });

  it('never gives as usable a selection whose kept part is larger than allowed, but keeps the latest request whatever its size', () => {
    // A long turn wrote a large file, then the user asked something short: the recent 4,000 tokens
    // reach back into the write, and the cut before it would keep about 5,600 tokens, over the 5,000 allowed.
    const view = [
      previous,
      ...turn('t1', 'earlier', 4, 'z'.repeat(4_000)),
      user('t2-u', 'write the module'),
      assistant('t2-w', '', { callId: 'w', tool: 'create_file', input: { path: 'src/m.ts', content: 'm'.repeat(16_000) } }),
      toolResult('t2-r', 'w', 'create_file', 'Created src/m.ts (400 lines).'),
      assistant('t2-a', 'Written. '.repeat(300)),
      user('t3-u', 'and now run the tests'),
      assistant('t3-a', 'They pass. '.repeat(300)),
    ];
    const result = selectForCompaction(view, options({ keepRecent: tokens(4_000), maxKeptTokens: 5_000 }));
    assert.equal(result.ok, false);
    assert.ok(!result.ok && result.tooLarge);
    assert.match(!result.ok ? result.reason : '', /holds about 5,\d{3} tokens, more than the 5,000 the kept part may hold/);
    // Nothing can keep less than the latest request: kept alone, it is usable whatever its size.
    const alone = [...turn('t1', 'earlier', 2), user('t2-u', 'x'.repeat(40_000))];
    const kept = selectForCompaction(alone, options({ keepRecent: tokens(4_000), maxKeptTokens: 5_000 }));
    assert.ok(kept.ok);
    assert.deepEqual(ids(kept.selection.kept), ['t2-u']);
  });

  it('cuts at the latest request when the recent tokens reach back before it', () => {
    const big = 'z'.repeat(4_000);
    const view = [...turn('t1', 'earlier', 8, big), ...turn('t2', 'short task', 2, big)];
    const result = selectForCompaction(view, options({ keepRecent: tokens(4_000), maxKeptTokens: 20_000 }));
    assert.ok(result.ok);
    assert.equal(result.selection.splitTurn, false);
    assert.ok(counter.countMessages(result.selection.kept) >= 4_000);
    assert.ok(ids(result.selection.kept).includes('t2-u'));
  });
});

describe('cut point: where the recent part begins', () => {
  it('by tokens, after every message from which more than the recent tokens reach to the end, one larger than them too', () => {
    const view = [
      sys('s', 'be careful'),
      user('u', 'go'),
      assistant('w', 'w'.repeat(12_000)), // about 3,000 tokens: alone more than the recent 2,000
      assistant('a', 'a'.repeat(4_000)),
      assistant('b', 'b'.repeat(2_000)),
    ];
    const keepRecent = { ...config().keepRecent, mode: 'tokens' as const, tokens: 2_000 };
    assert.deepEqual(ids(view.slice(recentPartStart(view, options({ keepRecent })))), ['a', 'b']);
    assert.deepEqual(ids(view.slice(recentPartStart(view, options({ keepRecent: { ...keepRecent, tokens: 10_000 } })))), ['u', 'w', 'a', 'b']);
  });

  it('by messages or halves, at the recent messages; the system messages kept in front do not count', () => {
    const view = [sys('s', 'be careful'), ...turn('t1', 'first', 1), ...turn('t2', 'second', 1)];
    const recent = (keepRecent: SelectionOptions['keepRecent']) => ids(view.slice(recentPartStart(view, options({ keepRecent }))));
    assert.deepEqual(recent({ ...config().keepRecent, mode: 'messages', messages: 5 }), ['t1-done', 't2-u', 't2-a0', 't2-t0', 't2-done']);
    assert.deepEqual(recent({ ...config().keepRecent, mode: 'half' }), ['t2-u', 't2-a0', 't2-t0', 't2-done']);
  });
});

describe('cut point: the oldest half', () => {
  it('summarizes the oldest half of the messages and keeps the newer half', () => {
    const view = [sys('s', 'be careful'), ...turn('t1', 'first', 2), ...turn('t2', 'second', 2), ...turn('t3', 'third', 1)];
    const body = view.filter((m) => m.role !== 'system');
    const result = selectForCompaction(view, options({ keepRecent: { ...config().keepRecent, mode: 'half' } }));
    assert.ok(result.ok);
    // 15 messages: the split point rounds down to 7, a valid cut (not between a call and its result).
    assert.deepEqual(ids(result.selection.toCompact), ids(body.slice(0, 7)));
    assert.deepEqual(ids(result.selection.kept), ids(body.slice(7)));
  });

  it('moves the cut back rather than split a tool call from its result', () => {
    const view = [...turn('t1', 'first', 3), ...turn('t2', 'second', 1)];
    // 12 messages: the middle (6) falls on a tool result, so the cut moves back to the call before it.
    assert.equal(view[6]!.role, 'tool');
    const result = selectForCompaction(view, options({ keepRecent: { ...config().keepRecent, mode: 'half' } }));
    assert.ok(result.ok);
    assert.deepEqual(ids(result.selection.kept), ids(view.slice(5)));
  });
});
