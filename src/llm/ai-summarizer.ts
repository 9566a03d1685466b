import { generateText, type LanguageModel, type ModelMessage, type TelemetryOptions, type ToolSet } from 'ai';
import type { Summarizer, SummaryRequest, SummaryResponse, SummaryUsage } from '../core/ports';
import { hintedRequest, takesBreakpoints, type CacheHints, type HintedRequest } from './cache-hints';
import { callUsage } from './call-usage';
import { withFirstTokenDeadline } from './first-token-deadline';
import { toolCallsInText, toolsCalledDespite } from './stray-tool-calls';
import type { ProviderKind } from '../core/provider-kind';

/** What every request of the agent begins with: its system prompt and its tools, and what it tells the provider about caching. */
export interface AgentPrefix {
  readonly system: string;
  readonly tools: ToolSet;
  /**
   * The agent's cache hints: a summary continuing the conversation is sent the same, so that it reads
   * the conversation from the cache (and ends it where the next request reads it from). Absent: none.
   */
  readonly cache?: {
    readonly hints: () => CacheHints | undefined;
    /** The message that ends the stable part after the last compaction (see `AgentConversation.stableEnd`). */
    readonly stableEnd?: () => string | undefined;
  };
}

export interface AiSummarizerOptions {
  /** The model that writes summaries. */
  readonly model: LanguageModel;
  /** A name for logs and compaction entries, e.g. `openai:gpt-4o-mini`. */
  readonly name: string;
  /** Tokens one request may hold (input and output); absent or 0 means unknown. */
  readonly contextWindow?: number;
  /** The AI SDK's telemetry settings, passed on to every call. */
  readonly telemetry?: TelemetryOptions;
  /**
   * When the summarizer is the agent's own model: what the agent's requests begin with, as the last
   * one was sent. A summary request then continues the conversation (see `SummaryRequest.continuation`)
   * so that the provider serves the conversation from its prompt cache. Undefined before the first request.
   */
  readonly continueFrom?: () => AgentPrefix | undefined;
  /** Longest wait from sending a request to its answer (`longrun.timeouts.firstChunkSeconds`); absent: none. */
  readonly firstTokenMs?: number;
  /**
   * Told when a request continuing the conversation was answered with a tool call (`calledTools`, by
   * name): the server does not hold the model to `tool_choice: "none"`, so its summaries are better
   * asked for without the conversation's tools.
   */
  readonly onToolChoiceIgnored?: (calledTools: readonly string[]) => void;
  /** The wire format of the model's endpoint, stamped on the usage of a request sent without the agent's hints. */
  readonly provider?: ProviderKind;
}

/**
 * The engine's `Summarizer` port over the AI SDK. One `generateText` call per request, one retry:
 * the engine has its own fallback when a summary fails, so long retry chains only delay it. A
 * continuation answered with a tool call is reported as such (`calledTools`), never run: the engine
 * then asks with the plain request.
 */
export function createAiSummarizer(options: AiSummarizerOptions): Summarizer {
  const { name, contextWindow, telemetry, continueFrom, onToolChoiceIgnored } = options;
  const model = withFirstTokenDeadline(options.model, options.firstTokenMs);
  const generate = (sent: Sent, request: SummaryRequest, signal: AbortSignal | undefined) =>
    generateText({
      model,
      ...sent,
      // Earlier summaries arrive as system-role messages in the middle of the request; the
      // AI SDK refuses those unless told they are intended.
      allowSystemInMessages: true,
      maxOutputTokens: request.maxOutputTokens,
      temperature: request.temperature,
      maxRetries: 1,
      ...(signal ? { abortSignal: signal } : {}),
      ...(telemetry ? { telemetry } : {}),
    });
  const strayed = (calledTools: readonly string[]): SummaryResponse => {
    onToolChoiceIgnored?.(calledTools);
    return { text: '', model: name, calledTools };
  };
  return {
    name,
    ...(contextWindow !== undefined ? { contextWindow } : {}),
    ...(continueFrom ? { continues: true } : {}),
    async summarize(request: SummaryRequest, signal?: AbortSignal): Promise<SummaryResponse> {
      const prefix = request.continuation ? continueFrom?.() : undefined;
      const hints = prefix?.cache?.hints();
      const usageOf = (result: Generated) =>
        summaryUsage(result.usage, result.finalStep.providerMetadata, hints, result.finalStep.response.modelId, options.provider);
      if (!prefix || !request.continuation) return answered(await generate(structured(request), request, signal), name, usageOf);
      const sent = continuing(prefix, request.continuation, hints);
      let result: Generated;
      try {
        result = await generate(sent, request, signal);
      } catch (error) {
        const called = toolsCalledDespite(error);
        if (!called) throw error;
        return strayed(called);
      }
      // Under `auto` a call is the model's choice, not a server ignoring `none`: asked for again plainly, nothing remembered.
      const chosen = sent.toolChoice === 'auto' ? result.toolCalls.map((call) => call.toolName) : [];
      if (chosen.length > 0) return { text: '', model: name, calledTools: chosen };
      const written = toolCallsInText(result.text, Object.keys(sent.tools));
      return written.length > 0 ? strayed(written) : answered(result, name, usageOf);
    },
  };
}

