import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { convertArrayToReadableStream, MockLanguageModelV4 } from 'ai/test';
import { ModelCatalogue } from '../../../src/app/models/model-catalogue';
import type { ModelOverride } from '../../../src/app/settings';
import { conversationUsage } from '../../../src/app/usage/conversation-cache';
import { lastUsage, type LogRecord } from '../../../src/core/history';
import type { ReportedUsage } from '../../../src/core/log';
import type { ProviderKind } from '../../../src/core/provider-kind';
import { subagentRuns } from '../../../src/core/subagents';
import { callCost } from '../../../src/core/usage-cost';
import { newConversation } from '../fixtures/conversation-deps';
import { messageTexts, turnFixture, type TurnFixture } from './turn-fixture';

/** A subagent's requests are billed like the agent's: cache hints, usage in the conversation's report, cache-aware prices. */

type StreamPart = Record<string, unknown>;
type CallOptions = MockLanguageModelV4['doStreamCalls'][number];

/** What the subagent's provider reports for each of its requests: most of the input read from the cache. */
const REPORTED = { input: 1_000, cacheRead: 800, cacheWrite: 150, output: 40 };
/** Its model's prices (US dollars per million tokens), with a cache read and write of its own. */
const PRICES = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 };

const usageOf = (r: typeof REPORTED) => ({
  inputTokens: { total: r.input, noCache: r.input - r.cacheRead - r.cacheWrite, cacheRead: r.cacheRead, cacheWrite: r.cacheWrite },
  outputTokens: { total: r.output, text: r.output, reasoning: undefined },
});
const streamOf = (parts: StreamPart[]) => ({ stream: convertArrayToReadableStream([{ type: 'stream-start', warnings: [] }, ...parts] as never[]) });

/** A subagent model that reads a.txt, then reports, each request reported as `REPORTED` says. */
function subagentModel(reported = REPORTED): MockLanguageModelV4 {
  let n = 0;
  return new MockLanguageModelV4({
    doStream: async () =>
      streamOf(
        n++ === 0
          ? [
              { type: 'tool-call', toolCallId: 'r1', toolName: 'read_file', input: JSON.stringify({ path: 'a.txt' }) },
              { type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage: usageOf(reported) },
            ]
          : [
              { type: 'text-start', id: 't' },
              { type: 'text-delta', id: 't', delta: 'Findings: a.txt holds two lines.' },
              { type: 'text-end', id: 't' },
              { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage: usageOf(reported) },
            ],
      ),
  });
}

interface Delegating {
  readonly provider?: ProviderKind;
  readonly priced?: boolean;
}

async function delegating(options: Delegating = {}) {
  const model = subagentModel();
  const overrides: Record<string, ModelOverride> = options.priced ? { 'claude-test': PRICES } : {};
  const catalogue = new ModelCatalogue(() => overrides);
  const f = await turnFixture({
    // A window no report here comes near: the subagent never compacts.
    subagent: { model, key: 'longrun/claude/claude-test', window: 1_000_000, ...(options.provider ? { provider: options.provider } : {}) },
    settings: { modelOverrides: overrides },
    cost: (usage) => catalogue.cost(usage),
  });
  await writeFile(join(f.workspace, 'a.txt'), 'alpha line\nsecond line\n');
  const chat = f.newChat();
  await chat.send('delegate read a.txt');
  return { f, chat, model, catalogue };
}

function usages(records: readonly LogRecord[]): ReportedUsage[] {
  return records.flatMap((r) => (r.type === 'usage' ? [r.usage] : []));
}

/** The breakpoints of one request as the provider package is given them: on the system prompt, on messages, on parts. */
function breakpoints(call: CallOptions): string[] {
  const marked = (options: unknown) => (options as { anthropic?: { cacheControl?: unknown } } | undefined)?.anthropic?.cacheControl !== undefined;
  const out: string[] = [];
  call.prompt.forEach((message, i) => {
    if (marked(message.providerOptions)) out.push(`${message.role}#${i}`);
    if (Array.isArray(message.content)) {
      for (const part of message.content as Array<{ providerOptions?: unknown }>)
        if (marked(part.providerOptions)) out.push(`${message.role}#${i} part`);
    }
  });
  return out;
}

