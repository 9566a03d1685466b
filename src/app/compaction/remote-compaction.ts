import { setImmediate as nextTurn } from 'node:timers/promises';
import { branchLog, TurnIndex } from '../../core/branches';
import { computeCompaction, type CompactionOutcome, type CompactionProgress, type CompactionRequest } from '../../core/compaction';
import { EngineMemo } from '../../core/engine-memo';
import { ledgerOf, contentHeldAway, type ConversationLog, type LogRecord } from '../../core/history';
import { MessageTokenCounter } from '../../core/message-tokens';
import { systemClock, withSummarize, type Summarizer, type SummaryResponse } from '../../core/ports';
import { charEstimator, loadTokenizer } from '../../core/tokenizer';
import { errorText } from '../../core/errors';
import { IN_THREAD_ENGINE, type CompactionEngine, type CompactionInput, type CountInput } from './compaction-engine';
import { packedOutcome, packedRequest, sliceEnd, unpackedOutcome, unpackedRequest, type PackedOutcome, type PackedRequest } from './worker-packing';
import { threadTimes, type LoweredThread, type WorkerPriority } from './worker-priority';

/**
 * Compactions computed in a worker thread. The worker keeps a copy of each conversation's records,
 * sent in small slices as they grow (the first compaction after a reload sends the whole log, in
 * slices the editor's thread hardly notices), counts them with its own tokenizer (taking the counts
 * stored with the records), and computes the compaction there: the cut, the pruning, the scores,
 * the summary requests and their counts. Only the summarizer's calls come back to the extension
 * host, which makes them with the model, and the result is applied there; what is long in either
 * (the messages of a summary request, the lists of a compaction) comes as JSON text in slices, which
 * the host reads back a slice at a time (see `worker-packing`). A worker that fails to start
 * or dies hands its work to the host's own thread.
 *
 * The worker's thread runs only on a processor no other thread wants (`worker-priority.ts`). While
 * the host waits for it, the host watches how long it waits for a processor; one that waits most of
 * a second and runs a fraction of that starves (every core kept busy by other programs): it is
 * stopped, what it was computing is computed on the host's thread, and the next worker runs at a
 * lowered priority that still gets its share. Summaries the worker had already been given are
 * reused, not asked of the model again.
 */

/** A worker, or anything that speaks like one (a `MessagePort` in tests). */
export interface WorkerLike {
  postMessage(message: unknown): void;
  on(event: 'message', listener: (message: unknown) => void): unknown;
  on(event: 'error' | 'exit', listener: (reason: unknown) => void): unknown;
  terminate?(): Promise<number> | void;
}

/** What the worker side listens on (its `parentPort`). */
export interface PortLike {
  postMessage(message: unknown): void;
  on(event: 'message', listener: (message: unknown) => void): unknown;
}

/** Ids handed to the worker per compaction, for its entries (a pruning and a summary need two). */
const IDS_PER_JOB = 8;

type ToWorker =
  | { readonly kind: 'sync'; readonly id: string; readonly from: number; readonly records: readonly LogRecord[] }
  | { readonly kind: 'drop'; readonly id: string }
  | { readonly kind: 'let-go'; readonly id: string; readonly at: readonly number[] }
  | {
      readonly kind: 'compute';
      readonly job: number;
      readonly id: string;
      readonly leaf: string | null;
      readonly length: number;
      readonly request: Omit<CompactionRequest, 'log' | 'ledger' | 'signal' | 'onProgress'>;
      readonly tokenizer: string;
      readonly summarizer: { readonly name: string; readonly contextWindow?: number; readonly continues?: boolean };
      readonly ids: readonly string[];
    }
  | { readonly kind: 'summarized'; readonly job: number; readonly call: number; readonly response?: SummaryResponse; readonly error?: string }
  | { readonly kind: 'abort'; readonly job: number }
  | { readonly kind: 'count'; readonly job: number; readonly id: string; readonly ids: readonly string[]; readonly tokenizer: string };

