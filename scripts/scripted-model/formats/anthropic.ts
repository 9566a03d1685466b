/**
 * Anthropic's Messages API as the stand-in serves it: `POST /v1/messages` (streamed as Anthropic's
 * named events, tool use included, or whole), the Models API, Anthropic's error bodies (its overflow
 * wording among them) and its prompt caching (`caching/anthropic-cache.ts`), reported as
 * `cache_read_input_tokens` and `cache_creation_input_tokens` beside `input_tokens`, which counts only
 * the rest. The key is asked for in `x-api-key`, any value accepted.
 *
 * With thinking enabled (`thinking.type` `enabled` or `adaptive`), each answer starts with a signed
 * thinking block, and a request is refused as Anthropic refuses it when a thinking block comes back
 * with a signature other than the one its model gave, or when the assistant message whose tool use
 * the request's last tool results answer does not start with its thinking block.
 */
import { z } from 'zod';
import { applyAnthropicCache, type AnthropicCacheState, type CacheTtl, type PromptBlock } from '../caching/anthropic-cache';
import { pieces, type ChatCompletionRequest, type ChatMessage } from '../wire';
import {
  hasBearer,
  header,
  namedFrame,
  type Accounted,
  type Answer,
  type CompletionApi,
  type ModelCall,
  type Refusal,
  type WireFormat,
} from './format';
import { formatPath, type CacheHolder } from './openai-chat';
import type { TokenRule } from '../tokens';
import { signature, signedBy } from './signatures';

const cacheControl = z.looseObject({ type: z.literal('ephemeral'), ttl: z.enum(['5m', '1h']).optional() });

const block = z.looseObject({
  type: z.string(),
  text: z.string().optional(),
  id: z.string().optional(),
  name: z.string().optional(),
  input: z.unknown().optional(),
  tool_use_id: z.string().optional(),
  content: z.union([z.string(), z.array(z.looseObject({ type: z.string(), text: z.string().optional() }))]).optional(),
  thinking: z.string().optional(),
  signature: z.string().optional(),
  cache_control: cacheControl.nullish(),
});
type Block = z.infer<typeof block>;

const tool = z.looseObject({
  name: z.string().min(1),
  description: z.string().optional(),
  input_schema: z.record(z.string(), z.unknown()).optional(),
  cache_control: cacheControl.nullish(),
});

export const messagesRequestSchema = z.looseObject({
  model: z.string().min(1),
  max_tokens: z.number().int().positive(),
  system: z.union([z.string(), z.array(block)]).optional(),
  messages: z.array(z.looseObject({ role: z.enum(['user', 'assistant']), content: z.union([z.string(), z.array(block)]) })).min(1),
  tools: z.array(tool).optional(),
  tool_choice: z.looseObject({ type: z.enum(['auto', 'any', 'tool', 'none']), name: z.string().optional() }).optional(),
  stream: z.boolean().optional(),
  thinking: z.unknown().optional(),
  /** Automatic caching: a breakpoint on the last block of the request. */
  cache_control: cacheControl.nullish(),
});
type MessagesRequest = z.infer<typeof messagesRequestSchema>;

/** Anthropic's error body. */
function anthropicError(status: number, type: string, message: string): Refusal {
  return { status, body: { type: 'error', error: { type, message }, request_id: 'req_offline_scripted_model' } };
}

const STATUS_ERRORS: Record<number, [string, string]> = {
  400: ['invalid_request_error', 'Request failed (scripted by the offline scripted model).'],
  401: ['authentication_error', 'invalid x-api-key'],
  403: ['permission_error', 'Your API key does not have permission to use the specified resource.'],
  404: ['not_found_error', 'The requested resource could not be found.'],
  413: ['request_too_large', 'Request exceeds the maximum allowed number of bytes.'],
  429: ['rate_limit_error', 'Number of request tokens has exceeded your per-minute rate limit (scripted by the offline scripted model).'],
  500: ['api_error', 'Internal server error'],
  529: ['overloaded_error', 'Overloaded'],
};

/** The text of a content block as it is counted. */
function blockText(b: Block): string {
  switch (b.type) {
    case 'text':
      return b.text ?? '';
    case 'tool_use':
      return `${b.name ?? ''}${JSON.stringify(b.input ?? {})}`;
    case 'tool_result':
      return typeof b.content === 'string' ? b.content : (b.content ?? []).map((part) => part.text ?? '').join('\n');
    case 'thinking':
      return b.thinking ?? '';
    default:
      return JSON.stringify(b);
  }
}

