import assert from 'node:assert/strict';
import { accessSync, constants, promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { DEFAULT_CONFIG, type CompactionConfig } from '../../../src/core/config';
import { activeEntries, allMessages, SUMMARY_PREFIX, type LogRecord } from '../../../src/core/history';
import { MessageTokenCounter } from '../../../src/core/message-tokens';
import type { Message, Part } from '../../../src/core/messages';
import type { Summarizer, SummaryRequest } from '../../../src/core/ports';
import { charEstimator } from '../../../src/core/tokenizer';
import type { Conversation } from '../../../src/app/conversation/conversation';
import { ConversationStore } from '../../../src/app/store/conversation-store';
import { FakeClock, templateSummary } from '../core/fixtures';
import { memoryIndex, newConversation } from '../fixtures/conversation-deps';

/**
 * Random sessions over the real conversation and its store in a temp folder: turns (some with tool
 * calls, some whose text starts like a summary), tool steps cut short, crashes and reloads (some
 * tearing the last line), manual compactions (some while a turn is being written) and undos. After
 * every operation the model's view must be one a provider accepts, nothing durably written may be
 * missing, and only a compaction may put a summary in front of the model.
 */

const ID = 'conv';
/** Operations in all, at least. */
const OPERATIONS = 100_000;
const MAX_OPS_PER_SESSION = 40;
/** Sessions running side by side, and how many each runs before the count is checked again. */
const LANES = 4;
const SESSIONS_PER_LANE = 250;

/** A memory-backed folder where there is one: the sessions write and sync over 100,000 times. */
const BASE = writable('/dev/shm') ? '/dev/shm' : tmpdir();

function writable(dir: string): boolean {
  try {
    accessSync(dir, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

interface Body {
  readonly length: number;
  /** The text starts with the summary prefix, as a user quoting a summary or a model echoing one might. */
  readonly prefixed: boolean;
}
type Reply =
  | { readonly kind: 'none' }
  | { readonly kind: 'text'; readonly body: Body }
  | { readonly kind: 'tools'; readonly body: Body; readonly calls: number; readonly resultPerMessage: boolean; readonly answer: Body | null };
interface TurnShape {
  readonly user: Body;
  readonly reply: Reply;
}
/** A crash: the window is gone; `tear` (0 to 1) places a cut in the file's last line, or no cut. */
interface CrashShape {
  readonly tear: number | null;
}
type Op =
  | { readonly kind: 'turn'; readonly turn: TurnShape }
  | { readonly kind: 'interrupted'; readonly body: Body; readonly calls: number; readonly crash: CrashShape | null }
  | { readonly kind: 'reload'; readonly crash: CrashShape }
  | { readonly kind: 'compact' }
  | { readonly kind: 'compact-during'; readonly turn: TurnShape; readonly hops: number }
  | { readonly kind: 'undo' };

const bodyArb: fc.Arbitrary<Body> = fc.record({
  length: fc.integer({ min: 1, max: 500 }),
  // About one text in twelve starts like a summary.
  prefixed: fc.integer({ min: 0, max: 99 }).map((n) => n < 8),
});
const replyArb: fc.Arbitrary<Reply> = fc.oneof(
  { weight: 1, arbitrary: fc.constant({ kind: 'none' as const }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('text' as const), body: bodyArb }) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('tools' as const),
      body: bodyArb,
      calls: fc.integer({ min: 1, max: 3 }),
      resultPerMessage: fc.boolean(),
      answer: fc.option(bodyArb, { freq: 2 }),
    }),
  },
);
const turnArb: fc.Arbitrary<TurnShape> = fc.record({ user: bodyArb, reply: replyArb });
const crashArb: fc.Arbitrary<CrashShape> = fc.record({
  tear: fc.option(
    fc.nat({ max: 9_999 }).map((n) => n / 10_000),
    { freq: 2 },
  ),
});
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 40, arbitrary: fc.record({ kind: fc.constant('turn' as const), turn: turnArb }) },
  {
    weight: 7,
    arbitrary: fc.record({
      kind: fc.constant('interrupted' as const),
      body: bodyArb,
      calls: fc.integer({ min: 1, max: 3 }),
      crash: fc.option(crashArb, { freq: 2 }),
    }),
  },
  { weight: 10, arbitrary: fc.record({ kind: fc.constant('reload' as const), crash: crashArb }) },
  { weight: 12, arbitrary: fc.constant({ kind: 'compact' as const }) },
  { weight: 8, arbitrary: fc.record({ kind: fc.constant('compact-during' as const), turn: turnArb, hops: fc.integer({ min: 0, max: 4 }) }) },
  { weight: 7, arbitrary: fc.constant({ kind: 'undo' as const }) },
);

