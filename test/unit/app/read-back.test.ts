import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConversationRecords } from '../../../src/app/conversation/conversation';
import { ViewNotWholeError } from '../../../src/app/conversation/conversation-records';
import { errorMessage } from '../../../src/app/turn/error-text';
import { readSettings } from '../../../src/app/settings';
import { ConversationStore } from '../../../src/app/store/conversation-store';
import { ConversationChangedError } from '../../../src/app/store/errors';
import { heldAway } from '../../../src/app/store/held-away';
import type { LogRecord } from '../../../src/core/history';
import { assistant, user } from '../core/fixtures';
import { newConversation, testRegistry } from '../fixtures/conversation-deps';
import { anotherConversation, fileText, fixedSummarizer, hollowIn, partsOf, readingTurns, withByteChanged } from './read-back-fixture';
import { turnFixture, type FakeChat, type TurnFixture } from './turn-fixture';

/** What the user is told when the files changed under what Longrun read back. */
const CHANGED = /was changed on disk by something other than Longrun since this window read it/;

describe('read back from files changed under an opened conversation', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'longrun-read-back-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** A window on `dir` (the same `state`: the same window reloaded). */
  const window = (state: Map<string, unknown>) => testRegistry(dir, { state, limit: 200_000, summarizer: fixedSummarizer });

  /**
   * Six turns reading a file each, compacted, then opened in a new window: the compacted file reads are
   * on disk only. `meanwhile` changes the conversation's file before the new window opens it.
   */
  async function opened(meanwhile?: (file: string) => Promise<void>) {
    const state = new Map<string, unknown>();
    const first = window(state);
    const conversation = await first.registry.startNew();
    await readingTurns(conversation, 1, 6);
    const before = conversation.view();
    assert.equal((await conversation.compact('manual')).status, 'compacted');
    await meanwhile?.(first.store.partFile(conversation.id, 1));
    const again = window(state);
    const reopened = (await again.registry.find(conversation.id))!;
    const file = again.store.partFile(conversation.id, 1);
    return { ...again, conversation: reopened, id: conversation.id, file, before, after: reopened.view() };
  }

  describe('Undo Last Compaction', () => {
    for (const what of ['letter', 'syntax'] as const) {
      it(`writes nothing and says what happened when one byte changed inside a held line (${what === 'letter' ? 'still a record' : 'no longer JSON'})`, async () => {
        const { conversation, store, id, file } = await opened();
        await fs.writeFile(file, withByteChanged(await fs.readFile(file, 'utf8'), '"id":"r1"', what));
        const changed = await partsOf(store, id);

        const undone = await conversation.undo();

        assert.equal(undone.ok, false);
        assert.match(undone.ok ? '' : undone.reason, CHANGED);
        assert.match(undone.ok ? '' : undone.reason, /no longer the message "r1" Longrun read there\. Nothing was undone or written/);
        assert.deepEqual(await partsOf(store, id), changed, 'nothing was appended');
        assert.deepEqual(hollowIn(conversation.view()), [], 'the view holds no message without its content');
      });
    }

    it('reads the conversation again and undoes it as it is then, the changed line set aside and reported', async () => {
      const { conversation, registry, warnings, id, file, before } = await opened();
      await fs.writeFile(file, withByteChanged(await fs.readFile(file, 'utf8'), '"id":"r1"', 'syntax'));
      assert.equal((await conversation.undo()).ok, false);

      const reread = (await registry.current())!;
      assert.notEqual(reread, conversation, 'the out-of-date copy was dropped');
      assert.ok(
        warnings.some((w) => /Line \d+ of conversation .* could not be read .* a copy is kept in/.test(w)),
        warnings.join('\n'),
      );
      const undone = await reread.undo();
      assert.equal(undone.ok, true);
      assert.deepEqual(
        reread.view().map((m) => m.id),
        before.map((m) => (m.id === 'r1' ? 'interrupted:a1' : m.id)),
        'every message back but the damaged one, whose call is answered as interrupted',
      );
      assert.deepEqual(
        reread.view().filter((m) => m.id !== 'interrupted:a1'),
        before.filter((m) => m.id !== 'r1'),
      );
      assert.equal(reread.id, id);
    });

    it('a held line damaged before the window opened: says so when read back, then reads the conversation again checking every line', async () => {
      let damagedText = '';
      const {
        conversation: reopened,
        registry,
        warnings,
        file,
        before,
      } = await opened(async (file) => {
        // The content of r1 is no longer a valid part; its line's two ends are as Longrun writes them.
        const text = await fs.readFile(file, 'utf8');
        const at = text.indexOf('"id":"r1"');
        damagedText = `${text.slice(0, at)}${text.slice(at).replace('"type":"tool-result"', '"type":"tool-resuls"')}`;
        await fs.writeFile(file, damagedText);
      });
      assert.deepEqual(warnings, [], 'a compacted message is checked when it is read back, not on opening');
      const undone = await reopened.undo();

      assert.equal(undone.ok, false);
      assert.match(
        undone.ok ? '' : undone.reason,
        /holds a line damaged by something other than Longrun: the line at byte \d+ of .*, message "r1", is not a valid log record/,
      );
      assert.equal(await fs.readFile(file, 'utf8'), damagedText, 'nothing was written');
      const reread = (await registry.current())!;
      assert.notEqual(reread, reopened, 'the conversation was read again');
      assert.ok(
        warnings.some((w) => /Line \d+ of conversation .* could not be read .* a copy is kept in/.test(w)),
        warnings.join('\n'),
      );
      assert.equal((await reread.undo()).ok, true);
      assert.deepEqual(
        reread.view().map((m) => m.id),
        before.map((m) => (m.id === 'r1' ? 'interrupted:a1' : m.id)),
        'every message back but the damaged one',
      );
    });

    it('refuses a file replaced by another conversation whose lines have the same lengths, and adds nothing to it', async () => {
      const { conversation, store, id, file, after } = await opened();
      const foreign = anotherConversation(await fs.readFile(file, 'utf8'));
      assert.equal(foreign.length, (await fs.readFile(file, 'utf8')).length);
      await fs.writeFile(`${file}.new`, foreign);
      await fs.rename(`${file}.new`, file);

      const undone = await conversation.undo();

      assert.equal(undone.ok, false);
      assert.match(undone.ok ? '' : undone.reason, CHANGED);
      assert.equal(await fs.readFile(file, 'utf8'), foreign, 'the other conversation is left as it was');
      assert.deepEqual(conversation.view(), after, 'the view is as it was');
      assert.deepEqual(await partsOf(store, id), [Buffer.from(foreign)]);
    });

    it('says the file was deleted, in words, and makes no file again', async () => {
      const { conversation, store, id, file } = await opened();
      await fs.rm(file);

      const undone = await conversation.undo();

      assert.equal(undone.ok, false);
      assert.match(undone.ok ? '' : undone.reason, new RegExp(`${CHANGED.source}: .*id1\\.jsonl was deleted or moved\\. Nothing was undone`));
      assert.doesNotMatch(undone.ok ? '' : undone.reason, /ENOENT/);
      assert.deepEqual(await partsOf(store, id), [], 'no file was made');
    });
  });

  describe('a rewind past the compaction', () => {
    it('refuses a file of another conversation, adds nothing to it, and reads it again', async () => {
      const { registry, store, id, file } = await opened();
      const foreign = anotherConversation(await fs.readFile(file, 'utf8'));
      await fs.writeFile(file, foreign);

      await assert.rejects(registry.branch(id, 't3'), (error: unknown) => {
        assert.ok(ConversationChangedError.isInstance(error));
        assert.match(error.message, CHANGED);
        return true;
      });
      assert.deepEqual(await partsOf(store, id), [Buffer.from(foreign)]);

      // Read again, it is the other conversation's messages that the branch shows, whole.
      const rewound = (await registry.branch(id, 't3'))!;
      assert.deepEqual(
        rewound.view().map((m) => m.id),
        ['w1', 'b1', 's1', 'e1', 'w2', 'b2', 's2', 'e2', 'w3', 'b3', 's3', 'e3'],
      );
      assert.deepEqual(hollowIn(rewound.view()), []);
    });
  });

  describe('recall', () => {
    it('refuses a line of another conversation at the offset it noted rather than answer from it', async () => {
      const { conversation, id, file, store } = await opened();
      await fs.writeFile(file, anotherConversation(await fs.readFile(file, 'utf8')));
      const changed = await partsOf(store, id);
      await assert.rejects(conversation.recall({ query: 'marker-1-word' }), CHANGED);
      await assert.rejects(conversation.recall({ query: 'MARKER-1-WORD' }), CHANGED, 'nothing more is read through the out-of-date copy');
      await assert.rejects(
        conversation.append([{ type: 'message', message: user('u7', 'next') }]),
        CHANGED,
        'nothing more is written through it either',
      );
      assert.deepEqual(await partsOf(store, id), changed);
    });

    it('says the file was deleted rather than fail with ENOENT', async () => {
      const { conversation, file } = await opened();
      await fs.rm(file);
      await assert.rejects(conversation.recall({ query: 'marker-1-word' }), (error: unknown) => {
        assert.ok(error instanceof Error);
        assert.match(error.message, /id1\.jsonl was deleted or moved\.$/);
        assert.doesNotMatch(error.message, /ENOENT/);
        return true;
      });
    });
  });

  describe('a message without its content never reaches the model', () => {
    it('refuses to give a view that would show one, naming how many', async () => {
      const store = new ConversationStore(dir, () => 0);
      const record = { type: 'message', message: assistant('a1', 'the answer') } as const;
      const log: LogRecord[] = [
        { type: 'message', message: user('u1', 'the question') },
        heldAway(record, { part: 1, offset: 0, bytes: 10, check: 1 }),
      ];
      const conversation = newConversation({ store, where: { records: new ConversationRecords(log) } });
      assert.throws(
        () => conversation.view(),
        (error: unknown) => {
          assert.ok(ViewNotWholeError.isInstance(error));
          assert.match(error.message, /did not send the request: a message of conversation "c1" the model must see is held on disk only/);
          return true;
        },
      );
    });

    it('tells the chat what happened, in words, for either refusal', () => {
      const settings = readSettings(() => undefined).settings;
      const changed = new ConversationChangedError('c1', '/x/c1.jsonl was deleted or moved');
      assert.match(
        errorMessage(changed, settings, (t) => t),
        /^Conversation "c1" was changed on disk .*deleted or moved\. Longrun saved nothing more of this request/,
      );
      assert.doesNotMatch(
        errorMessage(changed, settings, (t) => t),
        /The model request failed/,
      );
      const hollow = new ViewNotWholeError('c1', 5);
      assert.equal(
        errorMessage(hollow, settings, (t) => t),
        hollow.message,
      );
    });
  });
});