type FromWorker =
  | { readonly kind: 'summarize'; readonly job: number; readonly call: number; readonly request: PackedRequest }
  | { readonly kind: 'progress'; readonly job: number; readonly progress: CompactionProgress }
  | { readonly kind: 'computed'; readonly job: number; readonly outcome: PackedOutcome }
  | { readonly kind: 'failed'; readonly job: number; readonly error: string }
  | { readonly kind: 'resync'; readonly id: string }
  | { readonly kind: 'counted'; readonly job: number; readonly counts: readonly (readonly [string, number])[] }
  | WorkerStarted;

/** What the worker tells the host once its thread's priority is set: which thread it is, and what it got. */
export type WorkerStarted = { readonly kind: 'started' } & LoweredThread;

/** How the host watches a worker that runs only on idle processors (the defaults outside tests). */
export interface StarvationWatch {
  /** How long (ms) a thread has run and waited for a processor (see `threadTimes`). */
  readonly times?: (tid: number) => { readonly run: number; readonly wait: number } | undefined;
  /** How often (ms) the host looks while it waits for the worker. */
  readonly everyMs?: number;
  /** How long (ms) the worker may wait for a processor, while running less than a quarter of that, before it is said to starve. */
  readonly starvedMs?: number;
}

interface Job {
  readonly input: CompactionInput;
  readonly controller: AbortController;
  /** The summaries the worker was given for this job, in order: reused if the job is computed again here. */
  readonly answers: Array<{ readonly request: PackedRequest; readonly response: SummaryResponse }>;
  resolve(outcome: CompactionOutcome | Promise<CompactionOutcome>): void;
  reject(error: unknown): void;
}

/** The extension host's side: a `CompactionEngine` that computes in the worker `start` makes. */
export class WorkerCompactionEngine implements CompactionEngine {
  private worker: WorkerLike | undefined;
  private broken = false;
  /** The priority the next worker is started at: `low` once one that ran only on idle processors starved. */
  private priority: WorkerPriority = 'idle';
  /** The running worker's thread, once it said which it is. */
  private thread: LoweredThread | undefined;
  /** While the host waits for a worker that runs only on idle processors: the timer that looks, and the times it started from. */
  private watching: { readonly timer: ReturnType<typeof setInterval>; from?: { readonly run: number; readonly wait: number } } | undefined;
  private nextJob = 0;
  private readonly jobs = new Map<number, Job>();
  /** Per conversation: the records the worker holds (a prefix of `all`, by identity of the array). */
  private readonly sent = new Map<string, { all: ConversationLog; count: number; worker: WorkerLike }>();
  /** Syncs under way, so that two compactions of one conversation send each record once. */
  private readonly syncing = new Map<string, Promise<void>>();
  /** Counts under way, by job. */
  private readonly counts = new Map<number, { readonly input: CountInput; resolve(counts: ReadonlyMap<string, number>): void }>();

  constructor(
    private readonly start: (priority: WorkerPriority) => WorkerLike,
    private readonly log: (message: string) => void = () => undefined,
    private readonly fallback: CompactionEngine = IN_THREAD_ENGINE,
    private readonly watch: StarvationWatch = {},
  ) {}

  /** The running worker's thread and its priority, once it said; undefined before, and when there is none. */
  get workerThread(): LoweredThread | undefined {
    return this.worker ? this.thread : undefined;
  }

