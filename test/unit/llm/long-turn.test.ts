import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { APICallError, tool, type ToolSet } from 'ai';
import { convertArrayToReadableStream, MockLanguageModelV4 } from 'ai/test';
import { z } from 'zod';
import { DEFAULT_CONFIG } from '../../../src/core/config';
import { summaryMessage, type CompactionEntry } from '../../../src/core/history';
import { MessageTokenCounter } from '../../../src/core/message-tokens';
import { text, type Message } from '../../../src/core/messages';
import type { Summarizer } from '../../../src/core/ports';
import { charEstimator } from '../../../src/core/tokenizer';
import { runAgentTurn, type AgentUi } from '../../../src/llm/agent';
import { ConversationStore } from '../../../src/app/store/conversation-store';
import { FakeClock, templateSummary } from '../core/fixtures';
import { newConversation } from '../fixtures/conversation-deps';

/**
 * Long agentic turns on small windows, through the agent loop and a conversation: one request of
 * dozens of tool calls, against a model that refuses any request over its window as a provider does.
 */

const usage = (input: number, output: number) => ({
  inputTokens: { total: input, noCache: input, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: output, text: output, reasoning: undefined },
});

/** A file as read_file shows it: numbered lines, about `tokens` tokens. */
function fileText(path: string, tokens: number): string {
  const lines: string[] = [];
  for (let i = 1; lines.join('\n').length < tokens * 4; i++)
    lines.push(`${i}| export function ${path.replace(/\W/g, '_')}_${i}(input: string): number { return input.length * ${i}; }`);
  return lines.join('\n');
}

interface Run {
  readonly overflows: number;
  readonly entries: CompactionEntry[];
  /** Each summary, and the files read before it in the log (sorted). */
  readonly summaries: Array<{ entry: CompactionEntry; readBefore: string[] }>;
  /** Every compaction: the view's count before and after, and what its summary (if any) replaced. */
  readonly compactions: Array<{ before: number; after: number; summarized?: number; lowGain: boolean }>;
  readonly error: unknown;
  readonly steps: number;
  /** Whether the turn stopped for a compaction loop. */
  readonly stoppedForLoop: boolean;
  /** The model's view at the end of the turn. */
  readonly view: readonly Message[];
  /** The write calls whose content a pruning replaced by a stub. */
  readonly writtenStubs: number;
  /** What `recall` answers for `query`. */
  readonly recall: (query: string) => Promise<string>;
}

const summarizer: Summarizer = {
  name: 'fake',
  summarize: async (request) => ({ text: templateSummary(`Read ${request.messages.length} messages' worth of files; the work goes on.`) }),
};

