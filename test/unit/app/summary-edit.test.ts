import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EngineMemo } from '../../../src/core/engine-memo';
import { DEFAULT_CONFIG, type CompactionConfig } from '../../../src/core/config';
import { EMPTY_LEDGER, recordFileEvents, renderFileOperations } from '../../../src/core/file-ledger';
import { activeEntries, ledgerOf, modelView, undoLastStep, type CompactionEntry, type LogRecord } from '../../../src/core/history';
import { needleLedgerOf } from '../../../src/core/needles';
import { MessageTokenCounter } from '../../../src/core/message-tokens';
import type { Message } from '../../../src/core/messages';
import { charEstimator } from '../../../src/core/tokenizer';
import type { Conversation } from '../../../src/app/conversation/conversation';
import { ConversationStore } from '../../../src/app/store/conversation-store';
import { conversationMarkdown } from '../../../src/app/conversation/conversation-export';
import { undoSentence } from '../../../src/app/report/reports';
import {
  editEntry,
  editSummary,
  latestSummaries,
  savedSummary,
  summaryDocument,
  summaryOf,
  withSummary,
} from '../../../src/app/compaction/summary-edit';
import { FakeClock, RecordingSummarizer } from '../core/fixtures';
import { compactionEntry } from '../fixtures/compaction-entry';
import { memoryIndex, newConversation } from '../fixtures/conversation-deps';

/**
 * Summaries the user previews and edits: what they save is what the model gets (but for the file
 * lists, which Longrun keeps), an edit is a record of its own that survives a reload, Undo takes an
 * edit back before the compaction, and an edit of a summary no longer in force is refused.
 */

const config: CompactionConfig = { ...DEFAULT_CONFIG, minMessages: 2, keepRecent: { ...DEFAULT_CONFIG.keepRecent, mode: 'messages', messages: 2 } };
const ledger = recordFileEvents(EMPTY_LEDGER, [
  { kind: 'read', path: 'src/a.ts', actor: 'agent', at: 1 },
  { kind: 'modified', path: 'src/b.ts', actor: 'agent', at: 2 },
]);

/** A compaction entry of two messages, `u1` and `a1`, keeping from `u2`. */
function entryOf(overrides: Partial<CompactionEntry> = {}): CompactionEntry {
  return compactionEntry({
    id: 'c1',
    summary: 'S',
    firstKeptMessageId: 'u2',
    compactedMessageIds: ['u1', 'a1'],
    tokensBefore: 10,
    tokensAfter: 5,
    model: 'm',
    durationMs: 1,
    createdAt: 1,
    ...overrides,
  });
}

const summaryText = (view: readonly Message[]): string => {
  const summary = view.find((m) => m.summaryOf !== undefined);
  const part = summary?.content[0];
  return part?.type === 'text' ? part.text : '';
};