type Sent = ReturnType<typeof structured> | ReturnType<typeof continuing>;

/** What is read of a `generateText` result. */
interface Generated {
  readonly text: string;
  readonly toolCalls: readonly { readonly toolName: string }[];
  readonly usage: Parameters<typeof callUsage>[0];
  readonly finalStep: { readonly response: { readonly modelId: string }; readonly providerMetadata: Parameters<typeof callUsage>[1] };
}

/** The text of an answer, the model that wrote it and the usage its server reported. */
function answered(result: Generated, name: string, usageOf: (result: Generated) => SummaryUsage | undefined): SummaryResponse {
  const modelId = result.finalStep.response.modelId;
  const usage = usageOf(result);
  return { text: result.text, model: modelId ? modelId : name, ...(usage ? { usage } : {}) };
}

/** The structured request: the summarizer's own system prompt and the conversation rendered as text. */
function structured(request: SummaryRequest): { instructions: string; messages: ModelMessage[] } {
  return { instructions: request.system, messages: request.messages.map((message) => ({ role: message.role, content: message.content })) };
}

/**
 * The request as a continuation of the conversation: the agent's system prompt and tools, its
 * messages as it sent them, then the directive. The tools are offered as the agent offers them, so
 * that the request begins with the same bytes, but without what runs them: a call the model makes
 * anyway is never executed. Tool use is off (`none`), except where the provider's cache of the
 * messages holds only for requests with the same tool choice (Anthropic, directly or through
 * OpenRouter): there a summary asked for under `none` would read nothing of the conversation from
 * the cache, so the agent's own choice (`auto`) is sent, the directive asks for text, and a call the
 * model makes anyway sends the plain request instead (`calledTools`).
 */
function continuing(
  prefix: AgentPrefix,
  continuation: NonNullable<SummaryRequest['continuation']>,
  hints: CacheHints | undefined,
): HintedRequest & { tools: ToolSet; toolChoice: 'none' | 'auto' } {
  const tools: ToolSet = {};
  // The agent's requests stream, and Anthropic's package then marks each tool definition for eager
  // input streaming; this one does not stream, so its definitions would differ, and since the tools
  // begin the prompt, nothing of the conversation would be read from the cache. Marked alike, they match.
  const eager = hints?.provider === 'anthropic';
  for (const [name, tool] of Object.entries(prefix.tools)) {
    const providerOptions = eager
      ? { ...tool.providerOptions, anthropic: { ...tool.providerOptions?.anthropic, eagerInputStreaming: true } }
      : tool.providerOptions;
    tools[name] = { ...tool, execute: undefined, ...(providerOptions ? { providerOptions } : {}) } as ToolSet[string];
  }
  const stableEnd = hints && takesBreakpoints(hints.provider) ? prefix.cache?.stableEnd?.() : undefined;
  // The directive is this request's alone: it takes no breakpoint.
  const request = hintedRequest(prefix.system, continuation.messages, hints, {
    ...(stableEnd !== undefined ? { stableEnd } : {}),
    tail: [{ role: 'user', content: continuation.directive }],
  });
  return { ...request, tools, toolChoice: hints && takesBreakpoints(hints.provider) ? 'auto' : 'none' };
}

/** A summary call's usage as a usage record keeps it; undefined when the provider reported none. */
function summaryUsage(
  usage: Parameters<typeof callUsage>[0],
  metadata: Parameters<typeof callUsage>[1],
  hints: CacheHints | undefined,
  modelId: string | undefined,
  endpoint: ProviderKind | undefined,
): SummaryUsage | undefined {
  const provider = hints?.provider ?? endpoint;
  const reported = callUsage(usage, metadata, provider, modelId);
  if (!reported) return undefined;
  const wrote = (reported.cacheWriteTokens ?? 0) > 0 && hints !== undefined && takesBreakpoints(hints.provider);
  return { ...reported, ...(provider ? { provider } : {}), ...(wrote ? { cacheTtl: hints.ttl } : {}) };
}
