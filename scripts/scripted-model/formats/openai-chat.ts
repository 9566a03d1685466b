/**
 * OpenAI's Chat Completions (`POST /v1/chat/completions`), as OpenAI, Ollama, LM Studio and vLLM
 * serve it, with OpenAI's automatic prompt caching: the part of the prompt read from the cache is
 * reported as `usage.prompt_tokens_details.cached_tokens`, within `prompt_tokens`.
 */
import { z } from 'zod';
import { applyOpenAICache, type OpenAICacheState } from '../caching/openai-cache';
import {
  chatCompletionRequestSchema,
  completionObject,
  chatPromptPieces,
  invalidRequest,
  streamEvents,
  type ChatCompletionRequest,
  type Completion,
} from '../wire';
import { dataFrame, type Accounted, type Answer, type CompletionApi, type ModelCall, type Refusal } from './format';
import type { TokenRule } from '../tokens';

/**
 * The prompt as token ids in the order the model reads them (`chatPromptPieces`): each piece's hash,
 * so that the cache compares prompts token by token.
 */
export function chatPromptTokens(request: Pick<ChatCompletionRequest, 'messages' | 'tools'>, rule: TokenRule): number[] {
  return chatPromptPieces(request, rule).map(pieceId);
}

/** FNV-1a of a piece: the same piece, the same id. */
function pieceId(piece: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < piece.length; i++) hash = Math.imul(hash ^ piece.charCodeAt(i), 0x01000193);
  return hash >>> 0;
}

/** The fields OpenAI's prompt caching reads from a request. */
const cachingFields = z.looseObject({
  prompt_cache_key: z.string().nullish(),
  prompt_cache_retention: z.enum(['in_memory', '24h']).nullish(),
});

/** A cache shared by the APIs of one stand-in. */
export interface CacheHolder<T> {
  state: T;
}

export function chatCompletionsApi(cache: CacheHolder<OpenAICacheState>, rule: TokenRule): CompletionApi {
  return {
    parse(json): ModelCall | Refusal {
      const parsed = chatCompletionRequestSchema.safeParse(json);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        const param = issue ? formatPath(issue.path) : null;
        return { status: 400, body: invalidRequest(`Invalid request body: ${z.prettifyError(parsed.error)}`, param || null) };
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
    account(call, now): Accounted {
      const request = call.native as ChatCompletionRequest;
      const fields = cachingFields.safeParse(request);
      const options = fields.success ? fields.data : {};
      const outcome = applyOpenAICache(
        cache.state,
        {
          model: call.model,
          tokens: chatPromptTokens(call.chat, rule),
          ...(options.prompt_cache_key ? { cacheKey: options.prompt_cache_key } : {}),
          ...(options.prompt_cache_retention ? { retention: options.prompt_cache_retention } : {}),
        },
        now,
      );
      return {
        prompt: { total: outcome.total, cacheRead: outcome.cached, cacheWrite5m: 0, cacheWrite1h: 0 },
        commit: () => (cache.state = new Map([...cache.state, ...outcome.state])),
      };
    },
    frames(answer, call) {
      const request = call.native as ChatCompletionRequest;
      return streamEvents(toCompletion(answer), request.stream_options?.include_usage === true).map(dataFrame);
    },
    end: 'data: [DONE]\n\n',
    json: (answer) => completionObject(toCompletion(answer)),
    countOutput: (text) => rule.count(text),
  };
}

function toCompletion(answer: Answer): Completion {
  const { total, cacheRead } = answer.prompt;
  return {
    id: answer.id,
    created: answer.created,
    model: answer.model,
    text: answer.text,
    toolCalls: answer.toolCalls,
    finishReason: answer.finishReason,
    usage: {
      prompt_tokens: total,
      completion_tokens: answer.outputTokens,
      total_tokens: total + answer.outputTokens,
      prompt_tokens_details: { cached_tokens: cacheRead },
    },
  };
}

export function formatPath(path: readonly PropertyKey[]): string {
  return path.map((key, i) => (typeof key === 'number' ? `[${key}]` : `${i > 0 ? '.' : ''}${String(key)}`)).join('');
}
