import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MessageChannel, Worker, type WorkerOptions } from 'node:worker_threads';
import { IN_THREAD_ENGINE, type CompactionEngine } from '../../../src/app/compaction/compaction-engine';
import type { Conversation } from '../../../src/app/conversation/conversation';
import { ConversationIndex } from '../../../src/app/store/conversation-index';
import { ConversationStore } from '../../../src/app/store/conversation-store';
import { serveCompactions, WorkerCompactionEngine, type WorkerLike, type WorkerStarted } from '../../../src/app/compaction/remote-compaction';
import { config, FakeClock, templateSummary, turn } from '../core/fixtures';
import type { CompactionConfig } from '../../../src/core/config';
import { packedOutcome, packedRequest, unpackedOutcome } from '../../../src/app/compaction/worker-packing';
import { parseLedger } from '../../../src/core/file-ledger';
import { parseNeedleLedger } from '../../../src/core/needles';
import { CHRT_PATHS, compactionWorkerOptions, type WorkerPriority } from '../../../src/app/compaction/worker-priority';
import { newConversation } from '../fixtures/conversation-deps';
import { MessageTokenCounter } from '../../../src/core/message-tokens';
import { charEstimator, loadTokenizer } from '../../../src/core/tokenizer';
import type { LogRecord } from '../../../src/core/history';
import type { Summarizer, SummaryRequest } from '../../../src/core/ports';

/** A worker made of a message channel: the worker's side runs on this thread, over the same protocol. */
function channelWorker(): WorkerLike & { posted: unknown[]; close(): void } {
  const { port1, port2 } = new MessageChannel();
  serveCompactions(port2);
  const posted: unknown[] = [];
  return {
    posted,
    postMessage: (message) => {
      posted.push(message);
      port1.postMessage(message);
    },
    on: (event: string, listener: (message: unknown) => void) => (event === 'message' ? port1.on('message', listener) : undefined),
    close: () => {
      port1.close();
      port2.close();
    },
  };
}

/**
 * A worker that says it runs only on idle processors, then never sends its outcome: as one does that
 * gets no processor. What it sends the host before (a summary request) goes through; `answer`, if
 * given, replaces the worker's own summary request with another.
 */
function starvingWorker(answer?: SummaryRequest): WorkerLike & { terminated: boolean; close(): void } {
  const { port1, port2 } = new MessageChannel();
  serveCompactions(port2);
  const state = { terminated: false };
  return {
    get terminated() {
      return state.terminated;
    },
    postMessage: (message) => port1.postMessage(message),
    on: (event: string, listener: (message: unknown) => void) => {
      if (event !== 'message') return;
      setImmediate(() => listener({ kind: 'started', tid: 4242, priority: 'idle' } satisfies WorkerStarted));
      port1.on('message', (message: { kind: string }) => {
        if (message.kind === 'computed') return;
        listener(answer && message.kind === 'summarize' ? { ...message, request: packedRequest(answer) } : message);
      });
    },
    terminate: () => {
      state.terminated = true;
    },
    close: () => {
      port1.close();
      port2.close();
    },
  };
}

/** A thread's times as the system would give them, growing by `run` and `wait` ms at each look. */
function growingTimes(run: number, wait: number): () => { run: number; wait: number } {
  let at = { run: 0, wait: 0 };
  return () => (at = { run: at.run + run, wait: at.wait + wait });
}

