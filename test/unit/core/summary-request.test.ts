import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  buildDirective,
  buildMergeRequest,
  buildSummaryRequest,
  countRequest,
  cut,
  DEFAULT_SYSTEM_PROMPT,
  renderedMessageTokens,
  renderMessage,
  requestTokens,
  SHORT_SUMMARY_SECTIONS,
  SUMMARY_SECTIONS,
  summarySections,
  templateHeadings,
} from '../../../src/core/summary-request';
import { sizeSummary, SUMMARY_BODY_FLOOR } from '../../../src/core/compaction';
import { EngineMemo } from '../../../src/core/engine-memo';
import { MessageTokenCounter } from '../../../src/core/message-tokens';
import { charEstimator, loadTokenizer, type TextTokenizer } from '../../../src/core/tokenizer';
import { SUMMARY_PREFIX } from '../../../src/core/history';
import type { Message } from '../../../src/core/messages';
import { assistant, config, toolResult, user } from './fixtures';

const base = config();
/** The memo these tests render and count under. */
const memo = new EngineMemo();
const positioned = (messages: Message[]) => messages.map((message, position) => ({ message, position }));
const directive = { round: 3, summary: base.summary, originalTask: 'Build a flashcard app with SM-2' };

describe('summary request: structured messages, not string interpolation', () => {
  const conversation = [
    user('u1', 'Build a flashcard app with SM-2'),
    assistant('a1', 'Reading the schema.', { callId: 'c1', tool: 'read_file', input: { path: 'src/db.ts' } }),
    toolResult('t1', 'c1', 'read_file', 'export const schema = 1;'),
  ];

  it('uses the default system prompt when no custom prompt is set', () => {
    const request = buildSummaryRequest({
      summary: base.summary,
      truncation: base.truncation,
      messages: positioned(conversation),
      directive,
      purpose: 'summary',
      memo,
    });
    assert.equal(request.system, DEFAULT_SYSTEM_PROMPT);
  });

  it('uses a custom prompt exactly as written, with no persona added', () => {
    const custom = '  You are Lasa. Summarize tersely.\n';
    const request = buildSummaryRequest({
      summary: { ...base.summary, customPrompt: custom },
      truncation: base.truncation,
      messages: positioned(conversation),
      directive,
      purpose: 'summary',
      memo,
    });
    assert.equal(request.system, custom);
    assert.ok(!request.messages.some((m) => m.content.includes('Lasa')), 'the prompt appears only as the system prompt');
  });

  it('passes the previous summary as a system-role message, and no such message when there is none', () => {
    const previous: Message = {
      id: 'summary:e1',
      role: 'user',
      content: [{ type: 'text', text: `${SUMMARY_PREFIX}\n\n## Session Summary (Compaction Round 2)\nold facts` }],
      summaryOf: 'e1',
    };
    const withPrevious = buildSummaryRequest({
      summary: base.summary,
      truncation: base.truncation,
      messages: positioned(conversation),
      previousSummary: previous,
      directive,
      purpose: 'summary',
      memo,
    });
    assert.equal(withPrevious.messages[0]!.role, 'system');
    assert.match(withPrevious.messages[0]!.content, /old facts/);
    assert.ok(!withPrevious.messages[0]!.content.includes(SUMMARY_PREFIX), 'the view prefix is not repeated to the summarizer');
    const without = buildSummaryRequest({
      summary: base.summary,
      truncation: base.truncation,
      messages: positioned(conversation),
      directive,
      purpose: 'summary',
      memo,
    });
    assert.ok(!without.messages.some((m) => m.role === 'system'));
  });

  it('keeps the original roles and renders tool calls and results readably', () => {
    const request = buildSummaryRequest({
      summary: base.summary,
      truncation: base.truncation,
      messages: positioned(conversation),
      directive,
      purpose: 'summary',
      memo,
    });
    const [u, a, t] = request.messages;
    assert.equal(u!.role, 'user');
    assert.equal(a!.role, 'assistant');
    assert.match(a!.content, /\[tool call read_file#c1\] \{"path":"src\/db.ts"\}/);
    assert.equal(t!.role, 'user');
    assert.match(t!.content, /\[#2 tool\] \[tool result read_file#c1\]\nexport const schema = 1;/);
  });

  it('ends with a user directive naming what to preserve, condense, prioritize and remove, and every section', () => {
    const request = buildSummaryRequest({
      summary: base.summary,
      truncation: base.truncation,
      messages: positioned(conversation),
      directive,
      purpose: 'summary',
      memo,
    });
    const last = request.messages.at(-1)!;
    assert.equal(last.role, 'user');
    for (const word of ['PRESERVE', 'CONDENSE', 'PRIORITIZE', 'REMOVE']) assert.ok(last.content.includes(word), word);
    for (const section of SUMMARY_SECTIONS) assert.ok(last.content.includes(`### ${section}`), section);
    assert.ok(last.content.includes('## Session Summary (Compaction Round 3)'));
    assert.ok(last.content.includes('Build a flashcard app with SM-2'));
    assert.ok(last.content.includes('800 tokens'));
  });

  it('follows depth, code-block, file-path, target length and focus options', () => {
    const brief = buildDirective({
      ...directive,
      summary: { ...base.summary, depth: 'brief', preserveCodeBlocks: false, targetTokens: 300 },
      focus: 'the parser bug',
    });
    assert.match(brief, /Depth: brief/);
    assert.match(brief, /Leave out code blocks/);
    assert.match(brief, /300 tokens/);
    assert.match(brief, /focus on: the parser bug/);
    const detailed = buildDirective({ ...directive, summary: { ...base.summary, depth: 'detailed', preserveFilePaths: true } });
    assert.match(detailed, /Depth: detailed/);
    assert.match(detailed, /full workspace path/);
    assert.match(detailed, /Keep code blocks/);
  });

  it('uses the configured temperature and an output room above the target length', () => {
    const request = buildSummaryRequest({
      summary: { ...base.summary, temperature: 0.1, targetTokens: 800 },
      truncation: base.truncation,
      messages: [],
      directive,
      purpose: 'summary',
      memo,
    });
    assert.equal(request.temperature, 0.1);
    assert.equal(request.maxOutputTokens, 1000);
  });

  it('truncates results over 2,000 characters and cuts single huge results with a marker', () => {
    const medium = 'm'.repeat(5_000);
    const huge = 'h'.repeat(50_000) + 'TAIL';
    const mediumOut = renderMessage(toolResult('t', 'c', 'grep', medium), 0, base.truncation, memo).content;
    assert.match(mediumOut, /truncated: 3000 more characters/);
    assert.ok(mediumOut.length < 2_200);
    const hugeOut = renderMessage(toolResult('t', 'c', 'grep', huge), 0, base.truncation, memo).content;
    assert.match(hugeOut, /characters cut/);
    assert.ok(hugeOut.endsWith('TAIL'), 'the end of a huge output is kept');
    assert.ok(hugeOut.length < 2_200);
    assert.equal(cut('short', 10, 20), 'short');
  });

  it('builds the merge of batch summaries in the same structured form', () => {
    const merge = buildMergeRequest(base.summary, ['part one', 'part two'], undefined, directive);
    assert.equal(merge.system, DEFAULT_SYSTEM_PROMPT);
    assert.deepEqual(
      merge.messages.map((m) => m.role),
      ['system', 'system', 'user'],
    );
    assert.match(merge.messages[1]!.content, /part two/);
    assert.equal(merge.purpose, 'merge');
  });
});

describe('summary request: counting what is sent to the summarizer', () => {
  /** Texts that start and end the way messages do, so that a header's boundary meets every kind of first character. */
  const textArb = fc
    .tuple(
      fc.constantFrom('', ' ', '  ', '\n', '\n\n', '\t', ']', '[', '#', '12', "'s", '.', '—', 'é', '日本', '🙂', '<|endoftext|>', '```ts\n'),
      fc.string({ unit: 'grapheme', maxLength: 80 }),
      fc.constantFrom('', ' ', '\n', '}', '0'),
    )
    .map(([head, body, tail]) => head + body + tail);
  const messageArb = fc.record({
    role: fc.constantFrom('user' as const, 'assistant' as const, 'tool' as const, 'system' as const),
    text: textArb,
    long: fc.boolean(),
  });

  for (const encoding of ['o200k_base', 'cl100k_base'] as const) {
    it(`counts each rendered message apart from its number exactly as the whole line counts, with ${encoding}`, async () => {
      const tokenizer = await loadTokenizer(encoding);
      fc.assert(
        fc.property(fc.array(messageArb, { minLength: 1, maxLength: 8 }), fc.nat({ max: 20_000 }), (specs, offset) => {
          const messages: Message[] = specs.map((spec, i) =>
            spec.role === 'tool'
              ? toolResult(`t${i}`, `c${i}`, 'read_file', spec.long ? spec.text.repeat(400) : spec.text)
              : { id: `m${i}`, role: spec.role, content: [{ type: 'text', text: spec.long ? spec.text.repeat(400) : spec.text }] },
          );
          const counter = new MessageTokenCounter(tokenizer);
          const items = messages.map((message, i) => ({ message, position: offset + i }));
          const request = buildSummaryRequest({
            summary: base.summary,
            truncation: base.truncation,
            messages: items,
            directive,
            purpose: 'summary',
            memo,
          });
          assert.equal(
            countRequest(request, counter, memo),
            requestTokens(request, (value) => tokenizer.count(value)),
          );
          for (const { message, position } of items) {
            assert.equal(
              renderedMessageTokens(message, position, base.truncation, counter, memo),
              tokenizer.count(renderMessage(message, position, base.truncation, memo).content),
            );
          }
        }),
        { numRuns: 300 },
      );
    });
  }

  it('does not tokenize a rendered message again when it is numbered anew, and does when its limits change', async () => {
    const o200k = await loadTokenizer('o200k_base');
    const counted: string[] = [];
    const spy: TextTokenizer = { name: o200k.name, count: (value) => (counted.push(value), o200k.count(value)) };
    const counter = new MessageTokenCounter(spy);
    const long = toolResult('t1', 'c1', 'read_file', 'const answer = 42;\n'.repeat(300));
    const build = (offset: number, truncation = base.truncation) =>
      buildSummaryRequest({
        summary: base.summary,
        truncation,
        messages: [{ message: long, position: offset }],
        directive,
        purpose: 'summary',
        memo,
      });
    const first = countRequest(build(3), counter, memo);
    const longest = () => Math.max(...counted.map((text) => text.length));
    assert.ok(longest() > 1_000);
    counted.length = 0;
    assert.equal(countRequest(build(3), counter, memo), first);
    assert.equal(
      countRequest(build(5_000), counter, memo),
      requestTokens(build(5_000), (value) => o200k.count(value)),
    );
    assert.ok(longest() < 20, `only a number was tokenized, not ${longest()} characters`);
    countRequest(build(3, { ...base.truncation, resultChars: 500, hugeResultChars: 500 }), counter, memo);
    assert.ok(longest() > 500, 'tighter limits render another text, counted anew');
  });

  it('counts whole lines with the chars/4 estimate, which rounds up each count', () => {
    const counter = new MessageTokenCounter(charEstimator);
    const request = buildSummaryRequest({
      summary: base.summary,
      truncation: base.truncation,
      messages: positioned(conversation()),
      directive,
      purpose: 'summary',
      memo,
    });
    assert.equal(
      countRequest(request, counter, memo),
      requestTokens(request, (value) => charEstimator.count(value)),
    );
  });

  function conversation(): Message[] {
    return [
      user('u1', 'Build it'),
      assistant('a1', 'Reading.', { callId: 'c1', tool: 'read_file', input: { path: 'a.ts' } }),
      toolResult('t1', 'c1', 'read_file', 'abc'),
    ];
  }
});

describe("summary request: the template's optional sections", () => {
  it('adds Progress after Current State, and Preferences, Facts and Previous Discussion before Next Steps, when asked', () => {
    assert.deepEqual(summarySections(base.summary), SUMMARY_SECTIONS);
    const both = summarySections({ ...base.summary, progressSection: true, factsSections: true });
    assert.deepEqual(both, [
      'Original Task',
      'Completed Work',
      'Key Technical Decisions',
      'Current State',
      'Progress',
      'Pending Work',
      'Errors & Resolutions',
      'User Preferences and Constraints',
      'Preferences',
      'Facts',
      'Previous Discussion',
      'Next Steps',
    ]);
  });

  it('asks for the optional sections in the directive, with what each holds', () => {
    const plain = buildDirective(directive);
    assert.doesNotMatch(plain, /### Progress|### Facts/);
    const asked = buildDirective({ ...directive, summary: { ...base.summary, progressSection: true, factsSections: true } });
    assert.match(asked, /### Progress\n- Done: …\n- In Progress: …\n- Blocked: …/);
    assert.match(asked, /### Preferences\n.+\n### Facts\n.+\n### Previous Discussion\n.+\n### Next Steps/);
  });
});

describe('summary request: the short template of a small window', () => {
  it('asks for four sections, the optional ones left out, and a summary that fits a small window', () => {
    const summary = { ...base.summary, progressSection: true, factsSections: true };
    const short = buildDirective({ ...directive, summary, short: true });
    const headings = short.split('\n').filter((line) => line.startsWith('### '));
    assert.deepEqual(
      headings,
      SHORT_SUMMARY_SECTIONS.map((s) => `### ${s}`),
    );
    assert.match(short, /### Completed Work\n- What was done, file by file/);
    assert.ok(templateHeadings(summary, true).length < templateHeadings(summary, false).length / 2);
  });
});

describe('summary size: the target a window gives a summary', () => {
  const count = (value: string): number => charEstimator.count(value);

  it('never asks for less than the headings and 150 tokens, unless the setting asks for less', () => {
    for (const room of [1_500, 2_400, 3_900, 5_999, 9_600]) {
      const sized = sizeSummary(base, room, room + 1_000, count);
      const headings = count(templateHeadings(base.summary, sized.short));
      assert.equal(sized.short, room < 6_000, `${room}`);
      assert.ok(sized.targetFor(undefined) >= headings + SUMMARY_BODY_FLOOR, `${room}: ${sized.targetFor(undefined)}`);
      assert.ok(sized.targetFor({ tokens: 400 }) >= headings + SUMMARY_BODY_FLOOR, `${room}: with a long task`);
    }
    const asked = sizeSummary({ ...base, summary: { ...base.summary, targetTokens: 100 } }, 3_000, 4_096, count);
    assert.equal(asked.targetFor(undefined), 100, "the user's own target");
  });

  it('keeps the floor to a quarter of a tiny room', () => {
    const sized = sizeSummary(base, 400, 4_096, count);
    assert.equal(sized.targetFor(undefined), 100);
  });
});

describe('summary request: the keep list', () => {
  const decision = assistant(
    'a1',
    `We decided to use exponential backoff instead of fixed delays in src/retry/policy.ts:\n\`\`\`ts\n${'const delay = base * 2 ** attempt;\n'.repeat(3)}\`\`\``,
  );
  const bigResult = toolResult('t1', 'c1', 'read_file', 'r'.repeat(5_000));
  const call = assistant('a0', 'Reading.', { callId: 'c1', tool: 'read_file', input: { path: 'src/a.ts' } });
  const messages = positioned([user('u1', 'Go on.'), call, bigResult, decision]);
  const build = (importance: typeof base.importance | undefined, purpose: 'summary' | 'batch' = 'summary') =>
    buildSummaryRequest({
      summary: base.summary,
      truncation: base.truncation,
      messages,
      directive,
      purpose,
      memo,
      ...(importance ? { importance, total: 10 } : {}),
    });

  it('names the messages above the threshold in the directive, and none without importance settings', () => {
    assert.match(build(base.importance).messages.at(-1)!.content, /KEEP VERBATIM: \[#3\]\. These messages matter most/);
    assert.doesNotMatch(build(undefined).messages.at(-1)!.content, /KEEP VERBATIM/);
    assert.doesNotMatch(build({ ...base.importance, keepBudgetTokens: 0 }).messages.at(-1)!.content, /KEEP VERBATIM/);
  });

  it('sends a kept tool result uncut in a whole summary, and cut as usual in a batch', () => {
    const keepResults = { ...base.importance, keepToolResults: true, keepBudgetTokens: 4_000 };
    const whole = build(keepResults);
    assert.match(whole.messages.at(-1)!.content, /KEEP VERBATIM: \[#1\], \[#2\], \[#3\]/);
    assert.ok(whole.messages[2]!.content.includes('r'.repeat(5_000)), 'the result is whole');
    const batch = build(keepResults, 'batch');
    assert.ok(!batch.messages[2]!.content.includes('r'.repeat(5_000)), 'a batch keeps its measured limits');
    assert.match(batch.messages[2]!.content, /truncated: \d+ more characters/);
    const ordinary = build(base.importance);
    assert.ok(!ordinary.messages[2]!.content.includes('r'.repeat(5_000)), 'a result off the list is cut');
  });
});
