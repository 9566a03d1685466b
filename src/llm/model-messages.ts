/**
 * Conversions between the engine's messages (`src/core/messages.ts`) and the AI SDK's
 * `ModelMessage`. Nothing is merged or reordered: one engine message becomes one model message and
 * back, so compaction entries that refer to message ids stay meaningful.
 *
 * The AI SDK rejects `role: 'system'` inside `messages` unless the call sets
 * `allowSystemInMessages: true`; callers that pass converted system messages must set it.
 *
 * A part's provider metadata (signatures, reasoning item ids, encrypted reasoning) travels as the
 * part's `providerOptions` to the provider and model that made it, and to no other: another model
 * cannot read it, and some refuse it. Reasoning that cannot go with its metadata goes as plain text,
 * except to the APIs that take only their own signed reasoning (Anthropic's, OpenAI's Responses),
 * where it is left out, as their packages would leave it out; reasoning with no text is left out.
 */
import type {
  AssistantModelMessage,
  JSONValue,
  LanguageModel,
  ModelMessage,
  SystemModelMessage,
  ToolModelMessage,
  ToolResultPart as ModelToolResultPart,
} from 'ai';
import type { FilePart, Message, Part, Producer, ProviderMetadata, TextPart, ToolResultPart } from '../core/messages';
import { sameProducer, stringifyOutput } from '../core/messages';

type ModelToolOutput = ModelToolResultPart['output'];
type AssistantPart = Exclude<AssistantModelMessage['content'], string>[number];
type UserPart = { type: 'text'; text: string };

type ProviderOptions = NonNullable<SystemModelMessage['providerOptions']>;

/** The provider and model of `model`, as its package names them; none for a model named by a string alone. */
export function producerOf(model: LanguageModel): Producer | undefined {
  return typeof model === 'string' ? undefined : { provider: model.provider, model: model.modelId };
}

/**
 * Engine messages as the AI SDK's model messages, in the same order, one for one, for a request to
 * `to` (the provider and model the parts' metadata is sent back to; none when absent).
 */
export function toModelMessages(messages: readonly Message[], to?: Producer): ModelMessage[] {
  return messages.map((message) => toModelMessage(message, to));
}

/** The provider packages that send reasoning only with their own metadata, and skip any other. */
const SIGNED_REASONING_ONLY = /^(anthropic\b|openai\.responses$)/;

function toModelMessage(message: Message, to: Producer | undefined): ModelMessage {
  switch (message.role) {
    case 'system':
      // A system message carries text only; anything else in it has no system-role equivalent.
      return { role: 'system', content: textOf(message.content) };
    case 'user':
      return { role: 'user', content: message.content.map(toUserPart) };
    case 'assistant':
      return { role: 'assistant', content: message.content.flatMap((part) => toAssistantPart(part, to)) };
    case 'tool':
      // A tool message can hold only results; stray text in one has nowhere to go.
      return {
        role: 'tool',
        content: message.content.filter((part): part is ToolResultPart => part.type === 'tool-result').map(toModelToolResult),
      };
  }
}

function textOf(parts: readonly Part[]): string {
  return parts
    .filter((part): part is TextPart => part.type === 'text')
    .map((part) => part.text)
    .join('\n\n');
}

/** User turns take text and files only; the rest is rendered as text so nothing is lost. */
function toUserPart(part: Part): UserPart {
  switch (part.type) {
    case 'text':
      return { type: 'text', text: part.text };
    case 'reasoning':
      return { type: 'text', text: part.text };
    case 'file':
      return { type: 'text', text: filePlaceholder(part) };
    case 'tool-call':
      return { type: 'text', text: `[tool call ${part.toolName}#${part.toolCallId}] ${stringifyOutput(part.input)}` };
    case 'tool-result':
      return {
        type: 'text',
        text: `[tool result ${part.toolName}#${part.toolCallId}${part.isError ? ' (error)' : ''}] ${stringifyOutput(part.output)}`,
      };
  }
}

function toAssistantPart(part: Part, to: Producer | undefined): AssistantPart[] {
  switch (part.type) {
    case 'text':
      return [{ type: 'text', text: part.text, ...metadataFor(part.providerMetadata, to) }];
    case 'reasoning': {
      const options = metadataFor(part.providerMetadata, to);
      if (options.providerOptions) return [{ type: 'reasoning', text: part.text, ...options }];
      const leftOut = part.text.length === 0 || (to !== undefined && SIGNED_REASONING_ONLY.test(to.provider));
      return leftOut ? [] : [{ type: 'reasoning', text: part.text }];
    }
    case 'tool-call':
      return [
        { type: 'tool-call', toolCallId: part.toolCallId, toolName: part.toolName, input: part.input, ...metadataFor(part.providerMetadata, to) },
      ];
    case 'tool-result':
      // Results of provider-executed tools sit in the assistant message itself.
      return [toModelToolResult(part)];
    case 'file':
      return [{ type: 'text', text: filePlaceholder(part) }];
  }
}

/**
 * Where the assistant part at `at` of `message` is in its model message sent to `to`: reasoning
 * left out before it moves it up. -1 when the part itself is left out.
 */
export function sentPartIndex(message: Message, at: number, to: Producer | undefined): number {
  if (at < 0 || at >= message.content.length) return -1;
  let index = 0;
  for (let i = 0; i < at; i++) index += toAssistantPart(message.content[i]!, to).length;
  return toAssistantPart(message.content[at]!, to).length > 0 ? index : -1;
}

/** The part's metadata as the SDK's `providerOptions`, when it goes to the model that made it. */
function metadataFor(metadata: ProviderMetadata | undefined, to: Producer | undefined): { providerOptions?: ProviderOptions } {
  return metadata && sameProducer(metadata, to) ? { providerOptions: metadata.data as ProviderOptions } : {};
}

