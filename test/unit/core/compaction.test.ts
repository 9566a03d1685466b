import assert from 'node:assert/strict';
import { EngineMemo } from '../../../src/core/engine-memo';
import { applyCompaction, compact, computeCompaction, type CompactionDeps, type CompactionRequest } from '../../../src/core/compaction';
import { resolveConfig } from '../../../src/core/config';
import { EMPTY_LEDGER, recordFileEvent } from '../../../src/core/file-ledger';
import { allMessages, modelView, SUMMARY_PREFIX, type LogRecord } from '../../../src/core/history';
import type { SummaryRequest } from '../../../src/core/ports';
import {
  asLog,
  config,
  estimatingCounter,
  FakeClock,
  idGenerator,
  RecordingSummarizer,
  sys,
  templateSummary,
  toolResult,
  turn,
  user,
} from './fixtures';

const messagesConfig = config((c) => ({ ...c, keepRecent: { ...c.keepRecent, mode: 'messages', messages: 4 }, minMessages: 4 }));

function setup(summarizer = new RecordingSummarizer(), clock = new FakeClock()) {
  const deps: CompactionDeps = { counter: estimatingCounter(), summarizer, clock, newId: idGenerator(), memo: new EngineMemo() };
  return { deps, summarizer, clock };
}

/**
 * These tests are about the summary tier: pruning is off (it has tests of its own, `pruning.test.ts`),
 * so that the files these conversations read again reach the summarizer as they are.
 */
function request(log: readonly LogRecord[], over: Partial<CompactionRequest> = {}): CompactionRequest {
  const made: CompactionRequest = {
    log,
    reason: 'manual',
    config: messagesConfig,
    window: { limit: 100_000, source: 'model' },
    ledger: EMPTY_LEDGER,
    ...over,
  };
  return { ...made, config: { ...made.config, pruning: { ...made.config.pruning, enabled: false } } };
}

const conversation = [
  sys('s', 'You are a coding agent.'),
  ...turn('t1', 'Build a flashcard app', 3, 'x'.repeat(2_000)),
  ...turn('t2', 'Add SM-2 scheduling', 3, 'y'.repeat(2_000)),
  ...turn('t3', 'Now add tests', 1),
];

