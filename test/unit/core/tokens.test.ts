import assert from 'node:assert/strict';
import { MessageTokenCounter, withTokenCounts } from '../../../src/core/message-tokens';
import { charEstimator, encodingForModel, estimateTokens, loadTokenizer, type TextTokenizer } from '../../../src/core/tokenizer';
import {
  countContext,
  detectTruncation,
  effectiveRatio,
  learnedCalibration,
  learnedRatio,
  LEGACY_BASIS,
  type ReportedUsage,
} from '../../../src/core/usage-calibration';
import { assistant, toolResult, user } from './fixtures';

describe('token accounting', () => {
  it('counts text with the real o200k tokenizer', async () => {
    const o200k = await loadTokenizer('o200k_base');
    assert.equal(o200k.name, 'o200k_base');
    assert.equal(o200k.count('hello world'), 2);
    assert.equal(o200k.count(''), 0);
    // Special-token spellings in user text are counted as text, not rejected.
    assert.ok(o200k.count('<|endoftext|>') > 1);
  });

  it('chooses the encoding by model family, o200k by default', async () => {
    assert.equal(encodingForModel('gpt-4o-mini'), 'o200k_base');
    assert.equal(encodingForModel('gpt-5'), 'o200k_base');
    assert.equal(encodingForModel('gpt-4'), 'cl100k_base');
    assert.equal(encodingForModel('gpt-3.5-turbo'), 'cl100k_base');
    assert.equal(encodingForModel('claude-sonnet-4'), 'o200k_base');
    assert.equal(encodingForModel(undefined), 'o200k_base');
    const cl100k = await loadTokenizer('cl100k_base');
    const o200k = await loadTokenizer('o200k_base');
    const sample = 'Les modèles de langage découpent le texte en jetons différemment.';
    assert.notEqual(cl100k.count(sample), o200k.count(sample));
  });

  it('keeps the ceil(chars/4) estimator as fallback and baseline', () => {
    assert.equal(estimateTokens(''), 0);
    assert.equal(estimateTokens('abcde'), 2);
    assert.equal(charEstimator.count('x'.repeat(400)), 100);
  });

  it('counts role overhead, tool-call names and arguments, and tool results', async () => {
    const o200k = await loadTokenizer('o200k_base');
    const counter = new MessageTokenCounter(o200k, { perMessage: 4, perToolCall: 8, perToolResult: 6, perFile: 800 });
    const call = assistant('a', '', { callId: 'c', tool: 'read_file', input: { path: 'src/index.ts' } });
    assert.equal(counter.countMessage(call), 4 + 8 + o200k.count('read_file') + o200k.count('{"path":"src/index.ts"}'));
    const result = toolResult('t', 'c', 'read_file', 'export default 1;');
    assert.equal(counter.countMessage(result), 4 + 6 + o200k.count('export default 1;'));
    assert.equal(counter.countMessage(user('u', '')), 4);
  });

  it('counts a history that grew by one message by counting only the new message', () => {
    const seen: string[] = [];
    const spy: TextTokenizer = { name: 'spy', count: (v) => (seen.push(v), v.length) };
    const counter = new MessageTokenCounter(spy);
    const history = [user('u1', 'first'), assistant('a1', 'second'), user('u2', 'third')];
    counter.countMessages(history);
    const before = seen.length;
    const grown = [...history, assistant('a2', 'fourth')];
    const total = counter.countMessages(grown);
    assert.deepEqual(seen.slice(before), ['fourth']);
    assert.equal(total, counter.countMessages(grown));
  });

  it('calibrates with provider usage: last reported input + output plus what was added since', () => {
    const counter = new MessageTokenCounter(charEstimator);
    const view = [user('u1', 'x'.repeat(400)), assistant('a1', 'y'.repeat(400)), user('u2', 'z'.repeat(40))];
    const usage = { anchorMessageId: 'a1', inputTokens: 1_000, outputTokens: 150, basis: null };
    const calibrated = countContext(view, counter, usage, null);
    assert.equal(calibrated.source, 'provider+local');
    assert.equal(calibrated.sinceReport, counter.countMessage(view[2]!));
    assert.equal(calibrated.tokens, 1_150 + counter.countMessage(view[2]!));
    assert.equal(calibrated.localTokens, counter.countMessages(view));
  });

  it('ignores a provider report made before the last compaction or about a message no longer in view', () => {
    const counter = new MessageTokenCounter(charEstimator);
    const view = [user('u1', 'abc'), assistant('a1', 'def')];
    const stale = countContext(view, counter, { anchorMessageId: 'a1', inputTokens: 9_999, outputTokens: 1, basis: 'entry-1' }, 'entry-2');
    assert.equal(stale.source, 'local');
    assert.equal(stale.tokens, counter.countMessages(view));
    const gone = countContext(view, counter, { anchorMessageId: 'zz', inputTokens: 9_999, outputTokens: 1, basis: 'entry-2' }, 'entry-2');
    assert.equal(gone.source, 'local');
    const legacy = countContext(view, counter, { anchorMessageId: 'a1', inputTokens: 9_999, outputTokens: 1, basis: LEGACY_BASIS }, null);
    assert.equal(legacy.source, 'local');
  });

  it('never trusts a report the server made from a prompt it cut', () => {
    const counter = new MessageTokenCounter(charEstimator);
    const view = [user('u1', 'abc'), assistant('a1', 'def')];
    const cut = countContext(view, counter, { anchorMessageId: 'a1', inputTokens: 1, outputTokens: 1, basis: null, truncated: true }, null);
    assert.equal(cut.source, 'local');
  });

  it("scales local counts by the ratio learned from the same model's reports", () => {
    const counter = new MessageTokenCounter(charEstimator);
    const view = [user('u1', 'x'.repeat(400)), assistant('a1', 'y'.repeat(400)), user('u2', 'z'.repeat(400))];
    const ratio = learnedRatio(
      [
        { anchorMessageId: 'old', inputTokens: 500, outputTokens: 1, basis: null, localTokens: 250, model: 'other' },
        { anchorMessageId: 'a1', inputTokens: 330, outputTokens: 1, basis: null, localTokens: 300, model: 'm' },
        { anchorMessageId: 'cut', inputTokens: 10, outputTokens: 1, basis: null, localTokens: 300, model: 'm', truncated: true },
      ],
      'm',
    );
    // The usable report of this model, weighed against a prior of ratio 1 worth 1,000 tokens.
    assert.equal(ratio, (330 + 1_000) / (300 + 1_000));
    const local = countContext(view, counter, undefined, null, 0, ratio);
    assert.equal(local.tokens, Math.round(counter.countMessages(view) * ratio!));
    assert.equal(learnedRatio([], 'm'), undefined);
    assert.equal(
      learnedRatio([{ anchorMessageId: 'a', inputTokens: 90_000, outputTokens: 0, basis: null, localTokens: 10 }], undefined),
      2,
      'bounded',
    );
    // Large requests outweigh the prior.
    const big = learnedRatio([{ anchorMessageId: 'a', inputTokens: 120_000, outputTokens: 0, basis: null, localTokens: 100_000 }], undefined)!;
    assert.ok(big > 1.19 && big < 1.2, String(big));
  });

  it('learns how the provider frames messages apart from its tokenizer, so a compacted view is counted as closely as a long one', () => {
    // A provider that counts text 2% lower than the local tokenizer and frames each message with half
    // of what the local count allows for it (OpenAI's 3 a message against Longrun's 4, and less
    // around calls and results).
    const provider = (content: number, framing: number) => Math.round(0.98 * content + 0.5 * framing);
    const reports: ReportedUsage[] = [];
    let content = 2_000;
    let framing = 40;
    for (let i = 0; i < 30; i++) {
      // A tool loop: each step adds an output of varying size and two messages; every eighth step a pruning shrinks the content.
      content += 300 + ((i * 37) % 900);
      framing += 20;
      if (i % 8 === 7) content = Math.round(content * 0.6);
      reports.push({
        anchorMessageId: `a${i}`,
        inputTokens: provider(content, framing),
        outputTokens: 5,
        basis: null,
        localTokens: content + framing,
        localFraming: framing,
        model: 'm',
      });
    }
    const calibration = learnedCalibration(reports, 'm')!;
    assert.ok(Math.abs(calibration.content - 0.98) < 0.01 && Math.abs(calibration.framing - 0.5) < 0.1, JSON.stringify(calibration));
    // After a compaction: 30 messages left, mostly text. One ratio learned on the long view is off by
    // more than 1% here; the calibration is within 1%.
    const [after, afterFraming] = [11_000, 300];
    const truth = provider(after, afterFraming);
    const plain = learnedRatio(reports, 'm')!;
    const split = effectiveRatio(calibration, after + afterFraming, afterFraming);
    assert.ok(Math.abs(plain * (after + afterFraming) - truth) / truth > 0.01, `the plain ratio ${plain} is off`);
    assert.ok(Math.abs(split * (after + afterFraming) - truth) / truth < 0.01, `the calibration is within 1% (${split})`);
  });

  it('keeps the plain ratio when reports do not tell framing apart: older reports, too few, or a fit out of bounds', () => {
    const plainOf = (reports: ReportedUsage[]) => learnedRatio(reports, undefined)!;
    // Older reports, without the framing: both parts are the plain ratio.
    const old: ReportedUsage[] = [1, 2, 3, 4].map((i) => ({
      anchorMessageId: `a${i}`,
      inputTokens: 1_100 * i,
      outputTokens: 0,
      basis: null,
      localTokens: 1_000 * i,
    }));
    assert.deepEqual(learnedCalibration(old, undefined), { content: plainOf(old), framing: plainOf(old) });
    // Two reports are too few to tell the parts apart.
    const two = old.slice(0, 2).map((r) => ({ ...r, localFraming: 100 }));
    assert.deepEqual(learnedCalibration(two, undefined), { content: plainOf(two), framing: plainOf(two) });
    // Reports a negative framing would explain are left to the plain ratio.
    const odd: ReportedUsage[] = [1, 2, 3, 4]
      .map((i) => ({
        anchorMessageId: `a${i}`,
        inputTokens: 1_000 * i - 400 * i * i,
        outputTokens: 0,
        basis: null,
        localTokens: 1_000 * i + 200 * i * i,
        localFraming: 200 * i * i,
      }))
      .filter((r) => r.inputTokens > 0);
    const k = learnedCalibration(odd, undefined)!;
    assert.ok(k.framing >= 0 && k.content >= 0.5, JSON.stringify(k));
    assert.equal(learnedCalibration([], undefined), undefined);
    // A view with no framing is counted at the content ratio.
    assert.equal(effectiveRatio({ content: 0.9, framing: 0.5 }, 1_000, 0), 0.9);
  });

  it('tells a prompt the server cut from a tokenizer that counts differently', () => {
    // Ollama read 2,048 of the ~6,000 tokens sent: cut.
    assert.deepEqual(detectTruncation(2_048, { localTokens: 6_000 }), { reported: 2_048, expected: 6_000 });
    // An open model's tokenizer counting 10% fewer than o200k: not cut.
    assert.equal(detectTruncation(5_400, { localTokens: 6_000 }), undefined);
    // Small prompts: a few hundred tokens of difference are noise.
    assert.equal(detectTruncation(100, { localTokens: 300 }), undefined);
    // Calibrated: this model usually reports 1.3× the local count, so 6,000 for 6,000 sent is cut.
    assert.ok(detectTruncation(6_000, { localTokens: 6_000, ratio: 1.3 }));
    assert.equal(detectTruncation(7_700, { localTokens: 6_000, ratio: 1.3 }), undefined);
    // Calibrated, a cut of a few hundred tokens in a small window shows: 3,000 read of ~3,300 sent.
    assert.ok(detectTruncation(3_000, { localTokens: 3_300, ratio: 1 }));
    assert.equal(detectTruncation(3_000, { localTokens: 3_300 }), undefined);
  });

  it('never takes a prompt within the window its server states for a cut one, however low the count', () => {
    // llama-server at -c 4096 read 451 tokens of about 1,902 sent: the model's chat template has no
    // place for the tool definitions, so the server left them out; nothing was cut.
    assert.equal(detectTruncation(451, { localTokens: 1_902 }, 4_096), undefined);
    assert.equal(detectTruncation(451, { localTokens: 1_902, ratio: 1 }, 4_096), undefined);
    // The same count of a prompt longer than the window it states: cut.
    assert.deepEqual(detectTruncation(2_048, { localTokens: 6_000 }, 4_096), { reported: 2_048, expected: 6_000 });
    // Without a stated window, as before.
    assert.deepEqual(detectTruncation(451, { localTokens: 1_902 }), { reported: 451, expected: 1_902 });
  });
});