  async compute(input: CompactionInput): Promise<CompactionOutcome> {
    const worker = this.ready();
    if (!worker) return this.fallback.compute(input);
    await this.sync(worker, input.conversationId, input.all);
    if (this.broken) return this.fallback.compute(input);
    // The worker was stopped for starving while its records were sent: the next one computes it.
    if (this.worker !== worker) return this.compute(input);
    const job = ++this.nextJob;
    const controller = new AbortController();
    const { signal: outer, onProgress: _progress, ...request } = input.request;
    const promise = new Promise<CompactionOutcome>((resolve, reject) => this.jobs.set(job, { input, controller, answers: [], resolve, reject }));
    this.watchWorker();
    const onAbort = (): void => {
      controller.abort(outer?.reason);
      this.post({ kind: 'abort', job });
    };
    if (outer?.aborted) onAbort();
    else outer?.addEventListener('abort', onAbort, { once: true });
    const { summarizer, counter, newId } = input.deps;
    this.post({
      kind: 'compute',
      job,
      id: input.conversationId,
      leaf: input.leaf,
      length: input.snapshot.length,
      request,
      tokenizer: counter.tokenizer.name,
      summarizer: {
        name: summarizer.name,
        ...(summarizer.contextWindow !== undefined ? { contextWindow: summarizer.contextWindow } : {}),
        ...(summarizer.continues ? { continues: true } : {}),
      },
      ids: Array.from({ length: IDS_PER_JOB }, () => newId()),
    });
    try {
      return await promise;
    } finally {
      outer?.removeEventListener('abort', onAbort);
      this.jobs.delete(job);
    }
  }

  /** Counts the messages in the worker, from its copy of the records; on this thread when there is no worker. */
  async count(input: CountInput): Promise<ReadonlyMap<string, number>> {
    const worker = this.ready();
    if (!worker) return countHere(input);
    await this.sync(worker, input.conversationId, input.all);
    if (this.broken) return countHere(input);
    if (this.worker !== worker) return this.count(input);
    const job = ++this.nextJob;
    const counted = new Promise<ReadonlyMap<string, number>>((resolve) => this.counts.set(job, { input, resolve }));
    this.watchWorker();
    this.post({ kind: 'count', job, id: input.conversationId, ids: input.ids, tokenizer: input.tokenizer });
    return counted;
  }

  letGo(conversationId: string, positions: readonly number[]): void {
    const known = this.sent.get(conversationId);
    if (!known || known.worker !== this.worker || this.broken) return;
    // Records not sent yet go as they are held now, without their content.
    const at = positions.filter((p) => p < known.count);
    if (at.length > 0) this.post({ kind: 'let-go', id: conversationId, at });
  }

  forget(conversationId: string): void {
    if (!this.sent.delete(conversationId) || !this.worker || this.broken) return;
    this.post({ kind: 'drop', id: conversationId });
  }

  dispose(): void {
    const worker = this.worker;
    this.worker = undefined;
    this.broken = true;
    this.stopWatching();
    void Promise.resolve(worker?.terminate?.()).catch(() => undefined);
  }

  /** The worker, started on first use; undefined once it could not start or died. */
  private ready(): WorkerLike | undefined {
    if (this.broken) return undefined;
    if (this.worker) return this.worker;
    try {
      const worker = this.start(this.priority);
      // What a worker stopped for starving still sends is not listened to.
      worker.on('message', (message) => this.worker === worker && this.receive(message as FromWorker));
      worker.on('error', (reason) => this.worker === worker && this.fail(`it failed: ${errorText(reason)}`));
      worker.on('exit', (code) => this.worker === worker && this.fail(`it exited (${String(code)})`));
      this.worker = worker;
      this.thread = undefined;
      return worker;
    } catch (error) {
      this.fail(`it could not start: ${errorText(error)}`);
      return undefined;
    }
  }

  /** The worker is gone: every compaction under way is computed again on this thread. */
  private fail(why: string): void {
    if (this.broken) return;
    this.broken = true;
    this.worker = undefined;
    this.log(`Compactions are computed on the extension host's thread from now on: the compaction worker stopped (${why}).`);
    this.computeHere();
  }

  /** Every compaction and count under way is computed again on this thread, with the summaries the worker was given. */
  private computeHere(): void {
    this.stopWatching();
    for (const job of this.jobs.values()) job.resolve(this.fallback.compute(reusingAnswers(job)));
    this.jobs.clear();
    for (const count of this.counts.values()) void countHere(count.input).then(count.resolve);
    this.counts.clear();
  }

  /** While the host waits for a worker that runs only on idle processors, looks every so often at how long it waits for one. */
  private watchWorker(): void {
    if (this.watching || this.thread?.priority !== 'idle' || this.thread.tid === undefined) return;
    const timer = setInterval(() => this.look(), this.watch.everyMs ?? 250);
    timer.unref?.();
    this.watching = { timer };
  }

