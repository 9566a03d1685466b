/**
 * The scripted model's wire format: OpenAI's Chat Completions requests as clients send them, the
 * prompt-token count the server reports, and the bodies it answers with (completions, streamed
 * chunks, OpenAI-shaped errors).
 */
import { z } from 'zod';
import { renderedFunctions, type TokenRule } from './tokens';

/** Text and tool arguments are streamed in about this many pieces. */
const STREAM_PIECES = 3;

// ---------------------------------------------------------------------------------------------
// The request: Chat Completions as the AI SDK's OpenAI provider (and other clients) send it.
// Objects are loose because clients send fields this double has no use for (top_p, seed, user…).

const contentPartSchema = z.looseObject({ type: z.string(), text: z.string().optional() });
const contentSchema = z.union([z.string(), z.array(contentPartSchema)]);

const requestToolCallSchema = z.looseObject({
  id: z.string(),
  type: z.literal('function'),
  function: z.looseObject({ name: z.string(), arguments: z.string() }),
});

const messageSchema = z.discriminatedUnion('role', [
  z.looseObject({ role: z.literal('system'), content: contentSchema }),
  z.looseObject({ role: z.literal('developer'), content: contentSchema }),
  z.looseObject({ role: z.literal('user'), content: contentSchema }),
  z.looseObject({
    role: z.literal('assistant'),
    content: contentSchema.nullish(),
    tool_calls: z.array(requestToolCallSchema).optional(),
  }),
  z.looseObject({ role: z.literal('tool'), content: contentSchema, tool_call_id: z.string() }),
]);

const toolSchema = z.looseObject({
  type: z.literal('function'),
  function: z.looseObject({
    name: z.string().min(1),
    description: z.string().optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
    strict: z.boolean().nullish(),
  }),
});

const toolChoiceSchema = z.union([
  z.enum(['none', 'auto', 'required']),
  z.looseObject({ type: z.literal('function'), function: z.looseObject({ name: z.string() }) }),
]);

export const chatCompletionRequestSchema = z.looseObject({
  model: z.string().min(1),
  messages: z.array(messageSchema).min(1),
  tools: z.array(toolSchema).optional(),
  tool_choice: toolChoiceSchema.optional(),
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullish(),
  max_tokens: z.number().int().positive().nullish(),
  max_completion_tokens: z.number().int().positive().nullish(),
  temperature: z.number().min(0).max(2).nullish(),
});

/** A validated `POST /v1/chat/completions` body. */
export type ChatCompletionRequest = z.infer<typeof chatCompletionRequestSchema>;
export type ChatMessage = ChatCompletionRequest['messages'][number];

/** The text of a message's content: the string, or its text parts joined by newlines. */
export function contentText(content: ChatMessage['content']): string {
  if (content === null || content === undefined) return '';
  if (typeof content === 'string') return content;
  return content.flatMap((part) => (typeof part.text === 'string' ? [part.text] : [])).join('\n');
}

/**
 * The prompt as the tokens OpenAI's rule (`tokens.ts`) reads, in order: the tool definitions as
 * OpenAI renders them, then each message (its framing, its text, its tool calls), then the reply's
 * priming. Framing is a token no text makes.
 */
export function chatPromptPieces(request: Pick<ChatCompletionRequest, 'messages' | 'tools'>, rule: TokenRule): string[] {
  const out: string[] = [];
  const framing = (what: string, n: number): void => {
    for (let i = 0; i < n; i++) out.push(`\u0000${what}${i}`);
  };
  if (request.tools && request.tools.length > 0) out.push(...rule.tokens(renderedFunctions(request.tools.map((t) => t.function))));
  for (const message of request.messages) {
    framing(message.role, rule.perMessage);
    out.push(...rule.tokens(contentText(message.content)));
    if (message.role === 'assistant') {
      for (const call of message.tool_calls ?? []) {
        framing('call', rule.perToolCall);
        out.push(...rule.tokens(call.function.name), ...rule.tokens(call.function.arguments));
      }
    }
  }
  framing('reply', rule.perRequest);
  return out;
}

/** The prompt tokens the server reports for a Chat Completions request: `chatPromptPieces`, counted. */
export function countPromptTokens(request: Pick<ChatCompletionRequest, 'messages' | 'tools'>, rule: TokenRule): number {
  return chatPromptPieces(request, rule).length;
}

