import assert from 'node:assert/strict';
import { generateText, stepCountIs, streamText, tool, type ModelMessage } from 'ai';
import { z } from 'zod';
import type { ProviderKind } from '../../../src/core/provider-kind';
import { describeOverflow, isContextOverflow } from '../../../src/core/overflow-error';
import { createEndpointModel, listEndpointModels } from '../../../src/llm/openai-endpoint';
import { MissingApiKeyError } from '../../../src/llm/providers';
import { discoverContextWindow } from '../../../src/llm/window-discovery';
import type { FormatName } from '../../../scripts/scripted-model/formats/format';
import { startScriptedModelServer, type ScriptedModelServer } from '../../../scripts/scripted-model/server';

/**
 * Each provider kind's model, made by its own AI SDK package, against the stand-in of its API over
 * loopback HTTP: a streamed tool loop, the usage with what the cache read and wrote as the stand-in
 * billed it, the provider's overflow error, and its model list and window.
 */

interface Case {
  readonly kind: ProviderKind;
  readonly format: FormatName;
  readonly model: string;
  readonly window: number;
  /** Which request parts carry cache breakpoints, for the providers that need them. */
  readonly marks: boolean;
}

const CASES: readonly Case[] = [
  { kind: 'openai-compatible', format: 'openai', model: 'scripted', window: 128_000, marks: false },
  { kind: 'openai', format: 'openai', model: 'gpt-5', window: 400_000, marks: false },
  { kind: 'anthropic', format: 'anthropic', model: 'claude-sonnet-4-5', window: 200_000, marks: true },
  { kind: 'google', format: 'google', model: 'gemini-2.5-flash', window: 1_048_576, marks: false },
  { kind: 'openrouter', format: 'openrouter', model: 'anthropic/claude-sonnet-4.5', window: 200_000, marks: true },
];

/** Long enough for every provider's minimum cacheable prefix (Gemini 2.5's 2,048 tokens the largest). */
const SYSTEM = Array.from({ length: 400 }, (_, i) => `Rule ${i}: keep the workspace tidy and say what you changed.`).join('\n');

const readFile = tool({
  description: 'Reads a file of the workspace.',
  inputSchema: z.object({ path: z.string() }),
  execute: ({ path }) => `contents of ${path}: export const answer = 42;`,
});

/** The breakpoints Anthropic's caching needs: the system prompt and the end of the conversation so far. */
function marked(messages: ModelMessage[], marks: boolean): ModelMessage[] {
  if (!marks) return messages;
  const cacheControl = { anthropic: { cacheControl: { type: 'ephemeral' as const } } };
  return messages.map((message, i) => (i === 0 || i === messages.length - 1 ? { ...message, providerOptions: cacheControl } : message));
}

