import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_CONFIG } from '../../../src/core/config';
import { MessageTokenCounter } from '../../../src/core/message-tokens';
import { charEstimator } from '../../../src/core/tokenizer';
import { Conversation, NEW_TITLE } from '../../../src/app/conversation';
import { ConversationIndex, ConversationStore } from '../../../src/app/conversation-store';
import { FakeClock } from '../core/fixtures';

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
