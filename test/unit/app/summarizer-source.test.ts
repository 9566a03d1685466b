import assert from 'node:assert/strict';
import { tool } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { z } from 'zod';
import type { SummaryRequest } from '../../../src/core/ports';
import { SummarizerSource, type SummarizerModel, type SummarizerSourceDeps } from '../../../src/app/compaction/summarizer-source';
import { NO_TELEMETRY, type LongrunTelemetry } from '../../../src/llm/telemetry';
import type { AgentPrefix } from '../../../src/llm/ai-summarizer';
import { IgnoredToolChoice, REMEMBERED_MS } from '../../../src/app/compaction/ignored-tool-choice';
import { memento } from '../fixtures/memento';

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
  chosen: { key: string; declaredWindow: number; server?: string } | undefined;
  conversationModel: string | undefined;
  learned: Map<string, number>;
  continues: boolean;
  firstChunkMs: number;
  telemetry: LongrunTelemetry;
  ignoredToolChoice: IgnoredToolChoice;
  /** The model's server lets it call a tool whatever tool_choice says. */
  callsToolsAnyway: boolean;
}

function source(world: Partial<World> = {}) {
  const state: World = {
    chosen: { key: 'longrun/local/coder', declaredWindow: 32_000 },
    conversationModel: 'longrun/local/coder',
    learned: new Map(),
    continues: false,
    firstChunkMs: 60_000,
    telemetry: NO_TELEMETRY,
    ignoredToolChoice: new IgnoredToolChoice({ memento: memento(), now: () => 0 }),
    callsToolsAnyway: false,
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
          const index = models.length + 1;
          const model = new MockLanguageModelV4({
            doGenerate: async (options) => ({
              content:
                state.callsToolsAnyway && (options.tools?.length ?? 0) > 0
                  ? [{ type: 'tool-call', toolCallId: 'c1', toolName: options.tools![0]!.name, input: '{}' }]
                  : [{ type: 'text', text: `## Session Summary\nwritten by model ${index}` }],
              finishReason: { unified: 'stop', raw: 'stop' },
              usage: {
                inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
                outputTokens: { total: 5, text: 5, reasoning: undefined },
              },
              warnings: [],
            }),
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
    ignoredToolChoice: state.ignoredToolChoice,
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

  describe('with a model whose server lets it call a tool under tool_choice "none"', () => {
    const continued: SummaryRequest = {
      ...request,
      continuation: { messages: [{ id: 'u1', role: 'user', content: [{ type: 'text', text: 'add a test' }] }], directive: 'Summarize now.' },
    };
    const agentTools = { read_file: tool({ description: 'Read a file.', inputSchema: z.object({ path: z.string() }) }) };
    const served = (store = memento(), now = () => 0) => {
      const world = source({
        continues: true,
        callsToolsAnyway: true,
        chosen: { key: 'longrun/local/coder', declaredWindow: 32_000, server: 'http://127.0.0.1:11434/v1' },
        ignoredToolChoice: new IgnoredToolChoice({ memento: store, now }),
      });
      world.summarizers.setAgentPrefix({ system: 'You are the agent.', tools: agentTools });
      return world;
    };

    it('asks it plainly from the next compaction on, once a continuation was answered with a tool call', async () => {
      const { summarizers } = served();
      const first = await summarizers.summarizer();
      assert.equal(first?.continues, true);
      assert.deepEqual((await first!.summarize(continued)).calledTools, ['read_file']);
      const next = await summarizers.summarizer();
      assert.notEqual(next, first, 'made anew');
      assert.equal(next?.continues, undefined, 'no longer a continuation: the plain request offers no tools');
    });

    it('remembers it in the global state, for that model on that server, and for thirty days', async () => {
      const store = memento();
      let now = 1_000;
      const { summarizers } = served(store, () => now);
      await (await summarizers.summarizer())!.summarize(continued);

      const reloaded = served(store, () => now).summarizers;
      assert.equal((await reloaded.summarizer())?.continues, undefined, 'a reload asks plainly at once');
      const elsewhere = source({
        continues: true,
        chosen: { key: 'longrun/local/coder', declaredWindow: 32_000, server: 'http://127.0.0.1:8000/v1' },
        ignoredToolChoice: new IgnoredToolChoice({ memento: store, now: () => now }),
      }).summarizers;
      assert.equal((await elsewhere.summarizer())?.continues, true, 'the same model id on another server is not held to it');

      now += REMEMBERED_MS;
      const later = served(store, () => now).summarizers;
      assert.equal((await later.summarizer())?.continues, true, 'a server updated since gets the continuation back');
    });
  });
});
