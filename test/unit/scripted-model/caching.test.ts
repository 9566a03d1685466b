import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  applyAnthropicCache,
  LOOKBACK_BLOCKS,
  minimumCacheableTokens,
  type AnthropicCacheOutcome,
  type AnthropicCacheState,
  type CacheTtl,
  type PromptBlock,
} from '../../../scripts/scripted-model/caching/anthropic-cache';
import { applyGeminiCache, implicitMinimum, type GeminiCacheState, type GeminiPart } from '../../../scripts/scripted-model/caching/gemini-cache';
import { applyOpenAICache, cacheSteps, type OpenAICacheState } from '../../../scripts/scripted-model/caching/openai-cache';

const MINUTE = 60_000;
const SONNET = 'claude-sonnet-4-5';

/** Blocks of random sizes, each its own content. */
const blocksArb = (min: number, max: number, tag = 'b'): fc.Arbitrary<PromptBlock[]> =>
  fc
    .array(fc.integer({ min: 1, max: 900 }), { minLength: min, maxLength: max })
    .map((sizes) => sizes.map((tokens, i) => ({ key: `${tag}${i}:${tokens}`, tokens })));

const total = (blocks: readonly PromptBlock[]): number => blocks.reduce((sum, b) => sum + b.tokens, 0);
const markLast = (blocks: readonly PromptBlock[], ttl: CacheTtl = '5m'): PromptBlock[] =>
  blocks.map((block, i) => (i === blocks.length - 1 ? { ...block, breakpoint: ttl } : block));

function anthropic(state: AnthropicCacheState, blocks: readonly PromptBlock[], now: number, model = SONNET): AnthropicCacheOutcome {
  const result = applyAnthropicCache(state, { model, blocks }, now);
  assert.ok('outcome' in result, 'problem' in result ? result.problem : '');
  return result.outcome;
}

/** A prompt of at least the minimum: a big first block (tools and system), then the conversation. */
const head = (tokens = 1_500): PromptBlock => ({ key: 'system', tokens });

