import assert from 'node:assert/strict';
import {
  beginTurn,
  decideCompaction,
  guardAfter,
  INITIAL_GUARD,
  mayAutoCompact,
  mayRetryOverflow,
  noteCompaction,
  noteOverflowRetry,
} from '../../../src/core/compaction-guard';

const CRITICAL = { level: 'critical' } as const;
const OVER = { level: 'over' } as const;

describe('anti-loop guard', () => {
  it('does not retry automatic compaction on the turn after a low-gain one', () => {
    let state = beginTurn(INITIAL_GUARD);
    state = noteCompaction(state, true);
    assert.equal(mayAutoCompact(state, CRITICAL).allowed, false);
    state = beginTurn(state);
    const verdict = mayAutoCompact(state, CRITICAL);
    assert.equal(verdict.allowed, false);
    assert.match(!verdict.allowed ? verdict.reason : '', /freed too little/);
    state = beginTurn(state);
    assert.equal(mayAutoCompact(state, CRITICAL).allowed, true);
  });

  it('never holds automatic compaction back while the next request would exceed the window', () => {
    let state = noteCompaction(beginTurn(INITIAL_GUARD), true);
    assert.equal(mayAutoCompact(state, CRITICAL).allowed, false);
    assert.equal(mayAutoCompact(state, OVER).allowed, true);
    state = beginTurn(state);
    assert.equal(mayAutoCompact(state, OVER).allowed, true);
  });

  it('a compaction that frees enough clears the wait', () => {
    let state = noteCompaction(beginTurn(INITIAL_GUARD), true);
    state = noteCompaction(state, false);
    assert.equal(mayAutoCompact(state, CRITICAL).allowed, true);
  });

  it('allows one overflow retry per turn, and again on the next turn', () => {
    let state = beginTurn(INITIAL_GUARD);
    assert.equal(mayRetryOverflow(state, 1).allowed, true);
    state = noteOverflowRetry(state);
    assert.equal(mayRetryOverflow(state, 1).allowed, false);
    state = beginTurn(state);
    assert.equal(mayRetryOverflow(state, 1).allowed, true);
  });
});

describe('deciding whether to compact', () => {
  const at = (level: 'ok' | 'warning' | 'critical' | 'over') => ({ level, shouldCompact: level === 'critical' || level === 'over' });
  const waiting = noteCompaction(beginTurn(INITIAL_GUARD), true);

  it('compacts at the compaction point, asks first once when the user wants to be asked, and never after "Not now"', () => {
    assert.deepEqual(decideCompaction(at('critical'), INITIAL_GUARD, { confirm: false }), { kind: 'compact' });
    assert.deepEqual(decideCompaction(at('critical'), INITIAL_GUARD, { confirm: true }), { kind: 'ask' });
    assert.deepEqual(decideCompaction(at('critical'), INITIAL_GUARD, { confirm: true, asked: true }), { kind: 'none' });
    assert.deepEqual(decideCompaction(at('over'), INITIAL_GUARD, { confirm: false, declined: true }), { kind: 'none' });
  });

  it('says why it waits after a low-gain compaction, except over the window', () => {
    const blocked = decideCompaction(at('critical'), waiting, { confirm: false });
    assert.equal(blocked.kind, 'blocked');
    assert.match(blocked.kind === 'blocked' ? blocked.reason : '', /freed too little/);
    assert.deepEqual(decideCompaction(at('over'), waiting, { confirm: false }), { kind: 'compact' });
  });

  it('in the background, prepares a summary ahead past the warning level, at the compaction point too, and nothing below it', () => {
    assert.deepEqual(decideCompaction(at('warning'), INITIAL_GUARD, { confirm: false, ahead: true }), { kind: 'ahead' });
    assert.deepEqual(decideCompaction(at('critical'), waiting, { confirm: true, ahead: true }), { kind: 'ahead' });
    assert.deepEqual(decideCompaction(at('ok'), INITIAL_GUARD, { confirm: false, ahead: true }), { kind: 'none' });
    assert.deepEqual(
      decideCompaction(at('warning'), INITIAL_GUARD, { confirm: false }),
      { kind: 'none' },
      'at a step, nothing below the compaction point',
    );
  });

  it('keeps waiting after a reload as it would have without one: the rest of the turn and the next turn', () => {
    const blockedAt = (userMessagesSince: number, turnsBegun: number): boolean => {
      let guard = guardAfter({ lowGain: true }, userMessagesSince);
      for (let i = 0; i < turnsBegun; i++) guard = beginTurn(guard);
      return !mayAutoCompact(guard, { level: 'critical' }).allowed;
    };
    assert.equal(blockedAt(0, 0), true, 'in the turn of the low-gain compaction');
    assert.equal(blockedAt(1, 1), true, 'in the next turn, its message sent');
    assert.equal(blockedAt(2, 1), false, 'in the turn after that');
    assert.deepEqual(guardAfter({ lowGain: false }, 0), INITIAL_GUARD);
    assert.deepEqual(guardAfter(undefined, 3), INITIAL_GUARD);
  });
});
