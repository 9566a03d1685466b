import assert from 'node:assert/strict';
import { EngineMemo } from '../../../src/core/engine-memo';
import { computeCompaction } from '../../../src/core/compaction';
import { EMPTY_LEDGER } from '../../../src/core/file-ledger';
import { estimateTokens } from '../../../src/core/tokenizer';
import { rejectionOf, unusableReason, type SummaryExpectations } from '../../../src/core/summary-repair';
import { asLog, config, estimatingCounter, FakeClock, idGenerator, RecordingSummarizer, sys, templateSummary, turn } from './fixtures';

const expected = (expectedTokens = 800): SummaryExpectations => ({ expectedTokens, countText: estimateTokens });

describe('summary checks: text that is not a usable summary is rejected', () => {
  it('rejects 90 control characters, saying it has no letters', () => {
    const noise = '\u0001\u0002\u0007\u001b'.repeat(23).slice(0, 90);
    assert.equal(
      unusableReason(noise),
      "the summarizer's text was rejected: it has no letters (90 characters, all of them control or replacement characters)",
    );
  });

  it('rejects text that is mostly replacement or control characters, or mostly symbols', () => {
    assert.match(
      unusableReason(`Summary of the work ${'\uFFFD'.repeat(60)}`) ?? '',
      /mostly not text \(60 of its 80 characters are control or replacement characters\)/,
    );
    assert.match(unusableReason(`ok ${'|---|---|###***'.repeat(10)}`) ?? '', /mostly not text \(only 2 of its \d+ visible characters are letters\)/);
  });

  it('rejects a whole summary under a tenth of the expected length, as turned down for its length rather than failed', () => {
    const short = `### Completed Work\nFixed the parser in src/parse.ts; the tests pass.`;
    assert.equal(unusableReason(short), undefined, 'a batch has no expected length');
    assert.match(unusableReason(short, expected(800)) ?? '', /it has \d+ tokens, under a tenth of the 800 expected/);
    assert.equal(rejectionOf(short, expected(800))?.kind, 'shape');
    assert.equal(unusableReason(short, expected(100)), undefined, 'little to summarize, little expected');
  });

  it("accepts a whole summary in a shape of its own, without any of the template's headings", () => {
    const own = [
      '## Session Summary',
      'The user asked for a CSV export of the report table; src/report/export.ts now writes it, with a header row.',
      'Rules the user set: no new dependencies, keep the column order of the screen, dates as ISO 8601.',
      'Files: src/report/export.ts (new), src/report/table.ts (columns exported), test/report/export.test.ts (3 tests, passing).',
      'Left to do: quote fields holding commas, then run npm test again.',
    ].join('\n');
    assert.equal(unusableReason(own, expected(300)), undefined);
    assert.equal(unusableReason(own.replace('## Session Summary\n', ''), expected(300)), undefined, 'no heading at all');
  });

  it('rejects a summary that says one sentence over and over, as the summarizer failing', () => {
    const loop = 'The agent fixed the parser and the tests pass now. '.repeat(10);
    assert.match(unusableReason(loop, expected()) ?? '', /it repeats itself \(8 different words in 100\)/);
    assert.equal(rejectionOf(loop, expected())?.kind, 'fault');
    const paragraph =
      'Added the CSV export in src/report/export.ts with a header row, ISO dates and two decimals; test/report/export.test.ts has three passing tests. ' +
      'The user wants no new dependencies, so quoting of commas and quotes is written by hand next, then npm test runs again before the commit. ';
    assert.match(unusableReason(paragraph.repeat(3), expected()) ?? '', /it repeats itself \(6\d% of its phrases are repeats\)/);
    assert.equal(unusableReason(paragraph, expected(300)), undefined, 'said once, it is a summary');
  });

  it("rejects the template's headings with nothing under them, and the instructions said back", () => {
    const empty =
      '## Session Summary (Compaction Round 1)\n### Original Task\n### Completed Work\n| File | Action |\n|---|---|\n### Current State\n- Working on: …\n### Next Steps\n1. …';
    assert.match(unusableReason(empty, expected()) ?? '', /beside its headings \(an empty template\)/);
    assert.equal(rejectionOf(empty, expected())?.kind, 'fault');
    const prompt =
      "Summarize the conversation above so the work can continue from your summary alone. PRESERVE: the user's requests and constraints word for word; exact file paths, symbols, commands, error messages and numbers; decisions and their reasons.";
    const echo = `Summary:\n${prompt}`;
    assert.match(unusableReason(echo, { ...expected(100), prompt }) ?? '', /it says back the instructions/);
    assert.equal(unusableReason(echo, expected(100)), undefined, 'without the prompt it is only text');
  });
});