describe('previewing and editing summaries', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'longrun-summary-edit-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function setup() {
    const clock = new FakeClock();
    const store = new ConversationStore(dir, () => clock.now());
    await store.create('c1');
    const index = memoryIndex();
    const summarizer = new RecordingSummarizer();
    const counter = new MessageTokenCounter(charEstimator);
    let n = 0;
    const newId = (): string => `id${++n}`;
    const make = (log: readonly LogRecord[]): Conversation =>
      newConversation({ log, store, index, clock, newId, config, model: { counter }, summarizer });
    const conversation = make([]);
    const say = async (c: Conversation, i: number): Promise<void> => {
      await c.append([
        { type: 'message', message: { id: `u${i}`, role: 'user', content: [{ type: 'text', text: `request ${i}: ${'words '.repeat(40)}` }] } },
        { type: 'message', message: { id: `a${i}`, role: 'assistant', content: [{ type: 'text', text: `answer ${i}: ${'more '.repeat(40)}` }] } },
      ]);
    };
    for (let i = 1; i <= 4; i++) await say(conversation, i);
    await conversation.append([{ type: 'file', event: { kind: 'read', path: 'src/read.ts', actor: 'agent', at: 5 } }]);
    const reopen = async (): Promise<Conversation> => make((await store.open('c1')).log);
    return { conversation, summarizer, counter, newId, say, reopen, store };
  }

  const compacted = async (conversation: Conversation): Promise<CompactionEntry> => {
    const outcome = await conversation.compact('manual');
    assert.equal(outcome.status, 'compacted');
    return conversation.lastCompaction()!;
  };

  describe('the saved text', () => {
    it("is the document without its header comment, with the compaction's own file lists at the end in place of any the user wrote", () => {
      const entry = entryOf({ round: 2, summary: `## Summary\n\nDid things.\n\n${renderFileOperations(ledger)}` });
      const document = summaryDocument(entry, 'preview');
      assert.match(document, /^<!-- Longrun · summary of compaction round 2 · not applied yet/);
      const edited = document
        .replace('Did things.', 'Did things.\r\nThe user insists on tabs.')
        .replace('src/a.ts\n</read-files>', 'src/a.ts\nsrc/invented.ts\n</read-files>');
      const saved = savedSummary(edited, ledger);
      assert.ok('summary' in saved);
      assert.equal(saved.summary, `## Summary\n\nDid things.\nThe user insists on tabs.\n\n${renderFileOperations(ledger)}`);
      assert.doesNotMatch(saved.summary, /invented|Longrun ·/);
    });

    it('gets the file lists back when the user deleted them, and is the whole summary when nothing was changed', () => {
      const summary = `## Summary\n\nDid things.\n\n${renderFileOperations(ledger)}`;
      const entry = entryOf({ summary });
      const untouched = savedSummary(summaryDocument(entry, 'in-force'), ledger);
      assert.deepEqual(untouched, { summary });
      const deleted = savedSummary('## Summary\n\nDid things.\n', ledger);
      assert.deepEqual(deleted, { summary });
    });

    it('puts back the work state the summary had, whatever the user changed in it or deleted', () => {
      const block = '<work-state>\nStep in progress: 2. Rename\n</work-state>';
      const summary = `## Summary\n\nDid things.\n\n${block}\n\n${renderFileOperations(ledger)}`;
      const entry = entryOf({ summary });
      assert.deepEqual(savedSummary(summaryDocument(entry, 'in-force'), ledger, block), { summary });
      const forged = summaryDocument(entry, 'in-force').replace('2. Rename', '9. Done with everything');
      assert.deepEqual(savedSummary(forged, ledger, block), { summary });
      assert.deepEqual(savedSummary('## Summary\n\nDid things.\n', ledger, block), { summary });
    });

    it('is refused when nothing but the header and the file lists is left', () => {
      const saved = savedSummary(`<!-- Longrun · header -->\n\n${renderFileOperations(ledger)}\n`, ledger);
      assert.ok('error' in saved);
      assert.match(saved.error, /empty/);
    });
  });

  describe('the preview before a compaction is applied', () => {
    it('applies exactly the saved summary, which the model gets and a reload keeps', async () => {
      const { conversation, reopen } = await setup();
      let shown: CompactionEntry | undefined;
      const outcome = await conversation.compact('manual', {
        review: async (entry) => {
          shown = entry;
          const saved = savedSummary(
            summaryDocument(entry, 'preview').replace('### Completed Work', '### Completed Work\n- The user prefers tabs.'),
            entry.fileOperations,
          );
          return 'summary' in saved ? saved.summary : undefined;
        },
      });
      assert.equal(outcome.status, 'compacted');
      const entry = conversation.lastCompaction()!;
      assert.equal(entry.id, shown!.id);
      assert.match(entry.summary, /- The user prefers tabs\./);
      assert.match(entry.summary, /<read-files>\nsrc\/read\.ts\n<\/read-files>/, "the file lists are the compaction's");
      assert.match(summaryText(conversation.view()), /The user prefers tabs/);
      assert.equal(entry.tokensAfter, conversation.count().localTokens, 'the numbers are those of the summary applied');
      const reloaded = await reopen();
      assert.deepEqual(reloaded.view(), conversation.view());
    });

    it('applies nothing when the preview is closed without saving', async () => {
      const { conversation } = await setup();
      const before = conversation.log().length;
      const view = conversation.view();
      const outcome = await conversation.compact('manual', { review: async () => undefined });
      assert.equal(outcome.status, 'cancelled');
      assert.equal(conversation.log().length, before, 'nothing was appended');
      assert.deepEqual(conversation.view(), view);
      assert.equal(conversation.isCompacting(), false);
    });

    it('keeps what was appended while the user read the preview', async () => {
      const { conversation, say } = await setup();
      const outcome = await conversation.compact('manual', {
        review: async (entry) => {
          await say(conversation, 9);
          return entry.summary;
        },
      });
      assert.equal(outcome.status, 'compacted');
      assert.ok(conversation.view().some((m) => m.id === 'u9'));
    });

    it('leaves a computed compaction without a summary (a pruning alone) as it is', () => {
      const computed = {
        records: [],
        basis: { messageIds: [], lastEntryId: null },
        view: [],
        repairs: [],
        compactedCount: 0,
        tokensBefore: 1,
        tokensAfter: 0,
        lowGain: false,
      };
      assert.equal(withSummary(computed, 'anything'), computed);
    });
  });

  describe('an edit of the summary in force', () => {
    it('replaces the summary the model gets and nothing else, moving the count by the difference', async () => {
      const { conversation, newId, counter } = await setup();
      const entry = await compacted(conversation);
      const before = conversation.view();
      const text = summaryDocument(entry, 'in-force').replace('### Completed Work', '### Completed Work\n- Never touch the vendored folder.');
      const result = await editSummary(conversation, entry.id, text, { newId, counter });
      assert.ok(result.ok && result.entry);
      const edit = result.entry;
      assert.equal(edit.editOf, entry.id);
      assert.equal(edit.round, entry.round);
      assert.deepEqual(edit.compactedMessageIds, entry.compactedMessageIds);
      assert.equal(edit.firstKeptMessageId, entry.firstKeptMessageId);
      const after = conversation.view();
      assert.match(summaryText(after), /Never touch the vendored folder/);
      assert.deepEqual(
        after.filter((m) => m.summaryOf === undefined),
        before.filter((m) => m.summaryOf === undefined),
        'the kept messages are the same',
      );
      assert.equal(edit.tokensAfter, entry.tokensAfter + counter.countText(edit.summary) - counter.countText(entry.summary));
      assert.deepEqual(modelView(conversation.log(), new EngineMemo()), after, 'the view derived from the log agrees');
    });

    it('is persisted as a record of its own and survives a reload', async () => {
      const { conversation, newId, counter, reopen, store } = await setup();
      const entry = await compacted(conversation);
      const records = conversation.log().length;
      await editSummary(conversation, entry.id, summaryDocument(entry, 'in-force').replace('### Current State', '### Current State\n- Edited.'), {
        newId,
        counter,
      });
      assert.equal(conversation.log().length, records + 1, 'appended, nothing rewritten');
      const { log, problems } = await store.open('c1');
      assert.deepEqual(problems, []);
      assert.equal(log.filter((r) => r.type === 'compaction').length, 2);
      const reloaded = await reopen();
      assert.equal(reloaded.lastCompaction()?.editOf, entry.id);
      assert.match(summaryText(reloaded.view()), /- Edited\./);
    });

    it("is taken back by the first undo (the model's summary returns), and the next undo brings back the messages", async () => {
      const { conversation, newId, counter } = await setup();
      const original = conversation.view();
      const entry = await compacted(conversation);
      const compactedView = conversation.view();
      await editSummary(conversation, entry.id, summaryDocument(entry, 'in-force').replace('### Current State', '### Current State\n- Edited.'), {
        newId,
        counter,
      });
      const first = await conversation.undo();
      assert.ok(first.ok);
      assert.equal(first.step.compaction?.editOf, entry.id);
      assert.match(undoSentence(first.step), /undid your edit of the summary of round 1/);
      assert.deepEqual(conversation.view(), compactedView);
      const second = await conversation.undo();
      assert.ok(second.ok);
      assert.equal(second.step.compaction?.id, entry.id);
      assert.deepEqual(conversation.view(), original);
    });

    it('can be edited again, and each undo steps back one save', async () => {
      const { conversation, newId, counter } = await setup();
      const entry = await compacted(conversation);
      const once = await editSummary(
        conversation,
        entry.id,
        summaryDocument(entry, 'in-force').replace('### Current State', '### Current State\n- First.'),
        { newId, counter },
      );
      assert.ok(once.ok && once.entry);
      const twice = await editSummary(conversation, entry.id, summaryDocument(once.entry, 'in-force').replace('- First.', '- Second.'), {
        newId,
        counter,
      });
      assert.ok(twice.ok && twice.entry);
      assert.equal(twice.entry.editOf, entry.id, 'an edit names the compaction, not the edit before it');
      assert.deepEqual(summaryOf(conversation.log(), entry.id), { entry: twice.entry, inForce: true });
      assert.deepEqual(latestSummaries(activeEntries(conversation.log())), [twice.entry]);
      await conversation.undo();
      assert.match(summaryText(conversation.view()), /- First\./);
    });

    it('is what the next compaction builds on', async () => {
      const { conversation, newId, counter, say, summarizer } = await setup();
      const entry = await compacted(conversation);
      await editSummary(
        conversation,
        entry.id,
        summaryDocument(entry, 'in-force').replace('### Current State', '### Current State\n- Keep the marmalade constraint.'),
        { newId, counter },
      );
      for (let i = 5; i <= 8; i++) await say(conversation, i);
      await compacted(conversation);
      const request = JSON.stringify(summarizer.requests.at(-1)!.messages);
      assert.match(request, /Keep the marmalade constraint/);
      assert.equal(conversation.lastCompaction()!.round, 2);
    });

    it('ends with the file lists of the log as it is when saved, and carries its needle ledger', async () => {
      const { conversation, newId, counter } = await setup();
      const entry = await compacted(conversation);
      await conversation.append([
        { type: 'file', event: { kind: 'read', path: 'src/later.ts', actor: 'agent', at: 2 } },
        { type: 'file', event: { kind: 'created', path: 'src/new.ts', actor: 'agent', at: 3 } },
      ]);
      const saved = await editSummary(
        conversation,
        entry.id,
        summaryDocument(entry, 'in-force').replace('### Current State', '### Current State\n- Edited.'),
        {
          newId,
          counter,
        },
      );
      assert.ok(saved.ok && saved.entry);
      const log = conversation.log().slice(0, -1);
      assert.deepEqual(saved.entry.fileOperations, ledgerOf(log));
      assert.match(saved.entry.summary, /<read-files>[\s\S]*src\/later\.ts[\s\S]*<modified-files>[\s\S]*src\/new\.ts \(created\)/);
      assert.deepEqual(saved.entry.needles, needleLedgerOf(log, new EngineMemo()));
    });

    it('changes nothing when the text was saved unchanged', async () => {
      const { conversation, newId, counter } = await setup();
      const entry = await compacted(conversation);
      const records = conversation.log().length;
      assert.deepEqual(await editSummary(conversation, entry.id, summaryDocument(entry, 'in-force'), { newId, counter }), { ok: true });
      assert.equal(conversation.log().length, records);
    });

    it('is refused once the conversation was compacted again, and once the compaction was undone', async () => {
      const { conversation, newId, counter, say } = await setup();
      const first = await compacted(conversation);
      for (let i = 5; i <= 8; i++) await say(conversation, i);
      const second = await compacted(conversation);
      const stale = await editSummary(
        conversation,
        first.id,
        summaryDocument(first, 'in-force').replace('### Current State', '### Current State\n- Late.'),
        { newId, counter },
      );
      assert.equal(stale.ok, false);
      assert.match(stale.ok ? '' : stale.reason, /no longer the one the model gets/);
      assert.equal(conversation.lastCompaction(), second, 'nothing was appended');
      assert.equal(summaryOf(conversation.log(), first.id)?.inForce, false);

      await conversation.undo();
      await conversation.undo();
      const undone = await editSummary(
        conversation,
        first.id,
        summaryDocument(first, 'in-force').replace('### Current State', '### Current State\n- Late.'),
        { newId, counter },
      );
      assert.equal(undone.ok, false);
    });

    it('is refused while a compaction runs', async () => {
      const { conversation, newId, counter } = await setup();
      const entry = await compacted(conversation);
      let release: (summary: string | undefined) => void = () => undefined;
      const running = conversation.compact('manual', { review: () => new Promise((resolve) => (release = resolve)) });
      const result = await editSummary(
        conversation,
        entry.id,
        summaryDocument(entry, 'in-force').replace('### Current State', '### Current State\n- Now.'),
        { newId, counter },
      );
      assert.equal(result.ok, false);
      assert.match(result.ok ? '' : result.reason, /compaction is running/);
      release(undefined);
      await running;
    });

    it('is shown as an edit in the exported conversation', async () => {
      const { conversation, newId, counter } = await setup();
      const entry = await compacted(conversation);
      await editSummary(conversation, entry.id, summaryDocument(entry, 'in-force').replace('### Current State', '### Current State\n- Exported.'), {
        newId,
        counter,
      });
      const markdown = conversationMarkdown(conversation.log(), 'T');
      assert.match(markdown, /Summary of compaction round 1 edited by the user/);
      assert.match(markdown, /> - Exported\./);
    });
  });

  describe('undo over an edit of a compaction made with a pruning', () => {
    it('undoes the edit alone, then the summary and its pruning together', () => {
      const counter = new MessageTokenCounter(charEstimator);
      const messages: LogRecord[] = ['u1', 'a1', 'u2', 'a2'].map((id) => ({
        type: 'message',
        message: { id, role: id.startsWith('u') ? 'user' : 'assistant', content: [{ type: 'text', text: id }] },
      }));
      const pruning = {
        id: 'p1',
        reason: 'manual' as const,
        outputs: [{ messageId: 'a1', toolCallId: 'c', toolName: 't', kind: 'old' as const, stub: 's', tokens: 1 }],
        tokensBefore: 10,
        tokensAfter: 9,
        createdAt: 1,
      };
      const compaction = entryOf({ pruningId: 'p1' });
      const edit = editEntry(compaction, 'S, edited', { newId: () => 'e1', counter });
      assert.equal(edit.pruningId, undefined);
      const log: LogRecord[] = [
        ...messages,
        { type: 'pruning', entry: pruning },
        { type: 'compaction', entry: compaction },
        { type: 'compaction', entry: edit },
      ];
      const first = undoLastStep(log, 2);
      assert.ok(!('error' in first));
      assert.deepEqual(
        first.records.map((r) => (r.type === 'undo' ? r.entryId : '')),
        ['e1'],
      );
      const second = undoLastStep([...log, ...first.records], 3);
      assert.ok(!('error' in second));
      assert.deepEqual(
        second.records.map((r) => (r.type === 'undo' ? r.entryId : '')),
        ['c1', 'p1'],
      );
    });
  });
});
