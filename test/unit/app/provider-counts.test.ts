import assert from 'node:assert/strict';
import { convertArrayToReadableStream, MockLanguageModelV4 } from 'ai/test';
import type { ProviderKind } from '../../../src/core/provider-kind';
import { messageTexts, turnFixture, type TurnFixture } from './turn-fixture';

/**
 * A provider whose count of a request is `share` of about four characters a token: what a server
 * that cut the prompt reports (Ollama's), or what a native API whose tokenizer counts far fewer
 * tokens than the local estimate says of a prompt it read whole.
 */
function countingModel(share: () => number): MockLanguageModelV4 {
  return new MockLanguageModelV4({
    doStream: async ({ prompt }) => {
      const read = Math.round((share() * prompt.reduce((n, m) => n + messageTexts(m).length + 16, 0)) / 4);
      const text = 'Noted.';
      return {
        stream: convertArrayToReadableStream([
          { type: 'stream-start', warnings: [] },
          { type: 'text-start', id: 't' },
          { type: 'text-delta', id: 't', delta: text },
          { type: 'text-end', id: 't' },
          {
            type: 'finish',
            finishReason: { unified: 'stop', raw: 'stop' },
            usage: {
              inputTokens: { total: read, noCache: read, cacheRead: undefined, cacheWrite: undefined },
              outputTokens: { total: 2, text: 2, reasoning: undefined },
            },
          },
        ] as never[]),
      };
    },
  });
}

/** Four turns counted at `first` of the local estimate, then one counted at `share` of it. */
async function play(provider: ProviderKind, share: number, first = 1): Promise<{ f: TurnFixture; notices: string; calls: number }> {
  let current = first;
  const model = countingModel(() => current);
  const f = await turnFixture({ provider, servedByEndpoint: true, model, window: 200_000 });
  const chat = f.newChat();
  for (let i = 0; i < 4; i++) await chat.send(`remember fact ${i}: ${'the retry logic waits between attempts. '.repeat(60)}`);
  const before = model.doStreamCalls.length;
  current = share;
  const last = await chat.send('What do you know?');
  return { f, notices: last.surface.text(), calls: model.doStreamCalls.length - before };
}

describe("a provider's own counts", () => {
  for (const provider of ['anthropic', 'openai', 'google', 'openrouter'] as const) {
    it(`are believed from the native ${provider} API: a count far below the estimate is no cut prompt and shrinks no window`, async () => {
      const { f, notices, calls } = await play(provider, 0.45);
      try {
        assert.doesNotMatch(notices, /cut the prompt/);
        assert.equal(calls, 1, 'asked once, not again after a compaction');
        assert.deepEqual(f.learnedWindows, []);
        const conversation = (await f.registry.current())!;
        const usages = conversation.log().flatMap((r) => (r.type === 'usage' ? [r.usage] : []));
        assert.ok(
          usages.every((u) => u.truncated !== true),
          'no report is marked as cut',
        );
        // The count recalibrates: the gauge now stands on the low report.
        const last = usages.at(-1)!;
        assert.ok(Math.abs(conversation.count().tokens - (last.inputTokens + last.outputTokens)) < 50, `${conversation.count().tokens}`);
      } finally {
        await f.close();
      }
    });
  }

  it('from an OpenAI-compatible server that cut the prompt still show the cut: a notice, a compaction and a lower bound of the window', async () => {
    const { f, notices, calls } = await play('openai-compatible', 0.45);
    try {
      assert.match(notices, /cut the prompt/);
      assert.equal(calls, 2, 'asked again once compacted');
      assert.equal(f.learnedWindows.length, 1);
      assert.equal(f.learnedWindows[0]!.lowerBound, true);
      assert.equal(f.learnedWindows[0]!.why, 'suggested by a prompt the server cut');
    } finally {
      await f.close();
    }
  });

  it('from an OpenAI-compatible server whose tokenizer counts a fifth less than the estimate are no cut', async () => {
    const { f, notices, calls } = await play('openai-compatible', 0.8, 0.8);
    try {
      assert.doesNotMatch(notices, /cut the prompt/);
      assert.equal(calls, 1);
      assert.deepEqual(f.learnedWindows, []);
    } finally {
      await f.close();
    }
  });
});
