import assert from 'node:assert/strict';
import { streamText } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import type { SummaryRequest } from '../../../src/core/ports';
import { isModelTimeout } from '../../../src/llm/agent';
import { createAiSummarizer } from '../../../src/llm/ai-summarizer';
import { streamEndpointChat } from '../../../src/llm/endpoint-chat';
import { createEndpointModel, EndpointError, listEndpointModels } from '../../../src/llm/openai-endpoint';
import { withFirstTokenDeadline } from '../../../src/llm/first-token-deadline';
import { discoverContextWindow } from '../../../src/llm/window-discovery';
import { HangingServer, within } from './hanging-server';

const request: SummaryRequest = {
  system: 'You write handover summaries.',
  messages: [{ role: 'user', content: 'add a test' }],
  maxOutputTokens: 100,
  temperature: 0.2,
  purpose: 'summary',
};

describe('one deadline from sending a request to its first token, headers included', () => {
  let server: HangingServer;
  let baseUrl: string;

  beforeEach(async () => {
    server = new HangingServer();
    baseUrl = await server.start();
  });

  afterEach(async () => {
    await server.close();
  });

  const model = () => createEndpointModel({ endpoint: 'stuck', baseUrl, id: 'm' }, undefined);

  it('stops a summary when the server accepts the connection and never answers', async () => {
    const summarizer = createAiSummarizer({ model: model(), name: 'stuck', firstTokenMs: 300 });
    const started = Date.now();
    await within(
      5_000,
      assert.rejects(summarizer.summarize(request), (error: unknown) => isModelTimeout(error)),
    );
    assert.ok(Date.now() - started < 3_000);
    assert.equal(server.connections, 1, 'a timeout is not retried');
  });

  it('stops a chat served to another participant when the server never answers', async () => {
    const chat = streamEndpointChat({
      model: model(),
      messages: [{ role: 'user', content: 'hi' }],
      tools: [],
      toolMode: 'auto',
      signal: new AbortController().signal,
      timeouts: { firstChunkMs: 300, idleMs: 60_000 },
      onText: () => undefined,
      onToolCall: () => undefined,
    });
    await within(
      5_000,
      assert.rejects(chat, (error: unknown) => isModelTimeout(error)),
    );
  });

  it('stops listing models when the server never answers', async () => {
    await within(
      5_000,
      assert.rejects(listEndpointModels(baseUrl, undefined, fetch, undefined, 300), (error: unknown) => {
        assert.ok(EndpointError.isInstance(error));
        assert.match((error as Error).message, /\/v1\/models did not answer within 0\.3 s\./);
        return true;
      }),
    );
  });

  it('gives up discovering the window when the server never answers', async () => {
    assert.equal(await within(5_000, discoverContextWindow({ baseUrl, modelId: 'm', timeoutMs: 300 })), undefined);
  });
});

describe('withFirstTokenDeadline', () => {
  const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  it('lets an answer whose first token came in time take longer than the deadline', async () => {
    const model = new MockLanguageModelV4({
      doStream: async () => ({
        stream: new ReadableStream({
          async start(controller) {
            controller.enqueue({ type: 'stream-start', warnings: [] });
            await delay(100);
            controller.enqueue({ type: 'text-start', id: 't' });
            controller.enqueue({ type: 'text-delta', id: 't', delta: 'first ' });
            await delay(400);
            controller.enqueue({ type: 'text-delta', id: 't', delta: 'second' });
            controller.enqueue({ type: 'text-end', id: 't' });
            controller.enqueue({
              type: 'finish',
              finishReason: { unified: 'stop', raw: 'stop' },
              usage: {
                inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
                outputTokens: { total: 2, text: 2, reasoning: undefined },
              },
            });
            controller.close();
          },
        }),
      }),
    });
    const result = streamText({ model: withFirstTokenDeadline(model, 300), prompt: 'hi' });
    assert.equal(await result.text, 'first second');
  });

  it("counts the stream's opening parts as no token", async () => {
    const model = new MockLanguageModelV4({
      doStream: async () => ({
        stream: new ReadableStream({
          start(controller) {
            controller.enqueue({ type: 'stream-start', warnings: [] });
            controller.enqueue({ type: 'response-metadata', id: 'r', modelId: 'm' });
          },
        }),
      }),
    });
    let failure: unknown;
    const result = streamText({ model: withFirstTokenDeadline(model, 200), prompt: 'hi', onError: () => undefined });
    await within(
      5_000,
      (async () => {
        try {
          for await (const part of result.fullStream) if (part.type === 'error') failure = part.error;
        } catch (error) {
          failure = error;
        }
      })(),
    );
    assert.ok(isModelTimeout(failure), String(failure));
  });
});
