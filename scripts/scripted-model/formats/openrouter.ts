/**
 * OpenRouter's API as the stand-in serves it: Chat Completions under `/api/v1`, the model list with
 * `context_length` and `top_provider`, OpenRouter's error bodies (its overflow wording among them),
 * and its usage, which always comes in the stream's last chunk: `prompt_tokens` counts every prompt
 * token, `prompt_tokens_details` the ones read from (`cached_tokens`) and written to
 * (`cache_write_tokens`) the cache, and `cost` what the request cost.
 *
 * OpenRouter passes a request on to a provider of the model, whose caching applies: Anthropic's for
 * `anthropic/…` models, with the `cache_control` markers of the content parts (or of a whole
 * message, for its last part, or of the request, for its last part) as breakpoints; Gemini's implicit
 * caching for `google/…`; OpenAI's automatic caching for every other model. The provider preferences
 * a request sets (`provider`) are kept in the request log; the stand-in has one provider per model.
 * The key is asked for as a bearer token, any value accepted.
 */
import type { AnthropicCacheState, CacheTtl, PromptBlock } from '../caching/anthropic-cache';
import { applyAnthropicCache } from '../caching/anthropic-cache';
import { applyGeminiCache, type GeminiCacheState } from '../caching/gemini-cache';
import { applyOpenAICache, type OpenAICacheState } from '../caching/openai-cache';
import { tokenRule, type TokenRule } from '../tokens';
import { chatCompletionRequestSchema, completionObject, streamEvents, type ChatCompletionRequest, type Completion } from '../wire';
import { dataFrame, hasBearer, type Accounted, type Answer, type CompletionApi, type ModelCall, type Refusal, type WireFormat } from './format';
import { chatPromptTokens, formatPath, type CacheHolder } from './openai-chat';

function routerError(code: number, message: string, metadata?: Record<string, unknown>): Refusal {
  return { status: code, body: { error: { message, code, ...(metadata ? { metadata } : {}) } } };
}

const STATUS_MESSAGES: Record<number, string> = {
  401: 'No auth credentials found',
  402: 'Insufficient credits. Add more using https://openrouter.ai/credits',
  429: 'Rate limit exceeded (scripted by the offline scripted model).',
  500: 'Internal Server Error',
  502: 'Provider returned error',
  503: 'No available providers for this request (scripted by the offline scripted model).',
};

type Marker = { type?: unknown; ttl?: unknown } | null | undefined;
const ttlOf = (marker: Marker): CacheTtl | undefined => (marker && typeof marker === 'object' ? (marker.ttl === '1h' ? '1h' : '5m') : undefined);
const withoutMarker = (value: object): object => Object.fromEntries(Object.entries(value).filter(([key]) => key !== 'cache_control'));