const CONFIG: CompactionConfig = {
  ...DEFAULT_CONFIG,
  minMessages: 2,
  keepRecent: { ...DEFAULT_CONFIG.keepRecent, mode: 'messages', messages: 4 },
};
const SUMMARY_MARK = 'FAKE-SUMMARY';
const PREVIOUS = 'Previous summary of the conversation:';

const textOf = (message: Message): string => message.content.map((p) => (p.type === 'text' ? p.text : '')).join('');
const startsLikeSummary = (message: Message): boolean => message.content.some((p) => p.type === 'text' && p.text.startsWith(SUMMARY_PREFIX));

/** Whether a line of the file is a stored record (not the header, not a damaged line). */
function isRecordLine(line: string): boolean {
  try {
    const value: unknown = JSON.parse(line);
    return typeof value === 'object' && value !== null && 'record' in value;
  } catch {
    return false;
  }
}

/** Why a provider would refuse this view's tool traffic, or undefined when it is valid. */
function pairingProblem(view: readonly Message[]): string | undefined {
  let open = new Set<string>();
  for (const [index, message] of view.entries()) {
    if (message.role === 'tool') {
      for (const part of message.content) {
        if (part.type === 'tool-result' && !open.delete(part.toolCallId))
          return `message ${index} (${message.id}) answers ${part.toolCallId}, which the assistant message before it did not call`;
      }
      continue;
    }
    if (open.size > 0) return `message ${index} (${message.id}, ${message.role}) comes before the results of ${[...open].join(', ')}`;
    open = new Set();
    if (message.role === 'assistant') for (const part of message.content) if (part.type === 'tool-call') open.add(part.toolCallId);
  }
  return open.size > 0 ? `the view ends before the results of ${[...open].join(', ')}` : undefined;
}

/** One session: the folder, the window's conversation, and what the test knows was written. */
class Session {
  private seq = 0;
  private entries = 0;
  private readonly clock = new FakeClock();
  /** The workspace state: it survives a reload of the window. */
  private readonly state = new Map<string, unknown>();
  store: ConversationStore;
  conversation: Conversation;
  /** Every message whose append completed, by id. */
  readonly appended = new Map<string, Message>();
  /** Messages a torn write took, legitimately: each was the file's last line. */
  readonly lost = new Set<string>();
  /** Damaged lines the store has reported, by line number and text. */
  private readonly reported = new Set<string>();
  /** Summarizer requests of the current operation. */
  readonly requests: SummaryRequest[] = [];
  /** setImmediate hops the summarizer waits, so an append can land while it works. */
  hops = 1;
  readonly trace: string[] = [];

  private readonly summarizer: Summarizer = {
    name: 'fake',
    summarize: async (request) => {
      this.requests.push(request);
      for (let i = 0; i < this.hops; i++) await new Promise((resolve) => setImmediate(resolve));
      return { text: templateSummary(`${SUMMARY_MARK} of ${request.messages.length} messages, made by the fake summarizer.`) };
    },
  };

  constructor(
    readonly dir: string,
    /** How often each event worth testing happened, over all sessions. */
    private readonly tally: Map<string, number>,
  ) {
    this.store = new ConversationStore(dir, () => this.clock.now());
    this.conversation = this.open([]);
  }

  private open(log: readonly LogRecord[]): Conversation {
    const counter = new MessageTokenCounter(charEstimator);
    return newConversation({
      id: ID,
      log,
      store: this.store,
      index: memoryIndex(this.state),
      clock: this.clock,
      newId: () => `entry${++this.entries}`,
      config: CONFIG,
      model: { name: 'fake', limit: 32_000, counter },
      summarizer: this.summarizer,
    });
  }

  file(): string {
    return this.store.partFile(ID, 1);
  }

  private note(event: string): void {
    this.tally.set(event, (this.tally.get(event) ?? 0) + 1);
  }

