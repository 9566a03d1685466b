import assert from 'node:assert/strict';
import fc from 'fast-check';
import { EngineMemo } from '../../../src/core/engine-memo';
import { applyCompaction, computeCompaction, type CompactionDeps } from '../../../src/core/compaction';
import { DEFAULT_CONFIG, type CompactionConfig } from '../../../src/core/config';
import { EMPTY_LEDGER } from '../../../src/core/file-ledger';
import { currentBasis, lastUsage, modelView, undoLastCompaction, usageReports, type LogRecord } from '../../../src/core/history';
import type { Message } from '../../../src/core/messages';
import { countContext, learnedRatio } from '../../../src/core/usage-calibration';
import { estimatingCounter, FakeClock, idGenerator, RecordingSummarizer, templateSummary } from './fixtures';

/**
 * The gauge against the truth: replaying random interleavings of turns, manual compactions and
 * undos (a compaction or an undo may land while a model call is in flight), the budget never
 * reports more than the true size of the view by more than 2%. The provider counts with the same
 * tokenizer, so the truth is the exact local count of what the next request would carry.
 */

const OVERHEAD = 300;

type Op = { kind: 'turn'; size: number; answer: number; during: 'nothing' | 'compact' | 'undo' } | { kind: 'compact' } | { kind: 'undo' };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('turn' as const),
      size: fc.integer({ min: 1, max: 3_000 }),
      answer: fc.integer({ min: 1, max: 2_000 }),
      during: fc.constantFrom('nothing' as const, 'compact' as const, 'undo' as const),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('compact' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('undo' as const) }) },
);

describe('gauge property: stale usage never inflates the budget', function () {
  this.timeout(120_000);

  it('stays within 2% above the true size of the view, whatever lands while a request is in flight', async () => {
    const config: CompactionConfig = {
      ...DEFAULT_CONFIG,
      minMessages: 0,
      keepRecent: { ...DEFAULT_CONFIG.keepRecent, mode: 'messages', messages: 2 },
    };
    let stale = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 40 }), async (ops) => {
        const counter = estimatingCounter();
        const clock = new FakeClock();
        const summarizer = new RecordingSummarizer(() => ({ text: templateSummary('The work so far, in a few words, for the test.') }));
        const deps: CompactionDeps = { counter, summarizer, clock, newId: idGenerator(), memo: new EngineMemo() };
        let log: LogRecord[] = [];
        let n = 0;
        const id = (): string => `m${++n}`;
        const truth = (): number => counter.countMessages(modelView(log, new EngineMemo())) + OVERHEAD;

        const compactNow = async (): Promise<void> => {
          const outcome = await computeCompaction(
            { log, reason: 'manual', config, window: { limit: 1_000_000, source: 'model' }, ledger: EMPTY_LEDGER },
            deps,
          );
          if (outcome.status !== 'compacted') return;
          const applied = applyCompaction(log, outcome.compaction, deps.memo);
          if (applied.ok) log = [...applied.log];
        };
        const undoNow = (): void => {
          const record = undoLastCompaction(log, clock.now());
          if (!('error' in record)) log = [...log, record];
        };

        for (const op of ops) {
          if (op.kind === 'compact') await compactNow();
          else if (op.kind === 'undo') undoNow();
          else {
            log = [...log, { type: 'message', message: { id: id(), role: 'user', content: [{ type: 'text', text: 'u'.repeat(op.size) }] } }];
            // The request is built and sent: what the provider will report is fixed now.
            const basis = currentBasis(log);
            const sent = truth();
            if (op.during === 'compact') await compactNow();
            if (op.during === 'undo') undoNow();
            if (currentBasis(log) !== basis) stale++;
            const answer: Message = { id: id(), role: 'assistant', content: [{ type: 'text', text: 'a'.repeat(op.answer) }] };
            log = [
              ...log,
              { type: 'message', message: answer },
              {
                type: 'usage',
                usage: {
                  anchorMessageId: answer.id,
                  inputTokens: sent,
                  outputTokens: counter.countText('a'.repeat(op.answer)),
                  basis,
                  localTokens: sent,
                },
              },
            ];
          }
          const ratio = learnedRatio(usageReports(log), undefined) ?? 1;
          const budget = countContext(modelView(log, new EngineMemo()), counter, lastUsage(log), currentBasis(log), OVERHEAD, ratio).tokens;
          const exact = truth();
          assert.ok(
            budget <= exact * 1.02,
            `budget ${budget} against a view of ${exact} after ${op.kind}${op.kind === 'turn' ? ` (${op.during} in flight)` : ''}`,
          );
        }
      }),
      { numRuns: 500 },
    );
    // The property means little unless requests were often overtaken by a compaction or an undo.
    assert.ok(stale >= 500, `only ${stale} requests were overtaken`);
  });

  it('never trusts again a report made under a compaction that was undone, although the next compaction has the same round', async () => {
    const config: CompactionConfig = {
      ...DEFAULT_CONFIG,
      minMessages: 0,
      keepRecent: { ...DEFAULT_CONFIG.keepRecent, mode: 'messages', messages: 2 },
    };
    const counter = estimatingCounter();
    const clock = new FakeClock();
    const deps: CompactionDeps = {
      counter,
      summarizer: new RecordingSummarizer(() => ({ text: templateSummary('Short.') })),
      clock,
      newId: idGenerator(),
      memo: new EngineMemo(),
    };
    let log: LogRecord[] = [];
    for (let i = 0; i < 8; i++)
      log.push({
        type: 'message',
        message: { id: `m${i}`, role: i % 2 ? 'assistant' : 'user', content: [{ type: 'text', text: 'x'.repeat(2_000) }] },
      });
    const compactNow = async (): Promise<string> => {
      const outcome = await computeCompaction(
        { log, reason: 'manual', config, window: { limit: 1_000_000, source: 'model' }, ledger: EMPTY_LEDGER },
        deps,
      );
      assert.equal(outcome.status, 'compacted');
      if (outcome.status !== 'compacted') return '';
      log = [...log, ...outcome.compaction.records];
      return outcome.compaction.entry!.id;
    };
    const first = await compactNow();
    // A report made under the first summary, for a large request.
    log.push({ type: 'message', message: { id: 'a1', role: 'assistant', content: [{ type: 'text', text: 'answer' }] } });
    log.push({ type: 'usage', usage: { anchorMessageId: 'a1', inputTokens: 50_000, outputTokens: 10, basis: first } });
    const undo = undoLastCompaction(log, clock.now());
    assert.ok(!('error' in undo));
    log.push(undo);
    const second = await compactNow();
    const view = modelView(log, new EngineMemo());
    const counted = countContext(view, counter, lastUsage(log), currentBasis(log));
    assert.notEqual(second, first);
    assert.equal(counted.source, 'local');
    assert.equal(counted.tokens, counter.countMessages(view));
  });
});
