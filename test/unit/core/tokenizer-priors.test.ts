import assert from 'node:assert/strict';
import { FAMILY_PRIOR_TOKENS, familyPrior, STAND_IN_PRIOR_TOKENS } from '../../../src/core/tokenizer-priors';
import {
  firstReportRatio,
  learnedAddedRatio,
  learnedRatio,
  priorSpread,
  rememberedPrior,
  type ReportedUsage,
} from '../../../src/core/usage-calibration';

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

  it("weighs a figure measured with the model's own tokenizer more than one measured with a stand-in", () => {
    assert.equal(familyPrior('longrun/qwen2.5-coder:14b')?.tokens, FAMILY_PRIOR_TOKENS);
    assert.equal(familyPrior('anthropic/claude-sonnet-4-5')?.tokens, STAND_IN_PRIOR_TOKENS);
    assert.ok(STAND_IN_PRIOR_TOKENS < FAMILY_PRIOR_TOKENS / 5);
  });

  it('leans high after a first report that counts more than the prior, by no more than the prior is uncertain, whatever the provider adds to the overhead', () => {
    // Longrun's first request: 1,650 tokens of system prompt and tools, a 50-token question; the
    // provider counts 1.276 for one local token of the whole (its own tool-use prompt included).
    const first = report(2_170, 1_700, 1_650);
    const claude = familyPrior('anthropic/claude-sonnet-4-5')!;
    const qwen = familyPrior('longrun/qwen2.5-coder:14b')!;
    for (const prior of [claude, qwen]) {
      const ratio = learnedAddedRatio([first], 'm', prior)!;
      assert.ok(ratio > prior.ratio, `${ratio} leans above the prior ${prior.ratio}`);
      assert.ok(ratio <= prior.ratio + priorSpread(prior) + 1e-9, `${ratio} within the prior's uncertainty`);
      // Thousands of tokens more that the provider adds to the overhead move it no further.
      const hidden = learnedAddedRatio([report(2_170 + 3_000, 1_700, 1_650)], 'm', prior)!;
      assert.ok(hidden - ratio < 0.01, `${hidden} against ${ratio}`);
    }
    // Against Claude's stand-in figure the report is most of what is known, so it leans further.
    assert.ok(learnedAddedRatio([first], 'm', claude)! - claude.ratio > learnedAddedRatio([first], 'm', qwen)! - qwen.ratio);
    // A report that says less (a provider that renders tools shorter) counts for its 50 tokens of messages only.
    const lower = report(1_500, 1_700, 1_650);
    const measured = firstReportRatio(lower, qwen);
    assert.ok(measured <= qwen.ratio && measured > qwen.ratio - 0.01, 'fifty tokens of messages say little of their ratio');
    assert.equal(learnedAddedRatio([lower], 'm', qwen), (measured * 50 + qwen.ratio * qwen.tokens) / (50 + qwen.tokens));
    assert.equal(learnedAddedRatio([], 'm', qwen), undefined);
  });

  it('takes more of the ratio of a first report from its messages the more of them it holds', () => {
    // 200 tokens of system prompt and tools, and messages, all counted 1.25 for one local token.
    const prior = { ratio: 1, tokens: 1_000 };
    const ratios = [50, 2_000, 20_000, 200_000].map((m) => firstReportRatio(report(Math.round(1.25 * (m + 200)), m + 200, 200), prior));
    ratios.reduce((before, ratio) => (assert.ok(ratio > before, `${ratios.join(', ')}`), ratio), prior.ratio - 1e-9);
    assert.ok(ratios[0]! - prior.ratio < 0.001, 'a question says nothing against what a provider may add to the overhead');
    assert.ok(ratios.at(-1)! > 1.2, `a request of messages says their ratio: ${ratios.at(-1)}`);
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
