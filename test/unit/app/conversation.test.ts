import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_CONFIG } from '../../../src/core/config';
import { MessageTokenCounter } from '../../../src/core/message-tokens';
import { charEstimator } from '../../../src/core/tokenizer';
import { NEW_TITLE } from '../../../src/app/conversation/conversation';
import { ConversationStore } from '../../../src/app/store/conversation-store';
import { isSummaryMessage } from '../../../src/core/history';
import { FakeClock, templateSummary } from '../core/fixtures';
import { memoryIndex, newConversation } from '../fixtures/conversation-deps';

describe('a conversation in the list of conversations', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'longrun-conversation-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('is named after its first request, shortened, once it has one, and keeps that name', async () => {
    const clock = new FakeClock();
    const index = memoryIndex();
    const store = new ConversationStore(dir, () => clock.now());
    await store.create('c1');
    await index.upsert({ id: 'c1', title: NEW_TITLE, createdAt: 1, updatedAt: 1 });
    const counter = new MessageTokenCounter(charEstimator);
    const conversation = newConversation({ store, index, clock, newId: () => 'x', model: { limit: 1_000, counter } });
    const long = `Build a flashcard app with spaced repetition,   a deck editor and statistics for every card`;
    await conversation.append([{ type: 'message', message: { id: 'u1', role: 'user', content: [{ type: 'text', text: long }] } }]);
    const title = index.list().find((c) => c.id === 'c1')!.title;
    assert.equal(title, 'Build a flashcard app with spaced repetition, a deck edit…');
    await conversation.append([{ type: 'message', message: { id: 'u2', role: 'user', content: [{ type: 'text', text: 'Something else' }] } }]);
    assert.equal(index.list().find((c) => c.id === 'c1')!.title, title);
  });
});

describe('a compaction on a small window whose tools take much of it', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'longrun-conversation-room-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** Twenty turns of about 150 tokens, compacted by hand with `requestOverhead` tokens of system prompt and tools. */
  async function keptAfterCompaction(requestOverhead: number): Promise<number> {
    const clock = new FakeClock();
    const index = memoryIndex();
    const store = new ConversationStore(join(dir, String(requestOverhead)), () => clock.now());
    await store.create('c1');
    await index.upsert({ id: 'c1', title: NEW_TITLE, createdAt: 1, updatedAt: 1 });
    const counter = new MessageTokenCounter(charEstimator);
    let ids = 0;
    const conversation = newConversation({
      store,
      index,
      clock,
      newId: () => `e${ids++}`,
      config: { ...DEFAULT_CONFIG, pruning: { ...DEFAULT_CONFIG.pruning, enabled: false } },
      model: { limit: 4_500, counter, requestOverhead, outputReserve: 1_500 },
      summarizer: { name: 's', summarize: async () => ({ text: templateSummary('Twenty turns of notes.') }) },
    });
    for (let i = 0; i < 20; i++) {
      const text = `turn ${i}: ${'x'.repeat(600)}`;
      await conversation.append([
        { type: 'message', message: { id: `u${i}`, role: 'user', content: [{ type: 'text', text }] } },
        { type: 'message', message: { id: `a${i}`, role: 'assistant', content: [{ type: 'text', text: `noted ${i}` }] } },
      ]);
    }
    const outcome = await conversation.compact('manual');
    assert.equal(outcome.status, 'compacted', 'reason' in outcome ? outcome.reason : '');
    const view = conversation.view();
    return counter.countMessages(view.filter((m) => !m.id.startsWith('summary') && !isSummaryMessage(m)));
  }

  it('keeps a share of the room the messages have, not of the whole window', async () => {
    const withoutTools = await keptAfterCompaction(0);
    const withTools = await keptAfterCompaction(1_500);
    // 35% of 4,500 is 1,575; of the 3,000 left beside 1,500 tokens of tools, 1,050. The cut falls
    // between turns (about 165 tokens each), so each may keep up to one turn more.
    const turn = 170;
    assert.ok(withoutTools > 1_050 + turn && withoutTools <= 1_575 + turn, `kept ${withoutTools} without tools`);
    assert.ok(withTools <= 1_050 + turn, `kept ${withTools} beside the tools`);
  });
});

describe('a turn that ends at the critical level', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'longrun-conversation-critical-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /**
   * A 10,000-token window (warning from 7,500, compaction from 9,000), turns of about 1,200 tokens
   * and a summarizer the test releases.
   */
  async function setup() {
    const clock = new FakeClock();
    const store = new ConversationStore(dir, () => clock.now());
    await store.create('c1');
    const releases: Array<() => void> = [];
    let ids = 0;
    const conversation = newConversation({
      store,
      clock,
      newId: () => `e${++ids}`,
      config: {
        ...DEFAULT_CONFIG,
        minMessages: 2,
        pruning: { ...DEFAULT_CONFIG.pruning, enabled: false },
        keepRecent: { ...DEFAULT_CONFIG.keepRecent, mode: 'messages', messages: 2 },
      },
      model: { limit: 10_000 },
      summarizer: {
        name: 's',
        summarize: async () => {
          await new Promise<void>((resolve) => releases.push(resolve));
          return { text: templateSummary('The turns so far, summarized for the test.') };
        },
      },
    });
    const turn = (i: number) =>
      conversation.append([
        { type: 'message', message: { id: `u${i}`, role: 'user', content: [{ type: 'text', text: 'x'.repeat(2_400) }] } },
        { type: 'message', message: { id: `a${i}`, role: 'assistant', content: [{ type: 'text', text: 'y'.repeat(2_400) }] } },
      ]);
    return { conversation, releases, turn };
  }

  const until = async (what: string, probe: () => boolean): Promise<void> => {
    for (let i = 0; i < 200 && !probe(); i++) await new Promise((r) => setTimeout(r, 5));
    assert.ok(probe(), what);
  };

  it('asks for compaction only once critical, not at the warning level', async () => {
    const { conversation, turn } = await setup();
    for (let i = 0; i < 7; i++) await turn(i);
    assert.equal(conversation.assess().level, 'warning');
    assert.equal(conversation.assess().shouldCompact, false);
    await turn(7);
    assert.equal(conversation.assess().level, 'critical');
    assert.equal(conversation.assess().shouldCompact, true);
  });

  it('is compacted in the background while the next turn goes on, keeping that turn after the summary', async () => {
    const { conversation, releases, turn } = await setup();
    for (let i = 0; i < 8; i++) await turn(i);
    assert.equal(conversation.assess().level, 'critical');
    const background = conversation.compact('threshold');
    assert.ok(conversation.isCompacting());
    await until('the summarizer was called', () => releases.length === 1);

    await turn(8);
    const joined = conversation.compact('threshold');
    releases[0]!();
    const outcome = await background;

    assert.equal(outcome.status, 'compacted', 'reason' in outcome ? outcome.reason : '');
    assert.equal((await joined).joined, true);
    assert.equal(releases.length, 1, 'a second request while compacting joins the first');
    assert.equal(conversation.isCompacting(), false);
    const view = conversation.view();
    assert.ok(isSummaryMessage(view[0]!), 'the summary comes first');
    assert.deepEqual(
      view.slice(1).map((m) => m.id),
      ['u7', 'a7', 'u8', 'a8'],
    );
    assert.equal(conversation.assess().shouldCompact, false);
  });
});
