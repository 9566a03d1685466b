import assert from 'node:assert/strict';
import type { FormatName } from '../../../scripts/scripted-model/formats/format';
import { startScriptedModelServer, type ScriptedModelServer } from '../../../scripts/scripted-model/server';

/**
 * The stand-ins give the metadata their real APIs give (Gemini 3's thought signatures, Claude's
 * signed thinking, OpenAI's reasoning items) and refuse, with the real API's error, a request that
 * does not give it back where the real API requires it.
 */

const READ = 'please read docs/notes.md';

async function serve(format: FormatName, models: readonly string[]): Promise<ScriptedModelServer> {
  return startScriptedModelServer({ format, models: models.map((id) => ({ id, window: 200_000 })) });
}

async function post(url: string, headers: Record<string, string>, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
}

function errorMessage(json: Record<string, unknown>): string {
  return String((json.error as { message?: unknown } | undefined)?.message ?? '');
}

describe('the stand-ins keep their APIs’ metadata rules', function () {
  this.timeout(20_000);

  describe('Gemini', () => {
    let server: ScriptedModelServer;
    before(async () => (server = await serve('google', ['gemini-3-pro-preview', 'gemini-2.5-flash'])));
    after(() => server.close());
    const tools = [{ functionDeclarations: [{ name: 'read_file', parameters: { type: 'object', properties: { path: { type: 'string' } } } }] }];
    const generate = (model: string, contents: unknown[]) =>
      post(`${server.url}/models/${model}:generateContent`, { 'x-goog-api-key': 'k' }, { contents, tools });
    const user = { role: 'user', parts: [{ text: READ }] };
    const result = { role: 'user', parts: [{ functionResponse: { name: 'read_file', response: { content: 'first line' } } }] };
    const call = (signature?: string) => ({
      role: 'model',
      parts: [{ functionCall: { name: 'read_file', args: { path: 'docs/notes.md' } }, ...(signature ? { thoughtSignature: signature } : {}) }],
    });

    it('signs the first function call of a Gemini 3 answer, and no call of an earlier model', async () => {
      const answered = await generate('gemini-3-pro-preview', [user]);
      const parts = (answered.json.candidates as Array<{ content: { parts: Array<Record<string, unknown>> } }>)[0]!.content.parts;
      assert.equal(typeof parts[0]!.thoughtSignature, 'string');
      const older = await generate('gemini-2.5-flash', [user]);
      const olderParts = (older.json.candidates as Array<{ content: { parts: Array<Record<string, unknown>> } }>)[0]!.content.parts;
      assert.ok(olderParts[0]!.functionCall);
      assert.equal(olderParts[0]!.thoughtSignature, undefined);
    });

    it("refuses a Gemini 3 function call of the current turn given back without its signature, with Gemini's 400", async () => {
      const refused = await generate('gemini-3-pro-preview', [user, call(), result]);
      assert.equal(refused.status, 400);
      assert.equal((refused.json.error as { status?: string }).status, 'INVALID_ARGUMENT');
      assert.match(
        errorMessage(refused.json),
        /^Function call is missing a thought_signature in functionCall parts\..*`default_api:read_file` , position 2\./,
      );
    });

    it('takes it back with its signature, an unsigned call of an earlier turn, and any call for a model before Gemini 3', async () => {
      const first = await generate('gemini-3-pro-preview', [user]);
      const signature = (first.json.candidates as Array<{ content: { parts: Array<{ thoughtSignature?: string }> } }>)[0]!.content.parts[0]!
        .thoughtSignature;
      assert.equal((await generate('gemini-3-pro-preview', [user, call(signature), result])).status, 200);
      const later = [user, call(), result, { role: 'model', parts: [{ text: 'Read it.' }] }, { role: 'user', parts: [{ text: 'thanks' }] }];
      assert.equal((await generate('gemini-3-pro-preview', later)).status, 200);
      assert.equal((await generate('gemini-2.5-flash', [user, call(), result])).status, 200);
    });
  });

  describe('Anthropic', () => {
    let server: ScriptedModelServer;
    before(async () => (server = await serve('anthropic', ['claude-sonnet-4-5'])));
    after(() => server.close());
    const tools = [{ name: 'read_file', input_schema: { type: 'object', properties: { path: { type: 'string' } } } }];
    const thinking = { type: 'enabled', budget_tokens: 1024 };
    const messages = (body: Record<string, unknown>) =>
      post(`${server.url}/messages`, { 'x-api-key': 'k' }, { model: 'claude-sonnet-4-5', max_tokens: 2048, tools, ...body });
    const ask = { role: 'user', content: READ };
    const use = { type: 'tool_use', id: 'toolu_1', name: 'read_file', input: { path: 'docs/notes.md' } };
    const result = { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'first line' }] };

    it('starts an answer with a signed thinking block, before its tool use, when thinking is enabled, and only then', async () => {
      const answered = await messages({ thinking, messages: [ask] });
      const content = answered.json.content as Array<Record<string, unknown>>;
      assert.deepEqual(
        content.map((b) => b.type),
        ['thinking', 'tool_use'],
      );
      assert.equal(typeof content[0]!.signature, 'string');
      const plain = await messages({ messages: [ask] });
      assert.deepEqual(
        (plain.json.content as Array<Record<string, unknown>>).map((b) => b.type),
        ['tool_use'],
      );
    });

    it("refuses a tool loop whose tool use comes back without its thinking, or with a signature not the model's, with Anthropic's 400", async () => {
      const missing = await messages({ thinking, messages: [ask, { role: 'assistant', content: [use] }, result] });
      assert.equal(missing.status, 400);
      assert.match(
        errorMessage(missing.json),
        /^messages\.1\.content\.0\.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`\. When `thinking` is enabled, a final `assistant` message must start with a thinking block/,
      );
      const forged = await messages({
        thinking,
        messages: [ask, { role: 'assistant', content: [{ type: 'thinking', thinking: 'hmm', signature: 'forged' }, use] }, result],
      });
      assert.equal(forged.status, 400);
      assert.equal(errorMessage(forged.json), 'messages.1.content.0: Invalid `signature` in `thinking` block');
    });

    it('takes the loop back with the thinking block as given, or redacted, and any loop without thinking enabled', async () => {
      const first = await messages({ thinking, messages: [ask] });
      const [block] = first.json.content as Array<Record<string, unknown>>;
      assert.equal((await messages({ thinking, messages: [ask, { role: 'assistant', content: [block, use] }, result] })).status, 200);
      const redacted = { type: 'redacted_thinking', data: 'opaque' };
      assert.equal((await messages({ thinking, messages: [ask, { role: 'assistant', content: [redacted, use] }, result] })).status, 200);
      assert.equal((await messages({ messages: [ask, { role: 'assistant', content: [use] }, result] })).status, 200);
    });
  });

  describe("OpenAI's Responses API", () => {
    let server: ScriptedModelServer;
    before(async () => (server = await serve('openai', ['gpt-5', 'gpt-4.1'])));
    after(() => server.close());
    const tools = [{ type: 'function', name: 'read_file', parameters: { type: 'object', properties: { path: { type: 'string' } } } }];
    const respond = (body: Record<string, unknown>) =>
      post(`${server.url}/responses`, { authorization: 'Bearer k' }, { model: 'gpt-5', tools, store: false, ...body });
    const ask = { role: 'user', content: READ };
    type Item = Record<string, unknown>;
    const loop = async (): Promise<{ reasoning: Item; call: Item; output: Item }> => {
      const first = await respond({ input: [ask], include: ['reasoning.encrypted_content'] });
      const [reasoning, call] = first.json.output as Item[];
      return { reasoning: reasoning!, call: call!, output: { type: 'function_call_output', call_id: call!.call_id, output: 'first line' } };
    };
    const bare = (call: Item): Item => ({ type: 'function_call', call_id: call.call_id, name: call.name, arguments: call.arguments });

    it('starts a reasoning model’s answer with a reasoning item, its content encrypted when asked for; none for another model', async () => {
      const { reasoning, call } = await loop();
      assert.equal(reasoning.type, 'reasoning');
      assert.match(String(reasoning.id), /^rs_/);
      assert.equal(typeof reasoning.encrypted_content, 'string');
      assert.equal(call.type, 'function_call');
      const plain = await respond({ input: [ask] });
      assert.equal((plain.json.output as Item[])[0]!.encrypted_content, undefined);
      const other = await respond({ model: 'gpt-4.1', input: [ask] });
      assert.deepEqual(
        (other.json.output as Item[]).map((item) => item.type),
        ['function_call'],
      );
    });

    it('refuses a function call of the loop given back without its reasoning item, or with it by an id it does not store', async () => {
      const { reasoning, call, output } = await loop();
      const without = await respond({ input: [ask, bare(call), output] });
      assert.equal(without.status, 400);
      assert.match(
        errorMessage(without.json),
        new RegExp(
          `^Item '${String(call.id)}' of type 'function_call' was provided without its required 'reasoning' item: '${String(reasoning.id)}'\\.$`,
        ),
      );
      const byId = await respond({ input: [ask, { type: 'reasoning', id: reasoning.id, summary: [] }, bare(call), output] });
      assert.equal(byId.status, 404);
      assert.match(errorMessage(byId.json), /^Item with id 'rs_[^']+' not found\. Items are not persisted when `store` is set to false\./);
      const forged = await respond({ input: [ask, { ...reasoning, encrypted_content: 'forged' }, bare(call), output] });
      assert.equal(forged.status, 400);
      assert.match(errorMessage(forged.json), /could not be verified/);
    });

    it('takes the loop back with its reasoning item and encrypted content, and a loop of a model that does not reason', async () => {
      const { reasoning, call, output } = await loop();
      assert.equal((await respond({ input: [ask, reasoning, bare(call), output] })).status, 200);
      const other = await respond({ model: 'gpt-4.1', input: [ask] });
      const [otherCall] = other.json.output as Item[];
      const otherOutput = { type: 'function_call_output', call_id: otherCall!.call_id, output: 'first line' };
      assert.equal((await respond({ model: 'gpt-4.1', input: [ask, bare(otherCall!), otherOutput] })).status, 200);
    });
  });
});
