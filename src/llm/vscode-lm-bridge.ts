/**
 * An AI SDK language model (specification v4) over one of VS Code's chat models
 * (`vscode.LanguageModelChat`), so the agent runs the same `streamText` loop whichever model the
 * user picked. Nothing here imports `vscode` at runtime: the composition root hands in the few
 * constructors the bridge needs (`VsCodeLmApi`), which keeps this file testable in plain Node.
 *
 * VS Code's chat API has no system role and reports no token usage, so instructions travel as a
 * user message and usage is estimated with the model's own `countTokens`.
 */
import type { LanguageModel } from 'ai';
import { errorText, hasMarker, mark } from '../core/errors';

// The provider specification's types, taken from `ai`'s `LanguageModel` so that this file needs
// no import of `@ai-sdk/provider`, which the extension does not depend on directly.
export type LanguageModelV4 = Extract<LanguageModel, { readonly specificationVersion: 'v4' }>;
type CallOptions = Parameters<LanguageModelV4['doStream']>[0];
type StreamResult = Awaited<ReturnType<LanguageModelV4['doStream']>>;
type GenerateResult = Awaited<ReturnType<LanguageModelV4['doGenerate']>>;
type StreamPart = StreamResult['stream'] extends ReadableStream<infer P> ? P : never;
type PromptMessage = CallOptions['prompt'][number];
type Warning = Extract<StreamPart, { type: 'stream-start' }>['warnings'][number];
type Usage = GenerateResult['usage'];
type FinishReason = GenerateResult['finishReason'];
type ToolResultOutput = Extract<Extract<PromptMessage, { role: 'tool' }>['content'][number], { type: 'tool-result' }>['output'];

/** A message as VS Code's chat API takes it; the bridge only builds and forwards them. */
export type VsCodeChatMessage = unknown;

/** The runtime pieces of the `vscode` module the bridge needs; `src/vscode` passes them in. */
export interface VsCodeLmApi {
  readonly LanguageModelChatMessage: {
    User(content: string | unknown[], name?: string): VsCodeChatMessage;
    Assistant(content: string | unknown[], name?: string): VsCodeChatMessage;
  };
  readonly LanguageModelTextPart: new (value: string) => unknown;
  readonly LanguageModelToolCallPart: new (callId: string, name: string, input: object) => unknown;
  readonly LanguageModelToolResultPart: new (callId: string, content: unknown[]) => unknown;
  readonly LanguageModelChatToolMode: { readonly Auto: number; readonly Required: number };
}

/** The shape of `vscode.CancellationToken` that the bridge hands to VS Code. */
export interface VsCodeCancellationToken {
  readonly isCancellationRequested: boolean;
  onCancellationRequested(listener: (e: unknown) => unknown, thisArgs?: unknown, disposables?: { dispose(): unknown }[]): { dispose(): unknown };
}

/** A tool as VS Code's chat API takes it. */
export interface VsCodeChatTool {
  readonly name: string;
  readonly description: string;
  readonly inputSchema?: object;
}

export interface VsCodeChatRequestOptions {
  tools?: VsCodeChatTool[];
  toolMode?: number;
  justification?: string;
  modelOptions?: Record<string, unknown>;
}

/** The structural subset of `vscode.LanguageModelChat` the bridge uses. */
export interface VsCodeChatModel {
  readonly id: string;
  readonly vendor: string;
  readonly family: string;
  readonly name: string;
  readonly maxInputTokens: number;
  sendRequest(
    messages: VsCodeChatMessage[],
    options: VsCodeChatRequestOptions,
    token: VsCodeCancellationToken,
  ): PromiseLike<{ stream: AsyncIterable<unknown>; text: AsyncIterable<string> }>;
  countTokens(text: string | VsCodeChatMessage, token?: VsCodeCancellationToken): PromiseLike<number>;
}

const ERROR_MARKER = Symbol.for('longrun.vscode-lm-error');

/**
 * A failure reported by VS Code's chat API. The message is the original one and the original
 * error is the `cause`, so overflow detection and error reports read what VS Code said.
 */
export class VsCodeLmError extends Error {
  override readonly name = 'VsCodeLmError';
  /** `vscode.LanguageModelError`'s code (`NoPermissions`, `Blocked`, `NotFound`…), when given. */
  readonly code: string | undefined;

  constructor(cause: unknown) {
    super(errorText(cause), { cause });
    mark(this, ERROR_MARKER);
    const code = typeof cause === 'object' && cause !== null ? (cause as { code?: unknown }).code : undefined;
    this.code = typeof code === 'string' ? code : undefined;
  }

