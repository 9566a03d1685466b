import assert from 'node:assert/strict';
import { DEFAULT_CONFIG, resolveConfig } from '../../../src/core/config';

describe('configuration', () => {
  it('has the documented defaults', () => {
    assert.equal(DEFAULT_CONFIG.trigger.mode, 'levels');
    assert.equal(DEFAULT_CONFIG.trigger.warningThreshold, 0.75);
    assert.equal(DEFAULT_CONFIG.trigger.criticalThreshold, 0.9);
    assert.equal(DEFAULT_CONFIG.keepRecent.mode, 'tokens');
    assert.equal(DEFAULT_CONFIG.keepRecent.tokens, 20_000);
    assert.equal(DEFAULT_CONFIG.summary.targetTokens, 800);
    assert.equal(DEFAULT_CONFIG.summary.temperature, 0.3);
    assert.equal(DEFAULT_CONFIG.importance.roleSystem, 10);
    assert.equal(DEFAULT_CONFIG.minGainShare, 0.1);
  });

  it('keeps valid values and fills the rest with defaults', () => {
    const { config, problems } = resolveConfig({ trigger: { mode: 'reserve' }, summary: { depth: 'brief' } });
    assert.deepEqual(problems, []);
    assert.equal(config.trigger.mode, 'reserve');
    assert.equal(config.trigger.reserveTokens, 16_384);
    assert.equal(config.summary.depth, 'brief');
  });

  it('replaces each invalid value by its default and names it once', () => {
    const { config, problems } = resolveConfig({
      trigger: { warningThreshold: 7, criticalThreshold: 0.8 },
      summary: { depth: 'epic' },
      minMessages: 'ten',
    });
    assert.equal(config.trigger.warningThreshold, 0.75);
    assert.equal(config.trigger.criticalThreshold, 0.8);
    assert.equal(config.summary.depth, 'standard');
    assert.equal(config.minMessages, DEFAULT_CONFIG.minMessages);
    assert.deepEqual(problems.map((p) => p.setting).sort(), ['minMessages', 'summary.depth', 'trigger.warningThreshold']);
    const warning = problems.find((p) => p.setting === 'trigger.warningThreshold')!;
    assert.equal(warning.value, 7);
    assert.equal(warning.usedInstead, 0.75);
  });

  it('rejects a warning level above the critical one', () => {
    const { config, problems } = resolveConfig({ trigger: { warningThreshold: 0.95, criticalThreshold: 0.9 } });
    assert.equal(config.trigger.warningThreshold, 0.9);
    assert.equal(problems.length, 1);
  });

  it('treats a non-object as defaults with one problem', () => {
    const { config, problems } = resolveConfig('nonsense');
    assert.deepEqual(config, DEFAULT_CONFIG);
    assert.equal(problems.length, 1);
  });

  it('replaces a keyword list with a bad element by the default list', () => {
    const { config, problems } = resolveConfig({ importance: { keywords: ['ok', 3] } });
    assert.deepEqual(config.importance.keywords, DEFAULT_CONFIG.importance.keywords);
    assert.equal(problems.length, 1);
  });
});
