import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { EngineMemo } from '../../../src/core/engine-memo';
import { DEFAULT_CONFIG, type CompactionConfig } from '../../../src/core/config';
import { compactionEntry } from '../fixtures/compaction-entry';
import { currentBasis, lastEntry, lastUsage, modelView, usageReports, type CompactionEntry, type LogRecord } from '../../../src/core/history';
import { MessageTokenCounter } from '../../../src/core/message-tokens';
import type { Message, Part } from '../../../src/core/messages';
import type { Summarizer } from '../../../src/core/ports';
import { charEstimator, type TextTokenizer } from '../../../src/core/tokenizer';
import { countContext, effectiveRatio, learnedAddedRatio, learnedCalibration } from '../../../src/core/usage-calibration';
import type { Conversation, ModelContext } from '../../../src/app/conversation/conversation';
import { ConversationStore } from '../../../src/app/store/conversation-store';
import { FakeClock, templateSummary } from '../core/fixtures';
import { memoryIndex, newConversation, testModel } from '../fixtures/conversation-deps';

/**
 * What the gauge reads from a conversation (its view, count, breakdown, request basis, last
 * compaction) is kept up to date as records arrive rather than derived from the whole log each
 * time; it must be exactly what deriving it from the whole log gives, whatever came in between, and
 * a reopened conversation must show it without tokenizing its messages again.
 */

const CONFIG: CompactionConfig = { ...DEFAULT_CONFIG, minMessages: 2, keepRecent: { ...DEFAULT_CONFIG.keepRecent, mode: 'messages', messages: 3 } };
const ID = 'c1';

/** A tokenizer that counts words and remembers what it was asked to count. */
function spyTokenizer(name: string, perWord = 1): TextTokenizer & { texts: string[] } {
  const texts: string[] = [];
  return { name, texts, count: (value) => (texts.push(value), (value.match(/\S+/g) ?? []).length * perWord) };
}

function entry(id: string, compacted: readonly string[], firstKept: string | null): CompactionEntry {
  return compactionEntry({ id, summary: `summary ${id}`, firstKeptMessageId: firstKept, compactedMessageIds: compacted });
}

type Op =
  | { readonly kind: 'turn'; readonly words: number; readonly calls: number; readonly answered: number }
  | { readonly kind: 'usage'; readonly input: number; readonly stale: boolean }
  | { readonly kind: 'entry'; readonly from: number; readonly to: number }
  | { readonly kind: 'compact' }
  | { readonly kind: 'undo' }
  | { readonly kind: 'model' }
  | { readonly kind: 'reload' };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({ kind: fc.constant('turn' as const), words: fc.nat({ max: 60 }), calls: fc.nat({ max: 2 }), answered: fc.nat({ max: 2 }) }),
  },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('usage' as const), input: fc.integer({ min: 1, max: 5_000 }), stale: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('entry' as const), from: fc.nat({ max: 100 }), to: fc.nat({ max: 100 }) }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'compact' as const }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'undo' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'model' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'reload' as const }) },
);

/** Two models with different tokenizers; a reload starts with cold counters, as a new window does. */
function models(): ModelContext[] {
  return [
    {
      name: 'a',
      key: 'vendor/a',
      window: { limit: 50_000, source: 'model' },
      counter: new MessageTokenCounter(spyTokenizer('words')),
      requestOverhead: 120,
      outputReserve: 0,
    },
    {
      name: 'b',
      key: 'vendor/b',
      window: { limit: 50_000, source: 'model' },
      counter: new MessageTokenCounter(charEstimator),
      requestOverhead: 80,
      outputReserve: 0,
    },
  ];
}

class Harness {
  private n = 0;
  private entries = 0;
  private readonly clock = new FakeClock();
  private readonly state = new Map<string, unknown>();
  private store: ConversationStore;
  private models = models();
  model = 0;
  conversation: Conversation;
  private readonly summarizer: Summarizer = {
    name: 'fake',
    summarize: async (r) => ({ text: templateSummary(`The work over ${r.messages.length} messages, for the test.`) }),
  };

