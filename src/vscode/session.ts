import type { LanguageModel } from 'ai';
import * as vscode from 'vscode';
import { MessageTokenCounter } from '../core/message-tokens';
import type { Clock } from '../core/ports';
import { charEstimator, encodingForModel, loadTokenizer } from '../core/tokenizer';
import type { AgentPrefix } from '../llm/ai-summarizer';
import { createEndpointModel } from '../llm/openai-endpoint';
import type { LongrunTelemetry } from '../llm/telemetry';
import { createVsCodeLanguageModel, type VsCodeLmApi } from '../llm/vscode-lm-bridge';
import type { ApiKeys } from './api-keys';
import type { Conversation, ModelContext } from '../app/conversation/conversation';
import type { CompactionEngine } from '../app/compaction/compaction-engine';
import { toEndpointModel, type LongrunModelProvider, type ResolvedEndpointModel } from './model-provider';
import { VENDOR } from '../app/contributions';
import { windowFor, type ModelWindows } from '../app/models/model-windows';
import { guessServer, modelContextOf, truncationAdvice, type SizedWindow } from '../app/models/model-in-use';
import { SummarizerSource, type SummarizerModel } from '../app/compaction/summarizer-source';
import type { IgnoredToolChoice } from '../app/compaction/ignored-tool-choice';
import type { SubagentModel } from '../app/subagents/subagent-runner';
import type { LongrunSettings } from '../app/settings';
import type { Redactor } from '../app/report/redactor';
import type { Tracing } from '../app/report/tracing';
import type { CalibrationMemory } from '../core/usage-calibration';
import type { ProviderKind } from '../core/provider-kind';
import { DEFAULT_PROVIDER_KIND } from '../core/provider-kind';
import { ModelCatalogue } from '../app/models/model-catalogue';
import { UsageViews } from '../app/usage/usage-views';
import type { UsageView } from '../app/usage/usage-text';

/**
 * The extension's state: the current conversation and the model in use. One instance, made in
 * the composition root and handed to the participant, the gauge and the commands.
 */

/** The model a conversation runs on: one of VS Code's, or one of Longrun's own endpoints. */
export type ChatModel =
  | { readonly kind: 'vscode'; readonly model: vscode.LanguageModelChat }
  /** `resolved` as first seen; `Session.endpointModel` reads it afresh (windows are learned later). */
  | { readonly kind: 'endpoint'; readonly resolved: ResolvedEndpointModel; readonly name: string };

/** The key a model's learned window and calibration are kept under: its vendor and id. */
function keyOf(model: ChatModel): string {
  return model.kind === 'vscode' ? `${model.model.vendor}/${model.model.id}` : `${VENDOR}/${model.resolved.id}`;
}

/** A model's name, as the chat shows it. */
function nameOf(model: ChatModel): string {
  return model.kind === 'vscode' ? model.model.name : model.name;
}

/** The runtime pieces of the `vscode` module that the model bridge needs. */
export const vscodeLmApi: VsCodeLmApi = {
  LanguageModelChatMessage: vscode.LanguageModelChatMessage,
  LanguageModelTextPart: vscode.LanguageModelTextPart,
  LanguageModelToolCallPart: vscode.LanguageModelToolCallPart,
  LanguageModelToolResultPart: vscode.LanguageModelToolResultPart,
  LanguageModelChatToolMode: vscode.LanguageModelChatToolMode,
};

const LAST_MODEL_KEY = 'longrun.lastModel';
/** Shown by VS Code when it asks the user to let Longrun use a model that needs consent. */
const MODEL_JUSTIFICATION = 'Longrun runs its coding agent with this model and uses it to summarize the conversation when the context window fills.';

/** What the session is built from, each made before it. */
export interface SessionDeps {
  readonly workspaceState: vscode.Memento;
  readonly settings: () => LongrunSettings;
  readonly provider: LongrunModelProvider;
  readonly keys: ApiKeys;
  readonly clock: Clock;
  readonly log: vscode.LogOutputChannel;
  readonly windows: ModelWindows;
  /** Cleans provider text of the stored API keys; the model provider is given the same one. */
  readonly redactor: Redactor;
  /** The tracing in use, for the agent, the summarizer and compactions. */
  readonly tracing: Tracing;
  /** Where compactions are computed: in a worker, or on the editor's thread when absent. */
  readonly engine?: CompactionEngine;
  /** What earlier conversations learned of each model's ratio of tokens. */
  readonly calibrations?: CalibrationMemory;
  /** The models whose server lets them call tools under `tool_choice: "none"`. */
  readonly ignoredToolChoice: IgnoredToolChoice;
  /** Windows and prices of models: the catalogue under the user's overrides. */
  readonly catalogue?: ModelCatalogue;
  /**
   * What every request carries besides the messages (system prompt, tool definitions), as text, for
   * a model of the given window: asked at each count, the same string until it changes. Absent: nothing.
   */
  readonly requestOverhead?: (window: number | undefined) => string;
}