  private text(body: Body): Part[] {
    const id = this.seq;
    if (body.prefixed) this.note('text starting like a summary');
    const filler = ` wörds of message ${id} ✓`.repeat(Math.ceil(body.length / 24)).slice(0, body.length);
    return [{ type: 'text', text: body.prefixed ? `${SUMMARY_PREFIX}\n\n${filler}` : filler }];
  }

  private message(role: Message['role'], content: Part[]): Message {
    return { id: `m${++this.seq}`, role, content };
  }

  private assistantWithCalls(body: Body, calls: number): Message {
    const parts = this.text(body);
    for (let k = 0; k < calls; k++)
      parts.push({ type: 'tool-call', toolCallId: `call${this.seq}-${k}`, toolName: 'read_file', input: { path: `src/f${k}.ts` } });
    return this.message('assistant', parts);
  }

  async append(messages: readonly Message[]): Promise<void> {
    await this.conversation.append(messages.map((message) => ({ type: 'message', message })));
    for (const message of messages) this.appended.set(message.id, message);
  }

  async turn(shape: TurnShape): Promise<void> {
    await this.append([this.message('user', this.text(shape.user))]);
    const reply = shape.reply;
    if (reply.kind === 'text') await this.append([this.message('assistant', this.text(reply.body))]);
    if (reply.kind !== 'tools') return;
    const call = this.assistantWithCalls(reply.body, reply.calls);
    const results = call.content.flatMap((p): Part[] =>
      p.type === 'tool-call'
        ? [{ type: 'tool-result', toolCallId: p.toolCallId, toolName: p.toolName, output: `contents of ${JSON.stringify(p.input)}` }]
        : [],
    );
    const tools = reply.resultPerMessage ? results.map((r) => this.message('tool', [r])) : [this.message('tool', results)];
    // The step and its results in one write, as the agent loop writes them.
    await this.append([call, ...tools]);
    if (reply.answer) await this.append([this.message('assistant', this.text(reply.answer))]);
  }

  /** A tool step whose results never came: its calls are written, then nothing. */
  async interrupted(body: Body, calls: number): Promise<void> {
    await this.append([this.assistantWithCalls(body, calls)]);
  }

  /**
   * The window closes (or crashes) and opens the conversation again from disk. A tear cuts the file's
   * last line, as a write cut off by a crash would: that line alone may be lost.
   */
  async reload(crash: CrashShape): Promise<void> {
    const before = [...(await this.conversation.wholeLog())];
    const viewBefore = this.conversation.view();
    let expected = before;
    let problems = 0;
    const bytes = await fs.readFile(this.file()).catch(() => undefined);
    // Only a file whose last write completed has a last line to tear.
    if (crash.tear !== null && bytes !== undefined && bytes.length > 0 && bytes[bytes.length - 1] === 0x0a) {
      const lineEnd = bytes.length - 1;
      const lineStart = bytes.lastIndexOf(0x0a, lineEnd - 1) + 1;
      const cut = lineStart + Math.floor(crash.tear * (lineEnd - lineStart + 1));
      // The last line is the last record's, or the header, or a line torn earlier that a later
      // write ended with its newline before its own line was cut away.
      const isRecord = isRecordLine(bytes.subarray(lineStart, lineEnd).toString('utf8'));
      await fs.truncate(this.file(), cut);
      this.trace.push(`  tear: ${isRecord ? 'record' : 'other'} line of ${lineEnd - lineStart} bytes cut after ${cut - lineStart}`);
      if (isRecord && cut < lineEnd) {
        expected = before.slice(0, -1);
        const last = before.at(-1)!;
        if (last.type === 'message') this.lost.add(last.message.id);
        if (cut === lineStart) this.note('torn line lost whole');
      }
      if (cut > lineStart && cut < lineEnd) {
        // Reported unless the same text was reported at the same line before: a damaged line is reported once.
        const line = bytes.subarray(0, lineStart).filter((b) => b === 0x0a).length + 1;
        const key = `${line}\n${bytes.subarray(lineStart, cut).toString('utf8')}`;
        if (!this.reported.has(key)) {
          this.reported.add(key);
          problems = 1;
          this.note('torn line reported');
        }
      }
    }
    this.store = new ConversationStore(this.dir, () => this.clock.now());
    const opened = await this.store.open(ID);
    assert.equal(opened.problems.length, problems, `problems reported on reopening: ${opened.problems.join(' | ')}`);
    assert.deepEqual(opened.log, expected, 'the reopened log is what was written, less at most a torn last line');
    this.conversation = this.open(opened.log);
    if (expected === before) assert.deepEqual(this.conversation.view(), viewBefore, 'the view after a reload is the view before it');
  }

