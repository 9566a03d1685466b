import type { LanguageModel } from 'ai';
import type { Summarizer } from '../../core/ports';
import { createAiSummarizer, type AgentPrefix, type AiSummarizerOptions } from '../../llm/ai-summarizer';
import type { LongrunTelemetry } from '../../llm/telemetry';
import type { IgnoredToolChoice } from './ignored-tool-choice';
import { learnedWins } from '../models/model-windows';
import type { LongrunSettings } from '../settings';
import type { ProviderKind } from '../../core/provider-kind';

/**
 * The summarizer a compaction asks for, made for the model, its window and the settings as they are
 * when it asks, and kept while they stay the same: nothing has to prepare it first.
 */

/** The model chosen to write summaries, as the editor sees it when a compaction asks. */
export interface SummarizerModel {
  /** Its vendor and id: the key its learned window is kept under. */
  readonly key: string;
  /** The window it declares (for an endpoint's model, as configured or discovered); 0 when unknown. */
  readonly declaredWindow: number;
  /** Where it is served (an endpoint's base URL), when Longrun talks to the server itself. */
  readonly server?: string;
  /** The model as an AI SDK model, made only when the summarizer is made anew. */
  languageModel(): Promise<LanguageModel>;
  /** The wire format of its endpoint, stamped on the usage of its calls; absent for a model of VS Code's. */
  readonly provider?: ProviderKind;
}

export interface SummarizerSourceDeps {
  /**
   * The model to summarize with: the one `longrun.compaction.model` names when it is available,
   * else the conversation's; undefined when there is none.
   */
  readonly choose: () => Promise<SummarizerModel | undefined>;
  /** The key of the conversation's own model; undefined when none is picked. */
  readonly conversationModel: () => string | undefined;
  /** The window a server stated for model `key` by refusing or cutting a request, if any. */
  readonly learnedWindow: (key: string) => number | undefined;
  readonly settings: () => Pick<LongrunSettings, 'summaryContinuesConversation' | 'timeouts'>;
  /** The tracing in use: a summarizer made under other tracing is made again. */
  readonly telemetry: () => LongrunTelemetry;
  /** The models whose server lets them call tools under `tool_choice: "none"`: they are asked plainly. */
  readonly ignoredToolChoice: Pick<IgnoredToolChoice, 'ignores' | 'note'>;
  /** Makes a summarizer; `createAiSummarizer` unless told. */
  readonly create?: (options: AiSummarizerOptions) => Summarizer;
}

export class SummarizerSource {
  private made: { readonly key: string; readonly telemetry: LongrunTelemetry; readonly summarizer: Summarizer } | undefined;
  /** What the agent's last request began with: its system prompt and tools (see `createAiSummarizer`). */
  private agentPrefix: AgentPrefix | undefined;

  constructor(private readonly deps: SummarizerSourceDeps) {}

  /**
   * The summarizer for the next compaction: the model `choose` picks, sent at most the window a
   * server stated for it, and continuing the agent's conversation when it is the agent's own model,
   * the settings ask for it and its server is not known to let it call tools then. Undefined when no
   * model can summarize.
   */
  async summarizer(): Promise<Summarizer | undefined> {
    const chosen = await this.deps.choose();
    if (!chosen) return undefined;
    const learned = this.deps.learnedWindow(chosen.key);
    const window = learnedWins(chosen.declaredWindow, learned) ? learned : chosen.declaredWindow;
    const settings = this.deps.settings();
    // What a server does with tool_choice is kept for that server, should an endpoint be pointed elsewhere.
    const served = chosen.server ? `${chosen.key} at ${chosen.server}` : chosen.key;
    const ignored = this.deps.ignoredToolChoice;
    // The conversation's own model is sent the summary request as a continuation of what it has cached.
    const continues = settings.summaryContinuesConversation && chosen.key === this.deps.conversationModel() && !ignored.ignores(served);
    const firstTokenMs = settings.timeouts.firstChunkMs;
    const key = `${chosen.key}@${window}@${firstTokenMs}${continues ? '+continues' : ''}`;
    const telemetry = this.deps.telemetry();
    if (this.made?.key === key && this.made.telemetry === telemetry) return this.made.summarizer;
    const create = this.deps.create ?? createAiSummarizer;
    const summarizer = create({
      model: await chosen.languageModel(),
      name: chosen.key,
      telemetry: telemetry.settings('longrun.summarizer'),
      firstTokenMs,
      ...(chosen.provider ? { provider: chosen.provider } : {}),
      ...(window > 0 ? { contextWindow: window } : {}),
      ...(continues ? { continueFrom: () => this.agentPrefix, onToolChoiceIgnored: (called) => ignored.note(served, called) } : {}),
    });
    this.made = { key, telemetry, summarizer };
    return summarizer;
  }

  /** Records what the agent's requests begin with, for a summary request that continues them. */
  setAgentPrefix(prefix: AgentPrefix): void {
    this.agentPrefix = prefix;
  }

  /** Forgets the summarizer made, so that the next is made anew (an API key or the endpoints changed). */
  forget(): void {
    this.made = undefined;
  }
}
