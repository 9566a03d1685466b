/**
 * Memory of a streamed answer. A 40 MB answer is streamed the way a server sends it: a loopback
 * OpenAI-compatible server (in this process) answers `POST /v1/chat/completions` with server-sent
 * events, each a `chat.completion.chunk` of a few hundred characters, and a child process takes one
 * chat request through the real path: the turn controller, the agent loop, the AI SDK's OpenAI chat
 * model made by `createEndpointModel`, the conversation and its store on disk, into a chat that
 * behaves like VS Code's (see `ShownChat`). The child reports the growth of its resident memory at
 * its highest during the request (the kernel's high-water mark, reset just before) and once it has
 * settled after it. The target is for the highest: the chat keeps what it showed (the answer, once),
 * the conversation keeps the answer as stored (cut to 1 MB); nothing else holds the whole answer.
 * Run on its own with `npx tsx bench/stream-answer.ts`.
 */
import { usageReport } from '../src/core/usage-report';
import { spawn } from 'node:child_process';
import { promises as fs, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import * as v8 from 'node:v8';
import { ConversationRegistry } from '../src/app/conversation/conversation-registry';
import { readSettings } from '../src/app/settings';
import { ConversationIndex } from '../src/app/store/conversation-index';
import { ConversationStore } from '../src/app/store/conversation-store';
import { RequestSetup } from '../src/app/turn/request-setup';
import { TurnController, type ChatButton, type ChatSurface, type TurnModels } from '../src/app/turn/turn-controller';
import { WorkspaceFiles } from '../src/app/workspace/workspace-files';
import { DEFAULT_CONFIG } from '../src/core/config';
import { MessageTokenCounter } from '../src/core/message-tokens';
import { systemClock } from '../src/core/ports';
import { charEstimator } from '../src/core/tokenizer';
import { createEndpointModel } from '../src/llm/openai-endpoint';
import { NO_TELEMETRY } from '../src/llm/telemetry';

export interface StreamAnswerBench {
  /** Characters of the answer the server streamed. */
  readonly answer_chars: number;
  /** Characters of each streamed delta. */
  readonly delta_chars: number;
  /** Highest growth of resident memory during the request (MB). */
  readonly peak_rss_mb: number;
  /** Growth of resident memory once the process settled after the request (MB). */
  readonly settled_rss_mb: number;
  /** The heap (and memory it manages outside) held once settled (MB). */
  readonly settled_heap_mb: number;
  /** Characters the chat showed. */
  readonly shown_chars: number;
  /** Characters of the answer the conversation kept. */
  readonly kept_chars: number;
  /** Seconds the request took. */
  readonly seconds: number;
}

const ANSWER_CHARS = Number(process.env.LONGRUN_BENCH_ANSWER_CHARS ?? 40 * 1024 * 1024);
/** Characters of each delta: a few dozen tokens, as a fast server batches them. */
const DELTA_CHARS = Number(process.env.LONGRUN_BENCH_DELTA_CHARS ?? 256);
const CHILD = '--stream-answer-child';

/** Prose and code, so that the answer is not one repeated character. */
const TEXT =
  'The handler checks its input before it retries, and keeps the order of the calls it was given.\n' +
  '```ts\nconst result = await handler.process(input, { retries: 3, timeoutMs: 5_000 });\n```\n';

/** The `i`-th delta of the answer: its slice of `TEXT` repeated, numbered so that no two are the same. */
function delta(i: number, chars: number): string {
  const head = `${i} `;
  let text = head;
  for (let at = (i * chars) % TEXT.length; text.length < chars; at = 0) text += TEXT.slice(at, at + chars - text.length);
  return text;
}

function chunk(choice: object, usage?: object): string {
  return `data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 1, model: 'bench', choices: [choice], ...(usage ? { usage } : {}) })}\n\n`;
}

/** Writes `text` and waits for the socket to take it, as a server does that respects backpressure. */
function write(response: ServerResponse, text: string): Promise<void> | undefined {
  if (response.write(text)) return undefined;
  return new Promise((resolve) => response.once('drain', resolve));
}

/** Streams an answer of `chars` characters, `deltaChars` at a time, as an OpenAI-compatible server does. */
async function answer(request: IncomingMessage, response: ServerResponse, chars: number, deltaChars: number): Promise<void> {
  for await (const _ of request) {
    // The request body is read and dropped.
  }
  response.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
  await write(response, chunk({ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }));
  let sent = 0;
  for (let i = 0; sent < chars; i++) {
    const text = delta(i, Math.min(deltaChars, chars - sent));
    sent += text.length;
    await write(response, chunk({ index: 0, delta: { content: text }, finish_reason: null }));
  }
  const usage = { prompt_tokens: 1_000, completion_tokens: Math.ceil(chars / 4), total_tokens: 1_000 + Math.ceil(chars / 4) };
  await write(response, chunk({ index: 0, delta: {}, finish_reason: 'stop' }, usage));
  response.end('data: [DONE]\n\n');
}

/**
 * A chat response as VS Code keeps it. The extension host turns each `markdown` call into a part,
 * gathers the parts of one microtask and sends them to the window as one message (serialized), and
 * keeps nothing of them once sent; the window's chat model appends a markdown part to the markdown
 * part before it, so what it keeps of a streamed answer is its text, once. Both halves run here: the
 * message is serialized and read back, and the text it carries is kept as one string, joined as it
 * grows (as the window joins it).
 */
class ShownChat implements ChatSurface {
  /** The text shown: joined pieces, and the pieces that came since the last join. */
  private readonly shown: string[] = [];
  private recent: string[] = [];
  private batch: object[] = [];

  markdown(text: string): void {
    this.send({ kind: 'markdownContent', content: { value: text, isTrusted: false, supportThemeIcons: false, supportHtml: false } });
  }
  progress(text: string): void {
    this.send({ kind: 'progressMessage', content: { value: text } });
  }
  button(button: ChatButton): void {
    this.send({ kind: 'command', command: { id: button.command, title: button.title } });
  }
  diffButton(path: string, _diff: string, title: string): void {
    this.send({ kind: 'command', command: { id: 'diff', title, arguments: [path] } });
  }

  shownChars(): number {
    return [...this.shown, ...this.recent].reduce((sum, piece) => sum + piece.length, 0);
  }

  private send(part: object): void {
    if (this.batch.push(part) === 1) queueMicrotask(() => this.deliver());
  }

  private deliver(): void {
    const message = JSON.stringify(this.batch);
    this.batch = [];
    for (const part of JSON.parse(message) as Array<{ kind: string; content?: { value: string } }>) {
      if (part.kind === 'markdownContent' && part.content) this.recent.push(part.content.value);
    }
    if (this.recent.length >= 1_024) {
      this.shown.push(this.recent.join(''));
      this.recent = [];
    }
  }
}

/** Resident memory (bytes) at its highest since `resetPeak`, from the kernel. */
function peakRss(): number {
  const kb = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
  if (kb === undefined) throw new Error('no VmHWM in /proc/self/status (this benchmark needs Linux)');
  return Number(kb) * 1024;
}

function resetPeak(): void {
  writeFileSync('/proc/self/clear_refs', '5');
}

/** Committed bytes of V8's young generation. */
function youngBytes(): number {
  return v8.getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')?.physical_space_size ?? 0;
}

/** Resident memory and heap after a full collection, once V8 gave its young generation back (see `bench/memory.ts`). */
async function settled(): Promise<{ rss: number; heap: number }> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with --expose-gc');
  const deadline = Date.now() + 45_000;
  gc();
  while (youngBytes() > 2 * 1024 * 1024 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    gc();
  }
  gc();
  const usage = process.memoryUsage();
  return { rss: usage.rss, heap: usage.heapUsed + usage.external };
}

