import assert from 'node:assert/strict';
import { assessBudget, compactionThreshold } from '../../../src/core/budget';
import { config } from './fixtures';

const trigger = config().trigger;
const window = (limit: number) => ({ limit, source: 'model' as const });

describe('budget: levels and thresholds', () => {
  it('computes the threshold of each trigger mode', () => {
    assert.equal(compactionThreshold(128_000, { ...trigger, mode: 'reserved-percent' }), 93_600); // (limit − 11,000) × 80%
    assert.equal(compactionThreshold(128_000, { ...trigger, mode: 'reserve' }), 128_000 - 16_384); // limit − 16,384
    assert.equal(compactionThreshold(32_000, { ...trigger, mode: 'reserve' }), 24_000); // limit − 25% when smaller
    assert.equal(compactionThreshold(200_000, { ...trigger, mode: 'percent' }), 160_000); // 80% of the limit
    assert.equal(compactionThreshold(100_000, { ...trigger, mode: 'levels' }), 90_000); // the critical level, 90%
  });

  it('returns ok, warning, critical and over at the default levels of 75% and 90%', () => {
    assert.equal(assessBudget(74_999, window(100_000), trigger).level, 'ok');
    assert.equal(assessBudget(75_000, window(100_000), trigger).level, 'warning');
    assert.equal(assessBudget(90_000, window(100_000), trigger).level, 'critical');
    assert.equal(assessBudget(100_001, window(100_000), trigger).level, 'over');
  });

  it('asks for compaction only at critical or over, and only when automatic compaction is on', () => {
    assert.equal(assessBudget(80_000, window(100_000), trigger).shouldCompact, false);
    assert.equal(assessBudget(95_000, window(100_000), trigger).shouldCompact, true);
    const off = assessBudget(95_000, window(100_000), trigger, false);
    assert.equal(off.shouldCompact, false);
    assert.match(off.explanation, /turned off/);
  });

  it('explains the level with the numbers behind it', () => {
    const a = assessBudget(81_000, window(128_000), trigger);
    assert.equal(a.compactAt, 115_200);
    assert.equal(a.warningAt, 96_000);
    assert.match(a.explanation, /81,000 of 128,000 tokens \(63\.3%\)/);
  });

  it('never warns above the compaction point', () => {
    const a = assessBudget(50_000, window(100_000), { ...trigger, mode: 'percent', windowThreshold: 0.6 });
    assert.ok(a.warningAt <= a.compactAt);
  });

  it('disables automatic compaction for an unknown or zero window, with a stated reason', () => {
    const unknown = { limit: 0, source: 'unknown' as const, reason: 'the context window of "my-private-model" is unknown' };
    const a = assessBudget(50_000, unknown, trigger);
    assert.equal(a.level, 'unknown');
    assert.equal(a.shouldCompact, false);
    assert.match(a.explanation, /my-private-model/);
    assert.equal(assessBudget(1, window(0), trigger).shouldCompact, false);
  });
});
