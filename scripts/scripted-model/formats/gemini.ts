/**
 * The Gemini API as the stand-in serves it: `POST /v1beta/models/{model}:streamGenerateContent?alt=sse`
 * (each chunk a `data:` event) and `:generateContent`, the models list with `inputTokenLimit` and
 * `outputTokenLimit`, Gemini's error bodies (its overflow wording among them) and its implicit caching
 * (`caching/gemini-cache.ts`), reported as `usageMetadata.cachedContentTokenCount` within
 * `promptTokenCount`. The key is asked for in `x-goog-api-key` (or `?key=`), any value accepted.
 * A request is refused when its input alone exceeds the model's input limit: the answer has a limit
 * of its own.
 *
 * A Gemini 3 model signs its function calls: the first call of each answer carries a
 * `thoughtSignature`, and a request whose current turn (what follows the user's last message) gives
 * back a model answer whose first call has none is refused with Gemini's 400, as the real API does.
 * Any value is taken as a signature, the sentinel Google documents for calls whose signature was lost among them.
 */
import { z } from 'zod';
import { applyGeminiCache, type GeminiCacheState, type GeminiPart } from '../caching/gemini-cache';
import { pieces, type ChatCompletionRequest, type ChatMessage } from '../wire';
import { signature } from './signatures';
import { dataFrame, header, type Accounted, type Answer, type CompletionApi, type ModelCall, type Refusal, type WireFormat } from './format';
import type { TokenRule } from '../tokens';
import { formatPath, type CacheHolder } from './openai-chat';

const part = z.looseObject({
  text: z.string().optional(),
  thought: z.boolean().optional(),
  functionCall: z.looseObject({ name: z.string(), args: z.record(z.string(), z.unknown()).optional(), id: z.string().optional() }).optional(),
  thoughtSignature: z.string().optional(),
  functionResponse: z.looseObject({ name: z.string(), response: z.unknown().optional(), id: z.string().optional() }).optional(),
});
type Part = z.infer<typeof part>;
const content = z.looseObject({ role: z.enum(['user', 'model']).optional(), parts: z.array(part) });

export const generateContentSchema = z.looseObject({
  contents: z.array(content).min(1),
  systemInstruction: content.optional(),
  tools: z
    .array(
      z.looseObject({
        functionDeclarations: z
          .array(z.looseObject({ name: z.string(), description: z.string().optional(), parameters: z.record(z.string(), z.unknown()).optional() }))
          .optional(),
      }),
    )
    .optional(),
  toolConfig: z
    .looseObject({
      functionCallingConfig: z.looseObject({ mode: z.string().optional(), allowedFunctionNames: z.array(z.string()).optional() }).optional(),
    })
    .optional(),
  generationConfig: z.looseObject({ maxOutputTokens: z.number().int().positive().optional() }).optional(),
});
type GenerateContent = z.infer<typeof generateContentSchema>;

function geminiError(code: number, status: string, message: string): Refusal {
  return { status: code, body: { error: { code, message, status } } };
}

const STATUS_ERRORS: Record<number, [string, string]> = {
  400: ['INVALID_ARGUMENT', 'Request contains an invalid argument (scripted by the offline scripted model).'],
  401: ['UNAUTHENTICATED', 'API keys are not supported by this API.'],
  403: ['PERMISSION_DENIED', 'API key not valid. Please pass a valid API key.'],
  429: ['RESOURCE_EXHAUSTED', 'Resource has been exhausted (e.g. check quota).'],
  500: ['INTERNAL', 'An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting'],
  503: ['UNAVAILABLE', 'The model is overloaded. Please try again later.'],
};

function partText(p: Part): string {
  if (p.functionCall) return `${p.functionCall.name}${JSON.stringify(p.functionCall.args ?? {})}`;
  if (p.functionResponse) return `${p.functionResponse.name}${JSON.stringify(p.functionResponse.response ?? {})}`;
  return p.text ?? '';
}

/** The request's parts in the order the model reads them (system instruction, tools, then each turn), counted by Gemini's rule. */
export function requestParts(request: GenerateContent, rule: TokenRule): GeminiPart[] {
  const parts: GeminiPart[] = [];
  for (const p of request.systemInstruction?.parts ?? []) parts.push({ key: `system:${JSON.stringify(p)}`, tokens: rule.count(partText(p)) });
  if (request.tools && request.tools.length > 0) {
    const tools = JSON.stringify(request.tools);
    parts.push({ key: `tools:${tools}:${JSON.stringify(request.toolConfig ?? null)}`, tokens: rule.count(tools) });
  }
  for (const turn of request.contents) {
    turn.parts.forEach((p, i) => {
      const framing = (i === 0 ? rule.perMessage : 0) + (p.functionCall ? rule.perToolCall : p.functionResponse ? rule.perToolResult : 0);
      parts.push({ key: `${turn.role ?? 'user'}:${JSON.stringify(p)}`, tokens: framing + rule.count(partText(p)) });
    });
  }
  return parts;
}

