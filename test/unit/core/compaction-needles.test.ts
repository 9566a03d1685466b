import assert from 'node:assert/strict';
import { EngineMemo } from '../../../src/core/engine-memo';
import { applyCompaction, computeCompaction, type CompactionDeps } from '../../../src/core/compaction';
import { EMPTY_LEDGER } from '../../../src/core/file-ledger';
import { activeEntries, lastEntry, modelView, type CompactionEntry, type ConversationLog, type LogRecord } from '../../../src/core/history';
import type { Message } from '../../../src/core/messages';
import type { SummaryRequest } from '../../../src/core/ports';
import {
  asLog,
  assistant,
  config,
  estimatingCounter,
  FakeClock,
  idGenerator,
  RecordingSummarizer,
  sys,
  templateSummary,
  toolResult,
  turn,
  user,
} from './fixtures';

const cfg = config((c) => ({ ...c, keepRecent: { ...c.keepRecent, mode: 'messages', messages: 4 }, minMessages: 4 }));

const CONSTRAINT = 'Never edit config.json, the deploy script writes it.';
const ERROR = "TypeError: Cannot read properties of undefined (reading 'backoffMs')";
const TASK = 'Later, add a CSV export of the retry statistics to src/reports/export.ts.';

/** The opening of a session with one needle of each kind, then ordinary turns. */
const opening: Message[] = [
  sys('s', 'You are a coding agent.'),
  user('u0', 'Fix the flaky retry job.'),
  assistant('a0', 'Running the tests.', { callId: 'c0', tool: 'run_command', input: { command: 'npm test' } }),
  toolResult('t0', 'c0', 'run_command', `$ npm test\nExit code: 1\nOutput:\n${ERROR}\n1 failed`),
  user('u1', `${CONSTRAINT} ${TASK}`),
  assistant('a1', 'Understood.'),
];

/** A summarizer that writes a proper summary and never mentions a needle. */
const dropping = () => new RecordingSummarizer(() => ({ text: templateSummary('The retry job was looked into; modules were fixed.') }));

function deps(summarizer: RecordingSummarizer): CompactionDeps {
  return { counter: estimatingCounter(), summarizer, clock: new FakeClock(), newId: idGenerator(), memo: new EngineMemo() };
}

async function compactOnce(log: ConversationLog, d: CompactionDeps): Promise<{ log: ConversationLog; entry: CompactionEntry }> {
  const outcome = await computeCompaction(
    { log, reason: 'manual', config: cfg, window: { limit: 100_000, source: 'model' }, ledger: EMPTY_LEDGER },
    d,
  );
  assert.equal(outcome.status, 'compacted', outcome.status !== 'compacted' ? outcome.reason : '');
  if (outcome.status !== 'compacted' || !outcome.compaction.entry) throw new Error('no summary');
  const applied = applyCompaction(log, outcome.compaction, d.memo);
  assert.ok(applied.ok);
  return { log: applied.log, entry: outcome.compaction.entry };
}

/** `rounds` compactions, each after two more ordinary turns. */
async function rounds(
  count: number,
  d: CompactionDeps,
  start: ConversationLog = asLog(opening),
): Promise<{ log: ConversationLog; entries: CompactionEntry[] }> {
  let log = start;
  const entries: CompactionEntry[] = [];
  for (let r = 0; r < count; r++) {
    log = [
      ...log,
      ...asLog(turn(`r${r}a`, `Module ${r} fails its tests.`, 2, 'x'.repeat(800))),
      ...asLog(turn(`r${r}b`, `Module ${r} again.`, 2, 'y'.repeat(800))),
    ];
    const done = await compactOnce(log, d);
    log = done.log;
    entries.push(done.entry);
  }
  return { log, entries };
}

const blocks = (summary: string): number => summary.split('<kept-needles>').length - 1;

