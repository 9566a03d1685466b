import assert from 'node:assert/strict';
import { generateText, stepCountIs, tool } from 'ai';
import { z } from 'zod';
import type { ProviderKind } from '../../../src/core/provider-kind';
import { DEFAULT_CONFIG } from '../../../src/core/config';
import { buildDirective } from '../../../src/core/summary-request';
import { createEndpointModel } from '../../../src/llm/openai-endpoint';
import type { FormatName } from '../../../scripts/scripted-model/formats/format';
import { startScriptedModelServer, type ScriptedModelServer } from '../../../scripts/scripted-model/server';

/** The stand-ins of each provider: the same scenarios in every API, and what each API does at its edges. */

const FORMATS: ReadonlyArray<{ format: FormatName; kind: ProviderKind; model: string }> = [
  { format: 'openai', kind: 'openai', model: 'gpt-5' },
  { format: 'anthropic', kind: 'anthropic', model: 'claude-sonnet-4-5' },
  { format: 'google', kind: 'google', model: 'gemini-2.5-flash' },
  { format: 'openrouter', kind: 'openrouter', model: 'anthropic/claude-sonnet-4.5' },
];

const post = (url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

/** Server-sent events as `[event name or type, payload]`. */
function events(text: string): Array<[string, Record<string, unknown>]> {
  return text
    .split('\n\n')
    .filter((frame) => frame.includes('data: {'))
    .map((frame) => {
      const data = JSON.parse(frame.slice(frame.indexOf('data: ') + 6)) as Record<string, unknown>;
      return [/^event: (.+)$/m.exec(frame)?.[1] ?? String(data.type ?? 'data'), data];
    });
}

for (const { format, kind, model } of FORMATS) {
  describe(`the ${format} stand-in's scenarios`, function () {
    this.timeout(20_000);
    let server: ScriptedModelServer;
    before(async () => {
      server = await startScriptedModelServer({ format, models: [{ id: model, window: 200_000 }] });
    });
    after(() => server.close());
    beforeEach(() => server.reset());

    it('reads the file a request names, then answers with its first line, as the demo agent does', async () => {
      const readFile = tool({
        description: 'Reads a file.',
        inputSchema: z.object({ path: z.string() }),
        execute: () => 'first line of the notes\nsecond line',
      });
      const result = await generateText({
        model: createEndpointModel({ endpoint: 'e', provider: kind, baseUrl: server.url, id: model }, 'key'),
        prompt: 'please read docs/notes.md',
        tools: { read_file: readFile },
        stopWhen: stepCountIs(3),
        maxRetries: 0,
      });
      assert.deepEqual(
        result.steps[0]!.toolCalls.map((c) => c.input),
        [{ path: 'docs/notes.md' }],
      );
      assert.equal(result.text, 'Offline scripted model: the tool returned "first line of the notes".');
    });

    it('writes a summary with its round and the files the conversation mentions', async () => {
      const result = await generateText({
        model: createEndpointModel({ endpoint: 'e', provider: kind, baseUrl: server.url, id: model }, 'key'),
        messages: [
          { role: 'user', content: 'please read src/app.ts' },
          { role: 'assistant', content: 'Read it.' },
          { role: 'user', content: buildDirective({ round: 2, summary: DEFAULT_CONFIG.summary, originalTask: 'fix the app' }) },
        ],
        maxRetries: 0,
      });
      assert.match(result.text, /^## Session Summary \(Compaction Round 2\)/);
      assert.match(result.text, /src\/app\.ts/);
      assert.match(result.text, /fix the app/);
      assert.equal(server.requests.at(-1)?.summary, true);
    });
  });
}

describe('the stand-ins at the edges of their APIs', function () {
  this.timeout(20_000);
  const started: ScriptedModelServer[] = [];
  const start = async (format: FormatName, id: string, extra: Partial<Parameters<typeof startScriptedModelServer>[0]> = {}) => {
    const server = await startScriptedModelServer({ format, models: [{ id, window: 200_000 }], ...extra });
    started.push(server);
    return server;
  };
  after(() => Promise.all(started.map((s) => s.close())));

  it("answers an alias as Anthropic's API does: the dated snapshot it names, described and billed as that snapshot", async () => {
    const anthropic = await start('anthropic', 'claude-sonnet-4-5-20250929');
    const headers = { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' };
    const described = await fetch(`${anthropic.url}/models/claude-sonnet-4-5`, { headers });
    assert.equal(described.status, 200);
    assert.equal(((await described.json()) as { id: string }).id, 'claude-sonnet-4-5-20250929');
    const answered = await post(
      `${anthropic.url}/messages`,
      { model: 'claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] },
      headers,
    );
    assert.equal(answered.status, 200);
    assert.equal(((await answered.json()) as { model: string }).model, 'claude-sonnet-4-5-20250929');
    const unknown = await post(
      `${anthropic.url}/messages`,
      { model: 'claude-sonnet-4', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] },
      headers,
    );
    assert.equal(unknown.status, 404, 'an alias of another model is not the snapshot');
  });

  it("refuses a request without a key as each provider does, with the provider's status and body", async () => {
    const anthropic = await start('anthropic', 'claude-sonnet-4-5');
    const refused = await post(`${anthropic.url}/messages`, {
      model: 'claude-sonnet-4-5',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'hi' }],
    });
    assert.equal(refused.status, 401);
    assert.deepEqual(((await refused.json()) as { error: unknown }).error, { type: 'authentication_error', message: 'x-api-key header is required' });
    const gemini = await start('google', 'gemini-2.5-flash');
    const denied = await post(`${gemini.url}/models/gemini-2.5-flash:generateContent`, { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] });
    assert.equal(denied.status, 403);
    assert.equal(((await denied.json()) as { error: { status: string } }).error.status, 'PERMISSION_DENIED');
    const router = await start('openrouter', 'openai/gpt-5');
    const noAuth = await post(`${router.url}/chat/completions`, { model: 'openai/gpt-5', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(noAuth.status, 401);
    assert.equal(anthropic.bill.charges.length + gemini.bill.charges.length + router.bill.charges.length, 0, 'nothing billed');
  });

  it("streams Anthropic's events in order, the prompt's cache usage first, a tool call's input in pieces", async () => {
    const server = await start('anthropic', 'claude-sonnet-4-5');
    server.script([{ text: 'Reading it.', toolCalls: [{ name: 'read_file', arguments: { path: 'a.ts' } }] }]);
    const body = {
      model: 'claude-sonnet-4-5',
      max_tokens: 100,
      stream: true,
      system: [{ type: 'text', text: 'You are careful. '.repeat(400), cache_control: { type: 'ephemeral' } }],
      messages: [{ role: 'user', content: 'read a.ts' }],
      tools: [{ name: 'read_file', input_schema: { type: 'object' } }],
    };
    const stream = events(await (await post(`${server.url}/messages`, body, { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' })).text());
    const names = stream.map(([name]) => name);
    assert.deepEqual(names.slice(0, 3), ['message_start', 'ping', 'content_block_start']);
    assert.deepEqual(names.slice(-2), ['message_delta', 'message_stop']);
    const usage = (stream[0]![1].message as { usage: Record<string, number> }).usage;
    assert.ok(usage.cache_creation_input_tokens! > 1_024, 'the system prompt was written to the cache');
    assert.equal(usage.cache_read_input_tokens, 0);
    const toolStart = stream.find(([name, data]) => name === 'content_block_start' && (data.content_block as { type: string }).type === 'tool_use');
    assert.ok(toolStart);
    const json = stream
      .filter(([name, data]) => name === 'content_block_delta' && (data.delta as { type: string }).type === 'input_json_delta')
      .map(([, data]) => (data.delta as { partial_json: string }).partial_json);
    assert.ok(json.length > 1);
    assert.deepEqual(JSON.parse(json.join('')), { path: 'a.ts' });
    assert.equal((stream.at(-2)![1].delta as { stop_reason: string }).stop_reason, 'tool_use');
  });

  it("refuses a fifth cache breakpoint with Anthropic's message, and caches nothing", async () => {
    const server = await start('anthropic', 'claude-sonnet-4-5');
    const marked = (text: string) => ({ type: 'text', text, cache_control: { type: 'ephemeral' } });
    const response = await post(
      `${server.url}/messages`,
      {
        model: 'claude-sonnet-4-5',
        max_tokens: 10,
        system: [marked('a'), marked('b'), marked('c')],
        messages: [{ role: 'user', content: [marked('d'), marked('e')] }],
      },
      { 'x-api-key': 'k' },
    );
    assert.equal(response.status, 400);
    assert.equal(
      ((await response.json()) as { error: { message: string } }).error.message,
      'A maximum of 4 blocks with cache_control may be provided. Found 5.',
    );
  });

  it('lets the cache lapse by the clock it is given, and bills what it charged, priced, through its control API', async () => {
    let now = 0;
    const server = await startScriptedModelServer({
      format: 'anthropic',
      clock: () => now,
      models: [{ id: 'claude-sonnet-4-5', window: 200_000, prices: { input: 3, output: 15, cacheRead: 0.3, cacheWrite5m: 3.75, cacheWrite1h: 6 } }],
    });
    started.push(server);
    const body = {
      model: 'claude-sonnet-4-5',
      max_tokens: 50,
      system: [{ type: 'text', text: 'Stable rules. '.repeat(500), cache_control: { type: 'ephemeral' } }],
      messages: [{ role: 'user', content: 'hello' }],
    };
    const send = () => post(`${server.url}/messages`, body, { 'x-api-key': 'k' }).then((r) => r.json() as Promise<{ usage: Record<string, number> }>);
    const first = await send();
    now = 4 * 60_000;
    const second = await send();
    now = 10 * 60_000;
    const third = await send();
    assert.equal(second.usage.cache_read_input_tokens, first.usage.cache_creation_input_tokens);
    assert.equal(third.usage.cache_read_input_tokens, 0, 'six minutes after its last read');
    assert.equal(third.usage.cache_creation_input_tokens, first.usage.cache_creation_input_tokens);
    const origin = server.url.replace(/\/v1$/, '');
    const bill = (await (await fetch(`${origin}/__control/bill`)).json()) as {
      charges: Array<{ cost: number }>;
      total: { cost: number; tokens: { cacheRead: number } };
    };
    assert.equal(bill.charges.length, 3);
    const written = first.usage.cache_creation_input_tokens!;
    const input = first.usage.input_tokens!;
    const output = first.usage.output_tokens!;
    const expected = (written * 3.75 + input * 3 + output * 15) / 1e6;
    assert.ok(Math.abs(bill.charges[0]!.cost - expected) < 1e-12, `${bill.charges[0]!.cost} for ${expected}`);
    assert.ok(bill.charges[1]!.cost < bill.charges[0]!.cost / 5, 'a read costs a tenth of a write');
    assert.equal(bill.total.tokens.cacheRead, written);
  });

  it('resolves an item_reference to an output item the Responses API stored, and refuses one it never made', async () => {
    const server = await start('openai', 'gpt-5');
    server.script([{ text: 'First answer.' }, { text: 'Second answer.' }]);
    const first = (await (await post(`${server.url}/responses`, { model: 'gpt-5', input: 'hello' })).json()) as { output: Array<{ id: string }> };
    const id = first.output[0]!.id;
    const second = await post(`${server.url}/responses`, {
      model: 'gpt-5',
      input: [
        { role: 'user', content: 'hello' },
        { type: 'item_reference', id },
        { role: 'user', content: 'and again' },
      ],
    });
    assert.equal(second.status, 200);
    assert.ok(JSON.stringify(server.requests.at(-1)?.body).includes(id));
    const unknown = await post(`${server.url}/responses`, { model: 'gpt-5', input: [{ type: 'item_reference', id: 'msg_never' }] });
    assert.equal(unknown.status, 404);
    assert.match(((await unknown.json()) as { error: { message: string } }).error.message, /msg_never/);
  });
});
