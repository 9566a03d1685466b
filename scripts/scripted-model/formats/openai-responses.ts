/**
 * OpenAI's Responses API (`POST /v1/responses`), with OpenAI's automatic prompt caching: the part of
 * the input read from the cache is reported as `usage.input_tokens_details.cached_tokens`, within
 * `input_tokens`. Output items are stored unless the request says `store: false`, so a later request
 * may name one by `item_reference`, as the API allows.
 *
 * A reasoning model (the o-series, GPT-5 but its chat models) starts each answer with a reasoning item,
 * its reasoning encrypted when the request includes `reasoning.encrypted_content`. A reasoning item
 * comes back by id: by reference or with no encrypted content, the id must name an item stored; with
 * encrypted content, the content must be the item's own. The function calls of the current tool loop
 * (what follows the user's last message) need the reasoning item that came with them, as the API
 * refuses a call given back without its required reasoning item.
 */
import { z } from 'zod';
import { applyOpenAICache, type OpenAICacheState } from '../caching/openai-cache';
import { contentText, invalidRequest, pieces, type ChatCompletionRequest, type ChatMessage } from '../wire';
import { namedFrame, type Accounted, type Answer, type CompletionApi, type ModelCall, type Refusal } from './format';
import { chatPromptTokens, formatPath, type CacheHolder } from './openai-chat';
import type { TokenRule } from '../tokens';
import { signature, signedBy } from './signatures';

const textPart = z.looseObject({ type: z.string(), text: z.string().optional() });
const itemContent = z.union([z.string(), z.array(textPart)]);

const inputItem = z.union([
  z.looseObject({ type: z.literal('message').optional(), role: z.enum(['system', 'developer', 'user', 'assistant']), content: itemContent }),
  z.looseObject({ type: z.literal('function_call'), call_id: z.string(), name: z.string(), arguments: z.string(), id: z.string().optional() }),
  z.looseObject({ type: z.literal('function_call_output'), call_id: z.string(), output: itemContent }),
  z.looseObject({ type: z.literal('item_reference'), id: z.string() }),
  z.looseObject({ type: z.literal('reasoning'), id: z.string().optional(), encrypted_content: z.string().nullish() }),
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
  include: z.array(z.string()).nullish(),
});
type ResponsesRequest = z.infer<typeof responsesRequestSchema>;

/** What the stand-in keeps of a Responses call: the request, with every item reference resolved. */
interface ResponsesCall {
  readonly request: ResponsesRequest;
  readonly items: readonly InputItem[];
}

/** Whether `model` reasons, and so starts each answer with a reasoning item. */
export function reasons(model: string): boolean {
  return /^(o\d|gpt-5(?!.*-chat))/.test(model);
}

/** The encrypted content of the reasoning item `id` that `model` made. */
export function encryptedReasoning(model: string, id: string): string {
  return signature('openai', model, id);
}

/** What the stand-in remembers of its reasoning items: the one that came with each function call. */
interface Issued {
  /** Reasoning item ids by the call id of the function calls they came with. */
  readonly reasoningOf: Map<string, string>;
  /** The function call items' own ids by their call id. */
  readonly itemOf: Map<string, string>;
}

