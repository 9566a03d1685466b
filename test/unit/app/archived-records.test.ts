import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Conversation } from '../../../src/app/conversation/conversation';
import type { LogRecord } from '../../../src/core/history';
import type { Message } from '../../../src/core/messages';
import type { Summarizer } from '../../../src/core/ports';
import { assistant, toolResult, user } from '../core/fixtures';
import { testRegistry } from '../fixtures/conversation-deps';

/** A file's text as a tool read it, long enough to be held on disk once archived, and unique to `n`. */
const fileText = (n: number): string => `// file ${n}: marker-${n}-word\n${`export const value${n} = ${n};\n`.repeat(150)}`;

const summarizer: Summarizer = { name: 'test-summarizer', summarize: async () => ({ text: 'The files were read and nothing was changed.' }) };

describe('an opened conversation holds its view, and reads the archive from disk when needed', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'longrun-archived-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const registry = (state: Map<string, unknown>) => testRegistry(dir, { state, limit: 200_000, summarizer }).registry;

  /** Six turns of one file read each, compacted once the sixth is in: what the view was before and after. */
  async function compacted(
    state: Map<string, unknown>,
    window = registry(state),
  ): Promise<{ conversation: Conversation; id: string; before: Message[]; after: Message[] }> {
    const conversation = await window.startNew();
    for (let n = 1; n <= 6; n++) {
      await conversation.beginTurn(`t${n}`);
      await conversation.append([
        { type: 'message', message: user(`u${n}`, `read file ${n}`) },
        { type: 'message', message: assistant(`a${n}`, '', { callId: `c${n}`, tool: 'read_file', input: { path: `f${n}.ts` } }) },
        { type: 'message', message: toolResult(`r${n}`, `c${n}`, 'read_file', fileText(n)) },
        { type: 'message', message: assistant(`d${n}`, `File ${n} read.`) },
      ]);
    }
    const before = conversation.view();
    const outcome = await conversation.compact('manual');
    assert.equal(outcome.status, 'compacted');
    return { conversation, id: conversation.id, before, after: conversation.view() };
  }

  const awayIds = (conversation: Conversation): string[] =>
    conversation
      .allRecords()
      .filter((r): r is LogRecord & { type: 'message' } => r.type === 'message' && r.message.content.length === 0)
      .map((r) => r.message.id);

  it('opens with the same view, holding the compacted file contents on disk only', async () => {
    const state = new Map<string, unknown>();
    const { id, after } = await compacted(state);
    const reopened = (await registry(state).find(id))!;
    assert.deepEqual(reopened.view(), after);
    const away = awayIds(reopened);
    const compactedIds = new Set(reopened.lastCompaction()!.compactedMessageIds);
    assert.ok(away.length > 0, 'some archived messages are held without their content');
    assert.ok(
      away.every((m) => compactedIds.has(m)),
      `only archived messages are: ${away.join(', ')}`,
    );
    assert.ok(away.includes('r1'), 'the first file read is on disk only');
  });

  it('lets go in the session of what a compaction took out of the view, holding what a reload holds', async () => {
    const state = new Map<string, unknown>();
    // Within the turn that compacted: a long turn holds only its view.
    const { conversation, id } = await compacted(state);
    const reopened = (await registry(state).find(id))!;
    assert.deepEqual(conversation.view(), reopened.view());
    assert.ok(awayIds(conversation).includes('r1'), 'the first file read is on disk only');
    assert.deepEqual(awayIds(conversation), awayIds(reopened));
    const found = await conversation.recall({ query: 'marker-2-word' });
    assert.match(found, /export const value2 = 2;/);
  });

  it('has let go of what a compaction took out by the time it says the compaction ended, so that no other starts before', async () => {
    let conversation: Conversation | undefined;
    const ended: string[][] = [];
    let compacting = false;
    const window = testRegistry(dir, {
      limit: 200_000,
      summarizer,
      changed: () => {
        if (!conversation) return;
        if (compacting && !conversation.isCompacting()) ended.push(awayIds(conversation));
        compacting = conversation.isCompacting();
      },
    }).registry;
    const made = await compacted(new Map(), window);
    conversation = made.conversation;
    await conversation.beginTurn('t7');
    await conversation.append([{ type: 'message', message: user('u7', 'one more') }]);
    const before = awayIds(conversation);
    assert.equal((await conversation.compact('manual')).status, 'compacted');
    assert.equal(ended.length, 1, 'told once that the compaction ended');
    assert.ok(ended[0]!.length > before.length, `held away before: ${before.join(', ')}; when it ended: ${ended[0]!.join(', ')}`);
    assert.deepEqual(ended[0], awayIds(conversation));
  });

  it('brings back whole, in the same session, what a compaction let go: on undo and on a rewind', async () => {
    const state = new Map<string, unknown>();
    const window = registry(state);
    const { conversation, id, before } = await compacted(state, window);
    assert.ok(awayIds(conversation).includes('r1'), 'the first file read is on disk only');
    const rewound = (await window.branch(id, 't3'))!;
    assert.deepEqual(
      rewound.view(),
      before.filter((m) => /^[uard][123]$/.test(m.id)),
    );
    const back = (await window.branch(id, 't6'))!;
    assert.equal(back, conversation, 'the branch the chat left');
    const undone = await back.undo();
    assert.equal(undone.ok, true);
    assert.deepEqual(back.view(), before);
    assert.deepEqual(awayIds(back), []);
  });

  it("finds an archived file's text with recall, read from disk", async () => {
    const state = new Map<string, unknown>();
    const { id } = await compacted(state);
    const reopened = (await registry(state).find(id))!;
    const found = await reopened.recall({ query: 'marker-1-word' });
    assert.match(found, /marker-1-word/);
    assert.match(found, /export const value1 = 1;/);
    assert.ok(awayIds(reopened).includes('r1'), 'what recall read is not kept');
  });

  it('brings the originals back whole on undo, as they were before the compaction', async () => {
    const state = new Map<string, unknown>();
    const { id, before } = await compacted(state);
    const reopened = (await registry(state).find(id))!;
    const undone = await reopened.undo();
    assert.equal(undone.ok, true);
    assert.deepEqual(reopened.view(), before);
    assert.deepEqual(awayIds(reopened), []);
  });

  it('gives a rewind to before the compaction the originals whole', async () => {
    const state = new Map<string, unknown>();
    const { id, before } = await compacted(state);
    const reopened = registry(state);
    await reopened.find(id);
    const rewound = (await reopened.branch(id, 't3'))!;
    const expected = before.filter((m) => /^[uard][123]$/.test(m.id));
    assert.deepEqual(rewound.view(), expected);
  });

  it('searches an archive larger than it reads at once in runs, and reads again only what it shows', async () => {
    const { registry: window, store } = testRegistry(dir, { limit: 5_000_000, summarizer });
    const conversation = await window.startNew();
    const big = (n: number): string =>
      `// big ${n}: ${n === 7 ? 'needle-in-the-archive' : 'hay'}\n${'const filler = 1; // padding the file\n'.repeat(24_000)}`;
    for (let n = 1; n <= 14; n++) {
      await conversation.beginTurn(`t${n}`);
      await conversation.append([
        { type: 'message', message: user(`u${n}`, `read big file ${n}`) },
        { type: 'message', message: assistant(`a${n}`, '', { callId: `c${n}`, tool: 'read_file', input: { path: `big${n}.ts` } }) },
        { type: 'message', message: toolResult(`r${n}`, `c${n}`, 'read_file', big(n)) },
        { type: 'message', message: assistant(`d${n}`, `File ${n} read.`) },
      ]);
    }
    assert.equal((await conversation.compact('manual')).status, 'compacted');
    assert.ok(awayIds(conversation).includes('r7'));
    const reads: number[] = [];
    const readAt = store.readAt.bind(store);
    store.readAt = async (id, locations) => {
      reads.push(locations.reduce((sum, l) => sum + l.at.bytes, 0));
      return readAt(id, locations);
    };
    const found = await conversation.recall({ query: 'needle-in-the-archive', maxTokens: 500 });
    assert.match(found, /big7\.ts[\s\S]*needle-in-the-archive/);
    const archive = reads.slice(0, -1).reduce((sum, bytes) => sum + bytes, 0);
    assert.ok(archive > 10 * 1024 * 1024, `the archive was read whole (${archive} bytes)`);
    assert.ok(Math.max(...reads) <= 9 * 1024 * 1024, `at most 8 MiB and a line at once: ${reads.join(', ')}`);
    assert.ok(reads.at(-1)! < 1024 * 1024, `then the one message shown: ${reads.at(-1)} bytes`);
  });

  it('restates the first request, however long, in every later summary: in the session and after a reload', async () => {
    const state = new Map<string, unknown>();
    const asked: string[] = [];
    const capturing: Summarizer = {
      name: 'capturing',
      summarize: async (request) => {
        asked.push(JSON.stringify(request));
        return { text: 'The files were read.' };
      },
    };
    const window = () => testRegistry(dir, { state, limit: 200_000, summarizer: capturing }).registry;
    const task = `Port the parser to the new grammar. ${'Keep every rule as it is. '.repeat(120)}`;
    const turns = async (conversation: Conversation, from: number) => {
      for (let n = from; n < from + 6; n++) {
        await conversation.beginTurn(`t${n}`);
        await conversation.append([
          { type: 'message', message: user(`u${n}`, n === 1 ? task : `read file ${n}`) },
          { type: 'message', message: assistant(`a${n}`, '', { callId: `c${n}`, tool: 'read_file', input: { path: `f${n}.ts` } }) },
          { type: 'message', message: toolResult(`r${n}`, `c${n}`, 'read_file', fileText(n)) },
          { type: 'message', message: assistant(`d${n}`, `File ${n} read.`) },
        ]);
      }
    };
    const conversation = await window().startNew();
    await turns(conversation, 1);
    for (const from of [7, 13]) {
      assert.equal((await conversation.compact('manual')).status, 'compacted');
      await turns(conversation, from);
    }
    assert.equal((await conversation.compact('manual')).status, 'compacted');
    const reopened = (await window().find(conversation.id))!;
    await turns(reopened, 19);
    assert.equal((await reopened.compact('manual')).status, 'compacted');
    assert.equal(asked.length, 4);
    for (const [i, request] of asked.entries())
      assert.match(request, /<original-task>\\nPort the parser to the new grammar\. Keep/, `summary ${i + 1}`);
  });

  it('says clearly when the files were replaced under a record it reads again', async () => {
    const state = new Map<string, unknown>();
    const { id } = await compacted(state);
    const reopened = (await registry(state).find(id))!;
    const file = join(dir, 'conversations', `${id}.jsonl`);
    const text = await fs.readFile(file, 'utf8');
    await fs.writeFile(file, text.replace(/marker-1-word/g, 'marker-1-wordXYZ'));
    await assert.rejects(
      reopened.recall({ query: 'marker-1-word' }),
      /was changed on disk by something other than Longrun since this window read it: the line at byte \d+ of .*id1\.jsonl is no longer the message "r1"/,
    );
  });
});