describe("the Anthropic stand-in's caching rules", () => {
  it('bills every prompt token exactly once, as read, written or input, whatever the requests', () => {
    const request = fc.record({
      blocks: blocksArb(1, 30),
      marks: fc.array(fc.nat({ max: 29 }), { maxLength: 4 }),
      ttl: fc.constantFrom<CacheTtl>('5m', '1h'),
      gap: fc.integer({ min: 0, max: 70 * MINUTE }),
    });
    fc.assert(
      fc.property(fc.array(request, { minLength: 1, maxLength: 8 }), (requests) => {
        let state: AnthropicCacheState = new Map();
        let now = 0;
        for (const r of requests) {
          now += r.gap;
          const blocks = r.blocks.map((b, i) => (r.marks.includes(i) ? { ...b, breakpoint: r.ttl } : b));
          const out = anthropic(state, blocks, now);
          assert.equal(out.read + out.write5m + out.write1h + out.input, total(blocks));
          assert.ok(out.read <= total(blocks));
          state = out.state;
        }
      }),
    );
  });

  it('reads everything before a suffix added with a breakpoint at its end, once the minimum is met, and writes only the suffix', () => {
    fc.assert(
      fc.property(
        blocksArb(1, 15, 'a'),
        blocksArb(1, LOOKBACK_BLOCKS - 1, 's'),
        fc.integer({ min: 0, max: 5 * MINUTE - 1 }),
        (conversation, suffix, gap) => {
          const first = markLast([head(), ...conversation]);
          const written = anthropic(new Map(), first, 0);
          assert.equal(written.read, 0);
          assert.equal(written.write5m, total(first), 'the first request writes its whole prefix');
          const second = markLast([head(), ...conversation, ...suffix]);
          const out = anthropic(written.state, second, gap);
          assert.equal(out.read, total(first));
          assert.equal(out.write5m, total(suffix));
          assert.equal(out.input, 0);
        },
      ),
    );
  });

  it('finds nothing once the 5-minute lifetime has lapsed, and writes the prefix again', () => {
    const first = markLast([head(), { key: 'u1', tokens: 50 }]);
    const { state } = anthropic(new Map(), first, 0);
    const later = anthropic(state, markLast([...first, { key: 'u2', tokens: 40 }]), 5 * MINUTE + 1);
    assert.equal(later.read, 0);
    assert.equal(later.write5m, total(first) + 40);
  });

  it('renews an entry each time it is read: three requests four minutes apart all read', () => {
    const prompt = markLast([head(), { key: 'u1', tokens: 50 }]);
    let state = anthropic(new Map(), prompt, 0).state;
    for (const at of [4, 8, 12]) {
      const out = anthropic(state, prompt, at * MINUTE);
      assert.equal(out.read, total(prompt), `at ${at} minutes`);
      state = out.state;
    }
    // An entry found by looking back from a later breakpoint (the only one) is renewed too.
    const plain = [head(), { key: 'u1', tokens: 50 }];
    let branching = anthropic(new Map(), markLast(plain), 0).state;
    branching = anthropic(branching, markLast([...plain, { key: 'u2', tokens: 40 }]), 4 * MINUTE).state;
    assert.equal(anthropic(branching, markLast([...plain, { key: 'u3', tokens: 40 }]), 8 * MINUTE).read, total(plain));
  });

  it('keeps a 1-hour breakpoint for the hour, bills it as a 1-hour write, and lets it lapse after', () => {
    const prompt = markLast([head(), { key: 'u1', tokens: 50 }], '1h');
    const first = anthropic(new Map(), prompt, 0);
    assert.deepEqual([first.write1h, first.write5m], [total(prompt), 0]);
    assert.equal(anthropic(first.state, prompt, 59 * MINUTE).read, total(prompt));
    assert.equal(anthropic(first.state, prompt, 61 * MINUTE).read, 0);
  });

  it('misses a prefix cached more than 20 blocks before the only breakpoint, and finds it with one more breakpoint', () => {
    fc.assert(
      fc.property(blocksArb(LOOKBACK_BLOCKS, 40, 's'), (suffix) => {
        const first = markLast([head(), { key: 'u1', tokens: 30 }]);
        const { state } = anthropic(new Map(), first, 0);
        const far = markLast([...first.map((b) => ({ key: b.key, tokens: b.tokens })), ...suffix]);
        assert.equal(anthropic(state, far, MINUTE).read, 0, `${suffix.length} blocks later`);
        // The next breakpoint within reach of the cached one: the stretch between is read through it.
        const anchored = far.map((b, i) => (i === first.length + LOOKBACK_BLOCKS - 2 ? { ...b, breakpoint: '5m' as const } : b));
        assert.equal(anthropic(state, anchored, MINUTE).read, total(first));
      }),
    );
  });

  it("caches nothing shorter than the model's minimum, and no error is given", () => {
    const short = markLast([
      { key: 'system', tokens: 600 },
      { key: 'u1', tokens: 100 },
    ]);
    const out = anthropic(new Map(), short, 0);
    assert.deepEqual([out.read, out.write5m, out.input], [0, 0, 700]);
    assert.equal(anthropic(out.state, short, MINUTE).read, 0);
    assert.equal(minimumCacheableTokens('claude-haiku-4-5'), 4_096);
    assert.equal(minimumCacheableTokens('claude-3-5-haiku-20241022'), 2_048);
    const haiku = markLast([head(2_000), { key: 'u1', tokens: 100 }]);
    assert.equal(anthropic(new Map(), haiku, 0, 'claude-haiku-4-5').write5m, 0, 'under Haiku 4.5 minimum');
  });

  it('misses when anything before the breakpoint changed, even one block, or the model', () => {
    const prompt = markLast([head(), { key: 'u1', tokens: 50 }, { key: 'a1', tokens: 60 }]);
    const { state } = anthropic(new Map(), prompt, 0);
    const edited = prompt.map((b) => (b.key === 'u1' ? { ...b, key: 'u1-edited' } : b));
    assert.equal(anthropic(state, edited, MINUTE).read, 0);
    assert.equal(anthropic(state, prompt, MINUTE, 'claude-opus-4-1').read, 0);
    const moved = prompt.map((b, i) => ({ key: b.key, tokens: b.tokens, ...(i === 0 ? { breakpoint: '5m' as const } : {}) }));
    assert.equal(anthropic(state, moved, MINUTE).read, 0, 'a breakpoint where nothing was cached reads nothing');
  });

  it('refuses a fifth breakpoint, and a 1-hour breakpoint after a 5-minute one', () => {
    const five = Array.from({ length: 5 }, (_, i) => ({ key: `b${i}`, tokens: 300, breakpoint: '5m' as const }));
    assert.deepEqual(applyAnthropicCache(new Map(), { model: SONNET, blocks: five }, 0), {
      problem: 'A maximum of 4 blocks with cache_control may be provided. Found 5.',
    });
    const order = [
      { key: 'tools', tokens: 1_200, breakpoint: '5m' as const },
      { key: 'system', tokens: 300, breakpoint: '1h' as const },
    ];
    assert.match(
      String((applyAnthropicCache(new Map(), { model: SONNET, blocks: order }, 0) as { problem: string }).problem),
      /ttl='1h'.*must not come after.*ttl='5m'/,
    );
  });

  it('bills each written stretch at the lifetime of the breakpoint that ends it', () => {
    const blocks: PromptBlock[] = [
      { key: 'tools', tokens: 1_100, breakpoint: '1h' },
      { key: 'system', tokens: 200 },
      { key: 'u1', tokens: 300, breakpoint: '5m' },
      { key: 'u2', tokens: 50 },
    ];
    const out = anthropic(new Map(), blocks, 0);
    assert.deepEqual([out.write1h, out.write5m, out.input], [1_100, 500, 50]);
    // The hour-long head is read after the conversation's own entry has lapsed.
    const later = anthropic(out.state, blocks, 30 * MINUTE);
    assert.deepEqual([later.read, later.write5m], [1_100, 500]);
  });
});

