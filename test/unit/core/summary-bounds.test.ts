import assert from 'node:assert/strict';
import { EngineMemo } from '../../../src/core/engine-memo';
import { compact, type CompactionDeps, type CompactionRequest } from '../../../src/core/compaction';
import { outputReserveFor } from '../../../src/core/context-window';
import { EMPTY_LEDGER, recordFileEvent, type FileLedger } from '../../../src/core/file-ledger';
import type { LogRecord } from '../../../src/core/history';
import type { SummaryRequest } from '../../../src/core/ports';
import { boundTask, stripFileOperations } from '../../../src/core/summary-repair';
import { asLog, config, estimatingCounter, FakeClock, idGenerator, RecordingSummarizer, templateSummary, turn, user } from './fixtures';

/**
 * What bounds a summary: the original task is kept verbatim only up to a cap, the output room
 * follows the window, and exactly one file ledger (the current one) ends every summary.
 */

const messagesConfig = config((c) => ({ ...c, keepRecent: { ...c.keepRecent, mode: 'messages', messages: 4 }, minMessages: 4 }));

function deps(summarizer: RecordingSummarizer): CompactionDeps {
  return { counter: estimatingCounter(), summarizer, clock: new FakeClock(), newId: idGenerator(), memo: new EngineMemo() };
}

function request(log: readonly LogRecord[], over: Partial<CompactionRequest> = {}): CompactionRequest {
  return { log, reason: 'manual', config: messagesConfig, window: { limit: 32_000, source: 'model' }, ledger: EMPTY_LEDGER, ...over };
}

const LEDGER_TAGS = /<read-files>|<modified-files>/g;

function ledgerPairs(summary: string): number {
  return (summary.match(LEDGER_TAGS) ?? []).length / 2;
}

/**
 * A summarizer that copies everything it is shown, the way a careless model does, cut off at its
 * output limit as a server cuts a model off (chars/4, like the test counter).
 */
const copyingSummarizer = (): RecordingSummarizer =>
  new RecordingSummarizer((r: SummaryRequest) => ({
    text: `## Session Summary (Compaction Round 1)\n\n### Original Task\n${r.messages.map((m) => m.content).join('\n')}`.slice(
      0,
      r.maxOutputTokens * 4,
    ),
  }));

