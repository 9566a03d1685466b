import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  beginTurn,
  CompactionGuard,
  decideColdCompaction,
  decideCompaction,
  guardAfter,
  INITIAL_GUARD,
  mayAutoCompact,
  mayRetryOverflow,
  maySummarize,
  noteCompaction,
  noteOverflowRetry,
  noteSummary,
  progressSince,
  RESTING_COMPACTIONS,
  restNotice,
  stopsForLoop,
  SUMMARY_FAILURES_TO_REST,
  type ColdMoment,
  type SummaryStreak,
} from '../../../src/core/compaction-guard';
import { cacheState } from '../../../src/core/cache-lifetime';
import type { CompactionReason, LogRecord } from '../../../src/core/history';
import { compactionRecord } from '../fixtures/compaction-entry';

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
  const at = (level: 'ok' | 'warning' | 'critical' | 'over') => ({
    level,
    shouldCompact: level === 'critical' || level === 'over',
    warningAt: 7_000,
  });
  const waiting = noteCompaction(beginTurn(INITIAL_GUARD), true);
  const beforeRequest = (confirm: boolean, asked = false, declined = false) => ({ at: 'before-request', confirm, asked, declined }) as const;

  it('before a request: compacts at the compaction point, asks first once when the user wants to be asked, and never after "Not now"', () => {
    assert.deepEqual(decideCompaction(at('critical'), INITIAL_GUARD, beforeRequest(false)), { kind: 'compact' });
    assert.deepEqual(decideCompaction(at('critical'), INITIAL_GUARD, beforeRequest(true)), { kind: 'ask' });
    assert.deepEqual(decideCompaction(at('critical'), INITIAL_GUARD, beforeRequest(true, true)), { kind: 'none' });
    assert.deepEqual(decideCompaction(at('over'), INITIAL_GUARD, beforeRequest(false, true, true)), { kind: 'none' });
    assert.deepEqual(decideCompaction(at('warning'), INITIAL_GUARD, beforeRequest(false)), { kind: 'none' }, 'nothing below the compaction point');
  });

  it('says why it waits after a low-gain compaction, except over the window', () => {
    const blocked = decideCompaction(at('critical'), waiting, beforeRequest(false));
    assert.equal(blocked.kind, 'blocked');
    assert.match(blocked.kind === 'blocked' ? blocked.reason : '', /freed too little/);
    assert.deepEqual(decideCompaction(at('over'), waiting, beforeRequest(false)), { kind: 'compact' });
  });

  it('at the end of a turn, compacts in the background only what needs no question and no wait', () => {
    assert.deepEqual(decideCompaction(at('critical'), INITIAL_GUARD, { at: 'end-of-turn', confirm: false }), { kind: 'compact' });
    assert.deepEqual(decideCompaction(at('critical'), INITIAL_GUARD, { at: 'end-of-turn', confirm: true }), { kind: 'none' }, 'the next turn asks');
    assert.deepEqual(decideCompaction(at('critical'), waiting, { at: 'end-of-turn', confirm: false }), { kind: 'none' });
    assert.deepEqual(decideCompaction(at('warning'), INITIAL_GUARD, { at: 'end-of-turn', confirm: false }), { kind: 'none' });
  });

  it('on overflow, compacts and retries up to the retries allowed per turn, and says why not after', () => {
    const overflow = { at: 'overflow', retriesPerTurn: 1 } as const;
    assert.deepEqual(decideCompaction(at('ok'), beginTurn(INITIAL_GUARD), overflow), { kind: 'compact' });
    const refused = decideCompaction(at('ok'), noteOverflowRetry(beginTurn(INITIAL_GUARD)), overflow);
    assert.equal(refused.kind, 'blocked');
    assert.match(refused.kind === 'blocked' ? refused.reason : '', /overflowed the context window again after 1 compaction in this turn/);
  });

  it('in the background, prepares a summary ahead past the warning level, at the compaction point too, and nothing below it', () => {
    assert.deepEqual(decideCompaction(at('warning'), INITIAL_GUARD, { at: 'ahead' }), { kind: 'ahead' });
    assert.deepEqual(decideCompaction(at('critical'), waiting, { at: 'ahead' }), { kind: 'ahead' });
    assert.deepEqual(decideCompaction(at('ok'), INITIAL_GUARD, { at: 'ahead' }), { kind: 'none' });
  });

  it('prepares nothing ahead while the last summary could not get below the warning level and the user has said nothing since', () => {
    const stuck = (messagesSince: number) => ({ at: 'ahead', last: { tokensAfter: 7_200, messagesSince: () => messagesSince } }) as const;
    assert.deepEqual(decideCompaction(at('warning'), INITIAL_GUARD, stuck(0)), { kind: 'none' });
    assert.deepEqual(decideCompaction(at('warning'), INITIAL_GUARD, stuck(1)), { kind: 'ahead' });
    const below = { at: 'ahead', last: { tokensAfter: 3_000, messagesSince: () => 0 } } as const;
    assert.deepEqual(decideCompaction(at('warning'), INITIAL_GUARD, below), { kind: 'ahead' });
  });

  it("the conversation's guard: counts a decided overflow retry, notes only automatic compactions, and is the log's until a turn starts", () => {
    let budget = at('critical');
    let fromLog = INITIAL_GUARD;
    const guard = new CompactionGuard(
      () => budget,
      () => fromLog,
    );
    fromLog = guardAfter({ lowGain: true }, 0);
    assert.equal(guard.decide(beforeRequest(false)).kind, 'blocked', "before any turn, the log's guard");
    fromLog = INITIAL_GUARD;
    guard.startTurn();
    guard.noteCompaction('manual', true);
    assert.equal(guard.decide(beforeRequest(false)).kind, 'compact', 'a manual compaction is not held against the next');
    guard.noteCompaction('threshold', true);
    assert.equal(guard.decide(beforeRequest(false)).kind, 'blocked');
    budget = at('over');
    assert.equal(guard.decide(beforeRequest(false)).kind, 'compact');
    const overflow = { at: 'overflow', retriesPerTurn: 2 } as const;
    assert.equal(guard.decide(overflow).kind, 'compact');
    assert.equal(guard.decide(overflow).kind, 'compact');
    assert.equal(guard.decide(overflow).kind, 'blocked', 'two retries decided: the third is refused');
    guard.startTurn();
    assert.equal(guard.decide(overflow).kind, 'compact', 'a new turn, new retries');
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

describe('a summarizer whose summaries keep failing', () => {
  type Step = { readonly reason: CompactionReason; readonly ok: boolean };
  /** Runs compactions in order: whether each asked the summarizer, and what the chat was told after it. */
  const run = (steps: readonly Step[], summarizer = 'local') => {
    let streak: SummaryStreak | undefined;
    return steps.map(({ reason, ok }) => {
      const asked = maySummarize(streak, summarizer, reason).allowed;
      const before = streak;
      streak = noteSummary(streak, summarizer, !asked ? { kind: 'rested' } : ok ? { kind: 'written' } : { kind: 'failed', failure: 'it timed out' });
      return { reason, ok, asked, notice: restNotice(before, streak) };
    });
  };
  const automatic = (count: number, ok = false): Step[] => Array.from({ length: count }, () => ({ reason: 'threshold', ok }));

  it('is not asked by the four automatic compactions after two failures in a row, then asked again, and the chat is told once', () => {
    const ran = run(automatic(2 + RESTING_COMPACTIONS + 1 + RESTING_COMPACTIONS + 1));
    assert.deepEqual(
      ran.map((r) => (r.asked ? 'ask' : '-')),
      ['ask', 'ask', '-', '-', '-', '-', 'ask', '-', '-', '-', '-', 'ask'],
    );
    assert.deepEqual(
      ran.flatMap((r, i) => (r.notice ? [i] : [])),
      [1],
    );
    assert.match(ran[1]!.notice!, /Summaries by local failed 2 times in a row \(the last: it timed out\)/);
  });

  it('holds to its rules whatever comes: asked when the user asks, resting only after two failures, never for more than four', () => {
    const stepArb = fc.record({ reason: fc.constantFrom<CompactionReason>('threshold', 'overflow', 'manual'), ok: fc.boolean() });
    fc.assert(
      fc.property(fc.array(stepArb, { maxLength: 60 }), (steps) => {
        const ran = run(steps);
        let failuresInARow = 0;
        let restedInARow = 0;
        let toldThisStreak = false;
        for (const r of ran) {
          if (r.reason === 'manual') assert.ok(r.asked, 'a compaction the user asks for asks the summarizer');
          if (!r.asked) {
            assert.ok(failuresInARow >= SUMMARY_FAILURES_TO_REST, 'rests only after two failures in a row');
            restedInARow++;
            assert.ok(restedInARow <= RESTING_COMPACTIONS, 'never rests for more than four compactions in a row');
          } else {
            restedInARow = 0;
            failuresInARow = r.ok ? 0 : failuresInARow + 1;
            if (r.ok) toldThisStreak = false;
          }
          if (r.notice) {
            assert.ok(!toldThisStreak, 'told once a streak');
            toldThisStreak = true;
          }
        }
      }),
    );
  });

  it('starts afresh with another summarizer', () => {
    let streak: SummaryStreak | undefined;
    for (let i = 0; i < 2; i++) streak = noteSummary(streak, 'local', { kind: 'failed', failure: 'x' });
    assert.equal(maySummarize(streak, 'local', 'threshold').allowed, false);
    assert.equal(maySummarize(streak, 'remote', 'threshold').allowed, true);
    streak = noteSummary(streak, 'remote', { kind: 'failed', failure: 'y' });
    assert.equal(streak?.failures, 1);
    assert.equal(maySummarize(streak, 'remote', 'threshold').allowed, true);
  });
});

describe('compaction loops inside a turn', () => {
  const compaction = (id: string): LogRecord => compactionRecord({ id, reason: 'threshold' });
  const read = (id: string): LogRecord => ({ type: 'file', event: { kind: 'read', path: `${id}.ts`, actor: 'agent', at: 1 } });
  const plan = (status: 'pending' | 'done'): LogRecord => ({ type: 'plan', plan: { id: `p-${status}`, steps: [{ step: 'Fix it', status }], at: 1 } });
  const ran = (exitCode: number): LogRecord => ({ type: 'command', run: { command: 'npm test', exitCode, at: 1 } });

  it('counts as progress a plan that changed, a file the agent wrote, a command that exited 0, a file it had not read', () => {
    const kinds: Array<[string, LogRecord[], boolean]> = [
      ['nothing', [], false],
      ['files read again', [read('a'), read('b')], false],
      ['a file not read before', [read('a'), read('c')], true],
      ['a failed command', [ran(1)], false],
      ['the same plan again', [plan('pending')], false],
      ['a user edit', [{ type: 'file', event: { kind: 'modified', path: 'a.ts', actor: 'user', at: 1 } }], false],
      ['a plan change', [plan('done')], true],
      ['an agent write', [{ type: 'file', event: { kind: 'modified', path: 'a.ts', actor: 'agent', at: 1 } }], true],
      ['a passing command', [ran(0)], true],
    ];
    for (const [what, between, progress] of kinds) {
      const log = [plan('pending'), read('a'), read('b'), compaction('c1'), ...between];
      assert.equal(progressSince(log, 'c1'), progress, what);
      assert.equal(stopsForLoop(log, 'c1'), !progress, what);
    }
  });

  it('counts as progress a file read again that an earlier turn read, not one this turn read before the compaction', () => {
    const inTurn = (record: LogRecord, turnId: string): LogRecord => ({ ...record, turnId }) as LogRecord;
    const earlier = [inTurn(read('a'), 't1'), inTurn(read('b'), 't2')];
    const log = [...earlier, inTurn(compaction('c1'), 't2')];
    assert.equal(progressSince([...log, inTurn(read('a'), 't2')], 'c1'), true, 'asked for again in a later turn');
    assert.equal(progressSince([...log, inTurn(read('b'), 't2')], 'c1'), false, 'read again by the same turn');
  });

  it('never stops the first compaction of a turn, nor one whose earlier compaction is not on the branch', () => {
    assert.equal(stopsForLoop([compaction('c1')], undefined), false);
    assert.equal(stopsForLoop([compaction('c1')], 'gone'), false);
  });

  it('lets no run of compactions without progress reach a third, and stops only a second in a row', () => {
    type Event = 'compact' | 'read' | 'progress';
    fc.assert(
      fc.property(fc.array(fc.constantFrom<Event>('compact', 'read', 'progress'), { maxLength: 40 }), (events) => {
        // The agent loop as it follows the rule: it stops the turn after a compaction the rule calls a loop.
        // Reading again a file read before the compaction is no progress.
        const log: LogRecord[] = [plan('pending'), read('seen')];
        let earlier: string | undefined;
        let run = 0;
        let n = 0;
        for (const event of events) {
          if (event === 'read') log.push(read('seen'));
          if (event === 'progress') {
            log.push(ran(0));
            run = 0;
          }
          if (event !== 'compact') continue;
          const stops = stopsForLoop(log, earlier);
          earlier = `c${++n}`;
          log.push(compaction(earlier));
          run++;
          assert.equal(stops, run === 2, `stops exactly at the second compaction without progress (${events.join(',')})`);
          if (stops) break;
        }
        assert.ok(run <= 2);
      }),
    );
  });
});

const MINUTE = 60_000;

const moment = (over: Partial<ColdMoment> = {}): ColdMoment => ({
  enabled: true,
  cache: { kind: 'expired', since: 10 * MINUTE },
  lastRequestAt: 5 * MINUTE,
  lastColdAt: undefined,
  midTurn: false,
  level: 'ok',
  aheadReady: false,
  aheadRunning: false,
  ...over,
});

describe('a cold cache is a free compaction', () => {
  it('prunes once the cache has expired, at the start of a turn', () => {
    assert.deepEqual(decideColdCompaction(moment()), { kind: 'prune', applyAhead: false });
  });

  it('never while the cache is warm or its lifetime unknown, never in the middle of a turn, never when turned off', () => {
    assert.equal(decideColdCompaction(moment({ cache: { kind: 'warm', expiresAt: 20 * MINUTE } })).kind, 'none');
    assert.equal(decideColdCompaction(moment({ cache: { kind: 'unknown' } })).kind, 'none');
    assert.equal(decideColdCompaction(moment({ midTurn: true })).kind, 'none');
    assert.equal(decideColdCompaction(moment({ enabled: false })).kind, 'none');
  });

  it('applies once per lapse: not again before the next request', () => {
    assert.equal(decideColdCompaction(moment({ lastColdAt: 11 * MINUTE })).kind, 'none');
    assert.equal(decideColdCompaction(moment({ lastColdAt: 4 * MINUTE })).kind, 'prune', 'an earlier lapse');
  });

  it('applies a summary prepared ahead only past the warning level and when it is ready; never breaks one being made', () => {
    assert.deepEqual(decideColdCompaction(moment({ level: 'warning', aheadReady: true, aheadRunning: true })), { kind: 'prune', applyAhead: true });
    assert.deepEqual(decideColdCompaction(moment({ level: 'ok', aheadReady: true, aheadRunning: true })), { kind: 'prune', applyAhead: false });
    assert.equal(decideColdCompaction(moment({ level: 'critical', aheadReady: false, aheadRunning: true })).kind, 'none');
  });

  it('property: compacts only when enabled, expired, at a turn’s start and not yet since the last request', () => {
    fc.assert(
      fc.property(
        fc.boolean(),
        fc.boolean(),
        fc.integer({ min: 0, max: 60 }),
        fc.option(fc.integer({ min: 0, max: 60 }), { nil: undefined }),
        fc.integer({ min: 0, max: 120 }),
        (enabled, midTurn, last, cold, now) => {
          const lifetime = 5;
          const cache = cacheState(last, lifetime, now);
          const decision = decideColdCompaction(moment({ enabled, midTurn, lastRequestAt: last, lastColdAt: cold, cache }));
          const expected = enabled && !midTurn && now >= last + lifetime && (cold === undefined || cold < last);
          assert.equal(decision.kind === 'prune', expected);
        },
      ),
    );
  });
});