describe('long agentic turns on small windows', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'longrun-long-turn-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /**
   * Plays one request of `reads` file reads (sizes from `sizeOf`) in a window of `limit` input tokens of
   * which `overhead` are the system prompt and tools, after `earlier` messages of earlier turns.
   */
  async function play(options: {
    limit: number;
    overhead: number;
    reads: number;
    sizeOf: (i: number) => number;
    ahead?: boolean;
    earlier?: readonly Message[];
    /** The last compaction, in the turn before this one, freed too little (automatic compaction waits). */
    afterLowGain?: boolean;
    pruning?: boolean;
    /** The step at which the model writes a new file of `tokens` tokens instead of reading one. */
    write?: { readonly at: number; readonly tokens: number };
    /** The file read at step `i` (`src/m{i}.ts`, a new one each step, by default). */
    pathOf?: (i: number) => string;
    /** Whether the agent gets the log, and so keeps the rule against compaction loops. */
    loopRule?: boolean;
  }): Promise<Run> {
    const config = { ...DEFAULT_CONFIG, pruning: { ...DEFAULT_CONFIG.pruning, enabled: options.pruning ?? true } };
    const clock = new FakeClock();
    let n = 0;
    const counter = new MessageTokenCounter(charEstimator);
    const conversation = newConversation({
      store: new ConversationStore(dir, () => clock.now()),
      clock,
      newId: () => `id${++n}`,
      config,
      model: { name: 'mock', limit: options.limit, counter, requestOverhead: options.overhead },
      summarizer,
      summarizeAhead: () => options.ahead ?? false,
    });
    if (options.earlier) await conversation.append(options.earlier.map((message) => ({ type: 'message', message })));
    await conversation.append([
      { type: 'message', message: { id: 'request', role: 'user', content: [text(`Read the ${options.reads} modules one by one.`)] } },
    ]);
    const tools: ToolSet = {
      read_file: tool({
        description: 'read',
        inputSchema: z.object({ path: z.string() }),
        execute: async ({ path }) => {
          // Recorded as the extension records a tool's file operation: as soon as it happens.
          void conversation.append([{ type: 'file', event: { kind: 'read', path, actor: 'agent', at: clock.now() } }]);
          return fileText(path, options.sizeOf(Number(/\d+/.exec(path)?.[0] ?? 0)));
        },
      }),
      create_file: tool({
        description: 'create',
        inputSchema: z.object({ path: z.string(), content: z.string() }),
        execute: async ({ path, content }) => {
          void conversation.append([{ type: 'file', event: { kind: 'created', path, actor: 'agent', at: clock.now() } }]);
          return `Created ${path} (${content.split('\n').length} lines).`;
        },
      }),
    };
    const written = options.write ? fileText('src/big.ts', options.write.tokens).replace(/^\d+\| /gm, '') : '';
    let overflows = 0;
    let call = 0;
    const model = new MockLanguageModelV4({
      doStream: async () => {
        // What the provider reads is the request as sent; past its window it refuses it.
        const sent = conversation.count().localTokens;
        if (sent > options.limit) {
          overflows++;
          throw new APICallError({
            message: `This model's maximum context length is ${options.limit} tokens. However, your messages resulted in ${sent} tokens.`,
            url: 'http://127.0.0.1/v1/chat/completions',
            requestBodyValues: {},
            statusCode: 400,
            responseBody: JSON.stringify({ error: { code: 'context_length_exceeded', message: 'too long' } }),
            isRetryable: false,
          });
        }
        const i = call++;
        const parts =
          i === options.write?.at
            ? [
                { type: 'stream-start', warnings: [] },
                {
                  type: 'tool-call',
                  toolCallId: `call${i}`,
                  toolName: 'create_file',
                  input: JSON.stringify({ path: 'src/big.ts', content: written }),
                },
                // A provider counts what the model wrote, the file's content included.
                { type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage: usage(sent, options.write!.tokens + 20) },
              ]
            : i < options.reads
              ? [
                  { type: 'stream-start', warnings: [] },
                  {
                    type: 'tool-call',
                    toolCallId: `call${i}`,
                    toolName: 'read_file',
                    input: JSON.stringify({ path: options.pathOf?.(i) ?? `src/m${i}.ts` }),
                  },
                  { type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage: usage(sent, 20) },
                ]
              : [
                  { type: 'stream-start', warnings: [] },
                  { type: 'text-start', id: 'a' },
                  { type: 'text-delta', id: 'a', delta: 'All modules read.' },
                  { type: 'text-end', id: 'a' },
                  { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage: usage(sent, 5) },
                ];
        return { stream: convertArrayToReadableStream(parts as never[]) };
      },
    });
    const compactions: Run['compactions'] = [];
    const ui: AgentUi = {
      text: () => undefined,
      toolCall: () => undefined,
      compacting: () => undefined,
      compacted: (outcome) => {
        if (outcome.status !== 'compacted') return;
        const c = outcome.compaction;
        compactions.push({
          before: c.tokensBefore,
          after: c.tokensAfter,
          lowGain: c.lowGain,
          // What left the view for the summary: what was freed, plus what the summary itself takes.
          ...(c.entry ? { summarized: c.tokensBefore - c.tokensAfter + counter.countMessage(summaryMessage(c.entry, conversation.memo())) } : {}),
        });
      },
      notice: () => undefined,
    };
    // As the compactor notes it: a low-gain automatic compaction in the turn before this one.
    if (options.afterLowGain) conversation.guard().noteCompaction('threshold', true);
    const result = await runAgentTurn({
      model,
      system: 'You are a test agent.',
      tools,
      maxSteps: options.reads + 5,
      signal: new AbortController().signal,
      conversation: {
        view: () => conversation.view(),
        append: (r) => conversation.append(r),
        assess: () => conversation.assess(),
        compact: (reason, signal) => conversation.compact(reason, { signal }),
        requestBasis: () => conversation.requestBasis(),
        newId: () => `m${++n}`,
        ...(options.loopRule ? { log: () => conversation.log() } : {}),
        guard: conversation.guard(),
      },
      ui,
      overflowRetriesPerTurn: 1,
    });
    const log = conversation.log();
    const entries = log.flatMap((r) => (r.type === 'compaction' ? [r.entry] : []));
    const summaries = entries.map((entry) => {
      const at = log.findIndex((r) => r.type === 'compaction' && r.entry === entry);
      const read = log.slice(0, at).flatMap((r) => (r.type === 'file' ? [r.event.path] : []));
      return { entry, readBefore: [...new Set(read)].sort() };
    });
    return {
      overflows,
      entries,
      summaries,
      compactions,
      error: result.error,
      steps: result.steps,
      stoppedForLoop: result.compactionLoop === true,
      view: conversation.view(),
      writtenStubs: log.flatMap((r) => (r.type === 'pruning' ? r.entry.outputs.filter((o) => o.kind === 'written') : [])).length,
      recall: (query) => conversation.recall({ query, maxTokens: 20_000 }),
    };
  }

  const earlierTurn = (tokens: number): Message[] => [
    { id: 'e-u', role: 'user', content: [text(`Look at the layout first. ${'context '.repeat(tokens / 4)}`)] },
    { id: 'e-a', role: 'assistant', content: [text(`The layout is clear. ${'note '.repeat(tokens / 4)}`)] },
  ];

  it('compacts a turn of 40 tool calls inside itself, summaries prepared ahead or not, pruning on or off: nothing sent over the window, no compaction frees little, every summary lists exactly the files read before it', async () => {
    for (const ahead of [false, true]) {
      for (const pruning of [false, true]) {
        const how = `summaries ${ahead ? '' : 'not '}prepared ahead, pruning ${pruning ? 'on' : 'off'}`;
        // A 32k window less the answer's room; reads of 2,000 to 5,000 tokens, as a coding agent makes them.
        const run = await play({
          limit: 28_672,
          overhead: 6_000,
          reads: 40,
          sizeOf: (i) => 2_000 + ((i * 1_237) % 3_000),
          ahead,
          pruning,
          earlier: earlierTurn(1_600),
        });
        assert.equal(run.error, undefined, `${how}: ${String(run.error)}`);
        assert.equal(run.overflows, 0, `${how}: no request was refused`);
        assert.ok(run.compactions.length >= 2, `${how}: ${run.compactions.length} compactions`);
        for (const c of run.compactions) assert.equal(c.lowGain, false, `${how}: ${c.before} → ${c.after}`);
        for (const c of run.compactions) {
          if (c.summarized !== undefined)
            assert.ok(c.before - c.after >= c.summarized / 2, `${how}: freed ${c.before - c.after} of ${c.summarized} summarized`);
        }
        if (!pruning) assert.ok(run.entries.length >= 2 && run.entries.every((e) => e.splitTurn), `${how}: summaries inside the turn`);
        for (const { entry, readBefore } of run.summaries) {
          assert.deepEqual(Object.keys(entry.fileOperations.files), readBefore, `${how}: the files of summary round ${entry.round}`);
        }
      }
    }
  });

  it('keeps a loop of 40 reads in one request within a 6,000-token window, every summary listing exactly the files read before it', async () => {
    for (const ahead of [false, true]) {
      for (const pruning of [false, true]) {
        const how = `summaries ${ahead ? '' : 'not '}prepared ahead, pruning ${pruning ? 'on' : 'off'}`;
        // 1,500 tokens for the answer, 1,500 for the system prompt and tools; reads of about 600 tokens.
        const run = await play({ limit: 4_500, overhead: 1_500, reads: 40, sizeOf: () => 600, pruning, ahead });
        assert.equal(run.error, undefined, `${how}: ${String(run.error)}`);
        assert.equal(run.overflows, 0, `${how}: no request was refused`);
        assert.equal(run.steps, 41, how);
        for (const c of run.compactions) assert.equal(c.lowGain, false, `${how}: ${c.before} → ${c.after}`);
        for (const { entry, readBefore } of run.summaries) {
          assert.deepEqual(Object.keys(entry.fileOperations.files), readBefore, `${how}: the files of summary round ${entry.round}`);
        }
      }
    }
  });

  it('stops a turn that only reads again what it had read, at the second summary with nothing done between, and never for a search through new files', async () => {
    // Three files read round and round: every summary is followed by reads of files the turn had read.
    const circle = await play({
      limit: 4_500,
      overhead: 1_500,
      reads: 40,
      sizeOf: () => 600,
      pruning: false,
      loopRule: true,
      pathOf: (i) => `src/m${i % 3}.ts`,
    });
    assert.equal(circle.stoppedForLoop, true, `${circle.entries.length} summaries, ${circle.steps} steps`);
    assert.equal(circle.entries.length, 2, 'stopped at the second summary, never a third');
    assert.ok(circle.steps < 40, `${circle.steps} steps`);

    const onward = await play({ limit: 4_500, overhead: 1_500, reads: 40, sizeOf: () => 600, pruning: false, loopRule: true });
    assert.equal(onward.stoppedForLoop, false);
    assert.equal(onward.steps, 41, 'every new file read, and the answer');
    assert.ok(onward.entries.length >= 3, `${onward.entries.length} summaries`);
  });

  it('lets a turn that reads one file again and again go on while pruning alone makes room, and stops it at the second summary', async () => {
    const run = await play({ limit: 4_500, overhead: 1_500, reads: 40, sizeOf: () => 600, loopRule: true, pathOf: () => 'src/m1.ts' });
    const how = JSON.stringify({ steps: run.steps, compactions: run.compactions });
    const prunings = run.compactions.findIndex((c) => c.summarized !== undefined);
    assert.ok(prunings >= 2, `prunings alone, no model asked, before the first summary: ${how}`);
    assert.equal(run.entries.length, 2, how);
    assert.equal(run.stoppedForLoop, true, how);
  });

  it('writes a file larger than the recent part in the middle of a long turn: nothing sent over the window; pruning on, the content written is a stub in the view and recall gives it back', async () => {
    for (const pruning of [false, true]) {
      // The recent part is about 7,900 tokens, the kept part at most 11,300: the file is 10,000.
      const run = await play({
        limit: 28_672,
        overhead: 6_000,
        reads: 30,
        sizeOf: (i) => 2_000 + ((i * 1_237) % 3_000),
        pruning,
        write: { at: 12, tokens: 10_000 },
      });
      assert.equal(run.error, undefined, `pruning ${pruning}: ${String(run.error)}`);
      assert.equal(run.overflows, 0, `pruning ${pruning}: no request was refused`);
      for (const c of run.compactions) assert.equal(c.lowGain, false, `pruning ${pruning}: ${c.before} → ${c.after}`);
      if (!pruning) continue;
      assert.equal(run.writtenStubs, 1, 'the content written was stubbed');
      const call = run.view.flatMap((m) => m.content).find((p) => p.type === 'tool-call' && p.toolName === 'create_file');
      if (call?.type === 'tool-call') {
        assert.match(String((call.input as { content: string }).content), /^\[Pruned by Longrun: this create_file call wrote [\d,]+ lines/);
      }
      assert.match(await run.recall('call12'), /export function src_big_ts_1\(input: string\)/, 'recall gives the content written back');
    }
  });

  it('fits a first request whose two reads overflow the window by cutting them, though it has fewer messages than compaction waits for', async () => {
    const run = await play({ limit: 28_672, overhead: 6_000, reads: 2, sizeOf: () => 12_000 });
    assert.equal(run.error, undefined, String(run.error));
    assert.equal(run.overflows, 0, 'no request was refused');
  });

  it('compacts over the window although the last compaction freed little', async () => {
    const run = await play({ limit: 28_672, overhead: 6_000, reads: 12, sizeOf: () => 4_000, afterLowGain: true });
    assert.equal(run.error, undefined, String(run.error));
    assert.equal(run.overflows, 0, 'no request was refused');
  });
});
