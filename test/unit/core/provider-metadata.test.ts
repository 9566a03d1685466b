import assert from 'node:assert/strict';
import { EngineMemo } from '../../../src/core/engine-memo';
import { compact, type CompactionDeps, type CompactionRequest } from '../../../src/core/compaction';
import { EMPTY_LEDGER } from '../../../src/core/file-ledger';
import type { LogRecord } from '../../../src/core/history';
import type { Message, Part, ProviderMetadata } from '../../../src/core/messages';
import { withStubs } from '../../../src/core/pruning';
import { asLog, config, estimatingCounter, FakeClock, idGenerator, RecordingSummarizer, sys, toolResult, user } from './fixtures';

/** Metadata no summary, summarizer request or count may show: every value of it holds this marker. */
const SECRET = 'OPAQUE-SIGNATURE-7f3a';
const made = (n: number): ProviderMetadata => ({
  provider: 'anthropic.messages',
  model: 'claude-sonnet-4-5',
  data: { anthropic: { signature: `${SECRET}-${n}` } },
});

/** An assistant step as Claude with thinking makes it: a signed thinking block, then its tool use. */
function step(prefix: string, n: number): Message[] {
  const content: Part[] = [
    { type: 'reasoning', text: `thinking about step ${n}`, providerMetadata: made(n) },
    { type: 'tool-call', toolCallId: `${prefix}-c${n}`, toolName: 'read_file', input: { path: `src/f${n}.ts` }, providerMetadata: made(100 + n) },
  ];
  return [{ id: `${prefix}-a${n}`, role: 'assistant', content }, toolResult(`${prefix}-t${n}`, `${prefix}-c${n}`, 'read_file', 'z'.repeat(1_500))];
}

const conversation: Message[] = [
  sys('s', 'You are a coding agent.'),
  user('u1', 'Build a flashcard app'),
  ...[0, 1, 2, 3].flatMap((n) => step('t1', n)),
  user('u2', 'Now add tests'),
  ...[4, 5, 6].flatMap((n) => step('t2', n)),
];

function request(log: readonly LogRecord[]): CompactionRequest {
  const c = config((x) => ({ ...x, keepRecent: { ...x.keepRecent, mode: 'messages', messages: 4 }, minMessages: 4 }));
  return {
    log,
    reason: 'manual',
    config: { ...c, pruning: { ...c.pruning, enabled: false } },
    window: { limit: 100_000, source: 'model' },
    ledger: EMPTY_LEDGER,
  };
}

function deps(summarizer: RecordingSummarizer): CompactionDeps {
  return { counter: estimatingCounter(), summarizer, clock: new FakeClock(), newId: idGenerator(), memo: new EngineMemo() };
}

describe('provider metadata through compaction and pruning', () => {
  for (const failing of [false, true]) {
    it(`gives the summarizer none of it, and the ${failing ? 'extractive' : "summarizer's"} summary carries none, while the messages kept keep theirs whole`, async () => {
      const summarizer = new RecordingSummarizer(failing ? () => Promise.reject(new Error('503 upstream down')) : undefined);
      const outcome = await compact(request(asLog(conversation)), deps(summarizer));
      assert.equal(outcome.status, 'compacted');
      if (outcome.status !== 'compacted') return;
      assert.ok(summarizer.requests.length > 0);
      assert.ok(!JSON.stringify(summarizer.requests).includes(SECRET), 'the summarizer was given a signature');
      const entry = outcome.compaction.entry!;
      assert.equal(entry.fallback, failing);
      assert.ok(!entry.summary.includes(SECRET));
      const view = outcome.compaction.view;
      const summary = view.find((m) => m.summaryOf !== undefined)!;
      assert.ok(!JSON.stringify(summary).includes(SECRET));
      // Every message kept is the log's own, its thinking still before its tool use, both signed.
      const kept = view.filter((m) => m.summaryOf === undefined && m.role === 'assistant');
      assert.ok(kept.length > 0);
      for (const message of kept)
        assert.deepEqual(
          message,
          conversation.find((m) => m.id === message.id),
        );
    });
  }

  it("keeps a thinking block and its signature before the tool use whose written content pruning stubs, and the call's own metadata", () => {
    const message: Message = {
      id: 'a',
      role: 'assistant',
      content: [
        { type: 'reasoning', text: 'write it', providerMetadata: made(1) },
        {
          type: 'tool-call',
          toolCallId: 'w1',
          toolName: 'create_file',
          input: { path: 'a.ts', content: 'x'.repeat(4_000) },
          providerMetadata: made(2),
        },
      ],
    };
    const stubbed = withStubs(message, new Map([['w1', '[written content pruned]']]), new EngineMemo());
    assert.notEqual(stubbed, message);
    assert.deepEqual(stubbed.content[0], message.content[0]);
    const call = stubbed.content[1]!;
    assert.ok(call.type === 'tool-call');
    assert.notDeepEqual(call.input, (message.content[1] as { input: unknown }).input);
    assert.deepEqual(call.providerMetadata, made(2));
  });

  it('counts a message the same with its metadata as without: opaque metadata is no visible text', () => {
    const counter = estimatingCounter();
    const bare: Message = {
      id: 'b',
      role: 'assistant',
      content: conversation[2]!.content.map((part) => {
        const { providerMetadata: _meta, ...rest } = part as Part & { providerMetadata?: unknown };
        return rest as Part;
      }),
    };
    assert.equal(counter.countMessage(conversation[2]!), counter.countMessage(bare));
  });
});