  static isInstance(error: unknown): error is VsCodeLmError {
    return hasMarker(error, ERROR_MARKER);
  }
}

/** How the bridge asks VS Code. */
export interface VsCodeBridgeOptions {
  /**
   * Why the extension uses the model, sent with every request: VS Code shows it when it asks the
   * user to let an extension use a model that needs consent (Copilot's, outside a chat request).
   */
  readonly justification?: string;
}

/** An AI SDK model that sends every call to `model` through VS Code's chat API. */
export function createVsCodeLanguageModel(model: VsCodeChatModel, api: VsCodeLmApi, bridge: VsCodeBridgeOptions = {}): LanguageModelV4 {
  const doStream = (options: CallOptions): Promise<StreamResult> => streamFromVsCode(model, api, options, bridge);
  return {
    specificationVersion: 'v4',
    provider: 'vscode-lm',
    modelId: model.id,
    // Claim every URL so the AI SDK never downloads attachments: they become placeholders anyway.
    supportedUrls: { '*/*': [/.*/] },
    doStream,
    doGenerate: async (options) => collect(await doStream(options)),
  };
}

/** Sends one call to `model` and streams its answer as AI SDK stream parts. */
async function streamFromVsCode(model: VsCodeChatModel, api: VsCodeLmApi, options: CallOptions, bridge: VsCodeBridgeOptions): Promise<StreamResult> {
  const signal = options.abortSignal;
  if (signal?.aborted) throw abortError(signal);

  const messages = toVsCodeMessages(options.prompt, api);
  const { requestOptions, warnings } = prepareRequest(options, api);
  if (bridge.justification) requestOptions.justification = bridge.justification;
  const cancellation = new Cancellation(signal);

  // Counted while the request runs, so the estimate costs no latency.
  const inputTokens = countInputTokens(model, messages, requestOptions.tools, cancellation.token);

  let response: { stream: AsyncIterable<unknown> };
  try {
    response = await model.sendRequest(messages, requestOptions, cancellation.token);
  } catch (error) {
    cancellation.dispose();
    if (signal?.aborted) throw abortError(signal);
    throw new VsCodeLmError(error);
  }

  const iterator = response.stream[Symbol.asyncIterator]();
  let consumerCancelled = false;
  const source: ResponseSource = { model, iterator, cancellation, inputTokens, signal, consumerCancelled: () => consumerCancelled };
  const stream = new ReadableStream<StreamPart>({
    start(controller) {
      controller.enqueue({ type: 'stream-start', warnings });
      controller.enqueue({ type: 'response-metadata', modelId: model.id });
      void pump(source, controller);
    },
    cancel() {
      consumerCancelled = true;
      cancellation.cancel();
      void Promise.resolve(iterator.return?.()).catch(() => undefined);
    },
  });

  return { stream, request: { body: { model: model.id, messageCount: messages.length, options: requestOptions } } };
}

/** What `pump` reads a response from, and how the call may end early. */
interface ResponseSource {
  readonly model: VsCodeChatModel;
  readonly iterator: AsyncIterator<unknown>;
  readonly cancellation: Cancellation;
  /** The prompt's count, made while the request runs. */
  readonly inputTokens: Promise<number | undefined>;
  readonly signal: AbortSignal | undefined;
  /** Whether the reader of the stream cancelled it. */
  readonly consumerCancelled: () => boolean;
}

/** Turns the response's parts into stream parts until it ends, then reports the estimated usage; an error ends the stream. */
async function pump(
  { model, iterator, cancellation, inputTokens, signal, consumerCancelled }: ResponseSource,
  controller: ReadableStreamDefaultController<StreamPart>,
): Promise<void> {
  let textId: string | undefined;
  let blocks = 0;
  let toolCalls = 0;
  let produced = '';
  const endText = (): void => {
    if (textId === undefined) return;
    controller.enqueue({ type: 'text-end', id: textId });
    textId = undefined;
  };
  try {
    for (;;) {
      const next = await cancellation.race(iterator.next());
      if (next.done) break;
      const item = next.value;
      if (isToolCall(item)) {
        endText();
        const input = JSON.stringify(item.input ?? {});
        produced += input;
        toolCalls += 1;
        controller.enqueue({ type: 'tool-call', toolCallId: item.callId, toolName: item.name, input });
      } else if (isText(item)) {
        if (item.value === '') continue;
        if (textId === undefined) {
          textId = `txt-${blocks++}`;
          controller.enqueue({ type: 'text-start', id: textId });
        }
        produced += item.value;
        controller.enqueue({ type: 'text-delta', id: textId, delta: item.value });
      }
      // Anything else (data parts, parts of proposed APIs) has no place in the answer.
    }
    endText();
    const usage = await estimateUsage(model, await inputTokens, produced, cancellation.token);
    controller.enqueue({
      type: 'finish',
      finishReason: toolCalls > 0 ? reason('tool-calls') : reason('stop'),
      usage,
      providerMetadata: { 'vscode-lm': { usageEstimated: true } },
    });
    controller.close();
  } catch (error) {
    if (consumerCancelled()) {
      // Nobody is reading any more.
    } else if (signal?.aborted) {
      controller.error(abortError(signal));
    } else {
      endText();
      controller.enqueue({ type: 'error', error: new VsCodeLmError(error) });
      controller.enqueue({ type: 'finish', finishReason: reason('error'), usage: noUsage() });
      controller.close();
    }
    void Promise.resolve(iterator.return?.()).catch(() => undefined);
  } finally {
    cancellation.dispose();
  }
}

