import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_CONFIG } from '../../../src/core/config';
import { MessageTokenCounter } from '../../../src/core/message-tokens';
import { charEstimator } from '../../../src/core/tokenizer';
import { Conversation, NEW_TITLE } from '../../../src/app/conversation';
import { ConversationIndex, ConversationStore } from '../../../src/app/conversation-store';
import { isSummaryMessage } from '../../../src/core/history';
import { FakeClock, templateSummary } from '../core/fixtures';

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
    const state = new Map<string, unknown>();
    const index = new ConversationIndex({ get: (k) => state.get(k) as never, update: async (k, v) => void state.set(k, v) });
    const store = new ConversationStore(dir, () => clock.now());
    await store.create('c1');
    await index.upsert({ id: 'c1', title: NEW_TITLE, createdAt: 1, updatedAt: 1 });
    const counter = new MessageTokenCounter(charEstimator);
    const conversation = new Conversation('c1', [], {
      store,
      index,
      clock,
      newId: () => 'x',
      config: () => DEFAULT_CONFIG,
      model: () => ({ name: 'm', window: { limit: 1_000, source: 'model' }, counter, fixedOverhead: 0, outputReserve: 0 }),
      summarizer: () => undefined,
    });
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

  /** Twenty turns of about 150 tokens, compacted by hand with `fixedOverhead` tokens of system prompt and tools. */
  async function keptAfterCompaction(fixedOverhead: number): Promise<number> {
    const clock = new FakeClock();
    const state = new Map<string, unknown>();
    const index = new ConversationIndex({ get: (k) => state.get(k) as never, update: async (k, v) => void state.set(k, v) });
    const store = new ConversationStore(join(dir, String(fixedOverhead)), () => clock.now());
    await store.create('c1');
    await index.upsert({ id: 'c1', title: NEW_TITLE, createdAt: 1, updatedAt: 1 });
    const counter = new MessageTokenCounter(charEstimator);
    let ids = 0;
    const conversation = new Conversation('c1', [], {
      store,
      index,
      clock,
      newId: () => `e${ids++}`,
      config: () => ({ ...DEFAULT_CONFIG, pruning: { ...DEFAULT_CONFIG.pruning, enabled: false } }),
      model: () => ({ name: 'm', window: { limit: 4_500, source: 'model' }, counter, fixedOverhead, outputReserve: 1_500 }),
      summarizer: () => ({ name: 's', summarize: async () => ({ text: templateSummary('Twenty turns of notes.') }) }),
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
