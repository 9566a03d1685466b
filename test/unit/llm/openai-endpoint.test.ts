import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { APICallError, streamText } from 'ai';
import { isContextOverflow } from '../../../src/core/overflow-error';
import { EndpointError, createEndpointModel, listEndpointModels } from '../../../src/llm/openai-endpoint';

interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

type Handler = (request: Received, response: ServerResponse) => void;

/** A tiny OpenAI-compatible server on 127.0.0.1; each test says how it answers. */
class FakeEndpoint {
  readonly received: Received[] = [];
  handler: Handler = (_request, response) => response.writeHead(404).end();
  private server: Server | undefined;
  baseUrl = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const received = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
        this.received.push(received);
        this.handler(received, res);
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    const { port } = this.server.address() as AddressInfo;
    this.baseUrl = `http://127.0.0.1:${port}/v1`;
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

const chunk = (delta: object, finish: string | null = null): object => ({
  id: 'chatcmpl-1',
  object: 'chat.completion.chunk',
  created: 1_700_000_000,
  model: 'llama3.1:8b',
  choices: [{ index: 0, delta, finish_reason: finish }],
});

/** A Chat Completions stream: text deltas, the finish, then the usage chunk `include_usage` asks for. */
function sse(response: ServerResponse, texts: string[], promptTokens: number, completionTokens: number): void {
  response.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
  const events: object[] = [
    chunk({ role: 'assistant', content: '' }),
    ...texts.map((text) => chunk({ content: text })),
    chunk({}, 'stop'),
    {
      id: 'chatcmpl-1',
      object: 'chat.completion.chunk',
      created: 1_700_000_000,
      model: 'llama3.1:8b',
      choices: [],
      usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens },
    },
  ];
  for (const event of events) response.write(`data: ${JSON.stringify(event)}\n\n`);
  response.end('data: [DONE]\n\n');
}

