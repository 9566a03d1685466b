import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultSettingsMiddleware, tool, wrapLanguageModel, type LanguageModel } from 'ai';
import { z } from 'zod';
import type { Conversation } from '../../../src/app/conversation/conversation';
import type { ProviderKind } from '../../../src/core/provider-kind';
import { runAgentTurn, type AgentConversation, type AgentUi } from '../../../src/llm/agent';
import { createEndpointModel } from '../../../src/llm/openai-endpoint';
import { THINKING, thinkingSignature } from '../../../scripts/scripted-model/formats/anthropic';
import type { FormatName } from '../../../scripts/scripted-model/formats/format';
import { thoughtSignature } from '../../../scripts/scripted-model/formats/gemini';
import { encryptedReasoning } from '../../../scripts/scripted-model/formats/openai-responses';
import { startScriptedModelServer, type ScriptedModelServer } from '../../../scripts/scripted-model/server';
import { testRegistry } from '../fixtures/conversation-deps';

/**
 * Longrun against each stand-in, through the provider's own AI SDK package: the metadata a model
 * gives with its tool call (Gemini 3's signature, Claude's signed thinking, OpenAI's encrypted
 * reasoning) goes back to it in the next step of the turn, which the stand-in refuses without it,
 * and in the next turn after the conversation is read back from disk; continued on another model,
 * none of it is sent.
 */

interface Case {
  readonly format: FormatName;
  readonly kind: ProviderKind;
  readonly model: string;
  readonly other: string;
  /** The metadata the stand-in gave with the first turn's tool call, as it is found in a later request's body. */
  readonly given: (model: string, body: string) => string;
  /** Provider options the requests carry (thinking for Claude). */
  readonly options?: Record<string, Record<string, unknown>>;
}

const CASES: readonly Case[] = [
  {
    format: 'google',
    kind: 'google',
    model: 'gemini-3-pro-preview',
    other: 'gemini-3-flash',
    given: (model) => thoughtSignature(model, { name: 'read_file' }),
  },
  {
    format: 'anthropic',
    kind: 'anthropic',
    model: 'claude-sonnet-4-5',
    other: 'claude-opus-4-5',
    given: (model) => thinkingSignature(model, THINKING),
    options: { anthropic: { thinking: { type: 'enabled', budgetTokens: 1024 } } },
  },
  {
    format: 'openai',
    kind: 'openai',
    model: 'gpt-5',
    other: 'gpt-5-mini',
    given: (model, body) => {
      const id = /"id":"(rs_[^"]+)"/.exec(body)?.[1] ?? 'no reasoning item';
      return encryptedReasoning(model, id);
    },
  },
];

const QUIET: AgentUi = {
  text: () => undefined,
  toolCall: () => undefined,
  compacting: () => undefined,
  compacted: () => undefined,
  notice: () => undefined,
};

const tools = {
  read_file: tool({
    description: 'Reads a file.',
    inputSchema: z.object({ path: z.string() }),
    execute: async ({ path }) => `first line of ${path}`,
  }),
};

let ids = 0;
function agentSide(conversation: Conversation): AgentConversation {
  return {
    view: () => conversation.view(),
    append: (records) => conversation.append(records),
    assess: () => conversation.assess(),
    compact: (reason, signal) => conversation.compact(reason, { signal }),
    requestBasis: () => conversation.requestBasis(),
    newId: () => `agent-${++ids}`,
    guard: conversation.guard(),
  };
}

async function turn(conversation: Conversation, model: LanguageModel, ask: string): Promise<void> {
  await conversation.append([{ type: 'message', message: { id: `user-${++ids}`, role: 'user', content: [{ type: 'text', text: ask }] } }]);
  const result = await runAgentTurn({
    model,
    system: 'You are a test.',
    tools,
    maxSteps: 4,
    signal: new AbortController().signal,
    conversation: agentSide(conversation),
    ui: QUIET,
    overflowRetriesPerTurn: 1,
  });
  assert.equal(result.error, undefined, String(result.error));
  assert.equal(result.steps, 2);
}

for (const c of CASES) {
  describe(`provider metadata through the ${c.format} stand-in`, function () {
    this.timeout(30_000);
    let server: ScriptedModelServer;
    let dir: string;
    // The other Gemini 3 model is sent unsigned calls on purpose: the package's warning of it is expected.
    const warnings = globalThis as { AI_SDK_LOG_WARNINGS?: unknown };
    let logging: unknown;
    before(async () => {
      logging = warnings.AI_SDK_LOG_WARNINGS;
      warnings.AI_SDK_LOG_WARNINGS = false;
      server = await startScriptedModelServer({ format: c.format, models: [c.model, c.other].map((id) => ({ id, window: 200_000 })) });
    });
    after(async () => {
      warnings.AI_SDK_LOG_WARNINGS = logging;
      await server.close();
    });
    beforeEach(async () => {
      server.reset();
      dir = await mkdtemp(join(tmpdir(), 'longrun-metadata-'));
    });
    afterEach(() => rm(dir, { recursive: true, force: true }));

    const modelOf = (id: string): LanguageModel => {
      const made = createEndpointModel({ endpoint: 'e', provider: c.kind, baseUrl: server.url, id }, 'key');
      if (!c.options) return made;
      return wrapLanguageModel({
        model: made as Parameters<typeof wrapLanguageModel>[0]['model'],
        middleware: defaultSettingsMiddleware({ settings: { providerOptions: c.options as never } }),
      });
    };
    const bodies = (): string[] => server.requests.filter((r) => r.model !== undefined).map((r) => JSON.stringify(r.body));

    it('sends it back in the next step, and in the next turn after a reload, to the model that gave it', async () => {
      const state = new Map<string, unknown>();
      const first = testRegistry(dir, { state, limit: 200_000 });
      const conversation = await first.registry.startNew();
      await turn(conversation, modelOf(c.model), 'please read docs/notes.md');
      const [, second] = bodies();
      const given = c.given(c.model, second!);
      assert.ok(second!.includes(given), `the second step carries what the first was given: ${second}`);

      const again = testRegistry(dir, { state, limit: 200_000 });
      const reopened = (await again.registry.find(conversation.id))!;
      await turn(reopened, modelOf(c.model), 'please read docs/other.md');
      const third = bodies()[2]!;
      assert.ok(third.includes(given), `the next turn, read back, carries it: ${third}`);
    });

    it('sends none of it when the conversation goes on with another model', async () => {
      const state = new Map<string, unknown>();
      const first = testRegistry(dir, { state, limit: 200_000 });
      const conversation = await first.registry.startNew();
      await turn(conversation, modelOf(c.model), 'please read docs/notes.md');
      const given = c.given(c.model, bodies()[1]!);
      const reopened = (await testRegistry(dir, { state, limit: 200_000 }).registry.find(conversation.id))!;
      await turn(reopened, modelOf(c.other), 'please read docs/other.md');
      const [third, fourth] = bodies().slice(2);
      assert.ok(!third!.includes(given) && !fourth!.includes(given), 'nothing the first model gave reaches the other');
      // The other model's own metadata still goes back to it within its turn (the stand-in would refuse the step otherwise).
      assert.ok(fourth!.includes(c.given(c.other, fourth!)));
    });
  });
}
