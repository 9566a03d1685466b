import assert from 'node:assert/strict';
import fc from 'fast-check';
import { EngineMemo } from '../../../src/core/engine-memo';
import { computeCompaction, type CompactionDeps } from '../../../src/core/compaction';
import { DEFAULT_CONFIG, type CompactionConfig } from '../../../src/core/config';
import { EMPTY_LEDGER } from '../../../src/core/file-ledger';
import { modelView, SUMMARY_PREFIX, type LogRecord } from '../../../src/core/history';
import type { Message, Part } from '../../../src/core/messages';
import { estimatingCounter, FakeClock, idGenerator, RecordingSummarizer, templateSummary } from './fixtures';

/**
 * Random histories (users, assistants with and without tool calls, parallel calls, tool results,
 * system messages, earlier summaries) through selection and compaction, checking the invariants
 * a provider and a user rely on.
 */

interface StepShape {
  text: number;
  calls: number;
  resultsPerMessage: boolean;
  resultSize: number;
}
interface TurnShape {
  user: number;
  steps: StepShape[];
  answer: number;
  systemAfter: boolean;
}

const stepArb = fc.record({
  text: fc.nat({ max: 600 }),
  calls: fc.nat({ max: 3 }),
  resultsPerMessage: fc.boolean(),
  resultSize: fc.nat({ max: 5_000 }),
});
const turnArb = fc.record({
  user: fc.integer({ min: 1, max: 800 }),
  steps: fc.array(stepArb, { maxLength: 5 }),
  answer: fc.nat({ max: 600 }),
  systemAfter: fc.boolean(),
});
const historyArb = fc.record({
  leadingSystem: fc.boolean(),
  previousSummary: fc.boolean(),
  turns: fc.array(turnArb, { minLength: 1, maxLength: 8 }),
  // The last step of the last turn may still await its tool results.
  pendingAtEnd: fc.boolean(),
});
const configArb = fc.record({
  mode: fc.constantFrom('tokens' as const, 'messages' as const),
  tokens: fc.integer({ min: 0, max: 6_000 }),
  messages: fc.integer({ min: 0, max: 12 }),
  limit: fc.constantFrom(0, 4_000, 16_000, 128_000),
  reason: fc.constantFrom('threshold' as const, 'overflow' as const, 'manual' as const),
  keepSystemMessages: fc.boolean(),
  fail: fc.boolean(),
});

type HistoryShape = typeof historyArb extends fc.Arbitrary<infer T> ? T : never;

function build(shape: HistoryShape): Message[] {
  const out: Message[] = [];
  let n = 0;
  const id = (): string => `m${n++}`;
  const textOf = (size: number): Part[] => (size > 0 ? [{ type: 'text', text: 'w '.repeat(Math.ceil(size / 2)).slice(0, size) }] : []);
  if (shape.leadingSystem) out.push({ id: id(), role: 'system', content: textOf(200) });
  if (shape.previousSummary) out.push({ id: id(), role: 'user', content: [{ type: 'text', text: `${SUMMARY_PREFIX}\n\nearlier work` }] });
  shape.turns.forEach((t: TurnShape, ti: number) => {
    out.push({ id: id(), role: 'user', content: textOf(t.user) });
    t.steps.forEach((step, si) => {
      const calls = Array.from({ length: step.calls }, (_, k) => ({
        type: 'tool-call' as const,
        toolCallId: `c${ti}-${si}-${k}`,
        toolName: 'read_file',
        input: { path: `f${k}.ts` },
      }));
      const content = [...textOf(step.text), ...calls];
      if (content.length === 0) content.push({ type: 'text', text: '…' });
      out.push({ id: id(), role: 'assistant', content });
      const isLast = ti === shape.turns.length - 1 && si === t.steps.length - 1;
      if (isLast && shape.pendingAtEnd) return;
      const results = calls.map((c) => ({
        type: 'tool-result' as const,
        toolCallId: c.toolCallId,
        toolName: c.toolName,
        output: 'r'.repeat(step.resultSize),
      }));
      if (results.length === 0) return;
      if (step.resultsPerMessage) for (const r of results) out.push({ id: id(), role: 'tool', content: [r] });
      else out.push({ id: id(), role: 'tool', content: results });
    });
    if (t.answer > 0) out.push({ id: id(), role: 'assistant', content: textOf(t.answer) });
    if (t.systemAfter) out.push({ id: id(), role: 'system', content: textOf(50) });
  });
  return out;
}