describe('compactions computed in a worker', () => {
  let dir: string;
  const closers: Array<() => void> = [];
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'longrun-remote-'));
  });
  afterEach(async () => {
    for (const close of closers.splice(0)) close();
    await rm(dir, { recursive: true, force: true });
  });

  const settings = config((c) => ({
    ...c,
    keepRecent: { ...c.keepRecent, mode: 'messages', messages: 4 },
    minMessages: 4,
    pruning: { ...c.pruning, enabled: false },
  }));

  async function conversationWith(
    engine: CompactionEngine,
    summarizer: Summarizer,
    name = 'c1',
    output = 'x'.repeat(1_500),
    shape: { readonly turns?: number; readonly config?: CompactionConfig } = {},
  ): Promise<Conversation> {
    const clock = new FakeClock();
    const store = new ConversationStore(join(dir, name), () => clock.now());
    await store.create(name);
    const counter = new MessageTokenCounter(charEstimator);
    let ids = 0;
    const conversation = newConversation({
      id: name,
      store,
      clock,
      newId: () => `e${++ids}`,
      config: shape.config ?? settings,
      model: { limit: 100_000, counter },
      summarizer,
      engine,
      redact: (text) => text.replaceAll('sk-secret', '[key]'),
    });
    await conversation.beginTurn('t1');
    const requests = ['Build a flashcard app', 'Add SM-2 scheduling', 'Now add tests', 'And the docs'];
    for (let i = 0; i < (shape.turns ?? requests.length); i++) {
      const request = requests[i % requests.length]!;
      await conversation.append(turn(`m${i}`, request, 2, output).map((message) => ({ type: 'message' as const, message })));
    }
    return conversation;
  }

  const summarizer: Summarizer = { name: 'fake', summarize: async (r) => ({ text: templateSummary(`SUMMARY of ${r.messages.length} messages.`) }) };

  it('gives the compaction the host would have computed, applied to the same view', async () => {
    const worker = channelWorker();
    closers.push(() => worker.close());
    const remote = await conversationWith(new WorkerCompactionEngine(() => worker), summarizer, 'remote');
    const local = await conversationWith(IN_THREAD_ENGINE, summarizer, 'local');
    const [a, b] = [await remote.compact('manual'), await local.compact('manual')];
    assert.equal(a.status, 'compacted');
    assert.equal(b.status, 'compacted');
    if (a.status !== 'compacted' || b.status !== 'compacted') return;
    assert.deepEqual(a.compaction.entry?.compactedMessageIds, b.compaction.entry?.compactedMessageIds);
    assert.equal(a.compaction.entry?.summary, b.compaction.entry?.summary);
    assert.deepEqual(
      remote.view().map((m) => m.id),
      local.view().map((m) => m.id),
    );
    assert.ok(
      worker.posted.some((m) => (m as { kind: string }).kind === 'compute'),
      'computed in the worker',
    );
  });

  it("hands the worker a summarizer's report of a tool call, so that the plain request is asked for there too", async () => {
    const worker = channelWorker();
    closers.push(() => worker.close());
    const asked: boolean[] = [];
    const calling: Summarizer = {
      name: 'local',
      continues: true,
      summarize: async (r) => {
        asked.push(r.continuation !== undefined);
        return r.continuation
          ? { text: 'Let me read src/parser.ts before I write the summary you asked for.', calledTools: ['read_file'] }
          : { text: templateSummary('Written from the plain request.') };
      },
    };
    const conversation = await conversationWith(new WorkerCompactionEngine(() => worker), calling);
    const outcome = await conversation.compact('manual');
    assert.equal(outcome.status, 'compacted');
    if (outcome.status !== 'compacted') return;
    assert.deepEqual(asked, [true, false], 'a continuation, then the plain request');
    assert.equal(outcome.compaction.entry?.fallback, false);
    assert.match(outcome.compaction.entry!.summary, /Written from the plain request/);
  });

  it('sends each record once, and only what was added since for the next compaction', async () => {
    const worker = channelWorker();
    closers.push(() => worker.close());
    const conversation = await conversationWith(new WorkerCompactionEngine(() => worker), summarizer);
    await conversation.compact('manual');
    const sentFirst = syncedRecords(worker.posted);
    assert.equal(sentFirst, conversation.allRecords().length - 1, 'everything but the compaction just applied');
    await conversation.append(turn('late', 'One more thing', 2, 'y'.repeat(1_500)).map((message) => ({ type: 'message' as const, message })));
    const before = conversation.allRecords().length;
    await conversation.compact('manual');
    assert.equal(syncedRecords(worker.posted), before, 'each record sent once');
  });

  it('sends long records a few at a time, so that no message to the worker copies much more than one long output', async () => {
    const worker = channelWorker();
    closers.push(() => worker.close());
    const output = 'x'.repeat(200_000);
    const conversation = await conversationWith(new WorkerCompactionEngine(() => worker), summarizer, 'c1', output);
    const outcome = await conversation.compact('manual');
    assert.equal(outcome.status, 'compacted');
    const slices = worker.posted.filter((m) => (m as { kind: string }).kind === 'sync') as Array<{ records: unknown[] }>;
    assert.equal(
      slices.reduce((sum, m) => sum + m.records.length, 0),
      conversation.allRecords().length - 1,
      'every record sent',
    );
    for (const slice of slices) {
      const chars = JSON.stringify(slice.records).length;
      assert.ok(chars < 256 * 1024 + output.length + 10_000, `a slice of ${chars} characters (${slice.records.length} records)`);
    }
  });

  it("hands the host a long summary request in slices, which reach the summarizer as the host's own request would", async () => {
    const worker = channelWorker();
    closers.push(() => worker.close());
    const fromWorker: unknown[] = [];
    worker.on('message', (message) => void fromWorker.push(message));
    const output = 'x'.repeat(200_000);
    const requests = { remote: [] as SummaryRequest[], local: [] as SummaryRequest[] };
    const recording = (into: SummaryRequest[]): Summarizer => ({
      name: 'recording',
      continues: true,
      contextWindow: 1_000_000,
      summarize: async (r) => (into.push(r), { text: templateSummary(`SUMMARY of ${r.messages.length} messages.`) }),
    });
    const remote = await conversationWith(new WorkerCompactionEngine(() => worker), recording(requests.remote), 'remote', output);
    const local = await conversationWith(IN_THREAD_ENGINE, recording(requests.local), 'local', output);
    assert.equal((await remote.compact('manual')).status, 'compacted');
    assert.equal((await local.compact('manual')).status, 'compacted');
    assert.ok(requests.remote.length > 0 && requests.remote[0]!.continuation, 'a continuation was asked for');
    assert.deepEqual(requests.remote, requests.local);
    const asked = fromWorker.filter((m) => (m as { kind: string }).kind === 'summarize') as Array<{
      request: { messages: string[]; continuation?: { messages: string[] } };
    }>;
    assert.equal(asked.length, requests.remote.length);
    const slices = asked.flatMap((m) => [...m.request.messages, ...(m.request.continuation?.messages ?? [])]);
    assert.ok(slices.length > asked.length * 2, `${slices.length} slices`);
    for (const slice of slices) assert.ok(slice.length < 256 * 1024 + output.length + 10_000, `a slice of ${slice.length} characters`);
  });

  it("hands the host a compaction's long lists in slices, and the host applies the compaction it would have computed", async () => {
    const worker = channelWorker();
    closers.push(() => worker.close());
    const fromWorker: unknown[] = [];
    worker.on('message', (message) => void fromWorker.push(message));
    // Each turn reads the same two files again: the outputs read before are pruned, hundreds of them.
    const shape = { turns: 150, config: config((c) => ({ ...c, keepRecent: { ...c.keepRecent, mode: 'messages', messages: 4 }, minMessages: 4 })) };
    const remote = await conversationWith(new WorkerCompactionEngine(() => worker), summarizer, 'remote', 'x'.repeat(1_500), shape);
    const local = await conversationWith(IN_THREAD_ENGINE, summarizer, 'local', 'x'.repeat(1_500), shape);
    const [a, b] = [await remote.compact('manual'), await local.compact('manual')];
    assert.ok(a.status === 'compacted' && b.status === 'compacted', `${a.status}, ${b.status}`);
    assert.ok(a.compaction.pruning && a.compaction.pruning.outputs.length > 250, `${a.compaction.pruning?.outputs.length} outputs pruned`);
    assert.ok(a.compaction.entry && a.compaction.entry.compactedMessageIds.length > 250, 'hundreds of messages summarized');
    // The worker's entries are stamped with its own clock, not the test's.
    const unstamped = (value: unknown): unknown => JSON.parse(JSON.stringify(value), (k, v) => (k === 'createdAt' || k === 'durationMs' ? 0 : v));
    for (const key of ['pruning', 'entry', 'records', 'basis', 'tokensBefore', 'tokensAfter'] as const) {
      assert.deepEqual(unstamped(a.compaction[key]), unstamped(b.compaction[key]), key);
    }
    assert.deepEqual(unstamped(remote.allRecords()), unstamped(local.allRecords()));
    assert.deepEqual(
      remote.view().map((m) => m.content),
      local.view().map((m) => m.content),
    );
    // Packed and read back, a compaction is the same, down to the records that hold its entries.
    const unpacked = await unpackedOutcome(structuredClone(packedOutcome(b)));
    assert.deepEqual(unpacked, { ...b, compaction: { ...b.compaction, view: [] } });
    // The ledgers the worker made are taken as made here: storing the records does not check them again.
    const entry = unpacked.status === 'compacted' ? unpacked.compaction.entry : undefined;
    assert.ok(entry?.needles, 'the summary carries its needle ledger');
    assert.equal(parseLedger(entry.fileOperations), entry.fileOperations);
    assert.equal(parseNeedleLedger(entry.needles), entry.needles);
    const stored = unpacked.status === 'compacted' ? unpacked.compaction.records.find((r) => r.type === 'compaction') : undefined;
    assert.equal(stored?.type === 'compaction' && stored.entry, entry, 'the record written is the one with those ledgers');
    const computed = fromWorker.find((m) => (m as { kind: string }).kind === 'computed') as {
      outcome: { compaction: { pruning: { outputs: unknown[] }; entry: { compactedMessageIds: unknown[] }; lists: Record<string, string[]> } };
    };
    const sent = computed.outcome.compaction;
    assert.deepEqual([sent.pruning.outputs, sent.entry.compactedMessageIds], [[], []], 'the lists are not sent as objects');
    for (const [list, slices] of Object.entries(sent.lists)) {
      assert.ok(slices.length > 1, `${list} in ${slices.length} slices`);
      for (const slice of slices) assert.ok(slice.length < 256 * 1024 + 10_000, `a slice of ${slice.length} characters`);
    }
  });

  it("has the worker's copy let go of what a compaction took out of the view, and computes the next as the host does", async () => {
    const worker = channelWorker();
    closers.push(() => worker.close());
    const long = 'y'.repeat(3_000);
    const remote = await conversationWith(new WorkerCompactionEngine(() => worker), summarizer, 'remote', long);
    const local = await conversationWith(IN_THREAD_ENGINE, summarizer, 'local', long);
    for (const conversation of [remote, local]) {
      assert.equal((await conversation.compact('manual')).status, 'compacted');
      await conversation.append(turn('late', 'One more thing', 2, long).map((message) => ({ type: 'message' as const, message })));
    }
    const released = worker.posted.filter((m): m is { kind: 'let-go'; at: number[] } => (m as { kind: string }).kind === 'let-go');
    assert.equal(released.length, 1, 'the worker is told once');
    const hollow = (c: Conversation) => c.allRecords().flatMap((r, i) => (r.type === 'message' && r.message.content.length === 0 ? [i] : []));
    assert.deepEqual(released[0]!.at, hollow(remote), 'the positions the host let go');
    assert.ok(released[0]!.at.length > 0);
    const [a, b] = [await remote.compact('manual'), await local.compact('manual')];
    if (a.status !== 'compacted' || b.status !== 'compacted') return assert.fail(`not compacted: ${a.status}, ${b.status}`);
    assert.equal(a.compaction.entry?.summary, b.compaction.entry?.summary);
    assert.deepEqual(a.compaction.entry?.compactedMessageIds, b.compaction.entry?.compactedMessageIds);
    // The worker takes its ids in a batch per compaction: the summary's differs.
    const ids = (c: Conversation) => c.view().map((m) => (m.id.startsWith('summary:') ? 'summary' : m.id));
    assert.deepEqual(ids(remote), ids(local));
  });

  it("carries the summarizer's failure back without the key it echoed, and falls back as on the host", async () => {
    const worker = channelWorker();
    closers.push(() => worker.close());
    const failing: Summarizer = {
      name: 'fake',
      summarize: async () => {
        throw new Error('401 invalid key sk-secret');
      },
    };
    const conversation = await conversationWith(new WorkerCompactionEngine(() => worker), failing);
    const outcome = await conversation.compact('manual');
    assert.equal(outcome.status, 'compacted');
    if (outcome.status !== 'compacted') return;
    assert.equal(outcome.compaction.entry?.fallback, true);
    assert.match(outcome.compaction.entry?.failure ?? '', /401 invalid key \[key\]/);
  });

  it('stops when the compaction is cancelled while the summarizer works', async () => {
    const worker = channelWorker();
    closers.push(() => worker.close());
    const controller = new AbortController();
    const slow: Summarizer = {
      name: 'fake',
      summarize: (_request, signal) =>
        new Promise((_, reject) => {
          signal?.addEventListener('abort', () => reject(new Error('aborted')));
          controller.abort();
        }),
    };
    const conversation = await conversationWith(new WorkerCompactionEngine(() => worker), slow);
    const outcome = await conversation.compact('manual', { signal: controller.signal });
    assert.equal(outcome.status, 'cancelled');
    assert.equal(conversation.lastCompaction(), undefined);
  });

  it('computes on this thread when the worker cannot start, or dies in the middle of a compaction', async () => {
    const logged: string[] = [];
    const unstartable = await conversationWith(
      new WorkerCompactionEngine(
        () => {
          throw new Error('no worker here');
        },
        (message) => void logged.push(message),
      ),
      summarizer,
      'unstartable',
    );
    assert.equal((await unstartable.compact('manual')).status, 'compacted');
    assert.match(logged[0] ?? '', /could not start: no worker here/);

    let exit: (code: unknown) => void = () => undefined;
    const dying: WorkerLike = {
      postMessage: (message) => {
        // The worker dies as soon as it is asked to compute.
        if ((message as { kind: string }).kind === 'compute') setImmediate(() => exit(1));
      },
      on: (event: string, listener: (reason: unknown) => void) => {
        if (event === 'exit') exit = listener;
      },
    };
    const conversation = await conversationWith(
      new WorkerCompactionEngine(
        () => dying,
        (m) => void logged.push(m),
      ),
      summarizer,
      'dying',
    );
    const outcome = await conversation.compact('manual');
    assert.equal(outcome.status, 'compacted');
    assert.match(logged.at(-1) ?? '', /exited \(1\)/);
  });

  it('stops a worker that gets no processor, computes its compaction here with the summary it was given, and starts the next one at a lowered priority', async () => {
    const workers: Array<ReturnType<typeof starvingWorker>> = [];
    const priorities: WorkerPriority[] = [];
    const logged: string[] = [];
    const requests: SummaryRequest[] = [];
    const counting: Summarizer = { name: 'fake', summarize: async (r) => (requests.push(r), summarizer.summarize(r)) };
    const engine = new WorkerCompactionEngine(
      (priority) => {
        priorities.push(priority);
        const worker = starvingWorker();
        workers.push(worker);
        closers.push(() => worker.close());
        return worker;
      },
      (message) => void logged.push(message),
      IN_THREAD_ENGINE,
      { times: growingTimes(5, 400), everyMs: 5, starvedMs: 1_000 },
    );
    const conversation = await conversationWith(engine, counting);
    const outcome = await conversation.compact('manual');
    assert.equal(outcome.status, 'compacted');
    assert.match(JSON.stringify(conversation.view()[0] ?? {}), /SUMMARY of/);
    assert.equal(requests.length, 1, 'the summary the worker was given is used again, not asked of the model twice');
    assert.equal(workers[0]?.terminated, true, 'the starving worker is stopped');
    assert.match(logged.join('\n'), /waited [\d.]+ s for a processor .*computed on the extension host's thread.*lowered priority/);

    await conversation.append(turn('m9', 'One more thing', 2, 'y'.repeat(1_500)).map((message) => ({ type: 'message' as const, message })));
    await conversation.compact('manual');
    assert.deepEqual(priorities, ['idle', 'low'], 'the next worker runs at a lowered priority, not on idle processors only');
  });

  it('asks the model again for a summary request the worker made that this thread does not make', async () => {
    const requests: SummaryRequest[] = [];
    const counting: Summarizer = { name: 'fake', summarize: async (r) => (requests.push(r), summarizer.summarize(r)) };
    const other: SummaryRequest = {
      system: 'another',
      messages: [{ role: 'user', content: 'other' }],
      maxOutputTokens: 10,
      temperature: 0,
      purpose: 'summary',
    };
    const engine = new WorkerCompactionEngine(
      () => {
        const worker = starvingWorker(other);
        closers.push(() => worker.close());
        return worker;
      },
      () => undefined,
      IN_THREAD_ENGINE,
      { times: growingTimes(5, 400), everyMs: 5, starvedMs: 1_000 },
    );
    const conversation = await conversationWith(engine, counting);
    assert.equal((await conversation.compact('manual')).status, 'compacted');
    assert.equal(requests.length, 2);
    assert.equal(requests[0]?.system, 'another');
    assert.notEqual(requests[1]?.system, 'another', "this thread's own request went to the model");
    assert.match(JSON.stringify(conversation.view()[0] ?? {}), /SUMMARY of/);
  });

  it('keeps a worker that waits for a processor but gets its share', async () => {
    const worker = channelWorker();
    closers.push(() => worker.close());
    const priorities: WorkerPriority[] = [];
    const logged: string[] = [];
    const slowSummarizer: Summarizer = {
      name: 'fake',
      summarize: async (r) => (await new Promise((resolve) => setTimeout(resolve, 60)), summarizer.summarize(r)),
    };
    const engine = new WorkerCompactionEngine(
      (priority) => {
        priorities.push(priority);
        return {
          ...worker,
          on: (event: string, listener: (message: unknown) => void) => {
            if (event === 'message') setImmediate(() => listener({ kind: 'started', tid: 4242, priority: 'idle' } satisfies WorkerStarted));
            return worker.on(event as 'message', listener);
          },
        };
      },
      (message) => void logged.push(message),
      IN_THREAD_ENGINE,
      // It waits as long as one that starves, and runs half of that.
      { times: growingTimes(200, 400), everyMs: 5, starvedMs: 1_000 },
    );
    const conversation = await conversationWith(engine, slowSummarizer);
    assert.equal((await conversation.compact('manual')).status, 'compacted');
    assert.deepEqual(priorities, ['idle']);
    assert.deepEqual(logged, []);
    assert.ok(worker.posted.filter((m) => (m as { kind: string }).kind === 'compute').length >= 1, 'computed in the worker');
  });

  it('computes a compaction once more, from the records sent whole again, when the one computed no longer applies; fails after a second', async () => {
    /** An engine whose first `wrong` compactions are computed as on a copy that lacks the log's last step. */
    const engineWrong = (wrong: number): CompactionEngine & { calls: number; forgotten: string[] } => {
      const engine = {
        calls: 0,
        forgotten: [] as string[],
        compute: async (input: Parameters<CompactionEngine['compute']>[0]) => {
          const outcome = await IN_THREAD_ENGINE.compute(input);
          if (++engine.calls > wrong || outcome.status !== 'compacted') return outcome;
          return { ...outcome, compaction: { ...outcome.compaction, basis: { ...outcome.compaction.basis, lastEntryId: 'gone' } } };
        },
        forget: (id: string) => void engine.forgotten.push(id),
        dispose: () => undefined,
      };
      return engine;
    };
    const once = engineWrong(1);
    const conversation = await conversationWith(once, summarizer, 'once');
    assert.equal((await conversation.compact('manual')).status, 'compacted');
    assert.equal(once.calls, 2);
    assert.deepEqual(once.forgotten, ['once'], "the worker's copy is sent again whole");

    const always = engineWrong(Infinity);
    const stuck = await conversationWith(always, summarizer, 'stuck');
    const outcome = await stuck.compact('manual');
    assert.equal(outcome.status, 'failed');
    assert.match(outcome.status === 'failed' ? outcome.reason : '', /changed while it was compacted: Another compaction or an undo happened/);
    assert.equal(always.calls, 2, 'computed twice, not more');
    assert.equal(stuck.lastCompaction(), undefined);
  });

  it('counts a long conversation reopened without stored counts off this thread, showing an estimate until the counts come', async () => {
    const worker = channelWorker();
    closers.push(() => worker.close());
    const tokenizer = await loadTokenizer('o200k_base');
    const words = ['compaction', 'gauge', 'ledger', 'summary', 'window', 'branch', 'request', 'tool'];
    const log: LogRecord[] = [];
    for (let i = 0; i < 60; i++) {
      const text = Array.from({ length: 700 }, (_, j) => words[(i * 7 + j) % words.length]).join(' ');
      log.push({ type: 'message', message: { id: `m${i}`, role: i % 2 ? 'assistant' : 'user', content: [{ type: 'text', text }] } });
    }
    const open = (engine: CompactionEngine, counter: MessageTokenCounter): Conversation =>
      newConversation({
        id: 'long',
        log,
        store: new ConversationStore(join(dir, 'long'), () => 0),
        index: new ConversationIndex({ get: () => undefined, update: async () => undefined }),
        newId: () => 'x',
        config: settings,
        model: { limit: 200_000, counter },
        summarizer,
        engine,
      });
    const exact = open(IN_THREAD_ENGINE, new MessageTokenCounter(tokenizer)).count().tokens;

    const counter = new MessageTokenCounter(tokenizer);
    const conversation = open(new WorkerCompactionEngine(() => worker), counter);
    const changed = new Promise<void>((resolve) => conversation.onDidChange(resolve));
    const first = conversation.count().tokens;
    assert.ok(
      log.every((r) => r.type !== 'message' || !counter.isCounted(r.message)),
      'no message was tokenized on this thread',
    );
    assert.ok(first > exact / 2 && first < exact * 2, `the estimate (${first}) is within a factor of two of the count (${exact})`);
    assert.notEqual(first, exact, 'the first figure is an estimate');
    await changed;
    assert.equal(conversation.count().tokens, exact, 'the counts from the worker replace the estimate');
    assert.ok(
      worker.posted.some((m) => (m as { kind: string }).kind === 'count'),
      'counted in the worker',
    );
  });

  it("starts the worker with a young generation the runtime collects on the worker's own thread", async () => {
    // The runtime splits a collection of the young generation into one task per megabyte of it (one
    // more than its whole megabytes), run by helper threads at the normal priority beside the
    // collecting thread: under one megabyte, the worker's own thread collects it alone.
    const youngCapacity = (options: WorkerOptions): Promise<number> =>
      new Promise((resolve, reject) => {
        const worker = new Worker(
          `const { parentPort } = require('node:worker_threads');
           let kept = [];
           for (let i = 0; i < 300000; i++) { kept.push({ i }); if (kept.length > 50000) kept = []; }
           const young = require('node:v8').getHeapSpaceStatistics().find((space) => space.space_name === 'new_space');
           parentPort.postMessage(young.space_used_size + young.space_available_size);`,
          { ...options, eval: true },
        );
        worker.once('message', (capacity: number) => void worker.terminate().then(() => resolve(capacity)));
        worker.once('error', reject);
      });
    const MEGABYTE = 1024 * 1024;
    const shipped = await youngCapacity(compactionWorkerOptions('low'));
    assert.ok(shipped > 0 && shipped < MEGABYTE, `the compaction worker's young generation holds ${shipped} bytes`);
    const usual = await youngCapacity({ workerData: { priority: 'low' } });
    assert.ok(usual >= MEGABYTE, `a worker started without the limit grows its young generation to ${usual} bytes`);
  });

  it('runs in a real worker thread', async function () {
    this.timeout(60_000);
    const nicenessBefore = process.platform === 'linux' ? nicenessOfThreads() : [];
    let worker: Worker | undefined;
    let failed: string | undefined;
    const entry = join(__dirname, '..', '..', '..', 'src', 'app', 'compaction', 'compaction-worker.ts');
    const engine = new WorkerCompactionEngine(
      () => {
        // The worker loads the TypeScript entry as the built one would load its bundle.
        worker = new Worker(`require('tsx/cjs/api').register(); require(${JSON.stringify(entry)});`, {
          ...compactionWorkerOptions('idle'),
          eval: true,
        });
        return worker;
      },
      (message) => void (failed = message),
    );
    try {
      const conversation = await conversationWith(engine, summarizer);
      const outcome = await conversation.compact('manual');
      assert.equal(outcome.status, 'compacted');
      assert.ok(worker, 'a worker was started');
      assert.equal(failed, undefined, 'computed in the worker, not on this thread after it failed');
      assert.match(JSON.stringify(conversation.view()[0] ?? {}), /SUMMARY of/);
      if (process.platform === 'linux') {
        // The worker's thread gives way to the editor's: its priority alone is lowered.
        assert.deepEqual(nicenessOfThreads().slice().sort(), [...nicenessBefore, 10].sort(), 'one more thread, the worker, at niceness 10');
        assert.equal(nicenessOf('/proc/thread-self/stat'), 0, "the editor's thread keeps its priority");
        // It runs only on idle processors where the system's `chrt` can set that, and says which thread it is.
        const thread = await until(() => engine.workerThread);
        assert.equal(thread.priority, hasChrt() ? 'idle' : 'low');
        assert.equal(policyOf(`/proc/self/task/${thread.tid}/stat`), hasChrt() ? SCHED_IDLE : 0);
        assert.equal(policyOf('/proc/thread-self/stat'), 0, "the editor's thread keeps its policy");
      }
    } finally {
      engine.dispose();
    }
  });
});

