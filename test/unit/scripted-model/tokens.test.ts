import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { loadTokenizer } from '../../../src/core/tokenizer';
import { promptBlocks } from '../../../scripts/scripted-model/formats/anthropic';
import { requestParts } from '../../../scripts/scripted-model/formats/gemini';
import { ANTHROPIC_TOOL_USE_PROMPT, tokenRule, type TokenFamily } from '../../../scripts/scripted-model/tokens';

const FAMILIES: TokenFamily[] = ['openai', 'anthropic', 'google'];
const ROOT = join(__dirname, '..', '..', '..', 'scripts', 'scripted-model');

const PROSE =
  'The scheduler retries failed jobs three times before it gives up, and logs each attempt with its reason. ' +
  'Users reported that the billing page was slow, so we looked into the queries behind it.';
const CODE = [
  'export async function retryJob(ctx: Context, attempt = 1): Promise<Result> {',
  "  const result = await ctx.store.load('jobs/retry', { timeoutMs: 1500 });",
  '  if (!result.ok) throw new RetryError(`attempt ${attempt} failed: ${result.reason}`);',
  '  return { ...result.value, attempts: attempt };',
  '}',
].join('\n');
const JSON_TEXT = JSON.stringify({ id: '17-119', status: 'failed', durationMs: 629, tags: ['a', 'b'], retries: [1, 2, 3] });

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)) : [join(dir, e.name)]));
}

describe("the stand-ins' token counts", () => {
  it("share nothing with Longrun's count: no stand-in file imports Longrun's code, its tokenizer, its priors or the tokenizer package", () => {
    for (const file of files(ROOT).filter((f) => f.endsWith('.ts'))) {
      const text = readFileSync(file, 'utf8');
      assert.doesNotMatch(text, /from '[^']*(\/src\/|tokenizer-priors|core\/tokenizer|gpt-tokenizer)[^']*'/, file);
    }
  });

  it('count the same text the same every time, and as many tokens as the pieces they cut it into, which make the text again', () => {
    fc.assert(
      fc.property(fc.constantFrom(...FAMILIES), fc.string({ unit: 'grapheme', maxLength: 200 }), (family, text) => {
        const rule = tokenRule(family);
        assert.equal(rule.count(text), tokenRule(family).count(text));
        assert.equal(rule.tokens(text).length, rule.count(text));
        assert.equal(rule.tokens(text).join(''), text);
      }),
    );
  });

  it('count more for more text: a text followed by more never counts fewer tokens than the text alone', () => {
    fc.assert(
      fc.property(fc.constantFrom(...FAMILIES), fc.string({ maxLength: 100 }), fc.string({ maxLength: 100 }), (family, a, b) => {
        const rule = tokenRule(family);
        assert.ok(rule.count(`${a}\n${b}`) >= rule.count(a));
      }),
    );
  });

  it("disagree with Longrun's local count by how much, and differently for prose, code and JSON", async () => {
    const o200k = await loadTokenizer('o200k_base');
    const ratio = (family: TokenFamily, text: string): number => tokenRule(family).count(text) / o200k.count(text);
    for (const family of ['anthropic', 'google'] as const) {
      const ratios = [PROSE, CODE, JSON_TEXT].map((text) => ratio(family, text));
      assert.ok(Math.max(...ratios) - Math.min(...ratios) > 0.1, `${family}: ${ratios.map((r) => r.toFixed(3)).join(', ')}`);
      assert.ok(ratio(family, CODE) > ratio(family, PROSE), `${family} counts code more than prose for the same local count`);
    }
    for (const text of [PROSE, CODE, JSON_TEXT]) {
      assert.ok(ratio('openai', text) > 0.85 && ratio('openai', text) < 1.25, `OpenAI's rule stays near a 200k vocabulary: ${ratio('openai', text)}`);
      assert.ok(tokenRule('anthropic').count(text) > tokenRule('openai').count(text), 'Claude counts more than OpenAI');
    }
    assert.ok(tokenRule('google').count('2026-12-01 12:45:07') > tokenRule('anthropic').count('2026-12-01 12:45:07'), 'Gemini counts each digit');
  });

  it("add Claude's hidden tool-use prompt to an Anthropic request that offers tools, by its tool choice, and nothing without tools", () => {
    const rule = tokenRule('anthropic');
    const tool = { name: 'read_file', description: 'Read a file.', input_schema: { type: 'object', properties: { path: { type: 'string' } } } };
    const base = { model: 'claude', max_tokens: 100, system: 'You are careful.', messages: [{ role: 'user' as const, content: 'hello' }] };
    const total = (request: Parameters<typeof promptBlocks>[0]): number => promptBlocks(request, rule).reduce((sum, b) => sum + b.tokens, 0);
    const without = total(base);
    const definition = rule.count(JSON.stringify(tool));
    assert.equal(total({ ...base, tools: [tool] }) - without, ANTHROPIC_TOOL_USE_PROMPT.auto + definition);
    assert.equal(total({ ...base, tools: [tool], tool_choice: { type: 'any' } }) - without, ANTHROPIC_TOOL_USE_PROMPT.forced + definition);
    assert.ok(ANTHROPIC_TOOL_USE_PROMPT.auto >= 300, 'several hundred tokens, as Claude 4 models add');
  });

  it('frame each message: two messages count more than their text joined into one', () => {
    const anthropic = tokenRule('anthropic');
    const one = promptBlocks({ model: 'c', max_tokens: 1, messages: [{ role: 'user', content: 'first\nsecond' }] }, anthropic);
    const two = promptBlocks(
      {
        model: 'c',
        max_tokens: 1,
        messages: [
          { role: 'user', content: 'first' },
          { role: 'assistant', content: 'second' },
        ],
      },
      anthropic,
    );
    const sum = (blocks: readonly { tokens: number }[]): number => blocks.reduce((s, b) => s + b.tokens, 0);
    assert.ok(sum(two) >= sum(one) + anthropic.perMessage - 1);
    const google = tokenRule('google');
    const turns = requestParts(
      {
        contents: [
          { role: 'user', parts: [{ text: 'first' }] },
          { role: 'model', parts: [{ text: 'second' }] },
        ],
      },
      google,
    );
    assert.equal(sum(turns), 2 * google.perMessage + google.count('first') + google.count('second'));
  });
});