function orphanProblems(view: readonly Message[], original: readonly Message[]): string[] {
  const problems: string[] = [];
  const callsInView = new Set<string>();
  const resultsInView = new Set<string>();
  const resultsAnywhere = new Set<string>();
  for (const m of original) for (const p of m.content) if (p.type === 'tool-result') resultsAnywhere.add(p.toolCallId);
  for (const m of view) {
    for (const p of m.content) {
      if (p.type === 'tool-call') callsInView.add(p.toolCallId);
      if (p.type === 'tool-result') {
        if (!callsInView.has(p.toolCallId)) problems.push(`result ${p.toolCallId} before or without its call`);
        resultsInView.add(p.toolCallId);
      }
    }
  }
  for (const id of callsInView) if (resultsAnywhere.has(id) && !resultsInView.has(id)) problems.push(`call ${id} without its result`);
  return problems;
}

describe('compaction properties over 10,000 random histories', function () {
  this.timeout(300_000);

  it('never orphans tool traffic, keeps system messages and order, lists every removal, shows pruned outputs as stubs and never grows the view', async () => {
    let compacted = 0;
    let prunedOnly = 0;
    await fc.assert(
      fc.asyncProperty(historyArb, configArb, async (shape, options) => {
        const messages = build(shape);
        const log: LogRecord[] = messages.map((message) => ({ type: 'message', message }));
        const config: CompactionConfig = {
          ...DEFAULT_CONFIG,
          keepRecent: { ...DEFAULT_CONFIG.keepRecent, mode: options.mode, tokens: options.tokens, messages: options.messages },
          keepSystemMessages: options.keepSystemMessages,
          minMessages: 0,
        };
        const summarizer = new RecordingSummarizer(() =>
          options.fail ? Promise.reject(new Error('down')) : { text: templateSummary('A short summary of the work so far, for the test.') },
        );
        const deps: CompactionDeps = {
          counter: estimatingCounter(),
          summarizer,
          clock: new FakeClock(),
          newId: idGenerator(),
          memo: new EngineMemo(),
        };
        const before = modelView(log, new EngineMemo());
        const outcome = await computeCompaction(
          {
            log,
            reason: options.reason,
            config,
            window: { limit: options.limit, source: options.limit ? 'model' : 'unknown' },
            ledger: EMPTY_LEDGER,
          },
          deps,
        );
        assert.notEqual(outcome.status, 'cancelled');
        if (outcome.status !== 'compacted') return;
        compacted++;
        const { entry, pruning, view } = outcome.compaction;
        if (!entry) prunedOnly++;

        assert.deepEqual(orphanProblems(view, messages), []);

        if (options.keepSystemMessages) {
          for (const m of before)
            if (m.role === 'system')
              assert.ok(
                view.some((v) => v.id === m.id),
                `system ${m.id} kept`,
              );
        }

        // Order: the non-summary messages of the new view appear in the same order as before.
        const position = new Map(before.map((m, i) => [m.id, i] as const));
        const kept = view.filter((m) => !m.summaryOf);
        for (let i = 1; i < kept.length; i++) assert.ok(position.get(kept[i - 1]!.id)! < position.get(kept[i]!.id)!, 'order preserved');

        // Every message that left the view is listed in the entry, and nothing listed is still shown.
        const shown = new Set(view.map((m) => m.id));
        const listed = new Set(entry?.compactedMessageIds ?? []);
        for (const m of before) {
          const isOldSummary = m.content[0]?.type === 'text' && m.content[0].text.startsWith(SUMMARY_PREFIX);
          if (!shown.has(m.id) && !isOldSummary) assert.ok(listed.has(m.id), `${m.id} removed but not listed`);
        }
        for (const id of listed) assert.ok(!shown.has(id), `${id} listed but still shown`);

        const { tokensBefore, tokensAfter } = outcome.compaction;
        assert.equal(tokensBefore, deps.counter.countMessages(before));
        assert.ok(tokensAfter < tokensBefore, `view grew: ${tokensBefore} → ${tokensAfter}`);
        assert.equal(tokensAfter, deps.counter.countMessages(view));
        if (entry) assert.equal(entry.tokensAfter, tokensAfter);
        assert.equal(view.filter((m) => m.summaryOf).length, entry ? 1 : 0);
        // A pruned output is shown as its stub, unless the summary took its message out of the view.
        for (const o of pruning?.outputs ?? []) {
          const message = view.find((m) => m.id === o.messageId);
          if (!message) assert.ok(listed.has(o.messageId), `${o.messageId} pruned, then gone but not summarized`);
          const part = message?.content.find((p) => p.type === 'tool-result' && p.toolCallId === o.toolCallId);
          if (part) assert.equal(part.type === 'tool-result' && part.output, o.stub);
        }
      }),
      { numRuns: 10_000 },
    );
    // The invariants mean little unless most histories were really compacted.
    assert.ok(compacted >= 5_000, `only ${compacted} of 10,000 histories were compacted`);
    // Histories re-read the same files: pruning alone is often enough for an automatic compaction.
    assert.ok(prunedOnly >= 1_000, `only ${prunedOnly} compactions by pruning alone`);
  });
});
