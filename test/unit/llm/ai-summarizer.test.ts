import assert from 'node:assert/strict';
import { APICallError, tool } from 'ai';
import { z } from 'zod';
import { MockLanguageModelV4 } from 'ai/test';
import type { SummaryRequest } from '../../../src/core/ports';
import { createAiSummarizer } from '../../../src/llm/ai-summarizer';

type GenerateResult = Awaited<ReturnType<MockLanguageModelV4['doGenerate']>>;

const usage = (input: number | undefined, output: number | undefined): GenerateResult['usage'] => ({
  inputTokens: { total: input, noCache: input, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: output, text: output, reasoning: undefined },
});

const answer = (text: string, extra: Partial<GenerateResult> = {}): GenerateResult => ({
  content: [{ type: 'text', text }],
  finishReason: { unified: 'stop', raw: 'stop' },
  usage: usage(120, 30),
  warnings: [],
  ...extra,
});

const request: SummaryRequest = {
  system: 'You write handover summaries.',
  messages: [
    { role: 'system', content: 'Previous summary: set up the repo.' },
    { role: 'user', content: '[#1 user] add a test' },
    { role: 'assistant', content: '[#2 assistant] added test/a.test.ts' },
  ],
  maxOutputTokens: 900,
  temperature: 0.2,
  purpose: 'summary',
};

describe('createAiSummarizer', () => {
  it('sends the structured request with roles intact, the prompt as the system message', async () => {
    const model = new MockLanguageModelV4({ doGenerate: answer('## Session Summary') });
    const summarizer = createAiSummarizer({ model, name: 'test:model' });
    await summarizer.summarize(request);

    const call = model.doGenerateCalls[0];
    assert.ok(call);
    const prompt = call.prompt.map((m) => ({
      role: m.role,
      text: typeof m.content === 'string' ? m.content : m.content.map((p) => ('text' in p ? p.text : '')).join(''),
    }));
    assert.deepEqual(prompt, [
      { role: 'system', text: 'You write handover summaries.' },
      { role: 'system', text: 'Previous summary: set up the repo.' },
      { role: 'user', text: '[#1 user] add a test' },
      { role: 'assistant', text: '[#2 assistant] added test/a.test.ts' },
    ]);
  });

  it('passes temperature and the output token cap to the model', async () => {
    const model = new MockLanguageModelV4({ doGenerate: answer('s') });
    await createAiSummarizer({ model, name: 'n' }).summarize(request);
    assert.equal(model.doGenerateCalls[0]?.temperature, 0.2);
    assert.equal(model.doGenerateCalls[0]?.maxOutputTokens, 900);
  });

  it('returns the text, the responding model id and the reported usage', async () => {
    const model = new MockLanguageModelV4({
      doGenerate: answer('## Session Summary\nDone.', { response: { modelId: 'gpt-4o-mini-2024-07-18' } }),
    });
    const summarizer = createAiSummarizer({ model, name: 'openai:gpt-4o-mini', contextWindow: 128_000 });
    const response = await summarizer.summarize(request);
    assert.deepEqual(response, {
      text: '## Session Summary\nDone.',
      model: 'gpt-4o-mini-2024-07-18',
      usage: { inputTokens: 120, outputTokens: 30, modelId: 'gpt-4o-mini-2024-07-18' },
    });
    assert.equal(summarizer.name, 'openai:gpt-4o-mini');
    assert.equal(summarizer.contextWindow, 128_000);
  });

  it('leaves usage out when the provider reports none', async () => {
    const model = new MockLanguageModelV4({ doGenerate: answer('s', { usage: usage(undefined, undefined) }) });
    const response = await createAiSummarizer({ model, name: 'n' }).summarize(request);
    assert.equal(response.usage, undefined);
  });

  it('hands the abort signal to the model and rejects when it fires', async () => {
    const controller = new AbortController();
    let seen: AbortSignal | undefined;
    const model = new MockLanguageModelV4({
      doGenerate: (options) => {
        seen = options.abortSignal;
        return new Promise<GenerateResult>((_resolve, reject) => {
          options.abortSignal?.addEventListener('abort', () => reject(options.abortSignal?.reason));
        });
      },
    });
    const pending = createAiSummarizer({ model, name: 'n' }).summarize(request, controller.signal);
    await new Promise((resolve) => setTimeout(resolve, 5));
    controller.abort();
    await assert.rejects(pending, (error: Error) => error.name === 'AbortError');
    assert.ok(seen, 'the model received a signal');
    assert.equal(seen.aborted, true);
  });

  it('lets a model error through with its message, without retrying what a retry cannot fix', async () => {
    let calls = 0;
    const model = new MockLanguageModelV4({
      doGenerate: () => {
        calls += 1;
        throw new APICallError({
          message: "This model's maximum context length is 8192 tokens",
          url: 'http://x/v1/chat/completions',
          requestBodyValues: {},
          statusCode: 400,
          isRetryable: false,
        });
      },
    });
    await assert.rejects(createAiSummarizer({ model, name: 'n' }).summarize(request), (error: unknown) => {
      assert.ok(APICallError.isInstance(error));
      assert.match(error.message, /maximum context length is 8192/);
      return true;
    });
    assert.equal(calls, 1);
  });

  it('retries a retryable failure exactly once', async () => {
    let calls = 0;
    const model = new MockLanguageModelV4({
      doGenerate: () => {
        calls += 1;
        throw new APICallError({
          message: 'overloaded',
          url: 'http://x/v1/chat/completions',
          requestBodyValues: {},
          statusCode: 503,
          isRetryable: true,
          // Keeps the backoff short.
          responseHeaders: { 'retry-after-ms': '1' },
        });
      },
    });
    await assert.rejects(createAiSummarizer({ model, name: 'n' }).summarize(request), /overloaded/);
    assert.equal(calls, 2);
  });
});