  private stopWatching(): void {
    if (this.watching) clearInterval(this.watching.timer);
    this.watching = undefined;
  }

  /** One look at the worker's times: stops watching once nothing waits for it, and calls it starved past the limit. */
  private look(): void {
    const watching = this.watching;
    const tid = this.thread?.tid;
    if (!watching) return;
    if ((this.jobs.size === 0 && this.counts.size === 0) || tid === undefined || !this.worker) return this.stopWatching();
    const now = (this.watch.times ?? threadTimes)(tid);
    if (!now) return this.stopWatching();
    watching.from ??= now;
    const waited = now.wait - watching.from.wait;
    const ran = now.run - watching.from.run;
    if (waited >= (this.watch.starvedMs ?? 1_000) && ran < waited / 4) this.starved(waited, ran);
  }

  /**
   * The worker waited for a processor while the host waited for it: it is stopped, what it was
   * computing is computed here, and the next one runs at a lowered priority that gets its share.
   */
  private starved(waited: number, ran: number): void {
    const worker = this.worker;
    this.worker = undefined;
    this.thread = undefined;
    this.priority = 'low';
    this.sent.clear();
    this.log(
      `The compaction worker waited ${(waited / 1000).toFixed(1)} s for a processor and ran ${Math.round(ran)} ms (every core is busy): ` +
        `what it was computing is computed on the extension host's thread, and the next worker runs at a lowered priority instead of on idle processors only.`,
    );
    this.computeHere();
    void Promise.resolve(worker?.terminate?.()).catch(() => undefined);
  }

  /** Sends the worker the records it lacks, in slices, yielding the thread between them. */
  private sync(worker: WorkerLike, id: string, all: ConversationLog): Promise<void> {
    const running = this.syncing.get(id);
    const next = (running ?? Promise.resolve()).then(async () => {
      if (this.worker !== worker) return;
      let known = this.sent.get(id);
      if (!known || known.worker !== worker || known.all !== all || known.count > all.length) known = { all, count: 0, worker };
      this.sent.set(id, known);
      while (known.count < all.length && this.worker === worker) {
        const end = sliceEnd(all, known.count);
        worker.postMessage({ kind: 'sync', id, from: known.count, records: all.slice(known.count, end) } satisfies ToWorker);
        known.count = end;
        if (end < all.length) await nextTurn();
      }
    });
    const tail = next.finally(() => {
      if (this.syncing.get(id) === tail) this.syncing.delete(id);
    });
    this.syncing.set(id, tail);
    return tail;
  }

  private post(message: ToWorker): void {
    this.worker?.postMessage(message);
  }

  private receive(message: FromWorker): void {
    if (message.kind === 'started') {
      const { kind: _kind, ...thread } = message;
      this.thread = thread;
      if (this.jobs.size > 0 || this.counts.size > 0) this.watchWorker();
      return;
    }
    if (message.kind === 'resync') {
      // The worker's copy went wrong: it is sent again from the start with the next compaction.
      this.sent.delete(message.id);
      return;
    }
    if (message.kind === 'counted') {
      this.counts.get(message.job)?.resolve(new Map(message.counts));
      this.counts.delete(message.job);
      return;
    }
    const job = this.jobs.get(message.job);
    if (!job) return;
    switch (message.kind) {
      case 'summarize':
        void this.summarize(message.job, message.call, message.request, job);
        break;
      case 'progress':
        job.input.request.onProgress?.(message.progress);
        break;
      case 'computed':
        job.resolve(unpackedOutcome(message.outcome));
        break;
      case 'failed':
        job.reject(new Error(message.error));
        break;
    }
  }

