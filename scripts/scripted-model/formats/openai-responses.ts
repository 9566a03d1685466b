/**
 * OpenAI's Responses API (`POST /v1/responses`), with OpenAI's automatic prompt caching: the part of
 * the input read from the cache is reported as `usage.input_tokens_details.cached_tokens`, within
 * `input_tokens`. Output items are stored unless the request says `store: false`, so a later request
 * may name one by `item_reference`, as the API allows.
 */
import { z } from 'zod';
import { applyOpenAICache, type OpenAICacheState } from '../caching/openai-cache';
import { contentText, invalidRequest, pieces, type ChatCompletionRequest, type ChatMessage } from '../wire';
import { namedFrame, type Accounted, type Answer, type CompletionApi, type ModelCall, type Refusal } from './format';
import { chatPromptTokens, formatPath, type CacheHolder } from './openai-chat';
import type { TokenRule } from '../tokens';

const textPart = z.looseObject({ type: z.string(), text: z.string().optional() });
const itemContent = z.union([z.string(), z.array(textPart)]);

const inputItem = z.union([
  z.looseObject({ type: z.literal('message').optional(), role: z.enum(['system', 'developer', 'user', 'assistant']), content: itemContent }),
  z.looseObject({ type: z.literal('function_call'), call_id: z.string(), name: z.string(), arguments: z.string(), id: z.string().optional() }),
  z.looseObject({ type: z.literal('function_call_output'), call_id: z.string(), output: itemContent }),
  z.looseObject({ type: z.literal('item_reference'), id: z.string() }),
  z.looseObject({ type: z.literal('reasoning') }),
]);
type InputItem = z.infer<typeof inputItem>;

const functionTool = z.looseObject({
  type: z.literal('function'),
  name: z.string().min(1),
  description: z.string().nullish(),
  parameters: z.record(z.string(), z.unknown()).nullish(),
});

export const responsesRequestSchema = z.looseObject({
  model: z.string().min(1),
  input: z.union([z.string(), z.array(inputItem)]),
  instructions: z.string().nullish(),
  tools: z.array(z.union([functionTool, z.looseObject({ type: z.string() })])).nullish(),
  tool_choice: z.union([z.enum(['none', 'auto', 'required']), z.looseObject({ type: z.literal('function'), name: z.string() })]).nullish(),
  stream: z.boolean().nullish(),
  store: z.boolean().nullish(),
  max_output_tokens: z.number().int().positive().nullish(),
  prompt_cache_key: z.string().nullish(),
  prompt_cache_retention: z.enum(['in_memory', '24h']).nullish(),
});
type ResponsesRequest = z.infer<typeof responsesRequestSchema>;

/** What the stand-in keeps of a Responses call: the request, with every item reference resolved. */
interface ResponsesCall {
  readonly request: ResponsesRequest;
  readonly items: readonly InputItem[];
}

export function responsesApi(cache: CacheHolder<OpenAICacheState>, rule: TokenRule): CompletionApi {
  /** Output items by id, as the API stores them for `item_reference`. */
  const stored = new Map<string, InputItem>();
  return {
    parse(json): ModelCall | Refusal {
      const parsed = responsesRequestSchema.safeParse(json);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        return {
          status: 400,
          body: invalidRequest(`Invalid request body: ${z.prettifyError(parsed.error)}`, issue ? formatPath(issue.path) || null : null),
        };
      }
      const request = parsed.data;
      const items: InputItem[] = [];
      for (const item of typeof request.input === 'string' ? [{ role: 'user' as const, content: request.input }] : request.input) {
        if ('type' in item && item.type === 'item_reference') {
          const found = stored.get(item.id);
          if (!found) return { status: 404, body: invalidRequest(`Item with id '${item.id}' not found.`, 'input') };
          items.push(found);
        } else items.push(item);
      }
      const native: ResponsesCall = { request, items };
      return {
        model: request.model,
        chat: toChat(request, items),
        stream: request.stream === true,
        maxTokens: request.max_output_tokens ?? 0,
        native,
      };
    },
    account(call, now): Accounted {
      const { request } = call.native as ResponsesCall;
      const outcome = applyOpenAICache(
        cache.state,
        {
          model: call.model,
          tokens: chatPromptTokens(call.chat, rule),
          ...(request.prompt_cache_key ? { cacheKey: request.prompt_cache_key } : {}),
          ...(request.prompt_cache_retention ? { retention: request.prompt_cache_retention } : {}),
        },
        now,
      );
      return {
        prompt: { total: outcome.total, cacheRead: outcome.cached, cacheWrite5m: 0, cacheWrite1h: 0 },
        commit: () => (cache.state = new Map([...cache.state, ...outcome.state])),
      };
    },
    frames(answer, call) {
      const output = outputItems(answer);
      remember(stored, output, call);
      return streamFrames(answer, output);
    },
    json(answer, call) {
      const output = outputItems(answer);
      remember(stored, output, call);
      return responseObject(answer, output, 'completed');
    },
    countOutput: (text) => rule.count(text),
    overflow: () => ({
      status: 400,
      body: {
        error: {
          message: 'Your input exceeds the context window of this model. Please adjust your input and try again.',
          type: 'invalid_request_error',
          param: 'input',
          code: 'context_length_exceeded',
        },
      },
    }),
  };
}

function remember(stored: Map<string, InputItem>, output: readonly OutputItem[], call: ModelCall): void {
  if ((call.native as ResponsesCall).request.store === false) return;
  for (const item of output) {
    stored.set(
      item.id,
      item.type === 'message'
        ? { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: item.text }] }
        : { type: 'function_call', call_id: item.call_id, name: item.name, arguments: item.arguments },
    );
  }
}

