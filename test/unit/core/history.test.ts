import assert from 'node:assert/strict';
import { EngineMemo } from '../../../src/core/engine-memo';
import {
  activeEntries,
  allMessages,
  INTERRUPTED_RESULT,
  modelView,
  nextRound,
  originalTask,
  SUMMARY_PREFIX,
  undoLastCompaction,
  type CompactionEntry,
  type LogRecord,
} from '../../../src/core/history';
import { compactionEntry } from '../fixtures/compaction-entry';
import { asLog, sys, turn, user } from './fixtures';

function entry(id: string, round: number, firstKept: string | null, compacted: string[]): CompactionEntry {
  return compactionEntry({
    id,
    round,
    summary: `summary ${id}`,
    firstKeptMessageId: firstKept,
    compactedMessageIds: compacted,
    tokensBefore: 100,
    tokensAfter: 10,
    durationMs: 1,
  });
}

describe("history: the model's view of an append-only log", () => {
  const messages = [sys('s', 'system'), ...turn('t1', 'build it', 2), ...turn('t2', 'test it', 1)];
  const ids = (log: readonly LogRecord[]) => modelView(log, new EngineMemo()).map((m) => m.id);

  it('shows every message when nothing was compacted', () => {
    assert.deepEqual(
      ids(asLog(messages)),
      messages.map((m) => m.id),
    );
  });

  it('shows system messages, then the summary, then the kept messages and all appended since', () => {
    const compacted = ['t1-u', 't1-a0', 't1-t0', 't1-a1', 't1-t1', 't1-done'];
    const log: LogRecord[] = [
      ...asLog(messages),
      { type: 'compaction', entry: entry('e1', 1, 't2-u', compacted) },
      ...asLog([user('later', 'more')]),
    ];
    const view = modelView(log, new EngineMemo());
    assert.deepEqual(
      view.map((m) => m.id),
      ['s', 'summary:e1', 't2-u', 't2-a0', 't2-t0', 't2-done', 'later'],
    );
    const summary = view[1]!;
    assert.equal(summary.role, 'user');
    assert.ok(summary.content[0]?.type === 'text' && summary.content[0].text.startsWith(SUMMARY_PREFIX));
  });

  it('keeps originals: undoing the last compaction restores the previous view', () => {
    const first: LogRecord[] = [
      ...asLog(messages),
      { type: 'compaction', entry: entry('e1', 1, 't2-u', ['t1-u', 't1-a0', 't1-t0', 't1-a1', 't1-t1', 't1-done']) },
    ];
    const second: LogRecord[] = [...first, { type: 'compaction', entry: entry('e2', 2, 't2-done', ['t2-u', 't2-a0', 't2-t0']) }];
    assert.equal(nextRound(second), 3);
    const undo = undoLastCompaction(second, 5);
    assert.ok(!('error' in undo));
    const undone = [...second, undo];
    assert.deepEqual(ids(undone), ids(first));
    assert.deepEqual(
      activeEntries(undone).map((e) => e.id),
      ['e1'],
    );
    assert.equal(nextRound(undone), 2);
    const undoAll = undoLastCompaction(undone, 6);
    assert.ok(!('error' in undoAll));
    assert.deepEqual(
      ids([...undone, undoAll]),
      messages.map((m) => m.id),
    );
  });

  it('says there is nothing to undo when nothing was compacted', () => {
    const result = undoLastCompaction(asLog(messages), 0);
    assert.ok('error' in result);
  });

  it('keeps the latest request of a split turn in the view while its early part stays out', () => {
    const log: LogRecord[] = [
      ...asLog(messages),
      {
        type: 'compaction',
        entry: { ...entry('e1', 1, 't2-u', ['t1-u', 't1-a0', 't1-t0', 't1-a1', 't1-t1', 't1-done', 't2-a0', 't2-t0']), splitTurn: true },
      },
    ];
    assert.deepEqual(ids(log), ['s', 'summary:e1', 't2-u', 't2-done']);
  });

  it('finds the original task verbatim: the first user message, whatever it looks like', () => {
    assert.equal(originalTask(asLog([sys('s', 'x'), user('u', 'Build a flashcard app'), user('v', 'later')])), 'Build a flashcard app');
    // Text that starts like a summary is what the user typed, not a summary.
    const pasted = asLog([sys('s', 'x'), { id: 'old', role: 'user', content: [{ type: 'text', text: `${SUMMARY_PREFIX} z` }] }, user('u', 'Build')]);
    assert.equal(originalTask(pasted), `${SUMMARY_PREFIX} z`);
  });

  it('puts what was appended while a compaction that kept nothing was computed after the summary', () => {
    const log: LogRecord[] = [
      ...asLog([sys('s', 'system'), user('u1', 'first'), { id: 'a1', role: 'assistant', content: [{ type: 'text', text: 'answer' }] }]),
      // Appended after the snapshot, before the compaction record landed.
      ...asLog([user('u2', 'meanwhile')]),
      { type: 'compaction', entry: { ...entry('e1', 1, null, ['u1', 'a1']) } },
    ];
    assert.deepEqual(ids(log), ['s', 'summary:e1', 'u2']);
  });

  it('answers a tool call left without its result with an interrupted result, and leaves out a result without its call', () => {
    const log = asLog([
      user('u', 'go'),
      {
        id: 'a1',
        role: 'assistant',
        content: [
          { type: 'tool-call', toolCallId: 'c1', toolName: 'read_file', input: {} },
          { type: 'tool-call', toolCallId: 'c2', toolName: 'search_text', input: {} },
        ],
      },
      { id: 't1', role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 'read_file', output: 'ok' }] },
      user('u2', 'and?'),
      { id: 't9', role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c9', toolName: 'read_file', output: 'orphan' }] },
      { id: 'a2', role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'c3', toolName: 'read_file', input: {} }] },
    ]);
    const view = modelView(log, new EngineMemo());
    assert.deepEqual(ids(log), ['u', 'a1', 't1', 'interrupted:a1', 'u2', 'a2', 'interrupted:a2']);
    const synthetic = view.find((m) => m.id === 'interrupted:a1')!;
    assert.deepEqual(synthetic.content, [
      { type: 'tool-result', toolCallId: 'c2', toolName: 'search_text', output: INTERRUPTED_RESULT, isError: true },
    ]);
    // The log itself is unchanged: the orphan is still on disk.
    assert.equal(allMessages(log).length, 6);
  });
});

