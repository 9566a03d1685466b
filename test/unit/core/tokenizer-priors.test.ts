import assert from 'node:assert/strict';
import { FAMILY_PRIOR_TOKENS, familyPrior } from '../../../src/core/tokenizer-priors';
import { learnedRatio, rememberedPrior, type ReportedUsage } from '../../../src/core/usage-calibration';

const report = (input: number, local: number, fixed?: number): ReportedUsage => ({
  anchorMessageId: 'a',
  inputTokens: input,
  outputTokens: 10,
  basis: null,
  localTokens: local,
  ...(fixed !== undefined ? { localFixed: fixed } : {}),
  model: 'm',
});

describe('the first guess: a prior ratio per model family', () => {
  it("knows a model's family by its vendor/id, and has no prior for a model of no known family", () => {
    assert.equal(familyPrior('longrun/qwen2.5-coder:14b')?.ratio, 1.127);
    assert.equal(familyPrior('longrun/ollama/QwQ-32B')?.family, 'qwen');
    assert.equal(familyPrior('longrun/llama3.1:8b')?.ratio, 1.014);
    assert.equal(familyPrior('copilot/claude-sonnet-4')?.ratio, 1.128);
    assert.equal(familyPrior('longrun/devstral-small')?.family, 'mistral');
    assert.equal(familyPrior('copilot/gemini-2.5-pro')?.ratio, 1.249);
    assert.equal(familyPrior('longrun/deepseek-r1:14b')?.ratio, 1.071);
    assert.equal(familyPrior('copilot/gpt-4o'), undefined, 'o200k is the local count itself');
    assert.equal(familyPrior(undefined), undefined);
    assert.equal(familyPrior('longrun/qwen3')?.tokens, FAMILY_PRIOR_TOKENS);
  });

  it('never trusts one report dominated by the system prompt: the prior holds until the messages say otherwise', () => {
    const prior = { ratio: 1.2, tokens: 2_000 };
    // The provider counts the system prompt and tools (9,500 of the 10,000 local tokens) its own way.
    const first = [report(8_000, 10_000, 9_500)];
    const ratio = learnedRatio(first, 'm', prior)!;
    assert.ok(Math.abs(ratio - 1.2) < 0.1, `one request of system prompt moved the ratio to ${ratio}`);
    // Reports whose messages outweigh the system prompt do set it.
    const later = [...first, report(26_000, 20_000, 9_500), report(36_000, 30_000, 9_500), report(46_000, 40_000, 9_500)];
    const learned = learnedRatio(later, 'm', prior)!;
    assert.ok(Math.abs(learned - 1.2) < 0.03, `learned ${learned}`);
  });

  it('weighs a report by all its tokens when it does not say how many are the system prompt, as before', () => {
    assert.equal(learnedRatio([report(12_000, 10_000)], 'm'), 13_000 / 11_000);
  });

  it('remembers what was learned, weighing as much as the evidence behind it, within a bound', () => {
    const remembered = rememberedPrior([report(24_000, 20_000, 4_000)], 'm', { ratio: 1, tokens: 2_000 })!;
    assert.ok(Math.abs(remembered.ratio - (1.2 * 16_000 + 2_000) / 18_000) < 1e-9);
    assert.equal(remembered.tokens, 18_000);
    assert.equal(rememberedPrior([report(240_000, 200_000, 0)], 'm')!.tokens, 20_000);
    assert.equal(rememberedPrior([], 'm'), undefined);
  });
});
