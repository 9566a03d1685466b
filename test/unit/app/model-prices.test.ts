import assert from 'node:assert/strict';
import fc from 'fast-check';
import { costAt, priceOf, usageCost } from '../../../src/app/model-prices';
import type { EndpointSetting } from '../../../src/app/settings';

const endpoints: EndpointSetting[] = [
  {
    name: 'cloud',
    baseUrl: 'https://api.example.com/v1',
    models: [
      { id: 'big', toolCalling: true, price: { input: 3, output: 15 } },
      { id: 'free', toolCalling: true },
    ],
  },
  { name: 'local', baseUrl: 'http://localhost:11434/v1', models: [{ id: 'big', toolCalling: true, price: { input: 0, output: 0 } }] },
];

describe('model prices', () => {
  it("finds a price by the model's key, endpoint and model together", () => {
    assert.deepEqual(priceOf(endpoints, 'longrun/cloud/big'), { input: 3, output: 15 });
    assert.deepEqual(priceOf(endpoints, 'longrun/local/big'), { input: 0, output: 0 });
    assert.equal(priceOf(endpoints, 'longrun/cloud/free'), undefined, 'a model without a price has none');
    assert.equal(priceOf(endpoints, 'copilot/big'), undefined, "an editor's model has no price");
  });

  it('costs a million input tokens the input price, and a million output tokens the output price', () => {
    assert.equal(usageCost(endpoints, { inputTokens: 1_000_000, outputTokens: 0 }, 'longrun/cloud/big'), 3);
    assert.equal(usageCost(endpoints, { inputTokens: 0, outputTokens: 1_000_000 }, 'longrun/cloud/big'), 15);
    assert.equal(usageCost(endpoints, { inputTokens: 10, outputTokens: 10 }, 'longrun/cloud/free'), undefined);
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
