import assert from 'node:assert/strict';
import { EngineMemo } from '../../../src/core/engine-memo';
import { computeCompaction, type CompactionDeps, type CompactionRequest } from '../../../src/core/compaction';
import type { FileEvent } from '../../../src/core/file-ledger';
import { ledgerOf, modelView, undoLastStep, type LogRecord } from '../../../src/core/history';
import type { Message, ToolCallPart } from '../../../src/core/messages';
import { archivedItems, formatRecall, recall } from '../../../src/core/recall';
import { TOOL_NAMES } from '../../../src/core/tool-names';
import { createAgentTools } from '../../../src/llm/agent-tools';
import type { WorkspacePort } from '../../../src/llm/workspace-port';
import { assistant, config, estimatingCounter, FakeClock, idGenerator, RecordingSummarizer, toolResult, user } from './fixtures';

/**
 * The content a write call carries, stubbed once the call is older than the recent part a compaction
 * keeps: the model and the summarizer see one line saying what was written where, the log keeps the
 * original (recall finds it, undo brings it back), and a write whose file no longer holds it is left whole.
 */

// 30,000 tokens for the messages: the recent part is 10,500 tokens (35%), the kept part at most 15,000.
const WINDOW = { limit: 30_000, source: 'model' as const };
const PATH = 'src/retry.ts';
/** A module of 1,000 lines, about 13,000 tokens: larger than the recent part. */
const CONTENT = Array.from({ length: 1_000 }, (_, i) => `export const retryDelay${i} = backoff(${i}, { factor: 2 }); // step ${i}`).join('\n');

const file = (kind: FileEvent['kind'], path: string, extra: Partial<FileEvent> = {}): LogRecord => ({
  type: 'file',
  event: { kind, path, actor: 'agent', at: 1, ...extra },
});
const message = (m: Message): LogRecord => ({ type: 'message', message: m });

/** Steps after the write: reads of other files, about `tokens` tokens in all, ids starting with `prefix`. */
function reads(tokens: number, prefix = 'r'): LogRecord[] {
  const out: LogRecord[] = [];
  for (let i = 0; i * 1_500 < tokens; i++) {
    const id = `${prefix}${i}`;
    out.push(
      message(assistant(`${id}-a`, '', { callId: `${id}-c`, tool: TOOL_NAMES.readFile, input: { path: `src/${id}.ts` } })),
      message(toolResult(id, `${id}-c`, TOOL_NAMES.readFile, `${i}| ${'const x = 1;\n'.repeat(460)}`)),
    );
  }
  return out;
}

/**
 * A turn that writes `PATH` (its file event first, as the tool records it while it runs), then reads
 * about 9,000 tokens of other files; `between` comes right after the write, `result` is its result.
 */
function writingTurn(
  options: { between?: LogRecord[]; result?: string; input?: Record<string, unknown>; tool?: string; event?: LogRecord | null } = {},
): LogRecord[] {
  const tool = options.tool ?? TOOL_NAMES.createFile;
  const input = options.input ?? { path: PATH, content: CONTENT };
  return [
    message(user('u', 'Write the retry module, then read the callers.')),
    ...(options.event === null ? [] : [options.event ?? file(tool === TOOL_NAMES.createFile ? 'created' : 'modified', PATH)]),
    message(assistant('w-a', 'Writing the module.', { callId: 'w-c', tool, input })),
    message(toolResult('w', 'w-c', tool, options.result ?? `Created ${PATH} (1,000 lines).`)),
    ...(options.between ?? []),
    ...reads(9_000),
  ];
}

function compaction(log: readonly LogRecord[], over: Partial<CompactionRequest> = {}) {
  const summarizer = new RecordingSummarizer();
  const deps: CompactionDeps = {
    counter: estimatingCounter(),
    summarizer,
    clock: new FakeClock(),
    newId: idGenerator('step'),
    memo: new EngineMemo(),
  };
  const before = deps.counter.countMessages(modelView(log, deps.memo));
  const request: CompactionRequest = {
    log,
    reason: 'threshold',
    config: config((c) => ({ ...c, minMessages: 2 })),
    window: WINDOW,
    ledger: ledgerOf(log),
    // Pruning alone is enough when it frees 5,000 tokens.
    pruneTarget: before - 5_000,
    ...over,
  };
  return { summarizer, deps, before, run: () => computeCompaction(request, deps) };
}

