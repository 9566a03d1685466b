import assert from 'node:assert/strict';
import fc from 'fast-check';
import { EngineMemo } from '../../../src/core/engine-memo';
import { compactionEntry } from '../fixtures/compaction-entry';
import { currentBasis, LiveModelView, modelView, summaryMessage, type CompactionEntry, type LogRecord } from '../../../src/core/history';
import { MessageTokenCounter } from '../../../src/core/message-tokens';
import type { Message, Part } from '../../../src/core/messages';
import { charEstimator, type TextTokenizer } from '../../../src/core/tokenizer';
import { countContext, type ReportedUsage } from '../../../src/core/usage-calibration';
import { ViewTokens } from '../../../src/core/view-tokens';

/**
 * The live view against `modelView`: random logs grow record by record (messages with tool calls
 * answered, half answered or answered twice, results without calls, repeated ids, compactions whose
 * first kept message is present, missing or only appended later, prunings of tool outputs (some of
 * them compacted since, some named twice), undos of compactions and prunings in force and of
 * others), and after every update the live view is what `modelView` derives from the whole log, and
 * the running counts are what counting that view gives.
 */

type Op =
  | { readonly kind: 'user'; readonly words: number }
  | { readonly kind: 'assistant'; readonly words: number; readonly calls: number }
  | { readonly kind: 'tool'; readonly answer: number; readonly stray: boolean }
  | { readonly kind: 'repeat'; readonly pick: number }
  | {
      readonly kind: 'compact';
      readonly from: number;
      readonly to: number;
      readonly kept: number;
      readonly keptKind: 'present' | 'none' | 'later' | 'unknown';
      readonly role: 'user' | 'assistant';
    }
  | { readonly kind: 'prune'; readonly picks: readonly number[] }
  | { readonly kind: 'undo'; readonly pick: number; readonly active: boolean }
  | { readonly kind: 'usage'; readonly pick: number }
  | { readonly kind: 'update' };

const nat = (max: number) => fc.nat({ max });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('user' as const), words: nat(40) }) },
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('assistant' as const), words: nat(40), calls: nat(3) }) },
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('tool' as const), answer: nat(3), stray: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('repeat' as const), pick: nat(1_000) }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('compact' as const),
      from: nat(1_000),
      to: nat(1_000),
      kept: nat(1_000),
      keptKind: fc.constantFrom('present' as const, 'none' as const, 'later' as const, 'unknown' as const),
      role: fc.constantFrom('user' as const, 'assistant' as const),
    }),
  },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('prune' as const), picks: fc.array(nat(1_000), { minLength: 1, maxLength: 4 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('undo' as const), pick: nat(1_000), active: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('usage' as const), pick: nat(1_000) }) },
  { weight: 3, arbitrary: fc.constant({ kind: 'update' as const }) },
);

/** Counts words, so counts differ from message to message and from the other tokenizer. */
const words: TextTokenizer = { name: 'words', count: (value) => (value.match(/\S+/g) ?? []).length };

function entry(id: string, compacted: readonly string[], firstKept: string | null, role: 'user' | 'assistant'): CompactionEntry {
  return compactionEntry({
    id,
    summary: `summary ${id} of ${compacted.length} messages`,
    firstKeptMessageId: firstKept,
    compactedMessageIds: compacted,
    summaryRole: role,
  });
}

/** Replays operations as log records, keeping what the generators need to pick from. */
class LogBuilder {
  readonly log: LogRecord[] = [];
  private n = 0;
  private entries = 0;
  private readonly messages: Message[] = [];
  private openCalls: { id: string; tool: string }[] = [];
  private readonly entryIds: string[] = [];
  /** Ids named as first kept by a compaction before any message had them. */
  private readonly awaited: string[] = [];

