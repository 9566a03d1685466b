import assert from 'node:assert/strict';
import { compactionRecord } from '../fixtures/compaction-entry';
import type { LogRecord } from '../../../src/core/history';
import type { Message } from '../../../src/core/messages';
import type { PruningEntry } from '../../../src/core/pruning';
import fc from 'fast-check';
import { archivedItems, cutToTokens, formatRecall, recall, type ArchivedItem } from '../../../src/core/recall';
import { asLog, assistant, estimatingCounter, toolResult, user } from './fixtures';

const counter = estimatingCounter();
const countText = (text: string): number => counter.countText(text);

function compaction(id: string, compacted: readonly string[], firstKept: string | null): LogRecord {
  return compactionRecord({ id, reason: 'threshold', firstKeptMessageId: firstKept, compactedMessageIds: compacted });
}

function pruning(id: string, outputs: Array<{ messageId: string; toolCallId: string }>): LogRecord {
  const entry: PruningEntry = {
    id,
    reason: 'threshold',
    outputs: outputs.map((o) => ({ ...o, toolName: 'read_file', kind: 'duplicate', stub: `[Pruned by Longrun: ${o.toolCallId}]`, tokens: 100 })),
    tokensBefore: 0,
    tokensAfter: 0,
    createdAt: 0,
  };
  return { type: 'pruning', entry };
}

const messages: Message[] = [
  user('u1', 'Add spaced repetition to the flashcard scheduler'),
  assistant('a1', 'Reading the scheduler first.', { callId: 'c1', tool: 'read_file', input: { path: 'src/scheduler.ts' } }),
  toolResult(
    't1',
    'c1',
    'read_file',
    'src/scheduler.ts (lines 1-3 of 3)\n1| export function nextReview(card) {\n2|   return card.interval * EASE_FACTOR;\n3| }',
  ),
  assistant('a2', 'The ease factor lives in a constant; I will change nextReview.', {
    callId: 'c2',
    tool: 'run_command',
    input: { command: 'npm test' },
  }),
  toolResult('t2', 'c2', 'run_command', 'Exit code: 1\nFAIL test/deck.test.ts: expected 3 cards, got 2 (src/deck.ts:1)'),
  user('u2', 'Now fix the failing deck test'),
  assistant(
    'a3',
    'Looking at the deck.',
    { callId: 'c3', tool: 'read_file', input: { path: './src/deck.ts' } },
    { callId: 'c4', tool: 'read_file', input: { path: 'src/cards.ts' } },
  ),
  {
    id: 't3',
    role: 'tool',
    content: [
      { type: 'tool-result', toolCallId: 'c3', toolName: 'read_file', output: 'src/deck.ts (lines 1-1 of 1)\n1| export const deck = loadCards();' },
      {
        type: 'tool-result',
        toolCallId: 'c4',
        toolName: 'read_file',
        output: 'src/cards.ts (lines 1-1 of 1)\n1| export function loadCards() { return []; }',
      },
    ],
  },
  assistant('a4', 'Fixed.'),
];