  async compact(): Promise<void> {
    const hadStep = this.conversation.lastStep();
    const outcome = await this.conversation.compact('manual');
    assert.ok(
      outcome.status === 'compacted' || outcome.status === 'noop',
      `a manual compaction ${outcome.status}: ${'reason' in outcome ? outcome.reason : ''}`,
    );
    this.trace.push(`  ${outcome.status}`);
    if (outcome.status === 'compacted') this.note('compacted');
    if (outcome.status === 'compacted') assert.notDeepEqual(this.conversation.lastStep(), hadStep);
  }

  async compactDuring(turn: TurnShape, hops: number): Promise<void> {
    this.hops = hops;
    const snapshot = this.conversation.log().length;
    const compacting = this.conversation.compact('manual');
    const appending = this.turn(turn);
    const [outcome] = await Promise.all([compacting, appending]);
    this.hops = 1;
    assert.ok(
      outcome.status === 'compacted' || outcome.status === 'noop',
      `a manual compaction during a turn ${outcome.status}: ${'reason' in outcome ? outcome.reason : ''}`,
    );
    this.trace.push(`  ${outcome.status}`);
    if (outcome.status === 'compacted') {
      const entry = (outcome.compaction.entry ?? outcome.compaction.pruning)?.id;
      const at = this.conversation.log().findIndex((r) => (r.type === 'compaction' || r.type === 'pruning') && r.entry.id === entry);
      // Part of the turn was written after the compaction's snapshot and before its record.
      if (at > snapshot) this.note('compacted while a turn was written');
    }
  }

  async undo(): Promise<void> {
    const last = this.conversation.lastStep();
    const undone = await this.conversation.undo();
    assert.equal(undone.ok, last !== undefined, `undo: ${undone.ok ? 'done' : undone.reason}`);
    if (undone.ok) this.note('undone');
    if (undone.ok) assert.notDeepEqual(this.conversation.lastStep(), last);
  }

  async run(op: Op): Promise<void> {
    this.requests.length = 0;
    switch (op.kind) {
      case 'turn':
        return this.turn(op.turn);
      case 'interrupted':
        await this.interrupted(op.body, op.calls);
        if (op.crash) {
          this.note('crash after an interrupted step');
          await this.reload(op.crash);
        }
        return;
      case 'reload':
        return this.reload(op.crash);
      case 'compact':
        return this.compact();
      case 'compact-during':
        return this.compactDuring(op.turn, op.hops);
      case 'undo':
        return this.undo();
    }
  }

  /** What must hold after every operation. */
  async check(): Promise<void> {
    // Messages a compaction took out are held without their content: they are compared as on disk.
    const log = await this.conversation.wholeLog();
    const view = this.conversation.view();

    const problem = pairingProblem(view);
    assert.equal(problem, undefined, `the view's tool traffic: ${problem}`);
    assert.equal(new Set(view.map((m) => m.id)).size, view.length, 'no message twice in the view');

    const entries = activeEntries(log);
    const summaries = view.filter((m) => m.summaryOf !== undefined);
    assert.equal(summaries.length, entries.length > 0 ? 1 : 0, 'one summary in the view exactly when a compaction is in force');
    if (summaries.length === 1) {
      assert.equal(summaries[0]!.summaryOf, entries.at(-1)!.id, 'the summary is that of the compaction in force');
      assert.ok(textOf(summaries[0]!).includes(SUMMARY_MARK), "the summary is the summarizer's");
      // These sessions have no system messages to keep in front: the summary leads the view, and
      // what was appended while it was computed follows it.
      assert.equal(view[0]!.summaryOf, entries.at(-1)!.id, `the summary comes first in the view, not after ${view[0]!.id}`);
    }

    // Everything in the view besides the summary and interrupted results is a message appended as it was.
    for (const message of view) {
      if (message.summaryOf !== undefined || message.id.startsWith('interrupted:')) continue;
      const appended = this.appended.get(message.id);
      if (message !== appended) assert.deepEqual(message, appended, `view message ${message.id} is one appended, unchanged`);
    }

    // Nothing durably appended is missing: from the log ever, from the view unless a compaction took it.
    const inLog = new Map(allMessages(log).map((m) => [m.id, m] as const));
    const removed = new Set(entries.flatMap((e) => e.compactedMessageIds));
    const inView = new Set(view.map((m) => m.id));
    for (const [id, message] of this.appended) {
      if (this.lost.has(id)) continue;
      const logged = inLog.get(id);
      if (logged !== message) {
        assert.deepEqual(
          logged,
          message,
          `appended message ${id}${startsLikeSummary(message) ? ', which starts like a summary,' : ''} is in the log`,
        );
        // Read back from disk and equal: later checks compare by identity.
        this.appended.set(id, logged);
      }
      if (!removed.has(id))
        assert.ok(
          inView.has(id),
          `appended message ${id}${startsLikeSummary(message) ? ', which starts like a summary,' : ''} is in the view: no compaction took it`,
        );
    }

    // A text that starts like a summary never stands in for one when summarizing either.
    for (const request of this.requests) {
      const previous = request.messages.filter((m) => m.role === 'system' && m.content.startsWith(PREVIOUS));
      assert.ok(previous.length <= 1, 'at most one previous summary in a summary request');
      for (const p of previous)
        assert.ok(p.content.includes(SUMMARY_MARK), `the previous summary handed to the summarizer is a real one: ${p.content.slice(0, 160)}`);
    }
  }
}