function withoutMarker<T extends { cache_control?: unknown }>(value: T): Omit<T, 'cache_control'> {
  const { cache_control: _marker, ...rest } = value;
  return rest;
}

const asBlocks = (content: string | Block[]): Block[] => (typeof content === 'string' ? [{ type: 'text', text: content }] : content);
const ttlOf = (marker: z.infer<typeof cacheControl> | null | undefined): CacheTtl | undefined => (marker ? (marker.ttl ?? '5m') : undefined);

/**
 * The prompt's blocks in the order the model reads them (the tool-use prompt the API adds when tools
 * are offered, tools, system, messages), each counted by Anthropic's rule with its framing. The tool
 * choice and the thinking settings are part of what the messages' cache is keyed on: changing them
 * invalidates the messages, not the tools or the system prompt.
 */
export function promptBlocks(request: MessagesRequest, rule: TokenRule): PromptBlock[] {
  const blocks: PromptBlock[] = [];
  const push = (key: string, tokens: number, marker: CacheTtl | undefined): void => {
    blocks.push({ key, tokens, ...(marker ? { breakpoint: marker } : {}) });
  };
  if ((request.tools ?? []).length > 0) {
    const hidden = rule.toolUsePrompt(request.tool_choice?.type);
    push(`tool-use-prompt:${hidden}`, hidden, undefined);
  }
  for (const t of request.tools ?? []) {
    const definition = JSON.stringify(withoutMarker(t));
    push(`tool:${definition}`, rule.count(definition), ttlOf(t.cache_control));
  }
  for (const b of request.system === undefined ? [] : asBlocks(request.system))
    push(`system:${JSON.stringify(withoutMarker(b))}`, rule.count(blockText(b)), ttlOf(b.cache_control));
  const settings = JSON.stringify({ tool_choice: request.tool_choice ?? null, thinking: request.thinking ?? null });
  request.messages.forEach((message, m) => {
    asBlocks(message.content).forEach((b, i) => {
      const framing =
        (i === 0 ? rule.perMessage : 0) + (b.type === 'tool_use' ? rule.perToolCall : b.type === 'tool_result' ? rule.perToolResult : 0);
      push(
        `${m === 0 ? settings : ''}${message.role}:${JSON.stringify(withoutMarker(b))}`,
        framing + rule.count(blockText(b)),
        ttlOf(b.cache_control),
      );
    });
  });
  const automatic = ttlOf(request.cache_control);
  const last = blocks.at(-1);
  if (automatic && last && !last.breakpoint) blocks[blocks.length - 1] = { ...last, breakpoint: automatic };
  return blocks;
}

/** The request as Chat Completions: tool results become tool messages, before the user's text. */
function toChat(request: MessagesRequest): ChatCompletionRequest {
  const messages: ChatMessage[] = [];
  if (request.system !== undefined) messages.push({ role: 'system', content: asBlocks(request.system).map(blockText).join('\n') });
  for (const message of request.messages) {
    const blocks = asBlocks(message.content);
    const text = blocks
      .filter((b) => b.type === 'text')
      .map((b) => b.text ?? '')
      .join('\n');
    if (message.role === 'assistant') {
      const calls = blocks
        .filter((b) => b.type === 'tool_use')
        .map((b) => ({ id: b.id ?? '', type: 'function' as const, function: { name: b.name ?? '', arguments: JSON.stringify(b.input ?? {}) } }));
      messages.push({ role: 'assistant', content: text || null, ...(calls.length > 0 ? { tool_calls: calls } : {}) });
      continue;
    }
    for (const b of blocks) if (b.type === 'tool_result') messages.push({ role: 'tool', tool_call_id: b.tool_use_id ?? '', content: blockText(b) });
    if (text || !blocks.some((b) => b.type === 'tool_result')) messages.push({ role: 'user', content: text });
  }
  const tools = (request.tools ?? []).map((t) => ({
    type: 'function' as const,
    function: {
      name: t.name,
      ...(t.description !== undefined ? { description: t.description } : {}),
      ...(t.input_schema ? { parameters: t.input_schema } : {}),
    },
  }));
  const choice = request.tool_choice;
  const toolChoice =
    choice === undefined
      ? undefined
      : choice.type === 'tool'
        ? { type: 'function' as const, function: { name: choice.name ?? '' } }
        : ({ auto: 'auto', any: 'required', none: 'none' } as const)[choice.type];
  return {
    model: request.model,
    messages,
    ...(tools.length > 0 ? { tools } : {}),
    ...(toolChoice !== undefined ? { tool_choice: toolChoice } : {}),
    max_tokens: request.max_tokens,
  };
}

