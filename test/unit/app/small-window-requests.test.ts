import assert from 'node:assert/strict';
import { COMPACT_REQUEST_WINDOW, RequestSetup } from '../../../src/app/turn/request-setup';
import { readSettings } from '../../../src/app/settings';
import { sizeSummary, SUMMARY_BODY_FLOOR } from '../../../src/core/compaction';
import { DEFAULT_CONFIG } from '../../../src/core/config';
import { outputReserveFor } from '../../../src/core/context-window';
import type { SummaryRequest, Summarizer } from '../../../src/core/ports';
import { maxOutputTokens, SHORT_SUMMARY_SECTIONS, SUMMARY_SECTIONS, templateHeadings } from '../../../src/core/summary-request';
import { loadTokenizer, type TextTokenizer } from '../../../src/core/tokenizer';
import { templateSummary } from '../core/fixtures';
import { scriptedModel, turnFixture } from './turn-fixture';

/**
 * A small window (4,096 tokens, the default of many local servers) keeps room for the conversation
 * and for a real summary: the system prompt and the tools are cut to fit, the summary template
 * shrinks with the window and is given room beyond its headings, and a session of short turns does
 * not end every turn in a compaction.
 */

/** A real model's tokenizer may count this much more than the local one (Gemma's counts about 25% more than o200k's). */
const OTHER_TOKENIZER_MARGIN = 1.25;

const settings = readSettings(() => undefined).settings;

/** What every request carries besides the messages for a model of `window` tokens, in a trusted workspace that runs commands. */
function overheadFor(window: number): string {
  const workspace = {
    files: {} as never,
    trusted: () => true,
    roots: () => [{ name: 'ws', fsPath: '/tmp/ws' }],
    commands: { runCommand: async () => ({ command: '', output: '', exitCode: 0 }) } as never,
  };
  return new RequestSetup({ workspace, settings: () => settings }).overheadText(window);
}

describe('a small window: room for the conversation and for its summary', () => {
  let o200k: TextTokenizer;
  before(async () => {
    o200k = await loadTokenizer('o200k_base');
  });
  const count = (text: string): number => o200k.count(text);

  it('leaves the conversation at least half of what a 4,096-token window has for input, with room for another tokenizer', () => {
    const window = 4_096;
    const input = window - outputReserveFor(window);
    const overhead = count(overheadFor(window));
    assert.ok(overhead * OTHER_TOKENIZER_MARGIN <= input / 2, `${overhead} tokens of system prompt and tools of ${input}`);
    // The tools a turn needs are all there: reading, searching, writing, running, recall.
    for (const name of ['read_file', 'list_files', 'search_text', 'create_file', 'edit_file', 'run_command', 'recall']) {
      assert.match(overheadFor(window), new RegExp(`"name":"${name}"`), name);
    }
  });

  it('leaves half from 8,192 on too, where the full prompt and the plan are offered', () => {
    for (const window of [COMPACT_REQUEST_WINDOW, 16_384]) {
      const input = window - outputReserveFor(window);
      const overhead = count(overheadFor(window));
      assert.ok(overhead * OTHER_TOKENIZER_MARGIN <= input / 2, `${window}: ${overhead} of ${input}`);
    }
  });

  it('sizes the summary at 4,096, 8,192 and 16,384 to its template headings with room beyond them', () => {
    const shape: Record<number, readonly string[]> = { 4_096: SHORT_SUMMARY_SECTIONS, 8_192: SHORT_SUMMARY_SECTIONS, 16_384: SUMMARY_SECTIONS };
    for (const window of [4_096, 8_192, 16_384]) {
      const room = window - outputReserveFor(window) - count(overheadFor(window));
      const sized = sizeSummary(DEFAULT_CONFIG, room, window, count);
      const sections = sized.short ? SHORT_SUMMARY_SECTIONS : SUMMARY_SECTIONS;
      assert.deepEqual(sections, shape[window], `${window}: the template`);
      const headings = count(templateHeadings(DEFAULT_CONFIG.summary, sized.short));
      const task = sized.task('Add a CSV export to the report page. '.repeat(100));
      for (const target of [sized.targetFor(undefined), sized.targetFor(task)]) {
        assert.ok(target >= headings + SUMMARY_BODY_FLOOR, `${window}: ${target} tokens for ${headings} of headings`);
        const output = maxOutputTokens({ ...DEFAULT_CONFIG.summary, targetTokens: target });
        assert.ok(output <= outputReserveFor(window), `${window}: ${output} tokens of output fit the reserve`);
      }
      // The request overhead and the summary (with the task it carries) leave the compaction's target within reach.
      const summary = (task?.tokens ?? 0) + sized.targetFor(task);
      const input = window - outputReserveFor(window);
      const overhead = count(overheadFor(window)) * OTHER_TOKENIZER_MARGIN;
      assert.ok(overhead + summary <= input * DEFAULT_CONFIG.targetThreshold, `${window}: ${overhead} + ${summary} of ${input}`);
    }
  });

  it('gives the eight headings of the full template to a roomy window', () => {
    const sized = sizeSummary(DEFAULT_CONFIG, 120_000, 128_000, count);
    assert.equal(sized.short, false);
    assert.equal(sized.targetFor(undefined), DEFAULT_CONFIG.summary.targetTokens);
  });
});

describe('a session at 4,096 tokens with the scripted model', () => {
  it('does not end every turn in a compaction, and its summaries are asked in the short template with room', async () => {
    const requests: SummaryRequest[] = [];
    const summarizer: Summarizer = {
      name: 'scripted',
      summarize: async (request) => {
        requests.push(request);
        return { text: templateSummary(`Noted the numbers N-1 to N-${requests.length * 3}; each turn asks to remember one more.`) };
      },
    };
    const window = 4_096;
    const f = await turnFixture({
      model: scriptedModel({ countTools: true }),
      contextWindow: window,
      window: window - outputReserveFor(window),
      countOverhead: true,
      summarizer,
    });
    try {
      const chat = f.newChat();
      const compactedAfter: boolean[] = [];
      let compactions = 0;
      for (let i = 1; i <= 24; i++) {
        await chat.send(`remember N-${i} ${'the value of a setting the user named, with its reason. '.repeat(14)}`);
        const conversation = (await f.registry.current())!;
        const now = conversation.log().filter((r) => r.type === 'compaction').length;
        compactedAfter.push(now > compactions);
        compactions = now;
      }
      const turns = compactedAfter.length;
      assert.ok(compactions >= 1, 'the window fills and is compacted');
      const pattern = compactedAfter.map((c) => (c ? 'C' : '.')).join('');
      assert.ok(compactions <= turns * 0.4, `${compactions} compactions in ${turns} turns: ${pattern}`);
      assert.doesNotMatch(pattern, /CC/, `no two turns in a row end in a compaction: ${pattern}`);
      const directive = requests[0]?.messages.at(-1)?.content ?? '';
      for (const section of SHORT_SUMMARY_SECTIONS) assert.match(directive, new RegExp(`### ${section}`), section);
      assert.doesNotMatch(directive, /### Key Technical Decisions/);
      const asked = Number(/under about (\d+) tokens/.exec(directive)?.[1]);
      assert.ok(asked >= SUMMARY_BODY_FLOOR, `asked for ${asked} tokens`);
    } finally {
      await f.close();
    }
  });
});