/** In the child: one chat request answered by the server at `baseUrl`, measured. */
async function child(baseUrl: string, dir: string): Promise<void> {
  const store = new ConversationStore(path.join(dir, 'storage'), Date.now);
  const state = new Map<string, unknown>();
  const index = new ConversationIndex({ get: (k) => state.get(k) as never, update: async (k, v) => void state.set(k, v) });
  const counter = new MessageTokenCounter(charEstimator);
  let ids = 0;
  const newId = (): string => `bench-${++ids}`;
  const registry = new ConversationRegistry({
    store,
    index,
    clock: systemClock,
    newId,
    conversationDeps: () => ({
      store,
      index,
      clock: systemClock,
      newId,
      config: () => DEFAULT_CONFIG,
      model: () => ({ name: 'bench', window: { limit: 128_000, source: 'model' }, counter, requestOverhead: 0, outputReserve: 0 }),
      summarizer: () => Promise.resolve(undefined),
    }),
    warn: (message) => void process.stderr.write(`${message}\n`),
    error: (message) => void process.stderr.write(`${message}\n`),
    info: () => undefined,
    changed: () => undefined,
  });
  const model = createEndpointModel({ endpoint: 'bench', baseUrl, id: 'bench', contextWindow: 128_000 }, undefined);
  const models: TurnModels = {
    languageModel: async () => model,
    learnWindow: () => undefined,
    windowIsLowerBound: () => false,
    contextWindow: () => undefined,
    maxOutputTokens: () => undefined,
    telemetry: () => NO_TELEMETRY,
    truncationAdvice: () => undefined,
    observeUsage: () => undefined,
    redact: (text) => text,
    servedByEndpoint: () => true,
    setAgentPrefix: () => undefined,
    modelName: () => 'bench',
    newId,
    providerKind: () => 'openai-compatible',
    subagentModel: async () => undefined,
    usageView: (conversation) => ({
      report: usageReport(
        conversation.allRecords().flatMap((r) => (r.type === 'usage' ? [r.usage] : [])),
        () => undefined,
      ),
    }),
  };
  const workspace = path.join(dir, 'ws');
  await fs.mkdir(workspace, { recursive: true });
  const roots = [{ name: 'ws', fsPath: workspace }];
  const editor = {
    findFiles: async () => [],
    unsavedText: () => undefined,
    editUnsaved: async () => false,
  };
  const files = new WorkspaceFiles({ roots: () => roots, autoApprove: () => true, confirm: async () => true, editor });
  const settings = readSettings(() => undefined).settings;
  const turnWorkspace = { files, trusted: () => true, roots: () => roots };
  const controller = new TurnController({
    registry,
    models,
    workspace: turnWorkspace,
    settings: () => settings,
    setup: new RequestSetup({ workspace: turnWorkspace, settings: () => settings }),
    reporter: { report: () => undefined },
    log: { info: () => undefined, warn: (m) => void process.stderr.write(`${m}\n`), error: (m) => void process.stderr.write(`${m}\n`) },
    now: Date.now,
  });
  const request = { prompt: 'Write it all out.', history: [], chat: 'bench-chat', attachments: [], instructions: [], toolReferences: [] };
  // A first request loads what every request uses (the SDK, the provider, the store's schemas).
  await controller.handle({ ...request, prompt: 'warm up' }, new ShownChat(), new AbortController().signal);

  const chat = new ShownChat();
  const before = await settled();
  resetPeak();
  const started = Date.now();
  const result = await controller.handle({ ...request, history: [] }, chat, new AbortController().signal);
  const seconds = (Date.now() - started) / 1000;
  const peak = peakRss();
  if (result.errorDetails) throw new Error(`the request failed: ${result.errorDetails.message}`);
  const after = await settled();
  const conversation = await registry.current();
  const last = conversation?.view().findLast((m) => m.role === 'assistant');
  const kept = last ? last.content.reduce((sum, p) => sum + (p.type === 'text' ? p.text.length : 0), 0) : 0;
  process.stdout.write(
    JSON.stringify({
      peak: peak - before.rss,
      settled: after.rss - before.rss,
      settledHeap: after.heap - before.heap,
      shown: chat.shownChars(),
      kept,
      seconds,
    }),
  );
}