const STOP_REASONS: Record<Answer['finishReason'], string> = { stop: 'end_turn', tool_calls: 'tool_use', length: 'max_tokens' };

function usageJson(answer: Answer): Record<string, unknown> {
  const { total, cacheRead, cacheWrite5m, cacheWrite1h } = answer.prompt;
  return {
    input_tokens: total - cacheRead - cacheWrite5m - cacheWrite1h,
    cache_creation_input_tokens: cacheWrite5m + cacheWrite1h,
    cache_read_input_tokens: cacheRead,
    cache_creation: { ephemeral_5m_input_tokens: cacheWrite5m, ephemeral_1h_input_tokens: cacheWrite1h },
    output_tokens: answer.outputTokens,
    service_tier: 'standard',
  };
}

/** The thinking the stand-in does before each answer when thinking is enabled. */
export const THINKING = 'Weighing what the request asks for before answering.';

/** Whether the request enables thinking, so that each answer starts with a signed thinking block. */
export function thinks(request: MessagesRequest): boolean {
  const type = (request.thinking as { type?: unknown } | undefined)?.type;
  return type === 'enabled' || type === 'adaptive';
}

/** The signature `model` gives its thinking block. */
export function thinkingSignature(model: string, thinking: string): string {
  return signature('anthropic', model, thinking);
}

/** Anthropic's 400 for the thinking a request gives back wrong or leaves out; undefined when it has none to refuse. */
export function thinkingRefusal(request: MessagesRequest): Refusal | undefined {
  if (!thinks(request)) return undefined;
  const refuse = (message: string) => anthropicError(400, 'invalid_request_error', message);
  for (const [m, message] of request.messages.entries()) {
    for (const [b, item] of asBlocks(message.content).entries()) {
      if (item.type === 'thinking' && !signedBy(item.signature ?? '', 'anthropic', request.model, item.thinking ?? ''))
        return refuse(`messages.${m}.content.${b}: Invalid \`signature\` in \`thinking\` block`);
    }
  }
  const last = request.messages.at(-1);
  const answers = last?.role === 'user' && asBlocks(last.content).some((b) => b.type === 'tool_result');
  const m = request.messages.length - 2;
  const assistant = request.messages[m];
  if (!answers || assistant?.role !== 'assistant') return undefined;
  const first = asBlocks(assistant.content)[0];
  if (!first || first.type === 'thinking' || first.type === 'redacted_thinking') return undefined;
  return refuse(
    `messages.${m}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${first.type}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block (preceeding the lastmost set of \`tool_use\` and \`tool_result\` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable \`thinking\`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking`,
  );
}

function contentJson(answer: Answer, thinking: boolean, model: string): Record<string, unknown>[] {
  return [
    ...(thinking ? [{ type: 'thinking', thinking: THINKING, signature: thinkingSignature(model, THINKING) }] : []),
    ...(answer.text !== undefined ? [{ type: 'text', text: answer.text }] : []),
    ...answer.toolCalls.map((call) => ({ type: 'tool_use', id: call.id, name: call.name, input: JSON.parse(call.arguments) as unknown })),
  ];
}

/**
 * Anthropic's stream: `message_start` with the prompt's usage, a `ping`, each content block started,
 * its text or its input's JSON in pieces, and stopped, then `message_delta` with the stop reason and
 * the output tokens, and `message_stop`.
 */
