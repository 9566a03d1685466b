import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LanguageModel } from 'ai';
import { convertArrayToReadableStream, MockLanguageModelV4 } from 'ai/test';
import { ConversationRegistry } from '../../../src/app/conversation-registry';
import { ConversationStore } from '../../../src/app/store/conversation-store';
import type { InstructionSource } from '../../../src/app/instructions';
import { readSettings, type LongrunSettings } from '../../../src/app/settings';
import {
  TurnController,
  type ChatButton,
  type ChatSurface,
  type TurnControllerDeps,
  type TurnModels,
  type TurnResult,
} from '../../../src/app/turn-controller';
import { WorkspaceFiles } from '../../../src/app/workspace-files';
import { DEFAULT_CONFIG, type CompactionConfig } from '../../../src/core/config';
import { MessageTokenCounter } from '../../../src/core/message-tokens';
import type { Summarizer } from '../../../src/core/ports';
import { charEstimator } from '../../../src/core/tokenizer';
import { NO_TELEMETRY } from '../../../src/llm/telemetry';
import { FakeClock, templateSummary } from '../core/fixtures';
import { conversationDeps, memoryIndex, testModel } from '../fixtures/conversation-deps';
import { FakeEditor } from './fake-editor';

/**
 * A turn controller over real conversations on disk, a scripted model that records every prompt it
 * is sent, and chats that behave like VS Code's: their history is what VS Code would hand the
 * participant after each of its buttons (Restore Checkpoint, Retry, an edited request, Fork,
 * Start Over).
 */

type StreamPart = Record<string, unknown>;
type Prompt = MockLanguageModelV4['doStreamCalls'][number]['prompt'];

const usageOf = (input: number, output: number) => ({
  inputTokens: { total: input, noCache: input, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: output, text: output, reasoning: undefined },
});

/** The plain text of every part of a prompt message. */
export function messageTexts(message: Prompt[number]): string {
  if (typeof message.content === 'string') return message.content;
  return message.content
    .map((part) => {
      const p = part as { type: string; text?: string; output?: unknown; input?: unknown };
      if (p.type === 'text') return p.text ?? '';
      if (p.type === 'tool-result') return JSON.stringify(p.output);
      if (p.type === 'tool-call') return JSON.stringify(p.input);
      return '';
    })
    .join(' ');
}

/** The text of the tool results of a prompt message. */
function toolOutputs(message: Prompt[number]): string {
  if (typeof message.content === 'string') return message.content;
  return message.content
    .map((part) => {
      const output = (part as { output?: { value?: unknown } }).output;
      return typeof output?.value === 'string' ? output.value : '';
    })
    .join('\n');
}

/**
 * The model: answers "noted <words>" to "remember <words>"; to "create <path> with <text>" it calls
 * `create_file` and then answers "done"; to "edit <path>: <old> -> <new>" it calls `edit_file`; to
 * "read <path> <path> …" it reads each in turn, then answers; to "delegate <task> | <task> …" it
 * hands each task to a subagent, all in one step, then answers "done". As a subagent (its system
 * prompt says so) it does the same with its task, and answers "Findings:" and the first line of
 * each result it got.
 */
export function scriptedModel(): MockLanguageModelV4 {
  return new MockLanguageModelV4({
    doStream: async ({ prompt }) => {
      const last = prompt.at(-1)!;
      const said = messageTexts(last);
      // Reported like a server counting about four characters a token.
      const read = Math.ceil(prompt.reduce((n, m) => n + messageTexts(m).length + 16, 0) / 4);
      const usage = (output: number) => usageOf(read, output);
      const parts: StreamPart[] = [{ type: 'stream-start', warnings: [] }];
      const asked = messageTexts(prompt.findLast((m) => m.role === 'user') ?? last);
      const reads = asked.startsWith('delegate ') ? [] : (/read ((?:\S+ ?)+)$/.exec(asked)?.[1]?.split(' ') ?? []);
      const done = prompt.slice(prompt.findLastIndex((m) => m.role === 'user') + 1).filter((m) => m.role === 'tool').length;
      const create = last.role === 'user' ? /create (\S+) with (.+)/.exec(said) : null;
      const edit = last.role === 'user' ? /edit (\S+): (.+) -> (.+)/.exec(said) : null;
      const delegate = last.role === 'user' ? /^delegate (.+)$/s.exec(said) : null;
      const subagent = messageTexts(prompt[0]!).startsWith('You are a subagent');
      if (delegate) {
        delegate[1]!.split(' | ').forEach((task, i) => {
          parts.push({ type: 'tool-call', toolCallId: `d${prompt.length}-${i}`, toolName: 'delegate', input: JSON.stringify({ task }) });
        });
        parts.push({ type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage: usage(5) });
      } else if (subagent && reads[done] === undefined) {
        const results = prompt.filter((m) => m.role === 'tool').map((m) => toolOutputs(m).split('\n')[0]);
        const answer = `Findings: ${results.join('; ') || 'nothing read'}`;
        parts.push({ type: 'text-start', id: 't' }, { type: 'text-delta', id: 't', delta: answer }, { type: 'text-end', id: 't' });
        parts.push({ type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage: usage(5) });
      } else if (reads[done] !== undefined) {
        const input = JSON.stringify({ path: reads[done] });
        parts.push({ type: 'tool-call', toolCallId: `r${prompt.length}`, toolName: 'read_file', input });
        parts.push({ type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage: usage(5) });
      } else if (create) {
        parts.push({
          type: 'tool-call',
          toolCallId: `c${prompt.length}`,
          toolName: 'create_file',
          input: JSON.stringify({ path: create[1], content: create[2] }),
        });
        parts.push({ type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage: usage(5) });
      } else if (edit) {
        const input = { path: edit[1], edits: [{ oldText: edit[2], newText: edit[3] }] };
        parts.push({ type: 'tool-call', toolCallId: `e${prompt.length}`, toolName: 'edit_file', input: JSON.stringify(input) });
        parts.push({ type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage: usage(5) });
      } else {
        const answer = last.role === 'tool' ? 'done' : `noted ${/remember (.+)/.exec(said)?.[1] ?? 'that'}`;
        parts.push({ type: 'text-start', id: 't' }, { type: 'text-delta', id: 't', delta: answer }, { type: 'text-end', id: 't' });
        parts.push({ type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage: usage(5) });
      }
      return { stream: convertArrayToReadableStream(parts as never[]) };
    },
  });
}

