import { generateText, type LanguageModel, type ModelMessage, type TelemetryOptions, type ToolSet } from 'ai';
import type { Summarizer, SummaryRequest, SummaryResponse } from '../core/ports';
import { withFirstTokenDeadline } from './first-token-deadline';
import { toModelMessages } from './model-messages';
import { toolCallsInText, toolsCalledDespite } from './stray-tool-calls';

/** What every request of the agent begins with: its system prompt and its tools. */
export interface AgentPrefix {
  readonly system: string;
  readonly tools: ToolSet;
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
      if (!prefix || !request.continuation) return answered(await generate(structured(request), request, signal), name);
      const sent = continuing(prefix, request.continuation);
      let result: Generated;
      try {
        result = await generate(sent, request, signal);
      } catch (error) {
        const called = toolsCalledDespite(error);
        if (!called) throw error;
        return strayed(called);
      }
      const written = toolCallsInText(result.text, Object.keys(sent.tools));
      return written.length > 0 ? strayed(written) : answered(result, name);
    },
  };
}

type Sent = ReturnType<typeof structured> | ReturnType<typeof continuing>;

/** What is read of a `generateText` result. */
interface Generated {
  readonly text: string;
  readonly usage: { readonly inputTokens: number | undefined; readonly outputTokens: number | undefined };
  readonly finalStep: { readonly response: { readonly modelId: string } };
}

/** The text of an answer, the model that wrote it and the usage its server reported. */
function answered(result: Generated, name: string): SummaryResponse {
  const { inputTokens, outputTokens } = result.usage;
  const modelId = result.finalStep.response.modelId;
  return {
    text: result.text,
    model: modelId ? modelId : name,
    ...(inputTokens !== undefined && outputTokens !== undefined ? { usage: { inputTokens, outputTokens } } : {}),
  };
}

/** The structured request: the summarizer's own system prompt and the conversation rendered as text. */
function structured(request: SummaryRequest): { instructions: string; messages: ModelMessage[] } {
  return { instructions: request.system, messages: request.messages.map((message) => ({ role: message.role, content: message.content })) };
}

/**
 * The request as a continuation of the conversation: the agent's system prompt and tools, its
 * messages as it sent them, then the directive. The tools are offered as the agent offers them, so
 * that the request begins with the same bytes, but without what runs them and with tool use off:
 * a call the model makes anyway is never executed.
 */
function continuing(
  prefix: AgentPrefix,
  continuation: NonNullable<SummaryRequest['continuation']>,
): { instructions: string; messages: ModelMessage[]; tools: ToolSet; toolChoice: 'none' } {
  const tools: ToolSet = {};
  for (const [name, tool] of Object.entries(prefix.tools)) tools[name] = { ...tool, execute: undefined } as ToolSet[string];
  return {
    instructions: prefix.system,
    messages: [...toModelMessages(continuation.messages), { role: 'user', content: continuation.directive }],
    tools,
    toolChoice: 'none',
  };
}
