import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { ReportedUsage } from '../../../src/core/log';
import { billingRulesFor, callCost, pricesAtPrompt, type BillingRules, type ModelPrices } from '../../../src/core/usage-cost';
import { cacheHitShare, usageReport } from '../../../src/core/usage-report';

/** Dollars to the micro-dollar, so that sums of floats compare exactly. */
const micro = (dollars: number | undefined): number | undefined => (dollars === undefined ? undefined : Math.round(dollars * 1_000_000));

const SONNET: ModelPrices = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 };

describe('usage cost: the arithmetic of each provider’s bill', () => {
  it('bills Anthropic input by kind: uncached at the input price, reads and writes at the catalogue’s cache prices', () => {
    // input_tokens 500, cache_read_input_tokens 8,000, cache_creation_input_tokens 1,500, as the AI SDK adds them up.
    const cost = callCost({ input: 10_000, cacheRead: 8_000, cacheWrite: 1_500, output: 500 }, SONNET, 'anthropic');
    assert.deepEqual(
      {
        uncached: micro(cost?.uncached),
        cacheRead: micro(cost?.cacheRead),
        cacheWrite: micro(cost?.cacheWrite),
        output: micro(cost?.output),
        total: micro(cost?.total),
      },
      { uncached: 1_500, cacheRead: 2_400, cacheWrite: 5_625, output: 7_500, total: 17_025 },
    );
  });

  it('takes Anthropic’s multiples of the input price when the catalogue lists no cache prices: reads 0.1×, writes 1.25× (5 min) or 2× (1 h)', () => {
    const plain: ModelPrices = { input: 3, output: 15 };
    const fiveMinutes = callCost({ input: 10_000, cacheRead: 8_000, cacheWrite: 1_500, output: 0 }, plain, 'anthropic');
    assert.equal(micro(fiveMinutes?.cacheRead), 2_400);
    assert.equal(micro(fiveMinutes?.cacheWrite), 5_625);
    const hour = callCost({ input: 10_000, cacheRead: 0, cacheWrite: 1_500, output: 0, cacheTtl: '1h' }, SONNET, 'anthropic');
    // The catalogue's write price is the 5-minute one; a 1-hour write is twice the input price.
    assert.equal(micro(hour?.cacheWrite), 9_000);
  });

  it('bills OpenAI’s and Gemini’s cached input at their own listed price, and knows no price when none is listed', () => {
    const gpt4o: ModelPrices = { input: 2.5, output: 10, cacheRead: 1.25 };
    const openai = callCost({ input: 10_000, cacheRead: 6_016, cacheWrite: 0, output: 100 }, gpt4o, 'openai');
    assert.equal(micro(openai?.total), 9_960 + 7_520 + 1_000);
    const gemini = callCost({ input: 20_000, cacheRead: 12_000, cacheWrite: 0, output: 0 }, { input: 1.25, output: 10, cacheRead: 0.31 }, 'google');
    assert.equal(micro(gemini?.total), 10_000 + 3_720);
    assert.equal(callCost({ input: 10_000, cacheRead: 6_016, cacheWrite: 0, output: 0 }, { input: 2.5, output: 10 }, 'openai'), undefined);
    assert.equal(micro(callCost({ input: 10_000, cacheRead: 0, cacheWrite: 0, output: 0 }, { input: 2.5, output: 10 }, 'openai')?.total), 25_000);
  });

  it('bills every token of a request at the tier its own prompt falls in, cached tokens counted in the prompt', () => {
    const gemini: ModelPrices = { input: 1.25, output: 10, cacheRead: 0.125, tiers: [{ above: 200_000, input: 2.5, output: 15, cacheRead: 0.25 }] };
    const short = callCost({ input: 200_000, cacheRead: 150_000, cacheWrite: 0, output: 1_000 }, gemini, 'google');
    const long = callCost({ input: 200_001, cacheRead: 150_000, cacheWrite: 0, output: 1_000 }, gemini, 'google');
    assert.equal(micro(short?.total), 50_000 * 1.25 + 150_000 * 0.125 + 1_000 * 10);
    assert.equal(micro(long?.total), Math.round(50_001 * 2.5 + 150_000 * 0.25 + 1_000 * 15));
    const anthropic: ModelPrices = { input: 3, output: 15, tiers: [{ above: 200_000, input: 6 }] };
    const written = callCost({ input: 300_000, cacheRead: 0, cacheWrite: 100_000, output: 0 }, anthropic, 'anthropic');
    assert.equal(micro(written?.cacheWrite), 100_000 * 6 * 1.25, 'Anthropic’s multiple of the tier’s input price');
  });

  it('takes the highest tier a prompt passes, whatever order the tiers are listed in (property)', () => {
    const prices: ModelPrices = {
      input: 1,
      output: 2,
      tiers: [
        { above: 500_000, input: 4 },
        { above: 100_000, input: 2, output: 3 },
      ],
    };
    fc.assert(
      fc.property(fc.nat({ max: 2_000_000 }), (prompt) => {
        const at = pricesAtPrompt(prices, prompt);
        const expected = prompt > 500_000 ? { input: 4, output: 3 } : prompt > 100_000 ? { input: 2, output: 3 } : { input: 1, output: 2 };
        assert.deepEqual(at, expected);
      }),
    );
  });

  it('knows the rules of the provider that bills the model, through OpenRouter by the model’s maker', () => {
    assert.equal(billingRulesFor('anthropic', 'claude-sonnet-4-20250514'), 'anthropic');
    assert.equal(billingRulesFor('openrouter', 'anthropic/claude-sonnet-4'), 'anthropic');
    assert.equal(billingRulesFor('openrouter', 'google/gemini-2.5-pro'), 'google');
    assert.equal(billingRulesFor('openrouter', 'qwen/qwen3-coder'), 'unknown');
    assert.equal(billingRulesFor('openai-compatible', 'gpt-4o'), 'unknown');
    assert.equal(billingRulesFor(undefined, 'gpt-4o'), 'unknown');
  });

  it('property: a cost is given exactly when every kind of token the call holds has a price, and is the sum of its parts', () => {
    const rules = fc.constantFrom<BillingRules>('anthropic', 'openai', 'google', 'unknown');
    const maybe = fc.option(fc.double({ min: 0, max: 100, noNaN: true }), { nil: undefined });
    const prices = fc.record({
      input: fc.double({ min: 0, max: 100, noNaN: true }),
      output: fc.double({ min: 0, max: 100, noNaN: true }),
      cacheRead: maybe,
      cacheWrite: maybe,
    });
    const tokens = fc.integer({ min: 0, max: 2_000_000 });
    fc.assert(
      fc.property(
        prices,
        rules,
        tokens,
        tokens,
        tokens,
        tokens,
        fc.constantFrom('5m' as const, '1h' as const),
        (p, r, input, read, write, output, ttl) => {
          const price: ModelPrices = {
            input: p.input,
            output: p.output,
            ...(p.cacheRead !== undefined ? { cacheRead: p.cacheRead } : {}),
            ...(p.cacheWrite !== undefined ? { cacheWrite: p.cacheWrite } : {}),
          };
          const use = { input: input + read + write, cacheRead: read, cacheWrite: write, output, cacheTtl: ttl };
          const cost = callCost(use, price, r);
          const readKnown = read === 0 || price.cacheRead !== undefined || r === 'anthropic';
          const writeKnown = write === 0 || r === 'anthropic' || (ttl === '5m' && (price.cacheWrite !== undefined || r === 'openai'));
          assert.equal(cost !== undefined, readKnown && writeKnown);
          if (cost) {
            assert.ok(Math.abs(cost.total - (cost.uncached + cost.cacheRead + cost.cacheWrite + cost.output)) < 1e-9);
            assert.ok(Math.abs(cost.uncached - (input * price.input) / 1e6) < 1e-9);
          }
        },
      ),
    );
  });
});

