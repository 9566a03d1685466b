import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EngineMemo } from '../../../src/core/engine-memo';
import { DEFAULT_CONFIG, type CompactionConfig } from '../../../src/core/config';
import { renderFileOperations } from '../../../src/core/file-ledger';
import { ledgerOf, type LogRecord } from '../../../src/core/history';
import { MessageTokenCounter } from '../../../src/core/message-tokens';
import { needleLedgerOf } from '../../../src/core/needles';
import type { Summarizer, SummaryRequest, SummaryResponse } from '../../../src/core/ports';
import { charEstimator } from '../../../src/core/tokenizer';
import { ConversationStore } from '../../../src/app/store/conversation-store';
import { assistant, FakeClock, templateSummary, toolResult } from '../core/fixtures';
import { newConversation } from '../fixtures/conversation-deps';

/**
 * The summary prepared ahead of need: started in the background past the warning level, applied at
 * once at the compaction point, discarded when stale, cancelled by an undo or a new conversation,
 * and never written twice for the same range.
 */

/** A summarizer whose answers the test releases one by one. */
class GatedSummarizer implements Summarizer {
  readonly name = 'gated';
  readonly calls: Array<{ request: SummaryRequest; signal?: AbortSignal; release: () => void }> = [];
  async summarize(request: SummaryRequest, signal?: AbortSignal): Promise<SummaryResponse> {
    await new Promise<void>((resolve, reject) => {
      this.calls.push({ request, ...(signal ? { signal } : {}), release: resolve });
      signal?.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
    });
    return { text: templateSummary(`Work so far, call ${this.calls.length}, summarized for the test.`) };
  }
}

const config: CompactionConfig = { ...DEFAULT_CONFIG, minMessages: 2, keepRecent: { ...DEFAULT_CONFIG.keepRecent, mode: 'messages', messages: 2 } };

