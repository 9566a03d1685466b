import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MockLanguageModelV4 } from 'ai/test';
import { DEFAULT_CONFIG, type CompactionConfig } from '../../../src/core/config';
import type { Summarizer } from '../../../src/core/ports';
import type { Conversation, ConversationDeps } from '../../../src/app/conversation/conversation';
import { ConversationStore } from '../../../src/app/store/conversation-store';
import { SummarizerSource } from '../../../src/app/compaction/summarizer-source';
import { IgnoredToolChoice } from '../../../src/app/compaction/ignored-tool-choice';
import { memento } from '../fixtures/memento';
import { NO_TELEMETRY } from '../../../src/llm/telemetry';
import { FakeClock, templateSummary } from '../core/fixtures';
import { newConversation } from '../fixtures/conversation-deps';

/**
 * A conversation asks for its summarizer when a compaction is computed, through an asynchronous
 * port: nothing has to prepare it first, a model picked since is the one used, and without a model
 * the compaction fails with the message that says what to do.
 */

const config: CompactionConfig = {
  ...DEFAULT_CONFIG,
  minMessages: 2,
  pruning: { ...DEFAULT_CONFIG.pruning, enabled: false },
  keepRecent: { ...DEFAULT_CONFIG.keepRecent, mode: 'messages', messages: 2 },
};

const NO_SUMMARIZER = 'No model is available to write the summary. Pick a model in the chat, or set longrun.compaction.model.';

/** A summarizer named `name` that writes a template summary. */
const named = (name: string): Summarizer => ({ name, summarize: async () => ({ text: templateSummary(`Notes written by ${name}.`) }) });

