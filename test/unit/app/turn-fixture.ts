import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LanguageModel } from 'ai';
import { convertArrayToReadableStream, MockLanguageModelV4 } from 'ai/test';
import { firstInSight } from '../../../src/app/turn/chat-folds';
import { ConversationRegistry } from '../../../src/app/conversation/conversation-registry';
import { ConversationStore } from '../../../src/app/store/conversation-store';
import type { InstructionSource } from '../../../src/app/turn/instructions';
import { RequestSetup } from '../../../src/app/turn/request-setup';
import { readSettings, type LongrunSettings } from '../../../src/app/settings';
import {
  TurnController,
  type ChatButton,
  type ChatSurface,
  type TurnControllerDeps,
  type TurnModels,
  type TurnResult,
} from '../../../src/app/turn/turn-controller';
import { SkillCatalog } from '../../../src/app/skills/skill-catalog';
import { WorkspaceFiles } from '../../../src/app/workspace/workspace-files';
import { DEFAULT_CONFIG, type CompactionConfig } from '../../../src/core/config';
import { MessageTokenCounter } from '../../../src/core/message-tokens';
import type { Summarizer } from '../../../src/core/ports';
import { charEstimator } from '../../../src/core/tokenizer';
import { NO_TELEMETRY } from '../../../src/llm/telemetry';
import { FakeClock, templateSummary } from '../core/fixtures';
import { conversationDeps, memoryIndex, testModel } from '../fixtures/conversation-deps';
import { FakeEditor } from './fake-editor';
import { ModelCatalogue } from '../../../src/app/models/model-catalogue';
import { UsageViews } from '../../../src/app/usage/usage-views';
import type { ProviderKind } from '../../../src/core/provider-kind';
import type { KnownSecrets } from '../../../src/core/redact';

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
 * "plan <json>" it calls `plan` with that input; to "read <path> <path> …" it reads each in turn,
 * then answers; to "use the skill <name> [file <path>]" it calls `skill`, then answers "done"; to
 * "delegate <task> | <task> …" it hands each task to a subagent, all in one step, then answers
 * "done". As a subagent (its system prompt says so) it does the same with its task, and answers
 * "Findings:" and the first line of each result it got. `countTools`: the input it reports counts
 * the tools' definitions, as a real server's does.
 */
