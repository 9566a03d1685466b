import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { APICallError, tool, type ToolSet } from 'ai';
import { convertArrayToReadableStream, MockLanguageModelV4 } from 'ai/test';
import { z } from 'zod';
import { EngineMemo } from '../../../src/core/engine-memo';
import { DEFAULT_CONFIG, type CompactionConfig } from '../../../src/core/config';
import { modelView, type LogRecord } from '../../../src/core/history';
import { MessageTokenCounter } from '../../../src/core/message-tokens';
import { text } from '../../../src/core/messages';
import { usageReport } from '../../../src/core/usage-report';
import type { Summarizer } from '../../../src/core/ports';
import { charEstimator } from '../../../src/core/tokenizer';
import { isModelTimeout, runAgentTurn, type AgentUi } from '../../../src/llm/agent';
import { ConversationStore } from '../../../src/app/store/conversation-store';
import { FakeClock, templateSummary } from '../core/fixtures';
import { newConversation } from '../fixtures/conversation-deps';
import { createEndpointModel } from '../../../src/llm/openai-endpoint';
import { HangingServer, within } from './hanging-server';
import { errorMessage } from '../../../src/app/turn/error-text';
import { unparsedToolCall } from '../../../scripts/scripted-model/llama-cpp';
import { startScriptedModelServer } from '../../../scripts/scripted-model/server';

type StreamPart = Record<string, unknown>;
const streamOf = (parts: StreamPart[]) => convertArrayToReadableStream(parts as never[]);
type Prompt = MockLanguageModelV4['doStreamCalls'][number]['prompt'];

const usage = (input: number, output: number) => ({
  inputTokens: { total: input, noCache: input, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: output, text: output, reasoning: undefined },
});

function toolCallStep(id: string, path: string, inputTokens = 100): StreamPart[] {
  return [
    { type: 'stream-start', warnings: [] },
    { type: 'text-start', id: 't' },
    { type: 'text-delta', id: 't', delta: `Reading ${path}. ` },
    { type: 'text-end', id: 't' },
    { type: 'tool-call', toolCallId: id, toolName: 'read_file', input: JSON.stringify({ path }) },
    { type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage: usage(inputTokens, 10) },
  ];
}

function answerStep(answer: string): StreamPart[] {
  return [
    { type: 'stream-start', warnings: [] },
    { type: 'text-start', id: 'a' },
    { type: 'text-delta', id: 'a', delta: answer },
    { type: 'text-end', id: 'a' },
    { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage: usage(100, 5) },
  ];
}

class RecordingUi implements AgentUi {
  texts: string[] = [];
  notices: string[] = [];
  compactions: string[] = [];
  confirmCompaction?: (signal: AbortSignal) => Promise<boolean>;
  text(delta: string) {
    this.texts.push(delta);
  }
  toolCall() {}
  compacting() {}
  compacted(outcome: { status: string }, reason: string) {
    this.compactions.push(`${reason}:${outcome.status}`);
  }
  notice(message: string) {
    this.notices.push(message);
  }
}

const summarizer: Summarizer = {
  name: 'fake',
  summarize: async (request) => ({ text: templateSummary(`SUMMARY-MARKER of ${request.messages.length} messages; work is ongoing.`) }),
};

