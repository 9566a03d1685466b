import assert from 'node:assert/strict';
import type { DiscoveredWindow } from '../../../src/llm/window-discovery';
import { applyLearned, ASSUMED_WINDOW, learnedWins, ModelWindows, windowFor, type DiscoveryTarget } from '../../../src/app/models/model-windows';
import { ModelCatalogue } from '../../../src/app/models/model-catalogue';
import type { ModelOverride } from '../../../src/app/settings';

/** A memento over a map, like VS Code's globalState. */
class MapMemento {
  readonly values = new Map<string, unknown>();
  get<T>(key: string): T | undefined {
    return this.values.get(key) as T | undefined;
  }
  async update(key: string, value: unknown): Promise<void> {
    this.values.set(key, structuredClone(value));
  }
}

// A model Longrun's table does not know, as most local fine-tunes are.
const target: DiscoveryTarget = { baseUrl: 'http://127.0.0.1:11434/v1/', modelId: 'acme-coder:7b', endpoint: 'ollama' };
const key = 'longrun/ollama/acme-coder:7b';

function windows(answers: Array<DiscoveredWindow | undefined | Error>, memento = new MapMemento(), overrides: Record<string, ModelOverride> = {}) {
  const asked: DiscoveryTarget[] = [];
  const registry = new ModelWindows({
    memento,
    discover: async (t) => {
      asked.push(t);
      const answer = answers.shift();
      if (answer instanceof Error) throw answer;
      return answer;
    },
    now: () => 1_000,
    catalogue: new ModelCatalogue(() => overrides),
  });
  return { registry, asked, memento };
}

const fromServer = (limit: number, extra: Partial<DiscoveredWindow> = {}): DiscoveredWindow => ({
  limit,
  server: 'ollama',
  origin: "Ollama's loaded model (/api/ps)",
  ...extra,
});

describe('model windows: where the window comes from, in order', () => {
  it('assumes 32,768 tokens for an unknown model before its server answers, and says it is assumed', () => {
    const { registry } = windows([]);
    const sized = registry.forEndpointModel(target, key, {});
    assert.equal(sized.window.limit, ASSUMED_WINDOW);
    assert.equal(sized.window.assumed, true);
    assert.match(sized.window.origin, /assumed/);
  });

  it('uses the window the server states once asked, with a reserve that fits it', async () => {
    const { registry } = windows([fromServer(6_000)]);
    let changes = 0;
    registry.onDidChange(() => changes++);
    await registry.ensure(target);
    const sized = registry.forEndpointModel(target, key, {});
    assert.deepEqual(sized, {
      window: { limit: 6_000, origin: "from Ollama's loaded model (/api/ps)", assumed: false },
      outputReserve: 1_500,
      inputLimit: 4_500,
    });
    assert.equal(changes, 1);
  });

  it('prefers the model catalogue to an assumption, and the server to the catalogue', async () => {
    const known = { ...target, modelId: 'gpt-4o' };
    const { registry } = windows([fromServer(64_000)]);
    assert.equal(registry.forEndpointModel(known, 'longrun/x/gpt-4o', {}).window.limit, 128_000);
    await registry.ensure(known);
    assert.equal(registry.forEndpointModel(known, 'longrun/x/gpt-4o', {}).window.limit, 64_000);
  });

  it('gives an alias and its dated snapshot one window, the catalogue’s or the one the user set for either', () => {
    const anthropic = { baseUrl: 'https://api.anthropic.com/v1', provider: 'anthropic' as const };
    const sized = (registry: ModelWindows, modelId: string) =>
      registry.forEndpointModel({ ...anthropic, modelId }, `longrun/claude/${modelId}`, { provider: 'anthropic' }).window;
    const { registry } = windows([]);
    assert.deepEqual(sized(registry, 'claude-sonnet-4-5'), { limit: 200_000, origin: 'from the model catalogue (Anthropic)', assumed: false });
    assert.deepEqual(sized(registry, 'claude-sonnet-4-5-20250929'), sized(registry, 'claude-sonnet-4-5'));
    const overridden = windows([], new MapMemento(), { 'claude-sonnet-4-5-20250929': { contextWindow: 1_000_000 } }).registry;
    assert.equal(sized(overridden, 'claude-sonnet-4-5').limit, 1_000_000);
    assert.equal(sized(overridden, 'claude-sonnet-4').limit, 200_000, 'not another model’s');
  });

  it("lets the user's longrun.models.overrides win over the server, and the endpoint's own contextWindow over both", async () => {
    const { registry } = windows([fromServer(6_000)], new MapMemento(), { 'acme-coder:7b': { contextWindow: 20_000, maxOutputTokens: 1_000 } });
    await registry.ensure(target);
    const overridden = registry.forEndpointModel(target, key, {});
    assert.equal(overridden.window.limit, 20_000);
    assert.match(overridden.window.origin, /longrun\.models\.overrides/);
    assert.equal(overridden.outputReserve, 1_000);
    assert.equal(registry.forEndpointModel(target, key, { contextWindow: 16_384 }).window.limit, 16_384);
  });

  it("lets the user's contextWindow and maxOutputTokens win over the server", async () => {
    const { registry } = windows([fromServer(6_000, { maxOutputTokens: 100 })]);
    await registry.ensure(target);
    const sized = registry.forEndpointModel(target, key, { contextWindow: 16_384, maxOutputTokens: 2_000 });
    assert.equal(sized.window.limit, 16_384);
    assert.match(sized.window.origin, /your longrun\.endpoints setting/);
    assert.equal(sized.outputReserve, 2_000);
    assert.equal(sized.inputLimit, 14_384);
  });

  it("uses the server's stated maximum output when the user set none", async () => {
    const { registry } = windows([fromServer(200_000, { maxOutputTokens: 8_000 })]);
    await registry.ensure(target);
    assert.equal(registry.forEndpointModel(target, key, {}).outputReserve, 8_000);
  });

  it('lets a smaller window the server stated in an error win, and forgets it when a larger request succeeds', async () => {
    const { registry } = windows([fromServer(32_000)]);
    await registry.ensure(target);
    registry.learn(key, 4_096, 'stated by the server in an overflow error');
    const sized = registry.forEndpointModel(target, key, {});
    assert.deepEqual(sized.window, { limit: 4_096, origin: 'stated by the server in an overflow error', assumed: false });
    assert.equal(sized.outputReserve, 1_024);
    registry.learn(key, 8_000, 'later, larger');
    assert.equal(registry.forEndpointModel(target, key, {}).window.limit, 4_096, 'the smaller stays');
    assert.equal(registry.forget(key), true);
    assert.equal(registry.forEndpointModel(target, key, {}).window.limit, 32_000);
  });

  it('raises a window learned from a cut prompt when more is read later, instead of forgetting it', () => {
    const { registry } = windows([]);
    assert.equal(registry.isLowerBound(key), false);
    registry.learn(key, 2_400, 'suggested by a prompt the server cut', true);
    assert.equal(registry.isLowerBound(key), true, 'a window suggested by a cut prompt is only a lower bound');
    assert.equal(registry.observe(key, 2_000), false);
    assert.equal(registry.observe(key, 2_900), true);
    assert.equal(registry.forEndpointModel(target, key, {}).window.limit, 2_900);
    registry.learn(key, 2_000, 'stated by the server in an overflow error');
    assert.equal(registry.isLowerBound(key), false, 'a window an error states is exact');
    assert.equal(registry.observe(key, 2_500), true);
    assert.equal(registry.learnedWindow(key), undefined, "an error's window is forgotten once exceeded");
  });
});