function toModelToolResult(part: ToolResultPart): ModelToolResultPart {
  return { type: 'tool-result', toolCallId: part.toolCallId, toolName: part.toolName, output: toModelOutput(part) };
}

/** A string output travels as text, anything else as JSON; `isError` picks the error variants. */
function toModelOutput(part: ToolResultPart): ModelToolOutput {
  const { output } = part;
  if (typeof output === 'string') return { type: part.isError ? 'error-text' : 'text', value: output };
  if (output === undefined) return { type: part.isError ? 'error-text' : 'text', value: '' };
  // Outputs come from tools or from the persisted history, both JSON by construction.
  const value = output as JSONValue;
  return { type: part.isError ? 'error-json' : 'json', value };
}

/** What the model sees in place of an attachment: the engine keeps no bytes to send. */
export function filePlaceholder(part: FilePart): string {
  const size = part.size !== undefined ? `, ${part.size} bytes` : '';
  return `[attachment ${part.name ?? 'unnamed'} (${part.mediaType}${size}) not included]`;
}

/**
 * The messages a `generateText`/`streamText` call produced (`responseMessages`) as engine
 * messages with fresh ids. Tool outputs come back as a string or a JSON value with `isError`.
 * Parts the engine has no use for (approval requests and responses, provider-specific parts) are
 * dropped, and a message left with no parts is dropped with them. The metadata the provider put on
 * text, reasoning and tool calls is kept, marked as made by `by` (none is kept when it is absent).
 */
export function fromResponseMessages(messages: readonly (AssistantModelMessage | ToolModelMessage)[], newId: () => string, by?: Producer): Message[] {
  const out: Message[] = [];
  for (const message of messages) {
    const content = message.role === 'assistant' ? fromAssistantContent(message.content, by) : fromToolContent(message.content);
    if (content.length > 0) out.push({ id: newId(), role: message.role, content });
  }
  return out;
}

function fromAssistantContent(content: AssistantModelMessage['content'], by: Producer | undefined): Part[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  const parts: Part[] = [];
  for (const part of content) {
    switch (part.type) {
      case 'text':
        parts.push({ type: 'text', text: part.text, ...metadataOf(part.providerOptions, by) });
        break;
      case 'reasoning':
        parts.push({ type: 'reasoning', text: part.text, ...metadataOf(part.providerOptions, by) });
        break;
      case 'tool-call':
        parts.push({
          type: 'tool-call',
          toolCallId: part.toolCallId,
          toolName: part.toolName,
          input: part.input,
          ...metadataOf(part.providerOptions, by),
        });
        break;
      case 'tool-result':
        parts.push(fromModelToolResult(part));
        break;
      case 'file':
      case 'reasoning-file':
        parts.push(fromModelFile(part.mediaType, part.data, part.type === 'file' ? part.filename : undefined));
        break;
      default:
        // custom parts and tool-approval requests: nothing the engine keeps.
        break;
    }
  }
  return parts;
}

/** The provider's options on a part as metadata made by `by`: its namespaces that hold anything, none when none does. */
function metadataOf(options: ProviderOptions | undefined, by: Producer | undefined): { providerMetadata?: ProviderMetadata } {
  if (!options || !by) return {};
  const data: Record<string, Record<string, unknown>> = {};
  for (const [namespace, value] of Object.entries(options)) {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) continue;
    const held = Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined && v !== null));
    if (Object.keys(held).length > 0) data[namespace] = held;
  }
  return Object.keys(data).length > 0 ? { providerMetadata: { provider: by.provider, model: by.model, data } } : {};
}

function fromToolContent(content: ToolModelMessage['content']): Part[] {
  const parts: Part[] = [];
  for (const part of content) {
    if (part.type === 'tool-result') parts.push(fromModelToolResult(part));
  }
  return parts;
}

function fromModelToolResult(part: ModelToolResultPart): ToolResultPart {
  const base = { type: 'tool-result' as const, toolCallId: part.toolCallId, toolName: part.toolName };
  const output = part.output;
  switch (output.type) {
    case 'text':
    case 'json':
      return { ...base, output: output.value };
    case 'error-text':
    case 'error-json':
      return { ...base, output: output.value, isError: true };
    case 'execution-denied':
      return { ...base, output: `Tool execution denied${output.reason ? `: ${output.reason}` : '.'}`, isError: true };
    case 'content':
      return { ...base, output: output.value.map(describeContentItem).join('\n') };
  }
}

function describeContentItem(item: Extract<ModelToolOutput, { type: 'content' }>['value'][number]): string {
  if (item.type === 'text') return item.text;
  if ('mediaType' in item && typeof item.mediaType === 'string') {
    const name = 'filename' in item && typeof item.filename === 'string' ? item.filename : 'unnamed';
    return `[attachment ${name} (${item.mediaType}) not included]`;
  }
  return `[${item.type} content not included]`;
}

function fromModelFile(mediaType: string, data: unknown, filename: string | undefined): FilePart {
  const size = byteSize(data);
  return {
    type: 'file',
    mediaType,
    ...(filename !== undefined ? { name: filename } : {}),
    ...(size !== undefined ? { size } : {}),
  };
}

/** The size of file data when it is at hand as bytes; base64, URLs and references stay unknown. */
function byteSize(data: unknown): number | undefined {
  if (data instanceof Uint8Array) return data.byteLength;
  if (data instanceof ArrayBuffer) return data.byteLength;
  if (typeof data === 'object' && data !== null && 'type' in data && data.type === 'data' && 'data' in data) {
    return data.data instanceof Uint8Array ? data.data.byteLength : undefined;
  }
  return undefined;
}