export interface Completion {
  readonly id: string;
  readonly created: number;
  readonly model: string;
  readonly text: string | undefined;
  readonly toolCalls: readonly { readonly id: string; readonly name: string; readonly arguments: string }[];
  readonly finishReason: 'stop' | 'tool_calls' | 'length';
  readonly usage: {
    prompt_tokens: number;
    completion_tokens: number;
    total_tokens: number;
    /** The part of the prompt read from the cache, as OpenAI reports it. */
    prompt_tokens_details?: { cached_tokens: number; cache_write_tokens?: number };
  } & Record<string, unknown>;
}

export interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

export function invalidRequest(message: string, param: string | null = null): OpenAIErrorBody {
  return { error: { message, type: 'invalid_request_error', param, code: null } };
}

export function serverError(message: string): OpenAIErrorBody {
  return { error: { message, type: 'server_error', param: null, code: null } };
}

/** OpenAI's answer to a prompt (plus requested output) that does not fit the window, word for word. */
export function contextLengthExceeded(window: number, promptTokens: number, maxTokens: number): OpenAIErrorBody {
  const message =
    maxTokens > 0
      ? `This model's maximum context length is ${window} tokens. However, you requested ${promptTokens + maxTokens} tokens (${promptTokens} in the messages, ${maxTokens} in the completion). Please reduce the length of the messages or completion.`
      : `This model's maximum context length is ${window} tokens. However, your messages resulted in ${promptTokens} tokens. Please reduce the length of the messages.`;
  return { error: { message, type: 'invalid_request_error', param: 'messages', code: 'context_length_exceeded' } };
}

/** OpenAI's usual body for a status, marked as scripted. */
export function defaultErrorBody(status: number): OpenAIErrorBody {
  const note = ' (scripted by the offline scripted model)';
  switch (status) {
    case 401:
      return { error: { message: `Incorrect API key provided.${note}`, type: 'invalid_request_error', param: null, code: 'invalid_api_key' } };
    case 429:
      return { error: { message: `Rate limit reached for requests.${note}`, type: 'requests', param: null, code: 'rate_limit_exceeded' } };
    case 500:
      return serverError(`The server had an error while processing your request. Sorry about that!${note}`);
    case 503:
      return serverError(`The engine is currently overloaded, please try again later.${note}`);
    default:
      return status >= 500 ? serverError(`Server error ${status}.${note}`) : invalidRequest(`Request failed with status ${status}.${note}`);
  }
}

/** Splits text into about `count` pieces of whole code points. */
export function pieces(text: string, count: number): string[] {
  const chars = Array.from(text);
  if (chars.length === 0) return [];
  const size = Math.ceil(chars.length / count);
  const out: string[] = [];
  for (let i = 0; i < chars.length; i += size) out.push(chars.slice(i, i + size).join(''));
  return out;
}

export function completionObject(completion: Completion): unknown {
  return {
    id: completion.id,
    object: 'chat.completion',
    created: completion.created,
    model: completion.model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: completion.text ?? null,
          refusal: null,
          ...(completion.toolCalls.length > 0
            ? {
                tool_calls: completion.toolCalls.map((call) => ({
                  id: call.id,
                  type: 'function',
                  function: { name: call.name, arguments: call.arguments },
                })),
              }
            : {}),
        },
        logprobs: null,
        finish_reason: completion.finishReason,
      },
    ],
    usage: completion.usage,
  };
}

/**
 * The `chat.completion.chunk` events OpenAI sends: the role first, content in pieces, each tool
 * call opened with its index, id and name and then its arguments in pieces, the finish reason,
 * and, when asked for, a last chunk with no choices and the usage.
 */
export function streamEvents(completion: Completion, includeUsage: boolean): unknown[] {
  const chunk = (delta: Record<string, unknown>, finishReason: string | null = null): unknown => ({
    id: completion.id,
    object: 'chat.completion.chunk',
    created: completion.created,
    model: completion.model,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    // OpenAI sends `usage: null` on every chunk but the last when usage is asked for.
    ...(includeUsage ? { usage: null } : {}),
  });
  const events: unknown[] = [chunk({ role: 'assistant', content: completion.text === undefined ? null : '', refusal: null })];
  for (const piece of pieces(completion.text ?? '', STREAM_PIECES)) events.push(chunk({ content: piece }));
  completion.toolCalls.forEach((call, index) => {
    events.push(chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }));
    for (const piece of pieces(call.arguments, STREAM_PIECES)) {
      events.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
    }
  });
  events.push(chunk({}, completion.finishReason));
  if (includeUsage) {
    events.push({
      id: completion.id,
      object: 'chat.completion.chunk',
      created: completion.created,
      model: completion.model,
      choices: [],
      usage: completion.usage,
    });
  }
  return events;
}
