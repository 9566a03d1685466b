import assert from 'node:assert/strict';
import { EngineMemo } from '../../../src/core/engine-memo';
import { computeCompaction, type CompactionDeps, type CompactionRequest } from '../../../src/core/compaction';
import { EMPTY_LEDGER } from '../../../src/core/file-ledger';
import { modelView, type LogRecord } from '../../../src/core/history';
import type { Summarizer, SummaryResponse } from '../../../src/core/ports';
import { asLog, config, estimatingCounter, FakeClock, idGenerator, RecordingSummarizer, sys, templateSummary, turn } from './fixtures';

/**
 * A summarizer that is the agent's own model is sent the summary request as a continuation of the
 * conversation: the view as the agent sent it, from its start through the last message summarized.
 */
describe('a summary request that continues the conversation', () => {
  const conversation = [
    sys('s', 'You are a coding agent.'),
    ...turn('t1', 'Build a flashcard app', 3, 'x'.repeat(2_000)),
    ...turn('t2', 'Add SM-2 scheduling', 3, 'y'.repeat(2_000)),
    ...turn('t3', 'Now add tests', 1),
  ];
  const settings = config((c) => ({
    ...c,
    keepRecent: { ...c.keepRecent, mode: 'messages', messages: 4 },
    minMessages: 4,
    pruning: { ...c.pruning, enabled: false },
  }));
  const request = (log: readonly LogRecord[], over: Partial<CompactionRequest> = {}): CompactionRequest => ({
    log,
    reason: 'threshold',
    config: settings,
    window: { limit: 100_000, source: 'model' },
    ledger: EMPTY_LEDGER,
    ...over,
  });
  const deps = (summarizer: Summarizer): CompactionDeps => ({
    counter: estimatingCounter(),
    summarizer,
    clock: new FakeClock(),
    newId: idGenerator(),
    memo: new EngineMemo(),
  });
  const continuing = (window?: number): RecordingSummarizer => Object.assign(new RecordingSummarizer(undefined, window), { continues: true });

  it('repeats the view from its start through the last message summarized, then the directive', async () => {
    const summarizer = continuing();
    const outcome = await computeCompaction(request(asLog(conversation)), deps(summarizer));
    assert.equal(outcome.status, 'compacted');
    if (outcome.status !== 'compacted') return;
    const sent = summarizer.requests[0]!.continuation;
    assert.ok(sent);
    const view = modelView(asLog(conversation), new EngineMemo());
    const compacted = new Set(outcome.compaction.entry!.compactedMessageIds);
    const last = view.map((m) => compacted.has(m.id)).lastIndexOf(true);
    assert.deepEqual(sent.messages, view.slice(0, last + 1));
    assert.match(sent.directive, /Summarize the conversation above/);
    assert.doesNotMatch(sent.directive, /\[#\d+\]/, 'no message numbers: the continuation is not numbered');
  });

  it('tells the model to answer with the summary as text, since it is offered the tools', async () => {
    const summarizer = continuing();
    await computeCompaction(request(asLog(conversation)), deps(summarizer));
    assert.match(summarizer.requests[0]!.continuation!.directive, /do not call any tool/);
    const own = new RecordingSummarizer();
    await computeCompaction(request(asLog(conversation)), deps(own));
    assert.ok(
      own.requests[0]!.messages.every((m) => !m.content.includes('do not call any tool')),
      'the plain request offers no tools',
    );
  });

  describe('answered with a tool call (a server that ignores tool_choice)', () => {
    /** A continuing summarizer whose continuations are answered with `stray`; plain requests with a summary. */
    const calling = (stray: SummaryResponse): RecordingSummarizer =>
      Object.assign(new RecordingSummarizer((r) => (r.continuation ? stray : { text: templateSummary('Written from the plain request.') })), {
        continues: true,
      });

    it('is asked once more as the plain request, without the tools, and that answer is the summary', async () => {
      const summarizer = calling({ text: '', calledTools: ['read_file'] });
      const outcome = await computeCompaction(request(asLog(conversation)), deps(summarizer));
      assert.equal(outcome.status, 'compacted');
      if (outcome.status !== 'compacted') return;
      assert.equal(summarizer.requests.length, 2);
      assert.ok(summarizer.requests[0]!.continuation, 'first as a continuation');
      assert.equal(summarizer.requests[1]!.continuation, undefined, 'then plainly');
      const { continuation: _continued, ...plain } = summarizer.requests[0]!;
      assert.deepEqual(summarizer.requests[1], plain, 'the same request, plain');
      const entry = outcome.compaction.entry!;
      assert.equal(entry.fallback, false, entry.failure);
      assert.match(entry.summary, /Written from the plain request/);
      assert.equal(entry.summarizerCalls, 2);
    });

    it('is asked again once only: a plain answer that fails too falls back, and an answer with nothing is asked again as well', async () => {
      const twice = Object.assign(new RecordingSummarizer(() => ({ text: '', calledTools: ['read_file'] })), { continues: true });
      const outcome = await computeCompaction(request(asLog(conversation)), deps(twice));
      assert.equal(twice.requests.length, 2);
      assert.equal(outcome.status === 'compacted' && outcome.compaction.entry?.fallback, true);

      const empty = calling({ text: '   ' });
      const recovered = await computeCompaction(request(asLog(conversation)), deps(empty));
      assert.equal(empty.requests.length, 2);
      assert.equal(recovered.status === 'compacted' && recovered.compaction.entry?.fallback, false);
    });

    it('is not asked again when the continuation was answered with a summary', async () => {
      const summarizer = continuing();
      await computeCompaction(request(asLog(conversation)), deps(summarizer));
      assert.equal(summarizer.requests.length, 1);
    });
  });

  it('is not sent to a summarizer of its own, after an overflow, or when it would not fit the summarizer', async () => {
    const own = new RecordingSummarizer();
    await computeCompaction(request(asLog(conversation)), deps(own));
    assert.equal(own.requests[0]!.continuation, undefined);

    const overflow = continuing();
    await computeCompaction(request(asLog(conversation), { reason: 'overflow' }), deps(overflow));
    assert.equal(overflow.requests[0]!.continuation, undefined);

    const small = continuing(3_000);
    await computeCompaction(request(asLog(conversation)), deps(small));
    assert.ok(small.requests.length > 0);
    assert.ok(small.requests.every((r) => r.continuation === undefined));
  });
});