function streamFrames(answer: Answer, thinking: boolean, model: string): string[] {
  const frames: string[] = [];
  const emit = (type: string, payload: Record<string, unknown> = {}): void => {
    frames.push(namedFrame(type, { type, ...payload }));
  };
  emit('message_start', {
    message: {
      id: `msg_${answer.id}`,
      type: 'message',
      role: 'assistant',
      model: answer.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { ...usageJson(answer), output_tokens: 1 },
    },
  });
  emit('ping');
  let index = 0;
  if (thinking) {
    emit('content_block_start', { index, content_block: { type: 'thinking', thinking: '', signature: '' } });
    for (const piece of pieces(THINKING, 3)) emit('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: piece } });
    emit('content_block_delta', { index, delta: { type: 'signature_delta', signature: thinkingSignature(model, THINKING) } });
    emit('content_block_stop', { index });
    index++;
  }
  if (answer.text !== undefined) {
    emit('content_block_start', { index, content_block: { type: 'text', text: '' } });
    for (const text of pieces(answer.text, 3)) emit('content_block_delta', { index, delta: { type: 'text_delta', text } });
    emit('content_block_stop', { index });
    index++;
  }
  for (const call of answer.toolCalls) {
    emit('content_block_start', { index, content_block: { type: 'tool_use', id: call.id, name: call.name, input: {} } });
    for (const partial of pieces(call.arguments, 3))
      emit('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: partial } });
    emit('content_block_stop', { index });
    index++;
  }
  emit('message_delta', {
    delta: { stop_reason: STOP_REASONS[answer.finishReason], stop_sequence: null },
    usage: { output_tokens: answer.outputTokens },
  });
  emit('message_stop');
  return frames;
}

function messagesApi(cache: CacheHolder<AnthropicCacheState>, rule: TokenRule): CompletionApi {
  return {
    parse(json): ModelCall | Refusal {
      const parsed = messagesRequestSchema.safeParse(json);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        return anthropicError(
          400,
          'invalid_request_error',
          `${issue ? formatPath(issue.path) || 'body' : 'body'}: ${issue?.message ?? 'invalid request'}`,
        );
      }
      const request = parsed.data;
      const refused = thinkingRefusal(request);
      if (refused) return refused;
      return { model: request.model, chat: toChat(request), stream: request.stream === true, maxTokens: request.max_tokens, native: request };
    },
    account(call, now): Accounted | Refusal {
      const result = applyAnthropicCache(cache.state, { model: call.model, blocks: promptBlocks(call.native as MessagesRequest, rule) }, now);
      if ('problem' in result) return anthropicError(400, 'invalid_request_error', result.problem);
      const { state, total, read, write5m, write1h } = result.outcome;
      return {
        prompt: { total, cacheRead: read, cacheWrite5m: write5m, cacheWrite1h: write1h },
        commit: () => (cache.state = new Map([...cache.state, ...state])),
      };
    },
    frames: (answer, call) => streamFrames(answer, thinks(call.native as MessagesRequest), call.model),
    json: (answer, call) => ({
      id: `msg_${answer.id}`,
      type: 'message',
      role: 'assistant',
      model: answer.model,
      content: contentJson(answer, thinks(call.native as MessagesRequest), call.model),
      stop_reason: STOP_REASONS[answer.finishReason],
      stop_sequence: null,
      usage: usageJson(answer),
    }),
    countOutput: (text) => rule.count(text),
    toolCallId: (n) => `toolu_offline_scripted_${n}`,
  };
}

export function anthropicFormat(rule: TokenRule): WireFormat {
  const cache: CacheHolder<AnthropicCacheState> = { state: new Map() };
  const messages = messagesApi(cache, rule);
  return {
    name: 'anthropic',
    root: '/v1',
    route(method, path) {
      if (method === 'POST' && path === '/v1/messages') return { kind: 'completion', api: messages };
      if (method === 'GET' && path === '/v1/models') return { kind: 'models' };
      if (method === 'GET' && path.startsWith('/v1/models/')) return { kind: 'model', id: decodeURIComponent(path.slice('/v1/models/'.length)) };
      return undefined;
    },
    authorized: (headers) => Boolean(header(headers, 'x-api-key')) || hasBearer(headers),
    refuse: {
      invalid: (message) => anthropicError(400, 'invalid_request_error', message),
      unauthorized: () => anthropicError(401, 'authentication_error', 'x-api-key header is required'),
      unknownModel: (model) => anthropicError(404, 'not_found_error', `model: ${model}`),
      overflow: (window, promptTokens, maxTokens) =>
        promptTokens > window
          ? anthropicError(400, 'invalid_request_error', `prompt is too long: ${promptTokens} tokens > ${window} maximum`)
          : anthropicError(
              400,
              'invalid_request_error',
              `input length and \`max_tokens\` exceed context limit: ${promptTokens} + ${maxTokens} > ${window}, decrease input length or \`max_tokens\` and try again`,
            ),
      status: (status) => {
        const [type, message] =
          STATUS_ERRORS[status] ??
          (status >= 500 ? ['api_error', `Server error ${status}.`] : ['invalid_request_error', `Request failed with status ${status}.`]);
        return anthropicError(status, type, message);
      },
    },
    listModels: (models) => {
      const data = models.map(describe);
      return { data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null };
    },
    describeModel: describe,
    reset: () => {
      cache.state = new Map();
    },
  };
}

function describe(model: { id: string; name?: string; window: number; maxOutputTokens?: number }) {
  return {
    type: 'model',
    id: model.id,
    display_name: model.name ?? `Offline scripted model ${model.id}`,
    created_at: '2025-01-01T00:00:00Z',
    max_input_tokens: model.window,
    max_tokens: model.maxOutputTokens ?? 8_192,
  };
}
