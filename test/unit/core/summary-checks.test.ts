import assert from 'node:assert/strict';
import { EngineMemo } from '../../../src/core/engine-memo';
import { computeCompaction } from '../../../src/core/compaction';
import { EMPTY_LEDGER } from '../../../src/core/file-ledger';
import { estimateTokens } from '../../../src/core/tokenizer';
import { unusableReason, type SummaryExpectations } from '../../../src/core/summary-repair';
import { SUMMARY_SECTIONS } from '../../../src/core/summary-request';
import { asLog, config, estimatingCounter, FakeClock, idGenerator, RecordingSummarizer, sys, templateSummary, turn } from './fixtures';

const expected = (expectedTokens = 800): SummaryExpectations => ({ expectedTokens, countText: estimateTokens, sections: SUMMARY_SECTIONS });

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

  it('rejects a whole summary under a tenth of the expected length', () => {
    const short = `### Completed Work\n${'Fixed the parser. '.repeat(3)}`;
    assert.equal(unusableReason(short), undefined, 'a batch has no expected length');
    assert.match(unusableReason(short, expected(800)) ?? '', /it has \d+ tokens, under a tenth of the 800 expected/);
    assert.equal(unusableReason(short, expected(100)), undefined, 'little to summarize, little expected');
  });

  it("rejects a whole summary without any of the template's headings, naming them", () => {
    const prose = 'The agent fixed the parser and the tests pass now. '.repeat(10);
    assert.match(unusableReason(prose, expected()) ?? '', /none of the template's headings \("Original Task", "Completed Work", .*"Next Steps"\)/);
  });

  it('accepts a summary with one heading of the template in any common form', () => {
    const body = 'The agent fixed the parser and the tests pass now. '.repeat(10);
    for (const heading of ['### Completed Work', '**Completed work**', 'Errors and Resolutions:', '## 1. Original Task', '#### Next Steps']) {
      assert.equal(unusableReason(`${heading}\n${body}`, expected()), undefined, heading);
    }
    assert.equal(unusableReason(templateSummary('Done.'), expected()), undefined);
  });

  it('does not take a mention of a section in a sentence for its heading', () => {
    const body = 'We will fill in the completed work later, see next steps. '.repeat(10);
    assert.match(unusableReason(body, expected()) ?? '', /none of the template's headings/);
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

  it("uses the fallback for a summary without the template's headings", async () => {
    const outcome = await compute('The agent worked on the flashcard app and the scheduler for a while. '.repeat(12));
    assert.ok(outcome.status === 'compacted' && outcome.compaction.entry);
    assert.equal(outcome.compaction.entry.fallback, true);
    assert.match(outcome.compaction.entry.failure ?? '', /none of the template's headings/);
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
