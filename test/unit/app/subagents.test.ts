import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { APICallError, type LanguageModel } from 'ai';
import { convertArrayToReadableStream, MockLanguageModelV4 } from 'ai/test';
import { conversationMarkdown } from '../../../src/app/conversation/conversation-export';
import { newConversation } from '../fixtures/conversation-deps';
import { MAX_REPORT_TOKENS } from '../../../src/app/subagents/subagent-runner';
import { money, transcriptMarkdown } from '../../../src/app/subagents/subagent-transcript';
import { ModelCatalogue } from '../../../src/app/models/model-catalogue';
import { readSettings } from '../../../src/app/settings';
import { subagentRuns, WRAP_UP } from '../../../src/core/subagents';
import { createEndpointModel } from '../../../src/llm/openai-endpoint';
import { createVsCodeLanguageModel } from '../../../src/llm/vscode-lm-bridge';
import { HangingServer } from '../llm/hanging-server';
import { api, FakeChatModel, items, TextPart, ToolCallPart } from '../llm/fake-vscode-lm';
import { messageTexts, turnFixture, type TurnFixture } from './turn-fixture';

type StreamPart = Record<string, unknown>;
type CallOptions = MockLanguageModelV4['doStreamCalls'][number];

const usage = (input: number, output: number) => ({
  inputTokens: { total: input, noCache: input, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: output, text: output, reasoning: undefined },
});
const streamOf = (parts: StreamPart[]) => ({ stream: convertArrayToReadableStream([{ type: 'stream-start', warnings: [] }, ...parts] as never[]) });
const readCall = (id: string, path: string): StreamPart[] => [
  { type: 'tool-call', toolCallId: id, toolName: 'read_file', input: JSON.stringify({ path }) },
  { type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage: usage(100, 5) },
];
const answer = (text: string): StreamPart[] => [
  { type: 'text-start', id: 't' },
  { type: 'text-delta', id: 't', delta: text },
  { type: 'text-end', id: 't' },
  { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage: usage(100, 20) },
];
/** A subagent model that answers each of its calls with the next of `steps`. */
const scripted = (...steps: Array<(call: CallOptions) => ReturnType<typeof streamOf> | Promise<ReturnType<typeof streamOf>>>) => {
  let n = 0;
  return new MockLanguageModelV4({ doStream: async (call) => steps[Math.min(n++, steps.length - 1)]!(call) });
};

/** What the parent's model got back from each `delegate` call, from the conversation's log. */
function delegated(f: TurnFixture): Array<{ text: string; isError: boolean }> {
  const out: Array<{ text: string; isError: boolean }> = [];
  for (const record of f.registry.currentIfLoaded()!.log()) {
    if (record.type !== 'message' || record.message.role !== 'tool') continue;
    for (const part of record.message.content) {
      if (part.type === 'tool-result' && part.toolName === 'delegate') out.push({ text: String(part.output), isError: part.isError === true });
    }
  }
  return out;
}

/** What the parent's model was sent as the result of its `delegate` calls (an `error-text` output for a failure). */
function sentResults(f: TurnFixture): Array<{ type: string; value: string }> {
  const out: Array<{ type: string; value: string }> = [];
  for (const call of f.model.doStreamCalls) {
    for (const message of call.prompt) {
      if (message.role !== 'tool') continue;
      for (const part of message.content) {
        const p = part as { toolName?: string; output?: { type: string; value: string } };
        if (p.toolName === 'delegate' && p.output) out.push(p.output);
      }
    }
  }
  return out;
}

function settings(patch: { maxSteps?: number; maxTokens?: number; timeouts?: { firstChunkMs: number; idleMs: number } } = {}) {
  const base = readSettings(() => undefined).settings;
  return {
    subagent: { maxSteps: patch.maxSteps ?? base.subagent.maxSteps, maxTokens: patch.maxTokens ?? base.subagent.maxTokens },
    ...(patch.timeouts ? { timeouts: patch.timeouts } : {}),
  };
}

async function fixtureWith(subagent: { model?: LanguageModel; window?: number } = {}, patch: Parameters<typeof settings>[0] = {}) {
  const f = await turnFixture({ subagent, settings: settings(patch) });
  await writeFile(join(f.workspace, 'a.txt'), 'alpha line\nsecond line\n');
  await writeFile(join(f.workspace, 'b.txt'), 'beta line\n');
  return f;
}

