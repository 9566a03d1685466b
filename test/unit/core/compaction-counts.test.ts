import assert from 'node:assert/strict';
import { EngineMemo } from '../../../src/core/engine-memo';
import { computeCompaction } from '../../../src/core/compaction';
import { EMPTY_LEDGER } from '../../../src/core/file-ledger';
import { modelView, SUMMARY_PREFIX } from '../../../src/core/history';
import { MessageTokenCounter } from '../../../src/core/message-tokens';
import type { Message } from '../../../src/core/messages';
import { loadTokenizer, type TextTokenizer } from '../../../src/core/tokenizer';
import { asLog, assistant, config, FakeClock, idGenerator, RecordingSummarizer, toolResult, user } from './fixtures';

/**
 * A compaction checks that its summary request fits the summarizer's window, and packs batches when
 * it does not, by counting the request's messages as rendered. Each rendered message is tokenized
 * once: a batch's count reuses the count made while packing, and computing the compaction again
 * (after a failure, or because the conversation moved on while it was computed) tokenizes none.
 */
describe('compaction: counting the summary request', () => {
  it('tokenizes each rendered message once while packing batches, and none when computing the same compaction again', async () => {
    const o200k = await loadTokenizer('o200k_base');
    const counted: string[] = [];
    const spy: TextTokenizer = { name: o200k.name, count: (value) => (counted.push(value), o200k.count(value)) };
    const counter = new MessageTokenCounter(spy);
    const messages: Message[] = [];
    for (let i = 0; i < 40; i++) {
      messages.push(user(`u${i}`, `marker-${i}-request: please look at module ${i} again. ${'The retry policy changed. '.repeat(20)}`));
      messages.push(assistant(`a${i}`, `marker-${i}-step`, { callId: `c${i}`, tool: 'read_file', input: { path: `src/m${i}.ts` } }));
      messages.push(toolResult(`t${i}`, `c${i}`, 'read_file', `marker-${i}-result ${'export const value = 1;\n'.repeat(40)}`));
    }
    const log = asLog(messages);
    // The gauge counted the messages as they came.
    counter.countMessages(modelView(log, new EngineMemo()));
    const cfg = config((c) => ({ ...c, keepRecent: { ...c.keepRecent, mode: 'messages', messages: 3 } }));
    const compute = async (summarizer: RecordingSummarizer) => {
      counted.length = 0;
      const outcome = await computeCompaction(
        { log, reason: 'manual', config: cfg, window: { limit: 200_000, source: 'model' }, ledger: EMPTY_LEDGER },
        { counter, summarizer, clock: new FakeClock(), newId: idGenerator(), memo: new EngineMemo() },
      );
      assert.equal(outcome.status, 'compacted');
      return [...counted];
    };
    const renderedTimes = (texts: readonly string[], marker: string) => texts.filter((text) => text.includes(marker)).length;

    // A summarizer window of 6,000 tokens takes several batches.
    const first = new RecordingSummarizer(undefined, 6_000);
    const packing = await compute(first);
    assert.ok(first.requests.filter((r) => r.purpose === 'batch').length >= 3, `${first.requests.length} requests`);
    for (let i = 0; i < 37; i++) assert.equal(renderedTimes(packing, `marker-${i}-result`), 1, `result ${i} was tokenized once`);

    const again = await compute(new RecordingSummarizer(undefined, 6_000));
    // Only the new summary is counted: it is new text, although it quotes the original task.
    const conversationText = again.filter((text) => text.includes('marker-') && !text.startsWith(SUMMARY_PREFIX));
    assert.deepEqual(conversationText, [], 'no message was tokenized again');
  });
});
