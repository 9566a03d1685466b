import assert from 'node:assert/strict';
import { DEFAULT_CONFIG } from '../../../src/core/config';
import { EngineMemo } from '../../../src/core/engine-memo';
import { compactionEntry } from '../fixtures/compaction-entry';
import { modelView, summaryMessage, type CompactionEntry } from '../../../src/core/history';
import { scoreMessage } from '../../../src/core/importance';
import { MessageTokenCounter } from '../../../src/core/message-tokens';
import type { Message, ToolCallPart } from '../../../src/core/messages';
import { needleLedgerOf } from '../../../src/core/needles';
import { pruningCandidates, withStubs, type PruningOptions } from '../../../src/core/pruning';
import { buildSummaryRequest, countRequest } from '../../../src/core/summary-request';
import { loadTokenizer, type TextTokenizer } from '../../../src/core/tokenizer';
import { asLog, assistant, config, estimatingCounter, toolResult, user } from './fixtures';

/** A message whose content counts how often it is read: work done on the message, not remembered. */
function watched(message: Message): { readonly message: Message; readonly reads: () => number } {
  let reads = 0;
  const { content, ...rest } = message;
  const observed = Object.defineProperty({ ...rest }, 'content', {
    get: () => {
      reads++;
      return content;
    },
    enumerable: true,
  }) as Message;
  return { message: observed, reads: () => reads };
}

/** A tool call whose input counts how often it is read. */
function watchedCall(call: ToolCallPart): { readonly call: ToolCallPart; readonly reads: () => number } {
  let reads = 0;
  const { input, ...rest } = call;
  const observed = Object.defineProperty({ ...rest }, 'input', {
    get: () => {
      reads++;
      return input;
    },
    enumerable: true,
  }) as ToolCallPart;
  return { call: observed, reads: () => reads };
}

function entry(id: string, compacted: readonly string[], firstKept: string | null): CompactionEntry {
  return compactionEntry({
    id,
    summary: '## Session Summary (Compaction Round 1)\n### Current State\n- Working on the parser.',
    firstKeptMessageId: firstKept,
    compactedMessageIds: [...compacted],
    tokensBefore: 100,
    tokensAfter: 10,
  });
}