  constructor(private readonly dir: string) {
    this.store = new ConversationStore(dir, () => this.clock.now());
    this.conversation = this.open([]);
  }

  private open(log: readonly LogRecord[]): Conversation {
    return newConversation({
      id: ID,
      log,
      store: this.store,
      index: memoryIndex(this.state),
      clock: this.clock,
      newId: () => `entry${++this.entries}`,
      config: CONFIG,
      model: () => this.models[this.model]!,
      summarizer: this.summarizer,
    });
  }

  async run(op: Op): Promise<void> {
    const c = this.conversation;
    switch (op.kind) {
      case 'turn': {
        const user: Message = { id: `m${++this.n}`, role: 'user', content: [{ type: 'text', text: 'please '.repeat(op.words + 1) }] };
        const callId = `m${++this.n}`;
        const content: Part[] = [{ type: 'text', text: 'working '.repeat(op.words) }];
        for (let k = 0; k < op.calls; k++) content.push({ type: 'tool-call', toolCallId: `${callId}-${k}`, toolName: 'read', input: { k } });
        const reply: Message = { id: callId, role: 'assistant', content };
        const results: Part[] = [];
        for (let k = 0; k < Math.min(op.calls, op.answered); k++)
          results.push({ type: 'tool-result', toolCallId: `${callId}-${k}`, toolName: 'read', output: 'line '.repeat(op.words) });
        const records: LogRecord[] = [
          { type: 'message', message: user },
          { type: 'message', message: reply },
        ];
        if (results.length > 0) records.push({ type: 'message', message: { id: `m${++this.n}`, role: 'tool', content: results } });
        return c.append(records);
      }
      case 'usage': {
        const basis = c.requestBasis();
        const anchor = c.view().at(-1);
        if (!anchor) return;
        return c.append([
          {
            type: 'usage',
            usage: {
              anchorMessageId: anchor.id,
              inputTokens: op.input,
              outputTokens: 7,
              basis: op.stale ? 'an entry long gone' : basis.basis,
              localTokens: basis.localTokens,
              ...(basis.localFraming !== undefined ? { localFraming: basis.localFraming } : {}),
              ...(basis.model ? { model: basis.model } : {}),
            },
          },
        ]);
      }
      case 'entry': {
        // A compaction record as another window might have written it: any range, any first kept message.
        const ids = c
          .view()
          .filter((m) => m.summaryOf === undefined && !m.id.startsWith('interrupted:'))
          .map((m) => m.id);
        const [a, b] = [op.from % (ids.length + 1), op.to % (ids.length + 1)].sort((x, y) => x - y) as [number, number];
        return c.append([{ type: 'compaction', entry: entry(`entry${++this.entries}`, ids.slice(a, b), ids[b] ?? null) }]);
      }
      case 'compact': {
        const outcome = await c.compact('manual');
        assert.ok(outcome.status === 'compacted' || outcome.status === 'noop', `compaction ${outcome.status}`);
        return;
      }
      case 'undo':
        await c.undo();
        return;
      case 'model':
        this.model = 1 - this.model;
        return;
      case 'reload': {
        this.store = new ConversationStore(this.dir, () => this.clock.now());
        const opened = await this.store.open(ID);
        this.models = models();
        this.conversation = this.open(opened.log);
        return;
      }
    }
  }

