import type { LanguageModel } from 'ai';
import * as vscode from 'vscode';
import { resolveContextWindow } from '../core/context-window';
import { MessageTokenCounter } from '../core/message-tokens';
import type { Clock, Summarizer } from '../core/ports';
import { charEstimator, encodingForModel, loadTokenizer } from '../core/tokenizer';
import { createAiSummarizer } from '../llm/ai-summarizer';
import { createEndpointModel } from '../llm/openai-endpoint';
import { createTelemetry, NO_TELEMETRY, type LongrunTelemetry } from '../llm/telemetry';
import { createVsCodeLanguageModel, type VsCodeLmApi } from '../llm/vscode-lm-bridge';
import type { ApiKeys } from './api-keys';
import { Conversation, type ModelContext } from './conversation';
import { ConversationIndex, ConversationStore } from './conversation-store';
import { VENDOR, type LongrunModelProvider, type ResolvedEndpointModel } from './model-provider';
import type { LongrunSettings } from './settings';

/**
 * The extension's state: the current conversation and the model in use. One instance, made in
 * the composition root and handed to the participant, the gauge and the commands.
 */

/** The model a conversation runs on: one of VS Code's, or one of Longrun's own endpoints. */
export type ChatModel =
  | { readonly kind: 'vscode'; readonly model: vscode.LanguageModelChat }
  | { readonly kind: 'endpoint'; readonly resolved: ResolvedEndpointModel; readonly name: string };

/** The runtime pieces of the `vscode` module that the model bridge needs. */
export const vscodeLmApi: VsCodeLmApi = {
  LanguageModelChatMessage: vscode.LanguageModelChatMessage,
  LanguageModelTextPart: vscode.LanguageModelTextPart,
  LanguageModelToolCallPart: vscode.LanguageModelToolCallPart,
  LanguageModelToolResultPart: vscode.LanguageModelToolResultPart,
  LanguageModelChatToolMode: vscode.LanguageModelChatToolMode,
};

const LAST_MODEL_KEY = 'longrun.lastModel';

export class Session implements vscode.Disposable {
  private conversation: Conversation | undefined;
  private opening: Promise<Conversation | undefined> | undefined;
  private chatModel: ChatModel | undefined;
  private counter = new MessageTokenCounter(charEstimator);
  /** The system prompt and tool definitions every request carries, and their count with the current tokenizer. */
  private fixedText = '';
  private fixedCount: { counter: MessageTokenCounter; text: string; tokens: number } | undefined;
  private readonly changed = new vscode.EventEmitter<void>();
  /** Fires when the conversation, its content or the model changes. */
  readonly onDidChange = this.changed.event;
  private conversationSubscription: { dispose(): void } | undefined;
  readonly store: ConversationStore;
  readonly index: ConversationIndex;

  constructor(
    storageDir: string,
    private readonly workspaceState: vscode.Memento,
    private readonly settings: () => LongrunSettings,
    private readonly provider: LongrunModelProvider,
    private readonly keys: ApiKeys,
    private readonly clock: Clock,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.store = new ConversationStore(storageDir, () => clock.now());
    this.index = new ConversationIndex(workspaceState);
  }