describe('subagents: billed like the agent', () => {
  let f: TurnFixture | undefined;
  afterEach(() => f?.close());

  it("puts Anthropic's breakpoints on every step of a subagent: its system prompt and its latest message", async () => {
    const run = await delegating({ provider: 'anthropic' });
    f = run.f;
    assert.equal(run.model.doStreamCalls.length, 2);
    for (const call of run.model.doStreamCalls) {
      assert.ok(messageTexts(call.prompt[0]!).startsWith('You are a subagent'));
      const marks = breakpoints(call);
      assert.ok(marks.includes('system#0'), `the head is marked: ${marks.join(', ')}`);
      const last = call.prompt.length - 1;
      assert.ok(
        marks.some((m) => m.startsWith(`${call.prompt[last]!.role}#${last}`)),
        `the latest message is marked: ${marks.join(', ')}`,
      );
    }
  });

  it("sends a subagent's requests to OpenAI with a cache key of the conversation's subagents, not the agent's", async () => {
    const run = await delegating({ provider: 'openai' });
    f = run.f;
    const conversation = f.registry.currentIfLoaded()!;
    const keys = run.model.doStreamCalls.map(
      (call) => (call.providerOptions as { openai?: { promptCacheKey?: string } } | undefined)?.openai?.promptCacheKey,
    );
    assert.deepEqual(keys, [`longrun-${conversation.id}-subagents`, `longrun-${conversation.id}-subagents`]);
  });

  it('sends no hints for a subagent on a model of VS Code’s', async () => {
    const run = await delegating();
    f = run.f;
    for (const call of run.model.doStreamCalls) {
      assert.deepEqual(breakpoints(call), []);
      assert.equal(call.providerOptions, undefined);
    }
  });

  it("records each of a subagent's requests in the conversation, tagged as its own, with its cache reads and writes, read back after a reload", async () => {
    const run = await delegating({ provider: 'anthropic', priced: true });
    f = run.f;
    const conversation = f.registry.currentIfLoaded()!;
    const [subagent] = subagentRuns(conversation.log());
    const tagged = usages(conversation.log()).filter((u) => u.purpose === 'subagent');
    assert.equal(tagged.length, 2);
    for (const u of tagged) {
      assert.equal(u.subagent, subagent!.start.id);
      assert.equal(u.cacheReadTokens, REPORTED.cacheRead);
      assert.equal(u.cacheWriteTokens, REPORTED.cacheWrite);
      assert.equal(u.provider, 'anthropic');
    }

    const { log } = await f.store.open(conversation.id);
    const reread = usages(log).filter((u) => u.purpose === 'subagent');
    assert.deepEqual(reread, tagged, 'the records on disk are the same');
    const report = conversationUsage(log, (u) => run.catalogue.cost(u));
    assert.equal(report.subagents.requests, 2);
    assert.equal(report.subagents.cacheRead, 2 * REPORTED.cacheRead);
    assert.equal(report.subagents.cacheWrite, 2 * REPORTED.cacheWrite);
    const agent = usages(log).filter((u) => u.purpose === undefined).length;
    assert.equal(report.conversation.requests, agent + 2, "the conversation's totals count them");
  });

  it("prices a subagent's requests at its model's cache prices, in its end record and in the conversation's report", async () => {
    const run = await delegating({ provider: 'anthropic', priced: true });
    f = run.f;
    const conversation = f.registry.currentIfLoaded()!;
    const one = callCost(
      { input: REPORTED.input, cacheRead: REPORTED.cacheRead, cacheWrite: REPORTED.cacheWrite, output: REPORTED.output },
      PRICES,
      'anthropic',
    )!.total;
    const uncachedPrice = (REPORTED.input * PRICES.input + REPORTED.output * PRICES.output) / 1_000_000;
    assert.ok(Math.abs(one - uncachedPrice) > 1e-6, 'the cache makes a difference to the price');
    const [subagent] = subagentRuns(conversation.log());
    assert.ok(Math.abs(subagent!.end!.cost! - 2 * one) < 1e-12, `end record: ${subagent!.end!.cost} against ${2 * one}`);
    const report = conversationUsage(conversation.allRecords(), (u) => run.catalogue.cost(u));
    assert.ok(Math.abs(report.subagents.cost - 2 * one) < 1e-12);
    assert.equal(report.subagents.unpriced, 0);
  });

  it('shows what the subagents cost in /context, with their cache reads', async () => {
    const run = await delegating({ provider: 'anthropic', priced: true });
    f = run.f;
    const context = await run.chat.send('', 'context');
    assert.match(
      context.surface.text(),
      /Subagents: 2 requests \(2,000 input tokens, 1,600 read from the cache, 300 written; 80 output\), \$0\.0\d+\./,
      context.surface.text(),
    );
  });

  it("never takes a subagent's usage for the agent's view: the gauge's count and the last request stay the agent's", async () => {
    const messages = [
      { id: 'u1', role: 'user' as const, content: [{ type: 'text' as const, text: 'Where is the retry decided? '.repeat(40) }] },
      { id: 'a1', role: 'assistant' as const, content: [{ type: 'text' as const, text: 'In the client. '.repeat(40) }] },
    ];
    const store = { appendAll: async (_id: string, records: readonly LogRecord[]) => [...records], readAt: async () => [] };
    const conversation = newConversation({ store, model: { key: 'longrun/claude/claude-test', limit: 100_000 } });
    await conversation.append(messages.map((message) => ({ type: 'message' as const, message })));
    const basis = conversation.requestBasis();
    await conversation.append([{ type: 'usage', usage: { ...basis, anchorMessageId: 'a1', inputTokens: 400, outputTokens: 20 } }]);
    const before = conversation.count();
    const ratio = conversation.requestBasis().ratio;
    assert.equal(before.source, 'provider+local');
    assert.ok(ratio !== undefined);
    // The same model, a report anchored in the view, on the view's basis: only its purpose tells it apart.
    const subagent: ReportedUsage = { anchorMessageId: 'a1', inputTokens: 90_000, outputTokens: 40, ...basis, purpose: 'subagent', subagent: 's1' };
    await conversation.append([
      { type: 'usage', usage: subagent },
      { type: 'usage', usage: { ...subagent, inputTokens: 95_000 } },
    ]);
    assert.deepEqual(conversation.count(), before);
    assert.equal(conversation.requestBasis().ratio, ratio, 'nor does it teach the ratio the next request is weighed by');
    assert.equal(lastUsage(conversation.log())?.inputTokens, 400);
    const report = conversationUsage(conversation.allRecords(), () => undefined);
    assert.equal(report.last?.input, 400, "the last request shown is the agent's");
    assert.equal(report.subagents.input, 185_000);
  });
});
