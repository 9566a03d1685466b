import assert from 'node:assert/strict';
import { convertArrayToReadableStream, MockLanguageModelV4 } from 'ai/test';
import fc from 'fast-check';
import { withKeptText } from '../../../src/llm/kept-text';

type StreamPart = Record<string, unknown>;

const finish = { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage: { inputTokens: {}, outputTokens: {} } };

/** A provider streaming `deltas` as one text part (and `reasoning` before it as a reasoning part, when given). */
function provider(deltas: readonly string[], reasoning: readonly string[] = []): MockLanguageModelV4 {
  const parts: StreamPart[] = [{ type: 'stream-start', warnings: [] }];
  if (reasoning.length > 0) {
    parts.push({ type: 'reasoning-start', id: 'r' }, ...reasoning.map((delta) => ({ type: 'reasoning-delta', id: 'r', delta })), {
      type: 'reasoning-end',
      id: 'r',
    });
  }
  parts.push(
    { type: 'text-start', id: 't' },
    ...deltas.map((delta) => ({ type: 'text-delta', id: 't', delta })),
    { type: 'text-end', id: 't' },
    finish,
  );
  return new MockLanguageModelV4({ doStream: async () => ({ stream: convertArrayToReadableStream(parts as never[]) }) });
}

/** What the SDK is given of each kind of part, joined, when `model` is read through the middleware. */
async function given(model: MockLanguageModelV4, maxChars: number, shown: string[]): Promise<{ text: string; reasoning: string }> {
  const wrapped = withKeptText(model, { maxChars, onText: (delta) => shown.push(delta) }) as MockLanguageModelV4;
  const { stream } = await wrapped.doStream({ prompt: [] } as never);
  let text = '';
  let reasoning = '';
  for await (const part of stream as unknown as AsyncIterable<{ type: string; delta?: string }>) {
    if (part.type === 'text-delta') text += part.delta;
    if (part.type === 'reasoning-delta') reasoning += part.delta;
  }
  return { text, reasoning };
}

/** `text` split at `cuts` (positions taken modulo its length). */
function split(text: string, cuts: readonly number[]): string[] {
  const at = [...new Set(cuts.map((c) => (text.length === 0 ? 0 : c % text.length)))].sort((a, b) => a - b);
  const pieces: string[] = [];
  let from = 0;
  for (const to of at) {
    if (to > from) pieces.push(text.slice(from, to));
    from = Math.max(from, to);
  }
  pieces.push(text.slice(from));
  return pieces.filter((p) => p.length > 0);
}

const MARKER = /\n\[… cut by Longrun: ([\d,]+) characters in all; the first ([\d,]+) and the last ([\d,]+) are kept\]\n/;

/** Whether `text` holds a lone surrogate (half a character). */
function hasLoneSurrogate(text: string): boolean {
  return /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(text);
}

describe('what the SDK is given of a streamed answer', () => {
  it('shows every delta whole, and gives the SDK the answer whole up to the limit, else its head and tail around a marker', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.string({ unit: fc.constantFrom('a', 'b', '\n', 'é', '😀'), maxLength: 400 }),
        fc.array(fc.nat(), { maxLength: 40 }),
        fc.integer({ min: 2, max: 300 }),
        async (answer, cuts, maxChars) => {
          const deltas = split(answer, cuts);
          const shown: string[] = [];
          const { text } = await given(provider(deltas), maxChars, shown);
          assert.deepEqual(shown, deltas, 'the chat is shown each delta as it came');
          if (answer.length <= maxChars) {
            assert.equal(text, answer);
            return;
          }
          const marker = MARKER.exec(text);
          assert.ok(marker, text);
          const [head, tail] = [text.slice(0, marker.index), text.slice(marker.index + marker[0].length)];
          assert.equal(Number(marker[1]!.replace(/,/g, '')), answer.length);
          assert.equal(Number(marker[2]!.replace(/,/g, '')), head.length);
          assert.equal(Number(marker[3]!.replace(/,/g, '')), tail.length);
          assert.ok(answer.startsWith(head) && answer.endsWith(tail));
          assert.ok(head.length + tail.length <= maxChars, `${head.length} + ${tail.length} kept of ${maxChars}`);
          // Only a character split in two is given up at either end.
          assert.ok(head.length >= Math.ceil(maxChars / 2) - 1 && tail.length >= Math.floor(maxChars / 2) - 1);
          assert.ok(!hasLoneSurrogate(head) && !hasLoneSurrogate(tail), 'no half character is kept');
        },
      ),
      { numRuns: 300 },
    );
  });

  it('limits reasoning the same way, and keeps the text apart from it', async () => {
    const reasoning = Array.from({ length: 100 }, (_, i) => `thought ${i}. `);
    const shown: string[] = [];
    const given_ = await given(provider(['The answer.'], reasoning), 200, shown);
    assert.equal(given_.text, 'The answer.');
    assert.deepEqual(shown, ['The answer.'], 'reasoning is not shown as the answer');
    assert.ok(given_.reasoning.startsWith('thought 0. thought 1.'));
    assert.ok(given_.reasoning.endsWith('thought 98. thought 99. '));
    assert.match(given_.reasoning, MARKER);
    assert.ok(given_.reasoning.length < 200 + 120, `${given_.reasoning.length} characters`);
  });
});
