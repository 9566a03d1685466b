import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { discoverContextWindow, type DiscoveryOptions } from '../../../src/llm/window-discovery';

const FIXTURES = join(__dirname, 'fixtures', 'window-discovery');

/** A recorded answer of one server kind. */
const fixture = (name: string): string => readFileSync(join(FIXTURES, name), 'utf8');

interface Call {
  readonly method: string;
  readonly url: string;
  readonly headers: Headers;
  readonly body?: string;
}

type Route = (init: RequestInit | undefined) => Response | Promise<Response>;

const json =
  (body: string | object, status = 200): Route =>
  () =>
    new Response(typeof body === 'string' ? body : JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });

const file = (name: string): Route => json(fixture(name));

/** Never answers; gives up only when the request is aborted, as a real fetch does. */
const hang: Route = (init) =>
  new Promise<Response>((_resolve, reject) => {
    const signal = init?.signal;
    if (signal?.aborted) reject(signal.reason);
    signal?.addEventListener('abort', () => reject(signal.reason), { once: true });
  });

/** Never answers and ignores its signal, as a broken fetch might. */
const deaf: Route = () => new Promise<Response>(() => undefined);

/**
 * A fake `fetch` that routes by `METHOD url` and records every request; anything unrouted gets the
 * 404 page a real server would give.
 */
function fakeServer(routes: Record<string, Route>): { fetch: typeof fetch; calls: Call[]; urls: () => string[] } {
  const calls: Call[] = [];
  const fake: typeof fetch = async (input, init) => {
    const url = String(input);
    const method = init?.method ?? 'GET';
    calls.push({ method, url, headers: new Headers(init?.headers), ...(typeof init?.body === 'string' ? { body: init.body } : {}) });
    const route = routes[`${method} ${url}`];
    return route ? route(init) : new Response('404 page not found', { status: 404, headers: { 'Content-Type': 'text/plain' } });
  };
  return { fetch: fake, calls, urls: () => calls.map((call) => `${call.method} ${call.url}`) };
}

const OLLAMA = 'http://127.0.0.1:11434';
const LM_STUDIO = 'http://127.0.0.1:1234';
const LLAMA_CPP = 'http://127.0.0.1:8080';
const VLLM = 'http://127.0.0.1:8000';

/** Options with a small timeout so the hanging cases stay quick. */
const options = (baseUrl: string, modelId: string, server: { fetch: typeof fetch }, extra: Partial<DiscoveryOptions> = {}): DiscoveryOptions => ({
  baseUrl,
  modelId,
  fetch: server.fetch,
  timeoutMs: 200,
  ...extra,
});