  apply(op: Op): void {
    switch (op.kind) {
      case 'user':
        return this.message({
          id: this.awaited.shift() ?? `m${++this.n}`,
          role: 'user',
          content: [{ type: 'text', text: 'ask '.repeat(op.words + 1) }],
        });
      case 'assistant': {
        const id = `m${++this.n}`;
        const calls = Array.from({ length: op.calls }, (_, k) => ({ id: `${id}-c${k}`, tool: `tool${k}` }));
        const content: Part[] = [{ type: 'text', text: 'answer '.repeat(op.words) }];
        for (const call of calls) content.push({ type: 'tool-call', toolCallId: call.id, toolName: call.tool, input: { n: op.words } });
        this.openCalls = calls;
        return this.message({ id, role: 'assistant', content });
      }
      case 'tool': {
        const answered = this.openCalls.slice(0, op.answer);
        const content: Part[] = answered.map((c) => ({ type: 'tool-result', toolCallId: c.id, toolName: c.tool, output: `out ${c.id} `.repeat(3) }));
        if (op.stray || content.length === 0)
          content.push({ type: 'tool-result', toolCallId: `stray${this.n}`, toolName: 'lost', output: 'nobody asked' });
        return this.message({ id: `m${++this.n}`, role: 'tool', content });
      }
      case 'repeat': {
        // The same message object again (an id repeated by a damaged log).
        const again = this.messages[op.pick % Math.max(1, this.messages.length)];
        if (again) this.log.push({ type: 'message', message: again });
        return;
      }
      case 'compact': {
        const ids = this.messages.map((m) => m.id);
        const [a, b] = [op.from % (ids.length + 1), op.to % (ids.length + 1)].sort((x, y) => x - y) as [number, number];
        let firstKept: string | null = null;
        if (op.keptKind === 'present' && ids.length > 0) firstKept = ids[op.kept % ids.length]!;
        if (op.keptKind === 'unknown') firstKept = `gone${op.kept}`;
        if (op.keptKind === 'later') {
          firstKept = `late${++this.n}`;
          this.awaited.push(firstKept);
        }
        const id = `e${++this.entries}`;
        this.entryIds.push(id);
        this.log.push({ type: 'compaction', entry: entry(id, ids.slice(a, b), firstKept, op.role) });
        return;
      }
      case 'prune': {
        // Outputs of any tool message, whether still in the view or not, now and then one named twice.
        const results = this.messages.flatMap((m) =>
          m.content.flatMap((p) => (p.type === 'tool-result' ? [{ messageId: m.id, toolCallId: p.toolCallId, toolName: p.toolName }] : [])),
        );
        if (results.length === 0) return;
        // Mostly outputs the view shows (random ones were mostly compacted already, or strays the
        // view leaves out), now and then any output.
        const shown = new Set(
          modelView(this.log, new EngineMemo()).flatMap((m) =>
            m.content.flatMap((p) => (p.type === 'tool-result' ? [`${m.id}/${p.toolCallId}`] : [])),
          ),
        );
        const visible = results.filter((r) => shown.has(`${r.messageId}/${r.toolCallId}`));
        const outputs = op.picks.map((pick, k) => {
          const from = visible.length > 0 && pick % 4 !== 0 ? visible : results;
          const r = from[pick % from.length]!;
          return { ...r, kind: 'duplicate' as const, stub: `[pruned ${r.toolCallId}${' x'.repeat(k)}]`, tokens: 9 };
        });
        const id = `e${++this.entries}`;
        this.entryIds.push(id);
        this.log.push({ type: 'pruning', entry: { id, reason: 'threshold', outputs, tokensBefore: 0, tokensAfter: 0, createdAt: 0 } });
        return;
      }
      case 'undo': {
        const id = op.active ? this.entryIds.at(-1 - (op.pick % Math.max(1, this.entryIds.length))) : `e${op.pick}`;
        this.log.push({ type: 'undo', entryId: id ?? 'none', at: 0 });
        return;
      }
      case 'usage': {
        const anchor = this.messages[op.pick % Math.max(1, this.messages.length)];
        this.log.push({ type: 'usage', usage: { anchorMessageId: anchor?.id ?? 'none', inputTokens: 100, outputTokens: 10, basis: null } });
        return;
      }
      case 'update':
        return;
    }
  }

