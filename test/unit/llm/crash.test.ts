import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { tool, type ToolSet } from 'ai';
import { convertArrayToReadableStream, MockLanguageModelV4 } from 'ai/test';
import { z } from 'zod';
import { DEFAULT_CONFIG, type CompactionConfig } from '../../../src/core/config';
import type { LogRecord } from '../../../src/core/history';
import { MessageTokenCounter } from '../../../src/core/message-tokens';
import { text } from '../../../src/core/messages';
import type { Summarizer } from '../../../src/core/ports';
import { charEstimator } from '../../../src/core/tokenizer';
import { runAgentTurn, type AgentTurnResult, type AgentUi } from '../../../src/llm/agent';
import type { Conversation } from '../../../src/app/conversation/conversation';
import { ConversationStore } from '../../../src/app/store/conversation-store';
import { CONVERSATION_FORMAT_VERSION } from '../../../src/app/store/schemas';
import { templateSummary } from '../core/fixtures';
import { newConversation } from '../fixtures/conversation-deps';

/**
 * A crash (or a full disk) can stop a tool loop after any line of the conversation file, or in the
 * middle of one. Whatever is left on disk, the reopened conversation must keep every line that was
 * written and its next request must be one a provider accepts: every tool result right after the
 * assistant message that called it, every call answered before the conversation moves on.
 */

const ID = 'c1';
type StreamPart = Record<string, unknown>;
type Prompt = MockLanguageModelV4['doStreamCalls'][number]['prompt'];

const streamOf = (parts: StreamPart[]) => convertArrayToReadableStream(parts as never[]);
const usage = (input: number, output: number) => ({
  inputTokens: { total: input, noCache: input, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: output, text: output, reasoning: undefined },
});
/** What a provider counting like the local estimator reports for a prompt. */
const promptTokens = (prompt: Prompt): number => Math.ceil(JSON.stringify(prompt).length / 4);

function toolCallStep(id: string, path: string, inputTokens: number): StreamPart[] {
  return [
    { type: 'stream-start', warnings: [] },
    { type: 'text-start', id: 't' },
    { type: 'text-delta', id: 't', delta: `Reading ${path} – ünïcödé ✓. ` },
    { type: 'text-end', id: 't' },
    { type: 'tool-call', toolCallId: id, toolName: 'read_file', input: JSON.stringify({ path }) },
    { type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage: usage(inputTokens, 10) },
  ];
}

function answerStep(answer: string, inputTokens: number): StreamPart[] {
  return [
    { type: 'stream-start', warnings: [] },
    { type: 'text-start', id: 'a' },
    { type: 'text-delta', id: 'a', delta: answer },
    { type: 'text-end', id: 'a' },
    { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage: usage(inputTokens, 5) },
  ];
}

/**
 * Why a provider would refuse this prompt's tool traffic, or undefined when it is valid: a result
 * must answer a call of the assistant message just before it (tool messages between them allowed),
 * and every call must have its result before the next user, system or assistant message.
 */
function pairingProblem(prompt: Prompt): string | undefined {
  let open = new Set<string>();
  for (const [index, message] of prompt.entries()) {
    if (message.role === 'tool') {
      for (const part of message.content) {
        if (part.type === 'tool-result' && !open.delete(part.toolCallId)) {
          return `message ${index}: the result of ${part.toolCallId} does not answer a call of the assistant message before it`;
        }
      }
      continue;
    }
    if (open.size > 0) return `message ${index} (${message.role}) comes before the results of ${[...open].join(', ')}`;
    open = new Set();
    if (message.role === 'assistant') {
      for (const part of message.content) if (part.type === 'tool-call' && part.providerExecuted !== true) open.add(part.toolCallId);
    }
  }
  return open.size > 0 ? `the prompt ends before the results of ${[...open].join(', ')}` : undefined;
}

/** A model that refuses a request with invalid tool traffic, as providers do, and otherwise follows its script. */
function providerLikeModel(script: Array<(prompt: Prompt) => StreamPart[]>) {
  const refusals: string[] = [];
  const model = new MockLanguageModelV4({
    doStream: async ({ prompt }) => {
      const problem = pairingProblem(prompt);
      if (problem) {
        refusals.push(problem);
        throw new Error(`400 invalid request: ${problem}`);
      }
      const next = script.shift();
      if (!next) throw new Error('the model was asked more often than scripted');
      return { stream: streamOf(next(prompt)) };
    },
  });
  return { model, refusals };
}

class QuietUi implements AgentUi {
  text() {}
  toolCall() {}
  compacting() {}
  compacted() {}
  notice() {}
}