describe('model windows: a cut prompt never shrinks a window that is stated', () => {
  const cut = (registry: ModelWindows, at: string): void => registry.learn(at, 4_558, 'suggested by a prompt the server cut', true);

  it("keeps the window the server's model list states, the user's setting and a native provider's catalogue window", async () => {
    const { registry } = windows([fromServer(20_000)]);
    await registry.ensure(target);
    cut(registry, key);
    assert.equal(registry.forEndpointModel(target, key, {}).window.limit, 20_000, "the server's model list");
    assert.equal(registry.forEndpointModel(target, key, { contextWindow: 16_000 }).window.limit, 16_000, "the user's setting");
    const native = { baseUrl: 'https://api.openai.com/v1', modelId: 'gpt-4.1', provider: 'openai' as const };
    const stated = registry.forEndpointModel(native, 'longrun/openai/gpt-4.1', { provider: 'openai' }).window;
    cut(registry, 'longrun/openai/gpt-4.1');
    assert.deepEqual(registry.forEndpointModel(native, 'longrun/openai/gpt-4.1', { provider: 'openai' }).window, stated, 'the catalogue');
    assert.ok(stated.limit > 100_000);
    const setting = windowFor({ kind: 'endpoint', resolved: registry.forEndpointModel(target, key, {}) }, 12_000, registry.learnedWindow(key));
    assert.equal(setting?.window.limit, 12_000, 'longrun.contextWindow');
  });

  it('lowers an assumed window, and a catalogue window of a model on a server that may cut prompts', () => {
    const { registry } = windows([]);
    cut(registry, key);
    const assumed = registry.forEndpointModel(target, key, {});
    assert.equal(assumed.window.limit, 4_558);
    assert.equal(assumed.window.origin, 'suggested by a prompt the server cut');
    const local = { baseUrl: 'http://127.0.0.1:1234/v1', modelId: 'gpt-4.1' };
    cut(registry, 'longrun/lmstudio/gpt-4.1');
    assert.equal(registry.forEndpointModel(local, 'longrun/lmstudio/gpt-4.1', {}).window.limit, 4_558);
  });

  it('still takes a smaller window a server states in an overflow error over a stated one', async () => {
    const { registry } = windows([fromServer(20_000)]);
    await registry.ensure(target);
    registry.learn(key, 8_192, 'stated by the server in an overflow error');
    assert.equal(registry.forEndpointModel(target, key, {}).window.limit, 8_192);
  });
});

