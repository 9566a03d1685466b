import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MessageTokenCounter } from '../../../src/core/message-tokens';
import type { Message } from '../../../src/core/messages';
import { charEstimator } from '../../../src/core/tokenizer';
import type { Conversation } from '../../../src/app/conversation/conversation';
import { ConversationStore } from '../../../src/app/store/conversation-store';
import { FakeClock } from '../core/fixtures';
import { newConversation } from '../fixtures/conversation-deps';

/**
 * The gauge of a new conversation's second request, the first after a usage report: the report
 * counted the system prompt, the tools and a question, and what was added since is a tool's output,
 * which the provider counts its own way. A Claude-like provider: it adds a tool-use prompt of its own
 * to the system prompt and tools, counts text 1.07 times the local count and code 1.22 times.
 */
describe("the gauge of a new conversation's second request", () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'longrun-second-request-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const FIXED = 1_650;
  const TOOL_USE_PROMPT = 346;
  const TEXT = 1.07;
  const CODE = 1.22;

  async function conversation(key: string): Promise<{ c: Conversation; counter: MessageTokenCounter }> {
    const clock = new FakeClock();
    const counter = new MessageTokenCounter(charEstimator);
    const store = new ConversationStore(dir, () => clock.now());
    await store.create('c');
    const c = newConversation({ id: 'c', store, clock, model: { name: 'claude', limit: 200_000, counter, requestOverhead: FIXED, key } });
    return { c, counter };
  }

  /** What the gauge reads before the second request, against what the provider counts for it, in percent. */
  async function secondRequestError(key: string, outputLines: number): Promise<number> {
    const { c, counter } = await conversation(key);
    const question: Message = { id: 'u1', role: 'user', content: [{ type: 'text', text: 'Find why the retry logic fails under load and fix it.' }] };
    await c.append([{ type: 'message', message: question }]);
    const sent = c.requestBasis();
    const first = Math.round(TEXT * FIXED + TOOL_USE_PROMPT + TEXT * counter.countMessage(question));
    const call: Message = {
      id: 'a1',
      role: 'assistant',
      content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'read_file', input: { path: 'src/jobs/retry.ts' } }],
    };
    const answered = Math.round(CODE * counter.countMessage(call));
    await c.append([
      { type: 'message', message: call },
      {
        type: 'usage',
        usage: {
          anchorMessageId: 'a1',
          inputTokens: first,
          outputTokens: answered,
          basis: sent.basis,
          localTokens: sent.localTokens,
          ...(sent.localFraming !== undefined ? { localFraming: sent.localFraming } : {}),
          ...(sent.localFixed !== undefined ? { localFixed: sent.localFixed } : {}),
          model: key,
        },
      },
    ]);
    const code = Array.from(
      { length: outputLines },
      (_, i) =>
        `${i + 1}: export async function retry${i}(ctx: Context): Promise<Result> { return ctx.store.load('jobs/${i}', { timeoutMs: 500 }); }`,
    ).join('\n');
    const output: Message = { id: 't1', role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 'read_file', output: code }] };
    await c.append([{ type: 'message', message: output }]);
    const truth = first + answered + CODE * counter.countMessage(output);
    return ((c.count().tokens - truth) / truth) * 100;
  }

  it('is within 5% of what a Claude model counts after a large tool output, and reads high rather than low', async () => {
    for (const lines of [40, 150, 400]) {
      const error = await secondRequestError('anthropic/claude-sonnet-4-5', lines);
      assert.ok(error <= 5 && error >= -1, `${lines} lines of output: the gauge is off by ${error.toFixed(2)}%`);
      await rm(dir, { recursive: true, force: true });
      dir = await mkdtemp(join(tmpdir(), 'longrun-second-request-'));
    }
  });
});