/** Reads a whole stream into a generate result; an error part becomes a rejection. */
async function collect(result: StreamResult): Promise<GenerateResult> {
  const content: GenerateResult['content'] = [];
  const texts = new Map<string, { type: 'text'; text: string }>();
  let finishReason: FinishReason = reason('other');
  let usage: Usage = noUsage();
  let warnings: Warning[] = [];
  let providerMetadata: GenerateResult['providerMetadata'];
  let modelId: string | undefined;
  const reader = result.stream.getReader();
  for (;;) {
    const { done, value: part } = await reader.read();
    if (done) break;
    switch (part.type) {
      case 'stream-start':
        warnings = part.warnings;
        break;
      case 'response-metadata':
        modelId = part.modelId;
        break;
      case 'text-start': {
        const text = { type: 'text' as const, text: '' };
        texts.set(part.id, text);
        content.push(text);
        break;
      }
      case 'text-delta': {
        const text = texts.get(part.id);
        if (text) text.text += part.delta;
        break;
      }
      case 'tool-call':
        content.push(part);
        break;
      case 'error':
        throw part.error;
      case 'finish':
        finishReason = part.finishReason;
        usage = part.usage;
        providerMetadata = part.providerMetadata;
        break;
      default:
        break;
    }
  }
  return {
    content,
    finishReason,
    usage,
    warnings,
    ...(providerMetadata ? { providerMetadata } : {}),
    ...(modelId ? { response: { modelId } } : {}),
  };
}

// ---------------------------------------------------------------------------------------------
// Prompt conversion

const INSTRUCTIONS_HEADER = 'Instructions (treat as the system prompt):';

/**
 * The V4 prompt as VS Code chat messages. VS Code has only user and assistant turns: system
 * instructions become a user turn with a header, tool results ride in a user turn as
 * `LanguageModelToolResultPart`s (consecutive tool messages share one turn, as every result of
 * one assistant turn must follow it directly), and attachments become a text placeholder.
 * Reasoning is not sent back: VS Code has no part for it.
 */
export function toVsCodeMessages(prompt: readonly PromptMessage[], api: VsCodeLmApi): VsCodeChatMessage[] {
  const out: VsCodeChatMessage[] = [];
  const text = (value: string): unknown => new api.LanguageModelTextPart(value);
  let pendingResults: unknown[] = [];
  const flushResults = (): void => {
    if (pendingResults.length > 0) out.push(api.LanguageModelChatMessage.User(pendingResults));
    pendingResults = [];
  };

  for (const message of prompt) {
    if (message.role === 'tool') {
      for (const part of message.content) {
        if (part.type !== 'tool-result') continue;
        pendingResults.push(new api.LanguageModelToolResultPart(part.toolCallId, [text(toolOutputText(part.output))]));
      }
      continue;
    }
    flushResults();
    switch (message.role) {
      case 'system':
        out.push(api.LanguageModelChatMessage.User([text(`${INSTRUCTIONS_HEADER}\n\n${message.content}`)]));
        break;
      case 'user': {
        const parts = message.content.map((part) => text(part.type === 'text' ? part.text : fileText(part.filename, part.mediaType, part.data)));
        if (parts.length > 0) out.push(api.LanguageModelChatMessage.User(parts));
        break;
      }
      case 'assistant': {
        const parts: unknown[] = [];
        for (const part of message.content) {
          switch (part.type) {
            case 'text':
              if (part.text !== '') parts.push(text(part.text));
              break;
            case 'tool-call':
              parts.push(new api.LanguageModelToolCallPart(part.toolCallId, part.toolName, toInputObject(part.input)));
              break;
            case 'tool-result':
              parts.push(text(`[tool result ${part.toolName}#${part.toolCallId}] ${toolOutputText(part.output)}`));
              break;
            case 'file':
              parts.push(text(fileText(part.filename, part.mediaType, part.data)));
              break;
            default:
              break;
          }
        }
        if (parts.length > 0) out.push(api.LanguageModelChatMessage.Assistant(parts));
        break;
      }
    }
  }
  flushResults();
  return out;
}

