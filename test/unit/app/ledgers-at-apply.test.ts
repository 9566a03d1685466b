import assert from 'node:assert/strict';
import { ledgersAtApply } from '../../../src/app/compaction/ledgers-at-apply';
import { computeCompaction, type ComputedCompaction } from '../../../src/core/compaction';
import { EngineMemo } from '../../../src/core/engine-memo';
import { EMPTY_LEDGER } from '../../../src/core/file-ledger';
import type { LogRecord } from '../../../src/core/history';
import type { Message } from '../../../src/core/messages';
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
} from '../core/fixtures';

const cfg = config((c) => ({ ...c, keepRecent: { ...c.keepRecent, mode: 'messages', messages: 4 }, minMessages: 4 }));
const CREATED: Message[] = [
  assistant('late-a', 'Creating it.', { callId: 'late-c', tool: 'create_file', input: { path: 'src/late.ts', content: 'export {};' } }),
  toolResult('late-t', 'late-c', 'create_file', 'Created src/late.ts'),
];

/** A conversation, and a summary of it computed from a snapshot, as a compaction prepares it. */
async function prepared(memo: EngineMemo): Promise<{ log: LogRecord[]; computed: ComputedCompaction }> {
  const log = asLog([
    sys('s', 'You are a coding agent.'),
    user('u0', 'Fix the flaky retry job.'),
    assistant('a0', 'Looking.'),
    ...turn('t1', 'Module 1 fails its tests.', 2, 'x'.repeat(800)),
    ...turn('t2', 'Module 2 fails its tests.', 2, 'y'.repeat(800)),
  ]) as LogRecord[];
  const summarizer = new RecordingSummarizer(() => ({ text: templateSummary('The retry job was looked into.') }));
  const outcome = await computeCompaction(
    { log, reason: 'manual', config: cfg, window: { limit: 100_000, source: 'model' }, ledger: EMPTY_LEDGER },
    { counter: estimatingCounter(), summarizer, clock: new FakeClock(), newId: idGenerator(), memo },
  );
  if (outcome.status !== 'compacted' || !outcome.compaction.entry) throw new Error('no summary');
  return { log, computed: outcome.compaction };
}

/**
 * `ledgersAtApply` on a prepared compaction of a conversation, counting with an estimating counter;
 * `onCount` is told of each message counted, with the log, before it is counted.
 */
async function applyCounting(
  onCount: (message: Message, log: LogRecord[]) => void = () => undefined,
): Promise<{ result: Awaited<ReturnType<typeof ledgersAtApply>>; counted: Message[] }> {
  const memo = new EngineMemo();
  const { log, computed } = await prepared(memo);
  const counted: Message[] = [];
  const counter = estimatingCounter();
  const result = await ledgersAtApply(
    () => log,
    computed,
    (text) => counter.countText(text),
    memo,
    undefined,
    (message) => {
      onCount(message, log);
      counted.push(message);
      return counter.countMessage(message);
    },
  );
  return { result, counted };
}

describe('ledgersAtApply', () => {
  it('counts the summary as the view after the compaction shows it, once, with the ledgers of the log it is applied to', async () => {
    const { result, counted } = await applyCounting();
    assert.ok(result.ok);
    const summary = result.view.find((m) => m.summaryOf !== undefined);
    assert.equal(counted.length, 1);
    assert.equal(counted[0], summary, 'the message counted is the one in the view, so the count is not made again');
  });

  it('starts again when a message arrives while the summary is counted, and counts the summary that then reads', async () => {
    let first = true;
    const { result, counted } = await applyCounting((_, log) => {
      // The agent creates a file while the thread is let go after the first count.
      if (first) setImmediate(() => log.push(...asLog(CREATED)));
      first = false;
    });
    assert.ok(result.ok);
    const summary = result.view.find((m) => m.summaryOf !== undefined);
    assert.equal(counted.length, 2);
    assert.equal(counted.at(-1), summary);
    const text = (m: Message | undefined): string => (m?.content ?? []).map((p) => (p.type === 'text' ? p.text : '')).join('\n');
    assert.ok(text(summary).includes('src/late.ts'), 'the summary applied lists the files of the log it is applied to');
    assert.ok(!text(counted[0]).includes('src/late.ts'));
  });
});
