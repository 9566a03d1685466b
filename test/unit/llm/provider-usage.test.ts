import assert from 'node:assert/strict';
import { createAnthropic } from '@ai-sdk/anthropic';
import { createGoogleGenerativeAI } from '@ai-sdk/google';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenRouter } from '@openrouter/ai-sdk-provider';
import { tool, type LanguageModel } from 'ai';
import { z } from 'zod';
import { CompactionGuard } from '../../../src/core/compaction-guard';
import type { LogRecord } from '../../../src/core/history';
import type { ReportedUsage } from '../../../src/core/log';
import type { Message, Part } from '../../../src/core/messages';
import { runAgentTurn, type AgentConversation, type AgentUi } from '../../../src/llm/agent';
import type { CacheHints } from '../../../src/llm/cache-hints';
import { createAiSummarizer } from '../../../src/llm/ai-summarizer';

/**
 * The usage Longrun records for each provider, from the provider's own streamed answer (as its API
 * documentation shows it) read by the provider's own AI SDK package, and the cache hints those
 * packages put in the request Longrun has them send.
 */

/** One answer per request, in order (a server-sent event stream, or a JSON body); the requests' bodies are kept. */
function sseFetch(streams: readonly string[], bodies: unknown[], urls: string[] = []): typeof fetch {
  let next = 0;
  return (async (input: string | URL | Request, init?: RequestInit) => {
    urls.push(String(input));
    bodies.push(JSON.parse(String(init?.body)));
    const body = streams[Math.min(next++, streams.length - 1)]!;
    const type = body.startsWith('{') ? 'application/json' : 'text/event-stream';
    return new Response(body, { status: 200, headers: { 'content-type': type } });
  }) as typeof fetch;
}

