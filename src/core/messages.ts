import { everyValueOf } from './values';

/**
 * The engine's own message model. It mirrors the AI SDK's `ModelMessage` closely enough that the
 * adapters in `src/llm` convert both ways without loss, and adds what the engine needs: a stable id
 * per message (compaction entries refer to messages by id) and a marker for summaries.
 */

/** Every role a message may have. */
export const ROLES = ['system', 'user', 'assistant', 'tool'] as const;
export type Role = (typeof ROLES)[number];

/**
 * What a provider attached to a part of its answer for its own use, to be given back with the part:
 * Gemini's thought signatures, the ids and encrypted content of OpenAI's reasoning items, the
 * signatures of Claude's thinking blocks and its redacted thinking. Only the model that made it can
 * read it, so it is sent back to that provider and model alone (see {@link sameProducer}).
 */
export interface ProviderMetadata {
  /** The provider that made it, as its AI SDK package names itself (`anthropic.messages`, `google.generative-ai`). */
  readonly provider: string;
  /** The model that made it, as the request named it. */
  readonly model: string;
  /** The metadata by the package's namespace (`anthropic`, `google`, `openai`, `openrouter`), as the provider gave it. */
  readonly data: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
}

/** A provider and model a request goes to, or that made a part. */
export interface Producer {
  readonly provider: string;
  readonly model: string;
}

/** Whether `metadata` was made by `producer`, and so may be sent to it. */
export function sameProducer(metadata: ProviderMetadata, producer: Producer | undefined): boolean {
  return producer !== undefined && metadata.provider === producer.provider && metadata.model === producer.model;
}

export interface TextPart {
  readonly type: 'text';
  readonly text: string;
  readonly providerMetadata?: ProviderMetadata;
}

/**
 * Hidden reasoning some models return; it is sent back to them and so takes room in the window. Its
 * text may be empty when the provider gave it only in encrypted or redacted form (its metadata).
 */
export interface ReasoningPart {
  readonly type: 'reasoning';
  readonly text: string;
  readonly providerMetadata?: ProviderMetadata;
}

export interface ToolCallPart {
  readonly type: 'tool-call';
  readonly toolCallId: string;
  readonly toolName: string;
  /** The call's arguments, as the model sent them (usually a JSON object). */
  readonly input: unknown;
  readonly providerMetadata?: ProviderMetadata;
}

export interface ToolResultPart {
  readonly type: 'tool-result';
  readonly toolCallId: string;
  readonly toolName: string;
  /** The result as given to the model: a string, or any JSON value. */
  readonly output: unknown;
  /** True when the tool failed; the output then holds the error. */
  readonly isError?: boolean;
}

/** An image or other binary attachment. Only its description is kept here, never its bytes. */
export interface FilePart {
  readonly type: 'file';
  readonly mediaType: string;
  readonly name?: string;
  /** Size in bytes, when known. */
  readonly size?: number;
}

export type Part = TextPart | ReasoningPart | ToolCallPart | ToolResultPart | FilePart;

/** Every `type` of `Part`: the list fails to compile when it leaves one out or names another. */
export const PART_TYPES = everyValueOf<Part['type']>()(['text', 'reasoning', 'tool-call', 'tool-result', 'file']);
export type PartType = (typeof PART_TYPES)[number];

export interface Message {
  /** Unique within a conversation; compaction entries refer to messages by this id. */
  readonly id: string;
  readonly role: Role;
  readonly content: readonly Part[];
  /** Set on the message that carries a compaction summary into the model's view. */
  readonly summaryOf?: string;
  /** Set on an answer whose stream ended without a finish reason: what arrived, possibly cut short. */
  readonly incomplete?: true;
}

export function text(textContent: string): TextPart {
  return { type: 'text', text: textContent };
}

/** All the plain text of a message (text and reasoning parts), joined by blank lines. */
export function messageText(message: Message): string {
  const texts: string[] = [];
  for (const part of message.content) {
    if (part.type === 'text' || part.type === 'reasoning') texts.push(part.text);
  }
  return texts.join('\n\n');
}

export function toolCalls(message: Message): ToolCallPart[] {
  return message.content.filter((p): p is ToolCallPart => p.type === 'tool-call');
}

export function toolResults(message: Message): ToolResultPart[] {
  return message.content.filter((p): p is ToolResultPart => p.type === 'tool-result');
}

/** A tool output as text: strings as they are, anything else as JSON. */
export function stringifyOutput(output: unknown): string {
  if (typeof output === 'string') return output;
  if (output === undefined) return '';
  try {
    return JSON.stringify(output) ?? String(output);
  } catch {
    return String(output);
  }
}