describe('OpenAI-compatible endpoints', () => {
  const server = new FakeEndpoint();
  before(() => server.start());
  after(() => server.stop());
  beforeEach(() => {
    server.received.length = 0;
  });

  describe('createEndpointModel', () => {
    it('streams a chat completion: text arrives and input tokens are the server prompt_tokens', async () => {
      server.handler = (_request, response) => sse(response, ['Hel', 'lo', '!'], 1234, 3);
      const model = createEndpointModel({ endpoint: 'ollama', baseUrl: server.baseUrl, id: 'llama3.1:8b' }, 'sk-test');
      const result = streamText({ model, messages: [{ role: 'user', content: 'say hello' }], maxRetries: 0 });

      const deltas: string[] = [];
      for await (const delta of result.textStream) deltas.push(delta);
      assert.deepEqual(deltas.join(''), 'Hello!');
      const usage = await result.usage;
      assert.equal(usage.inputTokens, 1234);
      assert.equal(usage.outputTokens, 3);

      const request = server.received[0];
      assert.ok(request);
      assert.equal(request.method, 'POST');
      assert.equal(request.url, '/v1/chat/completions');
      assert.equal(request.headers.authorization, 'Bearer sk-test');
      const body = JSON.parse(request.body) as { model: string; stream: boolean; stream_options?: { include_usage?: boolean }; messages: unknown[] };
      assert.equal(body.model, 'llama3.1:8b');
      assert.equal(body.stream, true);
      assert.equal(body.stream_options?.include_usage, true);
      assert.deepEqual(body.messages, [{ role: 'user', content: 'say hello' }]);
    });

    it('names the provider after the endpoint, uses the given fetch and sends a placeholder key when there is none', async () => {
      server.handler = (_request, response) => sse(response, ['ok'], 5, 1);
      const fetched: string[] = [];
      const countingFetch: typeof fetch = (input, init) => {
        fetched.push(String(input));
        return fetch(input, init);
      };
      const model = createEndpointModel({ endpoint: 'lmstudio', baseUrl: `${server.baseUrl}/`, id: 'qwen' }, undefined, countingFetch);
      assert.ok(typeof model === 'object' && model.provider === 'lmstudio.chat');
      await streamText({ model, prompt: 'x', maxRetries: 0 }).consumeStream();
      assert.deepEqual(fetched, [`${server.baseUrl}/chat/completions`], 'the given fetch is used');
      assert.equal(server.received[0]?.headers.authorization, 'Bearer not-needed');
      assert.equal(server.received[0]?.url, '/v1/chat/completions');
    });

    it("applies the model's maxOutputTokens unless the call sets its own", async () => {
      server.handler = (_request, response) => sse(response, ['ok'], 5, 1);
      const model = createEndpointModel({ endpoint: 'e', baseUrl: server.baseUrl, id: 'm', maxOutputTokens: 512 }, 'k');
      await streamText({ model, prompt: 'x', maxRetries: 0 }).consumeStream();
      await streamText({ model, prompt: 'x', maxRetries: 0, maxOutputTokens: 64 }).consumeStream();
      const [first, second] = server.received.map((r) => JSON.parse(r.body) as { max_tokens?: number });
      assert.equal(first?.max_tokens, 512);
      assert.equal(second?.max_tokens, 64);
    });

    it('surfaces an overflow answer as an APICallError the overflow detector recognises', async () => {
      server.handler = (_request, response) => {
        response.writeHead(400, { 'Content-Type': 'application/json' });
        response.end(
          JSON.stringify({
            error: {
              message: "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
              type: 'invalid_request_error',
              code: 'context_length_exceeded',
            },
          }),
        );
      };
      const model = createEndpointModel({ endpoint: 'e', baseUrl: server.baseUrl, id: 'm' }, 'k');
      let caught: unknown;
      await streamText({ model, prompt: 'x', onError: ({ error }) => void (caught = error) }).consumeStream();
      assert.ok(APICallError.isInstance(caught), `got ${String(caught)}`);
      assert.equal(caught.statusCode, 400);
      assert.equal(isContextOverflow(caught), true);
      assert.equal(server.received.length, 1, 'a 400 is not retried');
    });
  });

  describe('listEndpointModels', () => {
    it('GETs /models with the key and returns the ids', async () => {
      server.handler = (_request, response) => {
        response.writeHead(200, { 'Content-Type': 'application/json' });
        response.end(
          JSON.stringify({
            object: 'list',
            data: [
              { id: 'llama3.1:8b', object: 'model', owned_by: 'library' },
              { id: 'qwen2.5-coder:14b', object: 'model', owned_by: 'library' },
            ],
          }),
        );
      };
      const ids = await listEndpointModels(server.baseUrl, 'sk-list', fetch);
      assert.deepEqual(ids, ['llama3.1:8b', 'qwen2.5-coder:14b']);
      assert.equal(server.received[0]?.method, 'GET');
      assert.equal(server.received[0]?.url, '/v1/models');
      assert.equal(server.received[0]?.headers.authorization, 'Bearer sk-list');
    });

    it('sends no Authorization header without a key', async () => {
      server.handler = (_request, response) => {
        response.writeHead(200, { 'Content-Type': 'application/json' });
        response.end(JSON.stringify({ data: [] }));
      };
      assert.deepEqual(await listEndpointModels(server.baseUrl, undefined, fetch), []);
      assert.equal(server.received[0]?.headers.authorization, undefined);
    });

    it('reports an HTTP error with its status and body', async () => {
      server.handler = (_request, response) => {
        response.writeHead(401, { 'Content-Type': 'application/json' });
        response.end(JSON.stringify({ error: { message: 'Incorrect API key provided' } }));
      };
      await assert.rejects(listEndpointModels(server.baseUrl, 'bad', fetch), (error: unknown) => {
        assert.ok(EndpointError.isInstance(error));
        assert.equal(error.statusCode, 401);
        assert.match(error.message, /HTTP 401.*Incorrect API key provided/);
        return true;
      });
    });

    it('says so when the answer is not JSON, e.g. a web page at the wrong URL', async () => {
      server.handler = (_request, response) => {
        response.writeHead(200, { 'Content-Type': 'text/html' });
        response.end('<html><body>Welcome</body></html>');
      };
      await assert.rejects(listEndpointModels(server.baseUrl, undefined, fetch), /did not answer with JSON.*<html>/);
    });

    it('says so when the JSON is not a model list', async () => {
      server.handler = (_request, response) => {
        response.writeHead(200, { 'Content-Type': 'application/json' });
        response.end(JSON.stringify({ models: ['a'] }));
      };
      await assert.rejects(listEndpointModels(server.baseUrl, undefined, fetch), /not a model list/);
    });

    it('reports an unreachable server as an EndpointError naming the URL', async () => {
      const refusing = async (): Promise<Response> => {
        throw new TypeError('fetch failed');
      };
      await assert.rejects(listEndpointModels('http://127.0.0.1:9/v1', undefined, refusing), (error: unknown) => {
        assert.ok(EndpointError.isInstance(error));
        assert.match(error.message, /Could not reach http:\/\/127\.0\.0\.1:9\/v1\/models: fetch failed/);
        return true;
      });
    });
  });
});
