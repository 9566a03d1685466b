import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { createOpenAI } from '@ai-sdk/openai';
import { APICallError, generateText, stepCountIs, streamText, tool } from 'ai';
import { z } from 'zod';
import { DEFAULT_CONFIG } from '../../../src/core/config';
import { isContextOverflow } from '../../../src/core/overflow-error';
import { buildDirective, DEFAULT_SYSTEM_PROMPT, SUMMARY_SECTIONS } from '../../../src/core/summary-request';
import { demoScenario } from '../../../scripts/scripted-model/scenarios';
import { startScriptedModelServer, type RecordedRequest, type ScriptedModelServer } from '../../../scripts/scripted-model/server';
import { renderedFunctions, tokenRule } from '../../../scripts/scripted-model/tokens';
import { chatCompletionRequestSchema, countPromptTokens, type ChatCompletionRequest } from '../../../scripts/scripted-model/wire';

const ROOT = join(__dirname, '..', '..', '..');
const CLI = join(ROOT, 'scripts', 'scripted-model', 'cli.ts');

function chatModel(server: ScriptedModelServer, id = 'scripted') {
  return createOpenAI({ baseURL: server.url, apiKey: 'x' }).chat(id);
}

function post(url: string, body: unknown, init: RequestInit = {}): Promise<Response> {
  return fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body), ...init });
}

function completions(server: ScriptedModelServer): string {
  return `${server.url}/chat/completions`;
}

function origin(server: ScriptedModelServer): string {
  return `http://127.0.0.1:${server.port}`;
}

/** The last recorded chat completion request. */
function lastCompletion(server: ScriptedModelServer): RecordedRequest {
  const found = server.requests.filter((r) => r.path === '/v1/chat/completions').at(-1);
  assert.ok(found, 'a chat completion request was recorded');
  return found;
}

function recordedBody(record: RecordedRequest): ChatCompletionRequest {
  return chatCompletionRequestSchema.parse(record.body);
}

