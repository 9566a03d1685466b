import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RESTING_COMPACTIONS } from '../../../src/core/compaction-guard';
import { DEFAULT_CONFIG, type CompactionConfig } from '../../../src/core/config';
import type { CompactionReason } from '../../../src/core/history';
import type { Summarizer } from '../../../src/core/ports';
import type { Conversation } from '../../../src/app/conversation/conversation';
import { ConversationStore } from '../../../src/app/store/conversation-store';
import { FakeClock, templateSummary } from '../core/fixtures';
import { newConversation } from '../fixtures/conversation-deps';
import { turnFixture } from './turn-fixture';

/**
 * A summarizer whose summaries keep failing is not asked at every automatic compaction: after two
 * failures in a row the next ones use the extractive summary at once, the chat is told once, and the
 * summarizer is asked again after them. What the user asks for always asks it.
 */

const config: CompactionConfig = {
  ...DEFAULT_CONFIG,
  minMessages: 2,
  pruning: { ...DEFAULT_CONFIG.pruning, enabled: false },
  keepRecent: { ...DEFAULT_CONFIG.keepRecent, mode: 'messages', messages: 2 },
};

describe('summaries that keep failing', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'longrun-failing-summaries-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** A summarizer named `name` that fails while `state.failing`, counting the calls it gets. */
  const flaky = (name: string, state: { failing: boolean; calls: number }): Summarizer => ({
    name,
    summarize: async () => {
      state.calls++;
      if (state.failing) throw new Error('connect ECONNREFUSED 127.0.0.1:11434');
      return { text: templateSummary(`Written by ${name}.`) };
    },
  });

  async function conversationWith(summarizer: () => Summarizer): Promise<Conversation> {
    const clock = new FakeClock();
    const store = new ConversationStore(dir, () => clock.now());
    await store.create('c1');
    return newConversation({ store, clock, config, model: { limit: 20_000 }, summarizer: async () => summarizer() });
  }

  let said = 0;
  /** Four more messages of about 1,000 tokens, then a compaction for `reason`: what became of its summary. */
  async function round(conversation: Conversation, reason: CompactionReason = 'threshold'): Promise<string> {
    for (let i = 0; i < 2; i++, said++) {
      await conversation.append([
        { type: 'message', message: { id: `u${said}`, role: 'user', content: [{ type: 'text', text: `u${said} `.repeat(800) }] } },
        { type: 'message', message: { id: `a${said}`, role: 'assistant', content: [{ type: 'text', text: `a${said} `.repeat(800) }] } },
      ]);
    }
    const outcome = await conversation.compact(reason);
    assert.equal(outcome.status, 'compacted', 'reason' in outcome ? outcome.reason : '');
    return outcome.status === 'compacted' && outcome.compaction.entry?.fallback ? `extractive: ${outcome.compaction.entry.failure}` : 'written';
  }

  it('is not asked by the automatic compactions after two failures in a row, which compact all the same; the chat is told once', async () => {
    const state = { failing: true, calls: 0 };
    const conversation = await conversationWith(() => flaky('local/coder', state));
    const calls: number[] = [];
    const notices: Array<string | undefined> = [];
    const results: string[] = [];
    for (let i = 0; i < 2 + RESTING_COMPACTIONS + 1; i++) {
      results.push(await round(conversation));
      calls.push(state.calls);
      notices.push(conversation.takeNotice());
    }
    assert.deepEqual(calls, [1, 2, 2, 2, 2, 2, 3], 'asked twice, rested four compactions, then asked again');
    for (const result of results) assert.match(result, /^extractive: /);
    assert.match(results[2]!, /local\/coder was not asked, since its last 2 summaries failed \(the last: .*ECONNREFUSED/);
    assert.equal(notices.filter((n) => n !== undefined).length, 1, 'said once');
    assert.match(
      notices[1]!,
      /Summaries by local\/coder failed 2 times in a row \(the last: .*ECONNREFUSED.*\)\. The next 4 automatic compactions do not ask it/,
    );
  });

  /** A summarizer that answers each call with the next of `answers` (the last one again once they run out). */
  const answering = (answers: readonly string[], state: { calls: number }): Summarizer => ({
    name: 'local/coder',
    summarize: async () => ({ text: answers[Math.min(state.calls++, answers.length - 1)]! }),
  });

  it('counts noise as a failure: two noisy summaries in a row rest the summarizer', async () => {
    const state = { calls: 0 };
    const loop = 'I will summarize the conversation now. '.repeat(30);
    const conversation = await conversationWith(() => answering(['\u0001\u0002'.repeat(50), loop], state));
    assert.match(await round(conversation), /^extractive: .*no letters/);
    assert.match(await round(conversation), /^extractive: .*repeats itself/);
    assert.match(await round(conversation), /was not asked, since its last 2 summaries failed/);
    assert.equal(state.calls, 2);
  });

  it('does not count a real summary turned down for its length: the summarizer is asked at every compaction', async () => {
    const state = { calls: 0 };
    const short = 'Wrote src/report/export.ts; the three export tests pass.';
    const conversation = await conversationWith(() => answering([short], state));
    const results: string[] = [];
    for (let i = 0; i < 4; i++) results.push(await round(conversation));
    for (const result of results) assert.match(result, /^extractive: .*under a tenth of the \d+ expected/);
    assert.equal(state.calls, 4, 'asked each time');
    assert.equal(conversation.takeNotice(), undefined, 'nothing to tell: it did not fail');
  });

  it('neither counts nor ends a streak with a summary turned down for its length', async () => {
    const state = { calls: 0 };
    const short = 'Wrote src/report/export.ts; the three export tests pass.';
    const conversation = await conversationWith(() => answering(['', short, short, ''], state));
    assert.match(await round(conversation), /^extractive: the summarizer returned no text/);
    assert.match(await round(conversation), /under a tenth/);
    assert.match(await round(conversation), /under a tenth/, 'asked again: one failure so far');
    assert.match(await round(conversation), /^extractive: the summarizer returned no text/);
    assert.match(await round(conversation), /was not asked, since its last 2 summaries failed/);
    assert.equal(state.calls, 4);
  });

  it('is asked by a compaction the user asks for, and one summary it writes ends the rest', async () => {
    const state = { failing: true, calls: 0 };
    const conversation = await conversationWith(() => flaky('local/coder', state));
    await round(conversation);
    await round(conversation);
    assert.equal(state.calls, 2);
    assert.match(await round(conversation, 'manual'), /^extractive: the summarizer failed/, 'asked, and failed again');
    assert.equal(state.calls, 3);
    state.failing = false;
    assert.equal(await round(conversation, 'manual'), 'written');
    assert.equal(await round(conversation), 'written', 'automatic compaction asks it again at once');
    assert.equal(state.calls, 5);
  });

  it('asks another summarizer at once, and the overflow compaction rests the one that keeps failing too', async () => {
    const state = { failing: true, calls: 0 };
    const other = { failing: false, calls: 0 };
    let current = flaky('local/coder', state);
    const conversation = await conversationWith(() => current);
    await round(conversation);
    await round(conversation);
    assert.match(await round(conversation, 'overflow'), /was not asked/);
    assert.equal(state.calls, 2);
    current = flaky('remote/mini', other);
    assert.equal(await round(conversation), 'written');
    assert.equal(other.calls, 1);
  });

  it('is said once in the chat, over many turns whose compactions no longer ask it', async () => {
    let calls = 0;
    const failing: Summarizer = {
      name: 'local/coder',
      summarize: async () => {
        calls++;
        throw new Error('the server answered 500');
      },
    };
    const small = await turnFixture({ window: 4_000, summarizer: failing, config: { ...config, minMessages: 4 } });
    try {
      const chat = small.newChat();
      const said: string[] = [];
      for (let i = 1; i <= 30; i++) said.push((await chat.send(`remember N-${i} ${'x'.repeat(1_200)}`)).surface.text());
      const conversation = (await small.registry.current())!;
      const compactions = conversation.log().filter((r) => r.type === 'compaction').length;
      const told = said.filter((text) => text.includes('failed 2 times in a row'));
      assert.equal(told.length, 1, said.join('\n---\n'));
      assert.ok(compactions >= 5, `${compactions} compactions, ${calls} calls`);
      assert.ok(calls < compactions, `the summarizer was asked ${calls} times for ${compactions} compactions`);
      assert.ok(conversation.assess().level !== 'over', 'the conversation still fits');
    } finally {
      await small.close();
    }
  });
});