describe('a summary request that continues the conversation', () => {
  const agentTools = {
    read_file: tool({
      description: 'Read a file.',
      inputSchema: z.object({ path: z.string() }),
      execute: async ({ path }): Promise<string> => {
        throw new Error(`a tool must never run from a summary request (${path})`);
      },
    }),
  };
  const view = [
    { id: 'u1', role: 'user' as const, content: [{ type: 'text' as const, text: 'Fix the parser' }] },
    {
      id: 'a1',
      role: 'assistant' as const,
      content: [{ type: 'tool-call' as const, toolCallId: 'c1', toolName: 'read_file', input: { path: 'src/parser.ts' } }],
    },
    {
      id: 't1',
      role: 'tool' as const,
      content: [{ type: 'tool-result' as const, toolCallId: 'c1', toolName: 'read_file', output: 'export function parse() {}' }],
    },
  ];
  const continued: SummaryRequest = { ...request, continuation: { messages: view, directive: 'Summarize the conversation above.' } };

  it("is sent after the agent's system prompt and tools, with its messages as the agent sent them, tool use off", async () => {
    const model = new MockLanguageModelV4({ doGenerate: answer('## Session Summary') });
    const summarizer = createAiSummarizer({ model, name: 'n', continueFrom: () => ({ system: 'You are the agent.', tools: agentTools }) });
    assert.equal(summarizer.continues, true);
    await summarizer.summarize(continued);
    const call = model.doGenerateCalls[0]!;
    assert.deepEqual(
      call.prompt.map((m) => m.role),
      ['system', 'user', 'assistant', 'tool', 'user'],
    );
    assert.equal(call.prompt[0]!.content, 'You are the agent.');
    assert.match(JSON.stringify(call.prompt.at(-1)), /Summarize the conversation above/);
    assert.deepEqual(
      (call.tools ?? []).map((t) => t.name),
      ['read_file'],
    );
    assert.deepEqual(call.toolChoice, { type: 'none' });
  });

  it('runs no tool the model calls anyway: it reports the call, which the engine answers by asking plainly, and says the server let it', async () => {
    const model = new MockLanguageModelV4({
      doGenerate: answer('', {
        content: [{ type: 'tool-call', toolCallId: 'x', toolName: 'read_file', input: JSON.stringify({ path: 'a' }) }],
        finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
      }),
    });
    const ignored: (readonly string[])[] = [];
    const summarizer = createAiSummarizer({
      model,
      name: 'n',
      continueFrom: () => ({ system: 's', tools: agentTools }),
      onToolChoiceIgnored: (called) => ignored.push(called),
    });
    const response = await summarizer.summarize(continued);
    assert.deepEqual(response.calledTools, ['read_file']);
    assert.equal(response.text, '', 'no summary text is taken from a tool call');
    assert.deepEqual(ignored, [['read_file']]);
    assert.equal(model.doGenerateCalls.length, 1, 'asked once: asking again is the engine’s to decide');
  });

  it("keeps the agent's tool choice for Anthropic, whose cache of the messages holds only for the same choice, and asks plainly after a call", async () => {
    const model = new MockLanguageModelV4({
      doGenerate: answer('', {
        content: [{ type: 'tool-call', toolCallId: 'x', toolName: 'read_file', input: JSON.stringify({ path: 'a' }) }],
        finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
      }),
    });
    const ignored: (readonly string[])[] = [];
    const response = await createAiSummarizer({
      model,
      name: 'n',
      continueFrom: () => ({ system: 's', tools: agentTools, cache: { hints: () => ({ provider: 'anthropic', ttl: '5m' }) } }),
      onToolChoiceIgnored: (called) => ignored.push(called),
    }).summarize(continued);
    assert.deepEqual(model.doGenerateCalls[0]!.toolChoice, { type: 'auto' });
    assert.deepEqual(response.calledTools, ['read_file'], 'the call is reported, and the engine asks with the plain request');
    assert.equal(response.text, '');
    assert.deepEqual(ignored, [], 'a call under "auto" says nothing of the server');
  });

  it('reports a call the model wrote as text, as a server that honours "none" only by not parsing calls leaves it', async () => {
    const calls = [
      '<tool_call>\n{"name": "read_file", "arguments": {"path": "src/parser.ts"}}\n</tool_call>',
      '{"name": "read_file", "parameters": {"path": "src/parser.ts"}}',
    ];
    for (const text of calls) {
      const ignored: (readonly string[])[] = [];
      const model = new MockLanguageModelV4({ doGenerate: answer(text) });
      const response = await createAiSummarizer({
        model,
        name: 'n',
        continueFrom: () => ({ system: 's', tools: agentTools }),
        onToolChoiceIgnored: (called) => ignored.push(called),
      }).summarize(continued);
      assert.deepEqual(response.calledTools, ['read_file'], text);
      assert.deepEqual(ignored, [['read_file']], text);
    }
  });

  it('takes a summary as a summary, a call it quotes further down included, and a plain request’s answer as it is', async () => {
    const summary = '## Session Summary (Compaction Round 1)\n### Completed Work\n- Called `{"name": "read_file"}` on src/parser.ts';
    const ignored: (readonly string[])[] = [];
    const model = new MockLanguageModelV4({ doGenerate: answer(summary) });
    const summarizer = createAiSummarizer({
      model,
      name: 'n',
      continueFrom: () => ({ system: 's', tools: agentTools }),
      onToolChoiceIgnored: (called) => ignored.push(called),
    });
    assert.deepEqual((await summarizer.summarize(continued)).calledTools, undefined);
    const plain = await createAiSummarizer({
      model: new MockLanguageModelV4({ doGenerate: answer('<tool_call>x</tool_call>') }),
      name: 'n',
    }).summarize(request);
    assert.equal(plain.calledTools, undefined, 'a request that offered no tools is not judged by its text here');
    assert.deepEqual(ignored, []);
  });

  it('falls back to the structured request before the agent has sent anything, or without a continuation', async () => {
    const model = new MockLanguageModelV4({ doGenerate: answer('s') });
    await createAiSummarizer({ model, name: 'n', continueFrom: () => undefined }).summarize(continued);
    await createAiSummarizer({ model, name: 'n', continueFrom: () => ({ system: 's', tools: agentTools }) }).summarize(request);
    for (const call of model.doGenerateCalls) assert.equal(call.prompt[0]!.content, 'You write handover summaries.');
  });
});