describe('the engine memo: what one engine remembers, another does not', () => {
  const importance = DEFAULT_CONFIG.importance;

  it('scores a message once per memo: again under the same memo from what it remembered, afresh under another', () => {
    const { message, reads } = watched(user('u1', 'Why does src/parser.ts fail? We decided to keep the old grammar.'));
    const a = new EngineMemo();
    const b = new EngineMemo();
    const first = scoreMessage(message, 0, 1, importance, a);
    const afterFirst = reads();
    assert.ok(afterFirst > 0, 'the first score reads the message');
    assert.equal(scoreMessage(message, 0, 1, importance, a), first);
    assert.equal(reads(), afterFirst, 'the same memo answers from what it remembered');
    assert.equal(scoreMessage(message, 0, 1, importance, b), first, 'another memo gives the same score');
    assert.ok(reads() > afterFirst, 'another memo reads the message again');
  });

  it('works out what pruning compares of a call once per memo', () => {
    const read = assistant('r1-a', '', { callId: 'c1', tool: 'read_file', input: { path: 'src/a.ts' } });
    const { call, reads } = watchedCall(read.content[0] as ToolCallPart);
    const view = [{ ...read, content: [call] }, toolResult('r1', 'c1', 'read_file', 'x'.repeat(4_000))];
    const counter = estimatingCounter();
    const options = (memo: EngineMemo): PruningOptions => ({
      oldMessageIds: new Set(['r1']),
      largeOutputTokens: 100,
      alreadyPruned: new Set(),
      countOutput: (message, part) => counter.countToolOutput(message, part),
      countStub: (part, key, stub) => counter.countDerived(part, key, stub),
      memo,
    });
    const a = new EngineMemo();
    const first = pruningCandidates(view, options(a));
    assert.equal(first.length, 1, 'the old large read is a candidate');
    const afterFirst = reads();
    assert.ok(afterFirst > 0);
    assert.deepEqual(pruningCandidates(view, options(a)), first);
    assert.equal(reads(), afterFirst, 'the same memo remembers the call');
    assert.deepEqual(pruningCandidates(view, options(new EngineMemo())), first);
    assert.ok(reads() > afterFirst, 'another memo reads the call again');
  });

  it('gives the same stubbed message and summary message under one memo, and objects of its own under another', () => {
    const output = toolResult('t1', 'c1', 'read_file', 'long output');
    const stubs = new Map([['c1', '[pruned]']]);
    const compaction = entry('e1', ['u1'], null);
    const a = new EngineMemo();
    const b = new EngineMemo();
    assert.equal(withStubs(output, stubs, a), withStubs(output, stubs, a));
    assert.notEqual(withStubs(output, stubs, a), withStubs(output, stubs, b));
    assert.deepEqual(withStubs(output, stubs, a), withStubs(output, stubs, b));
    assert.equal(summaryMessage(compaction, a), summaryMessage(compaction, a));
    assert.notEqual(summaryMessage(compaction, a), summaryMessage(compaction, b));
    assert.deepEqual(summaryMessage(compaction, a), summaryMessage(compaction, b));
  });

  it("derives a view whose summary is the memo's own: the same object each time under one memo, another under another", () => {
    const log = [
      ...asLog([user('u1', 'Fix the parser.'), user('u2', 'Now the lexer.')]),
      { type: 'compaction' as const, entry: entry('e1', ['u1'], 'u2') },
    ];
    const a = new EngineMemo();
    const [summaryA] = modelView(log, a);
    assert.equal(summaryA?.summaryOf, 'e1');
    assert.equal(modelView(log, a)[0], summaryA);
    const [summaryB] = modelView(log, new EngineMemo());
    assert.notEqual(summaryB, summaryA);
    assert.deepEqual(summaryB, summaryA);
  });

  it('scans the needles of a log once per memo', () => {
    const log = asLog([user('u1', 'Never edit config.json, it is generated.'), assistant('a1', 'Understood.')]);
    const a = new EngineMemo();
    const ledger = needleLedgerOf(log, a);
    assert.equal(ledger.needles.length, 1);
    assert.equal(needleLedgerOf(log, a), ledger, 'the same memo gives the ledger it made');
    const other = needleLedgerOf(log, new EngineMemo());
    assert.notEqual(other, ledger, 'another memo scans again');
    assert.deepEqual(other, ledger);
  });

  it('counts a rendered message as its message only under the memo it was rendered under', async () => {
    const o200k = await loadTokenizer('o200k_base');
    const counted: string[] = [];
    const spy: TextTokenizer = { name: o200k.name, count: (value) => (counted.push(value), o200k.count(value)) };
    const counter = new MessageTokenCounter(spy);
    const base = config();
    const long = toolResult('t1', 'c1', 'read_file', 'const answer = 42;\n'.repeat(300));
    const build = (offset: number, memo: EngineMemo) =>
      buildSummaryRequest({
        summary: base.summary,
        truncation: base.truncation,
        messages: [{ message: long, position: offset }],
        directive: { round: 1, summary: base.summary },
        purpose: 'summary',
        memo,
      });
    const longest = (): number => Math.max(0, ...counted.map((text) => text.length));
    const a = new EngineMemo();
    const total = countRequest(build(3, a), counter, a);
    counted.length = 0;
    assert.equal(countRequest(build(7, a), counter, a), total);
    assert.ok(longest() < 20, `under its memo only the new number is tokenized, not ${longest()} characters`);
    counted.length = 0;
    assert.equal(countRequest(build(7, a), counter, new EngineMemo()), total);
    assert.ok(longest() > 1_000, 'under another memo the rendered message is only text, tokenized whole');
  });
});