describe('model windows: asking the server', () => {
  it('asks once per session, keeps the answer across sessions, and asks again in the next', async () => {
    const memento = new MapMemento();
    const first = windows([fromServer(6_000)], memento);
    await Promise.all([first.registry.ensure(target), first.registry.ensure(target)]);
    await first.registry.ensure(target);
    assert.equal(first.asked.length, 1);
    // A new session (a reload) shows the cached window at once, and refreshes it in the background.
    const second = windows([fromServer(8_192)], memento);
    assert.equal(second.registry.forEndpointModel(target, key, {}).window.limit, 6_000);
    await second.registry.ensure(target);
    assert.equal(second.asked.length, 1);
    assert.equal(second.registry.forEndpointModel(target, key, {}).window.limit, 8_192);
  });

  it('keeps what it knew when the server does not answer or discovery fails', async () => {
    const memento = new MapMemento();
    const first = windows([fromServer(6_000)], memento);
    await first.registry.ensure(target);
    const second = windows([undefined], memento);
    await second.registry.ensure(target);
    assert.equal(second.registry.forEndpointModel(target, key, {}).window.limit, 6_000);
    const third = windows([new Error('boom')], memento);
    await third.registry.ensure(target);
    assert.equal(third.registry.forEndpointModel(target, key, {}).window.limit, 6_000);
  });

  it('treats base URLs that differ only by a trailing slash as one endpoint', async () => {
    const { registry } = windows([fromServer(6_000)]);
    await registry.ensure(target);
    assert.equal(registry.forEndpointModel({ ...target, baseUrl: 'http://127.0.0.1:11434/v1' }, key, {}).window.limit, 6_000);
  });

  it('never reads a malformed cache as a window', () => {
    const memento = new MapMemento();
    memento.values.set('longrun.discoveredWindows', 'garbage');
    assert.equal(windows([], memento).registry.forEndpointModel(target, key, {}).window.assumed, true);
    memento.values.set('longrun.discoveredWindows', { 'http://127.0.0.1:11434/v1|acme-coder:7b': { limit: 'big', origin: 7 } });
    assert.equal(windows([], memento).registry.forEndpointModel(target, key, {}).window.assumed, true);
  });
});

describe('a learned window against a declared one', () => {
  it('wins when smaller, or when none is declared, and never when larger', () => {
    assert.equal(learnedWins(8_192, 4_096), true);
    assert.equal(learnedWins(0, 4_096), true);
    assert.equal(learnedWins(8_192, 16_384), false);
    assert.equal(learnedWins(8_192, undefined), false);
    const declared = { limit: 8_192, origin: 'from your longrun.contextWindow setting', assumed: false };
    assert.deepEqual(applyLearned(declared, { limit: 4_096, why: 'stated by the server in an overflow error' }), {
      limit: 4_096,
      origin: 'stated by the server in an overflow error',
      assumed: false,
    });
    assert.equal(applyLearned(declared, { limit: 16_384, why: 'x' }), declared);
  });
});

describe('the window of the model in use', () => {
  const learned = { limit: 4_096, why: 'stated by the server in an overflow error' };
  const vscodeModel = { kind: 'vscode', vendor: 'copilot', maxInputTokens: 128_000 } as const;
  const endpoint = {
    kind: 'endpoint',
    resolved: { window: { limit: 32_768, origin: "from the server's model list", assumed: false }, outputReserve: 4_096, inputLimit: 28_672 },
    maxOutput: 2_048,
  } as const;

  it("takes VS Code's model's declared input limit, with no room of its own for the answer", () => {
    assert.deepEqual(windowFor(vscodeModel, undefined, undefined), {
      window: { limit: 128_000, origin: "declared by copilot's model in VS Code (maxInputTokens)", assumed: false },
      outputReserve: 0,
      inputLimit: 128_000,
    });
  });

  it('lets a smaller window the server showed win, keeping room for the answer; a larger one does not', () => {
    const smaller = windowFor(vscodeModel, undefined, learned)!;
    assert.equal(smaller.window.limit, 4_096);
    assert.ok(smaller.outputReserve > 0 && smaller.inputLimit < 4_096);
    assert.equal(windowFor(vscodeModel, undefined, { limit: 1_000_000, why: 'x' })!.inputLimit, 128_000);
    assert.equal(windowFor({ ...vscodeModel, maxInputTokens: 0 }, undefined, undefined), undefined, 'nothing known');
  });

  it('puts longrun.contextWindow over what the model declares, and a smaller learned window over both', () => {
    assert.equal(windowFor(vscodeModel, 16_000, undefined)!.window.limit, 16_000);
    assert.equal(windowFor(vscodeModel, 16_000, learned)!.window.limit, 4_096);
    const set = windowFor(endpoint, 16_000, undefined)!;
    assert.equal(set.window.origin, 'from your longrun.contextWindow setting');
    assert.equal(set.outputReserve, 2_048, "the endpoint's own answer limit");
    assert.equal(windowFor(endpoint, undefined, learned), endpoint.resolved, 'the resolved window already holds what was learned');
  });
});