function describeOp(op: Op): string {
  const body = (b: Body) => `${b.length}${b.prefixed ? ' prefixed' : ''}`;
  const turn = (t: TurnShape) =>
    `user ${body(t.user)}, reply ${t.reply.kind === 'none' ? 'none' : t.reply.kind === 'text' ? body(t.reply.body) : `${t.reply.calls} call(s) ${body(t.reply.body)}${t.reply.answer ? `, answer ${body(t.reply.answer)}` : ''}`}`;
  switch (op.kind) {
    case 'turn':
      return `turn (${turn(op.turn)})`;
    case 'interrupted':
      return `interrupted step (${op.calls} call(s) ${body(op.body)})${op.crash ? `, crash${op.crash.tear !== null ? ' tearing' : ''}` : ''}`;
    case 'reload':
      return `reload${op.crash.tear !== null ? ' tearing the last line' : ''}`;
    case 'compact':
      return 'compact';
    case 'compact-during':
      return `compact during a turn (${turn(op.turn)}, ${op.hops} hops)`;
    case 'undo':
      return 'undo';
  }
}

describe('conversation: random sessions of turns, crashes, reloads, compactions and undos', () => {
  it('keeps a view every provider accepts, loses only a torn last line, and takes no text for a summary', async function () {
    this.timeout(300_000);
    const tally = new Map<string, number>();
    let operations = 0;
    // Once a session failed, the sessions beside it stop: its report, once shrunk, is what matters.
    let failedIn: number | undefined;
    const property = (lane: number) =>
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: MAX_OPS_PER_SESSION }), async (ops) => {
        if (failedIn !== undefined && failedIn !== lane) return;
        const dir = await fs.mkdtemp(join(BASE, 'longrun-property-'));
        const session = new Session(dir, tally);
        try {
          for (const [index, op] of ops.entries()) {
            session.trace.push(`${index}: ${describeOp(op)}`);
            try {
              await session.run(op);
              await session.check();
            } catch (error) {
              failedIn = lane;
              const message = error instanceof Error ? error.message : String(error);
              throw new Error(`after operation ${index}, ${describeOp(op)}: ${message}\n${session.trace.join('\n')}`, { cause: error });
            }
            operations++;
          }
        } finally {
          await fs.rm(dir, { recursive: true, force: true });
        }
      });
    // Sessions run side by side: each spends most of its time waiting for the file system.
    while (operations < OPERATIONS) {
      await Promise.all(Array.from({ length: LANES }, (_, lane) => fc.assert(property(lane), { numRuns: SESSIONS_PER_LANE })));
    }
    // The sessions did what this test is about, often.
    for (const event of [
      'compacted',
      'compacted while a turn was written',
      'undone',
      'torn line reported',
      'torn line lost whole',
      'crash after an interrupted step',
      'text starting like a summary',
    ]) {
      assert.ok((tally.get(event) ?? 0) >= 100, `${event}: ${tally.get(event) ?? 0} times`);
    }
  });
});