/** Linux's scheduling policy for threads that run only when a processor has nothing else to run. */
const SCHED_IDLE = 5;

/** The scheduling policy of a thread, from its `stat` file in `/proc` (the 41st field of the line). */
function policyOf(statFile: string): number {
  return Number(readFileSync(statFile, 'utf8').split(') ')[1]!.split(' ')[38]);
}

function hasChrt(): boolean {
  return CHRT_PATHS.some((path) => existsSync(path));
}

/** The value `get` gives once it gives one, looked for every 10 ms for up to 10 s. */
async function until<T>(get: () => T | undefined): Promise<T> {
  for (let i = 0; i < 1_000; i++) {
    const value = get();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error('never came');
}

/** The niceness of a thread, from its `stat` file in `/proc`. */
function nicenessOf(statFile: string): number {
  // Fields after the command's closing parenthesis; niceness is the 19th field of the line.
  const fields = readFileSync(statFile, 'utf8').split(') ')[1]!.split(' ');
  return Number(fields[16]);
}

/** The niceness of each of this process's threads that has one other than 0. */
function nicenessOfThreads(): number[] {
  return readdirSync('/proc/self/task')
    .map((task) => {
      try {
        return nicenessOf(`/proc/self/task/${task}/stat`);
      } catch {
        return 0; // a thread that ended meanwhile
      }
    })
    .filter((nice) => nice !== 0);
}

function syncedRecords(posted: readonly unknown[]): number {
  let count = 0;
  for (const message of posted) {
    const m = message as { kind: string; records?: unknown[] };
    if (m.kind === 'sync') count += m.records?.length ?? 0;
  }
  return count;
}