/** The request as Chat Completions. Gemini's calls need no ids: each response is matched to the call of its name, in order. */
function toChat(request: GenerateContent, model: string): ChatCompletionRequest {
  const messages: ChatMessage[] = [];
  const system = (request.systemInstruction?.parts ?? []).map(partText).join('\n');
  if (system) messages.push({ role: 'system', content: system });
  const pending = new Map<string, string[]>();
  let calls = 0;
  for (const turn of request.contents) {
    const texts = turn.parts.filter((p) => p.text !== undefined && !p.thought).map((p) => p.text ?? '');
    if (turn.role === 'model') {
      const toolCalls = turn.parts.flatMap((p) => {
        if (!p.functionCall) return [];
        const id = p.functionCall.id ?? `call_gemini_${++calls}`;
        pending.set(p.functionCall.name, [...(pending.get(p.functionCall.name) ?? []), id]);
        return [{ id, type: 'function' as const, function: { name: p.functionCall.name, arguments: JSON.stringify(p.functionCall.args ?? {}) } }];
      });
      messages.push({ role: 'assistant', content: texts.join('') || null, ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}) });
      continue;
    }
    for (const p of turn.parts) {
      if (!p.functionResponse) continue;
      const queue = pending.get(p.functionResponse.name) ?? [];
      const id = p.functionResponse.id ?? queue.shift() ?? p.functionResponse.name;
      const response = p.functionResponse.response;
      const text = typeof response === 'object' && response !== null && 'content' in response ? (response as { content: unknown }).content : response;
      messages.push({ role: 'tool', tool_call_id: id, content: typeof text === 'string' ? text : JSON.stringify(text ?? {}) });
    }
    if (texts.length > 0 || !turn.parts.some((p) => p.functionResponse)) messages.push({ role: 'user', content: texts.join('\n') });
  }
  const tools = (request.tools ?? []).flatMap((t) =>
    (t.functionDeclarations ?? []).map((f) => ({
      type: 'function' as const,
      function: {
        name: f.name,
        ...(f.description !== undefined ? { description: f.description } : {}),
        ...(f.parameters ? { parameters: f.parameters } : {}),
      },
    })),
  );
  const mode = request.toolConfig?.functionCallingConfig?.mode;
  const allowed = request.toolConfig?.functionCallingConfig?.allowedFunctionNames;
  const toolChoice =
    mode === 'NONE'
      ? 'none'
      : mode === 'ANY'
        ? allowed?.length === 1
          ? { type: 'function' as const, function: { name: allowed[0]! } }
          : 'required'
        : undefined;
  return {
    model,
    messages,
    ...(tools.length > 0 ? { tools } : {}),
    ...(toolChoice !== undefined ? { tool_choice: toolChoice } : {}),
    ...(request.generationConfig?.maxOutputTokens ? { max_tokens: request.generationConfig.maxOutputTokens } : {}),
  };
}

const FINISH: Record<Answer['finishReason'], string> = { stop: 'STOP', tool_calls: 'STOP', length: 'MAX_TOKENS' };

function usageMetadata(answer: Answer): Record<string, unknown> {
  const { total, cacheRead } = answer.prompt;
  return {
    promptTokenCount: total,
    candidatesTokenCount: answer.outputTokens,
    totalTokenCount: total + answer.outputTokens,
    ...(cacheRead > 0 ? { cachedContentTokenCount: cacheRead, cacheTokensDetails: [{ modality: 'TEXT', tokenCount: cacheRead }] } : {}),
    promptTokensDetails: [{ modality: 'TEXT', tokenCount: total }],
  };
}

/** Whether `model` is one of the Gemini 3 models, which sign their function calls and require the signatures back. */
export function signsFunctionCalls(model: string): boolean {
  return /^(models\/)?gemini-3/.test(model);
}

/** The signature a Gemini 3 model puts on the first function call of an answer. */
export function thoughtSignature(model: string, call: { readonly name: string }): string {
  return signature('google', model, call.name);
}

const functionCallParts = (answer: Answer, model: string): Part[] =>
  answer.toolCalls.map((call, i) => ({
    functionCall: { name: call.name, args: JSON.parse(call.arguments) as Record<string, unknown> },
    ...(i === 0 && signsFunctionCalls(model) ? { thoughtSignature: thoughtSignature(model, call) } : {}),
  }));

/**
 * Gemini's 400 for a model answer of the current turn whose first function call has no signature
 * (a Gemini 3 model only); undefined when every one has its signature.
 */
export function missingSignature(request: GenerateContent, model: string): Refusal | undefined {
  if (!signsFunctionCalls(model)) return undefined;
  let turnStart = 0;
  request.contents.forEach((c, i) => {
    if (c.role !== 'model' && c.parts.some((p) => p.text !== undefined && !p.functionResponse)) turnStart = i + 1;
  });
  for (let i = turnStart; i < request.contents.length; i++) {
    const c = request.contents[i]!;
    if (c.role !== 'model') continue;
    const first = c.parts.find((p) => p.functionCall);
    if (!first?.functionCall || first.thoughtSignature !== undefined) continue;
    return geminiError(
      400,
      'INVALID_ARGUMENT',
      `Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call \`default_api:${first.functionCall.name}\` , position ${i + 1}. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.`,
    );
  }
  return undefined;
}

