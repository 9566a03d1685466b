/**
 * Conversions between the engine's messages (`src/core/messages.ts`) and the AI SDK's
 * `ModelMessage`. Nothing is merged or reordered: one engine message becomes one model message and
 * back, so compaction entries that refer to message ids stay meaningful.
 *
 * The AI SDK rejects `role: 'system'` inside `messages` unless the call sets
 * `allowSystemInMessages: true`; callers that pass converted system messages must set it.
 */
import type { AssistantModelMessage, JSONValue, ModelMessage, ToolModelMessage, ToolResultPart as ModelToolResultPart } from 'ai';
import type { FilePart, Message, Part, TextPart, ToolResultPart } from '../core/messages';
import { stringifyOutput } from '../core/messages';

type ModelToolOutput = ModelToolResultPart['output'];
type AssistantPart = Exclude<AssistantModelMessage['content'], string>[number];
type UserPart = { type: 'text'; text: string };

/** Engine messages as the AI SDK's model messages, in the same order, one for one. */
export function toModelMessages(messages: readonly Message[]): ModelMessage[] {
  return messages.map(toModelMessage);
}

function toModelMessage(message: Message): ModelMessage {
  switch (message.role) {
    case 'system':
      // A system message carries text only; anything else in it has no system-role equivalent.
      return { role: 'system', content: textOf(message.content) };
    case 'user':
      return { role: 'user', content: message.content.map(toUserPart) };
    case 'assistant':
      return { role: 'assistant', content: message.content.map(toAssistantPart) };
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

function toAssistantPart(part: Part): AssistantPart {
  switch (part.type) {
    case 'text':
      return { type: 'text', text: part.text };
    case 'reasoning':
      return { type: 'reasoning', text: part.text };
    case 'tool-call':
      return { type: 'tool-call', toolCallId: part.toolCallId, toolName: part.toolName, input: part.input };
    case 'tool-result':
      // Results of provider-executed tools sit in the assistant message itself.
      return toModelToolResult(part);
    case 'file':
      return { type: 'text', text: filePlaceholder(part) };
  }
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
 * dropped, and a message left with no parts is dropped with them.
 */
export function fromResponseMessages(messages: readonly (AssistantModelMessage | ToolModelMessage)[], newId: () => string): Message[] {
  const out: Message[] = [];
  for (const message of messages) {
    const content = message.role === 'assistant' ? fromAssistantContent(message.content) : fromToolContent(message.content);
    if (content.length > 0) out.push({ id: newId(), role: message.role, content });
  }
  return out;
}

function fromAssistantContent(content: AssistantModelMessage['content']): Part[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  const parts: Part[] = [];
  for (const part of content) {
    switch (part.type) {
      case 'text':
        parts.push({ type: 'text', text: part.text });
        break;
      case 'reasoning':
        parts.push({ type: 'reasoning', text: part.text });
        break;
      case 'tool-call':
        parts.push({ type: 'tool-call', toolCallId: part.toolCallId, toolName: part.toolName, input: part.input });
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