/** What a chat shows of a response: its text and buttons. */
export class RecordingSurface implements ChatSurface {
  readonly texts: string[] = [];
  readonly buttons: ChatButton[] = [];
  markdown(text: string): void {
    this.texts.push(text);
  }
  readonly progresses: string[] = [];
  progress(text: string): void {
    this.progresses.push(text);
  }
  button(button: ChatButton): void {
    this.buttons.push(button);
  }
  diffButton(path: string, _diff: string, title: string): void {
    this.buttons.push({ command: 'diff', title, arguments: [path] });
  }
  text(): string {
    return this.texts.join('');
  }
}

interface Exchange {
  readonly prompt: string;
  readonly command?: string;
  readonly result: TurnResult;
  readonly surface: RecordingSurface;
}

export interface TurnFixture {
  readonly dir: string;
  readonly workspace: string;
  readonly controller: TurnController;
  readonly registry: ConversationRegistry;
  readonly model: MockLanguageModelV4;
  readonly store: ConversationStore;
  /** Instruction files VS Code attaches to every request of every chat. */
  instructions: InstructionSource[];
  /** The user texts of the prompt the model was sent for the n-th request (0-based; steps of a tool loop count). */
  userTexts(call?: number): string[];
  /** Everything the model was sent in a request (system prompt included). */
  sent(call?: number): string;
  newChat(id?: string): FakeChat;
  close(): Promise<void>;
}

export interface FixtureOptions {
  /** The compaction settings, read at every use (a function lets a test change them). */
  readonly config?: CompactionConfig | (() => CompactionConfig);
  readonly window?: number;
  readonly summarizer?: Summarizer;
  readonly settings?: Partial<LongrunSettings>;
  /** The subagents' model and its window; the scripted model and the conversation's window unless told. */
  readonly subagent?: { readonly model?: LanguageModel; readonly window?: number; readonly key?: string };
  /** What model calls cost (the controller's `cost`); absent: no cost is known. */
  readonly cost?: TurnControllerDeps['cost'];
}