async function waitFor(predicate: () => boolean, what: string, timeoutMs = 3000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function caught(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  assert.fail('expected the call to fail');
}

const summaryDirective = (round: number, originalTask?: string, focus?: string): string =>
  buildDirective({
    round,
    summary: DEFAULT_CONFIG.summary,
    ...(originalTask !== undefined ? { originalTask } : {}),
    ...(focus !== undefined ? { focus } : {}),
  });

describe('offline scripted model server', () => {
  let server: ScriptedModelServer;
  const rule = tokenRule('openai');
  const count = (text: string): number => rule.count(text);

  before(async () => {
    server = await startScriptedModelServer();
  });
  after(() => server.close());
  beforeEach(() => server.reset());

  it('lists the configured models as owned by the offline scripted model on GET /v1/models', async () => {
    assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    const response = await fetch(`${server.url}/models`);
    assert.equal(response.status, 200);
    const body = (await response.json()) as { object: string; data: { id: string; object: string; owned_by: string }[] };
    assert.equal(body.object, 'list');
    assert.deepEqual(
      body.data.map(({ id, object, owned_by }) => ({ id, object, owned_by })),
      [
        { id: 'scripted', object: 'model', owned_by: 'longrun-offline-scripted-model' },
        { id: 'scripted-small', object: 'model', owned_by: 'longrun-offline-scripted-model' },
      ],
    );
  });

  it("counts prompt tokens by OpenAI's rule: framing per message and tool call, the reply's priming, tool definitions as OpenAI renders them", () => {
    const tools = [{ type: 'function' as const, function: { name: 'read_file', parameters: { type: 'object' } } }];
    const request = chatCompletionRequestSchema.parse({
      model: 'scripted',
      messages: [
        { role: 'user', content: 'hello' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'read_file', arguments: '{"path":"a.md"}' } }],
        },
        { role: 'tool', tool_call_id: 'c1', content: [{ type: 'text', text: 'line one' }] },
      ],
      tools,
    });
    const { perMessage, perToolCall, perRequest } = rule;
    const expected =
      perRequest +
      (perMessage + count('hello')) +
      (perMessage + perToolCall + count('read_file') + count('{"path":"a.md"}')) +
      (perMessage + count('line one')) +
      count(renderedFunctions(tools.map((t) => t.function)));
    assert.equal(countPromptTokens(request, rule), expected);
    assert.ok(count(renderedFunctions(tools.map((t) => t.function))) < count(JSON.stringify(tools)), 'rendered shorter than their JSON');
    assert.equal(
      countPromptTokens(chatCompletionRequestSchema.parse({ model: 'm', messages: [{ role: 'user', content: 'hello' }] }), rule),
      perRequest + perMessage + count('hello'),
    );
  });

  it('streams a completion through the AI SDK: the text arrives in pieces and inputTokens is the recorded prompt_tokens', async () => {
    const result = streamText({ model: chatModel(server), messages: [{ role: 'user', content: 'Hello there' }], maxRetries: 0 });
    const deltas: string[] = [];
    for await (const delta of result.textStream) deltas.push(delta);
    const usage = await result.usage;

    const record = lastCompletion(server);
    const body = recordedBody(record);
    assert.equal(body.stream, true);
    assert.equal(body.stream_options?.include_usage, true);
    assert.equal(record.promptTokens, countPromptTokens(body, rule));
    assert.equal(record.promptTokens, rule.perRequest + rule.perMessage + count('Hello there'));
    assert.equal(usage.inputTokens, record.promptTokens);

    const text = deltas.join('');
    assert.equal(text, `Offline scripted model: I received your message (${record.promptTokens} tokens in context).`);
    assert.ok(deltas.length > 1, `the content came in ${deltas.length} delta(s)`);
    assert.equal(usage.outputTokens, count(text));
    assert.equal(record.status, 200);
    assert.equal(record.outcome, 'answered');
  });

  it('answers a non-streaming request through generateText with its text and usage', async () => {
    server.script([{ text: 'A scripted, non-streamed answer.' }]);
    const result = await generateText({ model: chatModel(server), prompt: 'anything', maxRetries: 0 });
    const record = lastCompletion(server);
    assert.equal(result.text, 'A scripted, non-streamed answer.');
    assert.equal(result.finishReason, 'stop');
    assert.ok(!recordedBody(record).stream, 'the request was not streamed');
    assert.equal(result.usage.inputTokens, record.promptTokens);
    assert.equal(result.usage.outputTokens, count('A scripted, non-streamed answer.'));
  });

  it('carries a tool round trip: the scripted call is executed and the next request holds the call and its result', async () => {
    server.script([{ toolCalls: [{ name: 'read_file', arguments: { path: 'README.md' } }] }]);
    const executed: unknown[] = [];
    const result = streamText({
      model: chatModel(server),
      prompt: 'What is in the readme?',
      tools: {
        read_file: tool({
          description: 'Read a file',
          inputSchema: z.object({ path: z.string() }),
          execute: async (input) => {
            executed.push(input);
            return `# Title of ${input.path}\nsecond line`;
          },
        }),
      },
      stopWhen: stepCountIs(3),
      maxRetries: 0,
    });
    const text = await result.text;

    assert.deepEqual(executed, [{ path: 'README.md' }]);
    const chats = server.requests.filter((r) => r.path === '/v1/chat/completions');
    assert.equal(chats.length, 2);
    const second = recordedBody(chats[1] as RecordedRequest);
    const assistant = second.messages.find((m) => m.role === 'assistant');
    assert.ok(assistant?.role === 'assistant');
    const call = assistant.tool_calls?.[0];
    assert.equal(call?.function.name, 'read_file');
    assert.deepEqual(JSON.parse(call?.function.arguments ?? 'null'), { path: 'README.md' });
    const toolMessage = second.messages.at(-1);
    assert.ok(toolMessage?.role === 'tool');
    assert.equal(toolMessage.tool_call_id, call?.id);
    assert.match(String(toolMessage.content), /# Title of README\.md/);
    assert.equal(text, 'Offline scripted model: the tool returned "# Title of README.md".');
  });

  it('lets the demo scenario read a mentioned path, create a file on "create <path>", and only call offered tools', () => {
    const tools = ['read_file', 'create_file'].map((name) => ({ type: 'function', function: { name } }));
    const ask = (content: string, extra: object = { tools }) =>
      demoScenario({
        request: chatCompletionRequestSchema.parse({ model: 'scripted', messages: [{ role: 'user', content }], ...extra }),
        promptTokens: 42,
        window: 100,
      });

    assert.deepEqual(ask('Please look at src/core/budget.ts and explain it').toolCalls, [
      { name: 'read_file', arguments: { path: 'src/core/budget.ts' } },
    ]);
    assert.deepEqual(ask('what does ./README.md say?').toolCalls, [{ name: 'read_file', arguments: { path: 'README.md' } }]);
    const created = ask('create notes/todo.md with my list').toolCalls?.[0];
    assert.equal(created?.name, 'create_file');
    assert.equal(created?.arguments.path, 'notes/todo.md');
    assert.equal(typeof created?.arguments.content, 'string');

    assert.equal(ask('see https://example.com/page.html, e.g. the intro').toolCalls, undefined, 'URLs are not workspace paths');
    assert.equal(ask('look at README.md', {}).toolCalls, undefined, 'no tool offered');
    assert.equal(ask('look at README.md', { tools, tool_choice: 'none' }).toolCalls, undefined, 'tool_choice none');
    assert.deepEqual(ask('hi there'), { text: 'Offline scripted model: I received your message (42 tokens in context).' });

    const withSkill = [...tools, { type: 'function', function: { name: 'skill' } }];
    assert.deepEqual(ask('use the skill demo to greet me', { tools: withSkill }).toolCalls, [{ name: 'skill', arguments: { name: 'demo' } }]);
    assert.equal(ask('use the skill demo', { tools }).toolCalls, undefined, 'no skill tool offered, no skill called');

    const afterResult = demoScenario({
      request: chatCompletionRequestSchema.parse({
        model: 'scripted',
        tools,
        messages: [
          { role: 'user', content: 'look at README.md' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'c1', type: 'function', function: { name: 'read_file', arguments: '{"path":"README.md"}' } }],
          },
          { role: 'tool', tool_call_id: 'c1', content: 'README.md (lines 1-2 of 2)\n1| # Longrun' },
          { role: 'assistant', content: 'It is the readme.' },
        ],
      }),
      promptTokens: 1,
      window: 100,
    });
    assert.equal(afterResult.toolCalls, undefined, 'a tool result after the request means it was already read');
  });

  it('refuses a prompt one token over the window with OpenAI context_length_exceeded, and accepts one exactly at it', async () => {
    const request = { model: 'scripted-small', messages: [{ role: 'user', content: 'Fit me exactly into the window.' }] };
    const tokens = countPromptTokens(chatCompletionRequestSchema.parse(request), rule);

    server.setWindow('scripted-small', tokens);
    assert.equal((await post(completions(server), request)).status, 200);

    server.setWindow('scripted-small', tokens - 1);
    const response = await post(completions(server), request);
    assert.equal(response.status, 400);
    assert.deepEqual(await response.json(), {
      error: {
        message: `This model's maximum context length is ${tokens - 1} tokens. However, your messages resulted in ${tokens} tokens. Please reduce the length of the messages.`,
        type: 'invalid_request_error',
        param: 'messages',
        code: 'context_length_exceeded',
      },
    });
    assert.equal(lastCompletion(server).status, 400);
  });

  describe('models like local servers', () => {
    let local: ScriptedModelServer;
    before(async () => {
      local = await startScriptedModelServer({
        models: [
          { id: 'advertised', window: 6_000, advertiseWindow: true },
          { id: 'ollama-like', window: 200, overflow: 'truncate' },
        ],
      });
    });
    after(() => local.close());

    it('states an advertised window in /v1/models as vLLM and gateways do', async () => {
      const body = (await (await fetch(`${local.url}/models`)).json()) as { data: Array<Record<string, unknown>> };
      assert.equal(body.data[0]!.context_length, 6_000);
      assert.equal(body.data[0]!.max_model_len, 6_000);
      assert.equal(body.data[1]!.context_length, undefined);
    });

    it('drops the start of a prompt over the window without saying so, and reports only what it read', async () => {
      const messages = [
        { role: 'system', content: 'You are a careful agent. '.repeat(20) },
        { role: 'user', content: 'The original task. '.repeat(20) },
        { role: 'assistant', content: 'Working on it.' },
        { role: 'user', content: 'What next?' },
      ];
      const sent = countPromptTokens(chatCompletionRequestSchema.parse({ model: 'ollama-like', messages }), rule);
      assert.ok(sent > 200);
      const response = await post(completions(local), { model: 'ollama-like', messages, max_tokens: 4_096 });
      assert.equal(response.status, 200, 'no error, as Ollama gives none');
      const body = (await response.json()) as { usage: { prompt_tokens: number } };
      assert.ok(body.usage.prompt_tokens <= 200, `read ${body.usage.prompt_tokens}`);
      const record = lastCompletion(local);
      assert.deepEqual(record.truncated, { sentTokens: sent, droppedMessages: 1 }, 'the system prompt went first');
      assert.equal(record.promptTokens, body.usage.prompt_tokens);
    });
  });

  describe('a model whose server ignores tool_choice', () => {
    let careless: ScriptedModelServer;
    const tools = ['read_file', 'create_file'].map((name) => ({ type: 'function', function: { name, parameters: { type: 'object' } } }));
    const conversation = [
      { role: 'user', content: 'Explain src/parser.ts' },
      { role: 'assistant', content: 'It parses.' },
    ];
    before(async () => {
      careless = await startScriptedModelServer({
        models: [
          { id: 'careless', window: 6_000, ignoresToolChoice: true },
          { id: 'careful', window: 6_000 },
        ],
      });
    });
    after(() => careless.close());

    const answer = async (model: string, extra: object) => {
      const response = await post(completions(careless), {
        model,
        messages: [...conversation, { role: 'user', content: summaryDirective(1) }],
        ...extra,
      });
      assert.equal(response.status, 200);
      return ((await response.json()) as { choices: Array<{ message: { content: string | null; tool_calls?: unknown[] }; finish_reason: string }> })
        .choices[0]!;
    };

    it('answers a summary request that offers tools with a tool call, even under tool_choice "none"', async () => {
      const choice = await answer('careless', { tools, tool_choice: 'none' });
      assert.equal(choice.finish_reason, 'tool_calls');
      assert.deepEqual(choice.message.tool_calls, [
        { id: 'call_scripted_1', type: 'function', function: { name: 'read_file', arguments: '{"path":"src/parser.ts"}' } },
      ]);
      assert.equal(lastCompletion(careless).summary, true);
      assert.equal(recordedBody(lastCompletion(careless)).tool_choice, 'none', 'the request is recorded as sent');
    });

    it('answers the same request without tools with a summary, and a careful server honours "none"', async () => {
      assert.match((await answer('careless', {})).message.content ?? '', /^## Session Summary \(Compaction Round 1\)/);
      assert.match((await answer('careful', { tools, tool_choice: 'none' })).message.content ?? '', /^## Session Summary/);
    });
  });

  it("counts the requested output tokens against the window, with OpenAI's wording for that case", async () => {
    const request = { model: 'scripted-small', messages: [{ role: 'user', content: 'short' }] };
    const tokens = countPromptTokens(chatCompletionRequestSchema.parse(request), rule);
    server.setWindow('scripted-small', tokens + 100);
    assert.equal((await post(completions(server), { ...request, max_tokens: 100 })).status, 200);
    const response = await post(completions(server), { ...request, max_completion_tokens: 101 });
    assert.equal(response.status, 400);
    const body = (await response.json()) as { error: { message: string; code: string } };
    assert.equal(body.error.code, 'context_length_exceeded');
    assert.equal(
      body.error.message,
      `This model's maximum context length is ${tokens + 100} tokens. However, you requested ${tokens + 101} tokens (${tokens} in the messages, 101 in the completion). Please reduce the length of the messages or completion.`,
    );
  });

  it('gives the AI SDK an APICallError with the overflow body when a prompt exceeds the 8192-token default window', async () => {
    const long = 'overflow '.repeat(9000);
    const error = await caught(generateText({ model: chatModel(server, 'scripted-small'), prompt: long, maxRetries: 0 }));
    assert.ok(APICallError.isInstance(error), `got ${String(error)}`);
    assert.equal(error.statusCode, 400);
    const tokens = lastCompletion(server).promptTokens;
    assert.ok(tokens !== undefined && tokens > 8192);
    assert.deepEqual(JSON.parse(error.responseBody ?? 'null'), {
      error: {
        message: `This model's maximum context length is 8192 tokens. However, your messages resulted in ${tokens} tokens. Please reduce the length of the messages.`,
        type: 'invalid_request_error',
        param: 'messages',
        code: 'context_length_exceeded',
      },
    });
    assert.equal(isContextOverflow(error), true);
  });

  it("answers 404 model_not_found for an unknown model and 400 in OpenAI's shape for a malformed body", async () => {
    const unknown = await post(completions(server), { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(unknown.status, 404);
    const unknownBody = (await unknown.json()) as { error: { type: string; code: string; message: string } };
    assert.equal(unknownBody.error.code, 'model_not_found');
    assert.equal(unknownBody.error.type, 'invalid_request_error');
    assert.match(unknownBody.error.message, /gpt-4o/);

    const wrongRole = await post(completions(server), { model: 'scripted', messages: [{ role: 'wizard', content: 'hi' }] });
    assert.equal(wrongRole.status, 400);
    const wrongRoleBody = (await wrongRole.json()) as { error: { type: string; param: string | null; message: string } };
    assert.equal(wrongRoleBody.error.type, 'invalid_request_error');
    assert.equal(wrongRoleBody.error.param, 'messages[0].role');

    const notJson = await fetch(completions(server), { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"model":' });
    assert.equal(notJson.status, 400);
    assert.match(((await notJson.json()) as { error: { message: string } }).error.message, /could not parse the JSON body/);

    const toolWithoutId = await post(completions(server), { model: 'scripted', messages: [{ role: 'tool', content: 'x' }] });
    assert.equal(toolWithoutId.status, 400, 'a tool message needs its tool_call_id');
  });

  it('answers a scripted 500, which the AI SDK reports as a retryable APICallError', async () => {
    server.script([{ error: { status: 500 } }]);
    const error = await caught(generateText({ model: chatModel(server), prompt: 'x', maxRetries: 0 }));
    assert.ok(APICallError.isInstance(error), `got ${String(error)}`);
    assert.equal(error.statusCode, 500);
    assert.equal(error.isRetryable, true);
    assert.equal((JSON.parse(error.responseBody ?? '{}') as { error: { type: string } }).error.type, 'server_error');
  });

  it('answers a scripted 429 with Retry-After, which the AI SDK waits for before retrying', async () => {
    server.script([{ error: { status: 429, retryAfterSeconds: 7 } }]);
    const raw = await post(completions(server), { model: 'scripted', messages: [{ role: 'user', content: 'x' }] });
    assert.equal(raw.status, 429);
    assert.equal(raw.headers.get('retry-after'), '7');
    assert.equal(((await raw.json()) as { error: { code: string } }).error.code, 'rate_limit_exceeded');

    // One second, not the SDK's own 2 s first backoff: the header is what it waited for.
    server.script([{ error: { status: 429, retryAfterSeconds: 1 } }, { text: 'after the wait' }]);
    const started = Date.now();
    const result = await generateText({ model: chatModel(server), prompt: 'x', maxRetries: 1 });
    const elapsed = Date.now() - started;
    assert.equal(result.text, 'after the wait');
    assert.ok(elapsed >= 900 && elapsed < 1900, `retried after ${elapsed} ms`);
    assert.deepEqual(
      server.requests.filter((r) => r.path === '/v1/chat/completions').map((r) => r.status),
      [429, 429, 200],
    );
  });

  it('leaves a hanging request unanswered until the client aborts it, then serves the next one', async () => {
    server.script([{ hang: true }]);
    const started = Date.now();
    const error = await caught(generateText({ model: chatModel(server), prompt: 'x', maxRetries: 0, abortSignal: AbortSignal.timeout(300) }));
    const elapsed = Date.now() - started;
    assert.ok(error instanceof Error && /abort|timeout/i.test(`${error.name} ${error.message}`), `got ${String(error)}`);
    assert.ok(elapsed >= 250 && elapsed < 3000, `ended after ${elapsed} ms`);
    const hung = lastCompletion(server);
    assert.equal(hung.outcome, 'hung');
    assert.equal(hung.status, null);

    const next = await generateText({ model: chatModel(server), prompt: 'x', maxRetries: 0 });
    assert.match(next.text, /^Offline scripted model: I received your message/);
  });

  it('breaks a stream after the given chunks, and the client gets an error instead of the rest', async () => {
    const full = 'This answer is cut off before it ends.';
    server.script([{ text: full, breakStreamAfterChunks: 2 }]);
    const result = streamText({ model: chatModel(server), prompt: 'x', maxRetries: 0 });
    const texts: string[] = [];
    let streamError: unknown;
    let finished = false;
    try {
      for await (const part of result.fullStream) {
        if (part.type === 'text-delta') texts.push(part.text);
        else if (part.type === 'error') streamError = part.error;
        else if (part.type === 'finish') finished = part.finishReason === 'stop';
      }
    } catch (error) {
      // The AI SDK rethrows a failure to read the response body from the stream itself.
      streamError = error;
    }
    assert.ok(streamError instanceof Error, 'the stream reported an error');
    assert.match(String((streamError as Error & { cause?: unknown }).cause ?? streamError), /terminated|closed/);
    assert.equal(finished, false, 'the stream did not finish normally');
    // The role chunk, then only the first of the content pieces.
    const received = texts.join('');
    assert.ok(received.length > 0 && received.length < full.length && full.startsWith(received), `received "${received}"`);
    assert.equal(lastCompletion(server).outcome, 'broken');
  });

  it('stops a text answer at max_tokens with finish_reason "length", as servers do', async () => {
    const long = Array.from({ length: 200 }, (_, i) => `word${i}`).join(' ');
    server.script([{ text: long }, { text: long }]);
    const cut = await generateText({ model: chatModel(server), prompt: 'x', maxRetries: 0, maxOutputTokens: 25 });
    assert.equal(cut.finishReason, 'length');
    assert.ok(cut.usage.outputTokens! <= 25, `${cut.usage.outputTokens} tokens`);
    assert.ok(long.startsWith(cut.text) && cut.text.length < long.length);
    const whole = await generateText({ model: chatModel(server), prompt: 'x', maxRetries: 0, maxOutputTokens: 4_000 });
    assert.equal(whole.finishReason, 'stop');
    assert.equal(whole.text, long);
  });

  it('answers a summary request with its round, original task, mentioned paths, message count and focus', async () => {
    server.script([{ text: 'kept for the agent' }]);
    const task = 'Add a parser in src/parser.ts and document it in README.md';
    const result = await generateText({
      model: chatModel(server),
      instructions: DEFAULT_SYSTEM_PROMPT,
      messages: [
        { role: 'user', content: `[#1 user] ${task}` },
        { role: 'assistant', content: '[#2 assistant] [tool call read_file#c1] {"path":"src/parser.ts"}' },
        { role: 'user', content: '[#3 tool] [tool result read_file#c1]\nimport { lex } from "./lexer.ts";' },
        { role: 'user', content: summaryDirective(3, task, 'the parser tests') },
      ],
      maxRetries: 0,
    });
    const summary = result.text;
    assert.match(summary, /^## Session Summary \(Compaction Round 3\)\n/);
    assert.ok(summary.includes(`### Original Task\n${task}\n`), summary);
    assert.ok(summary.includes('### Completed Work\n- Files mentioned: README.md, lexer.ts, src/parser.ts\n'), summary);
    // The system prompt and the three conversation messages; not the directive.
    assert.ok(summary.includes('### Current State\n- Summarized 4 messages.'), summary);
    assert.ok(summary.includes('### Focus\n- the parser tests'), summary);
    for (const section of SUMMARY_SECTIONS) assert.ok(summary.includes(`\n### ${section}\n`), `section ${section}`);
    assert.equal(lastCompletion(server).summary, true);

    const next = await generateText({ model: chatModel(server), prompt: 'go on', maxRetries: 0 });
    assert.equal(next.text, 'kept for the agent', 'a summary request does not consume the script');
    assert.equal(lastCompletion(server).summary, false);
  });

  it('recognises a summary directive without a focus or original task, and round 1 by default', async () => {
    const result = await generateText({ model: chatModel(server), prompt: 'Summarize. Write exactly these sections: …', maxRetries: 0 });
    assert.match(result.text, /^## Session Summary \(Compaction Round 1\)/);
    assert.ok(!result.text.includes('### Focus'));
    assert.ok(result.text.includes('- Files mentioned: none'));
    assert.ok(result.text.includes('- Summarized 0 messages.'));
  });

  it('fails summary requests as told until cleared, leaving ordinary requests alone', async () => {
    server.failSummaries({ error: { status: 500 } });
    const directive = summaryDirective(2);
    const error = await caught(generateText({ model: chatModel(server), prompt: directive, maxRetries: 0 }));
    assert.ok(APICallError.isInstance(error) && error.statusCode === 500, `got ${String(error)}`);
    const ordinary = await generateText({ model: chatModel(server), prompt: 'hello', maxRetries: 0 });
    assert.match(ordinary.text, /^Offline scripted model: I received/);

    server.failSummaries(undefined);
    const summary = await generateText({ model: chatModel(server), prompt: directive, maxRetries: 0 });
    assert.match(summary.text, /^## Session Summary \(Compaction Round 2\)/);
  });

  it("delays answers by the latency plus a step's delayMs", async () => {
    server.setLatency(150);
    server.script([{ delayMs: 150 }]);
    const started = Date.now();
    const result = await generateText({ model: chatModel(server), prompt: 'hello', maxRetries: 0 });
    assert.ok(Date.now() - started >= 290, `answered after ${Date.now() - started} ms`);
    assert.match(result.text, /^Offline scripted model: I received/, "a step with only a delay keeps the scenario's answer");
  });

  it('is programmable over the control HTTP API', async () => {
    const control = (path: string, body?: unknown): Promise<Response> => post(`${origin(server)}/__control/${path}`, body ?? null);
    const ask = (content: string): Promise<Response> => post(completions(server), { model: 'scripted', messages: [{ role: 'user', content }] });

    const queued = await control('script', [{ text: 'from the control API' }]);
    assert.equal(queued.status, 200);
    assert.deepEqual(await queued.json(), { queued: 1 });
    const answered = (await (await ask('hi')).json()) as {
      object: string;
      choices: { message: { content: string } }[];
      usage: { prompt_tokens: number };
    };
    assert.equal(answered.object, 'chat.completion');
    assert.equal(answered.choices[0]?.message.content, 'from the control API');

    assert.equal((await control('window', { model: 'scripted', window: 5 })).status, 200);
    assert.equal((await ask('hi')).status, 400);
    assert.equal((await control('window', { model: 'nope', window: 5 })).status, 400, 'unknown model');

    assert.equal((await control('fail-summaries', { error: { status: 503 } })).status, 200);
    assert.equal((await control('window', { model: 'scripted', window: 128000 })).status, 200);
    assert.equal((await ask('Write exactly these sections')).status, 503);
    assert.equal((await control('fail-summaries', null)).status, 200);
    assert.equal((await ask('Write exactly these sections')).status, 200);

    const typo = await control('script', [{ txt: 'misspelt' }]);
    assert.equal(typo.status, 400);
    assert.equal(((await typo.json()) as { error: { type: string } }).error.type, 'invalid_request_error');

    const listed = (await (await fetch(`${origin(server)}/__control/requests`)).json()) as RecordedRequest[];
    assert.deepEqual(
      listed.map((r) => [r.path, r.model, r.status, r.summary]),
      [
        ['/v1/chat/completions', 'scripted', 200, false],
        ['/v1/chat/completions', 'scripted', 400, false],
        ['/v1/chat/completions', 'scripted', 503, true],
        ['/v1/chat/completions', 'scripted', 200, true],
      ],
    );
    assert.equal(listed[0]?.promptTokens, answered.usage.prompt_tokens);
    assert.deepEqual((listed[0]?.body as { messages: unknown }).messages, [{ role: 'user', content: 'hi' }]);

    assert.equal((await control('reset')).status, 200);
    assert.equal(server.requests.length, 0);
    assert.equal((await fetch(`${origin(server)}/__control/nothing`)).status, 404);
  });

  it('refuses requests addressed to a host other than the loopback names', async () => {
    const { request } = await import('node:http');
    const status = await new Promise<number | undefined>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port: server.port, path: '/v1/models', headers: { Host: 'attacker.example:80' } }, (res) => {
        res.resume();
        resolve(res.statusCode);
      });
      req.on('error', reject);
      req.end();
    });
    assert.equal(status, 403);
  });

  it('ends hanging connections when closed', async () => {
    const own = await startScriptedModelServer();
    own.script([{ hang: true }]);
    const pending = post(completions(own), { model: 'scripted', messages: [{ role: 'user', content: 'x' }], stream: true });
    pending.catch(() => undefined);
    await waitFor(() => own.requests.some((r) => r.outcome === 'hung'), 'the request to hang');

    const started = Date.now();
    await own.close();
    assert.ok(Date.now() - started < 1000, 'close() did not wait for the hanging request');
    await assert.rejects(pending, 'the hanging request failed on the client');
    await assert.rejects(fetch(`${own.url}/models`), 'the server no longer listens');
  });

  it("is never imported by the extension's sources", () => {
    const offenders: string[] = [];
    const visit = (dir: string): void => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) visit(path);
        else if (/\.tsx?$/.test(entry.name) && /scripted-model/.test(readFileSync(path, 'utf8'))) offenders.push(path);
      }
    };
    visit(join(ROOT, 'src'));
    assert.deepEqual(offenders, []);
  });

  describe('cli', () => {
    it('prints its URL as one JSON line, serves, and exits cleanly on SIGTERM', async () => {
      const child = spawn(process.execPath, ['--import', 'tsx', CLI, '--port', '0', '--host', '127.0.0.1'], {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      try {
        const lines = createInterface({ input: child.stdout });
        const [line] = (await once(lines, 'line')) as [string];
        const started = JSON.parse(line) as { url: string; port: number };
        assert.equal(started.url, `http://127.0.0.1:${started.port}/v1`);
        const models = (await (await fetch(`${started.url}/models`)).json()) as { data: { id: string }[] };
        assert.deepEqual(
          models.data.map((m) => m.id),
          ['scripted', 'scripted-small'],
        );
        const exited = once(child, 'exit');
        child.kill('SIGTERM');
        const [code, signal] = (await exited) as [number | null, NodeJS.Signals | null];
        assert.deepEqual({ code, signal }, { code: 0, signal: null });
      } finally {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      }
    });

    it('refuses to bind any host but 127.0.0.1', async () => {
      const child = spawn(process.execPath, ['--import', 'tsx', CLI, '--host', '0.0.0.0'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
      const [code] = (await once(child, 'exit')) as [number | null];
      assert.equal(code, 2);
      assert.match(stderr, /binds 127\.0\.0\.1 only/);
    });
  });
});
