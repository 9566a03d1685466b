import assert from 'node:assert/strict';
import { assessBudget } from '../../../src/core/budget';
import { DEFAULT_CONFIG } from '../../../src/core/config';
import type { PruningEntry } from '../../../src/core/pruning';
import { compactNumber, gaugePresentation, noConversationPresentation, pruningPhrase, type GaugeState } from '../../../src/app/report/gauge-text';
import type { ReportedUsage } from '../../../src/core/log';
import { callCost } from '../../../src/core/usage-cost';
import { usageReport } from '../../../src/core/usage-report';
import { compactionEntry } from '../fixtures/compaction-entry';

const breakdown = { requestOverhead: 3_000, summary: 1_000, messages: 50_000, toolResults: 27_000, outputReserve: 4_000 };
const state = (used: number, limit = 128_000, extra: Partial<GaugeState> = {}): GaugeState => ({
  assessment: assessBudget(
    used,
    { limit, source: limit ? 'model' : 'unknown', ...(limit ? {} : { reason: 'unknown model' }) },
    DEFAULT_CONFIG.trigger,
  ),
  breakdown,
  source: 'local',
  now: 1_000_000,
  ...extra,
});

describe('gauge text and levels', () => {
  it('reads "63% · 81k/128k" for 81,000 of 128,000 tokens', () => {
    assert.equal(gaugePresentation(state(81_000)).text, '$(pulse) 63% · 81k/128k');
  });

  it('has no background when ok, warning from 75%, error from 90% and when over', () => {
    assert.equal(gaugePresentation(state(95_000)).background, 'none');
    assert.equal(gaugePresentation(state(96_000)).background, 'warning');
    assert.equal(gaugePresentation(state(115_200)).background, 'error');
    assert.equal(gaugePresentation(state(130_000)).background, 'error');
  });

  it('warns from the warning level on, saying in the tooltip where compaction starts', () => {
    const below = gaugePresentation(state(95_999));
    const warning = gaugePresentation(state(96_000));
    assert.equal(below.background, 'none');
    assert.match(below.tooltipMarkdown, /^OK: 95,999 of 128,000 tokens \(75%\); warning at 96,000, compaction at 115,200\.$/m);
    assert.equal(warning.background, 'warning');
    assert.match(warning.accessibilityLabel, /, warning$/);
    assert.match(warning.tooltipMarkdown, /^Warning: 96,000 of 128,000 tokens \(75%\); compaction starts at 115,200 \(90% of the window\)\.$/m);
  });

  it('labels itself for screen readers starting with "Longrun context"', () => {
    const label = gaugePresentation(state(96_000)).accessibilityLabel;
    assert.match(label, /^Longrun context 75% full: 96,000 of 128,000 tokens, warning$/);
  });

  it('breaks the window down in the tooltip, with what is free', () => {
    const tip = gaugePresentation(state(81_000)).tooltipMarkdown;
    assert.match(tip, /\| Tool results \| 27,000 \|/);
    assert.match(tip, /\| Reserved for output \| 4,000 \|/);
    // The budget's limit is what the conversation may fill: the reserve is outside it.
    assert.match(tip, /\| Free \| 47,000 \|/);
    assert.match(tip, /\| \*\*Window\*\* \| \*\*132,000\*\* \|/);
    assert.match(tip, /No compaction yet/);
  });

  it('says how large the whole window is, where that came from, and what is kept for the answer', () => {
    const small = {
      ...breakdown,
      outputReserve: 1_500,
      window: { limit: 6_000, origin: "from the server's model list (context_length)", assumed: false },
    };
    const tip = gaugePresentation({ ...state(3_300, 4_500), breakdown: small }).tooltipMarkdown;
    assert.match(
      tip,
      /Window 6,000 tokens, from the server's model list \\\(context\\_length\\\); 1,500 of it kept for the answer, 4,500 for the conversation\./,
    );
    assert.match(tip, /\| Reserved for output \| 1,500 \|/);
    assert.match(tip, /\| \*\*Window\*\* \| \*\*6,000\*\* \|/);
    const assumed = gaugePresentation({
      ...state(3_300, 28_672),
      breakdown: { ...small, window: { limit: 32_768, origin: 'assumed: set it', assumed: true } },
    }).tooltipMarkdown;
    assert.match(assumed, /\$\(warning\) Window 32,768 tokens, assumed: set it/);
  });

  it('describes the last compaction: when, before → after, reason', () => {
    const entry = compactionEntry({
      id: 'e',
      round: 3,
      reason: 'threshold',
      summary: '',
      tokensBefore: 96_000,
      tokensAfter: 12_000,
      model: 'm',
      durationMs: 1,
      createdAt: 1_000_000 - 5 * 60_000,
    });
    const tip = gaugePresentation(state(20_000, 128_000, { lastCompaction: entry })).tooltipMarkdown;
    assert.match(tip, /Last compaction: round 3, 5 min ago \(threshold\): 96k → 12k tokens/);
  });

  it('says what each tier of the last compaction freed: a pruning alone, or a pruning then a summary', () => {
    const outputs = [
      ...Array.from({ length: 6 }, (_, i) => ({
        messageId: `t${i}`,
        toolCallId: `c${i}`,
        toolName: 'read_file',
        kind: 'duplicate' as const,
        stub: 's',
        tokens: 2_000,
      })),
      { messageId: 't9', toolCallId: 'c9', toolName: 'read_file', kind: 'stale' as const, stub: 's', tokens: 400 },
    ];
    const pruning: PruningEntry = {
      id: 'p',
      reason: 'threshold',
      outputs,
      tokensBefore: 117_000,
      tokensAfter: 104_600,
      createdAt: 1_000_000 - 2 * 60_000,
    };
    assert.equal(pruningPhrase(pruning), 'Pruned 7 superseded tool outputs (−12,400 tokens)');
    assert.equal(
      pruningPhrase({ ...pruning, outputs: [...outputs, { ...outputs[0]!, kind: 'old' }] }),
      'Pruned 7 superseded and 1 old large tool output (−12,400 tokens)',
    );
    const cut = { ...outputs[0]!, kind: 'truncated' as const };
    assert.equal(
      pruningPhrase({ ...pruning, outputs: [...outputs, cut, cut] }),
      'Pruned 7 superseded tool outputs, cut 2 large tool outputs to fit the window (−12,400 tokens)',
    );
    assert.equal(pruningPhrase({ ...pruning, outputs: [cut] }), 'Cut 1 large tool output to fit the window (−12,400 tokens)');
    const written = { ...outputs[0]!, toolName: 'create_file', kind: 'written' as const };
    assert.equal(
      pruningPhrase({ ...pruning, outputs: [...outputs, written, cut] }),
      'Pruned 7 superseded tool outputs, stubbed the content of 1 file write, cut 1 large tool output to fit the window (−12,400 tokens)',
    );
    assert.equal(pruningPhrase({ ...pruning, outputs: [written, written] }), 'Stubbed the content of 2 file writes (−12,400 tokens)');
    const alone = gaugePresentation(state(104_600, 128_000, { lastPruning: pruning })).tooltipMarkdown;
    assert.match(
      alone,
      /Last compaction: 2 min ago \(threshold\): pruned 7 superseded tool outputs \(−12,400 tokens\); no summary needed: 117k → 105k tokens\./,
    );
    const entry = compactionEntry({
      id: 'e',
      round: 2,
      reason: 'threshold',
      summary: '',
      tokensBefore: 117_000,
      tokensAfter: 20_000,
      model: 'm',
      durationMs: 1,
      createdAt: 1_000_000 - 60_000,
      pruningId: 'p',
    });
    const both = gaugePresentation(state(20_000, 128_000, { lastCompaction: entry, lastPruning: pruning })).tooltipMarkdown;
    assert.match(
      both,
      /Last compaction: round 2, 1 min ago \(threshold\): pruned 7 superseded tool outputs \(−12,400 tokens\), then summarized: 117k → 20k tokens\./,
    );
  });

  it('shows the count without a percentage when the window is unknown', () => {
    const p = gaugePresentation(state(12_345, 0));
    assert.equal(p.text, '$(pulse) 12k tokens');
    assert.match(p.tooltipMarkdown, /Automatic compaction is off/);
  });

  it('says "no conversation" when there is none', () => {
    assert.equal(noConversationPresentation().text, '$(pulse) no conversation');
  });

  it('abbreviates numbers', () => {
    assert.deepEqual([compactNumber(950), compactNumber(1_500), compactNumber(81_000), compactNumber(1_048_576)], ['950', '1.5k', '81k', '1.05M']);
  });
});