const sse = (events: ReadonlyArray<readonly [string | undefined, unknown]>): string =>
  events.map(([event, data]) => `${event ? `event: ${event}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`).join('');

/** Anthropic's Messages stream: usage in `message_start` (input and cache) and `message_delta` (output). */
const anthropicStream = sse([
  [
    'message_start',
    {
      type: 'message_start',
      message: {
        id: 'msg_01',
        type: 'message',
        role: 'assistant',
        content: [],
        model: 'claude-sonnet-4-20250514',
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 25, cache_creation_input_tokens: 1_800, cache_read_input_tokens: 12_000, output_tokens: 1 },
      },
    },
  ],
  ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
  ['ping', { type: 'ping' }],
  ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Done.' } }],
  ['content_block_stop', { type: 'content_block_stop', index: 0 }],
  ['message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 15 } }],
  ['message_stop', { type: 'message_stop' }],
]);

const chunk = (over: Record<string, unknown>) => ({
  id: 'chatcmpl-1',
  object: 'chat.completion.chunk',
  created: 1_750_000_000,
  model: 'gpt-4o-2024-08-06',
  system_fingerprint: 'fp_1',
  ...over,
});

/** OpenAI's Chat Completions stream with `stream_options.include_usage`: the usage in a last chunk without choices. */
const openaiChatStream = sse([
  [undefined, chunk({ choices: [{ index: 0, delta: { role: 'assistant', content: 'Done.' }, logprobs: null, finish_reason: null }] })],
  [undefined, chunk({ choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }] })],
  [
    undefined,
    chunk({
      choices: [],
      usage: {
        prompt_tokens: 2_006,
        completion_tokens: 300,
        total_tokens: 2_306,
        prompt_tokens_details: { cached_tokens: 1_920, audio_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
      },
    }),
  ],
  [undefined, '[DONE]'],
]);

/** OpenAI's Responses stream: the usage in `response.completed`. */
const responsesStream = (() => {
  const response = (status: string, extra: Record<string, unknown>) => ({
    id: 'resp_1',
    object: 'response',
    created_at: 1_750_000_000,
    status,
    model: 'gpt-4.1-2025-04-14',
    output: [],
    usage: null,
    ...extra,
  });
  const item = {
    id: 'msg_1',
    type: 'message',
    status: 'completed',
    role: 'assistant',
    content: [{ type: 'output_text', text: 'Done.', annotations: [] }],
  };
  return sse([
    ['response.created', { type: 'response.created', sequence_number: 0, response: response('in_progress', {}) }],
    [
      'response.output_item.added',
      { type: 'response.output_item.added', sequence_number: 1, output_index: 0, item: { ...item, status: 'in_progress', content: [] } },
    ],
    [
      'response.output_text.delta',
      { type: 'response.output_text.delta', sequence_number: 2, item_id: 'msg_1', output_index: 0, content_index: 0, delta: 'Done.', logprobs: [] },
    ],
    ['response.output_item.done', { type: 'response.output_item.done', sequence_number: 3, output_index: 0, item }],
    [
      'response.completed',
      {
        type: 'response.completed',
        sequence_number: 4,
        response: response('completed', {
          output: [item],
          usage: {
            input_tokens: 5_000,
            input_tokens_details: { cached_tokens: 4_864 },
            output_tokens: 40,
            output_tokens_details: { reasoning_tokens: 0 },
            total_tokens: 5_040,
          },
        }),
      },
    ],
  ]);
})();

/** Gemini's `streamGenerateContent?alt=sse`: `usageMetadata` on every chunk, `cachedContentTokenCount` within `promptTokenCount`. */
const geminiStream = sse([
  [
    undefined,
    {
      candidates: [{ content: { parts: [{ text: 'Done' }], role: 'model' }, index: 0 }],
      usageMetadata: { promptTokenCount: 9_000, candidatesTokenCount: 1, totalTokenCount: 9_001, cachedContentTokenCount: 8_000 },
      modelVersion: 'gemini-2.5-pro',
    },
  ],
  [
    undefined,
    {
      candidates: [{ content: { parts: [{ text: '.' }], role: 'model' }, finishReason: 'STOP', index: 0 }],
      usageMetadata: {
        promptTokenCount: 9_000,
        candidatesTokenCount: 12,
        totalTokenCount: 9_012,
        cachedContentTokenCount: 8_000,
        promptTokensDetails: [{ modality: 'TEXT', tokenCount: 9_000 }],
        cacheTokensDetails: [{ modality: 'TEXT', tokenCount: 8_000 }],
      },
      modelVersion: 'gemini-2.5-pro',
      responseId: 'resp-1',
    },
  ],
]);

/** OpenRouter's stream: Chat Completions chunks naming the `provider`, and its usage with `cost`. */
const openrouterStream = (() => {
  const base = { id: 'gen-1', provider: 'Anthropic', model: 'anthropic/claude-sonnet-4', object: 'chat.completion.chunk', created: 1_750_000_000 };
  return sse([
    [
      undefined,
      {
        ...base,
        choices: [{ index: 0, delta: { role: 'assistant', content: 'Done.' }, finish_reason: null, native_finish_reason: null, logprobs: null }],
      },
    ],
    [
      undefined,
      {
        ...base,
        choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: 'stop', native_finish_reason: 'end_turn', logprobs: null }],
        usage: {
          prompt_tokens: 14_000,
          completion_tokens: 20,
          total_tokens: 14_020,
          cost: 0.00597,
          is_byok: false,
          prompt_tokens_details: { cached_tokens: 12_000, cache_write_tokens: 1_900 },
          cost_details: { upstream_inference_cost: null },
          completion_tokens_details: { reasoning_tokens: 0 },
        },
      },
    ],
    [undefined, '[DONE]'],
  ]);
})();

const quietUi: AgentUi = { text() {}, toolCall() {}, compacting() {}, compacted() {}, notice() {} };

/** A conversation of `history`, recording what the turn appends. */
function conversationOf(history: readonly Message[], stableEnd?: string): AgentConversation & { records: LogRecord[] } {
  const records: LogRecord[] = [];
  let id = 0;
  return {
    records,
    view: () => [...history, ...records.flatMap((r) => (r.type === 'message' ? [r.message] : []))],
    append: async (added) => {
      records.push(...added);
    },
    assess: () => ({
      level: 'ok',
      used: 0,
      limit: 200_000,
      fraction: 0,
      warningAt: 150_000,
      compactAt: 180_000,
      shouldCompact: false,
      explanation: '',
    }),
    guard: new CompactionGuard(() => ({ level: 'ok', shouldCompact: false, warningAt: 150_000 })),
    compact: async () => ({ status: 'noop', reason: 'not in this test' }),
    requestBasis: () => ({ basis: 'c1', localTokens: 100 }),
    newId: () => `n${++id}`,
    ...(stableEnd !== undefined ? { stableEnd: () => stableEnd } : {}),
  };
}

/** Runs one request of `history` on `model`; the usage it recorded. */
async function recordedUsage(
  model: LanguageModel,
  hints: CacheHints | undefined,
  history: readonly Message[] = [userMessage('u1', 'go')],
  stableEnd?: string,
) {
  const conversation = conversationOf(history, stableEnd);
  const result = await runAgentTurn({
    model,
    system: 'You are a coding agent.',
    tools: {},
    maxSteps: 1,
    signal: new AbortController().signal,
    conversation,
    ui: quietUi,
    overflowRetriesPerTurn: 1,
    cacheHints: () => hints,
    now: () => 1_700_000_000_000,
  });
  assert.equal(result.error, undefined, String(result.error));
  const usages = conversation.records.flatMap((r) => (r.type === 'usage' ? [r.usage] : []));
  assert.equal(usages.length, 1);
  return usages[0]!;
}

const userMessage = (id: string, body: string): Message => ({ id, role: 'user', content: [{ type: 'text', text: body }] });

/** The usage record's fields this test is about. */
const kinds = (u: ReportedUsage) => ({
  inputTokens: u.inputTokens,
  outputTokens: u.outputTokens,
  cacheReadTokens: u.cacheReadTokens,
  cacheWriteTokens: u.cacheWriteTokens,
  provider: u.provider,
  modelId: u.modelId,
});

/** A wide step: a request, an answer with `n` parallel calls, and their results. */
function wideStep(n: number): Message[] {
  const calls = Array.from({ length: n }, (_, i) => `call_${i}`);
  return [
    userMessage('u1', 'read them all'),
    {
      id: 'a1',
      role: 'assistant',
      content: calls.map((id): Part => ({ type: 'tool-call', toolCallId: id, toolName: 'read_file', input: { path: `${id}.ts` } })),
    },
    {
      id: 't1',
      role: 'tool',
      content: calls.map((id): Part => ({ type: 'tool-result', toolCallId: id, toolName: 'read_file', output: `text of ${id}` })),
    },
  ];
}

/** Every `cache_control` in a JSON body, by where it sits. */
function breakpoints(body: unknown, path = ''): string[] {
  if (Array.isArray(body)) return body.flatMap((item, i) => breakpoints(item, `${path}[${i}]`));
  if (typeof body !== 'object' || body === null) return [];
  return Object.entries(body).flatMap(([key, value]) =>
    key === 'cache_control' && value !== undefined && value !== null ? [path] : breakpoints(value, path ? `${path}.${key}` : key),
  );
}

describe('provider usage: what each provider’s package reports, as Longrun records it', () => {
  it('Anthropic: input_tokens plus the cache read and written, with the breakpoints of a wide step in the request', async () => {
    const bodies: unknown[] = [];
    const model = createAnthropic({ apiKey: 'test', baseURL: 'http://anthropic.test/v1', fetch: sseFetch([anthropicStream], bodies) })(
      'claude-sonnet-4-0',
    );
    const usage = await recordedUsage(model, { provider: 'anthropic', ttl: '1h' }, wideStep(15));
    assert.deepEqual(kinds(usage), {
      inputTokens: 25 + 1_800 + 12_000,
      outputTokens: 15,
      cacheReadTokens: 12_000,
      cacheWriteTokens: 1_800,
      provider: 'anthropic',
      modelId: 'claude-sonnet-4-20250514',
    });
    assert.equal(usage.cacheTtl, '1h');
    assert.equal(usage.at, 1_700_000_000_000);
    // The head, the previous request's end (out of the look-back behind 30 blocks), and the rolling end.
    assert.deepEqual(breakpoints(bodies[0]), ['system[0]', 'messages[0].content[0]', 'messages[2].content[14]']);
    assert.deepEqual((bodies[0] as { system: Array<{ cache_control: unknown }> }).system[0]!.cache_control, { type: 'ephemeral', ttl: '1h' });
  });

  it('OpenAI Chat Completions: prompt_tokens with cached_tokens within, and the cache key and retention in the request', async () => {
    const bodies: unknown[] = [];
    const model = createOpenAI({ apiKey: 'test', baseURL: 'http://openai.test/v1', fetch: sseFetch([openaiChatStream], bodies) }).chat('gpt-4o');
    const usage = await recordedUsage(model, { provider: 'openai', ttl: '5m', promptCacheKey: 'longrun-c1', retention24h: true });
    assert.deepEqual(kinds(usage), {
      inputTokens: 2_006,
      outputTokens: 300,
      cacheReadTokens: 1_920,
      cacheWriteTokens: undefined,
      provider: 'openai',
      modelId: 'gpt-4o-2024-08-06',
    });
    const body = bodies[0] as Record<string, unknown>;
    assert.equal(body.prompt_cache_key, 'longrun-c1');
    assert.equal(body.prompt_cache_retention, '24h');
    assert.deepEqual(breakpoints(body), []);
  });

  it('OpenAI Responses: input_tokens with input_tokens_details.cached_tokens within', async () => {
    const bodies: unknown[] = [];
    const model = createOpenAI({ apiKey: 'test', baseURL: 'http://openai.test/v1', fetch: sseFetch([responsesStream], bodies) })('gpt-4.1');
    const usage = await recordedUsage(model, { provider: 'openai', ttl: '5m', promptCacheKey: 'longrun-c1' });
    assert.deepEqual(kinds(usage), {
      inputTokens: 5_000,
      outputTokens: 40,
      cacheReadTokens: 4_864,
      cacheWriteTokens: undefined,
      provider: 'openai',
      modelId: 'gpt-4.1-2025-04-14',
    });
    assert.equal((bodies[0] as Record<string, unknown>).prompt_cache_key, 'longrun-c1');
  });

  it('Gemini: promptTokenCount with cachedContentTokenCount within', async () => {
    const bodies: unknown[] = [];
    const model = createGoogleGenerativeAI({ apiKey: 'test', baseURL: 'http://google.test/v1beta', fetch: sseFetch([geminiStream], bodies) })(
      'gemini-2.5-pro',
    );
    const usage = await recordedUsage(model, { provider: 'google', ttl: '5m' });
    assert.deepEqual(kinds(usage), {
      inputTokens: 9_000,
      outputTokens: 12,
      cacheReadTokens: 8_000,
      cacheWriteTokens: undefined,
      provider: 'google',
      modelId: 'gemini-2.5-pro',
    });
    assert.deepEqual(breakpoints(bodies[0]), []);
  });

  it('OpenRouter: the cache read and written, the provider that served it and what it cost; the breakpoints and the pinned provider in the request', async () => {
    const bodies: unknown[] = [];
    const model = createOpenRouter({ apiKey: 'test', baseURL: 'http://openrouter.test/api/v1', fetch: sseFetch([openrouterStream], bodies) }).chat(
      'anthropic/claude-sonnet-4',
    );
    const usage = await recordedUsage(model, { provider: 'openrouter', ttl: '5m', pinnedProvider: 'Anthropic' }, wideStep(15));
    assert.deepEqual(kinds(usage), {
      inputTokens: 14_000,
      outputTokens: 20,
      cacheReadTokens: 12_000,
      cacheWriteTokens: 1_900,
      provider: 'openrouter',
      modelId: 'anthropic/claude-sonnet-4',
    });
    assert.equal(usage.servedBy, 'Anthropic');
    assert.equal(usage.cost, 0.00597);
    const body = bodies[0] as Record<string, unknown>;
    assert.deepEqual(body.provider, { order: ['Anthropic'], allow_fallbacks: false });
    // One breakpoint per place, never one on every result of a tool message.
    assert.deepEqual(breakpoints(body), ['messages[0].content[0]', 'messages[1].content[0]', 'messages[17]']);
  });

  it('a provider that reports no usage: nothing recorded, nothing lost', async () => {
    const bodies: unknown[] = [];
    const noUsage = sse([
      [undefined, chunk({ choices: [{ index: 0, delta: { role: 'assistant', content: 'Done.' }, logprobs: null, finish_reason: 'stop' }] })],
      [undefined, '[DONE]'],
    ]);
    const model = createOpenAI({ apiKey: 'test', baseURL: 'http://local.test/v1', fetch: sseFetch([noUsage], bodies) }).chat('llama3.1');
    const conversation = conversationOf([userMessage('u1', 'go')]);
    const result = await runAgentTurn({
      model,
      system: 'You are a coding agent.',
      tools: {},
      maxSteps: 1,
      signal: new AbortController().signal,
      conversation,
      ui: quietUi,
      overflowRetriesPerTurn: 1,
      cacheHints: () => ({ provider: 'openai-compatible', ttl: '5m' }),
    });
    assert.equal(result.error, undefined);
    assert.deepEqual(
      conversation.records.map((r) => r.type),
      ['message'],
    );
    assert.match(JSON.stringify(conversation.records[0]), /Done\./, 'the answer is kept');
    assert.deepEqual(breakpoints(bodies[0]), []);
  });

  it("a summary continuing an Anthropic conversation sends the agent's tool definitions as the agent's streamed request sent them", async () => {
    const agentBodies: unknown[] = [];
    const readFile = tool({ description: 'Read a file.', inputSchema: z.object({ path: z.string() }), execute: async () => 'text' });
    const hints: CacheHints = { provider: 'anthropic', ttl: '5m' };
    const agentModel = createAnthropic({ apiKey: 'test', baseURL: 'http://anthropic.test/v1', fetch: sseFetch([anthropicStream], agentBodies) })(
      'claude-sonnet-4-0',
    );
    const conversation = conversationOf([userMessage('u1', 'go')]);
    await runAgentTurn({
      model: agentModel,
      system: 'You are a coding agent.',
      tools: { read_file: readFile },
      maxSteps: 1,
      signal: new AbortController().signal,
      conversation,
      ui: quietUi,
      overflowRetriesPerTurn: 1,
      cacheHints: () => hints,
      now: () => 1_700_000_000_000,
    });
    const summaryBodies: unknown[] = [];
    const answer = JSON.stringify({
      id: 'msg_03',
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-20250514',
      content: [{ type: 'text', text: '## Summary' }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: 25, cache_read_input_tokens: 1_200, output_tokens: 15 },
    });
    const summaryModel = createAnthropic({ apiKey: 'test', baseURL: 'http://anthropic.test/v1', fetch: sseFetch([answer], summaryBodies) })(
      'claude-sonnet-4-0',
    );
    const summarizer = createAiSummarizer({
      model: summaryModel,
      name: 'anthropic/claude',
      continueFrom: () => ({ system: 'You are a coding agent.', tools: { read_file: readFile }, cache: { hints: () => hints } }),
    });
    await summarizer.summarize({
      system: 'summarize',
      messages: [],
      maxOutputTokens: 100,
      temperature: 0,
      purpose: 'summary',
      continuation: { messages: [userMessage('u1', 'go')], directive: 'Summarize the conversation so far.' },
    });
    // The tools begin the prompt: any difference in them and nothing after them is read from the cache.
    const tools = (body: unknown) => JSON.stringify((body as { tools?: unknown }).tools);
    assert.match(tools(agentBodies[0]), /"name":"read_file"/);
    assert.equal(tools(summaryBodies[0]), tools(agentBodies[0]));
    // Anthropic keeps the messages' cache only for the same tool choice: the summary sends the agent's.
    const choice = (body: unknown) => JSON.stringify((body as { tool_choice?: unknown }).tool_choice);
    assert.equal(choice(summaryBodies[0]), choice(agentBodies[0]));
  });

  it('a summary continuing the conversation gets the same breakpoints, none on its directive, and reports its usage', async () => {
    const bodies: unknown[] = [];
    // A summary is not streamed: the Messages API's JSON answer.
    const answer = JSON.stringify({
      id: 'msg_02',
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-20250514',
      content: [{ type: 'text', text: '## Summary' }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: 25, cache_creation_input_tokens: 1_800, cache_read_input_tokens: 12_000, output_tokens: 15 },
    });
    const model = createAnthropic({ apiKey: 'test', baseURL: 'http://anthropic.test/v1', fetch: sseFetch([answer], bodies) })('claude-sonnet-4-0');
    const summarizer = createAiSummarizer({
      model,
      name: 'anthropic/claude',
      continueFrom: () => ({ system: 'You are a coding agent.', tools: {}, cache: { hints: () => ({ provider: 'anthropic', ttl: '5m' }) } }),
    });
    const response = await summarizer.summarize({
      system: 'summarize',
      messages: [],
      maxOutputTokens: 100,
      temperature: 0,
      purpose: 'summary',
      continuation: { messages: wideStep(15), directive: 'Summarize the conversation so far.' },
    });
    assert.deepEqual(breakpoints(bodies[0]), ['system[0]', 'messages[0].content[0]', 'messages[2].content[14]']);
    const messages = (bodies[0] as { messages: Array<{ role: string; content: Array<{ text?: string }> }> }).messages;
    assert.equal(messages.at(-1)!.content.at(-1)!.text, 'Summarize the conversation so far.');
    assert.deepEqual(response.usage, {
      inputTokens: 13_825,
      outputTokens: 15,
      cacheReadTokens: 12_000,
      cacheWriteTokens: 1_800,
      modelId: 'claude-sonnet-4-20250514',
      provider: 'anthropic',
      cacheTtl: '5m',
    });
  });
});