const summarizer: Summarizer = {
  name: 'fake',
  summarize: async (request) => ({ text: templateSummary(`SUMMARY-MARKER of ${request.messages.length} messages; the files are being read.`) }),
};

const ENOSPC = () => Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });

/** How a write fails: at the `failAt`-th append of the store, after `whole` of its lines, with a torn piece of the next one. */
interface FullDiskPlan {
  readonly failAt: number;
  readonly whole: number;
  readonly torn: boolean;
}

/**
 * A store on a disk that fills up. Every record that reached the file is remembered in `landed`, so
 * the test knows exactly what a reopen must give back. Without a plan it just counts its writes.
 */
class FullDiskStore extends ConversationStore {
  writes = 0;
  readonly batchSizes: number[] = [];
  readonly landed: LogRecord[] = [];

  constructor(
    dir: string,
    private readonly clockNow: () => number,
    private readonly plan?: FullDiskPlan,
  ) {
    super(dir, clockNow);
  }

  override async appendAll(id: string, records: readonly LogRecord[]): Promise<LogRecord[]> {
    this.writes++;
    this.batchSizes.push(records.length);
    if (this.writes !== this.plan?.failAt) {
      const stored = await super.appendAll(id, records);
      this.landed.push(...stored);
      return stored;
    }
    const whole = records.slice(0, this.plan.whole);
    if (whole.length > 0) this.landed.push(...(await super.appendAll(id, whole)));
    const next = records[this.plan.whole];
    if (this.plan.torn && next) {
      // The write that fills the disk lands in part: half of its next line (after the header, in a new file).
      const file = this.partFile(id, 1);
      const size = await fs.stat(file).then(
        (s) => s.size,
        () => 0,
      );
      const header =
        size === 0 ? `${JSON.stringify({ v: CONVERSATION_FORMAT_VERSION, kind: 'longrun-conversation', id, createdAt: this.clockNow() })}\n` : '';
      const line = JSON.stringify({ v: CONVERSATION_FORMAT_VERSION, record: next });
      await fs.mkdir(dirname(file), { recursive: true });
      await fs.appendFile(file, `${header}${line.slice(0, Math.ceil(line.length / 2))}`);
    }
    throw ENOSPC();
  }
}

interface Variant {
  readonly name: string;
  readonly limit: number;
  readonly config: CompactionConfig;
  /** Whether the first turn compacts between its steps: the file then holds a compaction record. */
  readonly compacts: boolean;
}

const VARIANTS: Variant[] = [
  { name: 'a plain tool loop', limit: 1_000_000, config: DEFAULT_CONFIG, compacts: false },
  {
    name: 'a tool loop compacted between its steps',
    limit: 2_500,
    config: { ...DEFAULT_CONFIG, minMessages: 2, keepRecent: { ...DEFAULT_CONFIG.keepRecent, mode: 'tokens', tokens: 600 } },
    compacts: true,
  },
];

