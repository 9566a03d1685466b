import assert from 'node:assert/strict';
import { EngineMemo } from '../../../src/core/engine-memo';
import { branchLog, leftBehind, onTurn, TurnIndex } from '../../../src/core/branches';
import { modelView, type CompactionEntry, type LogRecord } from '../../../src/core/history';
import { messageText } from '../../../src/core/messages';
import { compactionEntry } from '../fixtures/compaction-entry';
import { assistant, user } from './fixtures';

/** A turn's records: its start, the user's request and the answer, made on it. */
function turnRecords(id: string, parent: string | null, words: string): LogRecord[] {
  return [
    { type: 'turn', turn: { id, parent, at: 0 } },
    onTurn({ type: 'message', message: user(`${id}-u`, `remember ${words}`) }, id),
    onTurn({ type: 'message', message: assistant(`${id}-a`, `noted ${words}`) }, id),
  ];
}

const seen = (log: readonly LogRecord[]): string[] => modelView(log, new EngineMemo()).map(messageText);

function entry(id: string, compacted: string[], firstKept: string | null, summary: string): CompactionEntry {
  return compactionEntry({
    id,
    summary,
    firstKeptMessageId: firstKept,
    compactedMessageIds: compacted,
    tokensBefore: 100,
    tokensAfter: 10,
    fileOperations: { read: [], modified: [], created: [], deleted: [] } as never,
    model: 'm',
    durationMs: 1,
  });
}