export function scriptedModel(options: { readonly countTools?: boolean } = {}): MockLanguageModelV4 {
  return new MockLanguageModelV4({
    doStream: async ({ prompt, tools }) => {
      const last = prompt.at(-1)!;
      const said = messageTexts(last);
      // Reported like a server counting about four characters a token (the tools' definitions too, when told).
      const definitions = options.countTools ? JSON.stringify(tools ?? []).length : 0;
      const read = Math.ceil((prompt.reduce((n, m) => n + messageTexts(m).length + 16, 0) + definitions) / 4);
      const usage = (output: number) => usageOf(read, output);
      const parts: StreamPart[] = [{ type: 'stream-start', warnings: [] }];
      const asked = messageTexts(prompt.findLast((m) => m.role === 'user') ?? last);
      const reads = asked.startsWith('delegate ') ? [] : (/read ((?:\S+ ?)+)$/.exec(asked)?.[1]?.split(' ') ?? []);
      const done = prompt.slice(prompt.findLastIndex((m) => m.role === 'user') + 1).filter((m) => m.role === 'tool').length;
      const create = last.role === 'user' ? /create (\S+) with (.+)/.exec(said) : null;
      const edit = last.role === 'user' ? /edit (\S+): (.+) -> (.+)/.exec(said) : null;
      const skill = last.role === 'user' ? /use the skill (\S+)(?: file (\S+))?/.exec(said) : null;
      const plan = last.role === 'user' ? /^plan (\{[\s\S]*\})$/.exec(said.trim()) : null;
      const delegate = last.role === 'user' ? /^delegate (.+)$/s.exec(said) : null;
      const subagent = messageTexts(prompt[0]!).startsWith('You are a subagent');
      if (plan) {
        parts.push({ type: 'tool-call', toolCallId: `p${prompt.length}`, toolName: 'plan', input: plan[1]! });
        parts.push({ type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage: usage(5) });
      } else if (delegate) {
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
      } else if (skill) {
        const input = { name: skill[1], ...(skill[2] ? { file: skill[2] } : {}) };
        parts.push({ type: 'tool-call', toolCallId: `s${prompt.length}`, toolName: 'skill', input: JSON.stringify(input) });
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

/** What a chat shows of a response: its text and buttons, and all of it in order. */
export class RecordingSurface implements ChatSurface {
  readonly texts: string[] = [];
  readonly buttons: ChatButton[] = [];
  private readonly parts: { readonly kind: 'markdown' | 'other'; readonly text: string }[] = [];
  markdown(text: string): void {
    this.texts.push(text);
    this.parts.push({ kind: 'markdown', text });
  }
  readonly progresses: string[] = [];
  progress(text: string): void {
    this.progresses.push(text);
    this.parts.push({ kind: 'other', text });
  }
  button(button: ChatButton): void {
    this.buttons.push(button);
    this.parts.push({ kind: 'other', text: button.title });
  }
  diffButton(path: string, _diff: string, title: string): void {
    this.buttons.push({ command: 'diff', title, arguments: [path] });
    this.parts.push({ kind: 'other', text: title });
  }
  text(): string {
    return this.texts.join('');
  }
  /** The text and button titles VS Code leaves in sight once the response is finished (see `chat-folds.ts`). */
  inSight(): string {
    const first = firstInSight(this.parts.map((p) => ({ kind: p.kind, empty: p.text.length === 0 })));
    return this.parts
      .slice(first)
      .map((p) => p.text)
      .join('\n');
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
  /** What requests carry besides the conversation, as the controller makes them. */
  readonly setup: RequestSetup;
  readonly registry: ConversationRegistry;
  readonly model: MockLanguageModelV4;
  readonly store: ConversationStore;
  /** The time the conversations see, moved only when told. */
  readonly clock: FakeClock;
  /** Instruction files VS Code attaches to every request of every chat. */
  instructions: InstructionSource[];
  /** What the turn controller and the skills catalog said in the log, as warnings. */
  readonly warnings: string[];
  /** The windows the turns learned from the model's server, in order. */
  readonly learnedWindows: Array<{ readonly limit: number; readonly why: string | undefined; readonly lowerBound: boolean }>;
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
  /** The wire format of the model's endpoint; absent: a model of VS Code's. */
  readonly provider?: ProviderKind;
  /** The model in use; absent: `scriptedModel()`. */
  readonly model?: MockLanguageModelV4;
  /** The whole window the model states (what decides the tools offered); absent: unknown. */
  readonly contextWindow?: number;
  /**
   * The conversation's window holds what every request carries besides the messages (the system
   * prompt and the tools for `contextWindow`), as the extension counts it; absent: nothing.
   */
  readonly countOverhead?: boolean;
  /** Whether the workspace is trusted (default true). */
  readonly trusted?: boolean;
  /** The subagents' model and its window; the scripted model and the conversation's window unless told. */
  readonly subagent?: { readonly model?: LanguageModel; readonly window?: number; readonly key?: string; readonly provider?: ProviderKind };
  /** What model calls cost (the controller's `cost`); absent: no cost is known. */
  readonly cost?: TurnControllerDeps['cost'];
  /** Whether the model runs on one of Longrun's endpoints (its usage is its server's own count); absent: not. */
  readonly servedByEndpoint?: boolean;
  /** The API keys the store keeps out of the conversation's files; absent: none. */
  readonly secrets?: KnownSecrets;
}

export async function turnFixture(options: FixtureOptions = {}): Promise<TurnFixture> {
  const dir = await mkdtemp(join(tmpdir(), 'longrun-turns-'));
  const workspace = join(dir, 'ws');
  await mkdir(workspace);
  const clock = new FakeClock();
  const store = new ConversationStore(join(dir, 'storage'), () => clock.now(), options.secrets ? { secrets: options.secrets } : {});
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
        model: () =>
          testModel({
            name: 'mock',
            limit: options.window ?? 100_000,
            counter,
            ...(options.countOverhead ? { requestOverhead: counter.countText(setup.overheadText(options.contextWindow)) } : {}),
          }),
        summarizer: async () => summarizer,
      }),
    warn: () => undefined,
    error: () => undefined,
    info: () => undefined,
    changed: () => undefined,
  });
  const model = options.model ?? scriptedModel();
  const learnedWindows: TurnFixture['learnedWindows'] = [];
  const models: TurnModels = {
    languageModel: async () => model,
    learnWindow: (limit, why, lowerBound = false) => void learnedWindows.push({ limit, why, lowerBound }),
    windowIsLowerBound: () => false,
    contextWindow: () => options.contextWindow,
    maxOutputTokens: () => undefined,
    telemetry: () => NO_TELEMETRY,
    truncationAdvice: () => undefined,
    observeUsage: () => undefined,
    redact: (text) => text,
    servedByEndpoint: () => options.servedByEndpoint ?? false,
    setAgentPrefix: () => undefined,
    modelName: () => 'mock',
    newId,
    providerKind: () => options.provider,
    usageView: (conversation) => usageViews.of(conversation, options.provider === undefined),
    subagentModel: async () => {
      let limit = options.subagent?.window ?? options.window ?? 100_000;
      const key = options.subagent?.key ?? 'mock/subagent';
      return {
        key,
        name: 'mock',
        languageModel: async () => options.subagent?.model ?? model,
        context: (overheadText) => testModel({ name: 'mock', key, limit, counter, requestOverhead: counter.countText(overheadText) }),
        maxOutputTokens: () => undefined,
        summarizer: async () => summarizer,
        learnWindow: (stated) => void (limit = Math.min(limit, stated)),
        servedByEndpoint: false,
        ...(options.subagent?.provider ? { provider: options.subagent.provider } : {}),
      };
    },
  };
  const roots = [{ name: 'ws', fsPath: workspace }];
  const files = new WorkspaceFiles({ roots: () => roots, autoApprove: () => true, confirm: async () => true, editor: new FakeEditor(() => roots) });
  const settings = { ...readSettings(() => undefined).settings, ...options.settings };
  const usageViews = new UsageViews({
    catalogue: new ModelCatalogue(() => settings.modelOverrides),
    settings: () => settings,
    now: () => clock.now(),
  });
  const warnings: string[] = [];
  const log = { info: () => undefined, warn: (message: string) => void warnings.push(message), error: () => undefined };
  const trusted = () => options.trusted ?? true;
  const turnWorkspace = { files, trusted, roots: () => roots };
  const skills = new SkillCatalog({ roots: () => roots, trusted, userFolders: () => settings.skills.userFolders, log });
  const setup = new RequestSetup({ workspace: turnWorkspace, settings: () => settings, skills });
  const controller = new TurnController({
    registry,
    models,
    workspace: turnWorkspace,
    settings: () => settings,
    reporter: { report: () => undefined },
    log,
    now: () => clock.now(),
    setup,
    skills,
    ...(options.cost ? { cost: options.cost } : {}),
  });
  // As the extension wires it: each change the agent writes is shown in the chat of its request.
  files.onDidWrite((change) => controller.showChange(change));
  let chats = 0;
  const fixture: TurnFixture = {
    dir,
    workspace,
    controller,
    setup,
    registry,
    model,
    store,
    clock,
    instructions: [],
    warnings,
    learnedWindows,
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