  /** Makes one summarizer call the worker asked for, and sends back its answer or its error (keys removed). */
  private async summarize(job: number, call: number, packed: PackedRequest, { input, controller, answers }: Job): Promise<void> {
    try {
      const response = await input.deps.summarizer.summarize(await unpackedRequest(packed), controller.signal);
      answers.push({ request: packed, response });
      const { text, model, calledTools } = response;
      this.post({
        kind: 'summarized',
        job,
        call,
        response: { text, ...(model ? { model } : {}), ...(calledTools?.length ? { calledTools: [...calledTools] } : {}) },
      });
    } catch (error) {
      const text = errorText(error);
      this.post({ kind: 'summarized', job, call, error: input.deps.redact ? input.deps.redact(text) : text });
    }
  }
}

/**
 * The worker's side: keeps the conversations' records as the host sends them, and computes the
 * compactions it is asked for, calling the summarizer through the host.
 */
export function serveCompactions(port: PortLike): void {
  const server = new CompactionServer(port);
  port.on('message', (raw) => server.receive(raw as ToWorker));
}

/** Hands the worker a summarizer's answer (or its error) to one call it made. */
type SummaryCall = (answer: ToWorker & { kind: 'summarized' }) => void;

/**
 * The worker's state: the conversations' records, a counter per tokenizer, what the engine remembers
 * of the records (for the worker's lifetime: a compaction takes in only what came since the last),
 * and the compactions under way.
 */
class CompactionServer {
  private readonly conversations = new Map<string, { records: LogRecord[]; turns: TurnIndex }>();
  private readonly counters = new Map<string, Promise<MessageTokenCounter>>();
  private readonly memo = new EngineMemo();
  private readonly jobs = new Map<number, { controller: AbortController; calls: Map<number, SummaryCall> }>();

  constructor(private readonly port: PortLike) {}

  /** Acts on one message from the host. */
  receive(message: ToWorker): void {
    switch (message.kind) {
      case 'sync':
        this.sync(message);
        break;
      case 'drop':
        this.conversations.delete(message.id);
        break;
      case 'let-go':
        this.letGo(message);
        break;
      case 'compute':
        void this.compute(message);
        break;
      case 'summarized':
        this.jobs.get(message.job)?.calls.get(message.call)?.(message);
        break;
      case 'abort':
        this.jobs.get(message.job)?.controller.abort();
        break;
      case 'count':
        void this.counterFor(message.tokenizer).then((counter) => {
          const records = this.conversations.get(message.id)?.records ?? [];
          this.post({ kind: 'counted', job: message.job, counts: countIn(records, message.ids, counter) });
        });
        break;
    }
  }

  private post(message: FromWorker): void {
    this.port.postMessage(message);
  }

  /** The counter of the tokenizer named, loaded once. */
  private counterFor(name: string): Promise<MessageTokenCounter> {
    let counter = this.counters.get(name);
    if (!counter) {
      const tokenizer = name === 'o200k_base' || name === 'cl100k_base' ? loadTokenizer(name) : Promise.resolve(charEstimator);
      counter = tokenizer.then((t) => new MessageTokenCounter(t));
      this.counters.set(name, counter);
    }
    return counter;
  }

  /** Adds a slice of records; a slice that does not follow what is held asks the host to send them all again. */
  private sync(message: ToWorker & { kind: 'sync' }): void {
    let conversation = this.conversations.get(message.id);
    if (message.from === 0) this.conversations.set(message.id, (conversation = { records: [], turns: new TurnIndex() }));
    if (!conversation || conversation.records.length !== message.from) {
      this.conversations.delete(message.id);
      this.post({ kind: 'resync', id: message.id });
      return;
    }
    conversation.records.push(...message.records);
  }

  /** Holds the records named without their content, as the host now does. */
  private letGo(message: ToWorker & { kind: 'let-go' }): void {
    const records = this.conversations.get(message.id)?.records;
    if (!records) return;
    for (const at of message.at) {
      const record = records[at];
      if (record?.type === 'message') records[at] = contentHeldAway(record);
    }
  }

