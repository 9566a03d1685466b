import assert from 'node:assert/strict';
import fc from 'fast-check';
import { rejectionOf, type SummaryExpectations } from '../../../src/core/summary-repair';
import { wordsOf } from '../../../src/core/summary-substance';
import { buildDirective, DEFAULT_SYSTEM_PROMPT } from '../../../src/core/summary-request';
import { estimateTokens } from '../../../src/core/tokenizer';
import { config } from './fixtures';

/**
 * A summary is judged by its substance, not its shape: real prose in any of the shapes models write
 * (paragraphs, bullets, a table, headings of its own or the template's) is used, and noise (a phrase
 * in a loop, symbols, the template with nothing in it, the instructions said back) is the
 * summarizer's failure.
 */

const PROMPT = `${DEFAULT_SYSTEM_PROMPT}\n${buildDirective({ round: 2, summary: config().summary })}`;
const expectations = (expectedTokens: number): SummaryExpectations => ({ expectedTokens, countText: estimateTokens, prompt: PROMPT });

/** What a session's summary says, one fact a line, as models word them. */
const FACTS = [
  'The user asked for a CSV export of the report table, written by src/report/export.ts.',
  'Column order follows the screen; dates are written as ISO 8601 and amounts with two decimals.',
  'No new dependencies: the user said so twice, so the quoting of fields is done by hand.',
  'test/report/export.test.ts has three tests and all of them pass after the last change.',
  'npm run build failed once on a missing import in src/report/table.ts, fixed by exporting columns().',
  'The parser in src/csv/parse.ts still rejects a quoted field that holds a line break.',
  'Next, quote fields holding commas or quotes, then run npm test and report the result.',
  'The settings page gains an "Export" button in src/ui/settings-view.tsx, not wired yet.',
  'Decided to stream rows with a generator so that a report of 50,000 rows stays under 20 MB.',
  'Error "ENOENT: reports/2026-11.csv" came from a missing folder; the writer now creates it.',
  'The user prefers small commits with messages in the imperative mood.',
  'Benchmarks: exporting 10,000 rows takes 180 ms on the CI machine.',
  'Open question for the user: should empty cells be written as "" or left blank?',
  'Renamed ReportRow.total to ReportRow.amount across six files; the old name is gone.',
  'Lint passes with eslint 9; prettier reformatted two files that are committed now.',
  'A locale bug made amounts use commas in German; toFixed(2) replaced toLocaleString.',
];

type Shape = 'paragraph' | 'bullets' | 'own headings' | 'template headings' | 'table';

function shaped(facts: readonly string[], shape: Shape): string {
  switch (shape) {
    case 'paragraph':
      return facts.join(' ');
    case 'bullets':
      return facts.map((fact) => `- ${fact}`).join('\n');
    case 'own headings': {
      const half = Math.ceil(facts.length / 2);
      return ['## Session Summary', '**What was done**', ...facts.slice(0, half), '**What is left**', ...facts.slice(half)].join('\n');
    }
    case 'template headings':
      return [
        '## Session Summary (Compaction Round 2)',
        '### Completed Work',
        ...facts.map((f) => `- ${f}`),
        '### Next Steps',
        '1. Run npm test.',
      ].join('\n');
    case 'table':
      return ['| Item | Note |', '|---|---|', ...facts.map((fact, i) => `| ${i + 1} | ${fact} |`)].join('\n');
  }
}

const SHAPES: readonly Shape[] = ['paragraph', 'bullets', 'own headings', 'template headings', 'table'];

describe('summary substance (property)', () => {
  it('uses real prose summaries of any shape and length that suits what they summarize', () => {
    fc.assert(
      fc.property(
        fc.shuffledSubarray(FACTS, { minLength: 5, maxLength: FACTS.length }),
        fc.constantFrom(...SHAPES),
        fc.integer({ min: 50, max: 800 }),
        (facts, shape, expected) => {
          const summary = shaped(facts, shape);
          const rejection = rejectionOf(summary, expectations(expected));
          assert.equal(rejection, undefined, `${shape}: ${rejection?.reason}\n${summary}`);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('rejects a phrase said over and over as the summarizer failing, whatever the phrase', () => {
    fc.assert(
      fc.property(
        fc.array(fc.stringMatching(/^[a-z]{2,9}$/), { minLength: 1, maxLength: 12 }),
        fc.integer({ min: 4, max: 40 }),
        fc.constantFrom(' ', '\n', '. '),
        (words, times, separator) => {
          const loop = Array.from({ length: times }, () => words.join(' ')).join(separator);
          fc.pre(loop.length >= 40);
          assert.equal(rejectionOf(loop, expectations(800))?.kind, 'fault', loop);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('rejects symbols, control characters and empty templates as the summarizer failing', () => {
    const symbols = fc.string({
      unit: fc.constantFrom('|', '-', '#', '*', '`', '\u0001', '\uFFFD', ' ', '\n', '1', 'x'),
      minLength: 40,
      maxLength: 400,
    });
    const emptyTemplate = fc
      .shuffledSubarray(['Original Task', 'Completed Work', 'Current State', 'Pending Work', 'Next Steps', 'Errors & Resolutions'], { minLength: 1 })
      .chain((sections) =>
        fc
          .array(fc.constantFrom('…', '- Working on: …', '- [ ]', 'None', 'N/A', '|---|---|', '1. …', ''), {
            minLength: sections.length,
            maxLength: sections.length,
          })
          .map((fills) => ['## Session Summary (Compaction Round 1)', ...sections.flatMap((s, i) => [`### ${s}`, fills[i]!])].join('\n')),
      );
    fc.assert(
      fc.property(fc.oneof(symbols, emptyTemplate), (noise) => {
        assert.equal(rejectionOf(noise, expectations(400))?.kind, 'fault', JSON.stringify(noise));
      }),
      { numRuns: 300 },
    );
  });

  it('rejects the instructions said back as the summarizer failing', () => {
    // Lines of the instructions at least a few words long: a shorter one said back alone is a label, not an echo.
    const lines = PROMPT.split('\n').filter((line) => wordsOf(line).length >= 6);
    fc.assert(
      fc.property(fc.shuffledSubarray(lines, { minLength: 3 }), (said) => {
        assert.equal(rejectionOf(said.join('\n'), expectations(400))?.kind, 'fault', said.join('\n'));
      }),
      { numRuns: 200 },
    );
  });
});