describe('read back in the chat, from files changed under it', () => {
  let f: TurnFixture;
  let chat: FakeChat;
  beforeEach(async () => {
    f = await turnFixture({ window: 200_000 });
    for (let n = 1; n <= 6; n++) await fs.writeFile(join(f.workspace, `f${n}.ts`), fileText(n));
    chat = f.newChat();
    for (let n = 1; n <= 6; n++) await chat.send(`read f${n}.ts`);
    await chat.send('', 'compact');
  });
  afterEach(async () => {
    await f.close();
  });

  /** Every message of every request sent to the model since request `from`, as the provider got it, with no content. */
  const emptySince = (from: number): string[] =>
    f.model.doStreamCalls
      .slice(from)
      .flatMap((call) => call.prompt)
      .filter((m) => m.role !== 'system' && m.content.length === 0)
      .map((m) => m.role);

  const fileOf = (): string => f.store.partFile(chat.metadata().conversationId!, 1);

  it('after a refused undo, sends the next request with every message whole', async () => {
    const file = fileOf();
    await fs.writeFile(file, withByteChanged(await fs.readFile(file, 'utf8'), 'marker-2-word', 'syntax'));
    const changed = await fs.readFile(file);
    const conversation = (await f.registry.current())!;
    // The command shows what comes back, and an error thrown alike.
    const undone = await conversation.undo().catch((error: unknown) => ({ ok: false as const, reason: String(error) }));
    assert.equal(undone.ok, false);
    assert.deepEqual(await fs.readFile(file), changed, 'nothing was appended');

    const sent = f.model.doStreamCalls.length;
    const next = await chat.send('remember OMEGA-3');
    assert.equal(next.result.errorDetails, undefined);
    assert.equal(f.model.doStreamCalls.length, sent + 1);
    assert.deepEqual(emptySince(sent), []);
    assert.match(f.sent(), /OMEGA-3/);
  });

  it('rewinds past the compaction once the files are read again, saying so in the chat, every message whole', async () => {
    const file = fileOf();
    await fs.writeFile(file, withByteChanged(await fs.readFile(file, 'utf8'), 'marker-1-word', 'syntax'));
    chat.restore(3);
    const sent = f.model.doStreamCalls.length;

    const rewound = await chat.send('remember SIGMA-5');

    assert.equal(rewound.result.errorDetails, undefined);
    assert.match(rewound.surface.text(), new RegExp(`${CHANGED.source}: .*Longrun read it again from disk and goes on from it as it is now`));
    assert.deepEqual(emptySince(sent), []);
    assert.deepEqual(f.userTexts(), ['read f1.ts', 'read f2.ts', 'remember SIGMA-5']);
    assert.doesNotMatch(f.sent(), /marker-1-word/, 'the damaged read is set aside');
    assert.match(f.sent(), /marker-2-word/);
  });

  it('a deleted conversation: the request says so in words, and the next one starts anew', async () => {
    const id = chat.metadata().conversationId!;
    await fs.rm(fileOf());

    const refused = await chat.send('remember TAU-1');

    assert.match(refused.result.errorDetails?.message ?? '', new RegExp(`${CHANGED.source}: .*was deleted or moved\\.`));
    assert.doesNotMatch(refused.result.errorDetails?.message ?? '', /ENOENT/);
    assert.equal(await f.store.exists(id), false, 'no file was made again');
    const next = await chat.send('remember TAU-2');
    assert.equal(next.result.errorDetails, undefined);
    assert.notEqual(next.result.metadata.conversationId, id);
  });
});