function fileText(filename: string | undefined, mediaType: string, data: unknown): string {
  const label = `[attachment ${filename ?? 'unnamed'} (${mediaType})`;
  // An inline text document can be sent as what it is.
  if (typeof data === 'object' && data !== null && (data as { type?: unknown }).type === 'text') {
    const inline = (data as { text?: unknown }).text;
    if (typeof inline === 'string') return `${label}]\n${inline}`;
  }
  return `${label} not included: this model takes text only]`;
}

function toolOutputText(output: ToolResultOutput): string {
  switch (output.type) {
    case 'text':
      return output.value;
    case 'json':
      return JSON.stringify(output.value);
    case 'error-text':
      return `Tool failed: ${output.value}`;
    case 'error-json':
      return `Tool failed: ${JSON.stringify(output.value)}`;
    case 'execution-denied':
      return `Tool execution denied${output.reason ? `: ${output.reason}` : '.'}`;
    case 'content':
      return output.value.map((item) => (item.type === 'text' ? item.text : `[${item.type} content not included]`)).join('\n');
  }
}

/** VS Code wants the input of a tool call as an object. */
function toInputObject(input: unknown): object {
  if (typeof input === 'string') {
    try {
      const parsed: unknown = JSON.parse(input);
      if (typeof parsed === 'object' && parsed !== null) return parsed;
    } catch {
      // not JSON: wrapped below
    }
    return { input };
  }
  if (typeof input === 'object' && input !== null) return input;
  return input === undefined ? {} : { input };
}

// ---------------------------------------------------------------------------------------------
// Tools and settings

function prepareRequest(options: CallOptions, api: VsCodeLmApi): { requestOptions: VsCodeChatRequestOptions; warnings: Warning[] } {
  const warnings: Warning[] = [];
  const requestOptions: VsCodeChatRequestOptions = {};
  const choice = options.toolChoice ?? { type: 'auto' };

  const tools: VsCodeChatTool[] = [];
  for (const tool of options.tools ?? []) {
    if (tool.type !== 'function') {
      warnings.push({ type: 'unsupported', feature: `provider tool ${tool.name}` });
      continue;
    }
    if (choice.type === 'tool' && tool.name !== choice.toolName) continue;
    tools.push({ name: tool.name, description: tool.description ?? '', inputSchema: tool.inputSchema });
  }
  if (tools.length > 0) {
    // VS Code's chat API has no mode that forbids tool use. Leaving the tools out instead would leave
    // the conversation's tool calls and results without their definitions, which some providers
    // refuse (Anthropic's API does), and would change how the request begins, so that no prompt
    // cache serves it. They are offered as usual: a call the model makes anyway reaches the caller,
    // which asked for none and can tell (the AI SDK reports it as a tool choice violation).
    requestOptions.tools = tools;
    requestOptions.toolMode =
      choice.type === 'required' || choice.type === 'tool' ? api.LanguageModelChatToolMode.Required : api.LanguageModelChatToolMode.Auto;
    if (choice.type === 'none') {
      warnings.push({ type: 'unsupported', feature: 'toolChoice none', details: 'VS Code chat models cannot be told to call no tool.' });
    }
  }

  // VS Code's chat API takes none of these; saying so beats ignoring them silently.
  const unsupported: Array<[string, unknown]> = [
    ['maxOutputTokens', options.maxOutputTokens],
    ['temperature', options.temperature],
    ['topP', options.topP],
    ['topK', options.topK],
    ['presencePenalty', options.presencePenalty],
    ['frequencyPenalty', options.frequencyPenalty],
    ['stopSequences', options.stopSequences],
    ['seed', options.seed],
  ];
  for (const [feature, value] of unsupported) {
    if (value !== undefined) warnings.push({ type: 'unsupported', feature, details: 'VS Code chat models do not take this setting.' });
  }
  if (options.responseFormat?.type === 'json') warnings.push({ type: 'unsupported', feature: 'responseFormat' });
  return { requestOptions, warnings };
}

// ---------------------------------------------------------------------------------------------
// Stream items

