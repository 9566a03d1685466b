import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { EMPTY_LEDGER, recordFileEvents } from '../../../src/core/file-ledger';
import type { LogRecord } from '../../../src/core/history';
import {
  ConversationIndex,
  summariesKey,
  type ConversationInfo,
  type MementoLike,
  type StoredSummary,
} from '../../../src/app/store/conversation-index';
import { ConversationStore, type ConversationStoreOptions, type DamagedLine, type RecordLocation } from '../../../src/app/store/conversation-store';
import { ConversationConflictError, ConversationVersionError } from '../../../src/app/store/errors';
import { INDEX_KEY } from '../../../src/app/contributions';
import { compactionRecord } from '../fixtures/compaction-entry';

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
      message: {
        id: 't1',
        role: 'tool',
        content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 'read_file', output: 'export {}', isError: false }],
      },
    },
    { type: 'usage', usage: { anchorMessageId: 'a1', inputTokens: 120, outputTokens: 30, basis: null } },
    { type: 'file', event: { kind: 'renamed', from: 'src/b.ts', path: 'src/c.ts', actor: 'user', at: 2 } },
    compactionRecord({
      summary: '## Session Summary\nread a.ts',
      firstKeptMessageId: 't1',
      compactedMessageIds: ['u1', 'a1'],
      tokensBefore: 150,
      tokensAfter: 40,
      fileOperations: ledger,
      durationMs: 12,
      createdAt: NOW,
      focus: 'the files',
      pruningId: 'p1',
    }),
    { type: 'undo', entryId: 'e1', at: NOW + 1 },
    {
      type: 'pruning',
      entry: {
        id: 'p1',
        reason: 'threshold',
        outputs: [
          { messageId: 't1', toolCallId: 'c1', toolName: 'read_file', kind: 'stale', stub: '[Pruned by Longrun: …]', tokens: 3 },
          { messageId: 't2', toolCallId: 'c2', toolName: 'read_file', kind: 'truncated', stub: 'head\n[Pruned by Longrun: …]\ntail', tokens: 9 },
        ],
        tokensBefore: 150,
        tokensAfter: 140,
        createdAt: NOW,
      },
    },
    { type: 'undo', entryId: 'p1', at: NOW + 2 },
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
    assert.deepEqual(
      ids,
      records.map((_, i) => `m${i}`),
    );
    assert.deepEqual((await store.open('c1')).log, records);
  });

  it('writes an append asked for while many large records are checked after them, in call order', async () => {
    await store.create('c1');
    const large = Array.from({ length: 40 }, (_, i) => message(`big${i}`, `line ${i} of a large answer\n`.repeat(4_000)));
    const writing = store.appendAll('c1', large);
    // Asked for on the next turn of the thread, while the large records are being checked.
    const meanwhile = new Promise<void>((resolve, reject) =>
      setImmediate(() => {
        store.appendAll('c1', [message('m', 'meanwhile')]).then(() => resolve(), reject);
      }),
    );
    await Promise.all([writing, meanwhile]);
    const ids = (await store.open('c1')).log.map((r) => (r.type === 'message' ? r.message.id : r.type));
    assert.deepEqual(ids, [...large.map((_, i) => `big${i}`), 'm']);
  });

  it('skips a damaged middle line, reports its line number and keeps a copy aside', async () => {
    await store.append('c1', message('m1', 'first'));
    await fs.appendFile(fileOf('c1'), '{"v":1,"record":{"type":"message","message":{"id":"m2"}}}\n');
    await fs.appendFile(fileOf('c1'), 'not json at all\n');
    // The next session, as after the crash that did the damage.
    store = new ConversationStore(dir, () => NOW);
    await store.append('c1', message('m3', 'third'));

    const { log, problems } = await store.open('c1');
    assert.deepEqual(log, [message('m1', 'first'), message('m3', 'third')]);
    assert.equal(problems.length, 2);
    assert.match(problems[0]!, /^Line 3 of conversation "c1" could not be read \(not a valid log record: .*\) and was skipped/);
    assert.match(problems[1]!, /^Line 4 of conversation "c1" could not be read \(not valid JSON/);
    assert.ok(problems.every((p) => p.includes(damagedOf('c1'))));

    const kept = (await linesOf(damagedOf('c1'))).filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.deepEqual(
      kept.map((k) => [k.line, k.text, k.at]),
      [
        [3, '{"v":1,"record":{"type":"message","message":{"id":"m2"}}}', NOW],
        [4, 'not json at all', NOW],
      ],
    );
    assert.ok(kept.every((k) => typeof k.error === 'string' && k.error.length > 0));

    // Opening again skips the same lines without reporting them again, and does not copy them twice.
    const again = await new ConversationStore(dir, () => NOW).open('c1');
    assert.deepEqual(again.problems, []);
    assert.deepEqual(again.log, [message('m1', 'first'), message('m3', 'third')]);
    assert.equal((await linesOf(damagedOf('c1'))).filter(Boolean).length, 2);
  });

  it('reports a line damaged after the first report as a new problem', async () => {
    await store.append('c1', message('m1', 'first'));
    await fs.appendFile(fileOf('c1'), 'junk one\n');
    assert.equal((await store.open('c1')).problems.length, 1);
    await fs.appendFile(fileOf('c1'), 'junk two\n');
    const { problems } = await store.open('c1');
    assert.equal(problems.length, 1);
    assert.match(problems[0]!, /^Line 4 of conversation "c1" could not be read/);
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

    // The cut-off line was reported once; it is skipped silently from now on.
    const reopened = await new ConversationStore(dir, () => NOW).open('c1');
    assert.deepEqual(reopened.log, [message('m1', 'first'), message('m3', 'third')]);
    assert.deepEqual(reopened.problems, []);
  });

  it('keeps a complete last record that only lost its newline, and appends after it', async () => {
    await store.append('c1', message('m1', 'first'));
    await fs.appendFile(fileOf('c1'), JSON.stringify({ v: 1, record: message('m2', 'second') }));
    store = new ConversationStore(dir, () => NOW);
    await store.append('c1', message('m3', 'third'));
    const { log, problems } = await store.open('c1');
    assert.deepEqual(problems, []);
    assert.deepEqual(
      log.map((r) => (r.type === 'message' ? r.message.id : r.type)),
      ['m1', 'm2', 'm3'],
    );
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
    await assert.rejects(new ConversationStore(dir, () => NOW).append('c1', message('m1', 'x')), (e: unknown) =>
      ConversationVersionError.isInstance(e),
    );
    assert.equal(await fs.readFile(file, 'utf8'), content);
    await assert.rejects(fs.stat(damagedOf('c1')), /ENOENT/);
  });

  it('reads a missing conversation as empty', async () => {
    assert.deepEqual(await store.open('nothing-here'), { log: [], problems: [], locations: new Map() });
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

  it('checks every item of a pruning or a compaction of thousands of messages, and names the bad one', async () => {
    const compaction = sampleLog().find((r) => r.type === 'compaction')!;
    assert.ok(compaction.type === 'compaction');
    const ids = Array.from({ length: 3_000 }, (_, i) => `m${i}`);
    const outputs = ids.map((id) => ({
      messageId: id,
      toolCallId: `c-${id}`,
      toolName: 'read_file',
      kind: 'old' as const,
      stub: '[read]',
      tokens: 40,
    }));
    const pruning: LogRecord = { type: 'pruning', entry: { id: 'p1', reason: 'manual', outputs, tokensBefore: 9, tokensAfter: 1, createdAt: NOW } };
    const bigCompaction: LogRecord = { type: 'compaction', entry: { ...compaction.entry, compactedMessageIds: ids } };
    // Whole, both are stored and read back as they were.
    await store.appendAll('c1', [pruning, bigCompaction]);
    assert.deepEqual((await store.open('c1')).log, [pruning, bigCompaction]);

    const badOutputs = outputs.map((o, i) => (i === 2_345 ? { ...o, tokens: Number.NaN } : o));
    await assert.rejects(
      store.appendAll('c1', [message('m-after', 'x'), { ...pruning, entry: { ...pruning.entry, outputs: badOutputs } }]),
      /invalid log record: record\.entry\.outputs\.2345\.tokens/,
    );
    // The first item after the head is checked in a run of its own: it is refused as well.
    const badFirst = outputs.map((o, i) => (i === 1 ? { ...o, messageId: '' } : o));
    await assert.rejects(
      store.append('c1', { ...pruning, entry: { ...pruning.entry, outputs: badFirst } }),
      /invalid log record: record\.entry\.outputs\.1\.messageId/,
    );
    const badIds: unknown[] = [...ids];
    badIds[2_999] = 7;
    await assert.rejects(
      store.append('c1', { type: 'compaction', entry: { ...compaction.entry, compactedMessageIds: badIds as string[] } }),
      /invalid log record: record\.entry\.compactedMessageIds\.2999/,
    );
    // Nothing of a refused write lands, not even the valid records before the bad one.
    assert.deepEqual((await store.open('c1')).log, [pruning, bigCompaction]);
  });
});

describe('conversation store: large conversations, large records, newer lines', () => {
  let dir: string;
  const fileOf = (id: string, part = 1) => path.join(dir, 'conversations', part === 1 ? `${id}.jsonl` : `${id}.${part}.jsonl`);
  const damagedOf = (id: string) => path.join(dir, 'conversations', `${id}.damaged.jsonl`);
  const linesOf = async (file: string) => (await fs.readFile(file, 'utf8')).split('\n').filter(Boolean);
  const storeWith = (options: ConversationStoreOptions = {}) => new ConversationStore(dir, () => NOW, options);
  const textOf = (record: LogRecord | undefined) => {
    assert.ok(record?.type === 'message');
    const part = record.message.content[0];
    assert.ok(part?.type === 'text');
    return part.text;
  };

  beforeEach(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'longrun-store-'));
  });

  afterEach(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('opens a conversation read in chunks smaller than a line, without reading any file whole', async () => {
    const records = Array.from({ length: 30 }, (_, i) => message(`m${i}`, `Zeile ${i}: äöü 日本語 🙂 `.repeat((i % 5) + 1)));
    const writer = storeWith();
    for (const record of records) await writer.append('c1', record);
    await fs.appendFile(fileOf('c1'), 'a damaged 🙂 line\n');

    const readFile = fs.readFile;
    fs.readFile = (() => Promise.reject(new Error('a file was read whole'))) as typeof fs.readFile;
    let opened;
    try {
      opened = await storeWith({ readChunkBytes: 7 }).open('c1');
    } finally {
      fs.readFile = readFile;
    }
    assert.deepEqual(opened.log, records);
    assert.equal(opened.problems.length, 1);
    assert.match(opened.problems[0]!, /^Line 32 of conversation "c1" could not be read/);
  });

  it('skips a line too long to read, keeps its start aside, and reads the lines after it', async () => {
    const writer = storeWith();
    await writer.append('c1', message('m1', 'first'));
    await writer.append('c1', message('m2', 'x'.repeat(5_000)));
    await writer.append('c1', message('m3', 'third'));

    const { log, problems } = await storeWith({ maxLineBytes: 1_000, readChunkBytes: 256 }).open('c1');
    assert.deepEqual(log, [message('m1', 'first'), message('m3', 'third')]);
    assert.equal(problems.length, 1);
    assert.match(problems[0]!, /^Line 3 of conversation "c1" could not be read \(the line is 5,\d{3} bytes long, more than the 1,000/);
    const [kept] = (await linesOf(damagedOf('c1'))).map((l) => JSON.parse(l) as DamagedLine);
    assert.equal(kept?.line, 3);
    assert.equal(kept?.text.length, 1_000);
    assert.ok(kept?.text.startsWith('{"v":1,"record":{"type":"message","message":{"id":"m2"'));
  });

  it('skips lines from a newer version or of an unknown kind in the middle, and reports them once', async () => {
    await storeWith().append('c1', message('m1', 'first'));
    await fs.appendFile(fileOf('c1'), '{"v":2,"record":{"type":"message","message":{"id":"m2","blocks":[]}}}\n');
    await fs.appendFile(fileOf('c1'), '{"v":1,"record":{"type":"bookmark","at":5}}\n');
    await storeWith().append('c1', message('m3', 'third'));

    const first = await storeWith().open('c1');
    assert.deepEqual(first.log, [message('m1', 'first'), message('m3', 'third')]);
    assert.equal(first.problems.length, 2);
    assert.match(
      first.problems[0]!,
      /^Line 3 of conversation "c1" could not be read \(it was written by a newer version of Longrun, format version 2\)/,
    );
    assert.match(first.problems[1]!, /^Line 4 of conversation "c1" could not be read \(an unknown kind of record, "bookmark"/);
    assert.equal((await linesOf(damagedOf('c1'))).length, 2);

    const second = await storeWith().open('c1');
    assert.deepEqual(second.log, first.log);
    assert.deepEqual(second.problems, []);
    assert.equal((await linesOf(damagedOf('c1'))).length, 2);
  });

  it('keeps a pruning it cannot read aside and reports it, reading the rest: the outputs then show in full', async () => {
    await storeWith().append('c1', message('m1', 'first'));
    // A pruning with a kind of output this version does not know, as a newer Longrun might write it.
    const pruning = {
      id: 'p1',
      reason: 'threshold',
      outputs: [{ messageId: 'm1', toolCallId: 'c', toolName: 't', kind: 'summarized', stub: 's', tokens: 1 }],
      tokensBefore: 2,
      tokensAfter: 1,
      createdAt: NOW,
    };
    await fs.appendFile(fileOf('c1'), `${JSON.stringify({ v: 1, record: { type: 'pruning', entry: pruning } })}\n`);
    await storeWith().append('c1', message('m2', 'second'));
    const opened = await storeWith().open('c1');
    assert.deepEqual(opened.log, [message('m1', 'first'), message('m2', 'second')]);
    assert.equal(opened.problems.length, 1);
    assert.match(opened.problems[0]!, /^Line 3 of conversation "c1" could not be read \(not a valid log record: /);
  });

  it('stores an answer over the record limit cut in the middle, saying how long it was', async () => {
    const store = storeWith({ maxRecordBytes: 2_000 });
    const answer = `HEAD-${'x'.repeat(50_000)}-TAIL`;
    const stored = await store.append('c1', message('a1', answer));

    const [, line] = await linesOf(fileOf('c1'));
    assert.ok(Buffer.byteLength(line!) <= 2_000, `the stored line has ${Buffer.byteLength(line!)} bytes`);
    const { log, problems } = await storeWith().open('c1');
    assert.deepEqual(problems, []);
    assert.deepEqual(log, [stored]);
    const text = textOf(log[0]);
    assert.ok(text.startsWith('HEAD-x') && text.endsWith('x-TAIL'));
    assert.match(text, /\n\[… cut by Longrun: 50,010 characters in all; the first [\d,]+ and the last [\d,]+ are kept\]\n/);
    assert.ok(text.length > 1_500, 'more than the marker is kept');
  });

  it('stores a signed thinking block cut to fit without its signature, which no longer matches it, and keeps that of a whole one', async () => {
    const store = storeWith({ maxRecordBytes: 2_000 });
    const providerMetadata = { provider: 'anthropic.messages', model: 'claude-sonnet-4-5', data: { anthropic: { signature: 'SIG' } } };
    const record = (text: string): LogRecord => ({
      type: 'message',
      message: { id: 'a1', role: 'assistant', content: [{ type: 'reasoning', text, providerMetadata }] },
    });
    const cut = await store.append('c1', record('t'.repeat(50_000)));
    const whole = await store.append('c1', record('short thinking'));
    const { log } = await storeWith().open('c1');
    assert.deepEqual(log, [cut, whole]);
    assert.ok(cut.type === 'message' && whole.type === 'message');
    const thinking = cut.message.content[0];
    assert.ok(thinking?.type === 'reasoning');
    assert.match(thinking.text, /cut by Longrun/);
    assert.deepEqual(thinking, { type: 'reasoning', text: thinking.text });
    assert.deepEqual(whole.message.content[0], { type: 'reasoning', text: 'short thinking', providerMetadata });
  });

  it('keeps the shape of a tool output when cutting the texts inside it', async () => {
    const store = storeWith({ maxRecordBytes: 2_000 });
    const record: LogRecord = {
      type: 'message',
      message: {
        id: 't1',
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'call-1',
            toolName: 'run',
            output: { exitCode: 1, stdout: 'o'.repeat(30_000), stderr: 'e'.repeat(30_000) },
          },
        ],
      },
    };
    const stored = await store.append('c1', record);
    assert.deepEqual((await storeWith().open('c1')).log, [stored]);
    assert.ok(stored.type === 'message');
    const part = stored.message.content[0];
    assert.ok(part?.type === 'tool-result');
    assert.equal(part.toolCallId, 'call-1');
    const output = part.output as { exitCode: number; stdout: string; stderr: string };
    assert.equal(output.exitCode, 1);
    assert.match(output.stdout, /^o+\n\[… cut by Longrun: 30,000 characters in all/);
    assert.match(output.stderr, /^e+\n\[… cut by Longrun: 30,000 characters in all/);
  });

  it('cuts an output made of many small items as JSON text', async () => {
    const store = storeWith({ maxRecordBytes: 2_000 });
    const items = Array.from({ length: 5_000 }, (_, i) => i);
    const stored = await store.append('c1', {
      type: 'message',
      message: { id: 't1', role: 'tool', content: [{ type: 'tool-result', toolCallId: 'call-1', toolName: 'list', output: items }] },
    });
    assert.ok(Buffer.byteLength((await linesOf(fileOf('c1')))[1]!) <= 2_000);
    assert.ok(stored.type === 'message' && stored.message.content[0]?.type === 'tool-result');
    const output = stored.message.content[0].output;
    assert.equal(typeof output, 'string');
    assert.match(output as string, /^\[0,1,2,3,[\s\S]*cut by Longrun: 23,891 characters in all[\s\S]*,4998,4999\]$/);
  });

  it('cuts a compaction of thousands of messages whose summary is over the record limit, its ids whole', async () => {
    const compaction = sampleLog().find((r) => r.type === 'compaction')!;
    assert.ok(compaction.type === 'compaction');
    const ids = Array.from({ length: 3_000 }, (_, i) => `m${i}`);
    const record: LogRecord = { ...compaction, entry: { ...compaction.entry, summary: `HEAD-${'s'.repeat(80_000)}-TAIL`, compactedMessageIds: ids } };
    const stored = await storeWith({ maxRecordBytes: 60_000 }).append('c1', record);
    const [, line] = await linesOf(fileOf('c1'));
    assert.ok(Buffer.byteLength(line!) <= 60_000, `the stored line has ${Buffer.byteLength(line!)} bytes`);
    assert.ok(stored.type === 'compaction');
    assert.deepEqual(stored.entry.compactedMessageIds, ids);
    assert.match(stored.entry.summary, /^HEAD-s+\n\[… cut by Longrun: 80,010 characters in all/);
    assert.deepEqual((await storeWith().open('c1')).log, [stored]);
  });

  it('keeps a 40 MB answer to a line of at most 1 MB by default', async function () {
    this.timeout(60_000);
    const store = storeWith();
    await store.append('c1', message('a1', 'z'.repeat(40 * 1024 * 1024)));
    const size = (await fs.stat(fileOf('c1'))).size;
    assert.ok(size <= 1_000_000 + 200, `the file has ${size} bytes`);
    const { log } = await storeWith().open('c1');
    assert.match(textOf(log[0]), /cut by Longrun: 41,943,040 characters in all/);
  });

  it('starts a new part file when the current one is full, and reads all parts back in order', async () => {
    const store = storeWith({ partBytes: 4_096 });
    const records = Array.from({ length: 40 }, (_, i) => message(`m${i}`, `message ${i} `.repeat(30)));
    for (const record of records) await store.append('c1', record);

    const names = (await fs.readdir(path.join(dir, 'conversations'))).filter((n) => n.endsWith('.jsonl'));
    assert.ok(names.length >= 3, `only ${names.join(', ')}`);
    for (const name of names) {
      const size = (await fs.stat(path.join(dir, 'conversations', name))).size;
      assert.ok(size <= 4_096, `${name} has ${size} bytes`);
    }
    const opened = await storeWith().open('c1');
    assert.deepEqual(opened.problems, []);
    assert.deepEqual(opened.log, records);
    assert.deepEqual(await store.list(), ['c1']);

    // A part's header names its part; the first part ends with a line older versions refuse, so
    // they never show the first part as if it were the whole conversation.
    assert.equal((JSON.parse((await linesOf(fileOf('c1', 2)))[0]!) as { part: number }).part, 2);
    assert.equal((JSON.parse((await linesOf(fileOf('c1'))).at(-1)!) as { v: number }).v, 2);

    // The next session goes on in the last part.
    await storeWith({ partBytes: 4_096 }).append('c1', message('m40', 'last'));
    const last = (await linesOf(fileOf('c1', names.length))).at(-1)!;
    assert.deepEqual(JSON.parse(last), { v: 1, record: message('m40', 'last') });
  });

  it('locates each long message line, in any part and read in chunks smaller than a line, and reads it again there', async () => {
    const store = storeWith({ partBytes: 4_096 });
    const records = Array.from({ length: 30 }, (_, i) => message(`m${i}`, `message ${i} é `.repeat(i % 3 === 0 ? 5 : 40)));
    await store.appendAll('c1', records.slice(0, 10));
    for (const record of records.slice(10)) await store.append('c1', record);
    const opened = await storeWith({ locateOverBytes: 200, readChunkBytes: 97 }).open('c1');
    const located = opened.log.filter((r) => opened.locations.has(r));
    assert.deepEqual(
      located.map((r) => (r.type === 'message' ? r.message.id : '')),
      records.filter((_, i) => i % 3 !== 0).map((r) => (r.type === 'message' ? r.message.id : '')),
      'the long lines, and only those',
    );
    assert.ok(new Set([...opened.locations.values()].map((l) => l.part)).size >= 2, 'in more than one part');
    const again = await store.readAt(
      'c1',
      located.map((r) => ({ at: opened.locations.get(r)!, messageId: r.type === 'message' ? r.message.id : '' })),
    );
    assert.deepEqual(again, located);
  });

  it('says where each message it appends lands, across parts and after a cut-off line, as a reopening locates it', async () => {
    await storeWith().append('c1', message('m0', 'first'));
    // A write cut off in the middle of a line by a crash: the next session starts a line of its own.
    await fs.appendFile(fileOf('c1'), '{"v":1,"record":{"type":"mess');
    const store = storeWith({ partBytes: 4_096 });
    const records = Array.from({ length: 30 }, (_, i) => message(`m${i + 1}`, `message ${i} é `.repeat(i % 3 === 0 ? 5 : 40)));
    const landed = new Map<string, RecordLocation>();
    const note = (record: LogRecord, location: RecordLocation) => void landed.set(record.type === 'message' ? record.message.id : '', location);
    await store.appendAll('c1', records.slice(0, 10), note);
    for (const record of records.slice(10)) await store.appendAll('c1', [record], note);
    const opened = await storeWith({ locateOverBytes: 0 }).open('c1');
    const found = new Map([...opened.locations].map(([r, l]) => [r.type === 'message' ? r.message.id : '', l]));
    assert.equal(landed.size, 30);
    assert.deepEqual(landed, new Map([...found].filter(([id]) => id !== 'm0')));
    assert.deepEqual(
      await store.readAt(
        'c1',
        [...landed].map(([messageId, at]) => ({ at, messageId })),
      ),
      records,
    );
    assert.ok(new Set([...landed.values()].map((l) => l.part)).size >= 2, 'in more than one part');
  });
});

describe('conversation store: two windows on one conversation', () => {
  let dir: string;
  const lockOf = (id: string) => path.join(dir, 'conversations', `${id}.lock`);
  const storeWith = (options: ConversationStoreOptions = {}) => new ConversationStore(dir, () => NOW, options);
  const idsOf = (log: readonly LogRecord[]) => log.map((r) => (r.type === 'message' ? r.message.id : r.type));
  /** A lock file as another window writes it. */
  const holdLock = async (id: string, holder: { pid: number; since?: number }) => {
    await fs.mkdir(path.join(dir, 'conversations'), { recursive: true });
    const content = { pid: holder.pid, host: os.hostname(), since: holder.since ?? Date.now(), token: 'another-window' };
    await fs.writeFile(lockOf(id), JSON.stringify(content));
  };
  const exists = async (file: string) =>
    fs.stat(file).then(
      () => true,
      () => false,
    );

  beforeEach(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'longrun-store-'));
  });

  afterEach(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('refuses to add to a conversation another window continued, until it is read again', async () => {
    const mine = storeWith();
    await mine.append('c1', message('m1', 'first'));
    const other = storeWith();
    await other.open('c1');
    await other.append('c1', message('m2', 'from the other window'));

    await assert.rejects(mine.append('c1', message('m3', 'from an out-of-date copy')), (error: unknown) => {
      assert.ok(ConversationConflictError.isInstance(error));
      assert.equal(error.reason, 'changed');
      assert.match(error.message, /continued in another VS Code window .* nothing was saved\. Reload this window/);
      return true;
    });
    assert.deepEqual(idsOf((await storeWith().open('c1')).log), ['m1', 'm2']);

    const reread = await mine.open('c1');
    assert.deepEqual(idsOf(reread.log), ['m1', 'm2']);
    await mine.append('c1', message('m3', 'after reading it again'));
    assert.deepEqual(idsOf((await storeWith().open('c1')).log), ['m1', 'm2', 'm3']);
  });

  describe('after a write that fails half way (disk full)', () => {
    type Write = (this: fs.FileHandle, buffer: Buffer, offset?: number, length?: number) => Promise<{ bytesWritten: number }>;
    let prototype: { write: Write };
    let realWrite: Write;

    beforeEach(async () => {
      const probe = await fs.open(path.join(dir, 'probe'), 'w');
      prototype = Object.getPrototypeOf(probe) as { write: Write };
      await probe.close();
      realWrite = prototype.write;
    });

    afterEach(() => {
      prototype.write = realWrite;
    });

    /** The next write to a file lands its first half, then fails as a full disk does. */
    const failNextWriteHalfWay = () => {
      prototype.write = async function (this: fs.FileHandle, buffer: Buffer, offset = 0, length = buffer.length - offset) {
        prototype.write = realWrite;
        await realWrite.call(this, buffer, offset, Math.floor(length / 2));
        throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
      };
    };

    it('still refuses to add to a conversation another window continued meanwhile', async () => {
      const mine = storeWith();
      await mine.append('c1', message('m1', 'first'));
      failNextWriteHalfWay();
      await assert.rejects(mine.append('c1', message('m2', 'lost to the full disk')), /ENOSPC/);

      const other = storeWith();
      await other.open('c1');
      await other.append('c1', message('o1', 'from the other window'));

      await assert.rejects(mine.append('c1', message('m3', 'from an out-of-date copy')), (error: unknown) => {
        assert.ok(ConversationConflictError.isInstance(error));
        assert.equal(error.reason, 'changed');
        return true;
      });
      assert.deepEqual(idsOf((await storeWith().open('c1')).log), ['m1', 'o1']);
    });

    it('goes on appending in the same window when no other window wrote', async () => {
      const mine = storeWith();
      await mine.append('c1', message('m1', 'first'));
      failNextWriteHalfWay();
      await assert.rejects(mine.append('c1', message('m2', 'lost to the full disk')), /ENOSPC/);
      await mine.append('c1', message('m3', 'once there is room again'));
      assert.deepEqual(idsOf((await storeWith().open('c1')).log), ['m1', 'm3'], 'the half-written line is skipped as damaged');
    });
  });

  it('waits for another window to finish writing, then appends', async () => {
    await holdLock('c1', { pid: process.pid });
    const started = Date.now();
    setTimeout(() => void fs.rm(lockOf('c1')), 200);
    await storeWith().append('c1', message('m1', 'after the wait'));
    assert.ok(Date.now() - started >= 150, 'appended while the other window held the lock');
    assert.deepEqual(idsOf((await storeWith().open('c1')).log), ['m1']);
    assert.equal(await exists(lockOf('c1')), false, 'the lock is released');
  });

  it('gives up on a window that keeps writing, names its process, and writes nothing', async () => {
    await holdLock('c1', { pid: process.pid });
    await assert.rejects(storeWith({ lockWaitMs: 150 }).append('c1', message('m1', 'x')), (error: unknown) => {
      assert.ok(ConversationConflictError.isInstance(error));
      assert.equal(error.reason, 'busy');
      assert.equal(error.holder?.pid, process.pid);
      assert.match(error.message, new RegExp(`being saved by another VS Code window \\(process ${process.pid}, writing for \\d+ s\\)`));
      return true;
    });
    assert.equal(await storeWith().exists('c1'), false);
    assert.equal(await exists(lockOf('c1')), true, "the other window's lock is left alone");
  });

  it('still opens a conversation whose lock another window keeps too long', async () => {
    await storeWith().append('c1', message('m1', 'first'));
    await holdLock('c1', { pid: process.pid });
    const { log } = await storeWith({ lockWaitMs: 100 }).open('c1');
    assert.deepEqual(idsOf(log), ['m1']);
  });

  it('takes over a lock left by a process that has exited', async () => {
    const child = spawn(process.execPath, ['-e', '']);
    await new Promise((resolve) => child.once('exit', resolve));
    await holdLock('c1', { pid: child.pid! });
    await storeWith({ lockWaitMs: 100 }).append('c1', message('m1', 'x'));
    assert.deepEqual(idsOf((await storeWith().open('c1')).log), ['m1']);
    assert.equal(await exists(lockOf('c1')), false);
  });

  it('takes over a lock older than the stale limit even when its process runs', async () => {
    await holdLock('c1', { pid: process.pid, since: Date.now() - 3 * 60 * 60 * 1000 });
    await storeWith({ lockWaitMs: 100 }).append('c1', message('m1', 'x'));
    assert.deepEqual(idsOf((await storeWith().open('c1')).log), ['m1']);
  });

  it('three processes appending records over 512 KiB at once: every record reads back intact', async function () {
    this.timeout(120_000);
    const names = ['a', 'b', 'c'];
    const perWriter = 30;
    const size = 600 * 1024;
    const script = path.join(dir, 'writer.ts');
    await fs.writeFile(script, writerScript(path.resolve('src/app/store/conversation-store')));
    const writers = names.map((name) => startWriter(script, [dir, name, String(perWriter), String(size)]));
    await Promise.all(writers.map((w) => w.ready));
    for (const w of writers) w.go();
    const results = await Promise.all(writers.map((w) => w.done));
    for (const result of results) assert.equal(result.code, 0, result.stderr);

    const { log, problems } = await storeWith().open('c1');
    assert.deepEqual(problems, []);
    assert.equal(log.length, names.length * perWriter);
    for (const name of names) {
      const mine = log.filter((r) => r.type === 'message' && r.message.id.startsWith(`${name}-`));
      assert.deepEqual(
        mine,
        Array.from({ length: perWriter }, (_, i) => message(`${name}-${i}`, bodyOf(name, i, size))),
        `the records of writer ${name}`,
      );
    }
  });
});

/** The text of record `i` of a writer: its name and number, then a letter that differs per record. */
function bodyOf(name: string, i: number, size: number): string {
  return `${name}:${i}:`.padEnd(size, String.fromCharCode(97 + ((i * 7 + name.charCodeAt(0)) % 26)));
}

/**
 * A writer process: it appends its records as fast as it can, each through a store of its own (a
 * store that has not read the conversation appends to it as it finds it).
 */
function writerScript(storeModule: string): string {
  return `
import { ConversationStore } from ${JSON.stringify(storeModule)};
const bodyOf = ${bodyOf.toString()};
async function main() {
  const [dir, name, count, size] = process.argv.slice(2);
  process.stdout.write('ready\\n');
  await new Promise((resolve) => process.stdin.once('data', resolve));
  for (let i = 0; i < Number(count); i++) {
    const record = { type: 'message', message: { id: name + '-' + i, role: 'user', content: [{ type: 'text', text: bodyOf(name, i, Number(size)) }] } };
    await new ConversationStore(dir, () => Date.now(), { maxRecordBytes: 8000000 }).append('c1', record);
  }
  process.exit(0);
}
main().catch((error) => {
  console.error(error);
  process.exit(1);
});
`;
}

function startWriter(script: string, args: string[]) {
  const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], { cwd: path.resolve('.'), stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      if (stdout.includes('ready\n')) resolve();
    });
    child.once('exit', () => reject(new Error(`the writer stopped before it was ready: ${stderr}`)));
  });
  const done = new Promise<{ code: number | null; stderr: string }>((resolve) => child.once('exit', (code) => resolve({ code, stderr })));
  return { ready, done, go: () => child.stdin.write('go\n') };
}

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
    await index.addSummary('a', { ...summary('e2', 2), tokensAfter: 120 });
    await index.removeSummary('a', 'e1');

    const again = new ConversationIndex(state);
    assert.deepEqual(again.problems(), []);
    assert.equal(again.current(), 'b');
    assert.deepEqual(again.list(), [{ ...info('a', 30), title: 'renamed' }, info('b', 20)]);
    assert.deepEqual(again.summaries('a'), [{ ...summary('e2', 2), tokensAfter: 120 }]);
    assert.deepEqual(again.summaries('b'), []);
    assert.equal(state.get<{ version: number }>(INDEX_KEY)?.version, 1);
    assert.equal(state.get<{ version: number }>(summariesKey('a'))?.version, 1);
  });

  it('reads summaries saved with their text, and saves them without it', async () => {
    const state = new FakeMemento();
    const withText = (entryId: string, round: number) => ({ ...summary(entryId, round), summary: `summary ${entryId}` });
    state.values.set(summariesKey('a'), { version: 1, summaries: [withText('e1', 1), withText('e2', 2)] });
    const index = new ConversationIndex(state);
    assert.deepEqual(index.summaries('a'), [summary('e1', 1), summary('e2', 2)]);
    assert.deepEqual(index.problems(), []);

    await index.addSummary('a', summary('e3', 3));
    assert.deepEqual(state.get(summariesKey('a')), { version: 1, summaries: [summary('e1', 1), summary('e2', 2), summary('e3', 3)] });
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
    assert.deepEqual(
      index.list().map((c) => c.id),
      ['c', 'a'],
    );
    assert.equal(index.problems().length, 1);
    assert.match(index.problems()[0]!, /number 2/);
  });
});