const usage = (over: Partial<ReportedUsage> & Pick<ReportedUsage, 'inputTokens'>): ReportedUsage => ({
  anchorMessageId: 'a',
  outputTokens: 100,
  basis: null,
  provider: 'anthropic',
  ...over,
});

const byAnthropic = (u: ReportedUsage) =>
  callCost(
    {
      input: u.inputTokens,
      cacheRead: u.cacheReadTokens ?? 0,
      cacheWrite: u.cacheWriteTokens ?? 0,
      output: u.outputTokens,
      ...(u.cacheTtl ? { cacheTtl: u.cacheTtl } : {}),
    },
    SONNET,
    'anthropic',
  );

describe('usage report: the last request, the conversation, and what compactions cost', () => {
  it('adds the summarizer’s calls to the conversation and to the compactions, never to the last request', () => {
    const report = usageReport(
      [
        usage({ inputTokens: 10_000, cacheReadTokens: 0, cacheWriteTokens: 9_000 }),
        usage({ inputTokens: 12_000, cacheReadTokens: 9_000, cacheWriteTokens: 2_900 }),
        usage({ inputTokens: 12_500, cacheReadTokens: 11_900, cacheWriteTokens: 0, purpose: 'summary', basis: '(summary request)' }),
      ],
      byAnthropic,
    );
    assert.equal(report.conversation.requests, 3);
    assert.equal(report.summaries.requests, 1);
    assert.equal(report.last?.input, 12_000);
    assert.equal(report.conversation.cacheRead, 20_900);
    assert.equal(
      micro(report.summaries.cost),
      micro(byAnthropic(usage({ inputTokens: 12_500, cacheReadTokens: 11_900, cacheWriteTokens: 0 }))!.total),
    );
    assert.equal(cacheHitShare(report.conversation), 20_900 / 34_500);
  });

  it('counts the cache writes of the first request after a compaction as its rewrite, but not after a pruning made because the cache had expired', () => {
    const usages = [
      usage({ inputTokens: 10_000, cacheReadTokens: 0, cacheWriteTokens: 9_900 }),
      usage({ inputTokens: 10_500, cacheReadTokens: 9_900, cacheWriteTokens: 500 }),
      usage({ inputTokens: 4_000, cacheReadTokens: 2_000, cacheWriteTokens: 1_900, basis: 'compaction-1' }),
      usage({ inputTokens: 4_400, cacheReadTokens: 3_900, cacheWriteTokens: 400, basis: 'compaction-1' }),
      usage({ inputTokens: 3_000, cacheReadTokens: 0, cacheWriteTokens: 2_900, basis: 'cold-pruning' }),
    ];
    const report = usageReport(usages, byAnthropic, (basis) => basis === 'cold-pruning');
    assert.equal(report.rewrites.requests, 1);
    assert.equal(report.rewrites.tokens, 1_900);
    assert.equal(micro(report.rewrites.cost), micro((1_900 * 3.75) / 1e6));
  });

  it('takes the cost a provider billed over the prices, and never prices what it cannot', () => {
    const report = usageReport(
      [
        usage({ inputTokens: 1_000, cost: 0.0123, provider: 'openrouter' }),
        usage({ inputTokens: 1_000, provider: 'openai-compatible' }),
        usage({ inputTokens: 1_000, estimated: true, provider: undefined }),
      ],
      (u) => (u.provider === 'openrouter' ? byAnthropic(u) : undefined),
    );
    assert.equal(report.conversation.cost, 0.0123);
    assert.equal(report.conversation.unpriced, 2);
    assert.equal(report.conversation.estimated, 1);
    assert.equal(cacheHitShare(report.conversation), undefined, 'no request reported its cache');
  });
});
