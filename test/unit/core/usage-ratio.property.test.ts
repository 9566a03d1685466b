import assert from 'node:assert/strict';
import fc from 'fast-check';
import { learnedAddedRatio, type ReportedUsage } from '../../../src/core/usage-calibration';

/**
 * A provider counts the system prompt and tool definitions its own way (its own tool-use prompt
 * added, or the definitions rendered shorter than their JSON) and messages at a ratio of their own.
 * What the gauge adds to the last report is messages: their ratio must not depend on the former.
 */
describe('the ratio of added messages, whatever the provider adds to the system prompt and tools', () => {
  const FIXED = 1_650;
  const PRIOR = { ratio: 1.128, tokens: 200 };

  const reports = (overheadCount: number, ratio: number, messages: readonly number[]): ReportedUsage[] =>
    messages.map((m, i) => ({
      anchorMessageId: `a${i}`,
      inputTokens: overheadCount + ratio * m,
      outputTokens: 10,
      basis: null,
      localTokens: FIXED + m,
      localFixed: FIXED,
      model: 'm',
    }));

  it('is what the provider counts for the messages that changed between requests, once a few were compared', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0.3 * FIXED, max: 2 * FIXED + 2_000, noNaN: true }),
        fc.double({ min: 0.6, max: 1.9, noNaN: true }),
        fc.array(fc.integer({ min: 0, max: 100_000 }), { minLength: 21, maxLength: 30 }),
        (overheadCount, ratio, messages) => {
          const learned = learnedAddedRatio(reports(overheadCount, ratio, messages), 'm', PRIOR)!;
          // The twenty latest requests, each against the one before it.
          const recent = messages.slice(-21);
          const compared = recent.slice(1).reduce((sum, m, i) => sum + Math.abs(m - recent[i]!), 0);
          const expected = (ratio * compared + PRIOR.ratio * PRIOR.tokens) / (compared + PRIOR.tokens);
          assert.ok(Math.abs(learned - expected) < 1e-6, `learned ${learned}, expected ${expected}`);
        },
      ),
      { numRuns: 300 },
    );
  });
});