describe('summary checks: a rejected summary is replaced by the extractive fallback, which says why', () => {
  const conversation = asLog([
    sys('s', 'You are a coding agent.'),
    ...turn('t1', 'Build a flashcard app', 3, 'x'.repeat(2_000)),
    ...turn('t2', 'Add SM-2 scheduling', 3, 'y'.repeat(2_000)),
    ...turn('t3', 'Now add tests', 1),
  ]);
  const cfg = config((c) => ({ ...c, keepRecent: { ...c.keepRecent, mode: 'messages', messages: 4 }, minMessages: 4 }));
  const compute = (text: string, onFailure: 'fallback' | 'keep-history' = 'fallback') =>
    computeCompaction(
      {
        log: conversation,
        reason: 'manual',
        config: { ...cfg, onSummarizerFailure: onFailure },
        window: { limit: 100_000, source: 'model' },
        ledger: EMPTY_LEDGER,
      },
      {
        counter: estimatingCounter(),
        summarizer: new RecordingSummarizer(() => ({ text })),
        clock: new FakeClock(),
        newId: idGenerator(),
        memo: new EngineMemo(),
      },
    );

  it('uses the fallback for 90 control characters and stores the reason', async () => {
    const outcome = await compute('\u0001'.repeat(90));
    assert.ok(outcome.status === 'compacted' && outcome.compaction.entry);
    const entry = outcome.compaction.entry;
    assert.equal(entry.fallback, true);
    assert.equal(entry.model, 'extractive-fallback');
    assert.match(entry.failure ?? '', /rejected: it has no letters/);
    assert.match(entry.summary, /extractive fallback[\s\S]*because the summarizer's text was rejected: it has no letters/);
  });

  it("uses a summary without the template's headings, with the original task and the engine's own parts added", async () => {
    const own = [
      '## Session Summary',
      'Built the flashcard app in src/cards.ts and added SM-2 scheduling in src/sm2.ts (interval, ease factor, repetitions).',
      'Cards are stored in cards.json beside the workspace; each review updates the due date and the ease factor.',
      'The user wants no new dependencies and the tests next; nothing is failing so far, and npm run build passes.',
      'Next: write test/sm2.test.ts for the first three intervals (1, 6, then interval times ease) and an ease floor of 1.3.',
    ].join('\n');
    const outcome = await compute(own);
    assert.ok(outcome.status === 'compacted' && outcome.compaction.entry);
    const entry = outcome.compaction.entry;
    assert.equal(entry.fallback, false, entry.failure);
    assert.ok(entry.summary.includes(own.split('\n')[1]!), 'its text is used as written');
    assert.match(entry.summary, /### Original Task \(verbatim\)\nBuild a flashcard app/);
    assert.match(entry.summary, /<read-files>[\s\S]*<modified-files>/, 'the file lists are appended');
  });

  it('uses the fallback for a summary that loops, saying why', async () => {
    const outcome = await compute('The agent worked on the flashcard app and the scheduler for a while. '.repeat(12));
    assert.ok(outcome.status === 'compacted' && outcome.compaction.entry);
    assert.equal(outcome.compaction.entry.fallback, true);
    assert.match(outcome.compaction.entry.failure ?? '', /it repeats itself/);
    assert.equal(outcome.compaction.summaryMisshapen, undefined, 'noise is the summarizer failing');
  });

  it('leaves the conversation as it was when so configured, saying why', async () => {
    const outcome = await compute('### Completed Work\nThe flashcard app exists.', 'keep-history');
    assert.equal(outcome.status, 'failed');
    assert.match(
      outcome.status === 'failed' ? outcome.reason : '',
      /Compaction failed: the summarizer's text was rejected: it has \d+ tokens, under a tenth of the \d+ expected\. The conversation is unchanged\./,
    );
  });

  it('uses a summary of the right shape and length', async () => {
    const outcome = await compute(templateSummary('Built the flashcard app and the SM-2 scheduler.'));
    assert.ok(outcome.status === 'compacted' && outcome.compaction.entry);
    assert.equal(outcome.compaction.entry.fallback, false);
  });
});
