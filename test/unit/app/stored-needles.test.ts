import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ConversationStore } from '../../../src/app/store/conversation-store';
import type { CompactionEntry, LogRecord } from '../../../src/core/history';
import { EMPTY_NEEDLES, scanNeedles } from '../../../src/core/needles';
import { user } from '../core/fixtures';
import { compactionEntry } from '../fixtures/compaction-entry';

const NOW = 1_700_000_000_000;

const entry = (extra: Partial<CompactionEntry> = {}): CompactionEntry =>
  compactionEntry({
    summary: '## Session Summary\nwork',
    firstKeptMessageId: 'u2',
    compactedMessageIds: ['u1'],
    tokensBefore: 100,
    tokensAfter: 40,
    durationMs: 1,
    createdAt: NOW,
    ...extra,
  });

describe('conversation store: the needle ledger of a compaction entry', () => {
  let dir: string;
  let store: ConversationStore;
  beforeEach(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'longrun-needles-'));
    store = new ConversationStore(dir, () => NOW);
  });
  afterEach(() => fs.rm(dir, { recursive: true, force: true }));

  const messages: LogRecord[] = [
    { type: 'message', message: user('u1', 'Never edit config.json. Later, add a CSV export of the statistics.') },
    { type: 'message', message: user('u2', 'Go on.') },
  ];

  it('reads back the ledger stored with an entry', async () => {
    const needles = scanNeedles(
      EMPTY_NEEDLES,
      messages.flatMap((r) => (r.type === 'message' ? [r.message] : [])),
    );
    assert.equal(needles.needles.length, 2);
    const log: LogRecord[] = [...messages, { type: 'compaction', entry: entry({ needles }) }];
    for (const record of log) await store.append('c1', record);
    const reopened = await new ConversationStore(dir, () => NOW).open('c1');
    assert.deepEqual(reopened.problems, []);
    assert.deepEqual(reopened.log, log);
  });

  it('reads an entry written without a ledger, as before', async () => {
    const log: LogRecord[] = [...messages, { type: 'compaction', entry: entry() }];
    for (const record of log) await store.append('c1', record);
    const reopened = await new ConversationStore(dir, () => NOW).open('c1');
    assert.deepEqual(reopened.problems, []);
    assert.deepEqual(reopened.log, log);
    const read = reopened.log.at(-1);
    assert.ok(read?.type === 'compaction' && !('needles' in read.entry));
  });

  it('skips and reports a stored entry whose ledger is malformed, keeping the records around it', async () => {
    for (const record of messages) await store.append('c1', record);
    const broken = { ...entry(), needles: { version: 1, through: 'u2', needles: [{ kind: 'rumour', text: 'x', messageId: 'u1' }], openCalls: {} } };
    await fs.appendFile(path.join(dir, 'conversations', 'c1.jsonl'), `${JSON.stringify({ v: 1, record: { type: 'compaction', entry: broken } })}\n`);
    const reopened = await new ConversationStore(dir, () => NOW).open('c1');
    assert.deepEqual(reopened.log, messages);
    assert.equal(reopened.problems.length, 1);
  });
});