export class Session implements vscode.Disposable {
  private chatModel: ChatModel | undefined;
  private counter = new MessageTokenCounter(charEstimator);
  /** The count of what every request carries besides the messages, with the tokenizer it was counted with. */
  private overheadCount: { counter: MessageTokenCounter; text: string; tokens: number } | undefined;
  private readonly changed = new vscode.EventEmitter<void>();
  /** Fires when the model in use, its window or what every request carries changes. */
  readonly onDidChange = this.changed.event;

  /** What each conversation used and cost, as the gauge, `/context` and the export show it. */
  private readonly usageViews: UsageViews;
  private readonly catalogue: ModelCatalogue;

  constructor(private readonly deps: SessionDeps) {
    const { clock } = deps;
    this.catalogue = deps.catalogue ?? new ModelCatalogue(() => deps.settings().modelOverrides);
    this.usageViews = new UsageViews({ catalogue: this.catalogue, settings: () => deps.settings(), now: () => clock.now() });
  }

  newId(): string {
    return `${this.deps.clock.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;
  }

  /** Text from a provider (an error, a failure reason) without API keys or anything shaped like one. */
  redact(text: string): string {
    return this.deps.redactor.redact(text);
  }

  /** What a conversation needs of the model in use and the settings (the registry adds where it is stored). */
  conversationDeps() {
    return {
      redact: (text: string) => this.deps.redactor.redact(text),
      summarizeAhead: () => this.deps.settings().compaction.autoCompact,
      clock: this.deps.clock,
      newId: () => this.newId(),
      config: () => this.deps.settings().compaction,
      model: () => this.modelContext(),
      summarizer: () => this.summarizers.summarizer(),
      telemetry: () => this.deps.tracing.telemetry(),
      ...(this.deps.engine ? { engine: this.deps.engine } : {}),
      ...(this.deps.calibrations ? { calibrations: this.deps.calibrations } : {}),
    };
  }

  /** The tracing in use, for the agent's requests. */
  telemetry(): LongrunTelemetry {
    return this.deps.tracing.telemetry();
  }

  /** Makes `model` the model in use (the one picked in the chat). */
  async useModel(model: vscode.LanguageModelChat): Promise<void> {
    const previous = this.modelKey();
    if (model.vendor === VENDOR) {
      const resolved = this.deps.provider.find(model.id);
      this.chatModel = resolved ? { kind: 'endpoint', resolved, name: model.name } : { kind: 'vscode', model };
      if (resolved) this.deps.provider.discoverWindows([resolved]);
    } else {
      this.chatModel = { kind: 'vscode', model };
    }
    if (this.modelKey() !== previous) {
      // Remembered so that a reloaded window counts and gauges with the same model.
      void this.deps.workspaceState.update(LAST_MODEL_KEY, { vendor: model.vendor, id: model.id });
      const tokenizer = await loadTokenizer(encodingForModel(model.family || model.id)).catch((error: unknown) => {
        this.deps.log.warn(`Falling back to the chars/4 estimate: the tokenizer did not load (${String(error)}).`);
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
    const last = this.deps.workspaceState.get<{ vendor?: unknown; id?: unknown }>(LAST_MODEL_KEY);
    let model: vscode.LanguageModelChat | undefined;
    if (last && typeof last.vendor === 'string' && typeof last.id === 'string') {
      [model] = await vscode.lm.selectChatModels({ vendor: last.vendor, id: last.id });
    }
    model ??= (await vscode.lm.selectChatModels({ vendor: VENDOR }))[0];
    if (model && !this.chatModel) await this.useModel(model);
  }

  /**
   * A window the provider stated (in an overflow error, or by cutting a prompt): smaller than
   * declared, it wins for this model from now on. `why` says where it came from, for the gauge.
   */
  learnWindow(limit: number, why = 'stated by the server in an error', lowerBound = false): void {
    const key = this.modelKey();
    if (!key) return;
    this.deps.windows.learn(key, limit, why, lowerBound);
    this.deps.log.info(`The provider of ${key} stated a window of ${limit} tokens (${why}); compaction aims for it from now on.`);
    this.changed.fire();
  }

  /** Read apart from `modelContext`, which counts the tools offered, and so asks which are. */
  contextWindow(): number | undefined {
    return this.windowInUse()?.window.limit;
  }

  statedWindow(): number | undefined {
    const r = this.endpointModel();
    return r ? this.deps.windows.discovered({ baseUrl: r.endpoint.baseUrl, modelId: r.model.id })?.limit : undefined;
  }

  windowIsLowerBound(): boolean {
    const key = this.modelKey();
    // Only while the cut prompt's window is the one in use: a stated window is never replaced by it.
    return (
      key !== undefined && this.deps.windows.isLowerBound(key) && this.windowInUse()?.window.limit === this.deps.windows.learnedWindow(key)?.limit
    );
  }

  /**
   * The count of what every request carries besides the messages to a model of `window` tokens. The
   * text is made when first counted, off the activation path (making it needs the model packages,
   * which activation does not load).
   */
  private requestOverhead(window: number | undefined): number {
    const text = this.deps.requestOverhead?.(window) ?? '';
    const cached = this.overheadCount;
    if (cached && cached.counter === this.counter && cached.text === text) return cached.tokens;
    const tokens = text ? this.counter.countText(text) : 0;
    this.overheadCount = { counter: this.counter, text, tokens };
    return tokens;
  }

  /**
   * A request that succeeded with more tokens than a window learned from an error proves the
   * window larger now (the server was restarted with a longer context): forget what was learned.
   */
  observeUsage(usage: { inputTokens: number; outputTokens: number; truncated?: boolean } | undefined): void {
    const key = this.modelKey();
    const learned = key ? this.deps.windows.learnedWindow(key) : undefined;
    if (!key || learned === undefined || !usage || usage.truncated) return;
    const used = usage.inputTokens + usage.outputTokens;
    if (this.deps.windows.observe(key, used)) {
      this.deps.log.info(`${key} answered a request of ${used} tokens, more than the window learned earlier (${learned.limit}).`);
      this.changed.fire();
    }
  }

  model(): ChatModel | undefined {
    return this.chatModel;
  }

  /** Whether the model in use runs on one of Longrun's own endpoints (its usage is the server's own count). */
  servedByEndpoint(): boolean {
    return this.chatModel?.kind === 'endpoint';
  }

  /** The wire format of the model in use's endpoint; undefined for a model of VS Code's, which takes no cache hints. */
  providerKind(): ProviderKind | undefined {
    return this.endpointModel()?.endpoint.provider ?? (this.chatModel?.kind === 'endpoint' ? DEFAULT_PROVIDER_KIND : undefined);
  }

  /** What `conversation` used and cost, and the state of its provider's cache. */
  usageView(conversation: Conversation): UsageView {
    return this.usageViews.of(conversation, this.chatModel?.kind === 'vscode');
  }

  /** What `conversation` used and cost (the export's closing table). */
  usageReport(conversation: Conversation): UsageView['report'] {
    return this.usageViews.report(conversation);
  }

  private modelKey(): string | undefined {
    return this.chatModel ? keyOf(this.chatModel) : undefined;
  }

  modelName(): string | undefined {
    return this.chatModel ? nameOf(this.chatModel) : undefined;
  }

  /** The configured endpoint model in use, read afresh: its window may have been discovered or learned since. */
  private endpointModel(): ResolvedEndpointModel | undefined {
    const m = this.chatModel;
    if (m?.kind !== 'endpoint') return undefined;
    return this.deps.provider.find(m.resolved.id) ?? m.resolved;
  }

  /** The whole window of the model in use, the room kept for its answer, and where the numbers come from. */
  windowInUse(): SizedWindow | undefined {
    return this.chatModel ? this.windowOf(this.chatModel) : undefined;
  }

  /** The whole window of `m`, the room kept for its answer, and where the numbers come from. */
  private windowOf(m: ChatModel): SizedWindow | undefined {
    const learned = this.deps.windows.learnedWindow(keyOf(m));
    if (m.kind === 'vscode') {
      return windowFor(
        { kind: 'vscode', vendor: m.model.vendor, maxInputTokens: m.model.maxInputTokens },
        this.deps.settings().contextWindow ?? this.catalogue.overriddenWindow(m.model.id),
        learned,
      );
    }
    const r = this.deps.provider.find(m.resolved.id) ?? m.resolved;
    const maxOutput = r.model.maxOutputTokens ?? this.deps.windows.discovered({ baseUrl: r.endpoint.baseUrl, modelId: r.model.id })?.maxOutputTokens;
    const resolved = { window: r.window, outputReserve: r.maxOutputTokens, inputLimit: r.inputLimit };
    return windowFor({ kind: 'endpoint', resolved, ...(maxOutput !== undefined ? { maxOutput } : {}) }, this.deps.settings().contextWindow, learned);
  }

  /** How to give the model in use a larger context, by the server it runs on (for the notice of a cut prompt). */
  truncationAdvice(): string | undefined {
    const r = this.endpointModel();
    if (!r) return undefined;
    const server = this.deps.windows.discovered({ baseUrl: r.endpoint.baseUrl, modelId: r.model.id })?.server ?? guessServer(r.endpoint.baseUrl);
    return truncationAdvice(server, r.model.id, r.contextWindow);
  }

  /** The `max_tokens` to send with the model in use: the reserve, for Longrun's own endpoints. */
  maxOutputTokens(): number | undefined {
    return this.endpointModel()?.maxOutputTokens;
  }

  modelContext(): ModelContext {
    const m = this.chatModel;
    // Sized once: what every request carries depends on the window (the tools a small one is offered).
    const sized = m ? this.windowOf(m) : undefined;
    return modelContextOf(m ? { name: nameOf(m), key: keyOf(m), sized } : undefined, this.counter, this.requestOverhead(sized?.window.limit));
  }

  /** What a conversation on `m` needs to know of it: its window, its counter, what every request carries. */
  private contextOf(m: ChatModel | undefined, counter: MessageTokenCounter, requestOverhead: number): ModelContext {
    return modelContextOf(m ? { name: nameOf(m), key: keyOf(m), sized: this.windowOf(m) } : undefined, counter, requestOverhead);
  }

  /** The model as an AI SDK model: called directly for Longrun's own, bridged for VS Code's. */
  async languageModel(): Promise<LanguageModel | undefined> {
    const m = this.chatModel;
    if (!m) return undefined;
    return this.toLanguageModel(m);
  }

  private async toLanguageModel(m: ChatModel): Promise<LanguageModel> {
    if (m.kind === 'vscode') return createVsCodeLanguageModel(m.model, vscodeLmApi, { justification: MODEL_JUSTIFICATION });
    const r = this.deps.provider.find(m.resolved.id) ?? m.resolved;
    return createEndpointModel(toEndpointModel(r), await this.deps.keys.get(r.endpoint.name));
  }

  /** The summarizer compactions ask for, made for the model and settings as they are then. */
  private readonly summarizers = new SummarizerSource({
    choose: () => this.summarizerModel(),
    conversationModel: () => this.modelKey(),
    learnedWindow: (key) => this.deps.windows.learnedWindow(key)?.limit,
    settings: () => this.deps.settings(),
    telemetry: () => this.deps.tracing.telemetry(),
    ignoredToolChoice: {
      ignores: (model) => this.deps.ignoredToolChoice.ignores(model),
      note: (model, calledTools) => this.deps.ignoredToolChoice.note(model, calledTools),
    },
  });

  /**
   * The model that writes summaries: `longrun.compaction.model` when set (so summaries can use a
   * cheaper model) and available, else `fallback` (the conversation's model, or a subagent's).
   */
  private async summarizerModel(fallback: ChatModel | undefined = this.chatModel): Promise<SummarizerModel | undefined> {
    const reference = this.deps.settings().summarizerModel;
    const chosen = (reference ? await this.modelNamed(reference, 'longrun.compaction.model') : undefined) ?? fallback;
    if (!chosen) return undefined;
    const model = chosen;
    const endpoint = model.kind === 'endpoint' ? (this.deps.provider.find(model.resolved.id) ?? model.resolved).endpoint : undefined;
    return {
      key: keyOf(model),
      ...(endpoint ? { server: endpoint.baseUrl } : {}),
      ...(endpoint ? { provider: endpoint.provider ?? DEFAULT_PROVIDER_KIND } : {}),
      // Endpoint models are resolved afresh, so a discovered or learned window is already in them.
      declaredWindow:
        model.kind === 'vscode' ? model.model.maxInputTokens : (this.deps.provider.find(model.resolved.id) ?? model.resolved).contextWindow,
      languageModel: () => this.toLanguageModel(model),
    };
  }

  /**
   * The model `reference` (`vendor/id`) names: one of Longrun's endpoints' or one VS Code offers.
   * Undefined, said in the log naming `setting`, when there is no such model.
   */
  private async modelNamed(reference: string, setting: string): Promise<ChatModel | undefined> {
    const slash = reference.indexOf('/');
    const vendor = slash > 0 ? reference.slice(0, slash) : VENDOR;
    const id = slash > 0 ? reference.slice(slash + 1) : reference;
    if (vendor === VENDOR) {
      const resolved = this.deps.provider.find(id);
      if (resolved) return { kind: 'endpoint', resolved, name: resolved.model.name ?? resolved.model.id };
      this.deps.log.warn(`${setting} names "${reference}", which is not a configured endpoint model; using the conversation's model.`);
      return undefined;
    }
    const [found] = await vscode.lm.selectChatModels({ vendor, id });
    if (found) return { kind: 'vscode', model: found };
    this.deps.log.warn(`${setting} names "${reference}", which is not available; using the conversation's model.`);
    return undefined;
  }

  /**
   * The model subagents run on: `longrun.subagent.model` when set and available (a cheaper model is
   * the point), else the conversation's; with its window, its tokenizer and a summarizer of its own
   * (which never continues the agent's conversation: a subagent's is another one).
   */
  async subagentModel(): Promise<SubagentModel | undefined> {
    const reference = this.deps.settings().subagent.model;
    const chosen = (reference ? await this.modelNamed(reference, 'longrun.subagent.model') : undefined) ?? this.chatModel;
    if (!chosen) return undefined;
    const counter = keyOf(chosen) === this.modelKey() ? this.counter : await this.counterFor(chosen);
    const summarizers = new SummarizerSource({
      choose: () => this.summarizerModel(chosen),
      conversationModel: () => undefined,
      learnedWindow: (key) => this.deps.windows.learnedWindow(key)?.limit,
      settings: () => this.deps.settings(),
      telemetry: () => this.deps.tracing.telemetry(),
      ignoredToolChoice: this.deps.ignoredToolChoice,
    });
    return {
      key: keyOf(chosen),
      name: nameOf(chosen),
      languageModel: () => this.toLanguageModel(chosen),
      context: (overheadText) => this.contextOf(chosen, counter, counter.countText(overheadText)),
      maxOutputTokens: () =>
        chosen.kind === 'endpoint' ? (this.deps.provider.find(chosen.resolved.id) ?? chosen.resolved).maxOutputTokens : undefined,
      summarizer: () => summarizers.summarizer(),
      learnWindow: (limit, why, lowerBound = false) => {
        this.deps.windows.learn(keyOf(chosen), limit, why, lowerBound);
        this.deps.log.info(`The provider of ${keyOf(chosen)} stated a window of ${limit} tokens (${why}); subagents on it aim for it from now on.`);
      },
      servedByEndpoint: chosen.kind === 'endpoint',
      ...(chosen.kind === 'endpoint'
        ? { provider: (this.deps.provider.find(chosen.resolved.id) ?? chosen.resolved).endpoint.provider ?? DEFAULT_PROVIDER_KIND }
        : {}),
    };
  }

  /** A token counter with `m`'s tokenizer; the chars/4 estimate when it does not load. */
  private async counterFor(m: ChatModel): Promise<MessageTokenCounter> {
    const family = m.kind === 'vscode' ? m.model.family || m.model.id : m.resolved.model.id;
    const tokenizer = await loadTokenizer(encodingForModel(family)).catch(() => charEstimator);
    return new MessageTokenCounter(tokenizer);
  }

  /** Records what the agent's requests begin with, for a summary request that continues them. */
  setAgentPrefix(prefix: AgentPrefix): void {
    this.summarizers.setAgentPrefix(prefix);
  }

  /** Forgets the models made, e.g. after an API key or the endpoints changed. */
  invalidateModels(): void {
    this.summarizers.forget();
  }

  dispose(): void {
    this.changed.dispose();
  }
}
