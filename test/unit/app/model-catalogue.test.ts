import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { calcPrice, findProvider, type MatchLogic, type ModelInfo } from '@pydantic/genai-prices';
import fc from 'fast-check';
import { CATALOGUE_SNAPSHOT, configuredId, ModelCatalogue } from '../../../src/app/models/model-catalogue';
import type { ModelOverride } from '../../../src/app/settings';
import type { ReportedUsage } from '../../../src/core/log';
import type { ProviderKind } from '../../../src/core/provider-kind';

const catalogue = (overrides: Record<string, ModelOverride> = {}) => new ModelCatalogue(() => overrides);

const usage = (fields: Partial<ReportedUsage>): ReportedUsage => ({
  anchorMessageId: 'a',
  inputTokens: 10_000,
  outputTokens: 500,
  basis: null,
  ...fields,
});

/** Dollars to the micro-dollar, so that sums of floats compare exactly. */
const micro = (dollars: number | undefined): number | undefined => (dollars === undefined ? undefined : Math.round(dollars * 1_000_000));

/** Words of the models that do not write text (images, speech, embeddings): Longrun never runs them. */
const NOT_TEXT = /image|tts|audio|realtime|transcribe|embedding|live|whisper|moderation|search|computer-use|omni|ocr|voice/;

/** The first run of numbers in an id: its version (`claude-opus-4-5` → [4, 5], `gpt-5.6-sol` → [5, 6]). */
function versionOf(id: string): number[] {
  const parts = id.replace(/^[\w-]+\//, '').split(/[-.]/);
  const start = parts.findIndex((part) => /^\d+$/.test(part));
  if (start < 0) return [];
  const version: number[] = [];
  for (const part of parts.slice(start)) {
    if (!/^\d+$/.test(part) || part.length > 2) break;
    version.push(Number(part));
  }
  return version;
}

function newer(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) if ((a[i] ?? -1) !== (b[i] ?? -1)) return (b[i] ?? -1) - (a[i] ?? -1);
  return 0;
}

/** Whether `id` passes a match rule of the catalogue's. */
function matches(rule: MatchLogic | undefined, id: string): boolean {
  if (rule === undefined) return true;
  const lower = id.toLowerCase();
  if ('or' in rule) return rule.or.some((each) => matches(each, id));
  if ('and' in rule) return rule.and.every((each) => matches(each, id));
  if ('equals' in rule) return lower === rule.equals.toLowerCase();
  if ('starts_with' in rule) return lower.startsWith(rule.starts_with.toLowerCase());
  if ('ends_with' in rule) return lower.endsWith(rule.ends_with.toLowerCase());
  if ('contains' in rule) return lower.includes(rule.contains.toLowerCase());
  return new RegExp(rule.regex).test(id);
}

/**
 * The catalogue's newest text models of `providerId` (of `maker` alone in a router's list), by the
 * version their ids carry: every entry of the `count` highest versions among the models the
 * catalogue says are the maker's own (its provider's model rule: Gemini for Google, not the Claude
 * models Vertex serves).
 */
function newestModels(providerId: string, count: number, maker?: string): ModelInfo[] {
  const own = findProvider({ providerId: maker ?? providerId })!.model_match;
  const models = findProvider({ providerId })!.models.filter((m) => {
    const bare = maker === undefined ? m.id : m.id.slice(maker.length + 1);
    return (
      !m.deprecated && !NOT_TEXT.test(m.id) && !m.id.includes(':') && (maker === undefined || m.id.startsWith(`${maker}/`)) && matches(own, bare)
    );
  });
  const versions = [...new Set(models.map((m) => versionOf(m.id).join('.')).filter(Boolean))]
    .map((v) => v.split('.').map(Number))
    .sort(newer)
    .slice(0, count)
    .map((v) => v.join('.'));
  return models.filter((m) => versions.includes(versionOf(m.id).join('.')));
}