describe('compaction: needles kept outside the model', () => {
  it('appends the constraint, the error and the task the summary dropped, word for word, before the file lists', async () => {
    const { entries } = await rounds(1, deps(dropping()));
    const summary = entries[0]!.summary;
    for (const needle of [CONSTRAINT, ERROR, TASK]) assert.ok(summary.includes(needle), `${needle} in\n${summary}`);
    assert.ok(summary.indexOf('</kept-needles>') < summary.indexOf('<read-files>'));
    assert.equal(blocks(summary), 1);
  });

  it('keeps the needles of messages summarized in the first round through four more rounds that all drop them, once each', async () => {
    const { log, entries } = await rounds(5, deps(dropping()));
    assert.equal(entries.length, 5);
    const view = modelView(log, new EngineMemo());
    assert.ok(!view.some((m) => m.id === 'u1' || m.id === 't0'), "the needles' messages are long summarized");
    const summary = lastEntry(log)!.summary;
    for (const needle of [CONSTRAINT, ERROR, TASK]) assert.equal(summary.split(needle).length - 1, 1, `${needle} exactly once`);
    assert.equal(blocks(summary), 1);
  });

  it('renders one block when the model copies the previous summary, block included', async () => {
    const copying = new RecordingSummarizer((r: SummaryRequest) => {
      const previous = r.messages.find((m) => m.role === 'system' && m.content.startsWith('Previous summary'));
      return { text: `${templateSummary('Carried forward.')}\n\n${previous?.content ?? ''}` };
    });
    const { entries } = await rounds(3, deps(copying));
    for (const entry of entries) assert.equal(blocks(entry.summary), 1, `round ${entry.round}`);
    // The copied block is removed before the check, so it never counts as the model keeping them.
    const last = entries.at(-1)!.summary;
    for (const needle of [CONSTRAINT, ERROR, TASK]) assert.equal(last.split(needle).length - 1, 1, `${needle} exactly once`);
  });

  it('appends nothing when the summary keeps every needle', async () => {
    const keeping = new RecordingSummarizer(() => ({ text: templateSummary(`- ${CONSTRAINT}\n- ${ERROR}\n- ${TASK}`) }));
    const { entries } = await rounds(2, deps(keeping));
    for (const entry of entries) assert.equal(blocks(entry.summary), 0);
  });

  it('checks the extractive fallback too', async () => {
    const failing = new RecordingSummarizer(() => Promise.reject(new Error('server down')));
    const { entries } = await rounds(1, deps(failing));
    const summary = entries[0]!.summary;
    assert.equal(entries[0]!.fallback, true);
    // The fallback quotes the user's messages; the error of a command it does not list is appended.
    assert.ok(summary.includes(CONSTRAINT));
    assert.match(summary, /<kept-needles>[\s\S]*TypeError: Cannot read properties of undefined \(reading 'backoffMs'\)[\s\S]*<\/kept-needles>/);
  });

  it('stores the cumulative ledger in the entry and goes on from it', async () => {
    const first = await rounds(1, deps(dropping()));
    const stored = first.entries[0]!.needles;
    assert.ok(stored);
    assert.equal(stored.through, allIds(first.log).at(-1));
    // A needle only the stored ledger knows of (its message is not in the log) is carried on: the
    // next compaction scans what came after `through`, not the whole log again.
    const planted = { ...stored, needles: [...stored.needles, { kind: 'constraint' as const, text: 'Always answer in French.', messageId: 'gone' }] };
    const log = replaceEntry(first.log, { ...first.entries[0]!, needles: planted });
    const next = await rounds(1, deps(dropping()), log);
    assert.ok(next.entries[0]!.summary.includes('Always answer in French.'));
  });

  it('finds every needle again after an entry stored without a ledger (an older Longrun)', async () => {
    const first = await rounds(1, deps(dropping()));
    const { needles: _dropped, ...old } = first.entries[0]!;
    const log = replaceEntry(first.log, old);
    const next = await rounds(1, deps(dropping()), log);
    for (const needle of [CONSTRAINT, ERROR, TASK]) assert.ok(next.entries[0]!.summary.includes(needle), needle);
    assert.equal(activeEntries(next.log).length, 2);
  });
});

function allIds(log: ConversationLog): string[] {
  return log.flatMap((r) => (r.type === 'message' ? [r.message.id] : []));
}

function replaceEntry(log: ConversationLog, entry: CompactionEntry): LogRecord[] {
  return log.map((r) => (r.type === 'compaction' && r.entry.id === entry.id ? { type: 'compaction', entry } : r));
}
