import { generateText, type LanguageModel, type TelemetryOptions } from 'ai';
import type { Summarizer, SummaryRequest, SummaryResponse } from '../core/ports';
import { withFirstTokenDeadline } from './first-token-deadline';

export interface AiSummarizerOptions {
  /** The model that writes summaries. */
  readonly model: LanguageModel;
  /** A name for logs and compaction entries, e.g. `openai:gpt-4o-mini`. */
  readonly name: string;
  /** Tokens one request may hold (input and output); absent or 0 means unknown. */
  readonly contextWindow?: number;
  /** The AI SDK's telemetry settings, passed on to every call. */
  readonly telemetry?: TelemetryOptions;
  /** Longest wait from sending a request to its answer (`longrun.timeouts.firstChunkSeconds`); absent: none. */
  readonly firstTokenMs?: number;
}

/**
 * The engine's `Summarizer` port over the AI SDK. One `generateText` call per request, one retry:
 * the engine has its own fallback when a summary fails, so long retry chains only delay it.
 */
export function createAiSummarizer(options: AiSummarizerOptions): Summarizer {
  const { name, contextWindow, telemetry } = options;
  const model = withFirstTokenDeadline(options.model, options.firstTokenMs);
  return {
    name,
    ...(contextWindow !== undefined ? { contextWindow } : {}),
    async summarize(request: SummaryRequest, signal?: AbortSignal): Promise<SummaryResponse> {
      const result = await generateText({
        model,
        instructions: request.system,
        // Earlier summaries arrive as system-role messages in the middle of the request; the
        // AI SDK refuses those unless told they are intended.
        allowSystemInMessages: true,
        messages: request.messages.map((message) => ({ role: message.role, content: message.content })),
        maxOutputTokens: request.maxOutputTokens,
        temperature: request.temperature,
        maxRetries: 1,
        ...(signal ? { abortSignal: signal } : {}),
        ...(telemetry ? { telemetry } : {}),
      });
      const { inputTokens, outputTokens } = result.usage;
      const modelId = result.finalStep.response.modelId;
      return {
        text: result.text,
        model: modelId ? modelId : name,
        ...(inputTokens !== undefined && outputTokens !== undefined ? { usage: { inputTokens, outputTokens } } : {}),
      };
    },
  };
}
