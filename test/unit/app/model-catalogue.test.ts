import assert from 'node:assert/strict';
import { configuredId, ModelCatalogue } from '../../../src/app/models/model-catalogue';
import type { ModelOverride } from '../../../src/app/settings';
import type { ReportedUsage } from '../../../src/core/log';

const catalogue = (overrides: Record<string, ModelOverride> = {}) => new ModelCatalogue(() => overrides);

describe('model catalogue: windows and prices of known models, and the user’s overrides', () => {
  it('finds a window by the id, a dated snapshot of it, or the id a router or a local server gives it', () => {
    const known = catalogue();
    assert.equal(known.catalogueWindow('openai', 'gpt-4o')?.limit, 128_000);
    assert.equal(known.catalogueWindow('anthropic', 'claude-sonnet-4')?.limit, 200_000, 'its one dated snapshot');
    assert.equal(known.catalogueWindow('openai', 'gpt-4o-2024-11-20')?.limit, 128_000, 'a snapshot the catalogue does not list');
    assert.equal(known.catalogueWindow('openai-compatible', 'openai/gpt-4o')?.limit, 128_000);
    assert.equal(known.catalogueWindow(undefined, 'gemini-2.5-pro')?.limit, 1_048_576);
    assert.equal(known.catalogueWindow('openrouter', 'openai/gpt-4o')?.limit, 128_000, 'by its maker’s list when the router’s lacks it');
    assert.match(known.catalogueWindow('openai', 'gpt-4o')!.origin, /model catalogue \(OpenAI\)/);
  });

  it('knows nothing of a model the catalogue lacks: no window, no price, no cost', () => {
    const known = catalogue();
    assert.equal(known.catalogueWindow('openai-compatible', 'acme-coder:7b'), undefined);
    assert.equal(known.pricesOf('anthropic', ['claude-from-the-future']), undefined);
    const usage: ReportedUsage = {
      anchorMessageId: 'a',
      inputTokens: 10_000,
      outputTokens: 10,
      basis: null,
      provider: 'anthropic',
      modelId: 'claude-from-the-future',
    };
    assert.equal(known.cost(usage), undefined);
  });

  it('prices a model only by the catalogue of the provider that bills it, and only an entry that is that model', () => {
    const known = catalogue();
    assert.deepEqual(known.pricesOf('anthropic', ['claude-sonnet-4'])?.prices, { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 });
    assert.equal(known.pricesOf('anthropic', ['claude-3-5-sonnet']), undefined, 'two snapshots at different dates: which one is unknown');
    assert.equal(known.pricesOf('openai-compatible', ['gpt-4o']), undefined, 'a server of another kind bills what it likes');
    assert.equal(known.pricesOf('openrouter', ['anthropic/claude-sonnet-4'])?.rules, 'anthropic');
  });

  it('takes the user’s prices and window over the catalogue’s, field by field', () => {
    const known = catalogue({
      'claude-sonnet-4-20250514': { cacheRead: 0.25 },
      'qwen3-coder': { contextWindow: 262_144, input: 0.4, output: 1.6 },
      'half-priced': { input: 1 },
    });
    assert.deepEqual(known.pricesOf('anthropic', ['claude-sonnet-4-20250514'])?.prices, { input: 3, output: 15, cacheRead: 0.25, cacheWrite: 3.75 });
    assert.deepEqual(known.pricesOf('openai-compatible', ['qwen3-coder'])?.prices, { input: 0.4, output: 1.6 });
    assert.equal(known.overriddenWindow('qwen3-coder')?.limit, 262_144);
    assert.equal(known.pricesOf('openai-compatible', ['half-priced']), undefined, 'an input price without an output price is no price');
  });

  it('costs a recorded call by the id it was configured with, else the one it answered with', () => {
    const known = catalogue();
    const usage: ReportedUsage = {
      anchorMessageId: 'a',
      inputTokens: 10_000,
      cacheReadTokens: 8_000,
      cacheWriteTokens: 1_500,
      outputTokens: 500,
      basis: null,
      provider: 'anthropic',
      model: 'longrun/claude/claude-sonnet-4-0',
      modelId: 'claude-sonnet-4-20250514',
    };
    assert.equal(Math.round(known.cost(usage)!.total * 1_000_000), 17_025);
    assert.equal(configuredId('longrun/router/anthropic/claude-sonnet-4'), 'anthropic/claude-sonnet-4');
    assert.equal(configuredId('copilot/gpt-4o'), 'gpt-4o');
  });
});