describe('token counts stored with messages', () => {
  const spy = (name: string): TextTokenizer & { calls: number } => {
    const t = { name, calls: 0, count: (value: string) => (t.calls++, value.length) };
    return t;
  };
  const call = assistant('a', 'Reading the file.', { callId: 'c', tool: 'read_file', input: { path: 'src/index.ts' } });
  const result = toolResult('t', 'c', 'read_file', 'export const x = 1;');

  it('stores the count without framing and gives back the same count from it, without tokenizing', () => {
    const writer = new MessageTokenCounter(spy('letters'));
    const records = [call, result].map((message) => withTokenCounts({ type: 'message', message }, writer));
    const reader = new MessageTokenCounter(spy('letters'));
    for (const record of records) {
      assert.ok(record.type === 'message' && record.tokens !== undefined);
      // A copy, as a reload reads it: the cache by identity does not know it.
      const reread = structuredClone(record.message);
      assert.equal(reader.countMessage(reread, record.tokens), writer.countMessage(record.message));
    }
    assert.equal((reader.tokenizer as ReturnType<typeof spy>).calls, 0);
  });

  it('counts anew when the stored count is for another tokenizer', () => {
    const stored = withTokenCounts({ type: 'message', message: call }, new MessageTokenCounter(spy('letters')));
    assert.ok(stored.type === 'message');
    const other = new MessageTokenCounter({ name: 'double', count: (value) => value.length * 2 });
    assert.equal(other.countMessage(structuredClone(call), stored.tokens), new MessageTokenCounter(other.tokenizer).countMessage(call));
  });

  it('keeps the counts of other tokenizers when adding its own, and stores none for the chars/4 estimate', () => {
    const first = withTokenCounts({ type: 'message', message: call }, new MessageTokenCounter(spy('letters')));
    const both = withTokenCounts(first, new MessageTokenCounter({ name: 'double', count: (value) => value.length * 2 }));
    assert.ok(both.type === 'message');
    assert.deepEqual(Object.keys(both.tokens ?? {}).sort(), ['double', 'letters']);
    const estimated = withTokenCounts({ type: 'message', message: call }, new MessageTokenCounter(charEstimator));
    assert.ok(estimated.type === 'message' && estimated.tokens === undefined);
  });

  it('counts derived text once per object and key, and remembers recurring text', () => {
    const tokenizer = spy('letters');
    const counter = new MessageTokenCounter(tokenizer);
    const owner = {};
    assert.equal(
      counter.countDerived(owner, 'a', () => 'abc'),
      3,
    );
    assert.equal(
      counter.countDerived(owner, 'a', () => 'something else'),
      3,
    );
    assert.equal(counter.countDerived(owner, 'b', 'abcdef'), 6);
    assert.equal(counter.countDerived(owner, 'b', 'x'), 6);
    assert.equal(counter.countDerived({}, 'a', 'x'), 1);
    assert.equal(tokenizer.calls, 3);
    counter.countRemembered('directive');
    counter.countRemembered('directive');
    assert.equal(tokenizer.calls, 4);
  });
});
