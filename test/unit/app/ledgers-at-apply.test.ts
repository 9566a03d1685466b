import assert from 'node:assert/strict';
import { ledgersAtApply } from '../../../src/app/compaction/ledgers-at-apply';
import { withSummary } from '../../../src/app/compaction/summary-edit';
import { applyWithCurrentLedgers } from '../../../src/core/apply-ledgers';
import { computeCompaction, type ComputedCompaction } from '../../../src/core/compaction';
import { EngineMemo } from '../../../src/core/engine-memo';
import { EMPTY_LEDGER } from '../../../src/core/file-ledger';
import type { LogRecord } from '../../../src/core/history';
import type { Message } from '../../../src/core/messages';
import { MessageTokenCounter } from '../../../src/core/message-tokens';
import type { TextTokenizer } from '../../../src/core/tokenizer';
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

/** A conversation, and a summary of it computed from a snapshot, as a compaction prepares it (counted by `counter`). */
async function prepared(memo: EngineMemo, counter = estimatingCounter()): Promise<{ log: LogRecord[]; computed: ComputedCompaction }> {
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
    { counter, summarizer, clock: new FakeClock(), newId: idGenerator(), memo },
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
  counters: { readonly computing?: MessageTokenCounter; readonly applying?: MessageTokenCounter } = {},
): Promise<{ result: Awaited<ReturnType<typeof ledgersAtApply>>; counted: Message[] }> {
  const memo = new EngineMemo();
  const { log, computed } = await prepared(memo, counters.computing);
  const counted: Message[] = [];
  const counter = counters.applying ?? estimatingCounter();
  const result = await ledgersAtApply(
    () => log,
    computed,
    (text) => counter.countText(text),
    memo,
    undefined,
    (message, stored) => {
      onCount(message, log);
      counted.push(message);
      return counter.countMessage(message, stored);
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

  describe("the summary's count made where the compaction was computed", () => {
    /** A tokenizer of a name of its own (a token for every three characters), and the texts it was given. */
    const thirds = (): TextTokenizer & { readonly seen: string[] } => {
      const seen: string[] = [];
      return { name: 'thirds', seen, count: (text) => (seen.push(text), Math.ceil(text.length / 3)) };
    };
    const summaryText = (m: Message | undefined): string => (m?.content[0]?.type === 'text' ? m.content[0].text : '');

    it('is taken while the summary reads as it was computed: the applying side does not tokenize the summary again', async () => {
      const applying = thirds();
      const counter = new MessageTokenCounter(applying);
      const { result } = await applyCounting(undefined, { computing: new MessageTokenCounter(thirds()), applying: counter });
      assert.ok(result.ok);
      const summary = result.view.find((m) => m.summaryOf !== undefined);
      assert.ok(summary);
      assert.ok(!applying.seen.some((text) => text === summaryText(summary)), 'the summary was tokenized again where it was applied');
      assert.equal(counter.countMessage(summary), new MessageTokenCounter(thirds()).countMessage(summary), "the count taken is the summary's own");
    });

    it('is not taken for a summary that reads otherwise when it is applied: that one is counted as it now reads', async () => {
      const applying = thirds();
      const counter = new MessageTokenCounter(applying);
      let first = true;
      const { result } = await applyCounting(
        (_, log) => {
          // A file created before the summary is applied puts it into the summary's list of files.
          if (first) log.push(...asLog(CREATED));
          first = false;
        },
        { computing: new MessageTokenCounter(thirds()), applying: counter },
      );
      assert.ok(result.ok);
      const summary = result.view.find((m) => m.summaryOf !== undefined);
      assert.ok(summary && summaryText(summary).includes('src/late.ts'));
      assert.ok(applying.seen.includes(summaryText(summary)), 'the summary as it now reads was counted');
      assert.equal(counter.countMessage(summary), new MessageTokenCounter(thirds()).countMessage(summary));
    });

    it('is not taken from a tokenizer other than the one counting where it is applied', async () => {
      const applying = thirds();
      const other: TextTokenizer = { name: 'other', count: (text) => Math.ceil(text.length / 3) };
      const counter = new MessageTokenCounter(applying);
      const { result } = await applyCounting(undefined, { computing: new MessageTokenCounter(other), applying: counter });
      assert.ok(result.ok);
      const summary = result.view.find((m) => m.summaryOf !== undefined);
      assert.ok(summary && applying.seen.includes(summaryText(summary)));
      assert.equal(counter.countMessage(summary), new MessageTokenCounter(thirds()).countMessage(summary));
    });
  });

  describe('on the very log the compaction was computed from', () => {
    const thirdsCount = (text: string): number => Math.ceil(text.length / 3);
    const counting = (): MessageTokenCounter => new MessageTokenCounter({ name: 'thirds', count: thirdsCount });

    it('takes the summary as computed, without making its ledgers again, and it is what making them again gives', async () => {
      const memo = new EngineMemo();
      const { log, computed } = await prepared(memo, counting());
      const result = await ledgersAtApply(() => log, computed, thirdsCount, memo);
      assert.ok(result.ok);
      assert.equal(result.compaction.entry, computed.entry, 'the entry computed is the one applied, not one made again');
      const remade = applyWithCurrentLedgers(log, computed, thirdsCount, new EngineMemo());
      assert.ok(remade.ok);
      assert.equal(result.compaction.entry?.summary, remade.compaction.entry?.summary);
      assert.deepEqual(result.compaction.entry?.fileOperations, remade.compaction.entry?.fileOperations);
      assert.deepEqual(result.compaction.entry?.needles, remade.compaction.entry?.needles);
      assert.deepEqual(result.view, remade.view);
    });

    it('makes the ledgers of a summary the user edited again: what the edit took out of them comes back', async () => {
      const memo = new EngineMemo();
      const { log, computed } = await prepared(memo, counting());
      assert.ok(computed.entry?.summary.includes('<modified-files>'), 'the computed summary lists the files changed');
      const edited = withSummary(computed, templateSummary('The retry job was looked into; nothing else.'));
      const result = await ledgersAtApply(() => log, edited, thirdsCount, memo);
      assert.ok(result.ok);
      assert.ok(result.compaction.entry?.summary.includes('The retry job was looked into; nothing else.'), "the user's text is kept");
      assert.ok(result.compaction.entry?.summary.includes('<modified-files>'), 'the list of files the edit dropped is made again');
    });
  });
});