describe('agent turn: streamText with tools, compaction at step start, overflow retry', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'longrun-agent-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  function setup(limit: number, config: CompactionConfig = DEFAULT_CONFIG) {
    const clock = new FakeClock();
    const counter = new MessageTokenCounter(charEstimator);
    const conversation = newConversation({
      store: new ConversationStore(dir, () => clock.now()),
      clock,
      config,
      model: { name: 'mock', limit, counter },
      summarizer,
    });
    const reads: string[] = [];
    const tools: ToolSet = {
      read_file: tool({
        description: 'read',
        inputSchema: z.object({ path: z.string() }),
        execute: async ({ path }) => {
          reads.push(path);
          return `contents of ${path}\n${'x'.repeat(2_000)}`;
        },
      }),
    };
    return { conversation, tools, reads, ui: new RecordingUi() };
  }

  function run(
    s: ReturnType<typeof setup>,
    model: MockLanguageModelV4,
    maxSteps = 10,
    signal = new AbortController().signal,
    extra: Partial<Parameters<typeof runAgentTurn>[0]> = {},
  ) {
    return runAgentTurn({
      model,
      system: 'You are a test agent.',
      tools: s.tools,
      maxSteps,
      signal,
      conversation: {
        view: () => s.conversation.view(),
        append: (r) => s.conversation.append(r),
        assess: () => s.conversation.assess(),
        compact: (reason, sig) => s.conversation.compact(reason, { signal: sig }),
        requestBasis: () => s.conversation.requestBasis(),
        newId: () => `m${Math.random().toString(36).slice(2)}`,
        guard: s.conversation.guard(),
      },
      ui: s.ui,
      overflowRetriesPerTurn: 1,
      ...extra,
    });
  }

  /** What a provider counting like the local tokenizer reports for the request being sent. */
  const sentTokens = (s: ReturnType<typeof setup>): number => s.conversation.count().localTokens;

  async function ask(s: ReturnType<typeof setup>, prompt: string) {
    await s.conversation.append([{ type: 'message', message: { id: `u-${prompt.length}-${Math.random()}`, role: 'user', content: [text(prompt)] } }]);
  }

  it('runs a multi-step tool loop, streams text and persists every message with usage', async () => {
    const s = setup(1_000_000);
    const script = [toolCallStep('c1', 'a.ts'), toolCallStep('c2', 'b.ts'), answerStep('Both files read.')];
    const model = new MockLanguageModelV4({ doStream: async () => ({ stream: streamOf(script.shift()!) }) });
    await ask(s, 'Read a.ts and b.ts');
    const result = await run(s, model);
    assert.equal(result.error, undefined);
    assert.equal(result.steps, 3);
    assert.deepEqual(s.reads, ['a.ts', 'b.ts']);
    assert.equal(s.ui.texts.join(''), 'Reading a.ts. Reading b.ts. Both files read.');
    const roles = modelView(s.conversation.log(), new EngineMemo()).map((m) => m.role);
    assert.deepEqual(roles, ['user', 'assistant', 'tool', 'assistant', 'tool', 'assistant']);
    assert.ok(
      s.conversation.log().some((r) => r.type === 'usage'),
      'provider usage is recorded for the gauge',
    );
    // The log is on disk: a fresh store reads the same records.
    const reopened = await new ConversationStore(dir, () => 0).open('c1');
    assert.equal(reopened.log.length, s.conversation.log().length);
  });

  it('compacts at the start of a step when the threshold is crossed mid-loop, and the next request holds the summary and kept messages without orphans', async () => {
    const config: CompactionConfig = { ...DEFAULT_CONFIG, minMessages: 2, keepRecent: { ...DEFAULT_CONFIG.keepRecent, mode: 'tokens', tokens: 600 } };
    const s = setup(2_500, config);
    // The mock reports usage the way a provider would: the size of the prompt it was sent.
    const script = [
      ...['a', 'b', 'c', 'd', 'e'].map((f, i) => (input: number) => toolCallStep(`c${i}`, `${f}.ts`, input)),
      () => answerStep('Done.'),
    ];
    const model = new MockLanguageModelV4({
      doStream: async (options) => ({ stream: streamOf(script.shift()!(Math.ceil(JSON.stringify(options.prompt).length / 4))) }),
    });
    await ask(s, 'Read five files');
    const result = await run(s, model);
    assert.equal(result.error, undefined);
    assert.ok(result.compactions >= 1, 'compacted during the loop');
    assert.ok(s.ui.compactions.includes('threshold:compacted'));
    assert.equal(s.ui.texts.at(-1), 'Done.');
    const lastPrompt: Prompt = model.doStreamCalls.at(-1)!.prompt;
    const promptText = JSON.stringify(lastPrompt);
    assert.ok(promptText.includes('SUMMARY-MARKER'), 'the summary reaches the model');
    assert.ok(promptText.includes('Read five files'), 'the request is kept verbatim');
    const calls = new Set<string>();
    for (const m of lastPrompt) {
      if (m.role === 'assistant') for (const p of m.content) if (p.type === 'tool-call') calls.add(p.toolCallId);
      if (m.role === 'tool')
        for (const p of m.content) if (p.type === 'tool-result') assert.ok(calls.has(p.toolCallId), `orphan tool result ${p.toolCallId}`);
    }
    assert.ok(lastPrompt.length < 12, `the prompt was compacted (${lastPrompt.length} messages)`);
  });

  it('compacts and retries once on a context_length_exceeded error, then answers', async () => {
    const config: CompactionConfig = { ...DEFAULT_CONFIG, keepRecent: { ...DEFAULT_CONFIG.keepRecent, mode: 'messages', messages: 2 } };
    const s = setup(1_000_000, config);
    for (let i = 0; i < 4; i++) {
      await ask(s, `earlier question ${i} ${'q'.repeat(400)}`);
      await s.conversation.append([
        { type: 'message', message: { id: `a${i}`, role: 'assistant', content: [text(`earlier answer ${i} ${'a'.repeat(400)}`)] } },
      ]);
    }
    await ask(s, 'And now?');
    let calls = 0;
    const model = new MockLanguageModelV4({
      doStream: async () => {
        calls++;
        if (calls === 1) {
          throw new APICallError({
            message: "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
            url: 'http://127.0.0.1/v1/chat/completions',
            requestBodyValues: {},
            statusCode: 400,
            responseBody: JSON.stringify({ error: { code: 'context_length_exceeded', message: 'too long' } }),
            isRetryable: false,
          });
        }
        return { stream: streamOf(answerStep('Here is the answer.')) };
      },
    });
    const result = await run(s, model);
    assert.equal(result.error, undefined);
    assert.deepEqual(s.ui.compactions, ['overflow:compacted']);
    assert.equal(s.ui.texts.join(''), 'Here is the answer.');
    assert.ok(JSON.stringify(model.doStreamCalls[1]!.prompt).includes('SUMMARY-MARKER'));
  });

  it('gives up after one overflow retry and reports the error', async () => {
    const s = setup(1_000_000, { ...DEFAULT_CONFIG, keepRecent: { ...DEFAULT_CONFIG.keepRecent, mode: 'messages', messages: 1 } });
    for (let i = 0; i < 4; i++) await ask(s, `q${i} ${'w'.repeat(500)}`);
    const model = new MockLanguageModelV4({
      doStream: async () => {
        throw new APICallError({
          message: 'prompt is too long: 210000 tokens > 200000 maximum',
          url: 'x',
          requestBodyValues: {},
          statusCode: 400,
          isRetryable: false,
        });
      },
    });
    const result = await run(s, model);
    assert.ok(result.error, 'the error is reported');
    assert.equal(model.doStreamCalls.length, 2, 'one retry, not more');
    assert.ok(s.ui.notices.some((n) => /will not retry/.test(n)));
  });

  it('stops on cancellation and leaves no tool call without its result in the history', async () => {
    const s = setup(1_000_000);
    const controller = new AbortController();
    let step = 0;
    const model = new MockLanguageModelV4({
      doStream: async () => {
        step++;
        if (step === 2) controller.abort();
        return { stream: streamOf(toolCallStep(`c${step}`, `f${step}.ts`)) };
      },
    });
    await ask(s, 'loop forever');
    const result = await run(s, model, 10, controller.signal);
    assert.equal(result.cancelled, true);
    const view = modelView(s.conversation.log(), new EngineMemo());
    const callIds = view.flatMap((m) => m.content.flatMap((p) => (p.type === 'tool-call' ? [p.toolCallId] : [])));
    const resultIds = new Set(view.flatMap((m) => m.content.flatMap((p) => (p.type === 'tool-result' ? [p.toolCallId] : []))));
    for (const id of callIds) assert.ok(resultIds.has(id), `call ${id} has its result`);
  });

  it('treats a prompt the server cut silently as an overflow: compacts, asks again once, and keeps no answer written from the cut prompt', async () => {
    const config: CompactionConfig = { ...DEFAULT_CONFIG, keepRecent: { ...DEFAULT_CONFIG.keepRecent, mode: 'messages', messages: 2 } };
    const s = setup(1_000_000, config);
    for (let i = 0; i < 6; i++) {
      await ask(s, `earlier question ${i} ${'q'.repeat(1_200)}`);
      await s.conversation.append([
        { type: 'message', message: { id: `a${i}`, role: 'assistant', content: [text(`earlier answer ${i} ${'a'.repeat(1_200)}`)] } },
      ]);
    }
    await ask(s, 'And now?');
    // Like Ollama with a 1,024-token context: it reads what fits and says nothing.
    const serverWindow = 1_024;
    let calls = 0;
    const model: MockLanguageModelV4 = new MockLanguageModelV4({
      doStream: async (options) => {
        const sent = Math.ceil(JSON.stringify(options.prompt).length / 4);
        const reply = ++calls === 1 ? 'An answer to half a conversation.' : 'The real answer.';
        const parts = answerStep(reply).map((p) => (p.type === 'finish' ? { ...p, usage: usage(Math.min(sent, serverWindow - 24), 8) } : p));
        return { stream: streamOf(parts) };
      },
    });
    const result = await run(s, model, 10, undefined, { detectTruncation: true, truncationAdvice: 'Raise num_ctx.' });
    assert.equal(result.error, undefined);
    assert.deepEqual(s.ui.compactions, ['overflow:compacted']);
    assert.ok(
      s.ui.notices.some((n) => /cut the prompt/.test(n) && /Raise num_ctx\./.test(n)),
      s.ui.notices.join('\n'),
    );
    assert.equal(model.doStreamCalls.length, 2);
    const answers = modelView(s.conversation.log(), new EngineMemo())
      .filter((m) => m.role === 'assistant')
      .map((m) => JSON.stringify(m.content));
    assert.ok(answers.some((a) => a.includes('The real answer.')));
    assert.ok(
      !s.conversation.log().some((r) => r.type === 'message' && JSON.stringify(r.message.content).includes('half a conversation')),
      'the answer from the cut prompt is not kept',
    );
    const usages = s.conversation.log().flatMap((r) => (r.type === 'usage' ? [r.usage] : []));
    assert.deepEqual(
      usages.map((u) => u.truncated === true),
      [true, false],
      'the cut request was billed: its usage is kept, marked as cut, before the retry',
    );
    const totals = usageReport(usages, () => undefined).conversation;
    assert.equal(totals.requests, 2, 'both billed requests count in the totals');
    assert.equal(totals.input, usages[0]!.inputTokens + usages[1]!.inputTokens);
  });

  it('does not take a tokenizer that counts differently for a cut prompt', async () => {
    const s = setup(1_000_000);
    for (let i = 0; i < 6; i++) await ask(s, `question ${i} ${'q'.repeat(1_200)}`);
    const model = new MockLanguageModelV4({
      doStream: async (options) => {
        const sent = Math.ceil(JSON.stringify(options.prompt).length / 4);
        const parts = answerStep('Fine.').map((p) => (p.type === 'finish' ? { ...p, usage: usage(Math.round(sent * 0.9), 2) } : p));
        return { stream: streamOf(parts) };
      },
    });
    const result = await run(s, model, 10, undefined, { detectTruncation: true });
    assert.equal(result.error, undefined);
    assert.deepEqual(s.ui.compactions, []);
    assert.equal(model.doStreamCalls.length, 1);
  });

  it('stamps usage with the compaction state its request was sent under, so a compaction landing mid-step voids it', async () => {
    const config: CompactionConfig = { ...DEFAULT_CONFIG, keepRecent: { ...DEFAULT_CONFIG.keepRecent, mode: 'messages', messages: 2 } };
    const s = setup(1_000_000, config);
    for (let i = 0; i < 6; i++) await ask(s, `question ${i} ${'q'.repeat(2_000)}`);
    const model = new MockLanguageModelV4({
      doStream: async () => {
        const sent = sentTokens(s);
        // The user clicks the gauge: a manual compaction finishes while this step is in flight.
        const manual = await s.conversation.compact('manual');
        assert.equal(manual.status, 'compacted');
        const parts = answerStep('Answered.').map((p) => (p.type === 'finish' ? { ...p, usage: usage(sent, 3) } : p));
        return { stream: streamOf(parts) };
      },
    });
    const result = await run(s, model);
    assert.equal(result.error, undefined);
    const count = s.conversation.count();
    assert.equal(count.source, 'local', 'the report describes the view before the compaction');
    assert.ok(count.tokens <= count.localTokens * 1.02, `budget ${count.tokens} against a view of ${count.localTokens}`);
  });

  it('with confirmation on, asks once per turn; "Not now" holds for the turn and overflow recovery still compacts, saying so', async () => {
    const config: CompactionConfig = {
      ...DEFAULT_CONFIG,
      minMessages: 2,
      keepRecent: { ...DEFAULT_CONFIG.keepRecent, mode: 'messages', messages: 2 },
    };
    const s = setup(2_000, config);
    let asked = 0;
    s.ui.confirmCompaction = async () => {
      asked++;
      return false;
    };
    await ask(s, `Read files ${'p'.repeat(6_000)}`);
    let call = 0;
    const model = new MockLanguageModelV4({
      doStream: async () => {
        call++;
        if (call === 4) {
          throw new APICallError({
            message: 'maximum context length is 2000 tokens',
            url: 'x',
            requestBodyValues: {},
            statusCode: 400,
            isRetryable: false,
          });
        }
        return { stream: streamOf(call < 4 ? toolCallStep(`c${call}`, `f${call}.ts`, sentTokens(s)) : answerStep('Done.')) };
      },
    });
    const result = await run(s, model);
    assert.equal(result.error, undefined);
    assert.equal(asked, 1, 'asked once, although the threshold was crossed at every step');
    assert.deepEqual(s.ui.compactions, ['overflow:compacted']);
    assert.ok(s.ui.notices.some((n) => /although you chose not to/.test(n)));
    assert.equal(s.ui.texts.at(-1), 'Done.');
  });

  it('with confirmation on, compacts when the user says so', async () => {
    const config: CompactionConfig = {
      ...DEFAULT_CONFIG,
      minMessages: 2,
      keepRecent: { ...DEFAULT_CONFIG.keepRecent, mode: 'messages', messages: 2 },
    };
    const s = setup(2_000, config);
    let asked = 0;
    s.ui.confirmCompaction = async () => {
      asked++;
      return true;
    };
    await ask(s, `Read files ${'p'.repeat(6_000)}`);
    const script = [(n: number) => toolCallStep('c1', 'a.ts', n), () => answerStep('Done.')];
    const model = new MockLanguageModelV4({ doStream: async () => ({ stream: streamOf(script.shift()!(sentTokens(s))) }) });
    const result = await run(s, model);
    assert.equal(result.error, undefined);
    assert.equal(asked, 1);
    assert.ok(s.ui.compactions.includes('threshold:compacted'));
  });

  it('stops a request whose server accepts the connection and never sends headers, within firstChunkMs', async () => {
    const server = new HangingServer();
    const baseUrl = await server.start();
    try {
      const s = setup(1_000_000);
      await ask(s, 'hello');
      const stuck = createEndpointModel({ endpoint: 'stuck', baseUrl, id: 'm' }, undefined) as MockLanguageModelV4;
      const started = Date.now();
      const result = await within(5_000, run(s, stuck, 10, undefined, { timeouts: { firstChunkMs: 300, idleMs: 60_000 } }));
      assert.ok(isModelTimeout(result.error), String(result.error));
      assert.ok(Date.now() - started < 3_000, `stopped after ${Date.now() - started} ms`);
      assert.deepEqual(
        modelView(s.conversation.log(), new EngineMemo()).map((m) => m.role),
        ['user'],
      );
    } finally {
      await server.close();
    }
  });

  describe("llama.cpp's 500 for a tool call it cannot read", () => {
    const chatRequests = (server: Awaited<ReturnType<typeof startScriptedModelServer>>) =>
      server.requests.filter((r) => r.path === '/v1/chat/completions');

    it('asks once more, and goes on with the answer the model writes then', async () => {
      const server = await startScriptedModelServer({ models: [{ id: 'smollm2', window: 1_000_000 }] });
      try {
        server.script([{ error: unparsedToolCall() }, { text: 'Here is the answer.' }]);
        const s = setup(1_000_000);
        await ask(s, 'read a.ts');
        const model = createEndpointModel({ endpoint: 'llama', baseUrl: server.url, id: 'smollm2' }, undefined) as MockLanguageModelV4;
        const result = await run(s, model);
        assert.equal(result.error, undefined, String(result.error));
        assert.deepEqual(
          chatRequests(server).map((r) => r.status),
          [500, 200],
        );
        const answer = s.conversation
          .log()
          .filter((r) => r.type === 'message')
          .at(-1);
        assert.ok(answer?.type === 'message' && answer.message.role === 'assistant');
        assert.deepEqual(answer.message.content, [text('Here is the answer.')]);
      } finally {
        await server.close();
      }
    });

    it('stops after the one retry and says in the chat what the server could not read, and what to do', async () => {
      const server = await startScriptedModelServer({ models: [{ id: 'smollm2', window: 1_000_000 }] });
      try {
        server.script([{ error: unparsedToolCall() }, { error: unparsedToolCall() }, { text: 'never asked for' }]);
        const s = setup(1_000_000);
        await ask(s, 'read a.ts');
        const model = createEndpointModel({ endpoint: 'llama', baseUrl: server.url, id: 'smollm2' }, undefined) as MockLanguageModelV4;
        const result = await run(s, model);
        assert.ok(result.error !== undefined, 'the turn failed');
        assert.deepEqual(
          chatRequests(server).map((r) => r.status),
          [500, 500],
        );
        const shown = errorMessage(result.error, { timeouts: { firstChunkMs: 600_000, idleMs: 120_000 } }, (t) => t);
        assert.match(shown, /^The model wrote a tool call that its server could not read \(the server expected its Hermes 2 Pro format\)/);
        assert.match(shown, /Nothing was lost: ask again/);
        assert.match(shown, /The server said: .*does not match the expected Hermes 2 Pro format/);
        assert.deepEqual(
          modelView(s.conversation.log(), new EngineMemo()).map((m) => m.role),
          ['user'],
          'the conversation is as it was',
        );
      } finally {
        await server.close();
      }
    });
  });

  it('keeps an answer whose stream ended without a finish reason, marked incomplete, and says it was cut', async () => {
    const chunk = (delta: object) =>
      `data: ${JSON.stringify({ id: 'x', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta }] })}\n\n`;
    const server = createServer((_request, response) => {
      response.writeHead(200, { 'Content-Type': 'text/event-stream' });
      response.end(`${chunk({ role: 'assistant', content: 'Half an ' })}${chunk({ content: 'answer' })}data: [DONE]\n\n`);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const s = setup(1_000_000);
      await ask(s, 'hello');
      const { port } = server.address() as AddressInfo;
      const cut = createEndpointModel({ endpoint: 'cut', baseUrl: `http://127.0.0.1:${port}/v1`, id: 'm' }, undefined) as MockLanguageModelV4;
      const result = await run(s, cut);
      assert.equal(result.error, undefined);
      const answer = s.conversation.log().at(-1);
      assert.ok(answer?.type === 'message' && answer.message.role === 'assistant');
      assert.deepEqual(answer.message.content, [{ type: 'text', text: 'Half an answer' }]);
      assert.equal(answer.message.incomplete, true);
      assert.ok(
        s.ui.notices.some((n) => /The answer was cut: the model's stream ended without saying it was finished/.test(n)),
        s.ui.notices.join('\n'),
      );
      const reopened = (await new ConversationStore(dir, () => 0).open('c1')).log.at(-1);
      assert.ok(reopened?.type === 'message' && reopened.message.incomplete === true, 'the mark is stored');
    } finally {
      server.close();
    }
  });

  it('shows a long answer whole as it streams and keeps it cut in the middle, for the model and on disk', async () => {
    const s = setup(1_000_000);
    await ask(s, 'write it all out');
    const deltas = Array.from({ length: 200 }, (_, i) => `line ${i} `.padEnd(999, '.') + '\n');
    const model = new MockLanguageModelV4({
      doStream: async () => ({
        stream: streamOf([
          { type: 'stream-start', warnings: [] },
          { type: 'text-start', id: 'a' },
          ...deltas.map((delta) => ({ type: 'text-delta', id: 'a', delta })),
          { type: 'text-end', id: 'a' },
          { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage: usage(100, 50_000) },
        ]),
      }),
    });
    const result = await run(s, model, 10, undefined, { maxKeptTextChars: 10_000 });
    assert.equal(result.error, undefined);
    assert.equal(s.ui.texts.join(''), deltas.join(''), 'the chat shows all of it');
    const kept = (log: readonly LogRecord[]): string => {
      const answer = log.findLast((r) => r.type === 'message' && r.message.role === 'assistant');
      assert.ok(answer?.type === 'message');
      return answer.message.content.map((p) => (p.type === 'text' ? p.text : '')).join('');
    };
    const answer = kept(s.conversation.log());
    assert.ok(answer.startsWith(deltas.slice(0, 5).join('')), 'its head');
    assert.ok(answer.endsWith(deltas.slice(-5).join('')), 'its tail');
    assert.match(answer, /\[… cut by Longrun: 200,000 characters in all; the first 5,000 and the last 5,000 are kept\]/);
    assert.ok(answer.length < 10_200, `${answer.length} characters kept`);
    assert.equal(kept((await new ConversationStore(dir, () => 0).open('c1')).log), answer, 'stored as kept');
  });

  it('stops a model that sends nothing, or goes silent mid-answer, and leaves a consistent log', async () => {
    const s = setup(1_000_000);
    await ask(s, 'hello');
    const silent = new MockLanguageModelV4({ doStream: async () => ({ stream: new ReadableStream({ start() {} }) }) });
    const first = await run(s, silent, 10, undefined, { timeouts: { firstChunkMs: 50, idleMs: 50 } });
    assert.ok(isModelTimeout(first.error), String(first.error));
    assert.equal(first.cancelled, false);
    const stalled = new MockLanguageModelV4({
      doStream: async () => ({
        stream: new ReadableStream({
          start(controller) {
            controller.enqueue({ type: 'stream-start', warnings: [] });
            controller.enqueue({ type: 'text-start', id: 't' });
            controller.enqueue({ type: 'text-delta', id: 't', delta: 'Half an ans' });
          },
        }),
      }),
    });
    const second = await run(s, stalled, 10, undefined, { timeouts: { firstChunkMs: 50, idleMs: 50 } });
    assert.ok(isModelTimeout(second.error), String(second.error));
    assert.deepEqual(
      modelView(s.conversation.log(), new EngineMemo()).map((m) => m.role),
      ['user'],
      'nothing half-written was kept',
    );
    const next = new MockLanguageModelV4({ doStream: async () => ({ stream: streamOf(answerStep('Back.')) }) });
    const third = await run(s, next);
    assert.equal(third.error, undefined, 'the conversation goes on');
  });
});