  /** Everything the gauge reads, against deriving it from the whole log with a cold counter. */
  check(): void {
    const c = this.conversation;
    const log = c.log();
    const model = this.models[this.model]!;
    const fresh = new MessageTokenCounter(model.counter.tokenizer);
    const view = modelView(log, new EngineMemo());
    assert.deepEqual(c.view(), view, 'the view');
    const localTokens = fresh.countMessages(view) + model.requestOverhead;
    const localFraming = view.reduce((total, m) => total + fresh.framing(m), 0);
    const calibration = learnedCalibration(usageReports(log), model.key);
    const ratio = calibration && effectiveRatio(calibration, localTokens, localFraming);
    // What came since the last report is scaled by what the reports say of the messages added between them.
    const added = learnedAddedRatio(usageReports(log), model.key) ?? ratio ?? 1;
    const counted = countContext(view, fresh, lastUsage(log), currentBasis(log), model.requestOverhead, ratio ?? 1, added);
    assert.deepEqual(c.count(), counted, 'the count');
    const report = lastUsage(log);
    assert.deepEqual(c.requestBasis(), {
      basis: currentBasis(log),
      localTokens,
      localFraming,
      localFixed: model.requestOverhead,
      ...(ratio !== undefined ? { ratio } : {}),
      expected: counted.tokens,
      ...(counted.source === 'provider+local' && report ? { sinceReport: counted.tokens - report.inputTokens - report.outputTokens } : {}),
      model: model.key,
    });
    const sum = (pick: (m: Message) => boolean) => view.filter(pick).reduce((total, m) => total + fresh.countMessage(m), 0);
    const breakdown = c.breakdown();
    assert.equal(
      breakdown.summary,
      sum((m) => m.summaryOf !== undefined),
    );
    assert.equal(
      breakdown.toolResults,
      sum((m) => m.summaryOf === undefined && m.role === 'tool'),
    );
    assert.equal(
      breakdown.messages,
      sum((m) => m.summaryOf === undefined && (m.role === 'user' || m.role === 'assistant')),
    );
    assert.equal(breakdown.requestOverhead, model.requestOverhead + sum((m) => m.summaryOf === undefined && m.role === 'system'));
    assert.equal(c.lastCompaction(), lastEntry(log));
    assert.equal(c.isEmpty(), !log.some((r) => r.type === 'message'));
  }
}

describe('a conversation keeps what the gauge reads up to date', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'longrun-counts-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reads the same view, count, breakdown and basis as the whole log gives, after any appends, compactions, undos, model changes and reloads', async function () {
    this.timeout(120_000);
    let run = 0;
    const seen = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 30 }), async (ops) => {
        const harness = new Harness(join(dir, `run${++run}`));
        for (const op of ops) {
          await harness.run(op);
          harness.check();
          const c = harness.conversation;
          if (c.count().source === 'provider+local') seen.set('calibrated', (seen.get('calibrated') ?? 0) + 1);
          if (c.lastCompaction()) seen.set('compacted', (seen.get('compacted') ?? 0) + 1);
        }
      }),
      { numRuns: 150 },
    );
    assert.ok((seen.get('calibrated') ?? 0) > 50 && (seen.get('compacted') ?? 0) > 100, JSON.stringify([...seen]));
  });

  it("shows a reopened conversation's count without tokenizing its messages again", async () => {
    const clock = new FakeClock();
    const index = memoryIndex();
    const open = (log: readonly LogRecord[], tokenizer: TextTokenizer) =>
      newConversation({
        id: ID,
        log,
        store: new ConversationStore(dir, () => clock.now()),
        index,
        clock,
        newId: () => 'x',
        config: CONFIG,
        // A counter of its own on each call: nothing counted is remembered but what the log stores.
        model: () => testModel({ limit: 10_000, counter: new MessageTokenCounter(tokenizer) }),
      });
    const first = open([], spyTokenizer('words'));
    for (let i = 0; i < 5; i++) {
      await first.append([
        { type: 'message', message: { id: `u${i}`, role: 'user', content: [{ type: 'text', text: `request number ${i} with several words` }] } },
      ]);
    }
    const written = first.count().tokens;

    const again = spyTokenizer('words');
    const reopened = open((await new ConversationStore(dir, () => clock.now()).open(ID)).log, again);
    assert.equal(reopened.count().tokens, written);
    assert.deepEqual(again.texts, [], 'nothing was tokenized');

    // Counts stored by one tokenizer say nothing about another's.
    const other = spyTokenizer('other-words', 2);
    const withOther = open((await new ConversationStore(dir, () => clock.now()).open(ID)).log, other);
    assert.equal(withOther.count().tokens, (written - 5 * 4) * 2 + 5 * 4);
    assert.equal(other.texts.length, 5);
  });
});