/** A Chat Completions request as Anthropic's content blocks, with the breakpoints its markers set. */
export function chatBlocks(request: ChatCompletionRequest, rule: TokenRule): PromptBlock[] {
  const blocks: PromptBlock[] = [];
  const push = (key: string, text: string, marker: Marker, framing = 0): void => {
    const ttl = ttlOf(marker);
    blocks.push({ key, tokens: framing + rule.count(text), ...(ttl ? { breakpoint: ttl } : {}) });
  };
  const hidden = (request.tools ?? []).length > 0 ? rule.toolUsePrompt(anthropicChoice(request.tool_choice)) : 0;
  if (hidden > 0) blocks.push({ key: `tool-use-prompt:${hidden}`, tokens: hidden });
  for (const tool of request.tools ?? []) {
    const definition = JSON.stringify(withoutMarker(tool));
    push(`tool:${definition}`, definition, (tool as { cache_control?: Marker }).cache_control);
  }
  for (const message of request.messages) {
    const start = blocks.length;
    const content = message.content;
    // The message's framing goes with its first block; a tool result's with its content.
    const framing = (): number => (blocks.length === start ? rule.perMessage + (message.role === 'tool' ? rule.perToolResult : 0) : 0);
    if (Array.isArray(content)) {
      for (const part of content)
        push(
          `${message.role}:${JSON.stringify(withoutMarker(part))}`,
          part.text ?? '',
          (part as { cache_control?: Marker }).cache_control,
          framing(),
        );
    } else if (typeof content === 'string' && content !== '') {
      push(`${message.role}:${content}`, content, undefined, framing());
    }
    if (message.role === 'assistant') {
      for (const call of message.tool_calls ?? [])
        push(`tool_use:${JSON.stringify(call)}`, `${call.function.name}${call.function.arguments}`, undefined, framing() + rule.perToolCall);
    }
    if (message.role === 'tool' && blocks.length > start)
      blocks[blocks.length - 1] = { ...blocks.at(-1)!, key: `tool_result:${message.tool_call_id}:${blocks.at(-1)!.key}` };
    const marker = ttlOf((message as { cache_control?: Marker }).cache_control);
    const last = blocks.at(-1);
    if (marker && last && blocks.length > start && !last.breakpoint) blocks[blocks.length - 1] = { ...last, breakpoint: marker };
  }
  const automatic = ttlOf((request as { cache_control?: Marker }).cache_control);
  const last = blocks.at(-1);
  if (automatic && last && !last.breakpoint) blocks[blocks.length - 1] = { ...last, breakpoint: automatic };
  return blocks;
}

/** A Chat Completions tool choice as Anthropic's: `required` is its `any`, a named function its `tool`. */
function anthropicChoice(choice: ChatCompletionRequest['tool_choice']): string | undefined {
  if (choice === undefined || choice === 'auto' || choice === 'none') return choice;
  return choice === 'required' ? 'any' : 'tool';
}

/** What the provider of a model is, by OpenRouter's model id (`anthropic/claude-…`). */
function upstream(model: string): 'anthropic' | 'google' | 'openai' {
  const author = model.split('/')[0]?.toLowerCase();
  return author === 'anthropic' ? 'anthropic' : author === 'google' ? 'google' : 'openai';
}

interface Caches {
  anthropic: AnthropicCacheState;
  google: GeminiCacheState;
  openai: OpenAICacheState;
}

