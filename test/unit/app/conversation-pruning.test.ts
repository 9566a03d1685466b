import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_CONFIG, type CompactionConfig } from '../../../src/core/config';
import type { LogRecord } from '../../../src/core/history';
import { MessageTokenCounter } from '../../../src/core/message-tokens';
import type { Message } from '../../../src/core/messages';
import { charEstimator } from '../../../src/core/tokenizer';
import type { Conversation } from '../../../src/app/conversation/conversation';
import { ConversationStore } from '../../../src/app/store/conversation-store';
import { compactionSentence, undoSentence } from '../../../src/app/report/reports';
import { FakeClock, RecordingSummarizer, templateSummary } from '../core/fixtures';
import { memoryIndex, newConversation } from '../fixtures/conversation-deps';

/**
 * Pruning in a conversation: an automatic compaction that pruning alone brings under the warning
 * level, stored as a record of its own, read back after a reload, undone like a compaction, and its
 * originals found again by `recall`.
 */

const config: CompactionConfig = { ...DEFAULT_CONFIG, minMessages: 2, keepRecent: { ...DEFAULT_CONFIG.keepRecent, mode: 'messages', messages: 4 } };

/** One turn that reads the same two files again: each read is 500 tokens (chars/4). */
function rereadTurn(n: number): LogRecord[] {
  const messages: Message[] = [{ id: `u${n}`, role: 'user', content: [{ type: 'text', text: `Look at the app again (${n}).` }] }];
  for (const file of ['app', 'deck']) {
    messages.push({
      id: `a${n}-${file}`,
      role: 'assistant',
      content: [{ type: 'tool-call', toolCallId: `c${n}-${file}`, toolName: 'read_file', input: { path: `src/${file}.ts` } }],
    });
    messages.push({
      id: `t${n}-${file}`,
      role: 'tool',
      content: [{ type: 'tool-result', toolCallId: `c${n}-${file}`, toolName: 'read_file', output: `${file} v${n} `.repeat(250).slice(0, 2_000) }],
    });
  }
  messages.push({ id: `d${n}`, role: 'assistant', content: [{ type: 'text', text: `Read both files, turn ${n}.` }] });
  return messages.map((message) => ({ type: 'message', message }));
}

