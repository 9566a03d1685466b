import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { config } from '../core/fixtures';
import { turnFixture, type TurnFixture } from './turn-fixture';

describe('a chat turn follows what the user did to the chat', () => {
  let f: TurnFixture;
  beforeEach(async () => {
    f = await turnFixture();
  });
  afterEach(async () => {
    await f.close();
  });

  const joined = (texts: string[]): string => texts.join(' | ');

  it('sends the whole chat, turn after turn, and names the turn in each response', async () => {
    const chat = f.newChat();
    await chat.send('remember ALPHA-7');
    await chat.send('remember BRAVO-9');
    await chat.send('what do you remember?');
    assert.deepEqual(f.userTexts(), ['remember ALPHA-7', 'remember BRAVO-9', 'what do you remember?']);
    const [first, second, third] = [chat.metadata(1), chat.metadata(2), chat.metadata(3)];
    assert.equal(first.conversationId, third.conversationId);
    assert.ok(first.turnId && second.turnId && third.turnId);
    assert.equal(new Set([first.turnId, second.turnId, third.turnId]).size, 3);
  });

  it('leaves a rewound turn out of every later request (Restore Checkpoint), and keeps it on disk', async () => {
    const chat = f.newChat();
    await chat.send('remember ALPHA-7');
    await chat.send('remember BRAVO-9');
    chat.restore(2);
    await chat.send('what do you remember?');
    assert.deepEqual(f.userTexts(), ['remember ALPHA-7', 'what do you remember?']);
    await chat.send('and now?');
    assert.doesNotMatch(joined(f.userTexts()), /BRAVO-9/);
    const conversation = await f.registry.find(chat.metadata().conversationId!);
    assert.ok(conversation!.allRecords().some((r) => r.type === 'message' && JSON.stringify(r.message).includes('BRAVO-9')));
  });

  it('sends a retried request once, without the answer VS Code discarded', async () => {
    const chat = f.newChat();
    await chat.send('remember ALPHA-7');
    await chat.send('remember BRAVO-9');
    const discarded = chat.metadata(2).turnId;
    const retried = await chat.retry();
    assert.deepEqual(f.userTexts(), ['remember ALPHA-7', 'remember BRAVO-9']);
    assert.doesNotMatch(f.sent(), /noted BRAVO-9/);
    assert.notEqual(retried.result.metadata.turnId, discarded);
  });

  it('sends an edited earlier request in place of the original and drops what came after it', async () => {
    const chat = f.newChat();
    await chat.send('remember ALPHA-7');
    await chat.send('remember BRAVO-9');
    await chat.send('remember CHARLIE-3');
    await chat.edit(2, 'remember DELTA-4');
    assert.deepEqual(f.userTexts(), ['remember ALPHA-7', 'remember DELTA-4']);
  });

  it('keeps a fork and the chat it came from apart from then on', async () => {
    const original = f.newChat();
    await original.send('remember ALPHA-7');
    await original.send('remember BRAVO-9');
    await original.send('remember DELTA-4');
    const fork = original.fork(2, 'fork-chat');
    await fork.send('remember FORK-1');
    assert.deepEqual(f.userTexts(), ['remember ALPHA-7', 'remember FORK-1']);
    await original.send('remember ORIG-2');
    assert.deepEqual(f.userTexts(), ['remember ALPHA-7', 'remember BRAVO-9', 'remember DELTA-4', 'remember ORIG-2']);
    await fork.send('remember FORK-2');
    assert.deepEqual(f.userTexts(), ['remember ALPHA-7', 'remember FORK-1', 'remember FORK-2']);
    // One conversation on disk, two branches.
    assert.equal(fork.metadata().conversationId, original.metadata().conversationId);
  });

  it('starts a new conversation when the chat is started over', async () => {
    const chat = f.newChat();
    await chat.send('remember ALPHA-7');
    const before = chat.metadata().conversationId;
    chat.startOver();
    await chat.send('what do you remember?');
    assert.deepEqual(f.userTexts(), ['what do you remember?']);
    assert.notEqual(chat.metadata().conversationId, before);
  });

  it('continues the trunk of a conversation from an older Longrun, whose responses name no turn', async () => {
    const chat = f.newChat();
    await chat.send('remember OLD-1');
    const id = chat.metadata().conversationId!;
    // As an older Longrun wrote it: no turn records, and responses naming only the conversation.
    const { log } = await f.store.open(id);
    const trunk = log.filter((r) => r.type !== 'turn').map(({ turnId: _turn, ...rest }) => rest);
    await f.store.create('legacy');
    await f.store.appendAll('legacy', trunk as never);
    const history = [
      { prompt: 'remember OLD-1', participant: 'longrun.agent', references: [], toolReferences: [] },
      { participant: 'longrun.agent', response: [], result: { metadata: { conversationId: 'legacy' } } },
    ];
    await f.controller.handle(
      { prompt: 'what do you remember?', history, chat: 'old', attachments: [], instructions: [], toolReferences: [] },
      { markdown: () => undefined, progress: () => undefined, button: () => undefined, diffButton: () => undefined },
      new AbortController().signal,
    );
    assert.deepEqual(f.userTexts(), ['remember OLD-1', 'what do you remember?']);
  });

  it('sends every request as the one before it plus its new tail, in a tool loop and from turn to turn', async () => {
    for (const name of ['a.ts', 'b.ts', 'c.ts']) await writeFile(join(f.workspace, name), `export const ${name[0]} = 1;\n`.repeat(40));
    const chat = f.newChat();
    await chat.send('remember ALPHA-7');
    await chat.send('read a.ts b.ts c.ts');
    await chat.send('read c.ts a.ts');
    await chat.send('remember BRAVO-9');
    const calls = f.model.doStreamCalls;
    assert.ok(calls.length >= 9, `${calls.length} requests`);
    for (let i = 1; i < calls.length; i++) {
      const [before, after] = [calls[i - 1]!, calls[i]!];
      assert.deepEqual(after.tools, before.tools, `request ${i}: the same tools`);
      assert.deepEqual(after.prompt.slice(0, before.prompt.length), before.prompt, `request ${i} begins with request ${i - 1}`);
    }
  });

  it('keeps the system prompt as it was once part of the conversation is compacted', async () => {
    const small = await turnFixture({ window: 4_000 });
    try {
      const chat = small.newChat();
      for (let i = 1; i <= 4; i++) await chat.send(`remember N-${i} ${'x'.repeat(1_200)}`);
      const system = small.model.doStreamCalls.at(-1)!.prompt[0];
      await chat.send('', 'compact');
      await chat.send('remember AFTER');
      assert.match(small.sent(), /SUMMARY of/);
      assert.deepEqual(small.model.doStreamCalls.at(-1)!.prompt[0], system);
    } finally {
      await small.close();
    }
  });

  it('puts instruction files into the system prompt once, in their current text, and in no user message', async () => {
    let text = 'Always answer in French.';
    f.instructions = [{ kind: 'file', key: 'file:///ws/AGENTS.md', name: 'AGENTS.md', read: async () => text }];
    const chat = f.newChat();
    for (let i = 1; i <= 5; i++) {
      if (i === 4) text = 'Always answer in Italian.';
      await chat.send(`remember N-${i}`);
      const sent = f.sent();
      const system = f.model.doStreamCalls.at(-1)!.prompt.filter((m) => m.role === 'system');
      assert.equal(system.length, 1);
      assert.equal((sent.match(/Always answer in/g) ?? []).length, 1, `request ${i}: ${sent}`);
      assert.doesNotMatch(joined(f.userTexts()), /Always answer/);
      assert.match(sent, i >= 4 ? /Italian/ : /French/);
    }
  });

  it('names an instruction file once when VS Code attaches it twice', async () => {
    const read = async () => 'Use tabs.';
    f.instructions = [
      { kind: 'file', key: 'file:///ws/AGENTS.md', name: 'AGENTS.md', read },
      { kind: 'file', key: 'file:///ws/AGENTS.md', name: 'AGENTS.md', read },
    ];
    await f.newChat().send('remember X');
    assert.equal((f.sent().match(/Use tabs\./g) ?? []).length, 1);
  });

  it('gives /compact a turn of its own: a rewind past it takes the compaction back', async () => {
    const small = await turnFixture({ window: 4_000 });
    try {
      const chat = small.newChat();
      for (let i = 1; i <= 4; i++) await chat.send(`remember N-${i} ${'x'.repeat(1_200)}`);
      const compacted = await chat.send('', 'compact');
      assert.equal(chat.metadata().compactions, 1, compacted.surface.text());
      assert.notEqual(chat.metadata(5).turnId, chat.metadata(4).turnId);
      await chat.send('remember AFTER');
      assert.match(small.sent(), /SUMMARY of/);
      chat.restore(5);
      await chat.send('remember REWOUND');
      assert.doesNotMatch(small.sent(), /SUMMARY of/);
      assert.deepEqual(
        small.userTexts().map((t) => t.slice(0, 16)),
        ['remember N-1 xxx', 'remember N-2 xxx', 'remember N-3 xxx', 'remember N-4 xxx', 'remember REWOUND'],
      );
    } finally {
      await small.close();
    }
  });

  it('compacts again from the originals when a rewind past a compaction leaves a view that does not fit', async () => {
    let settings = config((c) => ({ ...c, autoCompact: false, pruning: { ...c.pruning, enabled: false } }));
    const small = await turnFixture({ window: 4_000, config: () => settings });
    try {
      const chat = small.newChat();
      for (let i = 1; i <= 10; i++) await chat.send(`remember N-${i} ${'y'.repeat(1_250)}`);
      const conversation = (await small.registry.current())!;
      assert.ok(conversation.assess().shouldCompact || conversation.assess().level === 'over', 'the chat fills the window');
      await chat.send('', 'compact');
      assert.equal(chat.metadata().compactions, 1);
      settings = config((c) => ({ ...c, pruning: { ...c.pruning, enabled: false } }));
      // Restore Checkpoint on the /compact request: the chat is back to ten full turns.
      chat.restore(11);
      await chat.send('remember AGAIN');
      const branch = (await small.registry.current())!;
      const compaction = branch.log().find((r) => r.type === 'compaction');
      assert.ok(compaction, 'compacted again on the rewound branch');
      assert.equal(compaction.turnId, chat.metadata().turnId, 'by the turn after the rewind');
      assert.match(small.sent(), /SUMMARY of[\s\S]*remember AGAIN/);
    } finally {
      await small.close();
    }
  });

  it("offers to revert the agent's changes the rewound turns made, and none on an ordinary turn", async () => {
    await writeFile(join(f.workspace, 'notes.txt'), 'one\n');
    const chat = f.newChat();
    await chat.send('remember ALPHA-7');
    const edited = await chat.send('edit notes.txt: one -> two');
    assert.equal(edited.surface.buttons.filter((b) => b.command === 'longrun.revertChanges').length, 0);
    assert.equal(await readFile(join(f.workspace, 'notes.txt'), 'utf8'), 'two\n');
    chat.restore(2);
    const next = await chat.send('remember BRAVO-9');
    const offer = next.surface.buttons.find((b) => b.command === 'longrun.revertChanges');
    assert.ok(offer, next.surface.text());
    assert.match(next.surface.text(), /notes\.txt/);
    assert.equal(offer.arguments?.[0], chat.metadata().conversationId);
    assert.equal((offer.arguments?.[1] as string[]).length, 1);
    // The user was asked, not acted for: the file is as the agent left it.
    assert.equal(await readFile(join(f.workspace, 'notes.txt'), 'utf8'), 'two\n');
  });

  it('keeps the offer to revert in sight below the answer once VS Code folds the steps before it', async () => {
    await writeFile(join(f.workspace, 'notes.txt'), 'one\n');
    const chat = f.newChat();
    await chat.send('remember ALPHA-7');
    await chat.send('edit notes.txt: one -> two');
    chat.restore(2);
    const next = await chat.send('read notes.txt');
    const shown = next.surface.inSight();
    assert.match(shown, /done/, 'the answer');
    assert.match(shown, /notes\.txt[\s\S]*Revert Longrun's changes…/, 'the files changed and the button, after the answer');
    assert.ok(shown.indexOf('done') < shown.indexOf("Revert Longrun's changes…"));
  });

  it('offers no revert in a fork: the chat it came from still holds those turns', async () => {
    await writeFile(join(f.workspace, 'notes.txt'), 'one\n');
    const chat = f.newChat();
    await chat.send('remember ALPHA-7');
    await chat.send('edit notes.txt: one -> two');
    const fork = chat.fork(2, 'fork-chat');
    const next = await fork.send('remember FORK');
    assert.equal(next.surface.buttons.filter((b) => b.command === 'longrun.revertChanges').length, 0);
  });
});
