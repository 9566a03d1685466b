import assert from 'node:assert/strict';
import { beginTurn, INITIAL_GUARD, mayAutoCompact, mayRetryOverflow, noteCompaction, noteOverflowRetry } from '../../../src/core/compaction-guard';

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