export async function benchStreamAnswer(): Promise<StreamAnswerBench> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'longrun-bench-stream-'));
  let served = 0;
  const server = createServer((request, response) => {
    // The warm-up request gets a short answer; the measured one the whole of it.
    const chars = served++ === 0 ? 1_000 : ANSWER_CHARS;
    void answer(request, response, chars, DELTA_CHARS).catch(() => response.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
    const out = await new Promise<string>((resolve, reject) => {
      const run = spawn(process.execPath, [...process.execArgv, '--expose-gc', __filename, CHILD, baseUrl, dir], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let text = '';
      run.stdout.on('data', (data: Buffer) => (text += data.toString()));
      run.once('exit', (code) => (code === 0 ? resolve(text) : reject(new Error(`the stream-answer child failed (exit code ${code})`))));
    });
    const measured = JSON.parse(out) as { peak: number; settled: number; settledHeap: number; shown: number; kept: number; seconds: number };
    return {
      answer_chars: ANSWER_CHARS,
      delta_chars: DELTA_CHARS,
      peak_rss_mb: measured.peak / 1e6,
      settled_rss_mb: measured.settled / 1e6,
      settled_heap_mb: measured.settledHeap / 1e6,
      shown_chars: measured.shown,
      kept_chars: measured.kept,
      seconds: measured.seconds,
    };
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await fs.rm(dir, { recursive: true, force: true });
  }
}

// Run only when started as a script, not when another benchmark imports `benchStreamAnswer`.
if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === path.resolve(__filename)) {
  if (process.argv[2] === CHILD) {
    child(process.argv[3]!, process.argv[4]!).catch((error: unknown) => {
      console.error(error);
      process.exit(1);
    });
  } else void benchStreamAnswer().then((result) => console.table(result));
}