describe('summarizing ahead of need', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'longrun-ahead-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function setup(ahead = true, cfg: CompactionConfig = config, requestOverhead = 0) {
    const clock = new FakeClock();
    const store = new ConversationStore(dir, () => clock.now());
    await store.create('c1');
    const summarizer = new GatedSummarizer();
    const counter = new MessageTokenCounter(charEstimator);
    const conversation = newConversation({
      store,
      clock,
      config: cfg,
      // 10,000 tokens: warning from 7,500, compaction from 9,000.
      model: { limit: 10_000, counter, requestOverhead },
      summarizer,
      summarizeAhead: () => ahead,
    });
    const say = (i: number, tokens: number) =>
      conversation.append([
        { type: 'message', message: { id: `u${i}`, role: 'user', content: [{ type: 'text', text: 'x'.repeat(tokens * 4) }] } },
        { type: 'message', message: { id: `a${i}`, role: 'assistant', content: [{ type: 'text', text: 'y'.repeat(tokens * 4) }] } },
      ]);
    return { conversation, summarizer, say, counter };
  }

  const until = async (what: string, probe: () => boolean): Promise<void> => {
    for (let i = 0; i < 200 && !probe(); i++) await new Promise((r) => setTimeout(r, 5));
    assert.ok(probe(), what);
  };

  it('starts past the warning level, and the compaction at the threshold applies it without a second call', async () => {
    const { conversation, summarizer, say } = await setup();
    for (let i = 0; i < 4; i++) await say(i, 1_000);
    assert.equal(conversation.assess().level, 'warning');
    await until('the summary is being prepared', () => summarizer.calls.length === 1);
    summarizer.calls[0]!.release();
    await say(4, 600);
    assert.equal(conversation.assess().level, 'critical');
    const outcome = await conversation.compact('threshold');
    assert.equal(outcome.status, 'compacted');
    assert.equal(summarizer.calls.length, 1, 'no second summary of the same range');
    if (outcome.status !== 'compacted') return;
    assert.ok(
      conversation.view().some((m) => m.id === 'u4'),
      'what came after the snapshot stays in the view',
    );
    // The numbers describe the log it was applied to, not the snapshot it was computed from.
    assert.ok(outcome.compaction.entry!.tokensBefore >= 9_000, String(outcome.compaction.entry!.tokensBefore));
    assert.equal(outcome.compaction.entry!.tokensAfter, conversation.count().localTokens);
  });

  it('asks no summary ahead when pruning alone will reach the target at the compaction point, and the point prunes', async () => {
    const { conversation, summarizer, say } = await setup();
    // The same file read four times: the first three outputs are superseded, about 5,700 tokens a pruning frees.
    const read = (i: number) => [
      { type: 'message' as const, message: assistant(`r${i}`, '', { callId: `c${i}`, tool: 'read_file', input: { path: 'src/a.ts' } }) },
      { type: 'message' as const, message: toolResult(`t${i}`, `c${i}`, 'read_file', 'z'.repeat(1_900 * 4)) },
    ];
    await conversation.append([{ type: 'message', message: { id: 'u0', role: 'user', content: [{ type: 'text', text: 'read it' }] } }]);
    for (let i = 0; i < 4; i++) await conversation.append(read(i));
    assert.equal(conversation.assess().level, 'warning');
    await until('the background work settles', () => conversation.aheadState() === 'ready' || conversation.aheadState() === 'idle');
    assert.equal(summarizer.calls.length, 0, 'no summary was asked for ahead');
    await say(1, 800);
    assert.equal(conversation.assess().level, 'critical');
    const outcome = await conversation.compact('threshold');
    assert.equal(outcome.status, 'compacted');
    if (outcome.status !== 'compacted') return;
    assert.equal(outcome.compaction.entry, undefined, 'a pruning alone');
    assert.ok(outcome.compaction.pruning && outcome.compaction.pruning.outputs.length >= 3);
    assert.equal(summarizer.calls.length, 0);
    assert.notEqual(conversation.assess().level, 'critical');
  });

  it('keeps, once applied at the compaction point, about the recent part the setting asks for, not that plus what came meanwhile', async () => {
    const byTokens: CompactionConfig = { ...DEFAULT_CONFIG, minMessages: 2 };
    const { conversation, summarizer, say, counter } = await setup(true, byTokens);
    for (let i = 0; i < 4; i++) await say(i, 1_000);
    await until('the summary is being prepared', () => summarizer.calls.length === 1);
    summarizer.calls[0]!.release();
    await say(4, 600);
    const outcome = await conversation.compact('threshold');
    assert.equal(outcome.status, 'compacted');
    const kept = counter.countMessages(conversation.view().filter((m) => !m.summaryOf));
    // 35% of the window is 3,500 tokens; the cut falls between whole messages of about 1,000 tokens.
    assert.ok(kept <= 3_500 + 1_000, `kept ${kept} tokens`);
  });

  it('keeps a share of the room beside the system prompt and tools, not of the whole window', async () => {
    const byTokens: CompactionConfig = { ...DEFAULT_CONFIG, minMessages: 2 };
    // 4,000 tokens of system prompt and tools: the messages have 6,000, warning from 3,500, compaction from 5,000.
    const { conversation, summarizer, say, counter } = await setup(true, byTokens, 4_000);
    for (let i = 0; i < 4; i++) await say(i, 500);
    await until('the summary is being prepared', () => summarizer.calls.length === 1);
    summarizer.calls[0]!.release();
    await say(4, 600);
    const outcome = await conversation.compact('threshold');
    assert.equal(outcome.status, 'compacted');
    const kept = counter.countMessages(conversation.view().filter((m) => !m.summaryOf));
    // 35% of the 6,000 is 2,100 tokens (of the whole 10,000, 3,500); the cut falls between whole
    // messages of 500 to 600 tokens, once in the snapshot and once in what came after it.
    assert.ok(kept <= 2_100 + 700, `kept ${kept} tokens`);
  });

  it('joins a summary still being prepared instead of starting another', async () => {
    const { conversation, summarizer, say } = await setup();
    for (let i = 0; i < 4; i++) await say(i, 1_000);
    await until('the summary is being prepared', () => summarizer.calls.length === 1);
    await say(4, 600);
    const compaction = conversation.compact('threshold');
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(summarizer.calls.length, 1);
    summarizer.calls[0]!.release();
    assert.equal((await compaction).status, 'compacted');
    assert.equal(summarizer.calls.length, 1);
  });

  it('is discarded when stale, and a fresh summary is written', async () => {
    const { conversation, summarizer, say } = await setup();
    for (let i = 0; i < 4; i++) await say(i, 1_000);
    await until('the summary is being prepared', () => summarizer.calls.length === 1);
    // A manual compaction with a focus needs its own summary: the one prepared ahead is dropped.
    const manual = conversation.compact('manual', { focus: 'the parser' });
    await until('the focused summary is asked for', () => summarizer.calls.length === 2);
    assert.equal(summarizer.calls[0]!.signal?.aborted, true, 'the prepared one was cancelled');
    summarizer.calls[1]!.release();
    const outcome = await manual;
    assert.equal(outcome.status, 'compacted');
    assert.match(summarizer.calls[1]!.request.messages.at(-1)!.content, /focus on: the parser/);
  });

  it('is cancelled by an undo and by leaving the conversation', async () => {
    const { conversation, summarizer, say } = await setup();
    for (let i = 0; i < 4; i++) await say(i, 1_000);
    await until('the summary is being prepared', () => summarizer.calls.length === 1);
    summarizer.calls[0]!.release();
    assert.equal((await conversation.compact('manual')).status, 'compacted');
    for (let i = 4; i < 8; i++) await say(i, 1_000);
    await until('prepared again', () => summarizer.calls.length === 2);
    assert.equal((await conversation.undo()).ok, true);
    assert.equal(summarizer.calls[1]!.signal?.aborted, true, 'the undo cancelled it');
    assert.equal(conversation.isSummarizingAhead(), false);
    await say(9, 100);
    await until('prepared again after the undo', () => summarizer.calls.length === 3);
    conversation.cancelAhead();
    assert.equal(summarizer.calls[2]!.signal?.aborted, true, 'leaving the conversation cancelled it');
  });

  it('does not apply a prepared summary that frees too little of the log as it grew: it is made again on the current log', async () => {
    const keepSix: CompactionConfig = {
      ...DEFAULT_CONFIG,
      minMessages: 2,
      minGainShare: 0.2,
      keepRecent: { ...DEFAULT_CONFIG.keepRecent, mode: 'messages', messages: 6 },
    };
    // The system prompt and tools take 3,400 tokens: the messages have 6,600, of which the kept part
    // may hold half, 3,300 (the six kept messages always fit).
    const { conversation, summarizer, say } = await setup(true, keepSix, 3_400);
    await say(0, 450);
    for (let i = 1; i < 4; i++) await say(i, 540);
    // Prepared on eight messages, keeping six: it summarizes only the first 900 tokens, just over a
    // fifth of the view then, under a fifth of it (with its summary) once it grew.
    await until('the summary is being prepared', () => summarizer.calls.length === 1);
    summarizer.calls[0]!.release();
    await say(4, 500);
    const compaction = conversation.compact('threshold');
    await until('the summary is made again', () => summarizer.calls.length === 2);
    summarizer.calls[1]!.release();
    const outcome = await compaction;
    assert.equal(outcome.status, 'compacted');
    if (outcome.status !== 'compacted') return;
    assert.equal(outcome.compaction.lowGain, false);
    assert.ok(outcome.compaction.entry!.compactedMessageIds.includes('a1'), 'the cut went deeper, on the log as it is');
    assert.deepEqual(
      conversation
        .view()
        .filter((m) => !m.summaryOf)
        .map((m) => m.id),
      ['u2', 'a2', 'u3', 'a3', 'u4', 'a4'],
    );
  });

  it('does not apply a prepared summary that would leave the view over the window: it is made again on the current log', async () => {
    const { conversation, summarizer, say } = await setup();
    for (let i = 0; i < 4; i++) await say(i, 1_000);
    await until('the summary is being prepared', () => summarizer.calls.length === 1);
    summarizer.calls[0]!.release();
    // A large answer since: the summary prepared (of the first six messages) would leave about 10,300 of 10,000 tokens.
    await say(4, 4_000);
    assert.equal(conversation.assess().level, 'over');
    const compaction = conversation.compact('threshold');
    await until('the summary is made again', () => summarizer.calls.length === 2);
    // Made again over the window, it may take more than one call: each is answered as it comes.
    let settled = false;
    void compaction.finally(() => (settled = true));
    while (!settled) {
      for (const call of summarizer.calls) call.release();
      await new Promise((r) => setTimeout(r, 5));
    }
    const outcome = await compaction;
    assert.equal(outcome.status, 'compacted');
    assert.notEqual(conversation.assess().level, 'over');
  });

  it('gives the applied summary the file lists and needles of the log it is applied to, not those of its snapshot', async () => {
    const { conversation, summarizer, say } = await setup();
    const file = (kind: 'read' | 'created' | 'modified', path: string): LogRecord => ({ type: 'file', event: { kind, path, actor: 'agent', at: 1 } });
    await conversation.append([
      { type: 'message', message: { id: 'rule', role: 'user', content: [{ type: 'text', text: 'Never edit config.json.' }] } },
      file('read', 'src/a.ts'),
      file('read', 'src/b.ts'),
    ]);
    for (let i = 0; i < 4; i++) await say(i, 1_000);
    await until('the summary is being prepared', () => summarizer.calls.length === 1);
    // While it is written: b.ts is edited, c.ts created then edited, d.ts read.
    await conversation.append([file('modified', 'src/b.ts'), file('created', 'src/c.ts'), file('modified', 'src/c.ts'), file('read', 'src/d.ts')]);
    summarizer.calls[0]!.release();
    await say(4, 600);
    const outcome = await conversation.compact('threshold');
    assert.equal(outcome.status, 'compacted');
    if (outcome.status !== 'compacted') return;
    assert.equal(summarizer.calls.length, 1, 'the prepared summary was applied');
    const entry = outcome.compaction.entry!;
    const log = conversation.log();
    const before = log.slice(
      0,
      log.findIndex((r) => r.type === 'compaction' && r.entry.id === entry.id),
    );
    assert.deepEqual(entry.fileOperations, ledgerOf(before));
    assert.ok(entry.summary.endsWith(renderFileOperations(ledgerOf(before))), entry.summary.slice(-300));
    assert.match(entry.summary, /<read-files>\nsrc\/a\.ts\nsrc\/d\.ts\n<\/read-files>/);
    assert.match(entry.summary, /src\/b\.ts \(modified\)\nsrc\/c\.ts \(created\)/);
    assert.deepEqual(entry.needles, needleLedgerOf(before, new EngineMemo()));
    assert.equal(entry.needles?.through, 'a4');
  });

  it('does nothing ahead when turned off', async () => {
    const { conversation, summarizer, say } = await setup(false);
    for (let i = 0; i < 4; i++) await say(i, 1_000);
    await new Promise((r) => setTimeout(r, 30));
    assert.equal(summarizer.calls.length, 0);
    assert.equal(conversation.isSummarizingAhead(), false);
  });
});