function chunk(answer: Answer, parts: readonly Part[], last: boolean): Record<string, unknown> {
  return {
    candidates: [{ content: { role: 'model', parts }, index: 0, ...(last ? { finishReason: FINISH[answer.finishReason] } : {}) }],
    ...(last ? { usageMetadata: usageMetadata(answer) } : {}),
    modelVersion: answer.model,
    responseId: answer.id,
  };
}

function generateApi(cache: CacheHolder<GeminiCacheState>, rule: TokenRule): CompletionApi {
  return {
    parse(json, from): ModelCall | Refusal {
      const parsed = generateContentSchema.safeParse(json);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        return geminiError(
          400,
          'INVALID_ARGUMENT',
          `Invalid JSON payload received. ${issue ? `${formatPath(issue.path)}: ${issue.message}` : ''}`.trim(),
        );
      }
      const model = from.model ?? '';
      const request = parsed.data;
      const unsigned = missingSignature(request, model);
      if (unsigned) return unsigned;
      return {
        model,
        chat: toChat(request, model),
        stream: from.stream === true,
        maxTokens: request.generationConfig?.maxOutputTokens ?? 0,
        native: request,
      };
    },
    account(call, now): Accounted {
      const outcome = applyGeminiCache(cache.state, { model: call.model, parts: requestParts(call.native as GenerateContent, rule) }, now);
      return {
        prompt: { total: outcome.total, cacheRead: outcome.cached, cacheWrite5m: 0, cacheWrite1h: 0 },
        commit: () => (cache.state = new Map([...cache.state, ...outcome.state])),
      };
    },
    frames(answer, call) {
      const texts = answer.text !== undefined ? pieces(answer.text, 3) : [];
      const chunks: Part[][] = [...texts.map((text) => [{ text }]), ...(answer.toolCalls.length > 0 ? [functionCallParts(answer, call.model)] : [])];
      if (chunks.length === 0) chunks.push([{ text: '' }]);
      return chunks.map((parts, i) => dataFrame(chunk(answer, parts, i === chunks.length - 1)));
    },
    json: (answer, call) =>
      chunk(answer, [...(answer.text !== undefined ? [{ text: answer.text }] : []), ...functionCallParts(answer, call.model)], true),
    countOutput: (text) => rule.count(text),
    toolCallId: (n) => `call_gemini_${n}`,
  };
}

const GENERATE = /^\/v1beta\/models\/([^/:]+):(streamGenerateContent|generateContent)$/;

export function geminiFormat(rule: TokenRule): WireFormat {
  const cache: CacheHolder<GeminiCacheState> = { state: new Map() };
  const generate = generateApi(cache, rule);
  return {
    name: 'google',
    root: '/v1beta',
    countsOutputInWindow: false,
    route(method, path) {
      const match = GENERATE.exec(path);
      if (method === 'POST' && match)
        return { kind: 'completion', api: generate, model: decodeURIComponent(match[1]!), stream: match[2] === 'streamGenerateContent' };
      if (method === 'GET' && path === '/v1beta/models') return { kind: 'models' };
      if (method === 'GET' && path.startsWith('/v1beta/models/'))
        return { kind: 'model', id: decodeURIComponent(path.slice('/v1beta/models/'.length)) };
      return undefined;
    },
    authorized: (headers, search) => Boolean(header(headers, 'x-goog-api-key') ?? search.get('key')),
    refuse: {
      invalid: (message) => geminiError(400, 'INVALID_ARGUMENT', message),
      unauthorized: () =>
        geminiError(
          403,
          'PERMISSION_DENIED',
          "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.",
        ),
      unknownModel: (model) =>
        geminiError(
          404,
          'NOT_FOUND',
          `models/${model} is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods.`,
        ),
      overflow: (window, promptTokens) =>
        geminiError(400, 'INVALID_ARGUMENT', `The input token count (${promptTokens}) exceeds the maximum number of tokens allowed (${window}).`),
      status: (status) => {
        const [name, message] = STATUS_ERRORS[status] ?? [status >= 500 ? 'INTERNAL' : 'INVALID_ARGUMENT', `Request failed with status ${status}.`];
        return geminiError(status, name, message);
      },
    },
    listModels: (models) => ({ models: models.map(describe) }),
    describeModel: describe,
    reset: () => {
      cache.state = new Map();
    },
  };
}

function describe(model: { id: string; name?: string; window: number; maxOutputTokens?: number }) {
  return {
    name: `models/${model.id}`,
    version: '001',
    displayName: model.name ?? `Offline scripted model ${model.id}`,
    description: 'A stand-in that follows a script; not a model.',
    inputTokenLimit: model.window,
    outputTokenLimit: model.maxOutputTokens ?? 8_192,
    supportedGenerationMethods: ['generateContent', 'countTokens'],
  };
}