describe("the OpenAI stand-in's caching rules", () => {
  const tokens = (length: number, from = 0): number[] => Array.from({ length }, (_, i) => from + i);

  it('reads the longest common prefix of a recent prompt, in steps of 1,024 then 128 tokens', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 6_000 }), fc.integer({ min: 1, max: 3_000 }), (shared, added) => {
        const first = tokens(shared);
        const { state } = applyOpenAICache(new Map(), { model: 'gpt-5', tokens: first }, 0);
        const second = [...first, ...tokens(added, 1_000_000)];
        const out = applyOpenAICache(state, { model: 'gpt-5', tokens: second }, MINUTE);
        const expected = shared < 1_024 ? 0 : 1_024 + Math.floor((shared - 1_024) / 128) * 128;
        assert.equal(out.cached, expected);
        assert.equal(out.cached + out.input, second.length);
      }),
    );
  });

  it('caches nothing under 1,024 tokens', () => {
    const prompt = tokens(1_023);
    const { state } = applyOpenAICache(new Map(), { model: 'gpt-5', tokens: prompt }, 0);
    assert.equal(applyOpenAICache(state, { model: 'gpt-5', tokens: prompt }, 1).cached, 0);
    assert.deepEqual(cacheSteps(1_300), [1_024, 1_152, 1_280]);
  });

  it('reaches another cache with another prompt_cache_key, or another model', () => {
    const prompt = tokens(3_000);
    const { state } = applyOpenAICache(new Map(), { model: 'gpt-5', cacheKey: 'branch-1', tokens: prompt }, 0);
    assert.equal(applyOpenAICache(state, { model: 'gpt-5', cacheKey: 'branch-1', tokens: prompt }, 1).cached, 2_944);
    assert.equal(applyOpenAICache(state, { model: 'gpt-5', cacheKey: 'branch-2', tokens: prompt }, 1).cached, 0);
    assert.equal(applyOpenAICache(state, { model: 'gpt-5-mini', cacheKey: 'branch-1', tokens: prompt }, 1).cached, 0);
  });

  it('forgets after 5 minutes in memory, and keeps a 24-hour retention for the day', () => {
    const prompt = tokens(2_000);
    const memory: OpenAICacheState = applyOpenAICache(new Map(), { model: 'gpt-5', tokens: prompt }, 0).state;
    assert.equal(applyOpenAICache(memory, { model: 'gpt-5', tokens: prompt }, 5 * MINUTE + 1).cached, 0);
    const extended = applyOpenAICache(new Map(), { model: 'gpt-5', tokens: prompt, retention: '24h' }, 0).state;
    assert.equal(applyOpenAICache(extended, { model: 'gpt-5', tokens: prompt }, 23 * 60 * MINUTE).cached, 1_920);
  });
});

describe("the Gemini stand-in's implicit caching rules", () => {
  const parts = (sizes: number[], tag = 'p'): GeminiPart[] => sizes.map((tokens, i) => ({ key: `${tag}${i}`, tokens }));

  it("reads the longest prefix of parts a recent request sent, from the model's minimum on", () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 800 }), { minLength: 1, maxLength: 20 }),
        fc.array(fc.integer({ min: 1, max: 800 }), { minLength: 1, maxLength: 5 }),
        (shared, added) => {
          const first = parts(shared);
          const { state } = applyGeminiCache(new Map(), { model: 'gemini-2.5-flash', parts: first }, 0);
          const out = applyGeminiCache(state, { model: 'gemini-2.5-flash', parts: [...first, ...parts(added, 'x')] }, MINUTE);
          const sharedTokens = shared.reduce((a, b) => a + b, 0);
          assert.equal(out.cached, sharedTokens >= 2_048 ? sharedTokens : 0);
        },
      ),
    );
  });

  it('has no implicit cache before Gemini 2.5, and a 4,096-token minimum from Gemini 3', () => {
    const state: GeminiCacheState = applyGeminiCache(new Map(), { model: 'gemini-2.0-flash', parts: parts([5_000]) }, 0).state;
    assert.equal(applyGeminiCache(state, { model: 'gemini-2.0-flash', parts: parts([5_000]) }, 1).cached, 0);
    assert.equal(implicitMinimum('gemini-3-pro-preview'), 4_096);
    const three = applyGeminiCache(new Map(), { model: 'gemini-3-flash', parts: parts([3_000]) }, 0).state;
    assert.equal(applyGeminiCache(three, { model: 'gemini-3-flash', parts: parts([3_000]) }, 1).cached, 0);
  });
});