describe('window discovery', () => {
  describe('from the model list', () => {
    it('finds nothing for OpenAI, whose model list states no window, and asks it nothing else', async () => {
      const server = fakeServer({ 'GET https://api.openai.com/v1/models': file('openai-models.json') });
      const window = await discoverContextWindow(options('https://api.openai.com/v1', 'gpt-4o', server, { apiKey: 'sk-test' }));
      assert.equal(window, undefined);
      assert.deepEqual(server.urls(), ['GET https://api.openai.com/v1/models']);
    });

    it('finds a model the list names by a dated snapshot, or with a dot for a dash, and never another model', async () => {
      const list = {
        object: 'list',
        data: [
          { id: 'claude-sonnet-4-20250514', object: 'model', owned_by: 'vllm', context_length: 100_000 },
          { id: 'claude-sonnet-4.5-20250929', object: 'model', owned_by: 'vllm', context_length: 200_000 },
        ],
      };
      const server = fakeServer({ [`GET ${VLLM}/v1/models`]: json(list) });
      const window = await discoverContextWindow(options(`${VLLM}/v1`, 'claude-sonnet-4-5', server));
      assert.equal(window?.limit, 200_000);
      const other = fakeServer({ [`GET ${VLLM}/v1/models`]: json({ object: 'list', data: [list.data[1]] }) });
      assert.equal((await discoverContextWindow(options(`${VLLM}/v1`, 'claude-sonnet-4', other)))?.limit, undefined);
    });

    it("reads OpenRouter's model-level context_length and the top provider's max_completion_tokens", async () => {
      const server = fakeServer({ 'GET https://openrouter.ai/api/v1/models': file('openrouter-models.json') });
      const window = await discoverContextWindow(options('https://openrouter.ai/api/v1', 'anthropic/claude-sonnet-4', server));
      assert.deepEqual(window, {
        limit: 200_000,
        server: 'openrouter',
        origin: "the server's model list (context_length)",
        maxOutputTokens: 64_000,
      });
      assert.deepEqual(server.urls(), ['GET https://openrouter.ai/api/v1/models'], 'OpenRouter has no native API to probe');
    });

    it("prefers OpenRouter's model-level context_length to a smaller top provider's, as requests are routed to a provider that fits", async () => {
      const server = fakeServer({ 'GET https://openrouter.ai/api/v1/models': file('openrouter-models.json') });
      const window = await discoverContextWindow(options('https://openrouter.ai/api/v1', 'qwen/qwen-2.5-coder-32b-instruct', server));
      assert.equal(window?.limit, 32_768);
      assert.equal(window?.maxOutputTokens, 16_384);
    });

    it("falls back to OpenRouter's top_provider.context_length when the model-level one is null, and leaves a null output cap out", async () => {
      const server = fakeServer({ 'GET https://openrouter.ai/api/v1/models': file('openrouter-models.json') });
      const window = await discoverContextWindow(options('https://openrouter.ai/api/v1', 'mistralai/mistral-nemo', server));
      assert.deepEqual(window, { limit: 131_072, server: 'openrouter', origin: "the server's model list (top_provider.context_length)" });
    });

    it("reads vLLM's max_model_len and tells vLLM by its owned_by", async () => {
      const server = fakeServer({ [`GET ${VLLM}/v1/models`]: file('vllm-models.json') });
      const window = await discoverContextWindow(options(`${VLLM}/v1`, 'Qwen/Qwen2.5-Coder-32B-Instruct', server));
      assert.deepEqual(window, { limit: 32_768, server: 'vllm', origin: "the server's model list (max_model_len)" });
    });

    it("reads a gateway's context_window (Groq) and its max_completion_tokens", async () => {
      const server = fakeServer({ 'GET https://api.groq.com/openai/v1/models': file('groq-models.json') });
      const window = await discoverContextWindow(options('https://api.groq.com/openai/v1', 'llama-3.3-70b-versatile', server));
      assert.deepEqual(window, {
        limit: 131_072,
        server: 'openai-compatible',
        origin: "the server's model list (context_window)",
        maxOutputTokens: 32_768,
      });
    });

    it("reads llama.cpp's per-slot meta.n_ctx from its model list, never the trained n_ctx_train", async () => {
      const server = fakeServer({ [`GET ${LLAMA_CPP}/v1/models`]: file('llamacpp-models.json') });
      const window = await discoverContextWindow(options(`${LLAMA_CPP}/v1`, 'qwen2.5-coder-7b', server));
      assert.deepEqual(window, { limit: 16_384, server: 'llamacpp', origin: "the server's model list (meta.n_ctx)" });
    });

    it('prefers the model list to the native APIs, and then asks them nothing', async () => {
      const server = fakeServer({
        [`GET ${OLLAMA}/v1/models`]: json({
          object: 'list',
          data: [{ id: 'llama3.2:latest', object: 'model', owned_by: 'library', context_length: 65_536 }],
        }),
        [`GET ${OLLAMA}/api/ps`]: file('ollama-api-ps.json'),
        [`GET ${OLLAMA}/api/version`]: file('ollama-api-version.json'),
      });
      const window = await discoverContextWindow(options(`${OLLAMA}/v1`, 'llama3.2:latest', server));
      assert.equal(window?.limit, 65_536);
      assert.equal(window?.origin, "the server's model list (context_length)");
      assert.deepEqual(server.urls(), [`GET ${OLLAMA}/v1/models`]);
    });

    it('takes a window field that is not a positive integer as unstated', async () => {
      const entry = (context_length: unknown) => ({ id: 'm', object: 'model', owned_by: 'vllm', context_length });
      for (const bad of [-1, 0, 8192.5, '8192', null, { tokens: 8192 }, 1e300]) {
        const server = fakeServer({ [`GET ${VLLM}/v1/models`]: json({ object: 'list', data: [entry(bad)] }) });
        assert.equal(await discoverContextWindow(options(`${VLLM}/v1`, 'm', server)), undefined, `context_length ${JSON.stringify(bad)}`);
      }
    });

    it('skips malformed entries of the list without losing the good ones', async () => {
      const server = fakeServer({
        [`GET ${VLLM}/v1/models`]: json({
          object: 'list',
          data: [null, 42, { object: 'model' }, { id: 'm', owned_by: 'vllm', max_model_len: 4096 }],
        }),
      });
      assert.equal((await discoverContextWindow(options(`${VLLM}/v1`, 'm', server)))?.limit, 4096);
    });
  });

  describe("from a native provider's own API", () => {
    it("reads Anthropic's Models API with its key and version headers, and asks nothing else", async () => {
      const server = fakeServer({ 'GET https://api.anthropic.com/v1/models/claude-sonnet-4-5': file('anthropic-model.json') });
      const found = await discoverContextWindow(
        options('https://api.anthropic.com/v1', 'claude-sonnet-4-5', server, { provider: 'anthropic', apiKey: 'sk-ant-test' }),
      );
      assert.deepEqual(found, { limit: 200_000, server: 'anthropic', origin: "Anthropic's Models API (max_input_tokens)", maxOutputTokens: 64_000 });
      assert.deepEqual(server.urls(), ['GET https://api.anthropic.com/v1/models/claude-sonnet-4-5']);
      const headers = server.calls[0]!.headers;
      assert.equal(headers.get('x-api-key'), 'sk-ant-test');
      assert.equal(headers.get('anthropic-version'), '2023-06-01');
      assert.equal(headers.get('authorization'), null, 'no bearer token');
    });

    it('adds the version to a base URL written as ANTHROPIC_BASE_URL is, without /v1', async () => {
      const server = fakeServer({ 'GET http://127.0.0.1:4000/v1/models/claude-haiku-4-5': file('anthropic-model.json') });
      const found = await discoverContextWindow(options('http://127.0.0.1:4000', 'claude-haiku-4-5', server, { provider: 'anthropic', apiKey: 'k' }));
      assert.equal(found?.limit, 200_000);
    });

    it("reads the Gemini API's model with its key header: the input limit and the output limit", async () => {
      const server = fakeServer({
        'GET https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash': file('gemini-model.json'),
      });
      const found = await discoverContextWindow(
        options('https://generativelanguage.googleapis.com/v1beta', 'gemini-2.5-flash', server, { provider: 'google', apiKey: 'AIza-test' }),
      );
      assert.deepEqual(found, { limit: 1_048_576, server: 'google', origin: "the Gemini API's model (inputTokenLimit)", maxOutputTokens: 65_536 });
      assert.deepEqual(server.urls(), ['GET https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash']);
      assert.equal(server.calls[0]!.headers.get('x-goog-api-key'), 'AIza-test');
      assert.equal(server.calls[0]!.headers.get('authorization'), null);
    });

    it("finds nothing, and probes no local server, when a provider's API refuses or answers without a window", async () => {
      const refusing = fakeServer({
        'GET https://api.anthropic.com/v1/models/claude-x': json(
          { type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } },
          401,
        ),
      });
      assert.equal(
        await discoverContextWindow(options('https://api.anthropic.com/v1', 'claude-x', refusing, { provider: 'anthropic', apiKey: 'bad' })),
        undefined,
      );
      assert.equal(refusing.calls.length, 1);
      const silent = fakeServer({ 'GET https://generativelanguage.googleapis.com/v1beta/models/gemini-x': json({ name: 'models/gemini-x' }) });
      assert.equal(
        await discoverContextWindow(options('https://generativelanguage.googleapis.com/v1beta', 'gemini-x', silent, { provider: 'google' })),
        undefined,
      );
      assert.equal(silent.calls.length, 1);
    });

    it("reads OpenRouter's model list when the endpoint names OpenRouter, and probes no local server when it has no window", async () => {
      const server = fakeServer({ 'GET http://127.0.0.1:9100/api/v1/models': json({ data: [{ id: 'vendor/model' }] }) });
      assert.equal(
        await discoverContextWindow(options('http://127.0.0.1:9100/api/v1', 'vendor/model', server, { provider: 'openrouter' })),
        undefined,
      );
      assert.deepEqual(server.urls(), ['GET http://127.0.0.1:9100/api/v1/models']);
    });
  });

  describe('from LM Studio', () => {
    it('reads the loaded context of a loaded model from /api/v0/models', async () => {
      const server = fakeServer({
        [`GET ${LM_STUDIO}/v1/models`]: file('lmstudio-models.json'),
        [`GET ${LM_STUDIO}/api/v0/models`]: file('lmstudio-api-v0-models-loaded.json'),
      });
      const window = await discoverContextWindow(options(`${LM_STUDIO}/v1`, 'qwen2.5-coder-7b-instruct', server));
      assert.deepEqual(window, { limit: 16_384, server: 'lmstudio', origin: "LM Studio's loaded context (/api/v0/models)" });
    });

    it('falls back to max_context_length for a model that is not loaded', async () => {
      const server = fakeServer({
        [`GET ${LM_STUDIO}/v1/models`]: file('lmstudio-models.json'),
        [`GET ${LM_STUDIO}/api/v0/models`]: file('lmstudio-api-v0-models-not-loaded.json'),
      });
      const window = await discoverContextWindow(options(`${LM_STUDIO}/v1`, 'qwen2.5-coder-7b-instruct', server));
      assert.deepEqual(window, { limit: 32_768, server: 'lmstudio', origin: "LM Studio's model list (max_context_length)" });
    });

    it("reads a loaded instance's context from the v1 REST API of LM Studio 0.4", async () => {
      const server = fakeServer({
        [`GET ${LM_STUDIO}/v1/models`]: file('lmstudio-models.json'),
        [`GET ${LM_STUDIO}/api/v1/models`]: file('lmstudio-api-v1-models.json'),
      });
      const window = await discoverContextWindow(options(`${LM_STUDIO}/v1`, 'qwen2.5-coder-7b-instruct', server));
      assert.deepEqual(window, { limit: 12_288, server: 'lmstudio', origin: "LM Studio's loaded context (/api/v1/models)" });
    });

    it('prefers a loaded context to an advertised maximum whichever API states it', async () => {
      const server = fakeServer({
        [`GET ${LM_STUDIO}/v1/models`]: file('lmstudio-models.json'),
        [`GET ${LM_STUDIO}/api/v0/models`]: file('lmstudio-api-v0-models-not-loaded.json'),
        [`GET ${LM_STUDIO}/api/v1/models`]: file('lmstudio-api-v1-models.json'),
      });
      assert.equal((await discoverContextWindow(options(`${LM_STUDIO}/v1`, 'qwen2.5-coder-7b-instruct', server)))?.limit, 12_288);
    });
  });

  describe('from Ollama', () => {
    it("reads a loaded model's context_length from /api/ps, matching an untagged id to its :latest", async () => {
      const server = fakeServer({
        [`GET ${OLLAMA}/v1/models`]: file('ollama-models.json'),
        [`GET ${OLLAMA}/api/ps`]: file('ollama-api-ps.json'),
        [`POST ${OLLAMA}/api/show`]: file('ollama-api-show.json'),
        [`GET ${OLLAMA}/api/version`]: file('ollama-api-version.json'),
      });
      const window = await discoverContextWindow(options(`${OLLAMA}/v1/`, 'llama3.2', server));
      assert.deepEqual(window, { limit: 8192, server: 'ollama', origin: "Ollama's loaded model (/api/ps)" });
    });

    it('reads num_ctx from the parameters of /api/show when the model is not loaded', async () => {
      const server = fakeServer({
        [`GET ${OLLAMA}/v1/models`]: file('ollama-models.json'),
        [`GET ${OLLAMA}/api/ps`]: file('ollama-api-ps-empty.json'),
        [`POST ${OLLAMA}/api/show`]: file('ollama-api-show-num-ctx.json'),
        [`GET ${OLLAMA}/api/version`]: file('ollama-api-version.json'),
      });
      const window = await discoverContextWindow(options(`${OLLAMA}/v1`, 'qwen2.5-coder:7b', server));
      assert.deepEqual(window, { limit: 16_384, server: 'ollama', origin: "Ollama's model parameters (num_ctx)" });
      const show = server.calls.find((call) => call.url === `${OLLAMA}/api/show`);
      assert.deepEqual(JSON.parse(show?.body ?? '{}'), { model: 'qwen2.5-coder:7b', name: 'qwen2.5-coder:7b' });
      assert.equal(show?.headers.get('content-type'), 'application/json');
    });

    it('caps num_ctx at the trained length, as Ollama does', async () => {
      const shown = JSON.parse(fixture('ollama-api-show-num-ctx.json')) as { parameters: string };
      shown.parameters = shown.parameters.replace('16384', '131072');
      const server = fakeServer({
        [`GET ${OLLAMA}/api/ps`]: file('ollama-api-ps-empty.json'),
        [`POST ${OLLAMA}/api/show`]: json(shown),
      });
      const window = await discoverContextWindow(options(`${OLLAMA}/v1`, 'qwen2.5-coder:7b', server));
      assert.equal(window?.limit, 32_768);
      assert.match(window?.origin ?? '', /num_ctx.*capped at the trained length/);
    });

    it("falls back to Ollama's default context (4096 since 0.6.7), never the trained length of model_info", async () => {
      const server = fakeServer({
        [`GET ${OLLAMA}/v1/models`]: file('ollama-models.json'),
        [`GET ${OLLAMA}/api/ps`]: file('ollama-api-ps-empty.json'),
        [`POST ${OLLAMA}/api/show`]: file('ollama-api-show.json'),
        [`GET ${OLLAMA}/api/version`]: file('ollama-api-version.json'),
      });
      const window = await discoverContextWindow(options(`${OLLAMA}/v1`, 'qwen2.5-coder:7b', server));
      assert.deepEqual(window, { limit: 4096, server: 'ollama', origin: "Ollama's default context" });
    });

    it('takes the default of Ollama before 0.6.7 as 2048, and of a dev build or an unknown version as 4096', async () => {
      const discover = (version: Route | undefined) => {
        const routes: Record<string, Route> = { [`GET ${OLLAMA}/api/ps`]: file('ollama-api-ps-empty.json') };
        if (version) routes[`GET ${OLLAMA}/api/version`] = version;
        return discoverContextWindow(options(`${OLLAMA}/v1`, 'qwen2.5-coder:7b', fakeServer(routes)));
      };
      assert.equal((await discover(json({ version: '0.6.6' })))?.limit, 2048);
      assert.equal((await discover(json({ version: '0.5.7' })))?.limit, 2048);
      assert.equal((await discover(json({ version: '0.6.7' })))?.limit, 4096);
      assert.equal((await discover(json({ version: '0.15.5' })))?.limit, 4096);
      assert.equal((await discover(json({ version: '0.0.0' })))?.limit, 4096);
      assert.equal((await discover(undefined))?.limit, 4096);
    });

    it("reads a cloud model's full length from model_info, as cloud models run at their maximum", async () => {
      const server = fakeServer({
        [`GET ${OLLAMA}/v1/models`]: file('ollama-models.json'),
        [`GET ${OLLAMA}/api/ps`]: file('ollama-api-ps-empty.json'),
        [`POST ${OLLAMA}/api/show`]: file('ollama-api-show-cloud.json'),
        [`GET ${OLLAMA}/api/version`]: file('ollama-api-version.json'),
      });
      const window = await discoverContextWindow(options(`${OLLAMA}/v1`, 'gpt-oss:120b-cloud', server));
      assert.deepEqual(window, { limit: 131_072, server: 'ollama', origin: "Ollama's cloud model (model_info context_length)" });
    });

    it('guesses no default when nothing shows the server is Ollama', async () => {
      // llama.cpp, among others, imitates /api/show; that alone is no sign of Ollama.
      const server = fakeServer({ [`POST ${OLLAMA}/api/show`]: file('ollama-api-show.json') });
      assert.equal(await discoverContextWindow(options(`${OLLAMA}/v1`, 'qwen2.5-coder:7b', server)), undefined);
    });
  });

  describe('from llama.cpp', () => {
    it('reads the per-slot n_ctx of /props, asking for the model without loading it', async () => {
      const server = fakeServer({
        [`GET ${LLAMA_CPP}/v1/models`]: file('llamacpp-models-without-n-ctx.json'),
        [`GET ${LLAMA_CPP}/props?model=qwen2.5-coder-7b-instruct-q4_k_m.gguf&autoload=false`]: file('llamacpp-props.json'),
      });
      const window = await discoverContextWindow(options(`${LLAMA_CPP}/v1`, 'qwen2.5-coder-7b-instruct-q4_k_m.gguf', server));
      assert.deepEqual(window, { limit: 8192, server: 'llamacpp', origin: "llama.cpp's /props (n_ctx)" });
    });

    it("ignores a router's placeholder /props with n_ctx 0", async () => {
      const server = fakeServer({
        [`GET ${LLAMA_CPP}/props?model=m&autoload=false`]: json({ role: 'router', default_generation_settings: { params: {}, n_ctx: 0 } }),
      });
      assert.equal(await discoverContextWindow(options(`${LLAMA_CPP}/v1`, 'm', server)), undefined);
    });

    it("prefers a running context to a guessed default when several servers' APIs answer", async () => {
      const server = fakeServer({
        [`GET ${LLAMA_CPP}/props?model=m&autoload=false`]: file('llamacpp-props.json'),
        [`POST ${LLAMA_CPP}/api/show`]: file('ollama-api-show.json'),
        [`GET ${LLAMA_CPP}/api/version`]: json({ version: '0.12.3' }),
      });
      assert.equal((await discoverContextWindow(options(`${LLAMA_CPP}/v1`, 'm', server)))?.server, 'llamacpp');
    });
  });

  describe('when servers misbehave', () => {
    it('settles with nothing when the server hangs, once the timeout passes', async () => {
      const everything: Route = hang;
      const server = fakeServer(new Proxy({} as Record<string, Route>, { get: () => everything }));
      const window = await discoverContextWindow(options(`${OLLAMA}/v1`, 'llama3.2', server, { timeoutMs: 50 }));
      assert.equal(window, undefined);
      assert.deepEqual(server.urls(), [`GET ${OLLAMA}/v1/models`], 'a model list that times out ends the search');
    });

    it('settles even with a fetch that ignores its abort signal', async () => {
      const server = fakeServer(new Proxy({} as Record<string, Route>, { get: () => deaf }));
      assert.equal(await discoverContextWindow(options(`${OLLAMA}/v1`, 'llama3.2', server, { timeoutMs: 50 })), undefined);
    });

    it('still answers from a native API when only some probes hang', async () => {
      const server = fakeServer({
        [`GET ${OLLAMA}/v1/models`]: file('ollama-models.json'),
        [`GET ${OLLAMA}/api/ps`]: file('ollama-api-ps.json'),
        [`GET ${OLLAMA}/api/v0/models`]: hang,
        [`GET ${OLLAMA}/api/v1/models`]: deaf,
        [`GET ${OLLAMA}/props?model=llama3.2%3Alatest&autoload=false`]: hang,
      });
      const window = await discoverContextWindow(options(`${OLLAMA}/v1`, 'llama3.2:latest', server, { timeoutMs: 50 }));
      assert.equal(window?.limit, 8192);
    });

    it('settles with nothing at once when the caller has already aborted, asking nothing', async () => {
      const server = fakeServer({ [`GET ${VLLM}/v1/models`]: file('vllm-models.json') });
      const window = await discoverContextWindow(options(`${VLLM}/v1`, 'Qwen/Qwen2.5-Coder-32B-Instruct', server, { signal: AbortSignal.abort() }));
      assert.equal(window, undefined);
      assert.deepEqual(server.calls, []);
    });

    it('settles with nothing when the caller aborts while the server hangs', async () => {
      const server = fakeServer(new Proxy({} as Record<string, Route>, { get: () => hang }));
      const controller = new AbortController();
      const pending = discoverContextWindow(options(`${OLLAMA}/v1`, 'llama3.2', server, { timeoutMs: 60_000, signal: controller.signal }));
      setTimeout(() => controller.abort(), 10);
      assert.equal(await pending, undefined);
    });

    it('finds nothing in web pages or malformed JSON', async () => {
      const html: Route = () => new Response('<!doctype html><html><body>Welcome</body></html>', { headers: { 'Content-Type': 'text/html' } });
      const broken = json('{"data": [{"id": "m", "max_model_len": 4096');
      for (const answer of [html, broken, json('null'), json('[1, 2]'), json({ data: 'nope' })]) {
        const server = fakeServer(new Proxy({} as Record<string, Route>, { get: () => answer }));
        assert.equal(await discoverContextWindow(options(`${OLLAMA}/v1`, 'm', server)), undefined);
      }
    });

    it('finds nothing when every answer is 401, even with a window in the error body', async () => {
      const unauthorized = json({ error: { message: 'Incorrect API key provided', context_length: 4096 } }, 401);
      const server = fakeServer(new Proxy({} as Record<string, Route>, { get: () => unauthorized }));
      assert.equal(await discoverContextWindow(options(`${VLLM}/v1`, 'm', server, { apiKey: 'bad' })), undefined);
    });

    it('finds nothing for a model the list does not hold, however large the others are', async () => {
      const server = fakeServer({ [`GET ${VLLM}/v1/models`]: file('vllm-models.json') });
      assert.equal(await discoverContextWindow(options(`${VLLM}/v1`, 'Qwen/Qwen2.5-Coder-7B-Instruct', server)), undefined);
      assert.deepEqual(server.urls(), [`GET ${VLLM}/v1/models`], 'vLLM has no native API to probe');
    });

    it('never throws, even when fetch does or the base URL is not a URL', async () => {
      const throwing: typeof fetch = () => {
        throw new TypeError('fetch failed');
      };
      assert.equal(await discoverContextWindow({ baseUrl: `${OLLAMA}/v1`, modelId: 'm', fetch: throwing }), undefined);
      assert.equal(await discoverContextWindow({ baseUrl: 'not a url', modelId: 'm', fetch: throwing }), undefined);
    });
  });

  describe('the API key', () => {
    it('is sent as a bearer token on every request when given, and never comes back', async () => {
      const server = fakeServer({
        [`GET ${OLLAMA}/v1/models`]: file('ollama-models.json'),
        [`GET ${OLLAMA}/api/ps`]: file('ollama-api-ps-empty.json'),
        [`POST ${OLLAMA}/api/show`]: file('ollama-api-show-num-ctx.json'),
      });
      const window = await discoverContextWindow(options(`${OLLAMA}/v1`, 'qwen2.5-coder:7b', server, { apiKey: 'sk-secret' }));
      assert.equal(window?.limit, 16_384);
      assert.ok(server.calls.length > 1);
      for (const call of server.calls) assert.equal(call.headers.get('authorization'), 'Bearer sk-secret', call.url);
      assert.doesNotMatch(JSON.stringify(window), /sk-secret/);
    });

    it('is not sent when none is given', async () => {
      const server = fakeServer({
        [`GET ${OLLAMA}/v1/models`]: file('ollama-models.json'),
        [`GET ${OLLAMA}/api/ps`]: file('ollama-api-ps.json'),
      });
      await discoverContextWindow(options(`${OLLAMA}/v1`, 'llama3.2:latest', server));
      assert.ok(server.calls.length > 1);
      for (const call of server.calls) assert.equal(call.headers.get('authorization'), null, call.url);
    });

    it('asks not to follow redirects when a key is sent, so it cannot be carried to another host', async () => {
      const redirects: (RequestInit['redirect'] | undefined)[] = [];
      const fetchImpl: typeof fetch = async (_input, init) => {
        redirects.push(init?.redirect);
        return new Response(null, { status: 302, headers: { Location: 'https://elsewhere.example/models' } });
      };
      assert.equal(await discoverContextWindow({ baseUrl: `${VLLM}/v1`, modelId: 'm', apiKey: 'sk-secret', fetch: fetchImpl }), undefined);
      assert.ok(redirects.length > 0);
      assert.ok(redirects.every((mode) => mode === 'manual'));
    });
  });
});