/** The request as Chat Completions: instructions first, consecutive function calls in one assistant message. */
function toChat(request: ResponsesRequest, items: readonly InputItem[]): ChatCompletionRequest {
  const messages: ChatMessage[] = [];
  if (request.instructions) messages.push({ role: 'system', content: request.instructions });
  for (const item of items) {
    if (item.type === 'function_call') {
      const call = { id: item.call_id, type: 'function' as const, function: { name: item.name, arguments: item.arguments } };
      const last = messages.at(-1);
      if (last?.role === 'assistant') messages[messages.length - 1] = { ...last, tool_calls: [...(last.tool_calls ?? []), call] };
      else messages.push({ role: 'assistant', content: null, tool_calls: [call] });
    } else if (item.type === 'function_call_output') {
      messages.push({ role: 'tool', tool_call_id: item.call_id, content: contentText(item.output) });
    } else if (item.type === undefined || item.type === 'message') {
      const text = contentText(item.content);
      messages.push(item.role === 'assistant' ? { role: 'assistant', content: text } : { role: item.role, content: text });
    }
  }
  const tools = (request.tools ?? []).flatMap((tool) =>
    tool.type === 'function' && 'name' in tool
      ? [
          {
            type: 'function' as const,
            function: {
              name: String(tool.name),
              ...(typeof tool.description === 'string' ? { description: tool.description } : {}),
              ...(tool.parameters ? { parameters: tool.parameters as Record<string, unknown> } : {}),
            },
          },
        ]
      : [],
  );
  const choice = request.tool_choice;
  return {
    model: request.model,
    messages: messages.length > 0 ? messages : [{ role: 'user', content: '' }],
    ...(tools.length > 0 ? { tools } : {}),
    ...(choice ? { tool_choice: typeof choice === 'string' ? choice : { type: 'function' as const, function: { name: choice.name } } } : {}),
    ...(request.max_output_tokens ? { max_tokens: request.max_output_tokens } : {}),
  };
}

type OutputItem =
  | { readonly type: 'message'; readonly id: string; readonly text: string }
  | { readonly type: 'function_call'; readonly id: string; readonly call_id: string; readonly name: string; readonly arguments: string };

function outputItems(answer: Answer): OutputItem[] {
  const items: OutputItem[] = [];
  if (answer.text !== undefined) items.push({ type: 'message', id: `msg_${answer.id}`, text: answer.text });
  answer.toolCalls.forEach((call, i) =>
    items.push({ type: 'function_call', id: `fc_${answer.id}_${i}`, call_id: call.id, name: call.name, arguments: call.arguments }),
  );
  return items;
}

function itemJson(item: OutputItem, status: 'in_progress' | 'completed'): Record<string, unknown> {
  if (item.type === 'message') {
    return {
      type: 'message',
      id: item.id,
      status,
      role: 'assistant',
      content: status === 'completed' ? [{ type: 'output_text', text: item.text, annotations: [] }] : [],
    };
  }
  return {
    type: 'function_call',
    id: item.id,
    call_id: item.call_id,
    name: item.name,
    arguments: status === 'completed' ? item.arguments : '',
    status,
  };
}

function usageJson(answer: Answer): Record<string, unknown> {
  const { total, cacheRead } = answer.prompt;
  return {
    input_tokens: total,
    input_tokens_details: { cached_tokens: cacheRead },
    output_tokens: answer.outputTokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: total + answer.outputTokens,
  };
}

function responseObject(
  answer: Answer,
  output: readonly OutputItem[] | undefined,
  status: 'in_progress' | 'completed' | 'incomplete',
): Record<string, unknown> {
  const done = status !== 'in_progress';
  const finished = done && answer.finishReason === 'length' ? 'incomplete' : status;
  return {
    id: `resp_${answer.id}`,
    object: 'response',
    created_at: answer.created,
    model: answer.model,
    status: finished,
    output: output ? output.map((item) => itemJson(item, 'completed')) : [],
    incomplete_details: finished === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    error: null,
    usage: done ? usageJson(answer) : null,
  };
}

/**
 * The events the Responses API streams: the response created, each output item added, its text or
 * its arguments in pieces, the item done, and the response completed (or incomplete) with its usage.
 */
function streamFrames(answer: Answer, output: readonly OutputItem[]): string[] {
  let sequence = 0;
  const frames: string[] = [];
  const emit = (type: string, payload: Record<string, unknown>): void => {
    frames.push(namedFrame(type, { type, sequence_number: sequence++, ...payload }));
  };
  emit('response.created', { response: responseObject(answer, undefined, 'in_progress') });
  output.forEach((item, index) => {
    emit('response.output_item.added', { output_index: index, item: itemJson(item, 'in_progress') });
    if (item.type === 'message') {
      for (const delta of pieces(item.text, 3))
        emit('response.output_text.delta', { item_id: item.id, output_index: index, content_index: 0, delta, logprobs: [] });
      emit('response.output_text.done', { item_id: item.id, output_index: index, content_index: 0, text: item.text, logprobs: [] });
    } else {
      for (const delta of pieces(item.arguments, 3)) emit('response.function_call_arguments.delta', { item_id: item.id, output_index: index, delta });
      emit('response.function_call_arguments.done', { item_id: item.id, output_index: index, arguments: item.arguments });
    }
    emit('response.output_item.done', { output_index: index, item: itemJson(item, 'completed') });
  });
  const final = responseObject(answer, output, 'completed');
  emit(final.status === 'incomplete' ? 'response.incomplete' : 'response.completed', { response: final });
  return frames;
}