describe('the summarizer a compaction asks for', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'longrun-conversation-summarizer-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** Six turns of about 1,000 tokens in a 10,000-token window (warning from 7,500), with `summarizer` as the port. */
  async function conversationWith(summarizer: ConversationDeps['summarizer'], summarizeAhead = false): Promise<Conversation> {
    const clock = new FakeClock();
    const store = new ConversationStore(dir, () => clock.now());
    await store.create('c1');
    const conversation = newConversation({
      store,
      clock,
      config,
      model: { limit: 10_000 },
      summarizer,
      summarizeAhead: () => summarizeAhead,
    });
    for (let i = 0; i < 6; i++) await say(conversation, i, 500);
    return conversation;
  }

  const say = (conversation: Conversation, i: number, tokens: number): Promise<void> =>
    conversation.append([
      { type: 'message', message: { id: `u${i}`, role: 'user', content: [{ type: 'text', text: 'x'.repeat(tokens * 4) }] } },
      { type: 'message', message: { id: `a${i}`, role: 'assistant', content: [{ type: 'text', text: 'y'.repeat(tokens * 4) }] } },
    ]);

  it('is asked for only when a compaction runs, and the compaction uses what it resolves', async () => {
    let asked = 0;
    const conversation = await conversationWith(async () => {
      asked++;
      await new Promise((resolve) => setTimeout(resolve, 5));
      return named('resolved-late');
    });
    assert.equal(asked, 0, 'appending messages asks for no summarizer');
    const outcome = await conversation.compact('manual');
    assert.equal(outcome.status, 'compacted', 'reason' in outcome ? outcome.reason : '');
    assert.equal(asked, 1);
    if (outcome.status !== 'compacted') return;
    assert.equal(outcome.compaction.entry?.model, 'resolved-late');
  });

  it('is asked again at each compaction, so a model picked since writes the next summary', async () => {
    let current = named('first-model');
    const conversation = await conversationWith(async () => current);
    const first = await conversation.compact('manual');
    assert.equal(first.status === 'compacted' && first.compaction.entry?.model, 'first-model');
    current = named('picked-since');
    for (let i = 6; i < 12; i++) await say(conversation, i, 500);
    const second = await conversation.compact('manual');
    assert.equal(second.status === 'compacted' && second.compaction.entry?.model, 'picked-since');
  });

  it('records each summarizer call’s usage as a compaction’s cost, which never calibrates the gauge', async () => {
    const billed: Summarizer = {
      name: 'longrun/claude/claude-sonnet-4-0',
      summarize: async () => ({
        text: templateSummary('Notes.'),
        usage: {
          inputTokens: 6_000,
          outputTokens: 300,
          cacheReadTokens: 5_500,
          cacheWriteTokens: 0,
          provider: 'anthropic',
          modelId: 'claude-sonnet-4-20250514',
        },
      }),
    };
    const conversation = await conversationWith(async () => billed);
    const before = conversation.count();
    const outcome = await conversation.compact('manual');
    assert.equal(outcome.status, 'compacted');
    const usages = conversation.log().flatMap((r) => (r.type === 'usage' ? [r.usage] : []));
    assert.equal(usages.length, 1);
    assert.deepEqual(
      {
        purpose: usages[0]!.purpose,
        input: usages[0]!.inputTokens,
        read: usages[0]!.cacheReadTokens,
        model: usages[0]!.model,
        at: typeof usages[0]!.at,
      },
      { purpose: 'summary', input: 6_000, read: 5_500, model: 'longrun/claude/claude-sonnet-4-0', at: 'number' },
    );
    assert.equal(before.source, 'local');
    assert.equal(conversation.count().source, 'local', 'a summary’s usage is not the view’s count');
  });

  it('keeps the gauge on the agent’s last report while a summary is prepared', async () => {
    const conversation = await conversationWith(async () => named('m'));
    await conversation.append([{ type: 'usage', usage: { anchorMessageId: 'a5', inputTokens: 6_100, outputTokens: 500, basis: null } }]);
    assert.equal(conversation.count().source, 'provider+local');
    await conversation.append([
      { type: 'usage', usage: { anchorMessageId: 'a5', inputTokens: 6_000, outputTokens: 300, basis: '(summary request)', purpose: 'summary' } },
    ]);
    assert.equal(conversation.count().source, 'provider+local');
  });

  it('without a model, fails the compaction with the message that says what to do, and changes nothing', async () => {
    const conversation = await conversationWith(async () => undefined);
    const before = conversation.log().length;
    const outcome = await conversation.compact('manual');
    assert.deepEqual(outcome, { status: 'failed', reason: NO_SUMMARIZER });
    assert.equal(conversation.log().length, before);
  });

  it('prepares nothing ahead while there is no model, and starts once one can summarize', async () => {
    let current: Summarizer | undefined;
    let asked = 0;
    const conversation = await conversationWith(async () => {
      asked++;
      return current;
    }, true);
    // 6,000 tokens: under the warning level. Two more turns pass it.
    await say(conversation, 6, 500);
    await say(conversation, 7, 500);
    await new Promise((resolve) => setTimeout(resolve, 10));
    assert.ok(asked >= 1, 'the port was asked past the warning level');
    assert.equal(conversation.isSummarizingAhead(), false, 'nothing is prepared without a model');
    let calls = 0;
    current = {
      name: 'arrived',
      summarize: async () => {
        calls++;
        return { text: templateSummary('Prepared ahead.') };
      },
    };
    await say(conversation, 8, 100);
    for (let i = 0; i < 100 && calls === 0; i++) await new Promise((resolve) => setTimeout(resolve, 5));
    assert.equal(calls, 1, 'the next message past the warning level starts the summary');
    assert.equal(conversation.isSummarizingAhead(), true);
  });

  it('compacts through the summarizer source, its model made when the compaction first asks, with no step before', async () => {
    const made: MockLanguageModelV4[] = [];
    const source = new SummarizerSource({
      choose: async () => ({
        key: 'longrun/local/coder',
        declaredWindow: 32_000,
        languageModel: async () => {
          const model = new MockLanguageModelV4({
            doGenerate: {
              content: [{ type: 'text', text: templateSummary('Six turns, summarized by the mock model.') }],
              finishReason: { unified: 'stop', raw: 'stop' },
              usage: {
                inputTokens: { total: 100, noCache: 100, cacheRead: undefined, cacheWrite: undefined },
                outputTokens: { total: 50, text: 50, reasoning: undefined },
              },
              warnings: [],
            },
          });
          made.push(model);
          return model;
        },
      }),
      conversationModel: () => 'longrun/local/coder',
      learnedWindow: () => undefined,
      settings: () => ({ summaryContinuesConversation: false, timeouts: { firstChunkMs: 60_000, idleMs: 60_000 } }),
      telemetry: () => NO_TELEMETRY,
      ignoredToolChoice: new IgnoredToolChoice({ memento: memento(), now: () => 0 }),
    });
    const conversation = await conversationWith(() => source.summarizer());
    assert.equal(made.length, 0);
    const outcome = await conversation.compact('manual');
    assert.equal(outcome.status, 'compacted', 'reason' in outcome ? outcome.reason : '');
    assert.equal(made.length, 1);
    assert.equal(made[0]!.doGenerateCalls.length, 1, 'the summary was written by the model made on demand');
    if (outcome.status !== 'compacted') return;
    assert.match(outcome.compaction.entry!.summary, /summarized by the mock model/);
  });
});