for (const c of CASES) {
  describe(`the ${c.kind} provider against its stand-in`, function () {
    this.timeout(30_000);
    let server: ScriptedModelServer;
    const model = () => createEndpointModel({ endpoint: `e-${c.kind}`, provider: c.kind, baseUrl: server.url, id: c.model }, 'test-key');

    before(async () => {
      server = await startScriptedModelServer({
        format: c.format,
        models: [{ id: c.model, window: c.window, maxOutputTokens: 32_000, name: `Stand-in ${c.model}` }],
      });
    });
    after(() => server.close());
    beforeEach(() => server.reset());

    it('streams a tool call and its text through a tool loop, and the second request carries the call and its result', async () => {
      server.script([{ toolCalls: [{ name: 'read_file', arguments: { path: 'src/answer.ts' } }] }, { text: 'The answer is 42.' }]);
      const messages = marked(
        [
          { role: 'system', content: SYSTEM },
          { role: 'user', content: 'What does src/answer.ts export?' },
        ],
        c.marks,
      );
      const result = streamText({
        model: model(),
        messages,
        tools: { read_file: readFile },
        stopWhen: stepCountIs(3),
        maxRetries: 0,
        allowSystemInMessages: true,
      });
      const deltas: string[] = [];
      for await (const delta of result.textStream) deltas.push(delta);
      assert.equal(deltas.join(''), 'The answer is 42.');
      assert.ok(deltas.length > 1, 'the text streamed in pieces');
      const steps = await result.steps;
      assert.equal(steps.length, 2);
      assert.deepEqual(
        steps[0]!.toolCalls.map((call) => [call.toolName, call.input]),
        [['read_file', { path: 'src/answer.ts' }]],
      );
      const completions = server.requests.filter((r) => r.method === 'POST');
      assert.equal(completions.length, 2);
      const second = JSON.stringify(completions[1]!.body);
      assert.ok(second.includes('contents of src/answer.ts'), 'the tool result reached the model');
      assert.ok(second.includes(steps[0]!.toolCalls[0]!.toolCallId) || c.format === 'google', 'the result names its call');
    });

    it('reports what the cache read and wrote as the stand-in billed it, the cached tokens within the input tokens', async () => {
      server.script([{ toolCalls: [{ name: 'read_file', arguments: { path: 'a.ts' } }] }, { text: 'Done.' }]);
      const result = await generateText({
        model: model(),
        messages: marked(
          [
            { role: 'system', content: SYSTEM },
            { role: 'user', content: 'Read a.ts.' },
          ],
          c.marks,
        ),
        tools: { read_file: readFile },
        stopWhen: stepCountIs(3),
        maxRetries: 0,
        allowSystemInMessages: true,
        prepareStep: ({ messages }) => ({ messages: marked(messages, c.marks) }),
      });
      const billed = server.bill.charges;
      assert.equal(billed.length, 2);
      result.steps.forEach((step, i) => {
        const charge = billed[i]!.tokens;
        const usage = step.usage;
        assert.equal(usage.inputTokenDetails.cacheReadTokens ?? 0, charge.cacheRead, `step ${i + 1} read`);
        assert.equal(usage.inputTokenDetails.cacheWriteTokens ?? 0, charge.cacheWrite5m + charge.cacheWrite1h, `step ${i + 1} written`);
        assert.equal(usage.inputTokenDetails.noCacheTokens, charge.input, `step ${i + 1} uncached`);
        assert.equal(usage.inputTokens, charge.input + charge.cacheRead + charge.cacheWrite5m + charge.cacheWrite1h, `step ${i + 1} all input`);
        assert.equal(usage.outputTokens, charge.output, `step ${i + 1} output`);
      });
      assert.ok(billed[1]!.tokens.cacheRead > 0, 'the second step of the loop read its prefix from the cache');
    });

    it("fails with the provider's own overflow error, which Longrun recognises with the window it states", async () => {
      server.setWindow(c.model, 3_000);
      const error = await generateText({
        model: model(),
        messages: [
          { role: 'system', content: SYSTEM },
          { role: 'user', content: 'hi' },
        ],
        maxRetries: 0,
        allowSystemInMessages: true,
      }).then(
        () => assert.fail('the request should have been refused'),
        (e: unknown) => e,
      );
      assert.ok(isContextOverflow(error), String(error));
      // The Responses API says the input does not fit, without saying how much does.
      assert.equal(describeOverflow(error)?.limit, c.kind === 'openai' ? undefined : 3_000);
    });

    it('lists its models and states their window through its own API', async () => {
      assert.deepEqual(await listEndpointModels(server.url, 'test-key', fetch, undefined, 5_000, c.kind), [c.model]);
      const found = await discoverContextWindow({ baseUrl: server.url, modelId: c.model, provider: c.kind, apiKey: 'test-key', timeoutMs: 2_000 });
      if (c.kind === 'openai' || c.kind === 'openai-compatible') assert.equal(found, undefined, "OpenAI's model list states no window");
      else assert.equal(found?.limit, c.window);
    });

    if (c.kind !== 'openai-compatible') {
      it('refuses to make the model without a key, before anything is sent', () => {
        assert.throws(
          () => createEndpointModel({ endpoint: 'no-key', provider: c.kind, baseUrl: server.url, id: c.model }, undefined),
          (error: unknown) => MissingApiKeyError.isInstance(error) && /"no-key".*Set API Key/.test((error as Error).message),
        );
        assert.equal(server.requests.length, 0);
      });
    }
  });
}

