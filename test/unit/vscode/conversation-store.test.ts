import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { EMPTY_LEDGER, recordFileEvents } from '../../../src/core/file-ledger';
import type { LogRecord } from '../../../src/core/history';
import {
  ConversationIndex,
  ConversationStore,
  ConversationVersionError,
  INDEX_KEY,
  summariesKey,
  type ConversationInfo,
  type MementoLike,
  type StoredSummary,
} from '../../../src/vscode/conversation-store';

const NOW = 1_700_000_000_000;

function message(id: string, body: string): LogRecord {
  return { type: 'message', message: { id, role: 'user', content: [{ type: 'text', text: body }] } };
}

/** One record of every kind, with every kind of message part. */
function sampleLog(): LogRecord[] {
  const ledger = recordFileEvents(EMPTY_LEDGER, [
    { kind: 'read', path: 'src/a.ts', actor: 'agent', at: 1 },
    { kind: 'renamed', from: 'src/b.ts', path: 'src/c.ts', actor: 'user', at: 2 },
  ]);
  return [
    { type: 'message', message: { id: 's', role: 'system', content: [{ type: 'text', text: 'be brief' }] } },
    message('u1', 'read a.ts'),
    {
      type: 'message',
      message: {
        id: 'a1',
        role: 'assistant',
        content: [
          { type: 'reasoning', text: 'I should read it' },
          { type: 'tool-call', toolCallId: 'c1', toolName: 'read_file', input: { path: 'src/a.ts', lines: [1, 2] } },
          { type: 'file', mediaType: 'image/png', name: 'shot.png', size: 1234 },
        ],
      },
    },
    {
      type: 'message',
      message: { id: 't1', role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 'read_file', output: 'export {}', isError: false }] },
    },
    { type: 'usage', usage: { anchorMessageId: 'a1', inputTokens: 120, outputTokens: 30, basis: null } },
    { type: 'file', event: { kind: 'renamed', from: 'src/b.ts', path: 'src/c.ts', actor: 'user', at: 2 } },
    {
      type: 'compaction',
      entry: {
        id: 'e1',
        round: 1,
        reason: 'manual',
        summary: '## Session Summary\nread a.ts',
        firstKeptMessageId: 't1',
        compactedMessageIds: ['u1', 'a1'],
        tokensBefore: 150,
        tokensAfter: 40,
        fileOperations: ledger,
        model: 'test',
        durationMs: 12,
        createdAt: NOW,
        summaryRole: 'user',
        fallback: false,
        lowGain: false,
        splitTurn: false,
        summarizerCalls: 1,
        focus: 'the files',
      },
    },
    { type: 'undo', entryId: 'e1', at: NOW + 1 },
  ];
}