describe('gauge usage and cost', () => {
  const reported = (over: Partial<ReportedUsage>): ReportedUsage => ({
    anchorMessageId: 'a',
    inputTokens: 10_000,
    outputTokens: 500,
    basis: null,
    provider: 'anthropic',
    cacheReadTokens: 8_000,
    cacheWriteTokens: 1_500,
    ...over,
  });
  const sonnet = (u: ReportedUsage) =>
    callCost(
      { input: u.inputTokens, cacheRead: u.cacheReadTokens ?? 0, cacheWrite: u.cacheWriteTokens ?? 0, output: u.outputTokens },
      { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
      'anthropic',
    );

  it("shows what the subagents cost on a line of its own, with their cache reads and writes, counted in the conversation's totals only", () => {
    const report = usageReport(
      [
        reported({}),
        reported({
          purpose: 'subagent',
          subagent: 's1',
          basis: null,
          inputTokens: 4_000,
          cacheReadTokens: 3_000,
          cacheWriteTokens: 500,
          outputTokens: 100,
        }),
        reported({
          purpose: 'subagent',
          subagent: 's1',
          basis: null,
          inputTokens: 4_000,
          cacheReadTokens: 3_000,
          cacheWriteTokens: 500,
          outputTokens: 100,
        }),
      ],
      sonnet,
    );
    const tip = gaugePresentation(state(81_000, 128_000, { usage: { report } })).tooltipMarkdown;
    assert.match(tip, /^\| Input tokens \| 10,000 \| 18,000 \|$/m, 'the last request is the agent’s; the conversation counts theirs');
    // Each: 500 uncached × $3, 3,000 read × $0.30, 500 written × $3.75, 100 out × $15 per million = $0.005775; both $0.01155.
    assert.match(tip, /Subagents: 2 requests \(8,000 input tokens, 6,000 read from the cache, 1,000 written; 200 output\), \$0\.012\./);
    const none = usageReport([reported({})], sonnet);
    assert.doesNotMatch(gaugePresentation(state(81_000, 128_000, { usage: { report: none } })).tooltipMarkdown, /Subagents/);
  });

  it('shows the last request and the conversation by kind of token, the cache hit share, the cost and what compactions cost', () => {
    const report = usageReport(
      [
        reported({ cacheReadTokens: 0, cacheWriteTokens: 9_500 }),
        reported({ purpose: 'summary', basis: '(summary request)' }),
        reported({ basis: 'c1', cacheReadTokens: 2_000, cacheWriteTokens: 7_500 }),
      ],
      sonnet,
    );
    const tip = gaugePresentation(state(81_000, 128_000, { usage: { report } })).tooltipMarkdown;
    assert.match(tip, /^\| Input tokens \| 10,000 \| 30,000 \|$/m);
    assert.match(tip, /^\| · read from the cache \| 2,000 \| 10,000 \|$/m);
    assert.match(tip, /^\| · written to the cache \| 7,500 \| 18,500 \|$/m);
    assert.match(tip, /^\| Cache hit share \| 20% \| 33\.3% \|$/m);
    // 0.0015 + 0.0006 + 0.028125 + 0.0075 for the last; with the first (0.044625) and the summary (0.017025).
    assert.match(tip, /^\| Cost \| \$0\.038 \| \$0\.099 \|$/m);
    assert.match(
      tip,
      /Compactions cost 1 summary request \(10,500 tokens, \$0\.017\) and the cache written again after them \(7,500 tokens, \$0\.028\)\./,
    );
    const dated = gaugePresentation(state(81_000, 128_000, { usage: { report, catalogueDate: '2026-09-23' } })).tooltipMarkdown;
    assert.match(dated, /^\| Cost \(catalogue of 2026-09-23\) \| \$0\.038 \| \$0\.099 \|$/m, 'the day of the prices');
  });

  it('shows tokens and no made-up figure for a model without a price, and says so for VS Code’s models', () => {
    const unpriced = usageReport([reported({ provider: 'openai-compatible' })], () => undefined);
    const tip = gaugePresentation(state(81_000, 128_000, { usage: { report: unpriced } })).tooltipMarkdown;
    assert.match(tip, /^\| Cost \| no price known \| no price known \|$/m);
    assert.match(tip, /A model without a known price shows its tokens only: set its prices in longrun\.models\.overrides\./);
    assert.match(tip, /^\| Input tokens \| 10,000 \| 10,000 \|$/m, 'its tokens are still shown');
    assert.doesNotMatch(tip, /\$\d/);
    const editor = usageReport(
      [reported({ provider: undefined, estimated: true, cacheReadTokens: undefined, cacheWriteTokens: undefined })],
      () => undefined,
    );
    const vscodeTip = gaugePresentation(state(81_000, 128_000, { usage: { report: editor, editorModel: true } })).tooltipMarkdown;
    assert.match(vscodeTip, /VS Code's models report no token usage/);
    assert.doesNotMatch(vscodeTip, /\| Cost \|/);
    const silent = gaugePresentation(
      state(81_000, 128_000, { usage: { report: usageReport([], () => undefined), unreported: true } }),
    ).tooltipMarkdown;
    assert.match(silent, /The model's server reported no token usage: Longrun counts the window itself, and no cost or cache share is known\./);
  });

  it('says when the cache has expired and what the next request re-sends at full price', () => {
    const report = usageReport([reported({})], sonnet);
    const cache = { state: { kind: 'expired' as const, since: 1_000_000 - 12 * 60_000 }, nextRequestTokens: 81_234, now: 1_000_000 };
    const presentation = gaugePresentation(state(81_000, 128_000, { usage: { report, cache } }));
    assert.match(presentation.tooltipMarkdown, /^Cache expired 12 min ago: the next request re-sends ~81,234 tokens at full price\.$/m);
    assert.match(presentation.accessibilityLabel, /Cache expired 12 min ago/);
    const warm = gaugePresentation(state(81_000, 128_000, { usage: { report, cache: { ...cache, state: { kind: 'warm', expiresAt: 2_000_000 } } } }));
    assert.doesNotMatch(warm.tooltipMarkdown, /Cache expired/);
  });
});