  /** Computes one compaction and sends back its outcome (without the view) or its error. */
  private async compute(message: ToWorker & { kind: 'compute' }): Promise<void> {
    const controller = new AbortController();
    const calls = new Map<number, SummaryCall>();
    this.jobs.set(message.job, { controller, calls });
    try {
      const conversation = this.conversations.get(message.id);
      const counter = await this.counterFor(message.tokenizer);
      if (!conversation) throw new Error(`the worker holds no records of conversation ${message.id}`);
      const snapshot = branchLog(conversation.records, message.leaf, conversation.turns).slice(0, message.length);
      // Counts stored with the records are taken as they are: only what has none is tokenized, here.
      for (const record of snapshot) if (record.type === 'message') counter.countMessage(record.message, record.tokens);
      const summarizer = this.summarizerThroughHost(message, calls);
      const ids = [...message.ids];
      let extra = 0;
      const outcome = await computeCompaction(
        {
          ...message.request,
          log: snapshot,
          ledger: ledgerOf(snapshot, this.memo),
          signal: controller.signal,
          onProgress: (progress) => this.post({ kind: 'progress', job: message.job, progress }),
        },
        { counter, summarizer, clock: systemClock, newId: () => ids.shift() ?? `${message.ids[0] ?? 'entry'}-${++extra}`, memo: this.memo },
      );
      this.post({ kind: 'computed', job: message.job, outcome: packedOutcome(outcome) });
    } catch (error) {
      this.post({ kind: 'failed', job: message.job, error: errorText(error) });
    } finally {
      this.jobs.delete(message.job);
    }
  }

  /** A summarizer whose calls are made by the host: each is numbered, and answered through `calls`. */
  private summarizerThroughHost(message: ToWorker & { kind: 'compute' }, calls: Map<number, SummaryCall>): Summarizer {
    let call = 0;
    return {
      ...message.summarizer,
      summarize: (request) =>
        new Promise<SummaryResponse>((resolve, reject) => {
          const number = ++call;
          calls.set(number, (answer) => {
            calls.delete(number);
            if (answer.response) resolve(answer.response);
            else reject(new Error(answer.error ?? 'the summarizer failed'));
          });
          this.post({ kind: 'summarize', job: message.job, call: number, request: packedRequest(request) });
        }),
    };
  }
}

/** Each message's count without its framing (as stored with a record), for those of `ids` that `records` hold. */
function countIn(records: ConversationLog, ids: readonly string[], counter: MessageTokenCounter): Array<[string, number]> {
  const wanted = new Set(ids);
  const counts: Array<[string, number]> = [];
  for (const record of records) {
    if (record.type !== 'message' || !wanted.has(record.message.id)) continue;
    wanted.delete(record.message.id);
    counts.push([record.message.id, counter.countMessage(record.message) - counter.framing(record.message)]);
  }
  return counts;
}

/**
 * `job`'s input with a summarizer that answers, in order, the requests the worker already had
 * answered with the same answers (the same engine on the same records asks the same), and asks the
 * model only from the first request that differs.
 */
function reusingAnswers({ input, answers }: Job): CompactionInput {
  if (answers.length === 0) return input;
  const summarizer = input.deps.summarizer;
  let next = 0;
  return {
    ...input,
    deps: {
      ...input.deps,
      summarizer: withSummarize(summarizer, async (request, signal) => {
        const answered = answers[next];
        if (answered && samePacked(answered.request, packedRequest(request))) {
          next++;
          return answered.response;
        }
        next = answers.length;
        return summarizer.summarize(request, signal);
      }),
    },
  };
}

function samePacked(a: PackedRequest, b: PackedRequest): boolean {
  const text = (request: PackedRequest): string =>
    JSON.stringify([request.system, request.purpose, request.maxOutputTokens, request.temperature, request.continuation?.directive]) +
    request.messages.join('') +
    (request.continuation?.messages.join('') ?? '');
  return text(a) === text(b);
}

/** The counts made on this thread (no worker). */
async function countHere(input: CountInput): Promise<ReadonlyMap<string, number>> {
  const tokenizer = input.tokenizer === 'o200k_base' || input.tokenizer === 'cl100k_base' ? await loadTokenizer(input.tokenizer) : charEstimator;
  return new Map(countIn(input.all, input.ids, new MessageTokenCounter(tokenizer)));
}
