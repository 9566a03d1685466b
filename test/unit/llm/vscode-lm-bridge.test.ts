import assert from 'node:assert/strict';
import { generateText, jsonSchema, stepCountIs, streamText, tool, ToolChoiceViolationError } from 'ai';
import type * as vscode from 'vscode';
import { isContextOverflow } from '../../../src/core/overflow-error';
import {
  VsCodeLmError,
  createVsCodeLanguageModel,
  type VsCodeCancellationToken,
  type VsCodeChatModel,
  type VsCodeLmApi,
} from '../../../src/llm/vscode-lm-bridge';
import { api, FakeChatModel, fakeCount, items, TextPart, ToolCallPart, ToolResultPart } from './fake-vscode-lm';

const userPrompt = [{ role: 'user' as const, content: 'hello' }];

describe('VS Code language model bridge', () => {
  it('streams text through streamText and estimates usage with countTokens', async () => {
    const chat = new FakeChatModel([items(new TextPart('Hel'), new TextPart('lo'), new TextPart(' there'))]);
    const result = streamText({ model: createVsCodeLanguageModel(chat, api), messages: userPrompt });

    const deltas: string[] = [];
    for await (const delta of result.textStream) deltas.push(delta);
    assert.deepEqual(deltas, ['Hel', 'lo', ' there']);
    assert.equal(await result.text, 'Hello there');
    assert.equal(await result.finishReason, 'stop');

    const usage = await result.usage;
    const sent = chat.requests[0]?.messages ?? [];
    const expectedInput = sent.reduce((sum, message) => sum + fakeCount(message), 0);
    assert.ok(expectedInput > 0);
    assert.equal(usage.inputTokens, expectedInput);
    assert.equal(usage.outputTokens, fakeCount('Hello there'));
    assert.deepEqual(usage.raw, { estimated: true, source: 'vscode.LanguageModelChat.countTokens' });
  });

  it('sends instructions as a leading user turn and keeps the conversation order', async () => {
    const chat = new FakeChatModel([items(new TextPart('ok'))]);
    await generateText({
      model: createVsCodeLanguageModel(chat, api),
      instructions: 'You are Longrun.',
      messages: [
        { role: 'user', content: 'first' },
        { role: 'assistant', content: 'answer' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'second' },
            { type: 'file', mediaType: 'image/png', filename: 'shot.png', data: new Uint8Array([1, 2, 3]) },
          ],
        },
      ],
    });
    const sent = chat.requests[0]?.messages ?? [];
    assert.deepEqual(
      sent.map((m) => m.role),
      ['user', 'user', 'assistant', 'user'],
    );
    const texts = sent.map((m) => m.content.map((p) => (p as TextPart).value));
    assert.match(texts[0]?.[0] ?? '', /^Instructions.*\n\nYou are Longrun\.$/s);
    assert.deepEqual(texts[1], ['first']);
    assert.deepEqual(texts[2], ['answer']);
    assert.equal(texts[3]?.[0], 'second');
    assert.match(texts[3]?.[1] ?? '', /shot\.png.*image\/png/);
  });

  it('passes function tools with their JSON schema and turns tool-call items into AI SDK tool calls', async () => {
    const chat = new FakeChatModel([items(new TextPart('Reading.'), new ToolCallPart('call-1', 'read_file', { path: 'src/a.ts' }))]);
    const result = await generateText({
      model: createVsCodeLanguageModel(chat, api),
      messages: userPrompt,
      tools: {
        read_file: tool({
          description: 'Read a file',
          inputSchema: jsonSchema<{ path: string }>({ type: 'object', properties: { path: { type: 'string' } }, required: ['path'] }),
        }),
      },
    });
    assert.deepEqual(
      result.toolCalls.map((c) => ({ id: c.toolCallId, name: c.toolName, input: c.input })),
      [{ id: 'call-1', name: 'read_file', input: { path: 'src/a.ts' } }],
    );
    assert.equal(result.finishReason, 'tool-calls');
    assert.equal(result.text, 'Reading.');

    const options = chat.requests[0]?.options;
    assert.equal(options?.toolMode, api.LanguageModelChatToolMode.Auto);
    assert.equal(options?.tools?.length, 1);
    assert.equal(options?.tools?.[0]?.name, 'read_file');
    assert.equal(options?.tools?.[0]?.description, 'Read a file');
    assert.deepEqual((options?.tools?.[0]?.inputSchema as { properties?: unknown }).properties, { path: { type: 'string' } });
  });

  it('sends the justification it was given with every request, for the consent VS Code may ask for', async () => {
    const chat = new FakeChatModel([items(new TextPart('one')), items(new TextPart('two'))]);
    const model = createVsCodeLanguageModel(chat, api, { justification: 'To run the agent.' });
    await generateText({ model, messages: userPrompt });
    await generateText({ model, messages: userPrompt });
    assert.deepEqual(
      chat.requests.map((r) => r.options.justification),
      ['To run the agent.', 'To run the agent.'],
    );
    const plain = new FakeChatModel([items(new TextPart('three'))]);
    await generateText({ model: createVsCodeLanguageModel(plain, api), messages: userPrompt });
    assert.equal(plain.requests[0]?.options.justification, undefined);
  });

  it('runs a tool loop: the result goes back as a LanguageModelToolResultPart in a user turn', async () => {
    const chat = new FakeChatModel([items(new ToolCallPart('call-7', 'add', { a: 2, b: 3 })), items(new TextPart('The sum is 5.'))]);
    const result = streamText({
      model: createVsCodeLanguageModel(chat, api),
      messages: userPrompt,
      stopWhen: stepCountIs(3),
      tools: {
        add: tool({
          description: 'Add two numbers',
          inputSchema: jsonSchema<{ a: number; b: number }>({
            type: 'object',
            properties: { a: { type: 'number' }, b: { type: 'number' } },
          }),
          execute: async ({ a, b }) => ({ sum: a + b }),
        }),
      },
    });
    assert.equal(await result.text, 'The sum is 5.');
    assert.equal((await result.steps).length, 2);
    assert.equal(chat.requests.length, 2);

    const second = chat.requests[1]?.messages ?? [];
    assert.deepEqual(
      second.map((m) => m.role),
      ['user', 'assistant', 'user'],
    );
    const call = second[1]?.content[0];
    assert.ok(call instanceof ToolCallPart);
    assert.equal(call.callId, 'call-7');
    assert.deepEqual(call.input, { a: 2, b: 3 });
    const resultPart = second[2]?.content[0];
    assert.ok(resultPart instanceof ToolResultPart, 'tool result travels as a LanguageModelToolResultPart');
    assert.equal(resultPart.callId, 'call-7');
    const resultText = resultPart.content[0];
    assert.ok(resultText instanceof TextPart);
    assert.deepEqual(JSON.parse(resultText.value), { sum: 5 });
  });

  it('maps tool choice: required → Required, a named tool → only that tool, none → the tools offered in Auto mode, with a warning', async () => {
    const tools = {
      a: tool({ description: 'A', inputSchema: jsonSchema({ type: 'object' }) }),
      b: tool({ description: 'B', inputSchema: jsonSchema({ type: 'object' }) }),
    };
    // With a required tool choice, the AI SDK itself rejects an answer without a tool call.
    const chat = new FakeChatModel([items(new ToolCallPart('c1', 'a', {})), items(new ToolCallPart('c2', 'b', {})), items(new TextPart('3'))]);
    const model = createVsCodeLanguageModel(chat, api);
    await generateText({ model, messages: userPrompt, tools, toolChoice: 'required' });
    await generateText({ model, messages: userPrompt, tools, toolChoice: { type: 'tool', toolName: 'b' } });
    const unforbidden = await generateText({ model, messages: userPrompt, tools, toolChoice: 'none' });

    const [required, named, none] = chat.requests.map((r) => r.options);
    assert.equal(required?.toolMode, api.LanguageModelChatToolMode.Required);
    assert.deepEqual(
      required?.tools?.map((t) => t.name),
      ['a', 'b'],
    );
    assert.equal(named?.toolMode, api.LanguageModelChatToolMode.Required);
    assert.deepEqual(
      named?.tools?.map((t) => t.name),
      ['b'],
    );
    // VS Code has no mode that forbids tools; the request begins as the agent's do, its tools included.
    assert.deepEqual(
      none?.tools?.map((t) => t.name),
      ['a', 'b'],
    );
    assert.equal(none?.toolMode, api.LanguageModelChatToolMode.Auto);
    assert.ok(
      unforbidden.warnings?.some((w) => w.type === 'unsupported' && w.feature === 'toolChoice none'),
      JSON.stringify(unforbidden.warnings),
    );
  });

  it('lets the caller that asked for no tool tell when the model called one anyway', async () => {
    const tools = { read_file: tool({ description: 'Read', inputSchema: jsonSchema({ type: 'object' }) }) };
    const chat = new FakeChatModel([items(new ToolCallPart('c1', 'read_file', { path: 'a.ts' }))]);
    await assert.rejects(
      generateText({ model: createVsCodeLanguageModel(chat, api), messages: userPrompt, tools, toolChoice: 'none' }),
      (error: unknown) => ToolChoiceViolationError.isInstance(error) && error.toolChoice.type === 'none',
    );
  });

  it('cancels the VS Code request when the abort signal fires', async () => {
    let heard = false;
    const chat = new FakeChatModel([
      (token) =>
        (async function* () {
          yield new TextPart('partial');
          token.onCancellationRequested(() => {
            heard = true;
          });
          // Never yields again on its own: only cancellation can end this request.
          await new Promise<void>((resolve) => token.onCancellationRequested(() => resolve()));
        })(),
    ]);
    const controller = new AbortController();
    const result = streamText({ model: createVsCodeLanguageModel(chat, api), messages: userPrompt, abortSignal: controller.signal });

    const seen: string[] = [];
    for await (const part of result.fullStream) {
      seen.push(part.type);
      if (part.type === 'text-delta') controller.abort();
    }
    const token = chat.requests[0]?.token;
    assert.ok(token);
    assert.equal(token.isCancellationRequested, true);
    assert.equal(heard, true, 'the cancellation listener was called');
    assert.ok(seen.includes('abort'), `stream parts: ${seen.join(', ')}`);
  });

  it('rejects with the original message and cause when sendRequest throws', async () => {
    const original = Object.assign(new Error("This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens."), {
      code: 'Unknown',
    });
    const chat = new FakeChatModel([]);
    chat.sendError = original;
    const model = createVsCodeLanguageModel(chat, api);

    await assert.rejects(generateText({ model, messages: userPrompt }), (error: unknown) => {
      assert.ok(VsCodeLmError.isInstance(error));
      assert.equal(error.message, original.message);
      assert.equal(error.cause, original);
      assert.equal(error.code, 'Unknown');
      assert.equal(isContextOverflow(error), true);
      return true;
    });

    let streamed: unknown;
    const result = streamText({ model, messages: userPrompt, onError: ({ error }) => void (streamed = error) });
    await result.consumeStream();
    assert.ok(streamed instanceof Error);
    assert.equal(streamed.message, original.message);
  });

  it('reports a failure in the middle of the stream as an error part', async () => {
    const chat = new FakeChatModel([
      async function* () {
        yield new TextPart('start');
        throw new Error('Response stream broke');
      },
    ]);
    const result = streamText({ model: createVsCodeLanguageModel(chat, api), messages: userPrompt, onError: () => undefined });
    const errors: unknown[] = [];
    for await (const part of result.fullStream) if (part.type === 'error') errors.push(part.error);
    assert.equal(errors.length, 1);
    assert.match((errors[0] as Error).message, /Response stream broke/);
  });

  it('ignores stream items that are neither text nor tool calls', async () => {
    const chat = new FakeChatModel([items({ mimeType: 'image/png', data: new Uint8Array(1) }, new TextPart('only this'))]);
    const result = await generateText({ model: createVsCodeLanguageModel(chat, api), messages: userPrompt });
    assert.equal(result.text, 'only this');
  });
});

/**
 * Compile-time check that the real vscode types fit the bridge's interfaces; never called
 * (`vscode` cannot be loaded outside VS Code).
 */
export function realVsCodeTypesFit(model: vscode.LanguageModelChat, ns: typeof vscode): void {
  const chatModel: VsCodeChatModel = model;
  const lmApi: VsCodeLmApi = {
    LanguageModelChatMessage: ns.LanguageModelChatMessage,
    LanguageModelTextPart: ns.LanguageModelTextPart,
    LanguageModelToolCallPart: ns.LanguageModelToolCallPart,
    LanguageModelToolResultPart: ns.LanguageModelToolResultPart,
    LanguageModelChatToolMode: ns.LanguageModelChatToolMode,
  };
  const token: vscode.CancellationToken = {} as VsCodeCancellationToken;
  void createVsCodeLanguageModel(chatModel, lmApi);
  void token;
}
