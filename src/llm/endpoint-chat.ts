import { experimental_streamTextLowMemory as streamTextOnce, jsonSchema, tool, type LanguageModel, type ModelMessage, type ToolSet } from 'ai';
import { withFirstTokenDeadline } from './first-token-deadline';
import { MAX_KEPT_TEXT_CHARS, withKeptText } from './kept-text';

/**
 * Serves a chat request made to one of Longrun's own models (vendor `longrun`) by any chat
 * participant: the request's tools are passed to the model without an implementation, so tool
 * calls come back to the caller, which runs them (VS Code's language-model provider contract). The
 * text goes to the caller as the provider sends it; the stream is read once and the SDK keeps no
 * more of a long answer than an agent's step would (`withKeptText`).
 */

export interface ProvidedTool {
  readonly name: string;
  readonly description: string;
  readonly inputSchema?: object;
}

export interface EndpointChatRequest {
  readonly model: LanguageModel;
  readonly messages: ModelMessage[];
  readonly tools: readonly ProvidedTool[];
  readonly toolMode: 'auto' | 'required';
  readonly maxOutputTokens?: number;
  readonly signal: AbortSignal;
  /** How long the model may send nothing: before its first chunk, and between chunks. */
  readonly timeouts?: { readonly firstChunkMs: number; readonly idleMs: number };
  readonly onText: (delta: string) => void;
  readonly onToolCall: (call: { toolCallId: string; toolName: string; input: unknown }) => void;
}

export interface EndpointChatResult {
  readonly inputTokens?: number;
  readonly outputTokens?: number;
}

export async function streamEndpointChat(request: EndpointChatRequest): Promise<EndpointChatResult> {
  const tools: ToolSet = {};
  for (const t of request.tools) {
    tools[t.name] = tool({
      description: t.description,
      inputSchema: jsonSchema((t.inputSchema ?? { type: 'object', properties: {} }) as Parameters<typeof jsonSchema>[0]),
    });
  }
  const hasTools = request.tools.length > 0;
  const result = streamTextOnce({
    model: withFirstTokenDeadline(
      withKeptText(request.model, { maxChars: MAX_KEPT_TEXT_CHARS, onText: request.onText }),
      request.timeouts?.firstChunkMs,
    ),
    messages: request.messages,
    allowSystemInMessages: true,
    ...(hasTools ? { tools, toolChoice: request.toolMode === 'required' ? ('required' as const) : ('auto' as const) } : {}),
    ...(request.maxOutputTokens ? { maxOutputTokens: request.maxOutputTokens } : {}),
    abortSignal: request.signal,
    maxRetries: 1,
    ...(request.timeouts ? { timeout: { chunkMs: request.timeouts.idleMs } } : {}),
  });
  let failure: unknown;
  let usage: EndpointChatResult = {};
  for await (const part of result.fullStream) {
    if (part.type === 'tool-call') request.onToolCall({ toolCallId: part.toolCallId, toolName: part.toolName, input: part.input });
    else if (part.type === 'finish-step') usage = { inputTokens: part.usage.inputTokens, outputTokens: part.usage.outputTokens };
    else if (part.type === 'error') failure = part.error;
  }
  if (failure !== undefined) throw failure;
  // Rejects with what ended the call early (a timeout, an abort), which the stream itself does not carry.
  await result.finishReason;
  return usage;
}
