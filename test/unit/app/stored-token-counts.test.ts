import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { LogRecord } from '../../../src/core/history';
import { ConversationStore } from '../../../src/app/store/conversation-store';
import { newConversation } from '../fixtures/conversation-deps';

/** Token counts stored with message records: kept, optional, and dropped when they no longer fit the message. */
describe('conversation store: token counts kept with messages', () => {
  let dir: string;
  const message = (id: string, text: string, tokens?: Record<string, number>): LogRecord => ({
    type: 'message',
    message: { id, role: 'user', content: [{ type: 'text', text }] },
    ...(tokens ? { tokens } : {}),
  });

  beforeEach(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'longrun-store-tokens-'));
  });

  afterEach(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('reads back the counts of each tokenizer with their message, and messages stored without counts as before', async () => {
    const records = [message('u1', 'hello there', { o200k_base: 2, cl100k_base: 3 }), message('u2', 'no counts here')];
    await new ConversationStore(dir, Date.now).appendAll('c1', records);
    const { log, problems } = await new ConversationStore(dir, Date.now).open('c1');
    assert.deepEqual(problems, []);
    assert.deepEqual(log, records);
  });

  it('refuses counts that are not whole numbers of tokens', async () => {
    await assert.rejects(new ConversationStore(dir, Date.now).append('c1', message('u1', 'hi', { o200k_base: -1 })), /invalid log record/);
    await assert.rejects(new ConversationStore(dir, Date.now).append('c1', message('u1', 'hi', { o200k_base: 1.5 })), /invalid log record/);
  });

  it('stores a message cut to fit its line without the counts of the whole message', async () => {
    const store = new ConversationStore(dir, Date.now, { maxRecordBytes: 2_000 });
    const stored = await store.append('c1', message('a1', 'x'.repeat(50_000), { o200k_base: 6_250 }));
    assert.ok(stored.type === 'message' && stored.tokens === undefined);
    const { log } = await new ConversationStore(dir, Date.now).open('c1');
    assert.deepEqual(log, [stored]);
  });

  it('holds in memory a message cut to fit its line as the store keeps it, so the view is the one a reload reads', async () => {
    const store = new ConversationStore(dir, Date.now, { maxRecordBytes: 2_000 });
    await store.create('c1');
    const conversation = newConversation({ store });
    await conversation.append([message('a1', 'x'.repeat(50_000))]);
    const held = conversation.log();
    assert.ok(JSON.stringify(held).length < 2_000, `held ${JSON.stringify(held).length} characters`);
    const { log } = await new ConversationStore(dir, Date.now).open('c1');
    assert.deepEqual(held, log);
    assert.deepEqual(conversation.view(), newConversation({ log, store }).view());
  });
});