describe("compaction: result, entry and the model's view", () => {
  it('returns the new view: system, then the summary, then the kept messages', async () => {
    const { deps } = setup();
    const outcome = await compact(request(asLog(conversation)), deps);
    assert.equal(outcome.status, 'compacted');
    if (outcome.status !== 'compacted') return;
    const view = outcome.compaction.view;
    assert.equal(view[0]!.id, 's');
    assert.ok(view[1]!.summaryOf);
    const first = view[1]!.content[0];
    assert.ok(first?.type === 'text' && first.text.startsWith(SUMMARY_PREFIX));
    assert.equal(view[2]!.id, outcome.compaction.entry!.firstKeptMessageId);
    assert.deepEqual(outcome.log && modelView(outcome.log, new EngineMemo()), view);
  });

  it('records an entry with everything needed to show, undo or re-run it', async () => {
    const { deps, clock } = setup(
      new RecordingSummarizer(async (r) => {
        clock.advance(1_500);
        return { text: templateSummary(`Did things in ${r.messages.length} messages.`), model: 'fake-model' };
      }),
    );
    const outcome = await computeCompaction(request(asLog(conversation), { reason: 'threshold' }), deps);
    assert.equal(outcome.status, 'compacted');
    if (outcome.status !== 'compacted') return;
    const e = outcome.compaction.entry!;
    assert.equal(e.id, 'entry-1');
    assert.equal(e.round, 1);
    assert.equal(e.reason, 'threshold');
    assert.equal(e.model, 'fake-model');
    assert.equal(e.durationMs, 1_500);
    assert.equal(e.fallback, false);
    assert.ok(e.tokensAfter < e.tokensBefore);
    assert.equal(e.tokensBefore, deps.counter.countMessages(conversation));
    assert.equal(e.tokensAfter, deps.counter.countMessages(outcome.compaction.view));
    const removed = new Set(e.compactedMessageIds);
    const viewIds = new Set(outcome.compaction.view.map((m) => m.id));
    for (const m of conversation) assert.ok(removed.has(m.id) !== viewIds.has(m.id), `${m.id} is either compacted or in view`);
    // The originals are still in the log.
    assert.deepEqual(allMessages([...asLog(conversation), ...outcome.compaction.records]).length, conversation.length);
  });

  it('chains summaries: the next round integrates the previous summary', async () => {
    const { deps, summarizer } = setup();
    const first = await compact(request(asLog(conversation)), deps);
    assert.ok(first.status === 'compacted' && first.log);
    const grown = [...first.log, ...asLog(turn('t4', 'Fix the failing test', 3)), ...asLog(turn('t5', 'Ship it', 2))];
    const second = await compact(request(grown), deps);
    assert.equal(second.status, 'compacted');
    if (second.status !== 'compacted') return;
    assert.equal(second.compaction.entry!.round, 2);
    const secondRequest = summarizer.requests[1]!;
    assert.equal(secondRequest.messages[0]!.role, 'system');
    assert.match(secondRequest.messages[0]!.content, /Previous summary/);
    assert.ok(secondRequest.messages.at(-1)!.content.includes('Compaction Round 2'));
    assert.equal(second.compaction.view.filter((m) => m.summaryOf).length, 1, 'one summary in view');
  });

  it('puts the original task back verbatim when the summary lost it', async () => {
    const { deps } = setup(
      new RecordingSummarizer(() => ({ text: templateSummary('Some work was done on an app. Tests pending. Nothing else to say.') })),
    );
    const outcome = await computeCompaction(request(asLog(conversation)), deps);
    assert.ok(outcome.status === 'compacted');
    assert.match(outcome.compaction.entry!.summary, /### Original Task \(verbatim\)\nBuild a flashcard app/);
    assert.deepEqual(outcome.compaction.repairs, ['heading', 'original task']);
  });

  it('appends the file ledger deterministically after the summary', async () => {
    const { deps } = setup();
    let ledger = recordFileEvent(EMPTY_LEDGER, { kind: 'read', path: 'src/db.ts', actor: 'agent', at: 1 });
    ledger = recordFileEvent(ledger, { kind: 'created', path: 'src/sm2.ts', actor: 'agent', at: 2 });
    ledger = recordFileEvent(ledger, { kind: 'deleted', path: 'old.txt', actor: 'user', at: 3 });
    const outcome = await computeCompaction(request(asLog(conversation), { ledger }), deps);
    assert.ok(outcome.status === 'compacted');
    const summary = outcome.compaction.entry!.summary;
    assert.match(summary, /<read-files>\nsrc\/db\.ts\n<\/read-files>/);
    assert.match(summary, /<modified-files>[\s\S]*src\/sm2\.ts \(created\)[\s\S]*<\/modified-files>/);
    assert.match(summary, /old\.txt \(deleted/);
    assert.deepEqual(outcome.compaction.entry!.fileOperations, ledger);
  });

  it('passes the focus of /compact into the summary request and the entry', async () => {
    const { deps, summarizer } = setup();
    const outcome = await computeCompaction(request(asLog(conversation), { focus: 'the scheduling algorithm' }), deps);
    assert.ok(outcome.status === 'compacted');
    assert.match(summarizer.requests[0]!.messages.at(-1)!.content, /focus on: the scheduling algorithm/);
    assert.equal(outcome.compaction.entry!.focus, 'the scheduling algorithm');
  });

  it('on demand, compacts everything but the latest turn when the recent part would keep it all', async () => {
    const { deps } = setup();
    const short = asLog([...turn('t1', 'first', 3, 'x'.repeat(2_000)), ...turn('t2', 'second', 1)]);
    const automatic = await computeCompaction(request(short, { config: config(), reason: 'threshold' }), deps);
    assert.equal(automatic.status, 'noop', 'the threshold keeps the configured recent part');
    for (const reason of ['manual', 'overflow'] as const) {
      const outcome = await computeCompaction(request(short, { config: config(), reason }), deps);
      assert.ok(outcome.status === 'compacted', reason);
      assert.equal(outcome.compaction.entry!.firstKeptMessageId, 't2-u');
    }
  });

  it('is a no-op with a reason when there is nothing to compact', async () => {
    const { deps, summarizer } = setup();
    const outcome = await computeCompaction(request(asLog(turn('t1', 'hi', 0)), { config: config() }), deps);
    assert.equal(outcome.status, 'noop');
    assert.equal(summarizer.requests.length, 0);
  });

  it('waits for the minimum number of messages before compacting automatically', async () => {
    const { deps } = setup();
    const small = asLog(turn('t1', 'hi', 1));
    const threshold = await computeCompaction(
      request(small, {
        reason: 'threshold',
        config: { ...messagesConfig, minMessages: 10, keepRecent: { ...messagesConfig.keepRecent, messages: 1 } },
      }),
      deps,
    );
    assert.equal(threshold.status, 'noop');
    assert.match(threshold.status === 'noop' ? threshold.reason : '', /waits for 10/);
  });

  it('still compacts one turn larger than the whole budget, keeping its request', async () => {
    const { deps } = setup();
    const huge = [sys('s', 'sys'), ...turn('t1', 'Refactor everything', 30, 'z'.repeat(4_000))];
    const cfg = config((c) => ({ ...c, keepRecent: { ...c.keepRecent, mode: 'tokens', tokens: 3_000 } }));
    const outcome = await computeCompaction(
      request(asLog(huge), { config: cfg, window: { limit: 32_000, source: 'model' }, reason: 'overflow' }),
      deps,
    );
    assert.equal(outcome.status, 'compacted');
    if (outcome.status !== 'compacted') return;
    assert.ok(outcome.compaction.entry!.splitTurn);
    assert.deepEqual(
      outcome.compaction.view.slice(0, 3).map((m) => m.role),
      ['system', 'user', 'user'],
    );
    assert.equal(outcome.compaction.view[2]!.id, 't1-u');
    assert.ok(outcome.compaction.entry!.tokensAfter < 32_000 / 2);
  });
});

describe('compaction: a recent part too large to keep', () => {
  // A long turn wrote a large file, then the user asked something short: the recent tokens reach back
  // into the write, and the cut before it would keep more than half the window.
  const wrote = [
    sys('s', 'You are a coding agent.'),
    ...turn('t1', 'Look at the retry code', 3, 'x'.repeat(4_000)),
    user('t2-u', 'Write the retry module'),
    {
      id: 't2-w',
      role: 'assistant' as const,
      content: [
        { type: 'tool-call' as const, toolCallId: 'w', toolName: 'create_file', input: { path: 'src/retry.ts', content: 'r'.repeat(40_000) } },
      ],
    },
    toolResult('t2-r', 'w', 'create_file', 'Created src/retry.ts (600 lines).'),
    { id: 't2-a', role: 'assistant' as const, content: [{ type: 'text' as const, text: 'Written. '.repeat(200) }] },
    user('t3-u', 'Now run the tests'),
    { id: 't3-a', role: 'assistant' as const, content: [{ type: 'text' as const, text: 'They pass. '.repeat(200) }] },
  ];
  // 20,000 tokens: the recent part is 7,000 (35%), the kept part at most 10,000; the write alone is about 10,000.
  const small = { window: { limit: 20_000, source: 'model' as const }, config: config((c) => ({ ...c, minMessages: 2 })) };

  for (const reason of ['threshold', 'overflow', 'manual'] as const) {
    it(`keeps only the latest request instead (${reason})`, async () => {
      const { deps } = setup();
      const outcome = await computeCompaction(request(asLog(wrote), { reason, ...small, overWindow: reason === 'overflow' }), deps);
      assert.equal(outcome.status, 'compacted');
      if (outcome.status !== 'compacted') return;
      assert.equal(outcome.compaction.entry?.firstKeptMessageId, 't3-u', 'the write is summarized, not kept');
      const kept = outcome.compaction.view.filter((m) => m.role !== 'system' && !m.summaryOf);
      assert.ok(deps.counter.countMessages(kept) <= 10_000);
      assert.equal(outcome.compaction.lowGain, false);
    });
  }
});

describe('compaction: requests that would not fit the summarizer', () => {
  it('splits into batches by importance and merges the batch summaries', async () => {
    const summarizer = new RecordingSummarizer(
      (r, i) => ({ text: templateSummary(`summary number ${i} of a ${r.purpose} request, long enough to use.`) }),
      6_000,
    );
    const { deps } = setup(summarizer);
    const long = [
      sys('s', 'sys'),
      ...turn('t1', 'one', 8, 'a'.repeat(1_900)),
      ...turn('t2', 'two', 8, 'b'.repeat(1_900)),
      ...turn('t3', 'three', 8, 'c'.repeat(1_900)),
      ...turn('t4', 'four', 1),
    ];
    const outcome = await computeCompaction(request(asLog(long)), deps);
    assert.equal(outcome.status, 'compacted');
    const purposes = summarizer.requests.map((r) => r.purpose);
    assert.ok(purposes.filter((p) => p === 'batch').length >= 2, purposes.join());
    assert.equal(purposes.at(-1), 'merge');
    for (const r of summarizer.requests) {
      const size = r.maxOutputTokens + deps.counter.countText(r.system) + r.messages.reduce((n, m) => n + deps.counter.countText(m.content) + 4, 4);
      assert.ok(size <= 6_000, `a ${r.purpose} request of ${size} tokens exceeds the window`);
    }
    // Every compacted message reached some batch.
    const sent = summarizer.requests
      .filter((r) => r.purpose === 'batch')
      .flatMap((r) => r.messages.map((m) => m.content))
      .join('\n');
    for (const id of ['one', 'two', 'three']) assert.ok(sent.includes(id), id);
    const merge = summarizer.requests.at(-1)!;
    assert.deepEqual(
      merge.messages.slice(0, -1).map((m) => m.role),
      merge.messages.slice(0, -1).map(() => 'system'),
    );
    if (outcome.status === 'compacted') assert.equal(outcome.compaction.entry!.summarizerCalls, summarizer.requests.length);
  });

  it('sends a request that fits in one call', async () => {
    const { deps, summarizer } = setup();
    await computeCompaction(request(asLog(conversation)), deps);
    assert.deepEqual(
      summarizer.requests.map((r: SummaryRequest) => r.purpose),
      ['summary'],
    );
  });
});

describe('compaction: failure without loss', () => {
  it('leaves the history untouched when the summarizer fails and no fallback is allowed', async () => {
    const { deps } = setup(new RecordingSummarizer(() => Promise.reject(new Error('503 upstream down'))));
    const log = asLog(conversation);
    const snapshot = structuredClone(log);
    const outcome = await compact(request(log, { config: { ...messagesConfig, onSummarizerFailure: 'keep-history' } }), deps);
    assert.equal(outcome.status, 'failed');
    assert.match(outcome.status === 'failed' ? outcome.reason : '', /503 upstream down.*unchanged/);
    assert.deepEqual(log, snapshot);
  });

  it('does not ask a resting summarizer: the extractive summary says why, or with keep-history nothing changes and the reason is kept', async () => {
    const why = 'local was not asked, since its last 2 summaries failed (the last: it timed out)';
    const { deps, summarizer } = setup();
    const outcome = await compact(request(asLog(conversation), { reason: 'threshold', summarizerResting: why }), deps);
    assert.equal(summarizer.requests.length, 0);
    assert.equal(outcome.status, 'compacted');
    if (outcome.status !== 'compacted') return;
    const entry = outcome.compaction.entry!;
    assert.equal(entry.fallback, true);
    assert.equal(entry.failure, why);
    assert.equal(entry.summarizerCalls, 0);
    assert.match(entry.summary, /extracted without a model because local was not asked/);

    const kept = await compact(
      request(asLog(conversation), {
        reason: 'threshold',
        summarizerResting: why,
        config: { ...messagesConfig, onSummarizerFailure: 'keep-history' },
      }),
      deps,
    );
    assert.deepEqual(kept, { status: 'failed', reason: `Compaction failed: ${why}. The conversation is unchanged.`, summarizerFailure: why });
    assert.equal(summarizer.requests.length, 0);
  });

  it('keeps an API key a failing server echoed out of the stored reason and the fallback summary', async () => {
    const key = 'sk-or-v1-0123456789abcdef0123456789abcdef';
    const { deps } = setup(new RecordingSummarizer(() => Promise.reject(new Error(`401 Unauthorized: invalid token Bearer ${key}`))));
    const outcome = await compact(request(asLog(conversation)), { ...deps, redact: (t) => t.split('0123456789abcdef').join('[x]') });
    assert.equal(outcome.status, 'compacted');
    if (outcome.status !== 'compacted') return;
    const e = outcome.compaction.entry!;
    assert.equal(e.fallback, true);
    assert.ok(!JSON.stringify(e).includes('0123456789abcdef'), JSON.stringify(e.failure));
    assert.match(e.failure ?? '', /401 Unauthorized/);
  });

  it('frees space with an extractive summary marked as fallback when the summarizer fails', async () => {
    const { deps } = setup(new RecordingSummarizer(() => Promise.reject(new Error('boom'))));
    // The first read failed: its result is an error.
    const withError = conversation.map((m) =>
      m.id === 't1-t0' ? toolResult('err', 't1-c0', 'read_file', 'ENOENT: no such file src/missing.ts', true) : m,
    );
    const outcome = await computeCompaction(request(asLog(withError)), deps);
    assert.equal(outcome.status, 'compacted');
    if (outcome.status !== 'compacted') return;
    const e = outcome.compaction.entry!;
    assert.equal(e.fallback, true);
    assert.equal(e.model, 'extractive-fallback');
    assert.match(e.failure ?? '', /boom/);
    assert.match(e.summary, /### Original Task \(verbatim\)\nBuild a flashcard app\n/);
    assert.match(e.summary, /> Add SM-2 scheduling/);
    assert.match(e.summary, /read_file ×/);
    assert.match(e.summary, /ENOENT: no such file src\/missing\.ts/);
    assert.ok(e.tokensAfter < e.tokensBefore);
  });

  it('treats an empty answer as a failure', async () => {
    const { deps } = setup(new RecordingSummarizer(() => ({ text: '   ' })));
    const outcome = await computeCompaction(request(asLog(conversation)), deps);
    assert.ok(outcome.status === 'compacted');
    assert.equal(outcome.compaction.entry!.fallback, true);
    assert.match(outcome.compaction.entry!.failure ?? '', /no text/);
  });

  it('times out a summarizer that never answers', async () => {
    const clock = new FakeClock();
    const summarizer = new RecordingSummarizer(() => new Promise(() => undefined));
    const { deps } = setup(summarizer, clock);
    const pending = computeCompaction(request(asLog(conversation), { config: { ...messagesConfig, summarizerTimeoutMs: 5_000 } }), deps);
    await new Promise((r) => setImmediate(r));
    clock.advance(5_000);
    const outcome = await pending;
    assert.ok(outcome.status === 'compacted');
    assert.equal(outcome.compaction.entry!.fallback, true);
    assert.match(outcome.compaction.entry!.failure ?? '', /did not answer within 5 s/);
  });

  it('stops when cancelled and changes nothing', async () => {
    const controller = new AbortController();
    const { deps } = setup(new RecordingSummarizer(() => new Promise(() => undefined)));
    const pending = computeCompaction(request(asLog(conversation), { signal: controller.signal }), deps);
    await new Promise((r) => setImmediate(r));
    controller.abort();
    const outcome = await pending;
    assert.equal(outcome.status, 'cancelled');
  });

  it('reports a compaction that frees less than the minimum share as low-gain', async () => {
    const short = templateSummary('A short summary that is long enough to be used.');
    const first = await computeCompaction(request(asLog(conversation)), setup(new RecordingSummarizer(() => ({ text: short }))).deps);
    assert.ok(first.status === 'compacted');
    const { tokensBefore, tokensAfter } = first.compaction.entry!;
    assert.equal(first.compaction.entry!.lowGain, false);
    // Pad the summary so that the compaction frees only about 5% of the view.
    const padTokens = tokensBefore - tokensAfter - Math.floor(tokensBefore * 0.05);
    const padded = `${short}\n${'p'.repeat(padTokens * 4)}`;
    const second = await computeCompaction(request(asLog(conversation)), setup(new RecordingSummarizer(() => ({ text: padded }))).deps);
    assert.ok(second.status === 'compacted');
    const freed = (second.compaction.entry!.tokensBefore - second.compaction.entry!.tokensAfter) / second.compaction.entry!.tokensBefore;
    assert.ok(freed > 0 && freed < 0.1, `freed ${freed}`);
    assert.equal(second.compaction.entry!.lowGain, true);
  });

  it('asks no summarizer at the threshold or after an overflow when what a summary could replace is less than the share a compaction must free', async () => {
    // The old part is a few short messages; the recent part kept verbatim holds nearly all the view.
    const lopsided = [sys('s', 'You are a coding agent.'), ...turn('t1', 'Look', 1), ...turn('t2', 'Read the big file', 1, 'z'.repeat(8_000))];
    const threshold = setup();
    const skipped = await computeCompaction(request(asLog(lopsided), { reason: 'threshold' }), threshold.deps);
    assert.equal(skipped.status, 'noop');
    assert.match(
      skipped.status === 'noop' ? skipped.reason : '',
      /4 messages a summary could replace hold about \d+ of the view's \d+ tokens, less than the 10%/,
    );
    assert.equal(threshold.summarizer.requests.length, 0, 'no summarizer call');
    // Over the window as well, and for a request the server refused: such a summary would not make it
    // fit. The latest request is kept whole whatever the window, so nearly all this view stays.
    const longRequest = asLog([sys('s', 'You are a coding agent.'), ...turn('t1', 'Look', 1), user('u2', 'z'.repeat(8_000))]);
    const small = { window: { limit: 1_000, source: 'model' as const } };
    for (const reason of ['threshold', 'overflow'] as const) {
      const over = setup();
      const outcome = await computeCompaction(request(longRequest, { reason, ...small }), over.deps);
      assert.equal(outcome.status, 'noop', reason);
      assert.equal(over.summarizer.requests.length, 0, `no summarizer call over the window (${reason})`);
    }
    // Asked for, it is tried all the same.
    const tried = setup();
    await computeCompaction(request(longRequest, { reason: 'manual', ...small }), tried.deps);
    assert.ok(tried.summarizer.requests.length > 0, 'the summarizer was asked for a manual compaction');
  });

  it('after an overflow, never applies a summary that frees less than the share a compaction must free', async () => {
    // A summary padded to take nearly all that it replaces: about 5% of the view is freed.
    const short = templateSummary('A short summary that is long enough to be used.');
    const first = await computeCompaction(
      request(asLog(conversation), { reason: 'overflow' }),
      setup(new RecordingSummarizer(() => ({ text: short }))).deps,
    );
    assert.ok(first.status === 'compacted' && first.compaction.entry, 'a summary that frees enough is applied');
    const { tokensBefore, tokensAfter } = first.compaction.entry;
    const padded = `${short}\n${'p'.repeat((tokensBefore - tokensAfter - Math.floor(tokensBefore * 0.05)) * 4)}`;
    for (const reason of ['overflow', 'manual'] as const) {
      const outcome = await computeCompaction(
        request(asLog(conversation), { reason }),
        setup(new RecordingSummarizer(() => ({ text: padded }))).deps,
      );
      if (reason === 'manual') {
        assert.ok(outcome.status === 'compacted' && outcome.compaction.lowGain, 'asked for, it is applied and reported as low-gain');
        continue;
      }
      assert.equal(outcome.status, 'noop');
      assert.match(
        outcome.status === 'noop' ? outcome.reason : '',
        /the summary would free only [\d,]+ of the view's [\d,]+ tokens \([\d.]+%\), less than the 10%/,
      );
    }
  });

  it('changes nothing when the summary would be larger than what it replaces', async () => {
    const long = Array.from({ length: 5_000 }, (_, i) => `step ${i} checked src/f${i}.ts`).join('; ');
    const { deps } = setup(new RecordingSummarizer(() => ({ text: templateSummary(long) })));
    const outcome = await computeCompaction(request(asLog(conversation)), deps);
    assert.equal(outcome.status, 'noop');
    assert.match(outcome.status === 'noop' ? outcome.reason : '', /no fewer than/);
  });
});

describe('compaction: computed in the background, applied later', () => {
  it('applies to a log that grew meanwhile and keeps the new messages as recent', async () => {
    const { deps } = setup();
    const snapshot = asLog(conversation);
    const outcome = await computeCompaction(request(snapshot), deps);
    assert.ok(outcome.status === 'compacted');
    const current = [...snapshot, ...asLog([user('late-1', 'one more thing'), user('late-2', 'and another')])];
    const applied = applyCompaction(current, outcome.compaction, deps.memo);
    assert.ok(applied.ok);
    assert.deepEqual(
      applied.view.slice(-2).map((m) => m.id),
      ['late-1', 'late-2'],
    );
  });

  it('refuses to apply when the snapshot is no longer a prefix, or another compaction happened', async () => {
    const { deps } = setup();
    const snapshot = asLog(conversation);
    const outcome = await computeCompaction(request(snapshot), deps);
    assert.ok(outcome.status === 'compacted');
    const rewritten = asLog([conversation[0]!, user('other', 'different'), ...conversation.slice(1)]);
    assert.equal(applyCompaction(rewritten, outcome.compaction, deps.memo).ok, false);
    const other = await compact(request(snapshot), deps);
    assert.ok(other.status === 'compacted' && other.log);
    const stale = applyCompaction(other.log, outcome.compaction, deps.memo);
    assert.equal(stale.ok, false);
    assert.match(!stale.ok ? stale.reason : '', /Another compaction/);
  });
});

describe('compaction: summary options', () => {
  it("at brief depth cuts the least important messages short by importance score, never the user's", async () => {
    const longAnswer = 'q'.repeat(1_500);
    const chat = [...turn('t1', `Please do it ${'u'.repeat(1_500)}`, 3, longAnswer), ...turn('t2', 'more', 3, longAnswer), ...turn('t3', 'last', 0)];
    const lengths = async (depth: 'brief' | 'standard') => {
      const summarizer = new RecordingSummarizer();
      const cfg = { ...messagesConfig, summary: { ...messagesConfig.summary, depth } };
      await computeCompaction(request(asLog(chat), { config: cfg }), setup(summarizer).deps);
      return summarizer.requests[0]!.messages.slice(0, -1).map((m) => ({
        role: m.role,
        length: m.content.length,
        user: m.content.includes('Please do it'),
      }));
    };
    const brief = await lengths('brief');
    const standard = await lengths('standard');
    assert.equal(brief.length, standard.length);
    const shortened = brief.filter((m, i) => m.length < standard[i]!.length);
    assert.ok(shortened.length >= Math.floor(brief.length / 3) - 1 && shortened.length > 0, `${shortened.length} shortened`);
    assert.ok(brief.find((m) => m.user)!.length === standard.find((m) => m.user)!.length, 'user words are never cut');
  });

  it('puts the summary in an assistant message when configured', async () => {
    const { deps } = setup();
    const cfg = resolveConfig({ keepRecent: { mode: 'messages', messages: 4 }, summary: { messageRole: 'assistant' } }).config;
    const outcome = await computeCompaction(request(asLog(conversation), { config: cfg }), deps);
    assert.ok(outcome.status === 'compacted');
    assert.equal(outcome.compaction.view.find((m) => m.summaryOf)?.role, 'assistant');
  });
});
