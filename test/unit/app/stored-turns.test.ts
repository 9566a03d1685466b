import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Conversation } from '../../../src/app/conversation/conversation';
import { ConversationStore } from '../../../src/app/store/conversation-store';
import { textHash } from '../../../src/app/turn/revert-changes';
import { EngineMemo } from '../../../src/core/engine-memo';
import { fileChange } from '../../../src/core/file-changes';
import { modelView, type LogRecord } from '../../../src/core/history';
import { messageText } from '../../../src/core/messages';
import { MessageTokenCounter } from '../../../src/core/message-tokens';
import { charEstimator } from '../../../src/core/tokenizer';
import { assistant, config, FakeClock, templateSummary, turn, user } from '../core/fixtures';
import { newConversation } from '../fixtures/conversation-deps';

describe('turns and file changes on disk', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'longrun-stored-turns-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  function conversation(store: ConversationStore, log: LogRecord[], leaf?: string | null): Conversation {
    const counter = new MessageTokenCounter(charEstimator);
    let n = 0;
    return newConversation({
      log,
      store,
      clock: new FakeClock(),
      newId: () => `e${++n}`,
      model: { counter },
      where: leaf === undefined ? {} : { leaf },
    });
  }

  it('reads back every branch after a reload, and opens on the turn started last', async () => {
    const store = new ConversationStore(dir, () => 1);
    await store.create('c1');
    const first = conversation(store, []);
    await first.beginTurn('t1', 'chat-a');
    await first.append([{ type: 'message', message: user('u1', 'remember ALPHA-7') }]);
    await first.append([{ type: 'change', change: fileChange('ch1', 'a.txt', 'modified', 'x', 'y', textHash) }]);
    const rewound = conversation(store, [...first.allRecords()], null);
    await rewound.beginTurn('t2', 'chat-a');
    await rewound.append([
      { type: 'message', message: user('u2', 'remember BRAVO-9') },
      { type: 'message', message: assistant('a2', 'noted') },
    ]);

    const { log } = await new ConversationStore(dir, () => 2).open('c1');
    assert.deepEqual(log, first.allRecords().concat(rewound.allRecords().slice(first.allRecords().length)));
    const reopened = conversation(store, log);
    assert.equal(reopened.leaf(), 't2');
    assert.deepEqual(modelView(reopened.log(), new EngineMemo()).map(messageText), ['remember BRAVO-9', 'noted']);
    const other = conversation(store, log, 't1');
    assert.deepEqual(modelView(other.log(), new EngineMemo()).map(messageText), ['remember ALPHA-7']);
    assert.ok(log.some((r) => r.type === 'change' && r.turnId === 't1' && r.change.inserted === 'y'));
  });

  it('keeps on the path a compaction applied while the next turn starts, as a reload reads the files', async () => {
    /** A store that holds back telling a turn's record was written, while `gate` is set: the turn is starting. */
    class StartingTurnStore extends ConversationStore {
      gate: Promise<void> | undefined;
      override async appendAll(...args: Parameters<ConversationStore['appendAll']>): Promise<LogRecord[]> {
        const stored = await super.appendAll(...args);
        if (this.gate && args[1].some((r) => r.type === 'turn')) await this.gate;
        return stored;
      }
    }
    const store = new StartingTurnStore(dir, () => 1);
    await store.create('c1');
    const counter = new MessageTokenCounter(charEstimator);
    let n = 0;
    const summarizer = { name: 'fake', summarize: async () => ({ text: templateSummary('The work so far.') }) };
    const make = (log: LogRecord[]) =>
      newConversation({
        log,
        store,
        clock: new FakeClock(),
        newId: () => `e${++n}`,
        model: { counter },
        summarizer,
        config: config((c) => ({ ...c, keepRecent: { ...c.keepRecent, mode: 'messages', messages: 2 }, minMessages: 2 })),
      });
    const first = make([]);
    for (const i of [1, 2, 3]) {
      await first.beginTurn(`t${i}`);
      await first.append(turn(`m${i}`, `request ${i}`, 1, 'x'.repeat(2_000)).map((message) => ({ type: 'message' as const, message })));
    }
    let release = (): void => undefined;
    store.gate = new Promise<void>((resolve) => (release = resolve));
    const starting = first.beginTurn('t4');
    const compacted = await first.compact('manual');
    assert.equal(compacted.status, 'compacted');
    release();
    await starting;
    await first.append(turn('m4', 'request 4', 1, 'y'.repeat(2_000)).map((message) => ({ type: 'message' as const, message })));
    const entry = first.lastCompaction()!;

    const reopened = make((await new ConversationStore(dir, () => 2).open('c1')).log);
    assert.equal(reopened.leaf(), 't4');
    assert.equal(reopened.lastCompaction()?.id, entry.id, 'the compaction is on the path after a reload');
    assert.deepEqual(reopened.view(), first.view());
  });

  it('reads a conversation from before turns as one branch, and continues it after its records', async () => {
    const store = new ConversationStore(dir, () => 1);
    await store.create('c1');
    await store.appendAll('c1', [
      { type: 'message', message: user('u1', 'remember OLD-1') },
      { type: 'message', message: assistant('a1', 'noted OLD-1') },
    ]);
    const { log } = await store.open('c1');
    const old = conversation(store, log);
    assert.equal(old.leaf(), null);
    await old.beginTurn('t1');
    await old.append([{ type: 'message', message: user('u2', 'and now?') }]);
    const reopened = conversation(store, (await store.open('c1')).log);
    assert.deepEqual(modelView(reopened.log(), new EngineMemo()).map(messageText), ['remember OLD-1', 'noted OLD-1', 'and now?']);
  });
});