describe('conversation store: one append-only JSONL file per conversation', () => {
  let dir: string;
  let store: ConversationStore;
  const fileOf = (id: string) => path.join(dir, 'conversations', `${id}.jsonl`);
  const damagedOf = (id: string) => path.join(dir, 'conversations', `${id}.damaged.jsonl`);
  const linesOf = async (file: string) => (await fs.readFile(file, 'utf8')).split('\n');

  beforeEach(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'longrun-store-'));
    store = new ConversationStore(dir, () => NOW);
  });

  afterEach(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('gives back exactly the records appended, after a reopen by a fresh store', async () => {
    const log = sampleLog();
    for (const record of log) await store.append('c1', record);
    const reopened = await new ConversationStore(dir, () => NOW).open('c1');
    assert.deepEqual(reopened.problems, []);
    assert.deepEqual(reopened.log, log);
  });

  it('starts the file with a versioned header', async () => {
    await store.create('c1');
    const [header] = await linesOf(fileOf('c1'));
    assert.deepEqual(JSON.parse(header!), { v: 1, kind: 'longrun-conversation', id: 'c1', createdAt: NOW });
    assert.equal(await store.exists('c1'), true);
    assert.equal(await store.exists('c2'), false);
  });

  it('adds exactly one line per append and never rewrites what is there', async () => {
    await store.create('c1');
    let before = await fs.readFile(fileOf('c1'), 'utf8');
    for (const [i, record] of sampleLog().entries()) {
      await store.append('c1', record);
      const after = await fs.readFile(fileOf('c1'), 'utf8');
      assert.ok(after.startsWith(before), `append ${i} changed earlier content`);
      const added = after.slice(before.length);
      assert.equal(added.split('\n').length, 2, `append ${i} added ${JSON.stringify(added)}`);
      assert.ok(added.endsWith('\n'));
      assert.deepEqual(JSON.parse(added), { v: 1, record });
      before = after;
    }
  });

  it('lands 50 concurrent appends one per line, in call order', async () => {
    await store.create('c1');
    const records = Array.from({ length: 50 }, (_, i) => message(`m${i}`, `message ${i} `.repeat(200)));
    await Promise.all(records.map((r) => store.append('c1', r)));
    const lines = await linesOf(fileOf('c1'));
    assert.equal(lines.length, 52); // header, 50 records, and the empty text after the last newline
    assert.equal(lines.at(-1), '');
    const ids = lines.slice(1, -1).map((l) => (JSON.parse(l) as { record: { message: { id: string } } }).record.message.id);
    assert.deepEqual(ids, records.map((_, i) => `m${i}`));
    assert.deepEqual((await store.open('c1')).log, records);
  });

  it('skips a damaged middle line, reports its line number and keeps a copy aside', async () => {
    await store.append('c1', message('m1', 'first'));
    await fs.appendFile(fileOf('c1'), '{"v":1,"record":{"type":"message","message":{"id":"m2"}}}\n');
    await fs.appendFile(fileOf('c1'), 'not json at all\n');
    await store.append('c1', message('m3', 'third'));

    const { log, problems } = await store.open('c1');
    assert.deepEqual(log, [message('m1', 'first'), message('m3', 'third')]);
    assert.equal(problems.length, 2);
    assert.match(problems[0]!, /^Line 3 of conversation "c1" could not be read \(not a valid log record: .*\) and was skipped/);
    assert.match(problems[1]!, /^Line 4 of conversation "c1" could not be read \(not valid JSON/);
    assert.ok(problems.every((p) => p.includes(damagedOf('c1'))));

    const kept = (await linesOf(damagedOf('c1'))).filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.deepEqual(kept.map((k) => [k.line, k.text, k.at]), [
      [3, '{"v":1,"record":{"type":"message","message":{"id":"m2"}}}', NOW],
      [4, 'not json at all', NOW],
    ]);
    assert.ok(kept.every((k) => typeof k.error === 'string' && k.error.length > 0));

    // Opening again reports the lines again but does not copy them twice.
    assert.equal((await store.open('c1')).problems.length, 2);
    assert.equal((await linesOf(damagedOf('c1'))).filter(Boolean).length, 2);
  });

  it('skips a line of an unknown version and a damaged header, keeping the records around them', async () => {
    const file = fileOf('c1');
    await fs.mkdir(path.dirname(file), { recursive: true });
    await fs.writeFile(file, `{"v":1,"kind":"something-else"}\n${JSON.stringify({ v: 1, record: message('m1', 'a') })}\n{"v":0,"record":{}}\n`);
    const { log, problems } = await store.open('c1');
    assert.deepEqual(log, [message('m1', 'a')]);
    assert.equal(problems.length, 2);
    assert.match(problems[0]!, /^Line 1 .*not a valid conversation header/);
    assert.match(problems[1]!, /^Line 3 .*unknown format version 0/);
  });

  it('skips a last line cut off by a crash; the next append starts on a fresh line', async () => {
    await store.append('c1', message('m1', 'first'));
    const whole = JSON.stringify({ v: 1, record: message('m2', 'second') });
    await fs.appendFile(fileOf('c1'), whole.slice(0, 25)); // the crash: no end, no newline

    const opened = await store.open('c1');
    assert.deepEqual(opened.log, [message('m1', 'first')]);
    assert.equal(opened.problems.length, 1);
    assert.match(opened.problems[0]!, /^Line 3 of conversation "c1" is incomplete/);
    const kept = JSON.parse((await linesOf(damagedOf('c1')))[0]!) as { line: number; text: string };
    assert.deepEqual([kept.line, kept.text], [3, whole.slice(0, 25)]);

    await store.append('c1', message('m3', 'third'));
    const lines = await linesOf(fileOf('c1'));
    assert.equal(lines[2], whole.slice(0, 25));
    assert.deepEqual(JSON.parse(lines[3]!), { v: 1, record: message('m3', 'third') });

    const reopened = await new ConversationStore(dir, () => NOW).open('c1');
    assert.deepEqual(reopened.log, [message('m1', 'first'), message('m3', 'third')]);
    assert.equal(reopened.problems.length, 1);
  });

  it('keeps a complete last record that only lost its newline, and appends after it', async () => {
    await store.append('c1', message('m1', 'first'));
    await fs.appendFile(fileOf('c1'), JSON.stringify({ v: 1, record: message('m2', 'second') }));
    await store.append('c1', message('m3', 'third'));
    const { log, problems } = await store.open('c1');
    assert.deepEqual(problems, []);
    assert.deepEqual(log.map((r) => (r.type === 'message' ? r.message.id : r.type)), ['m1', 'm2', 'm3']);
  });

  it('refuses a file from a newer version and changes nothing', async () => {
    const file = fileOf('c1');
    await fs.mkdir(path.dirname(file), { recursive: true });
    const content = '{"v":2,"kind":"longrun-conversation","id":"c1","createdAt":1}\n{"v":2,"something":"new"}\nbroken\n';
    await fs.writeFile(file, content);

    await assert.rejects(store.open('c1'), (error: unknown) => {
      assert.ok(ConversationVersionError.isInstance(error));
      assert.equal(error.version, 2);
      assert.match(error.message, /newer version of Longrun/);
      return true;
    });
    await assert.rejects(new ConversationStore(dir, () => NOW).append('c1', message('m1', 'x')), (e: unknown) => ConversationVersionError.isInstance(e));
    assert.equal(await fs.readFile(file, 'utf8'), content);
    await assert.rejects(fs.stat(damagedOf('c1')), /ENOENT/);
  });

  it('reads a missing conversation as empty', async () => {
    assert.deepEqual(await store.open('nothing-here'), { log: [], problems: [] });
    assert.deepEqual(await store.list(), []);
  });

  it('lists stored conversations, without the damaged copies', async () => {
    await store.create('b');
    await store.append('a', message('m1', 'x'));
    await fs.appendFile(fileOf('a'), 'junk\n');
    await store.open('a');
    assert.deepEqual(await store.list(), ['a', 'b']);
  });

  it('refuses an invalid record or an id that is not a safe file name', async () => {
    await assert.rejects(store.append('c1', { type: 'undo', entryId: '', at: 1 }), /invalid log record/);
    await assert.rejects(store.append('../escape', message('m1', 'x')), /Invalid conversation id/);
    assert.equal(await store.exists('c1'), false);
  });
});