describe("providers' overflow errors, as their APIs word them", function () {
  this.timeout(30_000);

  /** Bodies as the providers sent them (from reports of the error in the wild), each through its provider package. */
  const RECORDED: ReadonlyArray<{
    kind: ProviderKind;
    format: FormatName;
    model: string;
    status: number;
    body: unknown;
    provider: string;
    limit?: number;
  }> = [
    {
      kind: 'anthropic',
      format: 'anthropic',
      model: 'claude-opus-4-5-20251101',
      status: 400,
      body: {
        type: 'error',
        error: { type: 'invalid_request_error', message: 'prompt is too long: 200251 tokens > 200000 maximum' },
        request_id: 'req_011CWdepJvA2D819tdYYq4h7',
      },
      provider: 'anthropic',
      limit: 200_000,
    },
    {
      kind: 'google',
      format: 'google',
      model: 'gemini-2.5-pro',
      status: 400,
      body: {
        error: {
          code: 400,
          message: 'The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).',
          status: 'INVALID_ARGUMENT',
        },
      },
      provider: 'gemini',
      limit: 1_048_576,
    },
    {
      kind: 'openrouter',
      format: 'openrouter',
      model: 'qwen/qwen3-coder',
      status: 400,
      body: {
        error: {
          message:
            'This endpoint\'s maximum context length is 262000 tokens. However, you requested about 263390 tokens (658 of text input, 732 of tool input, 262000 in the output). Please reduce the length of either one, or use the "middle-out" transform to compress your prompt automatically.',
          code: 400,
          metadata: { provider_name: null },
        },
      },
      provider: 'openrouter',
      limit: 262_000,
    },
    {
      kind: 'openrouter',
      format: 'openrouter',
      model: 'google/gemini-2.5-pro',
      status: 413,
      body: {
        error: {
          message: 'Provider returned error',
          code: 413,
          metadata: { raw: '{"type":"error","error":{"type":"invalid_request_error","message":"Prompt is too long"}}', provider_name: 'Google' },
        },
      },
      provider: 'anthropic',
    },
    {
      // llama.cpp's llama-server (build 11434) started with `-c 4096`, its answer to a longer prompt.
      kind: 'openai-compatible',
      format: 'openai',
      model: 'smollm2',
      status: 400,
      body: {
        error: {
          code: 400,
          message: 'request (6031 tokens) exceeds the available context size (4096 tokens), try increasing it',
          type: 'exceed_context_size_error',
          n_prompt_tokens: 6031,
          n_ctx: 4096,
        },
      },
      provider: 'llama.cpp',
      limit: 4_096,
    },
  ];

  for (const recorded of RECORDED) {
    it(`recognises ${recorded.kind}'s "${JSON.stringify(recorded.body).slice(0, 60)}…"`, async () => {
      const server = await startScriptedModelServer({ format: recorded.format, models: [{ id: recorded.model, window: 2_000_000 }] });
      try {
        server.script([{ error: { status: recorded.status, body: recorded.body } }]);
        const model = createEndpointModel({ endpoint: 'e', provider: recorded.kind, baseUrl: server.url, id: recorded.model }, 'test-key');
        const error = await generateText({ model, prompt: 'hi', maxRetries: 0 }).then(
          () => assert.fail('the request should have failed'),
          (e: unknown) => e,
        );
        const match = describeOverflow(error);
        assert.equal(match?.provider, recorded.provider, String(error));
        assert.equal(match?.limit, recorded.limit);
      } finally {
        await server.close();
      }
    });
  }
});
