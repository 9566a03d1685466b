import assert from 'node:assert/strict';
import fc from 'fast-check';
import { findModelId, modelKey, oneIdEach, sameModel } from '../../../src/core/model-id';

describe('model ids: one model however a provider writes its id', () => {
  it('takes an alias and its dated snapshots for one model, as Anthropic, Vertex and OpenAI date them', () => {
    assert.ok(sameModel('claude-sonnet-4-5', 'claude-sonnet-4-5-20250929'));
    assert.ok(sameModel('claude-sonnet-4-5', 'claude-sonnet-4-5@20250929'), 'Vertex');
    assert.ok(sameModel('gpt-4o', 'gpt-4o-2024-08-06'));
    assert.ok(sameModel('claude-3-7-sonnet-latest', 'claude-3-7-sonnet-20250219'));
  });

  it('takes off a router’s or an API’s prefix and reads a version’s dot as a dash', () => {
    assert.ok(sameModel('anthropic/claude-sonnet-4.5', 'claude-sonnet-4-5-20250929'));
    assert.ok(sameModel('openai/gpt-5-mini', 'gpt-5-mini-2025-08-07'));
    assert.ok(sameModel('models/gemini-2.5-pro', 'gemini-2.5-pro'));
    assert.ok(sameModel('google/gemini-2.5-pro', 'gemini-2-5-pro'));
    assert.ok(sameModel('Claude-Sonnet-4-5', 'claude-sonnet-4-5'), 'case');
  });

  it('never takes one model for another: a word or a number more is another model', () => {
    assert.ok(!sameModel('claude-sonnet-4', 'claude-sonnet-4-5'));
    assert.ok(!sameModel('claude-sonnet-4-20250514', 'claude-sonnet-4-5-20250929'));
    assert.ok(!sameModel('gpt-5', 'gpt-5-mini'));
    assert.ok(!sameModel('gpt-4.1', 'gpt-4'));
    assert.ok(!sameModel('deepseek-r1', 'deepseek-r1-0528'), 'a four-digit build is not a date');
    assert.ok(!sameModel('gemini-2.5-flash', 'gemini-2.5-flash-preview-05-20'), 'a preview is a model of its own');
    assert.ok(!sameModel('anthropic/claude-opus-4.5', 'anthropic/claude-opus-4.5:beta'), 'a router’s variant');
    assert.ok(!sameModel('qwen3:8b', 'qwen3:32b'), 'a local server’s tags');
    assert.ok(!sameModel('gpt-5-20251399', 'gpt-5'), 'not a date: no month 13');
  });

  const segment = fc.oneof(fc.stringMatching(/^[a-z]{1,6}$/), fc.integer({ min: 0, max: 99 }).map(String));
  const name = fc
    .array(segment, { minLength: 1, maxLength: 5 })
    .map((parts) => parts.join('-'))
    .filter((id) => id !== 'latest' && !id.endsWith('-latest'));
  const date = fc.date({ min: new Date('2020-01-01'), max: new Date('2099-12-31'), noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10));
  const written = (id: string): fc.Arbitrary<string> =>
    fc
      .record({
        prefix: fc.constantFrom('', 'anthropic/', 'openai/', 'google/', 'models/'),
        dots: fc.boolean(),
        snapshot: fc.constantFrom('', 'dashed', 'vertex', 'iso', 'latest'),
        date,
      })
      .map(({ prefix, dots, snapshot, date: day }) => {
        const version = dots ? id.replace(/(\d)-(?=\d)/g, '$1.') : id;
        const compact = day.replaceAll('-', '');
        const suffix = { '': '', dashed: `-${compact}`, vertex: `@${compact}`, iso: `-${day}`, latest: '-latest' }[snapshot];
        return `${prefix}${version}${suffix}`;
      });

  it('finds every way of writing one id the same model (property)', () => {
    fc.assert(
      fc.property(
        name.chain((id) => fc.tuple(written(id), written(id))),
        ([a, b]) => sameModel(a, b),
      ),
    );
  });

  it('never finds a model the same as one with a word or number more, however each is written (property)', () => {
    const longer = fc.tuple(name, segment).filter(([, extra]) => extra !== 'latest');
    fc.assert(
      fc.property(
        longer.chain(([id, extra]) => fc.tuple(written(id), written(`${id}-${extra}`))),
        ([a, b]) => !sameModel(a, b),
      ),
    );
  });

  it('finds the listed id of a model: itself first, else the same model', () => {
    const listed = ['claude-opus-4-5-20251101', 'claude-sonnet-4-5-20250929', 'claude-sonnet-4-20250514'];
    assert.equal(findModelId(listed, 'claude-sonnet-4-5'), 'claude-sonnet-4-5-20250929');
    assert.equal(findModelId(listed, 'claude-sonnet-4'), 'claude-sonnet-4-20250514');
    assert.equal(findModelId(listed, 'claude-haiku-4-5'), undefined);
    assert.equal(findModelId(['gpt-4o-2024-08-06', 'gpt-4o'], 'gpt-4o'), 'gpt-4o', 'the id itself over a snapshot');
  });

  it('lists one id for each model: the alias where it is listed, else the first snapshot, where the model is first listed', () => {
    assert.deepEqual(oneIdEach(['gpt-4o-2024-11-20', 'gpt-4o-mini', 'gpt-4o', 'gpt-4o-2024-08-06']), ['gpt-4o', 'gpt-4o-mini']);
    assert.deepEqual(oneIdEach(['claude-sonnet-4-5-20250929', 'claude-sonnet-4-20250514']), [
      'claude-sonnet-4-5-20250929',
      'claude-sonnet-4-20250514',
    ]);
    assert.equal(modelKey('claude-sonnet-4.5'), modelKey('claude-sonnet-4-5'));
  });
});