  private message(message: Message): void {
    this.messages.push(message);
    this.log.push({ type: 'message', message });
  }
}

/** The local count of the whole view after each message with this id, as `countContext` works it out. */
function afterFromScratch(view: readonly Message[], counter: MessageTokenCounter, id: string): number | undefined {
  const usage: ReportedUsage = { anchorMessageId: id, inputTokens: 0, outputTokens: 0, basis: null };
  const count = countContext(view, counter, usage, null);
  return count.source === 'provider+local' ? count.sinceReport : undefined;
}

describe('the live view of a growing log', () => {
  it('is what modelView derives from the whole log after any appends, compactions, prunings and undos, and so are its counts', () => {
    let compared = 0;
    let withSummary = 0;
    let withInterrupted = 0;
    let withStub = 0;
    fc.assert(
      fc.property(fc.array(opArb, { minLength: 1, maxLength: 60, size: 'medium' }), fc.boolean(), (ops, switchCounters) => {
        const builder = new LogBuilder();
        const memo = new EngineMemo();
        const live = new LiveModelView(memo);
        const tokens = new ViewTokens();
        const counters = [new MessageTokenCounter(words), new MessageTokenCounter(charEstimator)];
        for (const [index, op] of ops.entries()) {
          builder.apply(op);
          // Several records may arrive between two looks, as when a step and its results land together.
          if (op.kind !== 'update' && index !== ops.length - 1) continue;
          live.update(builder.log);
          const expected = modelView(builder.log, memo);
          const actual = live.messages();
          assert.deepEqual(actual, expected);
          assert.equal(live.activeSteps().at(-1)?.entry.id ?? null, currentBasis(builder.log), 'the step in force last');
          // Messages the view shows as logged are the log's own objects, not copies.
          const logged = new Set(builder.log.flatMap((r) => (r.type === 'message' ? [r.message] : [])));
          expected.forEach((m, i) => {
            if (logged.has(m)) assert.equal(actual[i], m, `message ${m.id} is the log's object`);
          });
          const counter = counters[switchCounters ? index % 2 : 0]!;
          tokens.update(live, counter);
          assert.equal(tokens.total(), counter.countMessages(expected));
          for (const id of new Set([...expected.map((m) => m.id), 'nowhere']))
            assert.equal(tokens.after(id), afterFromScratch(expected, counter, id), `after ${id}`);
          const parts = { summary: 0, toolResults: 0, system: 0, messages: 0 };
          for (const m of expected) {
            const n = counter.countMessage(m);
            if (m.summaryOf !== undefined) parts.summary += n;
            else if (m.role === 'tool') parts.toolResults += n;
            else if (m.role === 'system') parts.system += n;
            else parts.messages += n;
          }
          assert.deepEqual(tokens.parts(), parts);
          compared++;
          if (expected.some((m) => m.summaryOf !== undefined)) withSummary++;
          if (expected.some((m) => m.id.startsWith('interrupted:'))) withInterrupted++;
          if (expected.some((m) => m.content.some((p) => p.type === 'tool-result' && String(p.output).startsWith('[pruned')))) withStub++;
        }
      }),
      { numRuns: 2_000 },
    );
    // The runs met what this test is about, often.
    assert.ok(
      withSummary > 500 && withInterrupted > 500 && withStub > 500,
      `${compared} views, ${withSummary} with a summary, ${withInterrupted} with an interrupted result, ${withStub} with a pruned output`,
    );
  });

  it('takes a log that was replaced by another array from its start', () => {
    const a: Message = { id: 'a', role: 'user', content: [{ type: 'text', text: 'first' }] };
    const b: Message = { id: 'b', role: 'user', content: [{ type: 'text', text: 'second' }] };
    const live = new LiveModelView(new EngineMemo());
    live.update([{ type: 'message', message: a }]);
    live.update([{ type: 'message', message: b }]);
    assert.deepEqual(live.messages(), [b]);
  });

  it('gives the view a pruning and a compaction appended at the end would make, without taking them in', () => {
    let given = 0;
    let compactions = 0;
    fc.assert(
      fc.property(
        fc.array(opArb, { minLength: 1, maxLength: 60, size: 'medium' }),
        fc.array(fc.nat(), { minLength: 1, maxLength: 3 }),
        (ops, picks) => {
          const builder = new LogBuilder();
          for (const op of ops) builder.apply(op);
          const memo = new EngineMemo();
          const live = new LiveModelView(memo);
          live.update(builder.log);
          const before = live.messages();
          // The steps a compaction appends: a pruning of outputs the view shows, then a summary of
          // the messages before one it keeps.
          const view = before.filter((m) => m.summaryOf === undefined && !m.id.startsWith('interrupted:'));
          const steps: LogRecord[] = [];
          const results = view.flatMap((m) =>
            m.content.flatMap((p) => (p.type === 'tool-result' ? [{ messageId: m.id, toolCallId: p.toolCallId, toolName: p.toolName }] : [])),
          );
          if (results.length > 0) {
            const outputs = picks.map((pick) => ({
              ...results[pick % results.length]!,
              kind: 'duplicate' as const,
              stub: `[pruned ${pick}]`,
              tokens: 9,
            }));
            steps.push({ type: 'pruning', entry: { id: 'p-end', reason: 'threshold', outputs, tokensBefore: 0, tokensAfter: 0, createdAt: 0 } });
          }
          if (view.length > 1) {
            const kept = picks[0]! % view.length;
            steps.push({
              type: 'compaction',
              entry: entry(
                'c-end',
                view.slice(0, kept).map((m) => m.id),
                view[kept]!.id,
                'user',
              ),
            });
          }
          const after = live.after(steps);
          assert.deepEqual(live.messages(), before, 'the view is as it was');
          const expected = modelView([...builder.log, ...steps], memo);
          if (after !== undefined) {
            assert.deepEqual(after, expected);
            given++;
            if (steps.some((r) => r.type === 'compaction')) compactions++;
          }
          // Taken in, appended to the same log as a conversation appends them, the steps give the same
          // view, and so does a log replaced by another array.
          const fresh = new LiveModelView(memo);
          fresh.update(builder.log);
          const all = [...builder.log, ...steps];
          builder.log.push(...steps);
          live.update(builder.log);
          assert.deepEqual(live.messages(), expected);
          assert.deepEqual([...live.stable, ...(live.trailing() ? [live.trailing()!] : [])], expected);
          fresh.update(all);
          assert.deepEqual(fresh.messages(), expected);
        },
      ),
      { numRuns: 1_000 },
    );
    assert.ok(given > 500 && compactions > 250, `${given} views given, ${compactions} with a compaction`);
  });

  it('takes in a compaction appended at the end at the cost of the view, not of the log', () => {
    // 800 messages, a tool call and its result each two, compacted every 200 but the last 4.
    const log: LogRecord[] = [];
    let since: string[] = [];
    for (let i = 0; i < 400; i++) {
      const call: Message = { id: `a${i}`, role: 'assistant', content: [{ type: 'tool-call', toolCallId: `c${i}`, toolName: 'read', input: { i } }] };
      const result: Message = {
        id: `t${i}`,
        role: 'tool',
        content: [{ type: 'tool-result', toolCallId: `c${i}`, toolName: 'read', output: `output ${i}` }],
      };
      log.push({ type: 'message', message: call }, { type: 'message', message: result });
      since.push(call.id, result.id);
      if (since.length === 200) {
        log.push({ type: 'compaction', entry: entry(`e${i}`, since.slice(0, -4), since.at(-4)!, 'user') });
        since = since.slice(-4);
      }
    }
    const memo = new EngineMemo();
    let reads = 0;
    const counted = new Proxy(log, {
      get: (target, key, receiver) => {
        if (typeof key === 'string' && /^\d+$/.test(key)) reads++;
        return Reflect.get(target, key, receiver) as unknown;
      },
    });
    const live = new LiveModelView(memo);
    live.update(counted);
    const outputs = [{ messageId: 't399', toolCallId: 'c399', toolName: 'read', kind: 'duplicate' as const, stub: '[pruned]', tokens: 9 }];
    log.push({ type: 'pruning', entry: { id: 'p-end', reason: 'threshold', outputs, tokensBefore: 0, tokensAfter: 0, createdAt: 0 } });
    log.push({ type: 'compaction', entry: entry('e-end', since.slice(0, -2), since.at(-2)!, 'user') });
    reads = 0;
    live.update(counted);
    assert.deepEqual(live.messages(), modelView(log, memo));
    assert.equal(live.messages().length, 3, 'the summary, the last call and its pruned result');
    assert.ok(reads <= 2, `${reads} records of ${log.length} read again`);
  });

  it('never stubs the outputs of messages a compaction taken in with the pruning takes out', () => {
    const log: LogRecord[] = [];
    const results: Message[] = [];
    for (let i = 0; i < 100; i++) {
      const result: Message = {
        id: `t${i}`,
        role: 'tool',
        content: [{ type: 'tool-result', toolCallId: `c${i}`, toolName: 'read', output: `output ${i}` }],
      };
      log.push(
        {
          type: 'message',
          message: { id: `a${i}`, role: 'assistant', content: [{ type: 'tool-call', toolCallId: `c${i}`, toolName: 'read', input: { i } }] },
        },
        { type: 'message', message: result },
      );
      results.push(result);
    }
    const outputs = results.map((m, i) => ({
      messageId: m.id,
      toolCallId: `c${i}`,
      toolName: 'read',
      kind: 'duplicate' as const,
      stub: '[pruned]',
      tokens: 9,
    }));
    const ids = log.flatMap((r) => (r.type === 'message' ? [r.message.id] : []));
    const steps: LogRecord[] = [
      { type: 'pruning', entry: { id: 'p-end', reason: 'threshold', outputs, tokensBefore: 0, tokensAfter: 0, createdAt: 0 } },
      { type: 'compaction', entry: entry('e-end', ids.slice(0, -2), ids.at(-2)!, 'user') },
    ];
    for (const takeIn of [false, true]) {
      const memo = new EngineMemo();
      const live = new LiveModelView(memo);
      const appended = [...log];
      live.update(appended);
      if (takeIn) {
        appended.push(...steps);
        live.update(appended);
      }
      const view = takeIn ? live.messages() : live.after(steps)!;
      assert.deepEqual(view, modelView([...log, ...steps], new EngineMemo()));
      const stubbed = results.filter((m) => memo.stubbedMessages.has(m)).map((m) => m.id);
      assert.deepEqual(stubbed, ['t99'], takeIn ? 'taken in' : 'previewed');
    }
  });

  it('gives one summary message per compaction entry and its copies with other numbers, so it is counted once', () => {
    const e = entry('e1', [], null, 'user');
    const memo = new EngineMemo();
    const message = summaryMessage(e, memo);
    assert.equal(summaryMessage(e, memo), message);
    // Written with its counts taken again: the same message.
    assert.equal(summaryMessage({ ...e, tokensBefore: 900, tokensAfter: 100 }, memo), message);
    // Another summary, or another entry: a message of its own.
    const edited = summaryMessage({ ...e, summary: 'edited' }, memo);
    assert.notEqual(edited, message);
    assert.match(edited.content.map((p) => (p.type === 'text' ? p.text : '')).join(''), /edited/);
    assert.notEqual(summaryMessage({ ...e, id: 'e2' }, memo), edited);
    assert.notEqual(summaryMessage(e, new EngineMemo()), message);
  });
});