describe('history: usage and file records', () => {
  it('replays file records into the cumulative ledger and finds the last usage report', async () => {
    const { ledgerOf, lastUsage } = await import('../../../src/core/history');
    const { renderFileOperations } = await import('../../../src/core/file-ledger');
    const log: LogRecord[] = [
      ...asLog([user('u', 'go')]),
      { type: 'file', event: { kind: 'read', path: 'a.ts', actor: 'agent', at: 1 } },
      { type: 'usage', usage: { anchorMessageId: 'u', inputTokens: 10, outputTokens: 2, basis: null } },
      { type: 'file', event: { kind: 'modified', path: 'b.ts', actor: 'user', at: 2 } },
      { type: 'usage', usage: { anchorMessageId: 'u', inputTokens: 20, outputTokens: 3, basis: null } },
    ];
    assert.match(renderFileOperations(ledgerOf(log)), /<read-files>\na\.ts\n<\/read-files>\n<modified-files>\nb\.ts \(modified; user\)/);
    assert.equal(lastUsage(log)?.inputTokens, 20);
    assert.deepEqual(
      modelView(log, new EngineMemo()).map((m) => m.id),
      ['u'],
    );
  });
});

describe('lines', () => {
  it('splits LF and CRLF text without an empty last line', async () => {
    const { splitLines } = await import('../../../src/core/lines');
    assert.deepEqual(splitLines('a\r\nb\nc\n'), ['a', 'b', 'c']);
    assert.deepEqual(splitLines(''), []);
    assert.deepEqual(splitLines('\n'), ['']);
  });
});
