import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Conversation } from '../../../src/app/conversation/conversation';
import { turnFixture, type TurnFixture } from './turn-fixture';

const MINUTE = 60_000;

/** The prunings made because the cache had expired, in the conversation of `chat`'s last response. */
async function coldPrunings(f: TurnFixture, conversationId: string): Promise<number> {
  const conversation = (await f.registry.find(conversationId)) as Conversation;
  return conversation.allRecords().filter((r) => r.type === 'pruning' && r.entry.reason === 'cache-expired').length;
}

describe('a cold cache is a free compaction, at the start of a turn', () => {
  let f: TurnFixture;
  afterEach(async () => {
    await f.close();
  });

  async function withReads(provider?: 'anthropic'): Promise<{ chat: ReturnType<TurnFixture['newChat']>; id: string }> {
    f = await turnFixture(provider ? { provider } : {});
    await writeFile(join(f.workspace, 'a.ts'), 'const a = 1;\n'.repeat(400));
    const chat = f.newChat();
    // The same file read twice: the first read is superseded, but pruning it would change the cached prefix.
    await chat.send('read a.ts a.ts');
    return { chat, id: chat.metadata().conversationId! };
  }

  it('prunes what was held back once the provider’s cache has expired, before the next request, and says so', async () => {
    const { chat, id } = await withReads('anthropic');
    f.clock.advance(4 * MINUTE);
    await chat.send('remember ONE');
    assert.equal(await coldPrunings(f, id), 0, 'the cache is still warm: the prefix is kept');
    assert.doesNotMatch(f.sent(), /Pruned by Longrun: this read_file output/);

    f.clock.advance(6 * MINUTE);
    const cold = await chat.send('remember TWO');
    assert.equal(await coldPrunings(f, id), 1);
    // The last request was sent at 4 minutes, its cache gone at 9: now is 10.
    assert.match(cold.surface.text(), /prompt cache expired 1 min ago/);
    assert.match(f.sent(), /Pruned by Longrun: this read_file output/, 'the request the model gets carries the stub');

    await chat.send('remember THREE');
    f.clock.advance(30 * MINUTE);
    await chat.send('remember FOUR');
    assert.equal(await coldPrunings(f, id), 1, 'once: nothing is left to prune, and nothing is written for it');
  });

  it('never prunes in the middle of a turn, however long its steps take', async () => {
    f = await turnFixture({ provider: 'anthropic' });
    await writeFile(join(f.workspace, 'a.ts'), 'const a = 1;\n'.repeat(400));
    const model = f.model;
    const stream = model.doStream;
    model.doStream = async (options) => {
      f.clock.advance(20 * MINUTE);
      return stream(options);
    };
    const chat = f.newChat();
    await chat.send('read a.ts a.ts a.ts');
    const id = chat.metadata().conversationId!;
    assert.equal(await coldPrunings(f, id), 0);
    assert.equal(f.model.doStreamCalls.length, 4);
    await chat.send('remember ONE');
    assert.equal(await coldPrunings(f, id), 1, 'the next turn starts with it');
  });

  it('does nothing for a model whose cache lifetime is unknown (VS Code’s), or when turned off', async () => {
    const { chat, id } = await withReads();
    f.clock.advance(60 * MINUTE);
    await chat.send('remember ONE');
    assert.equal(await coldPrunings(f, id), 0);
    await f.close();

    f = await turnFixture({ provider: 'anthropic', settings: { cache: { ttl: '5m', openaiRetention24h: false, coldCompaction: false } } });
    await writeFile(join(f.workspace, 'a.ts'), 'const a = 1;\n'.repeat(400));
    const off = f.newChat();
    await off.send('read a.ts a.ts');
    f.clock.advance(60 * MINUTE);
    await off.send('remember ONE');
    assert.equal(await coldPrunings(f, off.metadata().conversationId!), 0);
  });

  it('tells in /context that the cache has expired and what the next request re-sends', async () => {
    const { chat } = await withReads('anthropic');
    f.clock.advance(7 * MINUTE);
    const context = await chat.send('', 'context');
    assert.match(context.surface.text(), /Cache expired 2 min ago: the next request re-sends ~[\d,]+ tokens at full price\./);
  });
});