function chatApi(cache: CacheHolder<Caches>, costOf: (answer: Answer) => number | undefined): CompletionApi {
  const rules = { anthropic: tokenRule('anthropic'), google: tokenRule('google'), openai: tokenRule('openai') };
  const countFor = (model: string): TokenRule => rules[upstream(model)];
  const toCompletion = (answer: Answer): Completion => {
    const { total, cacheRead, cacheWrite5m, cacheWrite1h } = answer.prompt;
    const cost = costOf(answer);
    return {
      id: `gen-${answer.id}`,
      created: answer.created,
      model: answer.model,
      text: answer.text,
      toolCalls: answer.toolCalls,
      finishReason: answer.finishReason,
      usage: {
        prompt_tokens: total,
        completion_tokens: answer.outputTokens,
        total_tokens: total + answer.outputTokens,
        prompt_tokens_details: { cached_tokens: cacheRead, cache_write_tokens: cacheWrite5m + cacheWrite1h },
        completion_tokens_details: { reasoning_tokens: 0 },
        ...(cost !== undefined ? { cost } : {}),
      },
    };
  };
  return {
    parse(json): ModelCall | Refusal {
      const parsed = chatCompletionRequestSchema.safeParse(json);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        return routerError(400, `Invalid request: ${issue ? `${formatPath(issue.path)} ${issue.message}` : 'invalid body'}`);
      }
      const request = parsed.data;
      return {
        model: request.model,
        chat: request,
        stream: request.stream === true,
        maxTokens: request.max_completion_tokens ?? request.max_tokens ?? 0,
        native: request,
      };
    },
    account(call, now): Accounted | Refusal {
      const request = call.native as ChatCompletionRequest;
      const counting = countFor(call.model);
      const family = upstream(call.model);
      if (family === 'anthropic') {
        const anthropicModel = call.model.slice(call.model.indexOf('/') + 1).replace(/\./g, '-');
        const result = applyAnthropicCache(cache.state.anthropic, { model: anthropicModel, blocks: chatBlocks(request, counting) }, now);
        if ('problem' in result)
          return routerError(400, 'Provider returned error', {
            raw: JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message: result.problem } }),
            provider_name: 'Anthropic',
          });
        const { state, total, read, write5m, write1h } = result.outcome;
        return {
          prompt: { total, cacheRead: read, cacheWrite5m: write5m, cacheWrite1h: write1h },
          commit: () => (cache.state.anthropic = new Map([...cache.state.anthropic, ...state])),
        };
      }
      if (family === 'google') {
        const parts = chatBlocks(request, counting).map(({ key, tokens }) => ({ key, tokens }));
        const outcome = applyGeminiCache(cache.state.google, { model: call.model.slice(call.model.indexOf('/') + 1), parts }, now);
        return {
          prompt: { total: outcome.total, cacheRead: outcome.cached, cacheWrite5m: 0, cacheWrite1h: 0 },
          commit: () => (cache.state.google = new Map([...cache.state.google, ...outcome.state])),
        };
      }
      const outcome = applyOpenAICache(cache.state.openai, { model: call.model, tokens: chatPromptTokens(request, counting) }, now);
      return {
        prompt: { total: outcome.total, cacheRead: outcome.cached, cacheWrite5m: 0, cacheWrite1h: 0 },
        commit: () => (cache.state.openai = new Map([...cache.state.openai, ...outcome.state])),
      };
    },
    frames: (answer) => streamEvents(toCompletion(answer), true).map(dataFrame),
    end: 'data: [DONE]\n\n',
    json: (answer) => completionObject(toCompletion(answer)),
    countOutput: (text, model) => countFor(model).count(text),
    toolCallId: (n) => `call_openrouter_${n}`,
  };
}

export function openRouterFormat(costOf: (answer: Answer) => number | undefined): WireFormat {
  const cache: CacheHolder<Caches> = { state: { anthropic: new Map(), google: new Map(), openai: new Map() } };
  const chat = chatApi(cache, costOf);
  const describe = (model: { id: string; name?: string; window: number; maxOutputTokens?: number }) => ({
    id: model.id,
    canonical_slug: model.id,
    name: model.name ?? `Offline scripted model ${model.id}`,
    created: 0,
    context_length: model.window,
    architecture: { input_modalities: ['text'], output_modalities: ['text'], tokenizer: 'Other' },
    top_provider: { context_length: model.window, max_completion_tokens: model.maxOutputTokens ?? null, is_moderated: false },
    supported_parameters: ['tools', 'tool_choice', 'max_tokens', 'temperature'],
  });
  return {
    name: 'openrouter',
    root: '/api/v1',
    route(method, path) {
      if (method === 'POST' && path === '/api/v1/chat/completions') return { kind: 'completion', api: chat };
      if (method === 'GET' && path === '/api/v1/models') return { kind: 'models' };
      return undefined;
    },
    authorized: (headers) => hasBearer(headers),
    refuse: {
      invalid: (message) => routerError(400, message),
      unauthorized: () => routerError(401, STATUS_MESSAGES[401]!),
      unknownModel: (model) => routerError(400, `${model} is not a valid model ID`),
      overflow: (window, promptTokens, maxTokens) =>
        routerError(
          400,
          `This endpoint's maximum context length is ${window} tokens. However, you requested about ${promptTokens + maxTokens} tokens (${promptTokens} of text input, ${maxTokens} in the output). Please reduce the length of either one, or use the "middle-out" transform to compress your prompt automatically.`,
          { provider_name: null },
        ),
      status: (status) => routerError(status, STATUS_MESSAGES[status] ?? `Request failed with status ${status}.`),
    },
    listModels: (models) => ({ data: models.map(describe) }),
    describeModel: describe,
    reset: () => {
      cache.state = { anthropic: new Map(), google: new Map(), openai: new Map() };
    },
  };
}