  newId(): string {
    return `${this.clock.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;
  }

  /** The current conversation, loaded from disk on first use; undefined when there is none. */
  current(): Promise<Conversation | undefined> {
    if (this.conversation) return Promise.resolve(this.conversation);
    this.opening ??= this.openCurrent().finally(() => {
      this.opening = undefined;
    });
    return this.opening;
  }

  currentIfLoaded(): Conversation | undefined {
    return this.conversation;
  }

  private async openCurrent(): Promise<Conversation | undefined> {
    for (const problem of this.index.problems()) this.log.warn(problem);
    const id = this.index.current();
    if (!id || !(await this.store.exists(id))) return undefined;
    try {
      const { log, problems } = await this.store.open(id);
      for (const problem of problems) {
        this.log.warn(problem);
        void vscode.window.showWarningMessage(`Longrun: ${problem}`);
      }
      this.adopt(new Conversation(id, log, this.conversationDeps()));
      return this.conversation;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      this.log.error(`Could not open conversation ${id}: ${message}`);
      void vscode.window.showErrorMessage(`Longrun could not open the saved conversation: ${message}`);
      return undefined;
    }
  }

  /** Starts a new conversation; the old one stays on disk. */
  async startNew(): Promise<Conversation> {
    const id = this.newId();
    await this.store.create(id);
    const now = this.clock.now();
    await this.index.upsert({ id, title: 'New conversation', createdAt: now, updatedAt: now });
    await this.index.setCurrent(id);
    this.adopt(new Conversation(id, [], this.conversationDeps()));
    this.log.info(`Started conversation ${id}.`);
    return this.conversation!;
  }

  private adopt(conversation: Conversation): void {
    this.conversationSubscription?.dispose();
    this.conversation = conversation;
    this.conversationSubscription = conversation.onDidChange(() => this.changed.fire());
    this.changed.fire();
  }

  private conversationDeps() {
    return {
      store: this.store,
      index: this.index,
      clock: this.clock,
      newId: () => this.newId(),
      config: () => this.settings().compaction,
      model: () => this.modelContext(),
      summarizer: () => this.summarizer(),
      telemetry: () => this.tracing,
    };
  }

  private tracing: LongrunTelemetry = NO_TELEMETRY;
  private tracingEndpoint = '';

  telemetry(): LongrunTelemetry {
    return this.tracing;
  }

  /** Starts, changes or stops tracing to the OTLP endpoint as the settings say. */
  configureTelemetry(): void {
    const { enabled, otlpEndpoint } = this.settings().telemetry;
    const endpoint = enabled && otlpEndpoint ? otlpEndpoint : '';
    if (endpoint === this.tracingEndpoint) return;
    void this.tracing.shutdown().catch(() => undefined);
    this.tracing = NO_TELEMETRY;
    this.tracingEndpoint = endpoint;
    this.summarizerModel = undefined;
    if (!endpoint) return;
    try {
      this.tracing = createTelemetry({ endpoint, serviceName: 'longrun' });
      this.log.info(`Tracing to ${endpoint} (OpenTelemetry, OTLP/HTTP).`);
    } catch (error) {
      this.log.warn(`Tracing is off: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  /** Makes `model` the model in use (the one picked in the chat). */
  async useModel(model: vscode.LanguageModelChat): Promise<void> {
    const previous = this.modelKey();
    if (model.vendor === VENDOR) {
      const resolved = this.provider.find(model.id);
      this.chatModel = resolved ? { kind: 'endpoint', resolved, name: model.name } : { kind: 'vscode', model };
    } else {
      this.chatModel = { kind: 'vscode', model };
    }
    if (this.modelKey() !== previous) {
      // Remembered so that a reloaded window counts and gauges with the same model.
      void this.workspaceState.update(LAST_MODEL_KEY, { vendor: model.vendor, id: model.id });
      const tokenizer = await loadTokenizer(encodingForModel(model.family || model.id)).catch((error: unknown) => {
        this.log.warn(`Falling back to the chars/4 estimate: the tokenizer did not load (${String(error)}).`);
        return charEstimator;
      });
      this.counter = new MessageTokenCounter(tokenizer);
      this.changed.fire();
    }
  }

  /**
   * Picks a model when none was used yet in this window: the one last used in this workspace,
   * else the first of Longrun's own, so the gauge can show the window's use.
   */
  async useDefaultModel(): Promise<void> {
    if (this.chatModel) return;
    const last = this.workspaceState.get<{ vendor?: unknown; id?: unknown }>(LAST_MODEL_KEY);
    let model: vscode.LanguageModelChat | undefined;
    if (last && typeof last.vendor === 'string' && typeof last.id === 'string') {
      [model] = await vscode.lm.selectChatModels({ vendor: last.vendor, id: last.id });
    }
    model ??= (await vscode.lm.selectChatModels({ vendor: VENDOR }))[0];
    if (model && !this.chatModel) await this.useModel(model);
  }

  /** Windows providers stated in overflow errors, per model: smaller than declared, they win. */
  private readonly learnedWindows = new Map<string, number>();

  learnWindow(limit: number): void {
    const key = this.modelKey();
    if (!key) return;
    const known = this.learnedWindows.get(key);
    this.learnedWindows.set(key, known === undefined ? limit : Math.min(known, limit));
    this.log.info(`The provider of ${key} stated a window of ${limit} tokens; compaction aims for it from now on.`);
    this.changed.fire();
  }

  /** Sets what every request carries besides the messages (system prompt, tool definitions). */
  setRequestOverhead(text: string): void {
    if (text === this.fixedText) return;
    this.fixedText = text;
    this.changed.fire();
  }

  private fixedOverhead(): number {
    const cached = this.fixedCount;
    if (cached && cached.counter === this.counter && cached.text === this.fixedText) return cached.tokens;
    const tokens = this.fixedText ? this.counter.countText(this.fixedText) : 0;
    this.fixedCount = { counter: this.counter, text: this.fixedText, tokens };
    return tokens;
  }

  /**
   * A request that succeeded with more tokens than a window learned from an error proves the
   * window larger now (the server was restarted with a longer context): forget what was learned.
   */
  observeUsage(usage: { inputTokens: number; outputTokens: number } | undefined): void {
    const key = this.modelKey();
    const learned = key ? this.learnedWindows.get(key) : undefined;
    if (!key || learned === undefined || !usage) return;
    if (usage.inputTokens + usage.outputTokens > learned) {
      this.learnedWindows.delete(key);
      this.log.info(`${key} answered a request of ${usage.inputTokens + usage.outputTokens} tokens; the window stated earlier (${learned}) no longer applies.`);
      this.changed.fire();
    }
  }

  model(): ChatModel | undefined {
    return this.chatModel;
  }

  private modelKey(): string | undefined {
    const m = this.chatModel;
    if (!m) return undefined;
    return m.kind === 'vscode' ? `${m.model.vendor}/${m.model.id}` : `${VENDOR}/${m.resolved.id}`;
  }

  modelName(): string | undefined {
    const m = this.chatModel;
    if (!m) return undefined;
    return m.kind === 'vscode' ? m.model.name : m.name;
  }

  modelContext(): ModelContext {
    const m = this.chatModel;
    const override = this.settings().contextWindow;
    const window =
      m?.kind === 'endpoint'
        ? resolveContextWindow({ modelId: m.resolved.model.id, reported: m.resolved.contextWindow - m.resolved.maxOutputTokens, ...(override ? { override } : {}) })
        : resolveContextWindow({ ...(m ? { modelId: m.model.family || m.model.id, reported: m.model.maxInputTokens } : {}), ...(override ? { override } : {}) });
    const outputReserve = m?.kind === 'endpoint' ? m.resolved.maxOutputTokens : 0;
    const key = this.modelKey();
    const learned = key ? this.learnedWindows.get(key) : undefined;
    // The stated window holds input and output: keep room for the answer.
    const stated = learned !== undefined ? Math.max(256, learned - outputReserve) : undefined;
    const effective = stated !== undefined && (window.limit === 0 || stated < window.limit) ? { limit: stated, source: 'model' as const } : window;
    return { name: this.modelName() ?? 'no model', window: effective, counter: this.counter, fixedOverhead: this.fixedOverhead(), outputReserve };
  }

  /** The model as an AI SDK model: called directly for Longrun's own, bridged for VS Code's. */
  async languageModel(): Promise<LanguageModel | undefined> {
    const m = this.chatModel;
    if (!m) return undefined;
    return this.toLanguageModel(m);
  }

  private async toLanguageModel(m: ChatModel): Promise<LanguageModel> {
    if (m.kind === 'vscode') return createVsCodeLanguageModel(m.model, vscodeLmApi);
    const r = m.resolved;
    return createEndpointModel(
      { endpoint: r.endpoint.name, baseUrl: r.endpoint.baseUrl, id: r.model.id, contextWindow: r.contextWindow, maxOutputTokens: r.maxOutputTokens },
      await this.keys.get(r.endpoint.name),
    );
  }

  private summarizerModel: { key: string; summarizer: Summarizer } | undefined;

  /**
   * The summarizer: `longrun.compaction.model` when set (a cheaper model, seed 004), else the
   * conversation's model. Resolved ahead of time by `prepareSummarizer` since the engine asks synchronously.
   */
  summarizer(): Summarizer | undefined {
    return this.summarizerModel?.summarizer;
  }

  async prepareSummarizer(): Promise<void> {
    const reference = this.settings().summarizerModel;
    let chosen: ChatModel | undefined = this.chatModel;
    if (reference) {
      const slash = reference.indexOf('/');
      const vendor = slash > 0 ? reference.slice(0, slash) : VENDOR;
      const id = slash > 0 ? reference.slice(slash + 1) : reference;
      if (vendor === VENDOR) {
        const resolved = this.provider.find(id);
        if (resolved) chosen = { kind: 'endpoint', resolved, name: resolved.model.name ?? resolved.model.id };
        else this.log.warn(`longrun.compaction.model names "${reference}", which is not a configured endpoint model; using the conversation's model.`);
      } else {
        const [found] = await vscode.lm.selectChatModels({ vendor, id });
        if (found) chosen = { kind: 'vscode', model: found };
        else this.log.warn(`longrun.compaction.model names "${reference}", which is not available; using the conversation's model.`);
      }
    }
    if (!chosen) {
      this.summarizerModel = undefined;
      return;
    }
    const modelKey = chosen.kind === 'vscode' ? `${chosen.model.vendor}/${chosen.model.id}` : `${VENDOR}/${chosen.resolved.id}`;
    const declared = chosen.kind === 'vscode' ? chosen.model.maxInputTokens : chosen.resolved.contextWindow;
    const learned = this.learnedWindows.get(modelKey);
    const window = learned !== undefined && (declared <= 0 || learned < declared) ? learned : declared;
    const key = `${modelKey}@${window}`;
    if (this.summarizerModel?.key === key) return;
    this.summarizerModel = {
      key,
      summarizer: createAiSummarizer({
        model: await this.toLanguageModel(chosen),
        name: modelKey,
        telemetry: this.tracing.settings('longrun.summarizer'),
        ...(window > 0 ? { contextWindow: window } : {}),
      }),
    };
  }

  /** Forgets prepared models, e.g. after an API key or the endpoints changed. */
  invalidateModels(): void {
    this.summarizerModel = undefined;
  }

  dispose(): void {
    void this.tracing.shutdown().catch(() => undefined);
    this.conversationSubscription?.dispose();
    this.changed.dispose();
  }
}