class FakeMemento implements MementoLike {
  readonly values = new Map<string, unknown>();
  get<T>(key: string): T | undefined {
    return this.values.get(key) as T | undefined;
  }
  update(key: string, value: unknown): Promise<void> {
    // Stored as VS Code stores it: as JSON.
    this.values.set(key, JSON.parse(JSON.stringify(value)));
    return Promise.resolve();
  }
}

describe('conversation index in workspace state', () => {
  const info = (id: string, updatedAt: number): ConversationInfo => ({ id, title: `about ${id}`, createdAt: 1, updatedAt });
  const summary = (entryId: string, round: number): StoredSummary => ({
    entryId,
    round,
    reason: 'threshold',
    summary: `summary ${entryId}`,
    tokensBefore: 900,
    tokensAfter: 100,
    createdAt: NOW,
    fallback: false,
  });

  it('round-trips conversations, the current one and summaries through a fresh index', async () => {
    const state = new FakeMemento();
    const index = new ConversationIndex(state);
    await index.upsert(info('a', 10));
    await index.upsert(info('b', 20));
    await index.upsert({ ...info('a', 30), title: 'renamed' });
    await index.setCurrent('b');
    await index.addSummary('a', summary('e1', 1));
    await index.addSummary('a', summary('e2', 2));
    await index.addSummary('a', { ...summary('e2', 2), summary: 'redone' });
    await index.removeSummary('a', 'e1');

    const again = new ConversationIndex(state);
    assert.deepEqual(again.problems(), []);
    assert.equal(again.current(), 'b');
    assert.deepEqual(again.list(), [{ ...info('a', 30), title: 'renamed' }, info('b', 20)]);
    assert.deepEqual(again.summaries('a'), [{ ...summary('e2', 2), summary: 'redone' }]);
    assert.deepEqual(again.summaries('b'), []);
    assert.equal((state.get<{ version: number }>(INDEX_KEY))?.version, 1);
    assert.equal((state.get<{ version: number }>(summariesKey('a')))?.version, 1);
  });

  it('treats corrupted state as empty and says so, without throwing', async () => {
    const state = new FakeMemento();
    state.values.set(INDEX_KEY, 'garbage');
    state.values.set(summariesKey('a'), { version: 1, summaries: [summary('e1', 1), { entryId: 'e2', round: 'two' }] });
    state.values.set(summariesKey('b'), { version: 7, summaries: [] });
    const index = new ConversationIndex(state);
    assert.equal(index.current(), undefined);
    assert.deepEqual(index.list(), []);
    assert.deepEqual(index.summaries('a'), [summary('e1', 1)]);
    assert.deepEqual(index.summaries('b'), []);
    const problems = index.problems();
    assert.equal(problems.length, 3);
    assert.match(problems[0]!, /could not read the list of Longrun conversations/);
    assert.match(problems[1]!, /left out stored summary of conversation "a" number 2/);
    assert.match(problems[2]!, /newer version of Longrun \(version 7\)/);

    // The index still works, and what it writes reads back cleanly.
    await index.upsert(info('c', 5));
    assert.deepEqual(new ConversationIndex(state).list(), [info('c', 5)]);
  });

  it('drops a single unreadable conversation entry and keeps the others', () => {
    const state = new FakeMemento();
    state.values.set(INDEX_KEY, { version: 1, current: 'a', conversations: [info('a', 1), { id: 'b' }, info('c', 2)] });
    const index = new ConversationIndex(state);
    assert.deepEqual(index.list().map((c) => c.id), ['c', 'a']);
    assert.equal(index.problems().length, 1);
    assert.match(index.problems()[0]!, /number 2/);
  });
});