function isToolCall(item: unknown): item is { callId: string; name: string; input: unknown } {
  if (typeof item !== 'object' || item === null) return false;
  const candidate = item as { callId?: unknown; name?: unknown };
  return typeof candidate.callId === 'string' && typeof candidate.name === 'string' && 'input' in item;
}

function isText(item: unknown): item is { value: string } {
  if (typeof item !== 'object' || item === null) return false;
  if ('callId' in item) return false;
  // VS Code's proposed thinking parts also carry a string `value`; they are not answer text.
  if (/Thinking/.test(item.constructor?.name ?? '')) return false;
  return typeof (item as { value?: unknown }).value === 'string';
}

// ---------------------------------------------------------------------------------------------
// Usage: VS Code reports none, so it is estimated with the model's tokenizer.

async function countInputTokens(
  model: VsCodeChatModel,
  messages: readonly VsCodeChatMessage[],
  tools: readonly VsCodeChatTool[] | undefined,
  token: VsCodeCancellationToken,
): Promise<number | undefined> {
  try {
    const counts = await Promise.all([
      ...messages.map((message) => model.countTokens(message, token)),
      // Tool definitions take room in the window too.
      ...(tools && tools.length > 0 ? [model.countTokens(JSON.stringify(tools), token)] : []),
    ]);
    return counts.reduce((sum, count) => sum + count, 0);
  } catch {
    return undefined;
  }
}

async function estimateUsage(
  model: VsCodeChatModel,
  inputTokens: number | undefined,
  produced: string,
  token: VsCodeCancellationToken,
): Promise<Usage> {
  let outputTokens: number | undefined = 0;
  if (produced !== '') {
    try {
      outputTokens = await model.countTokens(produced, token);
    } catch {
      outputTokens = undefined;
    }
  }
  return {
    inputTokens: { total: inputTokens, noCache: inputTokens, cacheRead: undefined, cacheWrite: undefined },
    outputTokens: { total: outputTokens, text: outputTokens, reasoning: undefined },
    raw: { estimated: true, source: 'vscode.LanguageModelChat.countTokens' },
  };
}

function noUsage(): Usage {
  return {
    inputTokens: { total: undefined, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
    outputTokens: { total: undefined, text: undefined, reasoning: undefined },
  };
}

function reason(unified: FinishReason['unified']): FinishReason {
  return { unified, raw: undefined };
}

// ---------------------------------------------------------------------------------------------
// Cancellation

/**
 * A cancellation token fed by the call's `AbortSignal` and by the consumer cancelling the stream.
 * `race` makes a pending read give up at once, even if VS Code's stream is slow to notice.
 */
class Cancellation {
  private cancelled = false;
  private readonly listeners = new Set<() => void>();
  private readonly onAbort = (): void => this.cancel();

  readonly token: VsCodeCancellationToken;

  constructor(private readonly signal: AbortSignal | undefined) {
    signal?.addEventListener('abort', this.onAbort, { once: true });
    const isCancelled = (): boolean => this.cancelled;
    const listeners = this.listeners;
    this.token = {
      get isCancellationRequested() {
        return isCancelled();
      },
      onCancellationRequested(listener, thisArgs, disposables) {
        const call = (): void => void listener.call(thisArgs, undefined);
        const disposable = { dispose: () => void listeners.delete(call) };
        if (isCancelled()) queueMicrotask(call);
        else listeners.add(call);
        disposables?.push(disposable);
        return disposable;
      },
    };
  }

  cancel(): void {
    if (this.cancelled) return;
    this.cancelled = true;
    for (const listener of [...this.listeners]) {
      try {
        listener();
      } catch {
        // A listener's failure must not stop the others from hearing of the cancellation.
      }
    }
    this.listeners.clear();
  }

  /** Resolves like `promise`, or rejects as soon as the call is cancelled. */
  race<T>(promise: Promise<T>): Promise<T> {
    if (this.cancelled) return Promise.reject(new Error('cancelled'));
    return new Promise<T>((resolve, reject) => {
      const stop = (): void => reject(new Error('cancelled'));
      this.listeners.add(stop);
      promise.then(
        (value) => {
          this.listeners.delete(stop);
          resolve(value);
        },
        (error: unknown) => {
          this.listeners.delete(stop);
          reject(error);
        },
      );
    });
  }

  /** Stops listening to the signal; the token stays as it is. */
  dispose(): void {
    this.signal?.removeEventListener('abort', this.onAbort);
  }
}

function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  if (reason instanceof Error && (reason.name === 'AbortError' || reason.name === 'TimeoutError')) return reason;
  return Object.assign(new Error('The request was cancelled.', { cause: reason }), { name: 'AbortError' });
}