export async function turnFixture(options: FixtureOptions = {}): Promise<TurnFixture> {
  const dir = await mkdtemp(join(tmpdir(), 'longrun-turns-'));
  const workspace = join(dir, 'ws');
  await mkdir(workspace);
  const clock = new FakeClock();
  const store = new ConversationStore(join(dir, 'storage'), () => clock.now());
  const index = memoryIndex();
  const counter = new MessageTokenCounter(charEstimator);
  let ids = 0;
  const newId = (): string => `id${++ids}`;
  const summarizer: Summarizer = options.summarizer ?? {
    name: 'fake',
    summarize: async (request) => ({ text: templateSummary(`SUMMARY of ${request.messages.length} messages.`) }),
  };
  const registry = new ConversationRegistry({
    store,
    index,
    clock,
    newId,
    conversationDeps: () =>
      conversationDeps({
        store,
        index,
        clock,
        newId,
        config: () => (typeof options.config === 'function' ? options.config() : (options.config ?? DEFAULT_CONFIG)),
        model: () => testModel({ name: 'mock', limit: options.window ?? 100_000, counter }),
        summarizer: async () => summarizer,
      }),
    warn: () => undefined,
    error: () => undefined,
    info: () => undefined,
    changed: () => undefined,
  });
  const model = scriptedModel();
  const models: TurnModels = {
    languageModel: async () => model,
    learnWindow: () => undefined,
    maxOutputTokens: () => undefined,
    telemetry: () => NO_TELEMETRY,
    truncationAdvice: () => undefined,
    observeUsage: () => undefined,
    redact: (text) => text,
    servedByEndpoint: () => false,
    setRequestOverhead: () => undefined,
    setAgentPrefix: () => undefined,
    modelName: () => 'mock',
    newId,
    subagentModel: async () => {
      let limit = options.subagent?.window ?? options.window ?? 100_000;
      return {
        key: options.subagent?.key ?? 'mock/subagent',
        name: 'mock',
        languageModel: async () => options.subagent?.model ?? model,
        context: (fixedText) => testModel({ name: 'mock', limit, counter, fixedOverhead: counter.countText(fixedText) }),
        maxOutputTokens: () => undefined,
        summarizer: async () => summarizer,
        learnWindow: (stated) => void (limit = Math.min(limit, stated)),
        servedByEndpoint: false,
      };
    },
  };
  const roots = [{ name: 'ws', fsPath: workspace }];
  const files = new WorkspaceFiles({ roots: () => roots, autoApprove: () => true, confirm: async () => true, editor: new FakeEditor(() => roots) });
  const settings = { ...readSettings(() => undefined).settings, ...options.settings };
  const controller = new TurnController({
    registry,
    models,
    workspace: { files, trusted: () => true, roots: () => roots },
    settings: () => settings,
    reporter: { report: () => undefined },
    log: { info: () => undefined, warn: () => undefined, error: () => undefined },
    now: () => clock.now(),
    ...(options.cost ? { cost: options.cost } : {}),
  });
  let chats = 0;
  const fixture: TurnFixture = {
    dir,
    workspace,
    controller,
    registry,
    model,
    store,
    instructions: [],
    userTexts: (call = model.doStreamCalls.length - 1) =>
      model.doStreamCalls[call]!.prompt.filter((m) => m.role === 'user').map((m) => messageTexts(m)),
    sent: (call = model.doStreamCalls.length - 1) => model.doStreamCalls[call]!.prompt.map((m) => `${m.role}: ${messageTexts(m)}`).join('\n'),
    newChat: (id = `chat-${++chats}`) => new FakeChat(fixture, id, []),
    close: () => rm(dir, { recursive: true, force: true }),
  };
  return fixture;
}

/**
 * A chat as VS Code keeps it: requests and their responses, the result's metadata included. Its
 * buttons change the history the way VS Code's do; `send` hands the participant that history.
 */
export class FakeChat {
  constructor(
    private readonly fixture: TurnFixture,
    readonly id: string,
    private exchanges: Exchange[],
  ) {}

  /** The history VS Code hands the participant: a request turn and a response turn per exchange. */
  history(): unknown[] {
    return this.exchanges.flatMap((e) => [
      { prompt: e.prompt, participant: 'longrun.agent', command: e.command, references: [], toolReferences: [] },
      {
        participant: 'longrun.agent',
        command: e.command,
        response: [],
        result: { metadata: e.result.metadata, ...(e.result.errorDetails ? { errorDetails: e.result.errorDetails } : {}) },
      },
    ]);
  }

  async send(prompt: string, command?: string, signal = new AbortController().signal): Promise<Exchange> {
    const surface = new RecordingSurface();
    const result = await this.fixture.controller.handle(
      {
        prompt,
        ...(command !== undefined ? { command } : {}),
        history: this.history(),
        chat: this.id,
        attachments: [],
        instructions: this.fixture.instructions,
        toolReferences: [],
      },
      surface,
      signal,
    );
    const exchange = { prompt, ...(command !== undefined ? { command } : {}), result, surface };
    this.exchanges.push(exchange);
    return exchange;
  }

  /** "Restore Checkpoint" on request `n` (1-based): the chat keeps the requests before it. */
  restore(n: number): void {
    this.exchanges = this.exchanges.slice(0, n - 1);
  }

  /** "Retry" on the last response: the same request is sent again without the discarded answer. */
  async retry(): Promise<Exchange> {
    const last = this.exchanges.pop()!;
    return this.send(last.prompt, last.command);
  }

  /** An earlier request `n` (1-based) edited in place and sent again. */
  edit(n: number, prompt: string): Promise<Exchange> {
    this.restore(n);
    return this.send(prompt);
  }

  /** "Fork conversation from this point" on request `n`: a new chat holding copies of the requests before it. */
  fork(n: number, id: string): FakeChat {
    return new FakeChat(this.fixture, id, this.exchanges.slice(0, n - 1));
  }

  /** "Start Over": the chat is cleared. */
  startOver(): void {
    this.exchanges = [];
  }

  metadata(n = this.exchanges.length): Exchange['result']['metadata'] {
    return this.exchanges[n - 1]!.result.metadata;
  }
}