const callOf = (view: readonly Message[]): ToolCallPart => {
  const part = view.find((m) => m.id === 'w-a')?.content.find((p) => p.type === 'tool-call');
  assert.ok(part?.type === 'tool-call', 'the write call is in the view');
  return part;
};

const STUB =
  /^\[Pruned by Longrun: this create_file call wrote 1,000 lines \([\d,]+ tokens\) to "src\/retry\.ts"; the file holds them\. Read the file for its current content, or call recall with query "w-c" for this call as written\.\]$/;

/** The tools' own input schemas: a stubbed call must still be one the tool accepts. */
const tools = createAgentTools({} as WorkspacePort, { readOnly: false });
const accepts = (toolName: string, input: unknown): boolean =>
  (tools[toolName]!.inputSchema as unknown as { safeParse(v: unknown): { success: boolean } }).safeParse(input).success;

describe('written content: the input of a write older than the kept tail, stubbed', () => {
  it('replaces what a create_file call wrote by a one-line stub, path kept, in the view the model is sent; the log keeps the original', async () => {
    const log = writingTurn();
    const { run, before, summarizer } = compaction(log);
    const outcome = await run();
    assert.equal(outcome.status, 'compacted');
    if (outcome.status !== 'compacted') return;
    assert.equal(summarizer.requests.length, 0, 'pruning alone was enough');
    assert.deepEqual(
      outcome.compaction.pruning?.outputs.map((o) => `${o.messageId}:${o.kind}`),
      ['w-a:written'],
    );
    const input = callOf(outcome.compaction.view).input as Record<string, unknown>;
    assert.equal(input.path, PATH);
    assert.match(String(input.content), STUB);
    assert.ok(accepts(TOOL_NAMES.createFile, input), 'still an input create_file accepts');
    assert.ok(outcome.compaction.tokensAfter < before - 10_000, `${before} → ${outcome.compaction.tokensAfter}`);
    // Only a record is added: the message in the log is the original.
    assert.deepEqual(
      outcome.compaction.records.map((r) => r.type),
      ['pruning'],
    );
    assert.equal((callOf(modelView(log, new EngineMemo())).input as { content: string }).content, CONTENT);
  });

  it('gives the original back to recall, by the call id and by the path, and undoes like any pruning', async () => {
    const log = writingTurn();
    const outcome = await compaction(log).run();
    assert.ok(outcome.status === 'compacted');
    const after = [...log, ...outcome.compaction.records];
    assert.equal(archivedItems(after).find((item) => item.messageId === 'w-a')?.archivedBy, 'pruning', 'the write call is archived by its stub');
    const counter = estimatingCounter();
    for (const query of [
      { query: 'w-c', maxTokens: 20_000 },
      { path: PATH, maxTokens: 20_000 },
    ]) {
      const found = formatRecall(recall(archivedItems(after), query, (t) => counter.countText(t)));
      assert.ok(found.includes('export const retryDelay999 = backoff(999'), `recall ${JSON.stringify(query)} gives the content written`);
    }
    const undo = undoLastStep(after, 2);
    assert.ok(!('error' in undo));
    const undone = modelView([...after, ...undo.records], new EngineMemo());
    assert.equal((callOf(undone).input as { content: string }).content, CONTENT, 'undone, the content is back');
  });

  it('is what a summary reads when one is made', async () => {
    // More steps after the write than the recent part holds: a summary replaces it.
    const { run, summarizer } = compaction(writingTurn({ between: reads(6_000, 'more') }), { reason: 'manual' });
    const outcome = await run();
    assert.ok(outcome.status === 'compacted' && outcome.compaction.entry);
    const sent = summarizer.requests[0]!.messages.map((m) => m.content).join('\n');
    assert.match(sent, /this create_file call wrote 1,000 lines/);
    assert.ok(!sent.includes('retryDelay500'), 'the content written is not sent to the summarizer');
  });

  it('stubs what an edit_file call wrote as one replacement whose new text is the stub', async () => {
    const edits = [
      { oldText: 'export const retries = 3;', newText: CONTENT },
      { oldText: 'export const jitter = 0;', newText: 'export const jitter = 0.1;' },
    ];
    const outcome = await compaction(
      writingTurn({ tool: TOOL_NAMES.editFile, input: { path: PATH, edits }, result: `Edited ${PATH}: 2 replacements applied.` }),
    ).run();
    assert.ok(outcome.status === 'compacted');
    const input = callOf(outcome.compaction.view).input as { path: string; edits: Array<{ oldText: string; newText: string }> };
    assert.equal(input.path, PATH);
    assert.equal(input.edits.length, 1);
    assert.match(
      input.edits[0]!.newText,
      /^\[Pruned by Longrun: this edit_file call made 2 replacements \([\d,]+ tokens\) in "src\/retry\.ts"; the file holds them\./,
    );
    assert.ok(accepts(TOOL_NAMES.editFile, input), 'still an input edit_file accepts');
  });

  it('leaves a write in the recent part whole', async () => {
    // The same write, last in the turn: it lies in the recent 10,500 tokens.
    const small = Array.from({ length: 300 }, (_, i) => `export const retryDelay${i} = backoff(${i});`).join('\n');
    const log: LogRecord[] = [
      ...writingTurn().slice(4),
      file('created', 'src/late.ts'),
      message(assistant('w-a', '', { callId: 'w-c', tool: TOOL_NAMES.createFile, input: { path: 'src/late.ts', content: small } })),
      message(toolResult('w', 'w-c', TOOL_NAMES.createFile, 'Created src/late.ts (300 lines).')),
    ];
    const outcome = await compaction([message(user('u', 'go')), ...log], { pruneTarget: 1_000 }).run();
    assert.ok(outcome.status === 'compacted');
    assert.equal(outcome.compaction.pruning?.outputs.some((o) => o.kind === 'written') ?? false, false);
    assert.equal((callOf(outcome.compaction.view).input as { content: string }).content, small);
  });

  it('never stubs a write whose file is gone, renamed or reverted since, one that failed, or one no file event recorded', async () => {
    const cases: Array<[string, Parameters<typeof writingTurn>[0], boolean]> = [
      ['stubbed when nothing happened since', {}, true],
      ['stubbed after the user edited the file', { between: [file('modified', PATH, { actor: 'user' })] }, true],
      ['stubbed when a revert came before the write', { event: file('created', PATH), between: [] }, true],
      ['deleted since', { between: [file('deleted', PATH, { actor: 'user' })] }, false],
      ['renamed since', { between: [file('renamed', 'src/backoff.ts', { actor: 'user', from: PATH })] }, false],
      ['reverted since', { between: [file('modified', PATH, { actor: 'user', revert: true })] }, false],
      ['reverted since (the file Longrun created deleted)', { between: [file('deleted', PATH, { actor: 'user', revert: true })] }, false],
      ['failed', { result: `Error: ${PATH} already exists. Use edit_file to change it.` }, false],
      ['recorded by no file event', { event: null }, false],
    ];
    for (const [what, options, stubbed] of cases) {
      const turn = writingTurn(options);
      // A revert recorded before the write: the write made the file anew after it.
      const log = what.includes('before the write') ? [file('deleted', PATH, { actor: 'user', revert: true }), ...turn] : turn;
      const outcome = await compaction(log).run();
      const written = outcome.status === 'compacted' && (outcome.compaction.pruning?.outputs.some((o) => o.kind === 'written') ?? false);
      assert.equal(written, stubbed, what);
      if (!stubbed && outcome.status === 'compacted' && outcome.compaction.view.some((m) => m.id === 'w-a')) {
        assert.equal((callOf(outcome.compaction.view).input as { content: string }).content, CONTENT, `${what}: whole in the view`);
      }
    }
  });
});