/** Asserts the one delegated result is an explicit failure, said as an error, with what was done. */
function assertFailure(f: TurnFixture, reason: RegExp): string {
  const [result] = delegated(f);
  assert.ok(result, 'the parent got a result');
  assert.equal(result.isError, true, 'a failure is an error result');
  assert.match(result.text, /^Subagent failed: /);
  assert.match(result.text, reason);
  assert.match(result.text, /Done so far/);
  assert.deepEqual(
    sentResults(f).map((r) => r.type),
    ['error-text'],
    'the model is told it is an error',
  );
  const [run] = subagentRuns(f.registry.currentIfLoaded()!.log());
  assert.ok(run?.end, 'its end is recorded');
  assert.equal(run.end.result, result.text, 'the log keeps what the agent was told');
  return result.text;
}

describe('subagents: the delegate tool through a chat turn', () => {
  let f: TurnFixture;
  afterEach(() => f?.close());

  it('gives the agent a bounded report, keeps the transcript in the log on the turn, and out of the agent’s view', async () => {
    f = await fixtureWith();
    const chat = f.newChat();
    const exchange = await chat.send('delegate read a.txt');
    const conversation = f.registry.currentIfLoaded()!;

    const [result] = delegated(f);
    assert.equal(result?.isError, false);
    assert.match(result!.text, /^Subagent report \(2 steps, [\d,]+ tokens\):\n\nFindings: a\.txt \(lines 1-2 of 2\)/);
    assert.match(result!.text, /Files read \(lines\):\n- a\.txt: all of 2/, 'Longrun adds the files and ranges it read');

    const [run] = subagentRuns(conversation.log());
    assert.equal(run?.status, 'reported');
    assert.equal(run.start.task, 'read a.txt');
    assert.deepEqual(
      run.messages.map((m) => m.role),
      ['user', 'assistant', 'tool', 'assistant'],
    );
    const turn = conversation.leaf();
    const subagentRecords = conversation.log().filter((r) => r.type === 'subagent');
    assert.ok(subagentRecords.length >= 6 && subagentRecords.every((r) => r.turnId === turn), 'its records are made on the turn that started it');
    // The agent's view holds the delegate call and the report, never the subagent's messages.
    const view = JSON.stringify(conversation.view());
    assert.ok(!view.includes('alpha line'), 'what the subagent read is not in the view');
    assert.ok(view.includes('Subagent report'));
    const lastRequest = f.sent();
    assert.ok(!lastRequest.includes('1| alpha line'), "the agent's next request carries the report, not the file");

    assert.match(exchange.surface.text(), /\*\*Subagent\*\* read a\.txt — reported in 0 s · 2 steps · [\d,]+ tokens/);
    assert.deepEqual(
      exchange.surface.buttons.map((b) => [b.command, b.title, b.arguments]),
      [['longrun.showSubagentTranscript', 'Show transcript', [conversation.id, run.start.id]]],
    );
    assert.match(transcriptMarkdown(run), /## Tool\n\n\*\*Tool result\*\* `read_file`\n\n```\na\.txt \(lines 1-2 of 2\)\n1\| alpha line/);
  });

  it("shows its cost in the chat and the transcript when its model's price is set", async () => {
    const endpoints = [{ name: 'cheap', baseUrl: 'http://localhost:1/v1', models: [{ id: 'mini', toolCalling: true }] }];
    const catalogue = new ModelCatalogue(() => ({ mini: { input: 0.5, output: 2 } }));
    f = await turnFixture({
      subagent: { key: 'longrun/cheap/mini' },
      settings: { ...settings(), endpoints },
      cost: (used) => catalogue.cost(used),
    });
    await writeFile(join(f.workspace, 'a.txt'), 'alpha line\nsecond line\n');
    const exchange = await f.newChat().send('delegate read a.txt');
    const [run] = subagentRuns(f.registry.currentIfLoaded()!.log());
    const expected = (run!.end!.inputTokens * 0.5 + run!.end!.outputTokens * 2) / 1_000_000;
    assert.ok(expected > 0);
    assert.equal(run!.end!.cost, expected, 'the end record keeps the cost');
    assert.ok(exchange.surface.text().includes(`tokens · ${money(expected)}`), exchange.surface.text());
    assert.match(transcriptMarkdown(run!), /\$\d/);
  });

  it('shows no cost when no price is known', async () => {
    f = await fixtureWith();
    const exchange = await f.newChat().send('delegate read a.txt');
    assert.doesNotMatch(exchange.surface.text(), /\$/);
    assert.equal(subagentRuns(f.registry.currentIfLoaded()!.log())[0]!.end!.cost, undefined);
  });

  it('gives a subagent read-only tools: no writes, no commands without allow rules, no delegating further', async () => {
    f = await fixtureWith();
    await f.newChat().send('delegate read a.txt');
    const subagentCalls = f.model.doStreamCalls.filter((c) => messageTexts(c.prompt[0]!).startsWith('You are a subagent'));
    assert.ok(subagentCalls.length > 0);
    for (const call of subagentCalls) {
      assert.deepEqual(call.tools?.map((t) => t.name).sort(), ['list_files', 'read_file', 'recall', 'search_text']);
    }
    const parentCall = f.model.doStreamCalls[0]!;
    assert.ok(
      parentCall.tools?.some((t) => t.name === 'delegate'),
      'the agent has delegate',
    );
  });

  it('runs the subagents of one step at the same time', async () => {
    let inFlight = 0;
    let most = 0;
    const model = new MockLanguageModelV4({
      doStream: async ({ prompt }) => {
        inFlight++;
        most = Math.max(most, inFlight);
        // Each waits until all three are in flight, or a second if they come one at a time.
        const until = Date.now() + 1_000;
        while (most < 3 && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 5));
        inFlight--;
        return streamOf(answer(`Findings for ${messageTexts(prompt.at(-1)!)}`));
      },
    });
    f = await fixtureWith({ model });
    await f.newChat().send('delegate one | two | three');
    assert.equal(most, 3, 'three subagents were in flight at once');
    assert.deepEqual(
      delegated(f).map((r) => r.text.split('\n\n')[1]),
      ['Findings for one', 'Findings for two', 'Findings for three'],
    );
  });

  it('says what was done when its model fails in the middle of its work (stream error)', async () => {
    const model = scripted(
      () => streamOf(readCall('r1', 'a.txt')),
      () =>
        streamOf([
          { type: 'text-start', id: 't' },
          { type: 'text-delta', id: 't', delta: 'Half an ans' },
          {
            type: 'error',
            error: new APICallError({ message: 'upstream connect error', url: 'x', requestBodyValues: {}, statusCode: 502, isRetryable: false }),
          },
        ]),
    );
    f = await fixtureWith({ model });
    await f.newChat().send('delegate find the alpha line');
    const text = assertFailure(f, /its model request failed: upstream connect error/);
    assert.match(text, /- a\.txt: all of 2/, 'the file it read');
  });

  it('says so when its model sends nothing within longrun.timeouts.firstChunkSeconds', async () => {
    const server = new HangingServer();
    const baseUrl = await server.start();
    try {
      const model = createEndpointModel({ endpoint: 'stuck', baseUrl, id: 'm' }, undefined);
      f = await fixtureWith({ model }, { timeouts: { firstChunkMs: 1_000, idleMs: 1_000 } });
      await f.newChat().send('delegate find the alpha line');
      assertFailure(f, /its model sent nothing for 1 s \(longrun\.timeouts\.firstChunkSeconds\)/);
    } finally {
      await server.close();
    }
  });

  it('says so when its model goes silent in the middle of an answer (longrun.timeouts.idleSeconds)', async () => {
    const model = scripted(
      () => streamOf(readCall('r1', 'a.txt')),
      () => ({
        stream: new ReadableStream({
          start(controller) {
            // A few words of its report, then nothing more: the stream stays open.
            for (const part of [
              { type: 'stream-start', warnings: [] },
              { type: 'text-start', id: 't' },
              { type: 'text-delta', id: 't', delta: 'Findings so far: alpha' },
            ]) {
              controller.enqueue(part as never);
            }
          },
        }),
      }),
    );
    f = await fixtureWith({ model }, { timeouts: { firstChunkMs: 5_000, idleMs: 1_000 } });
    await f.newChat().send('delegate find the alpha line');
    const text = assertFailure(f, /its model went silent for 1 s in the middle of an answer \(longrun\.timeouts\.idleSeconds\)/);
    assert.match(text, /- a\.txt: all of 2/, 'the file it read');
  });

  it('says so when the subagent crashes before its first step', async () => {
    const model = new MockLanguageModelV4({
      doStream: async () => {
        throw new TypeError("Cannot read properties of undefined (reading 'choices')");
      },
    });
    f = await fixtureWith({ model });
    await f.newChat().send('delegate find the alpha line');
    assertFailure(f, /Cannot read properties of undefined/);
  });

  it('says so when its model answers nothing, rather than returning an empty report', async () => {
    const model = scripted(() => streamOf([{ type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage: usage(50, 0) }]));
    f = await fixtureWith({ model });
    await f.newChat().send('delegate find the alpha line');
    assertFailure(f, /its model answered nothing/);
  });

  it('stops every subagent of the turn on Stop, and records each as stopped', async () => {
    let started = 0;
    let afterStop = 0;
    const controller = new AbortController();
    const model = new MockLanguageModelV4({
      doStream: async ({ abortSignal }) => {
        if (controller.signal.aborted) afterStop++;
        if (++started === 2) setTimeout(() => controller.abort(), 10);
        // Hangs until the request is aborted.
        return new Promise((_, reject) => abortSignal?.addEventListener('abort', () => reject(abortSignal.reason), { once: true }));
      },
    });
    f = await fixtureWith({ model });
    const exchange = await f.newChat().send('delegate one | two', undefined, controller.signal);
    assert.equal(exchange.result.errorDetails, undefined, 'a stopped turn is no error');
    const runs = subagentRuns(f.registry.currentIfLoaded()!.log());
    assert.deepEqual(
      runs.map((r) => r.status),
      ['cancelled', 'cancelled'],
    );
    for (const run of runs) assert.match(run.end!.result, /^Subagent failed: it was stopped \(Stop in the chat\)\. Done so far/);
    assert.equal(afterStop, 0, 'no subagent called its model after Stop');
  });

  it('compacts its own conversation when its window fills, and still reports', async () => {
    const big = (tag: string) => Array.from({ length: 150 }, (_, i) => `${tag} line ${i} ${'x'.repeat(40)}`).join('\n');
    f = await fixtureWith({ window: 6_000 });
    for (const name of ['c1.txt', 'c2.txt', 'c3.txt', 'c4.txt']) await writeFile(join(f.workspace, name), big(name));
    await f.newChat().send('delegate read c1.txt c2.txt c3.txt c4.txt');
    const [result] = delegated(f);
    assert.equal(result?.isError, false, result?.text);
    const [run] = subagentRuns(f.registry.currentIfLoaded()!.log());
    const compacted = run!.events.filter((e) => e.kind === 'compacted');
    assert.ok(compacted.length > 0, 'the subagent compacted itself');
    assert.match(transcriptMarkdown(run!), /compacted its own conversation/);
    assert.equal(run!.messages.filter((m) => m.role === 'tool').length, 4, 'the transcript keeps every read, compacted or not');
    assert.match(result!.text, /- c4\.txt: all of 150/);
  });

  it('compacts and asks again when its provider refuses a request as too long', async () => {
    const model = scripted(
      () => streamOf(readCall('r1', 'c1.txt')),
      () => streamOf(readCall('r2', 'c2.txt')),
      () => streamOf(readCall('r3', 'c3.txt')),
      () => {
        throw new APICallError({
          message: "This model's maximum context length is 6000 tokens.",
          url: 'x',
          requestBodyValues: {},
          statusCode: 400,
          responseBody: JSON.stringify({ error: { code: 'context_length_exceeded' } }),
          isRetryable: false,
        });
      },
      () => streamOf(answer('Findings: alpha is in a.txt, beta in b.txt.')),
    );
    f = await fixtureWith({ model });
    for (const name of ['c1.txt', 'c2.txt', 'c3.txt']) {
      await writeFile(join(f.workspace, name), Array.from({ length: 150 }, (_, i) => `${name} line ${i} ${'x'.repeat(40)}`).join('\n'));
    }
    await f.newChat().send('delegate find alpha and beta');
    const [result] = delegated(f);
    assert.equal(result?.isError, false, result?.text);
    assert.match(result!.text, /Findings: alpha is in a\.txt/);
    const [run] = subagentRuns(f.registry.currentIfLoaded()!.log());
    assert.equal(run!.events.filter((e) => e.kind === 'compacted').length, 1);
  });

  it('makes its last allowed step one without tools, asking for the report (step budget)', async () => {
    f = await fixtureWith({}, { maxSteps: 3 });
    await f.newChat().send('delegate read a.txt b.txt a.txt b.txt a.txt');
    const [result] = delegated(f);
    assert.equal(result?.isError, false, result?.text);
    assert.match(result!.text, /^Subagent report \(3 steps/);
    const subagentCalls = f.model.doStreamCalls.filter((c) => messageTexts(c.prompt[0]!).startsWith('You are a subagent'));
    assert.equal(subagentCalls.length, 3);
    assert.deepEqual(
      subagentCalls.map((c) => c.toolChoice?.type),
      ['auto', 'auto', 'none'],
    );
    assert.equal(messageTexts(subagentCalls[2]!.prompt.at(-1)!), WRAP_UP, 'the last step is asked for the report');
  });

  it('never lets the agent ask for more than the user allows', async () => {
    f = await fixtureWith({}, { maxSteps: 3, maxTokens: 20_000 });
    await f.newChat().send('delegate read a.txt');
    const [run] = subagentRuns(f.registry.currentIfLoaded()!.log());
    assert.deepEqual(run!.start.budget, { steps: 3, tokens: 20_000 });
  });

  it('keeps within its token budget: the step that leaves no room for another is its last', async () => {
    for (const maxTokens of [5_000, 8_000, 12_000]) {
      const model = new MockLanguageModelV4({
        doStream: async ({ prompt }) => {
          // A provider counting like the local estimate: about four characters a token.
          const input = Math.ceil(JSON.stringify(prompt).length / 4);
          const reads = prompt.filter((m) => m.role === 'tool').length;
          const parts = reads < 20 ? readCall(`r${reads}`, reads % 2 ? 'a.txt' : 'b.txt') : answer('Findings: done.');
          const finish = parts.at(-1)!;
          return streamOf([...parts.slice(0, -1), { ...finish, usage: usage(input, 30) }]);
        },
      });
      f = await fixtureWith({ model }, { maxTokens });
      await f.newChat().send('delegate read everything');
      const spent = model.doStreamCalls.reduce((sum, c) => sum + Math.ceil(JSON.stringify(c.prompt).length / 4) + 30, 0);
      assert.ok(spent <= maxTokens, `${spent} tokens spent of ${maxTokens}`);
      const [run] = subagentRuns(f.registry.currentIfLoaded()!.log());
      assert.equal(run!.end!.inputTokens + run!.end!.outputTokens, spent, 'the end record says what was spent');
      const [result] = delegated(f);
      assert.ok(result!.text.length > 0);
      assert.equal(model.doStreamCalls.at(-1)!.toolChoice?.type, 'none', 'the last call asked for the report');
      await f.close();
    }
  });

  it('does not send a step its token budget cannot pay for', async () => {
    f = await fixtureWith({}, { maxTokens: 5_000 });
    await writeFile(join(f.workspace, 'huge.txt'), 'y'.repeat(30_000));
    await f.newChat().send('delegate read huge.txt a.txt');
    assertFailure(f, /its token budget is spent/);
  });

  it('bounds a long report and says it was cut', async () => {
    const model = scripted(() => streamOf(answer(`Findings:\n${Array.from({ length: 3_000 }, (_, i) => `- finding ${i}`).join('\n')}`)));
    f = await fixtureWith({ model });
    await f.newChat().send('delegate list everything');
    const [result] = delegated(f);
    const conversation = f.registry.currentIfLoaded()!;
    assert.ok(conversation.countText(result!.text) <= MAX_REPORT_TOKENS, `${conversation.countText(result!.text)} tokens`);
    assert.match(result!.text, /\[… cut to fit the report; the rest is in the transcript\]/);
    assert.match(result!.text, /Its whole transcript is kept/);
  });

  it('lets recall find what a subagent read, on the branch of its turn only', async () => {
    f = await fixtureWith();
    const chat = f.newChat();
    await chat.send('remember the start');
    await chat.send('delegate read a.txt');
    const before = f.registry.currentIfLoaded()!;
    assert.match(
      await before.recall({ path: 'a.txt' }),
      /\(tool, of subagent [^)]+\) ---\n\[result of read_file \{"path":"a\.txt"\}[^\n]*\]\na\.txt \(lines 1-2 of 2\)\n1\| alpha line/,
    );
    // Restore Checkpoint on the delegating request: the next request continues from the first.
    chat.restore(2);
    await chat.send('remember something else');
    const after = f.registry.currentIfLoaded()!;
    assert.deepEqual(subagentRuns(after.log()), [], 'the rewound branch holds no subagent');
    assert.match(await after.recall({ path: 'a.txt' }), /^Nothing of this conversation/);
    assert.equal(subagentRuns(after.allRecords()).length, 1, 'the subagent stays in the conversation, off the path');
    const exported = conversationMarkdown(after.allRecords(), 't', after.leaf());
    const sides = exported.indexOf('# Side branches');
    assert.ok(sides > 0 && exported.indexOf('## Subagent ') > sides, 'the export shows it in the side branch');
  });

  it('keeps its transcript across a reload: recall and the export find it in the conversation read back from disk', async () => {
    f = await fixtureWith();
    await f.newChat().send('delegate read a.txt');
    const id = f.registry.currentIfLoaded()!.id;
    const { log } = await f.store.open(id);
    const reopened = newConversation({ id, log, store: f.store });
    await reopened.loadView();
    assert.equal(subagentRuns(reopened.log())[0]?.status, 'reported');
    assert.match(await reopened.recall({ path: 'a.txt' }), /\(tool, of subagent [^)]+\)[\s\S]*1\| alpha line/);
    assert.match(conversationMarkdown(reopened.allRecords(), 't'), /## Subagent \S+ · [\s\S]*1\| alpha line/);
  });

  it('reads back a subagent cut short by a crash as interrupted, with what it did', async () => {
    let release: () => void = () => undefined;
    const reading = new Promise<void>((resolve) => (release = resolve));
    const controller = new AbortController();
    const model = scripted(
      () => streamOf(readCall('r1', 'a.txt')),
      async ({ abortSignal }) => {
        release();
        return new Promise((_, reject) => abortSignal?.addEventListener('abort', () => reject(abortSignal.reason), { once: true }));
      },
    );
    f = await fixtureWith({ model });
    const turn = f.newChat().send('delegate find alpha', undefined, controller.signal);
    await reading;
    // What a window opening the conversation now finds on disk: the process could die here.
    const id = f.registry.currentIfLoaded()!.id;
    const { log } = await f.store.open(id);
    const [run] = subagentRuns(log);
    assert.equal(run?.status, 'interrupted');
    assert.deepEqual(
      run.messages.map((m) => m.role),
      ['user', 'assistant', 'tool'],
    );
    assert.match(conversationMarkdown(log, 't'), /It has no end: it was cut short/);
    assert.match(transcriptMarkdown(run), /was cut short \(no end was recorded/);
    controller.abort();
    await turn;
  });

  it('runs on a model of the editor through the vscode.lm bridge', async () => {
    const chat = new FakeChatModel([
      items(new ToolCallPart('c1', 'read_file', { path: 'a.txt' })),
      items(new TextPart('Findings: alpha is on line 1 of a.txt.')),
    ]);
    f = await fixtureWith({ model: createVsCodeLanguageModel(chat, api) });
    await f.newChat().send('delegate find alpha');
    const [result] = delegated(f);
    assert.equal(result?.isError, false, result?.text);
    assert.match(result!.text, /Findings: alpha is on line 1 of a\.txt\.\n\n[\s\S]*- a\.txt: all of 2/);
    assert.equal(chat.requests.length, 2);
    assert.match(String((chat.requests[0]!.messages[0]!.content[0] as TextPart).value), /You are a subagent of Longrun/);
    assert.ok(
      chat.requests[0]!.options.tools!.every((t) => !['create_file', 'edit_file', 'run_command', 'delegate'].includes(t.name)),
      'read-only: no writes, no commands, no subagents of its own',
    );
  });

  it("says what was done when an editor's model calls a tool in its last step, which VS Code cannot forbid", async () => {
    const chat = new FakeChatModel([
      items(new ToolCallPart('c1', 'read_file', { path: 'a.txt' })),
      items(new ToolCallPart('c2', 'read_file', { path: 'b.txt' })),
    ]);
    f = await fixtureWith({ model: createVsCodeLanguageModel(chat, api) }, { maxSteps: 2 });
    await f.newChat().send('delegate find alpha');
    const text = assertFailure(f, /its last step called a tool instead of writing its report/);
    assert.match(text, /- a\.txt: all of 2/, 'the file it read');
    assert.equal(chat.requests.length, 2, 'no step past its budget');
  });
});