describe('model catalogue: windows and prices of known models, and the user’s overrides', () => {
  it('finds a window by the id, a dated snapshot of it, or the id a router or a local server gives it', () => {
    const known = catalogue();
    assert.equal(known.catalogueWindow('openai', 'gpt-4o')?.limit, 128_000);
    assert.equal(known.catalogueWindow('anthropic', 'claude-sonnet-4')?.limit, 200_000);
    assert.equal(known.catalogueWindow('anthropic', 'claude-sonnet-4-20250514')?.limit, 200_000, 'a dated snapshot');
    assert.equal(known.catalogueWindow('openai', 'gpt-4o-2024-11-20')?.limit, 128_000);
    assert.equal(known.catalogueWindow('openai-compatible', 'openai/gpt-4o')?.limit, 128_000);
    assert.equal(known.catalogueWindow(undefined, 'gemini-2.5-pro')?.limit, 1_048_576, 'from another list when its own states none');
    assert.equal(known.catalogueWindow('google', 'models/gemini-2.5-pro')?.limit, 1_048_576, 'as Gemini’s API names it');
    assert.match(known.catalogueWindow('openai', 'gpt-4o')!.origin, /model catalogue \(OpenAI\)/);
  });

  it('knows nothing of a model the catalogue lacks: no window, no price, no cost', () => {
    const known = catalogue();
    assert.equal(known.catalogueWindow('openai-compatible', 'acme-coder:7b'), undefined);
    assert.equal(known.pricesOf('anthropic', ['claude-from-the-future']), undefined);
    assert.equal(known.cost(usage({ provider: 'anthropic', modelId: 'claude-from-the-future' })), undefined);
  });

  it('prices a model only by the catalogue of the provider that bills it, and only an entry that is that model', () => {
    const known = catalogue();
    assert.deepEqual(known.pricesOf('anthropic', ['claude-sonnet-4'])?.prices, {
      input: 3,
      output: 15,
      cacheRead: 0.3,
      cacheWrite: 3.75,
      cacheWrite1h: 6,
    });
    assert.equal(
      known.pricesOf('anthropic', ['claude-haiku-4-5-turbo']),
      undefined,
      'not its neighbour’s price (the catalogue’s own prefix rule would)',
    );
    assert.equal(known.pricesOf('openai', ['gpt-5-mini'])?.prices.input, 0.25, 'not GPT-5’s ($1.25)');
    assert.equal(known.pricesOf('openai', ['gpt-4o-2024-05-13'])?.prices.input, 5, 'a snapshot the catalogue prices apart');
    assert.equal(known.pricesOf('openai-compatible', ['gpt-4o']), undefined, 'a server of another kind bills what it likes');
    assert.equal(known.pricesOf('openrouter', ['anthropic/claude-sonnet-4'])?.rules, 'anthropic');
  });

  it('has cache-write prices for both of Anthropic’s lifetimes', () => {
    const known = catalogue();
    const at = (cacheTtl: '5m' | '1h') =>
      known.cost(
        usage({ provider: 'anthropic', modelId: 'claude-opus-4-5', inputTokens: 10_000, cacheWriteTokens: 10_000, outputTokens: 0, cacheTtl }),
      );
    assert.equal(micro(at('5m')?.cacheWrite), 62_500, '$6.25 per million');
    assert.equal(micro(at('1h')?.cacheWrite), 100_000, '$10 per million');
  });

  it('bills a request by the tier of its own prompt: Gemini 2.5 Pro above 200k input tokens at its higher prices', () => {
    const known = catalogue();
    const gemini = (inputTokens: number) => known.cost(usage({ provider: 'google', modelId: 'gemini-2.5-pro', inputTokens, outputTokens: 1_000 }));
    assert.equal(micro(gemini(200_000)?.total), 200_000 * 1.25 + 1_000 * 10, 'at 200k: $1.25 in, $10 out');
    assert.equal(micro(gemini(200_002)?.total), 200_002 * 2.5 + 1_000 * 15, 'above: $2.50 in, $15 out, for every token');
    const cached = known.cost(
      usage({ provider: 'google', modelId: 'gemini-2.5-pro', inputTokens: 250_000, cacheReadTokens: 240_000, outputTokens: 0 }),
    );
    assert.equal(micro(cached?.cacheRead), 240_000 * 0.25, 'the prompt’s size counts what was read from the cache');
  });

  it('bills a request at the prices in force on its day', () => {
    const known = catalogue();
    const opus = (at: number) => known.cost(usage({ provider: 'anthropic', modelId: 'claude-opus-4-6', inputTokens: 300_000, outputTokens: 0, at }));
    assert.equal(micro(opus(Date.parse('2026-02-01'))?.total), 300_000 * 10, 'long-context prices before 2026-03-13');
    assert.equal(micro(opus(Date.parse('2026-04-01'))?.total), 300_000 * 5, 'one price over the whole window since');
  });

  it('costs what the catalogue’s own calculation costs, tiers, dates and cache lifetimes included (property)', () => {
    const known = catalogue();
    const cases: readonly { provider: ProviderKind; id: string; writes: boolean }[] = [
      { provider: 'anthropic', id: 'claude-sonnet-4-5', writes: true },
      { provider: 'anthropic', id: 'claude-opus-4-6', writes: true },
      { provider: 'openai', id: 'gpt-5.6-sol', writes: true },
      { provider: 'google', id: 'gemini-2.5-pro', writes: false },
    ];
    const day = fc.integer({ min: Date.parse('2025-06-01'), max: Date.parse('2026-09-01') });
    fc.assert(
      fc.property(
        fc.constantFrom(...cases),
        fc.integer({ min: 0, max: 600_000 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.nat({ max: 50_000 }),
        fc.constantFrom('5m' as const, '1h' as const),
        day,
        (model, input, readShare, writeShare, output, lifetime, at) => {
          // Only Anthropic's breakpoints ask for a lifetime.
          const ttl = model.provider === 'anthropic' ? lifetime : undefined;
          const cacheRead = Math.floor(input * readShare);
          const cacheWrite = model.writes ? Math.floor((input - cacheRead) * writeShare) : 0;
          const ours = known.cost(
            usage({
              provider: model.provider,
              modelId: model.id,
              inputTokens: input,
              cacheReadTokens: cacheRead,
              cacheWriteTokens: cacheWrite,
              outputTokens: output,
              ...(ttl ? { cacheTtl: ttl } : {}),
              at,
            }),
          );
          const theirs = calcPrice(
            {
              input_tokens: input,
              cache_read_tokens: cacheRead,
              cache_write_tokens: cacheWrite,
              ...(ttl === '1h' ? { cache_write_1h_tokens: cacheWrite } : {}),
              output_tokens: output,
            },
            model.id,
            { providerId: model.provider, timestamp: new Date(at) },
          );
          assert.ok(ours && theirs, `${model.id} is priced`);
          assert.ok(
            Math.abs(ours.total - theirs.total_price) <= 1e-9 * Math.max(1, theirs.total_price),
            `${model.id}: ${ours.total} against ${theirs.total_price}`,
          );
        },
      ),
    );
  });

  it('prices and windows Longrun’s default Anthropic model alike by its alias, its dated snapshot and OpenRouter’s id', () => {
    const known = catalogue();
    const alias = known.pricesOf('anthropic', ['claude-sonnet-4-5']);
    assert.ok(alias, 'claude-sonnet-4-5 has a price');
    assert.deepEqual(known.pricesOf('anthropic', ['claude-sonnet-4-5-20250929']), alias);
    assert.equal(known.catalogueWindow('anthropic', 'claude-sonnet-4-5')?.limit, 200_000);
    assert.deepEqual(known.catalogueWindow('anthropic', 'claude-sonnet-4-5-20250929'), known.catalogueWindow('anthropic', 'claude-sonnet-4-5'));
    assert.equal(known.pricesOf('openrouter', ['anthropic/claude-sonnet-4.5'])?.prices.input, alias.prices.input);
    const cost = (modelId: string) =>
      known.cost(usage({ provider: 'anthropic', model: `longrun/claude/${modelId}`, modelId: 'claude-sonnet-4-5-20250929' }));
    assert.ok(cost('claude-sonnet-4-5'), 'a conversation on the alias shows a cost');
  });

  for (const [provider, listId, maker] of [
    ['anthropic', 'anthropic', undefined],
    ['openai', 'openai', undefined],
    ['google', 'google', undefined],
    ['openrouter', 'openrouter', 'anthropic'],
    ['openrouter', 'openrouter', 'openai'],
    ['openrouter', 'openrouter', 'google'],
  ] as const) {
    it(`prices and windows the catalogue’s newest ${maker ? `${maker} models on ${provider}` : `${provider} models`}`, () => {
      const known = catalogue();
      const newest = newestModels(listId, 3, maker);
      assert.ok(newest.length >= 3, `${newest.map((m) => m.id).join(', ')}`);
      const missing = newest.flatMap((model) => [
        ...(known.pricesOf(provider, [model.id]) ? [] : [`${model.id}: no price`]),
        ...(known.catalogueWindow(provider, model.id) ? [] : [`${model.id}: no window`]),
      ]);
      assert.deepEqual(missing, []);
    });
  }

  it('takes the user’s prices and window over the catalogue’s, field by field, at every tier', () => {
    const known = catalogue({
      'claude-sonnet-4-20250514': { cacheRead: 0.25 },
      'qwen3-coder': { contextWindow: 262_144, input: 0.4, output: 1.6 },
      'half-priced': { input: 1 },
      'gemini-2.5-pro': { input: 1 },
    });
    assert.deepEqual(known.pricesOf('anthropic', ['claude-sonnet-4-20250514'])?.prices, {
      input: 3,
      output: 15,
      cacheRead: 0.25,
      cacheWrite: 3.75,
      cacheWrite1h: 6,
    });
    assert.deepEqual(known.pricesOf('openai-compatible', ['qwen3-coder'])?.prices, { input: 0.4, output: 1.6 });
    assert.equal(known.overriddenWindow('qwen3-coder')?.limit, 262_144);
    assert.equal(known.pricesOf('openai-compatible', ['half-priced']), undefined, 'an input price without an output price is no price');
    const long = known.cost(usage({ provider: 'google', modelId: 'gemini-2.5-pro', inputTokens: 300_000, outputTokens: 1_000 }));
    assert.equal(micro(long?.uncached), 300_000, 'the user’s input price above 200k too');
    assert.equal(micro(long?.output), 15_000, 'the catalogue’s long-context output price');
    assert.equal(known.overrideOf(['claude-sonnet-4-20250514-x', 'claude-sonnet-4'])?.id, 'claude-sonnet-4-20250514', 'the same model’s override');
  });

  it('costs a recorded call by the id it was configured with, else the one it answered with', () => {
    const known = catalogue();
    const recorded = usage({
      inputTokens: 10_000,
      cacheReadTokens: 8_000,
      cacheWriteTokens: 1_500,
      outputTokens: 500,
      provider: 'anthropic',
      model: 'longrun/claude/claude-sonnet-4-0',
      modelId: 'claude-sonnet-4-20250514',
    });
    assert.equal(micro(known.cost(recorded)?.total), 17_025);
    assert.equal(configuredId('longrun/router/anthropic/claude-sonnet-4'), 'anthropic/claude-sonnet-4');
    assert.equal(configuredId('copilot/gpt-4o'), 'gpt-4o');
  });

  it('names the snapshot it bundles: the installed catalogue’s version, and a day', () => {
    const installed = JSON.parse(readFileSync(join(__dirname, '../../../node_modules/@pydantic/genai-prices/package.json'), 'utf8')) as {
      version: string;
    };
    assert.equal(CATALOGUE_SNAPSHOT.version, installed.version, 'the catalogue was updated: set its version and the day it was published');
    assert.match(CATALOGUE_SNAPSHOT.date, /^\d{4}-\d{2}-\d{2}$/);
  });

  it('never fetches newer prices: no part of Longrun starts the catalogue’s updater', () => {
    const src = join(__dirname, '../../../src');
    const files = readdirSync(src, { recursive: true, encoding: 'utf8' }).filter((name) => name.endsWith('.ts'));
    const starting = files.filter((name) => /\b(updatePrices|waitForUpdate|REMOTE_DATA_JSON_URL)\b/.test(readFileSync(join(src, name), 'utf8')));
    assert.ok(files.length > 100, `${files.length} source files read`);
    assert.deepEqual(starting, []);
  });
});