describe('pruning in a conversation', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'longrun-pruning-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const clock = new FakeClock();
  const state = new Map<string, unknown>();
  const counter = new MessageTokenCounter(charEstimator);
  let summarizer: RecordingSummarizer;
  let n = 0;

  function open(store: ConversationStore, log: readonly LogRecord[], limit: number, cfg: CompactionConfig): Conversation {
    return newConversation({
      log,
      store,
      index: memoryIndex(state),
      clock,
      newId: () => `id${++n}`,
      config: cfg,
      model: { limit, counter, requestOverhead: 100 },
      summarizer: async () => summarizer,
    });
  }

  async function setup(turns: number, limit: number, cfg = config) {
    summarizer = new RecordingSummarizer(() => ({ text: templateSummary('The app and the deck were read several times.') }));
    const store = new ConversationStore(dir, () => clock.now());
    await store.create('c1');
    const conversation = open(store, [], limit, cfg);
    for (let t = 0; t < turns; t++) await conversation.append(rereadTurn(t));
    return { conversation, store };
  }

  /** The same conversation as a reloaded window reads it from disk. */
  async function reload(limit: number, cfg = config): Promise<Conversation> {
    const store = new ConversationStore(dir, () => clock.now());
    const { log, problems } = await store.open('c1');
    assert.deepEqual(problems, []);
    return open(store, log, limit, cfg);
  }

  it('compacts automatically by pruning alone when that brings the view under the warning level, and says so', async () => {
    // Four turns that read the same two files (4,084 tokens and 100 of system prompt) fill 91% of 4,600.
    const { conversation } = await setup(4, 4_600);
    assert.equal(conversation.assess().level, 'critical');
    const outcome = await conversation.compact('threshold');
    assert.equal(outcome.status, 'compacted');
    if (outcome.status !== 'compacted') return;
    assert.equal(summarizer.requests.length, 0, 'no summary was asked for');
    assert.equal(outcome.compaction.entry, undefined);
    assert.equal(conversation.assess().level, 'ok');
    const pruning = outcome.compaction.pruning!;
    assert.equal(pruning.tokensBefore, outcome.compaction.tokensBefore);
    assert.equal(pruning.tokensAfter, conversation.count().localTokens - 100);
    assert.match(
      compactionSentence(outcome.compaction),
      /^Pruned \d superseded tool outputs \(−[\d,]+ tokens\); no summary needed: [\d.]+k → [\d.]+k tokens$/,
    );
    assert.deepEqual(conversation.lastStep(), { pruning });
    assert.equal(conversation.lastCompaction(), undefined);
    assert.ok(conversation.hasArchive());
  });

  it('no longer trusts a usage report made before the pruning: the view it counted changed', async () => {
    const { conversation } = await setup(4, 4_600);
    const last = conversation.view().at(-1)!;
    await conversation.append([
      { type: 'usage', usage: { anchorMessageId: last.id, inputTokens: 4_200, outputTokens: 10, basis: conversation.requestBasis().basis } },
    ]);
    assert.equal(conversation.count().source, 'provider+local');
    await conversation.compact('threshold');
    assert.notEqual(conversation.requestBasis().basis, null, 'the pruning is the new basis');
    assert.equal(conversation.count().source, 'local');
    assert.equal(conversation.count().localTokens, counter.countMessages(conversation.view()) + 100);
  });

  it('stores the pruning, so that a reloaded window shows the same view and count', async () => {
    const { conversation } = await setup(4, 4_600);
    await conversation.compact('threshold');
    const view = conversation.view();
    const count = conversation.count();
    const reloaded = await reload(4_600);
    assert.deepEqual(reloaded.view(), view);
    assert.deepEqual(reloaded.count(), count);
    assert.deepEqual(reloaded.prunings(), conversation.prunings());
  });

  it('undoes a pruning like a compaction: the outputs come back, and stay back after a reload', async () => {
    const { conversation } = await setup(4, 4_600);
    const original = conversation.view();
    const outcome = await conversation.compact('threshold');
    assert.ok(outcome.status === 'compacted' && outcome.compaction.pruning);
    const undone = await conversation.undo();
    assert.ok(undone.ok);
    assert.deepEqual(undone.step, { pruning: outcome.compaction.pruning });
    assert.match(undoSentence(undone.step), /^undid the pruning; the \d pruned tool outputs are back in full\.$/);
    assert.deepEqual(conversation.view(), original);
    assert.equal(conversation.hasArchive(), false);
    assert.deepEqual((await reload(4_600)).view(), original);
    assert.deepEqual(await conversation.undo(), { ok: false, reason: 'There is no compaction to undo.' });
  });

  it('summarizes after pruning when pruning is not enough, and undoes both in one step', async () => {
    // Warned at a tenth of the window: even with every superseded read pruned, the view is above that.
    const low: CompactionConfig = { ...config, trigger: { ...config.trigger, warningThreshold: 0.1 } };
    const { conversation } = await setup(6, 6_800, low);
    const original = conversation.view();
    const outcome = await conversation.compact('threshold');
    assert.equal(outcome.status, 'compacted');
    if (outcome.status !== 'compacted') return;
    assert.equal(summarizer.requests.length, 1);
    const { entry, pruning } = outcome.compaction;
    assert.ok(entry && pruning);
    assert.match(
      compactionSentence(outcome.compaction),
      /^Pruned \d+ superseded tool outputs \(−[\d,]+ tokens\), then summarized \d+ messages: [\d.]+k → [\d.]+k? tokens \(round 1\)$/,
    );
    const reloaded = await reload(6_800, low);
    assert.deepEqual(reloaded.lastStep(), { compaction: entry, pruning });
    const undone = await reloaded.undo();
    assert.ok(undone.ok);
    assert.match(
      undoSentence(undone.step),
      /^undid compaction round 1 and the pruning made with it; the \d+ original messages and \d+ pruned tool outputs are back\.$/,
    );
    assert.deepEqual(reloaded.view(), original);
  });

  it('finds the pruned originals again with recall, within a budget bounded by the window', async () => {
    const { conversation } = await setup(4, 4_600);
    assert.match(await conversation.recall({ path: 'src/app.ts' }), /^Nothing of this conversation has been compacted or pruned yet/);
    await conversation.compact('threshold');
    const found = await conversation.recall({ path: 'src/app.ts' });
    assert.match(found, /archived messages? match(es)? the path "src\/app\.ts"\./);
    assert.match(found, /app v\d app v\d/);
    assert.match(await conversation.recall({ query: 'app v0' }), /app v0 app v0/, 'the oldest read is found by its words');
    // A tenth of the window (at least 500 tokens), whatever the model asks for.
    const capped = await conversation.recall({ query: 'v0', maxTokens: 16_000 });
    assert.match(capped, /budget of 500 tokens/);
  });
});
