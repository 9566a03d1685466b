import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ModelCatalogue } from '../../../src/app/models/model-catalogue';
import { costAt, pricesOfKey, usageCost } from '../../../src/app/models/model-prices';
import type { EndpointSetting } from '../../../src/app/settings';

const endpoints: EndpointSetting[] = [
  {
    name: 'cloud',
    baseUrl: 'https://api.anthropic.com/v1',
    provider: 'anthropic',
    models: [
      { id: 'claude-sonnet-4-20250514', toolCalling: true },
      { id: 'claude-sonnet-4-5', toolCalling: true },
      { id: 'in-house', toolCalling: true },
    ],
  },
  { name: 'local', baseUrl: 'http://localhost:11434/v1', models: [{ id: 'qwen3-coder', toolCalling: true }] },
];

describe("the prices of an endpoint's model, by its key", () => {
  it("takes the catalogue's prices for the provider the endpoint speaks, and the user's overrides over them", () => {
    const catalogue = new ModelCatalogue(() => ({ 'qwen3-coder': { input: 0.4, output: 1.6 } }));
    const sonnet = pricesOfKey(catalogue, endpoints, 'longrun/cloud/claude-sonnet-4-20250514');
    assert.equal(sonnet?.input, 3, 'Claude Sonnet 4 at Anthropic: $3 per million input tokens');
    assert.equal(sonnet?.output, 15);
    assert.deepEqual(
      pricesOfKey(catalogue, endpoints, 'longrun/cloud/claude-sonnet-4-5'),
      catalogue.pricesOf('anthropic', ['claude-sonnet-4-5-20250929'])?.prices,
      'Longrun’s default Anthropic model, by its alias, at its snapshot’s prices',
    );
    assert.equal(
      pricesOfKey(catalogue, endpoints, 'longrun/cloud/claude-sonnet-4-5')?.tiers?.[0]?.input,
      6,
      'above 200k: $6 per million input tokens',
    );
    assert.deepEqual(pricesOfKey(catalogue, endpoints, 'longrun/local/qwen3-coder'), { input: 0.4, output: 1.6 });
    assert.equal(pricesOfKey(catalogue, endpoints, 'longrun/cloud/in-house'), undefined, 'a model nobody prices has none');
    assert.equal(pricesOfKey(catalogue, endpoints, 'copilot/gpt-4.1'), undefined, "an editor's model has no price");
  });

  it('costs a million input tokens the input price, and a million output tokens the output price', () => {
    const catalogue = new ModelCatalogue(() => ({ 'qwen3-coder': { input: 0.4, output: 1.6 } }));
    assert.equal(usageCost(catalogue, endpoints, { inputTokens: 1_000_000, outputTokens: 0 }, 'longrun/local/qwen3-coder'), 0.4);
    assert.equal(usageCost(catalogue, endpoints, { inputTokens: 0, outputTokens: 1_000_000 }, 'longrun/local/qwen3-coder'), 1.6);
    assert.equal(usageCost(catalogue, endpoints, { inputTokens: 10, outputTokens: 10 }, 'longrun/cloud/in-house'), undefined);
  });

  it('adds up: the cost of two usages is the sum of their costs', () => {
    const tokens = fc.nat({ max: 10_000_000 });
    fc.assert(
      fc.property(tokens, tokens, tokens, tokens, (i1, o1, i2, o2) => {
        const price = { input: 2.5, output: 10 };
        const apart = costAt(price, { inputTokens: i1, outputTokens: o1 }) + costAt(price, { inputTokens: i2, outputTokens: o2 });
        const together = costAt(price, { inputTokens: i1 + i2, outputTokens: o1 + o2 });
        return Math.abs(apart - together) < 1e-9 * Math.max(1, together);
      }),
    );
  });
});