describe('crash or full disk in the middle of a tool loop: the reopened conversation continues', () => {
  const roots: string[] = [];
  const freshDir = async (): Promise<string> => {
    const dir = await fs.mkdtemp(join(tmpdir(), 'longrun-crash-'));
    roots.push(dir);
    return dir;
  };
  afterEach(async () => {
    await Promise.all(roots.splice(0).map((dir) => fs.rm(dir, { recursive: true, force: true })));
  });

  function conversationOver(store: ConversationStore, log: readonly LogRecord[], variant: Variant): Conversation {
    let n = 0;
    const counter = new MessageTokenCounter(charEstimator);
    return newConversation({
      id: ID,
      log,
      store,
      newId: () => `entry${++n}`,
      config: () => variant.config,
      model: { name: 'mock', limit: variant.limit, counter },
      summarizer,
    });
  }

  function tools(): ToolSet {
    return {
      read_file: tool({
        description: 'read',
        inputSchema: z.object({ path: z.string() }),
        execute: async ({ path }) => `contents of ${path}: ünïcödé ✓ 😀\n${'x'.repeat(1_500)}`,
      }),
    };
  }

  async function turn(conversation: Conversation, prefix: string, request: string, script: Array<(prompt: Prompt) => StreamPart[]>) {
    await conversation.append([{ type: 'message', message: { id: `${prefix}-user`, role: 'user', content: [text(request)] } }]);
    const { model, refusals } = providerLikeModel(script);
    let n = 0;
    const result: AgentTurnResult = await runAgentTurn({
      model,
      system: 'You are a test agent.',
      tools: tools(),
      maxSteps: 10,
      signal: new AbortController().signal,
      conversation: {
        view: () => conversation.view(),
        append: (r) => conversation.append(r),
        assess: () => conversation.assess(),
        compact: (reason, signal) => conversation.compact(reason, { signal }),
        requestBasis: () => conversation.requestBasis(),
        newId: () => `${prefix}-m${++n}`,
        guard: conversation.guard(),
      },
      ui: new QuietUi(),
      overflowRetriesPerTurn: 1,
    });
    return { result, refusals, calls: model.doStreamCalls.length };
  }

  /** The first turn: three files read over three steps, then an answer. */
  const firstTurn = (conversation: Conversation) =>
    turn(conversation, 'one', `Read a.ts, b.ts and c.ts ${'please '.repeat(800)}`, [
      (p) => toolCallStep('call-a', 'a.ts', promptTokens(p)),
      (p) => toolCallStep('call-b', 'b.ts', promptTokens(p)),
      (p) => toolCallStep('call-c', 'c.ts', promptTokens(p)),
      (p) => answerStep('All three files read.', promptTokens(p)),
    ]);

  /** The turn after the crash: one more tool call and an answer, every request checked as a provider would. */
  async function nextTurnSucceeds(dir: string, variant: Variant, where: string): Promise<{ before: LogRecord[]; after: LogRecord[] }> {
    const store = new ConversationStore(dir, () => 0);
    const opened = await store.open(ID);
    const conversation = conversationOver(store, opened.log, variant);
    const next = await turn(conversation, 'two', 'Now read d.ts', [
      (p) => toolCallStep('call-d', 'd.ts', promptTokens(p)),
      (p) => answerStep('d.ts read too.', promptTokens(p)),
    ]);
    assert.deepEqual(next.refusals, [], `${where}: the provider refused the next request`);
    assert.equal(next.result.error, undefined, `${where}: the next turn failed: ${String(next.result.error)}`);
    assert.equal(next.calls, 2, `${where}: the next turn made both of its model calls`);
    // What the turn added is on disk after what was there, and a fresh reader sees no new problem.
    const reread = await new ConversationStore(dir, () => 0).open(ID);
    assert.deepEqual(reread.problems, [], `${where}: a damaged line is reported once only`);
    assert.deepEqual(reread.log.slice(0, opened.log.length), opened.log, `${where}: the next turn's writes keep what was there`);
    assert.deepEqual(reread.log, [...conversation.log()], `${where}: what the window holds is what is on disk`);
    return { before: opened.log, after: reread.log };
  }

  /** The complete first turn's file, as lines without their newlines (the header first). */
  async function completedFirstTurn(variant: Variant): Promise<string[]> {
    const dir = await freshDir();
    const store = new ConversationStore(dir, () => 0);
    const conversation = conversationOver(store, [], variant);
    const first = await firstTurn(conversation);
    assert.equal(first.result.error, undefined, String(first.result.error));
    assert.deepEqual(first.refusals, []);
    assert.equal(
      conversation.log().some((r) => r.type === 'compaction'),
      variant.compacts,
      variant.compacts ? 'the first turn compacts between its steps' : 'the first turn does not compact',
    );
    const file = await fs.readFile(store.partFile(ID, 1), 'utf8');
    assert.ok(file.endsWith('\n'));
    const lines = file.slice(0, -1).split('\n');
    assert.equal(lines.length, conversation.log().length + 1, 'a header, then one line per record');
    return lines;
  }

  /** A fresh storage folder holding `content` as the conversation's file, byte for byte. */
  async function copyInto(content: string | Buffer): Promise<string> {
    const dir = await freshDir();
    await fs.mkdir(join(dir, 'conversations'));
    await fs.writeFile(join(dir, 'conversations', `${ID}.jsonl`), content);
    return dir;
  }

  const recordsOf = (lines: readonly string[]): LogRecord[] => lines.slice(1).map((line) => (JSON.parse(line) as { record: LogRecord }).record);

  for (const variant of VARIANTS) {
    describe(variant.name, () => {
      it('cut off after any line, the conversation keeps every line and its next request pairs every tool call with its result', async () => {
        const lines = await completedFirstTurn(variant);
        for (let k = 0; k <= lines.length; k++) {
          const where = `cut after line ${k} of ${lines.length}`;
          const dir = await copyInto(
            lines
              .slice(0, k)
              .map((line) => `${line}\n`)
              .join(''),
          );
          const { before } = await nextTurnSucceeds(dir, variant, where);
          assert.deepEqual(before, recordsOf(lines.slice(0, k)), `${where}: every complete line is a record of the reopened log`);
        }
      });

      it('with its last line torn anywhere, the conversation keeps every complete line, keeps the torn one aside, and continues', async () => {
        const lines = await completedFirstTurn(variant);
        let cases = 0;
        for (let k = 0; k < lines.length; k++) {
          const bytes = Buffer.from(lines[k]!, 'utf8');
          // Into the line, its middle, inside a character of several bytes, all but its last byte, all but its newline.
          const wide = bytes.findIndex((b) => b >= 0xc0);
          const cuts = new Set([1, Math.floor(bytes.length / 2), bytes.length - 1, bytes.length, ...(wide >= 0 ? [wide + 1] : [])]);
          for (const cut of cuts) {
            cases++;
            const where = `line ${k + 1} of ${lines.length} cut after ${cut} of its ${bytes.length} bytes`;
            const whole = lines
              .slice(0, k)
              .map((line) => `${line}\n`)
              .join('');
            // Bytes, not text: a cut inside a character stays a cut inside a character.
            const dir = await copyInto(Buffer.concat([Buffer.from(whole, 'utf8'), bytes.subarray(0, cut)]));
            const torn = cut < bytes.length;
            const opened = await new ConversationStore(dir, () => 0).open(ID);
            const complete = torn ? lines.slice(0, k) : lines.slice(0, k + 1);
            assert.deepEqual(opened.log, recordsOf(complete), `${where}: every complete line is a record of the reopened log`);
            if (torn) {
              assert.equal(opened.problems.length, 1, `${where}: the torn line is reported`);
              assert.match(opened.problems[0]!, new RegExp(`^Line ${k + 1} of conversation "${ID}" is incomplete`), where);
              const aside = (await fs.readFile(join(dir, 'conversations', `${ID}.damaged.jsonl`), 'utf8')).trim().split('\n');
              const kept = JSON.parse(aside.at(-1)!) as { line: number; text: string };
              assert.equal(kept.line, k + 1, `${where}: the torn line is kept aside with its number`);
              assert.equal(kept.text, bytes.subarray(0, cut).toString('utf8'), `${where}: the torn line is kept aside as it was`);
            } else {
              assert.deepEqual(opened.problems, [], `${where}: nothing is reported`);
            }
            await nextTurnSucceeds(dir, variant, where);
          }
        }
        assert.ok(cases >= lines.length * 3);
      });

      it('a full disk at any write of the turn, whole or torn, loses nothing that was written, and the reopened conversation continues', async () => {
        // A turn on a disk that never fills, to know its writes.
        const probeDir = await freshDir();
        const probe = new FullDiskStore(probeDir, () => 0);
        const probed = await firstTurn(conversationOver(probe, [], variant));
        assert.equal(probed.result.error, undefined);
        assert.ok(probe.writes >= (variant.compacts ? 6 : 5), `writes of the turn: ${probe.batchSizes.join(', ')}`);

        let cases = 0;
        for (let failAt = 1; failAt <= probe.writes; failAt++) {
          const size = probe.batchSizes[failAt - 1]!;
          for (let whole = 0; whole <= size; whole++) {
            for (const torn of whole < size ? [false, true] : [false]) {
              cases++;
              const where = `write ${failAt} of ${probe.writes} (${size} records) fails after ${whole} whole line(s)${torn ? ' and a torn one' : ''}`;
              const dir = await freshDir();
              const store = new FullDiskStore(dir, () => 0, { failAt, whole, torn });
              const conversation = conversationOver(store, [], variant);
              let failure: unknown;
              try {
                const first = await firstTurn(conversation);
                failure = first.result.error;
              } catch (error) {
                failure = error;
              }
              assert.ok(failure !== undefined, `${where}: the turn reports the failed write`);
              assert.match(
                String(failure instanceof Error ? `${failure.message} ${String(failure.cause)}` : failure),
                /ENOSPC/,
                `${where}: the failure says why`,
              );
              // The window holds only what was written; the disk holds it too, whatever the failed write left.
              const held = conversation.log();
              assert.deepEqual(store.landed.slice(0, held.length), [...held], `${where}: the window holds what reached the disk`);

              const opened = await new ConversationStore(dir, () => 0).open(ID);
              assert.deepEqual(opened.log, store.landed, `${where}: every record that reached the disk is read back`);
              assert.equal(opened.problems.length, torn ? 1 : 0, `${where}: ${opened.problems.join(' ')}`);
              if (torn) assert.match(opened.problems[0]!, /is incomplete/, where);
              await nextTurnSucceeds(dir, variant, where);
            }
          }
        }
        assert.ok(cases >= probe.writes * 2);
      });
    });
  }
});