describe('summary bounds: a long first message', () => {
  // About 11,000 tokens by the chars/4 estimate: a pasted log.
  const pasted = `Fix the crash in the log below.\n${'ERROR 2026-11-02 worker[17] failed to parse frame\n'.repeat(880)}`;
  const long = [
    user('u0', pasted),
    ...turn('t1', 'Look at the parser', 3, 'x'.repeat(2_000)),
    ...turn('t2', 'And the worker', 3, 'y'.repeat(2_000)),
    ...turn('t3', 'Go on', 1),
  ];

  it('keeps the task verbatim up to a cap with a marker, and the summary within its target', async () => {
    const counter = estimatingCounter();
    const summarizer = copyingSummarizer();
    const outcome = await compact(request(asLog(long)), deps(summarizer));
    assert.equal(outcome.status, 'compacted');
    if (outcome.status !== 'compacted') return;
    const summary = outcome.compaction.entry!.summary;
    assert.match(summary, /### Original Task \(verbatim\)\nFix the crash in the log below\./);
    assert.match(summary, /\[… the original task continues: [\d,]+ of its [\d,]+ tokens are cut here/);
    const withoutLedger = summary.slice(0, summary.indexOf('<read-files>'));
    // The model copied its whole request into the task section; the repair keeps only the capped task.
    assert.ok(counter.countText(withoutLedger) <= 800 * 1.25, `summary of ${counter.countText(withoutLedger)} tokens`);
    // The directive carries the capped task, not the whole log.
    const directive = summarizer.requests[0]!.messages.at(-1)!.content;
    assert.ok(counter.countText(directive) < 1_500, `directive of ${counter.countText(directive)} tokens`);
    // And the view really shrinks.
    assert.ok(outcome.compaction.entry!.tokensAfter < outcome.compaction.entry!.tokensBefore / 3);
  });

  it('keeps a short task whole', () => {
    const bounded = boundTask('Build a flashcard app', 400, (v) => Math.ceil(v.length / 4));
    assert.deepEqual(bounded, { text: 'Build a flashcard app', tokens: 6, cut: false });
  });

  it('cuts a long task to at most its cap, marker included', () => {
    const count = (v: string): number => Math.ceil(v.length / 4);
    for (const cap of [60, 400, 2_000]) {
      const bounded = boundTask('word '.repeat(20_000), cap, count);
      assert.ok(bounded.cut);
      assert.ok(bounded.tokens <= cap, `${bounded.tokens} > ${cap}`);
      assert.equal(bounded.tokens, count(bounded.text));
    }
  });
});

describe('summary bounds: output room follows the window', () => {
  it('keeps at most a quarter of a small window for output, capped at 16,384', () => {
    assert.equal(outputReserveFor(6_000, 4_096), 1_500);
    assert.equal(outputReserveFor(4_096, 4_096), 1_024);
    assert.equal(outputReserveFor(128_000, 4_096), 4_096);
    assert.equal(outputReserveFor(1_000_000, 100_000), 16_384);
    assert.equal(outputReserveFor(200_000), 16_384);
    assert.equal(outputReserveFor(0, 2_000), 2_000);
  });

  it('asks a summarizer with a 2,048-token window for no more output than the rule allows', async () => {
    const summarizer = new RecordingSummarizer(undefined, 2_048);
    const log = asLog([...turn('t1', 'Build it', 2, 'x'.repeat(200)), ...turn('t2', 'Test it', 2, 'y'.repeat(200)), ...turn('t3', 'Ship it', 1)]);
    await compact(request(log, { window: { limit: 2_048, source: 'model' } }), deps(summarizer));
    assert.ok(summarizer.requests.length > 0);
    for (const r of summarizer.requests) assert.ok(r.maxOutputTokens <= 512, `asked for ${r.maxOutputTokens}`);
  });
});

describe('summary bounds: a small window asks for a small summary', () => {
  it('aims a summary at a tenth of a 4,500-token window, and keeps the 800 target for large windows', async () => {
    const log = asLog([...turn('t1', 'Build it', 2, 'x'.repeat(400)), ...turn('t2', 'Test it', 2, 'y'.repeat(400)), ...turn('t3', 'Ship it', 1)]);
    const small = new RecordingSummarizer();
    await compact(request(log, { window: { limit: 4_500, source: 'model' } }), deps(small));
    assert.match(small.requests[0]!.messages.at(-1)!.content, /Keep the summary under about (\d+) tokens/);
    const asked = Number(/under about (\d+) tokens/.exec(small.requests[0]!.messages.at(-1)!.content)?.[1]);
    assert.ok(asked <= 450, `asked for ${asked}`);
    const large = new RecordingSummarizer();
    await compact(request(log, { window: { limit: 128_000, source: 'model' } }), deps(large));
    assert.match(large.requests[0]!.messages.at(-1)!.content, /under about \d+ tokens/);
    const target = Number(/under about (\d+) tokens/.exec(large.requests[0]!.messages.at(-1)!.content)?.[1]);
    // 800, less the original task ("Build it") that is inserted verbatim.
    assert.ok(target > 780 && target <= 800, `asked for ${target}`);
  });
});

describe('summary bounds: one ledger per summary', () => {
  const conversation = [
    ...turn('t1', 'Build a flashcard app', 3, 'x'.repeat(2_000)),
    ...turn('t2', 'Add SM-2', 3, 'y'.repeat(2_000)),
    ...turn('t3', 'Tests', 1),
  ];
  const read: FileLedger = recordFileEvent(EMPTY_LEDGER, { kind: 'read', path: 'src/a.ts', actor: 'agent', at: 1 });
  const modified: FileLedger = recordFileEvent(read, { kind: 'modified', path: 'src/a.ts', actor: 'agent', at: 2 });

  async function twoRounds(summarizer: RecordingSummarizer) {
    const d = deps(summarizer);
    const first = await compact(request(asLog(conversation), { ledger: read }), d);
    assert.ok(first.status === 'compacted' && first.log);
    const grown = [...first.log, ...asLog(turn('t4', 'Fix the bug', 3, 'z'.repeat(2_000))), ...asLog(turn('t5', 'Ship', 1))];
    const second = await compact(request(grown, { ledger: modified }), d);
    assert.ok(second.status === 'compacted');
    return [first.compaction.entry!.summary, second.compaction.entry!.summary] as const;
  }

  function assertCurrentLedgerOnly(summary: string, path: string, section: 'read-files' | 'modified-files'): void {
    assert.equal(ledgerPairs(summary), 1, summary);
    assert.ok(summary.trimEnd().endsWith('</modified-files>'));
    const block = new RegExp(`<${section}>\\n([\\s\\S]*?)</${section}>`).exec(summary)?.[1] ?? '';
    assert.ok(block.includes(path), `${path} in <${section}>`);
  }

  it('ends a model summary that copied the earlier one with only the current lists', async () => {
    const [first, second] = await twoRounds(copyingSummarizer());
    assertCurrentLedgerOnly(first, 'src/a.ts', 'read-files');
    assertCurrentLedgerOnly(second, 'src/a.ts', 'modified-files');
    assert.doesNotMatch(second, /<read-files>\nsrc\/a\.ts/);
  });

  it('ends an extractive fallback that quotes the earlier summary with only the current lists', async () => {
    let calls = 0;
    const failingSecond = new RecordingSummarizer((r) => {
      if (calls++ === 0) return { text: templateSummary(`Work on ${r.messages.length} messages, the app is half done.`) };
      throw new Error('server down');
    });
    const [first, second] = await twoRounds(failingSecond);
    assertCurrentLedgerOnly(first, 'src/a.ts', 'read-files');
    assert.match(second, /extractive fallback/);
    assert.match(second, /### Earlier summary/);
    assertCurrentLedgerOnly(second, 'src/a.ts', 'modified-files');
  });

  it('strips file lists wherever they appear, and leaves other text alone', () => {
    const text = 'Intro\n<read-files>\na.ts\n</read-files>\n<modified-files>\nb.ts (modified)\n</modified-files>\nOutro';
    assert.equal(stripFileOperations(text), 'Intro\nOutro');
    assert.equal(stripFileOperations('No lists here.\n\n\nAt all.'), 'No lists here.\n\n\nAt all.');
    assert.equal(stripFileOperations('A stray <read-files>\nline'), 'A stray <read-files>\nline');
    assert.equal(stripFileOperations('x\n</modified-files>\ny'), 'x\ny');
  });
});