export function responsesApi(cache: CacheHolder<OpenAICacheState>, rule: TokenRule): CompletionApi {
  /** Output items by id, as the API stores them for `item_reference`. */
  const stored = new Map<string, InputItem>();
  const issued: Issued = { reasoningOf: new Map(), itemOf: new Map() };
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
      const input: readonly InputItem[] = typeof request.input === 'string' ? [{ role: 'user', content: request.input }] : request.input;
      for (const item of input) {
        const byId = item.type === 'item_reference' || (item.type === 'reasoning' && !item.encrypted_content) ? item.id : undefined;
        if (byId !== undefined) {
          const found = stored.get(byId);
          if (!found) return notFound(byId);
          items.push(found);
        } else if (item.type === 'reasoning' && item.encrypted_content && !signedBy(item.encrypted_content, 'openai', request.model, item.id ?? '')) {
          return { status: 400, body: invalidRequest(`The encrypted content for item ${item.id ?? ''} could not be verified.`, 'input') };
        } else items.push(item);
      }
      const missing = missingReasoning(items, issued);
      if (missing) return missing;
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
      const output = outputItems(answer, call);
      remember(stored, output, call, issued);
      return streamFrames(answer, output);
    },
    json(answer, call) {
      const output = outputItems(answer, call);
      remember(stored, output, call, issued);
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

/** The API's 404 for an item it does not hold. */
function notFound(id: string): Refusal {
  return {
    status: 404,
    body: invalidRequest(
      `Item with id '${id}' not found. Items are not persisted when \`store\` is set to false. Try again with \`store\` set to true, or remove this item from your input.`,
      'input',
    ),
  };
}

/**
 * The API's 400 for a function call of the current tool loop given back without the reasoning item
 * that came with it; undefined when none lacks it.
 */
function missingReasoning(items: readonly InputItem[], issued: Issued): Refusal | undefined {
  let loopStart = 0;
  items.forEach((item, i) => {
    if ((item.type === undefined || item.type === 'message') && item.role === 'user') loopStart = i + 1;
  });
  const given = new Set(items.flatMap((item) => (item.type === 'reasoning' && item.id !== undefined ? [item.id] : [])));
  for (const item of items.slice(loopStart)) {
    if (item.type !== 'function_call') continue;
    const reasoning = issued.reasoningOf.get(item.call_id);
    if (reasoning === undefined || given.has(reasoning)) continue;
    const id = item.id ?? issued.itemOf.get(item.call_id) ?? item.call_id;
    return {
      status: 400,
      body: invalidRequest(`Item '${id}' of type 'function_call' was provided without its required 'reasoning' item: '${reasoning}'.`, 'input'),
    };
  }
  return undefined;
}

function remember(stored: Map<string, InputItem>, output: readonly OutputItem[], call: ModelCall, issued: Issued): void {
  const reasoning = output.find((item) => item.type === 'reasoning');
  for (const item of output) {
    if (item.type !== 'function_call') continue;
    issued.itemOf.set(item.call_id, item.id);
    if (reasoning) issued.reasoningOf.set(item.call_id, reasoning.id);
  }
  if ((call.native as ResponsesCall).request.store === false) return;
  for (const item of output) stored.set(item.id, storedItem(item));
}

function storedItem(item: OutputItem): InputItem {
  switch (item.type) {
    case 'message':
      return { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: item.text }] };
    case 'function_call':
      return { type: 'function_call', call_id: item.call_id, name: item.name, arguments: item.arguments };
    case 'reasoning':
      return { type: 'reasoning', id: item.id };
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
  | { readonly type: 'reasoning'; readonly id: string; readonly encrypted?: string }
  | { readonly type: 'message'; readonly id: string; readonly text: string }
  | { readonly type: 'function_call'; readonly id: string; readonly call_id: string; readonly name: string; readonly arguments: string };

function outputItems(answer: Answer, call: ModelCall): OutputItem[] {
  const items: OutputItem[] = [];
  if (reasons(call.model)) {
    const id = `rs_${answer.id}`;
    const encrypted = (call.native as ResponsesCall).request.include?.includes('reasoning.encrypted_content');
    items.push({ type: 'reasoning', id, ...(encrypted ? { encrypted: encryptedReasoning(call.model, id) } : {}) });
  }
  if (answer.text !== undefined) items.push({ type: 'message', id: `msg_${answer.id}`, text: answer.text });
  answer.toolCalls.forEach((call, i) =>
    items.push({ type: 'function_call', id: `fc_${answer.id}_${i}`, call_id: call.id, name: call.name, arguments: call.arguments }),
  );
  return items;
}

function itemJson(item: OutputItem, status: 'in_progress' | 'completed'): Record<string, unknown> {
  if (item.type === 'reasoning') {
    return {
      type: 'reasoning',
      id: item.id,
      summary: [],
      ...(status === 'completed' && item.encrypted ? { encrypted_content: item.encrypted } : {}),
    };
  }
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
    if (item.type === 'reasoning') {
      // A reasoning item with no summary asked for: added, then done with its encrypted content.
    } else if (item.type === 'message') {
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