describe('recall: the archived originals of a conversation', () => {
  const log: LogRecord[] = [
    ...asLog(messages),
    compaction('e1', ['u1', 'a1', 't1', 'a2', 't2'], 'u2'),
    pruning('p1', [{ messageId: 't3', toolCallId: 'c3' }]),
  ];

  it('archives only what a compaction or a pruning in force took out of the view, and of a pruned message only the pruned output', () => {
    const items = archivedItems(log);
    assert.deepEqual(
      items.map((i) => `${i.messageId}:${i.archivedBy}`),
      ['u1:summary', 'a1:summary', 't1:summary', 'a2:summary', 't2:summary', 't3:pruning'],
    );
    const pruned = items.at(-1)!;
    assert.match(pruned.text, /deck\.ts/);
    assert.doesNotMatch(pruned.text, /loadCards\(\) \{ return/, 'the output still in the view is not archived');
    assert.deepEqual(pruned.paths, ['src/deck.ts']);
  });

  it('archives nothing that an undo brought back into the view', () => {
    const undone: LogRecord[] = [...log, { type: 'undo', entryId: 'e1', at: 1 }, { type: 'undo', entryId: 'p1', at: 2 }];
    assert.deepEqual(archivedItems(undone), []);
    assert.match(
      formatRecall(recall(archivedItems(undone), { query: 'scheduler' }, countText)),
      /Nothing of this conversation has been compacted or pruned/,
    );
  });

  it('finds messages by words, all of them, whatever their case', () => {
    const result = recall(archivedItems(log), { query: 'EASE nextreview' }, countText);
    assert.deepEqual(
      result.shown.map((s) => s.item.messageId),
      ['t1', 'a2'],
    );
    assert.equal(result.partial, false);
    const text = formatRecall(result);
    assert.match(text, /^2 archived messages match the words "EASE nextreview"\./);
    assert.match(text, /2\|   return card\.interval \* EASE_FACTOR;/);
  });

  it('gives the best partial matches, and says so, when no message holds every word', () => {
    const result = recall(archivedItems(log), { query: 'deck migration' }, countText);
    assert.equal(result.partial, true);
    assert.deepEqual(
      result.shown.map((s) => s.item.messageId),
      ['t2', 't3'],
    );
    assert.match(formatRecall(result), /in part: none holds every word/);
  });

  it('finds the reads and runs of a file by its path, however the call spelled it', () => {
    assert.deepEqual(
      recall(archivedItems(log), { path: 'src/deck.ts' }, countText).shown.map((s) => s.item.messageId),
      ['t2', 't3'],
    );
    assert.deepEqual(
      recall(archivedItems(log), { path: 'deck.ts' }, countText).shown.map((s) => s.item.messageId),
      ['t2', 't3'],
    );
    assert.deepEqual(
      recall(archivedItems(log), { path: 'src\\scheduler.ts' }, countText).shown.map((s) => s.item.messageId),
      ['a1', 't1'],
    );
    // The file tool's own output comes before a mere mention when the budget is short.
    const short = recall(archivedItems(log), { path: 'src/deck.ts', maxTokens: 50 }, countText);
    assert.deepEqual(
      short.shown.map((s) => s.item.messageId),
      ['t3'],
    );
    assert.deepEqual(
      short.omitted.map((o) => o.item.messageId),
      ['t2'],
    );
  });

  it('finds a pruned output by the id its stub names', () => {
    assert.deepEqual(
      recall(archivedItems(log), { query: 'c3' }, countText).shown.map((s) => s.item.messageId),
      ['t3'],
    );
  });

  it('cuts the answer to the budget and says what it cut and what it left out', () => {
    const long: Message[] = [
      user('q', 'start'),
      ...[1, 2, 3].flatMap((n) => [
        assistant(`a${n}`, '', { callId: `c${n}`, tool: 'run_command', input: { command: `make part${n}` } }),
        toolResult(`t${n}`, `c${n}`, 'run_command', `build log ${n}\n${'warning: unused variable\n'.repeat(200)}`),
      ]),
      user('later', 'next'),
    ];
    const archived = archivedItems([
      ...asLog(long),
      compaction(
        'e',
        long.slice(0, -1).map((m) => m.id),
        'later',
      ),
    ]);
    const result = recall(archived, { query: 'build log', maxTokens: 1_000 }, countText);
    const used = result.shown.reduce((sum, s) => sum + s.tokens, 0);
    assert.ok(used <= 1_000, `${used} tokens shown`);
    // The newest match first: it is cut to what is left, the others are listed with their size.
    assert.deepEqual(
      result.shown.map((s) => [s.item.messageId, s.cut]),
      [['t3', true]],
    );
    assert.deepEqual(
      result.omitted.map((o) => o.item.messageId),
      ['t2', 't1'],
    );
    const text = formatRecall(result);
    assert.match(text, /\[Cut to fit the answer's budget of 1,000 tokens: [\d,]+ tokens shown of message 7\./);
    assert.match(
      text,
      /\[Not shown, for the budget of 1,000 tokens: 2 more matches of [\d,]+ tokens: message 5 \(tool, [\d,]+ tokens\), message 3 \(tool, [\d,]+ tokens\)\. Narrow the query to see them\.\]/,
    );
  });

  it('says when nothing matches', () => {
    assert.match(
      formatRecall(recall(archivedItems(log), { query: 'kubernetes' }, countText)),
      /^No archived message matches the words "kubernetes" \(6 archived messages searched\)/,
    );
  });
});

describe('recall: a search given the archive one item at a time', () => {
  /** The answer as ranking every match at once gives it: each match in rank order while it fits, the first that does not cut. */
  function rankedAtOnce(items: readonly ArchivedItem[], words: readonly string[], maxTokens: number) {
    const scored = items.flatMap((item) => {
      const hits = words.filter((w) => item.text.toLowerCase().includes(w)).length;
      return hits === 0 ? [] : [{ item, hits, tokens: countText(item.text) }];
    });
    const complete = scored.filter((s) => s.hits === words.length);
    const ranked = (complete.length > 0 ? complete : scored).sort((a, b) => b.hits - a.hits || b.item.number - a.item.number);
    const shown: Array<{ id: string; cut: boolean }> = [];
    const omitted: string[] = [];
    let left = maxTokens;
    for (const m of ranked) {
      if (m.tokens <= left) {
        shown.push({ id: m.item.messageId, cut: false });
        left -= m.tokens;
      } else if (left >= 200 && shown.every((s) => !s.cut)) {
        shown.push({ id: m.item.messageId, cut: true });
        left -= countText(cutToTokens(m.item.text, left, countText));
      } else omitted.push(m.item.messageId);
    }
    return { matched: ranked.length, partial: complete.length === 0 && scored.length > 0, shown, omitted };
  }

  it('answers as ranking every match at once does, holding whole only what may still be shown', () => {
    const vocabulary = ['alpha', 'beta', 'gamma', 'delta'];
    fc.assert(
      fc.property(
        fc.array(fc.record({ words: fc.subarray(vocabulary), size: fc.integer({ min: 0, max: 3_000 }) }), { maxLength: 60 }),
        fc.subarray(vocabulary, { minLength: 1 }),
        fc.integer({ min: 50, max: 4_000 }),
        (made, words, maxTokens) => {
          const items: ArchivedItem[] = made.map((m, i) => ({
            messageId: `m${i}`,
            number: i + 1,
            role: 'tool',
            archivedBy: 'summary',
            text: `${m.words.join(' ')}\n${'x'.repeat(m.size)}`,
            paths: [],
          }));
          const result = recall(items, { query: words.join(' '), maxTokens }, countText);
          const expected = rankedAtOnce(items, words, maxTokens);
          assert.equal(result.matched, expected.matched);
          assert.equal(result.partial, expected.partial);
          assert.deepEqual(
            result.shown.map((s) => ({ id: s.item.messageId, cut: s.cut })),
            [...expected.shown].sort((a, b) => Number(a.id.slice(1)) - Number(b.id.slice(1))),
          );
          assert.deepEqual(
            result.omitted.map((o) => o.item.messageId),
            expected.omitted,
          );
        },
      ),
      { numRuns: 300 },
    );
  });
});
