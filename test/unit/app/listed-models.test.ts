import assert from 'node:assert/strict';
import { ListedModels, type ListModels } from '../../../src/app/models/listed-models';
import type { EndpointSetting } from '../../../src/app/settings';
import { listEndpointModels } from '../../../src/llm/openai-endpoint';
import { startScriptedModelServer, type ScriptedModelServer } from '../../../scripts/scripted-model/server';

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('the models of an endpoint that names none', () => {
  let server: ScriptedModelServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('offers the models a real server lists, once it answers, and lists nothing for an endpoint that names its models', async () => {
    server = await startScriptedModelServer({
      port: 0,
      models: [
        { id: 'coder-7b', window: 32_768 },
        { id: 'coder-32b', window: 65_536 },
      ],
    });
    const asked: string[] = [];
    const warnings: string[] = [];
    const listed = new ListedModels({
      list: (endpoint, signal) => {
        asked.push(endpoint.name);
        return listEndpointModels(endpoint.baseUrl, undefined, fetch, signal);
      },
      warn: (message) => warnings.push(message),
    });
    let changes = 0;
    listed.onDidChange(() => changes++);
    const local: EndpointSetting = { name: 'local', baseUrl: server.url, models: [] };
    const named: EndpointSetting = { name: 'named', baseUrl: server.url, models: [{ id: 'coder-7b', toolCalling: true }] };

    listed.ensure([local, named]);
    assert.deepEqual(listed.idsOf(local), [], 'nothing until the server answers');
    await waitUntil(() => changes > 0);
    assert.deepEqual([...listed.idsOf(local)].sort(), ['coder-32b', 'coder-7b']);
    assert.deepEqual(asked, ['local'], 'an endpoint that names its models is not listed');
    listed.ensure([local, named]);
    await tick();
    assert.deepEqual(asked, ['local'], 'listed once');
    assert.deepEqual(warnings, []);
  });

  it('says a failed listing once with what to do, asks again only after forget, and drops a listing forgotten meanwhile', async () => {
    const warnings: string[] = [];
    let answer: () => Promise<string[]> = () => Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:11434'));
    let calls = 0;
    const list: ListModels = () => {
      calls++;
      return answer();
    };
    const listed = new ListedModels({ list, warn: (message) => warnings.push(message) });
    const down: EndpointSetting = { name: 'ollama', baseUrl: 'http://127.0.0.1:11434/v1', models: [] };
    listed.ensure([down]);
    await tick();
    listed.ensure([down]);
    await tick();
    assert.equal(calls, 1, 'not asked again at every look at the picker');
    assert.equal(warnings.length, 1);
    assert.match(
      warnings[0]!,
      /"ollama" could not be listed \(connect ECONNREFUSED.*\)\. Check that its server runs.*name its models in longrun\.endpoints/,
    );
    assert.deepEqual(listed.idsOf(down), []);

    let release: (ids: string[]) => void = () => undefined;
    answer = () => new Promise((resolve) => (release = resolve));
    listed.forget();
    listed.ensure([down]);
    assert.equal(calls, 2);
    listed.forget();
    release(['stale-model']);
    await tick();
    assert.deepEqual(listed.idsOf(down), [], 'a listing forgotten while it ran is not taken');

    answer = () => Promise.resolve([]);
    listed.ensure([down]);
    await tick();
    assert.match(warnings.at(-1)!, /"ollama" lists no models/);
  });

  it('offers one entry for a model its server lists by its alias and its dated snapshots', async () => {
    const listed = new ListedModels({
      list: async () => ['claude-sonnet-4-5-20250929', 'claude-opus-4-5-20251101', 'claude-sonnet-4-5', 'claude-sonnet-4-20250514'],
      warn: () => undefined,
    });
    const anthropic: EndpointSetting = { name: 'claude', baseUrl: 'https://api.anthropic.com/v1', provider: 'anthropic', models: [] };
    listed.ensure([anthropic]);
    await tick();
    assert.deepEqual(listed.idsOf(anthropic), ['claude-sonnet-4-5', 'claude-opus-4-5-20251101', 'claude-sonnet-4-20250514']);
  });

  it('lists an endpoint again when its URL or provider changes', async () => {
    const asked: string[] = [];
    const listed = new ListedModels({ list: async (endpoint) => (asked.push(endpoint.baseUrl), ['m']), warn: () => undefined });
    listed.ensure([{ name: 'e', baseUrl: 'http://127.0.0.1:1/v1', models: [] }]);
    listed.ensure([{ name: 'e', baseUrl: 'http://127.0.0.1:2/v1', models: [] }]);
    listed.ensure([{ name: 'e', baseUrl: 'http://127.0.0.1:2/v1', provider: 'openrouter', models: [] }]);
    await tick();
    assert.equal(asked.length, 3);
  });
});

async function waitUntil(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  assert.ok(condition(), 'timed out');
}