describe('a conversation that branches like its chat', () => {
  it('reads a straight chat as one branch: the path to the last turn holds every turn', () => {
    const log = [...turnRecords('t1', null, 'ALPHA-7'), ...turnRecords('t2', 't1', 'BRAVO-9'), ...turnRecords('t3', 't2', 'CHARLIE-3')];
    assert.deepEqual(seen(branchLog(log, 't3')), [
      'remember ALPHA-7',
      'noted ALPHA-7',
      'remember BRAVO-9',
      'noted BRAVO-9',
      'remember CHARLIE-3',
      'noted CHARLIE-3',
    ]);
  });

  it('leaves the rewound turns off the path of the turn that continues from an earlier one', () => {
    const log = [...turnRecords('t1', null, 'ALPHA-7'), ...turnRecords('t2', 't1', 'BRAVO-9'), ...turnRecords('t3', 't1', 'DELTA-4')];
    const view = seen(branchLog(log, 't3')).join(' ');
    assert.match(view, /ALPHA-7/);
    assert.match(view, /DELTA-4/);
    assert.doesNotMatch(view, /BRAVO-9/);
    // The rewound turn stays on disk and on its own branch.
    assert.match(seen(branchLog(log, 't2')).join(' '), /BRAVO-9/);
  });

  it('keeps a fork and the chat it came from apart, whichever order they are written in', () => {
    const log = [
      ...turnRecords('t1', null, 'ALPHA-7'),
      ...turnRecords('t2', 't1', 'BRAVO-9'),
      ...turnRecords('f1', 't1', 'FORK-1'),
      ...turnRecords('t3', 't2', 'ORIG-2'),
      ...turnRecords('f2', 'f1', 'FORK-2'),
    ];
    const fork = seen(branchLog(log, 'f2')).join(' ');
    const original = seen(branchLog(log, 't3')).join(' ');
    assert.match(fork, /ALPHA-7.*FORK-1.*FORK-2/);
    assert.doesNotMatch(fork, /BRAVO-9|ORIG-2/);
    assert.match(original, /ALPHA-7.*BRAVO-9.*ORIG-2/);
    assert.doesNotMatch(original, /FORK/);
  });

  it('continues a conversation from before turns: the old records are the trunk every branch starts with', () => {
    const trunk: LogRecord[] = [
      { type: 'message', message: user('u0', 'remember OLD-1') },
      { type: 'message', message: assistant('a0', 'noted OLD-1') },
    ];
    const log = [...trunk, ...turnRecords('t1', null, 'NEW-1'), ...turnRecords('t2', null, 'NEW-2')];
    assert.deepEqual(seen(branchLog(log, null)), ['remember OLD-1', 'noted OLD-1']);
    assert.match(seen(branchLog(log, 't2')).join(' '), /OLD-1.*NEW-2/);
    assert.doesNotMatch(seen(branchLog(log, 't2')).join(' '), /NEW-1/);
  });

  it('applies a compaction only on the branch it was made on, and rebuilds the view from the originals past it', () => {
    const compaction = entry('c1', ['t1-u', 't1-a', 't2-u', 't2-a'], null, 'SUMMARY of ALPHA and BRAVO');
    const log: LogRecord[] = [
      ...turnRecords('t1', null, 'ALPHA-7'),
      ...turnRecords('t2', 't1', 'BRAVO-9'),
      onTurn({ type: 'compaction', entry: compaction }, 't2'),
      ...turnRecords('t3', 't2', 'CHARLIE-3'),
      // Restore Checkpoint on the second turn: the next one continues the first.
      ...turnRecords('t4', 't1', 'ECHO-5'),
    ];
    const onCompacted = seen(branchLog(log, 't3')).join(' ');
    assert.match(onCompacted, /SUMMARY of ALPHA and BRAVO.*CHARLIE-3/);
    assert.doesNotMatch(onCompacted, /remember ALPHA-7/);
    const rewound = seen(branchLog(log, 't4'));
    assert.deepEqual(rewound, ['remember ALPHA-7', 'noted ALPHA-7', 'remember ECHO-5', 'noted ECHO-5']);
  });

  it('does not let a compaction made on a turn after the chat moved on from it reach the branch that moved on', () => {
    // Another chat (a fork at t1) compacted at t1 after this chat had gone on to t2.
    const compaction = entry('c1', ['t1-u', 't1-a'], null, 'SUMMARY of ALPHA');
    const log: LogRecord[] = [
      ...turnRecords('t1', null, 'ALPHA-7'),
      ...turnRecords('t2', 't1', 'BRAVO-9'),
      onTurn({ type: 'compaction', entry: compaction }, 't1'),
      ...turnRecords('f1', 't1', 'FORK-1'),
    ];
    assert.doesNotMatch(seen(branchLog(log, 't2')).join(' '), /SUMMARY/);
    assert.match(seen(branchLog(log, 'f1')).join(' '), /SUMMARY of ALPHA.*FORK-1/);
  });

  it('undoes a compaction only on the branch the undo was made on', () => {
    const compaction = entry('c1', ['t1-u', 't1-a'], null, 'SUMMARY of ALPHA');
    const log: LogRecord[] = [
      ...turnRecords('t1', null, 'ALPHA-7'),
      onTurn({ type: 'compaction', entry: compaction }, 't1'),
      ...turnRecords('t2', 't1', 'BRAVO-9'),
      onTurn({ type: 'undo', entryId: 'c1', at: 0 }, 't2'),
      ...turnRecords('t3', 't1', 'CHARLIE-3'),
    ];
    assert.doesNotMatch(seen(branchLog(log, 't2')).join(' '), /SUMMARY/);
    assert.match(seen(branchLog(log, 't3')).join(' '), /SUMMARY of ALPHA.*CHARLIE-3/);
  });

  it('names the turns a new turn leaves behind: the branch below its parent continued last', () => {
    const log = [
      ...turnRecords('t1', null, 'A'),
      ...turnRecords('t2', 't1', 'B'),
      ...turnRecords('t3', 't2', 'C'),
      ...turnRecords('t2b', 't1', 'B2'),
    ];
    const turns = new TurnIndex().update(log);
    assert.deepEqual(leftBehind(turns, 't1'), ['t2b']);
    assert.deepEqual(leftBehind(turns, 't2'), ['t3']);
    assert.deepEqual(leftBehind(turns, 't3'), []);
    assert.deepEqual(leftBehind(turns, null), ['t1', 't2b']);
  });

  it('stops a path at a parent the log lacks or one started after its child, instead of looping', () => {
    const log: LogRecord[] = [
      { type: 'turn', turn: { id: 'a', parent: 'b', at: 0 } },
      { type: 'turn', turn: { id: 'b', parent: 'a', at: 0 } },
      { type: 'turn', turn: { id: 'c', parent: 'missing', at: 0 } },
    ];
    const turns = new TurnIndex().update(log);
    assert.deepEqual(turns.path('b').turns, ['a', 'b']);
    assert.deepEqual(turns.path('c').turns, ['c']);
  });
});
