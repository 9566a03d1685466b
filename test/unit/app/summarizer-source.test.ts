import assert from 'node:assert/strict';
import { MockLanguageModelV4 } from 'ai/test';
import type { SummaryRequest } from '../../../src/core/ports';
import { SummarizerSource, type SummarizerModel, type SummarizerSourceDeps } from '../../../src/app/summarizer-source';
import { NO_TELEMETRY, type LongrunTelemetry } from '../../../src/llm/telemetry';
import type { AgentPrefix } from '../../../src/llm/ai-summarizer';

/**
 * The summarizer compactions ask for: made when first asked, for the model chosen then and the window
 * learned for it, kept while nothing that shapes it changed, and made anew when something did.
 */

const request: SummaryRequest = {
  system: 'You write handover summaries.',
  messages: [{ role: 'user', content: '[#1 user] add a test' }],
  maxOutputTokens: 500,
  temperature: 0.2,
  purpose: 'summary',
};

/** The state the source reads, which a test changes between questions. */
interface World {
  chosen: { key: string; declaredWindow: number } | undefined;
  conversationModel: string | undefined;
  learned: Map<string, number>;
  continues: boolean;
  firstChunkMs: number;
  telemetry: LongrunTelemetry;
}

function source(world: Partial<World> = {}) {
  const state: World = {
    chosen: { key: 'longrun/local/coder', declaredWindow: 32_000 },
    conversationModel: 'longrun/local/coder',
    learned: new Map(),
    continues: false,
    firstChunkMs: 60_000,
    telemetry: NO_TELEMETRY,
    ...world,
  };
  const models: MockLanguageModelV4[] = [];
  const chooses: string[] = [];
  const deps: SummarizerSourceDeps = {
    choose: async (): Promise<SummarizerModel | undefined> => {
      const chosen = state.chosen;
      chooses.push(chosen?.key ?? 'none');
      if (!chosen) return undefined;
      return {
        ...chosen,
        languageModel: async () => {
          const model = new MockLanguageModelV4({
            doGenerate: {
              content: [{ type: 'text', text: `## Session Summary\nwritten by model ${models.length + 1}` }],
              finishReason: { unified: 'stop', raw: 'stop' },
              usage: {
                inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
                outputTokens: { total: 5, text: 5, reasoning: undefined },
              },
              warnings: [],
            },
          });
          models.push(model);
          return model;
        },
      };
    },
    conversationModel: () => state.conversationModel,
    learnedWindow: (key) => state.learned.get(key),
    settings: () => ({ summaryContinuesConversation: state.continues, timeouts: { firstChunkMs: state.firstChunkMs, idleMs: 60_000 } }),
    telemetry: () => state.telemetry,
  };
  return { summarizers: new SummarizerSource(deps), state, models, chooses };
}

describe('the summarizer compactions ask for', () => {
  it('makes nothing until asked, then summarizes with the model chosen, named by its key and sized by its window', async () => {
    const { summarizers, models, chooses } = source();
    assert.equal(models.length, 0, 'no model is made before a compaction asks');
    assert.deepEqual(chooses, []);
    const summarizer = await summarizers.summarizer();
    assert.ok(summarizer);
    assert.equal(summarizer.name, 'longrun/local/coder');
    assert.equal(summarizer.contextWindow, 32_000);
    const response = await summarizer.summarize(request);
    assert.match(response.text, /written by model 1/);
    assert.equal(models[0]!.doGenerateCalls.length, 1);
  });

  it('has no summarizer when no model can be chosen', async () => {
    const { summarizers } = source({ chosen: undefined });
    assert.equal(await summarizers.summarizer(), undefined);
  });

  it('keeps the summarizer it made while the model, its window and the settings stay the same', async () => {
    const { summarizers, models, chooses } = source();
    const first = await summarizers.summarizer();
    const second = await summarizers.summarizer();
    assert.equal(second, first);
    assert.equal(models.length, 1);
    assert.equal(chooses.length, 2, 'the model is chosen afresh on every question');
  });

  it('sends at most the window a server stated for the model, once it is learned', async () => {
    const { summarizers, state, models } = source();
    assert.equal((await summarizers.summarizer())?.contextWindow, 32_000);
    state.learned.set('longrun/local/coder', 8_192);
    assert.equal((await summarizers.summarizer())?.contextWindow, 8_192);
    assert.equal(models.length, 2, 'made anew for the learned window');
    // A learned window larger than the declared one does not win.
    state.learned.set('longrun/local/coder', 64_000);
    assert.equal((await summarizers.summarizer())?.contextWindow, 32_000);
  });

  it('leaves the window out when neither the model nor a server stated one', async () => {
    const { summarizers } = source({ chosen: { key: 'copilot/gpt', declaredWindow: 0 } });
    assert.equal((await summarizers.summarizer())?.contextWindow, undefined);
  });

  it('is made anew for another model, another first-answer deadline, other tracing, and when told to forget', async () => {
    const { summarizers, state, models } = source();
    const first = await summarizers.summarizer();
    state.chosen = { key: 'longrun/remote/mini', declaredWindow: 128_000 };
    const other = await summarizers.summarizer();
    assert.notEqual(other, first);
    assert.equal(other?.name, 'longrun/remote/mini');
    state.firstChunkMs = 30_000;
    await summarizers.summarizer();
    assert.equal(models.length, 3);
    // Tracing turned on: another telemetry object.
    state.telemetry = { ...NO_TELEMETRY };
    await summarizers.summarizer();
    assert.equal(models.length, 4);
    summarizers.forget();
    await summarizers.summarizer();
    assert.equal(models.length, 5);
  });

  it("continues the agent's conversation only with the conversation's own model, when the settings ask for it", async () => {
    const { summarizers, state } = source({ continues: true });
    assert.equal((await summarizers.summarizer())?.continues, true);
    state.continues = false;
    assert.equal((await summarizers.summarizer())?.continues, undefined);
    state.continues = true;
    state.chosen = { key: 'longrun/remote/mini', declaredWindow: 128_000 };
    assert.equal((await summarizers.summarizer())?.continues, undefined, 'a cheaper summarizer model has not cached the conversation');
  });

  it('sends a continued summary request after the prefix the agent last sent', async () => {
    const { summarizers, models } = source({ continues: true });
    const prefix: AgentPrefix = { system: 'You are the agent.', tools: {} };
    summarizers.setAgentPrefix(prefix);
    const summarizer = await summarizers.summarizer();
    await summarizer!.summarize({
      ...request,
      continuation: { messages: [{ id: 'u1', role: 'user', content: [{ type: 'text', text: 'add a test' }] }], directive: 'Summarize now.' },
    });
    const prompt = models[0]!.doGenerateCalls[0]!.prompt;
    assert.equal(prompt[0]?.role, 'system');
    assert.equal(prompt[0]?.content, 'You are the agent.');
  });
});
