import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { CompactionOutcome } from '../../../src/core/compaction';
import { SummaryAhead, type AheadState, type TakenAhead } from '../../../src/app/compaction/summary-ahead';

const NOOP: CompactionOutcome = { status: 'noop', reason: 'nothing to compact' };

/** A summary being computed, settled by hand. */
function pendingSummary() {
  let settle: (outcome: CompactionOutcome) => void = () => undefined;
  let fail: (error: Error) => void = () => undefined;
  let signal: AbortSignal | undefined;
  const compute = (s: AbortSignal) =>
    new Promise<CompactionOutcome>((resolve, reject) => {
      signal = s;
      settle = resolve;
      fail = reject;
    });
  return { compute, settle: (o: CompactionOutcome) => settle(o), fail: (e: Error) => fail(e), signal: () => signal };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('the summary prepared ahead', () => {
  it('goes idle → preparing → ready → applied, and a failed summary is its outcome, not a throw', async () => {
    const ahead = new SummaryAhead();
    assert.equal(ahead.state(), 'idle');
    const job = pendingSummary();
    assert.equal(ahead.start(job.compute), true);
    assert.equal(ahead.state(), 'preparing');
    assert.equal(ahead.start(pendingSummary().compute), false, 'one at a time');
    job.fail(new Error('the summarizer timed out'));
    await tick();
    assert.equal(ahead.state(), 'ready');
    const taken = ahead.take();
    assert.ok(taken);
    assert.deepEqual(await taken.outcome, { status: 'failed', reason: 'the summarizer timed out' });
    taken.applied();
    assert.equal(ahead.state(), 'applied');
    assert.equal(ahead.take(), undefined, 'taken once');
  });

  it('is stale when a compaction could not use it, which stops it being computed', async () => {
    const ahead = new SummaryAhead();
    const job = pendingSummary();
    ahead.start(job.compute);
    const taken = ahead.take()!;
    assert.equal(ahead.pending(), false, 'taken: nothing else takes it');
    taken.stale();
    assert.equal(ahead.state(), 'stale');
    assert.equal(job.signal()?.aborted, true);
    assert.equal(ahead.start(pendingSummary().compute), true, 'the next one starts');
    assert.equal(ahead.state(), 'preparing');
  });

  it('goes back to idle when cancelled or when nothing could prepare it, and a late settle changes nothing', async () => {
    const ahead = new SummaryAhead();
    const job = pendingSummary();
    ahead.start(job.compute);
    ahead.cancel();
    assert.equal(ahead.state(), 'idle');
    assert.equal(job.signal()?.aborted, true);
    job.settle(NOOP);
    await tick();
    assert.equal(ahead.state(), 'idle', 'a cancelled summary never becomes ready');

    const orphan = pendingSummary();
    ahead.start(orphan.compute);
    const replaced = orphan.signal()!;
    ahead.abandon(new AbortController().signal);
    assert.equal(ahead.state(), 'preparing', "another job's signal abandons nothing");
    ahead.abandon(replaced);
    assert.equal(ahead.state(), 'idle');
  });

  it('property: any sequence of events keeps one summary at most, taken at most once, in the state its events say', async () => {
    type Event = 'start' | 'settle' | 'take' | 'applied' | 'stale' | 'cancel';
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom<Event>('start', 'settle', 'take', 'applied', 'stale', 'cancel'), { maxLength: 30 }),
        async (events) => {
          const ahead = new SummaryAhead();
          // The oracle: the state as the diagram says, with the job under way and the one taken.
          let expected = 'idle' as AheadState;
          let jobs: ReturnType<typeof pendingSummary>[] = [];
          let taken: TakenAhead | undefined;
          let takenState: 'preparing' | 'ready' | undefined;
          // Whether the summary taken is still the latest one started or cancelled.
          let current = false;
          for (const event of events) {
            switch (event) {
              case 'start': {
                const job = pendingSummary();
                const started = ahead.start(job.compute);
                assert.equal(started, expected !== 'preparing' && expected !== 'ready');
                if (started) {
                  jobs.push(job);
                  expected = 'preparing';
                  current = false;
                }
                break;
              }
              case 'settle':
                for (const job of jobs) job.settle(NOOP);
                jobs = [];
                await tick();
                if (expected === 'preparing') expected = 'ready';
                break;
              case 'take': {
                const got = ahead.take();
                assert.equal(got !== undefined, expected === 'preparing' || expected === 'ready');
                if (got) {
                  taken = got;
                  takenState = expected as 'preparing' | 'ready';
                  expected = 'stale';
                  current = true;
                }
                break;
              }
              case 'applied':
              case 'stale':
                if (taken && takenState) {
                  taken[event]();
                  // Only while nothing was started or cancelled since does the taken one say the state.
                  if (current) expected = event;
                  taken = undefined;
                  takenState = undefined;
                }
                break;
              case 'cancel':
                ahead.cancel();
                if (expected === 'preparing' || expected === 'ready') {
                  expected = 'idle';
                  current = false;
                }
                break;
            }
            assert.equal(ahead.state(), expected, `after ${events.join(', ')}`);
            assert.equal(ahead.pending(), expected === 'preparing' || expected === 'ready');
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
