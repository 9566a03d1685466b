import assert from 'node:assert/strict';
import { EngineMemo } from '../../../src/core/engine-memo';
import { applyCompaction, computeCompaction, type CompactionDeps, type CompactionRequest } from '../../../src/core/compaction';
import { EMPTY_LEDGER } from '../../../src/core/file-ledger';
import { activePrunings, currentBasis, modelView, undoLastStep, type LogRecord } from '../../../src/core/history';
import { stringifyOutput, type Message, type ToolResultPart } from '../../../src/core/messages';
import { MIN_TRUNCATED_TOKENS, prunedKey, pruningCandidates, truncationCandidates, type PruningOptions } from '../../../src/core/pruning';
import { asLog, assistant, config, estimatingCounter, FakeClock, idGenerator, RecordingSummarizer, sys, toolResult, user } from './fixtures';

const counter = estimatingCounter();

function options(over: Partial<PruningOptions> = {}): PruningOptions {
  return {
    oldMessageIds: new Set(),
    largeOutputTokens: 1_000,
    alreadyPruned: new Set(),
    countOutput: (_message: Message, part: ToolResultPart) => counter.countText(stringifyOutput(part.output)),
    countStub: (_part, _key, stub) => counter.countText(stub),
    memo: new EngineMemo(),
    ...over,
  };
}

/** A tool call and its result: `[assistant message, tool message]`, ids `<id>-a` and `<id>`. */
function call(id: string, tool: string, input: unknown, output: string, isError = false): Message[] {
  return [assistant(`${id}-a`, '', { callId: `${id}-c`, tool, input }), toolResult(id, `${id}-c`, tool, output, isError)];
}

const big = (letter: string, chars = 4_000): string => letter.repeat(chars);

const candidatesOf = (view: readonly Message[], over: Partial<PruningOptions> = {}) =>
  pruningCandidates(view, options(over)).map((c) => `${c.output.messageId}:${c.output.kind}`);

describe('pruning: which tool outputs are superseded or old', () => {
  it('never prunes the latest plan, however old and large, and prunes each earlier one as superseded by it', () => {
    const steps = (n: number) => ({
      steps: Array.from({ length: 40 }, (_, i) => ({ step: `step ${i} ${'x'.repeat(60)}`, status: i < n ? 'done' : 'pending' })),
    });
    const view = [
      user('u', 'go'),
      ...call('p1', 'plan', steps(1), big('p')),
      ...call('p2', 'plan', steps(2), big('q')),
      ...call('bad', 'plan', { steps: 'oops' }, 'Error: The plan must be an object.'),
      ...call('r1', 'read_file', { path: 'a.ts' }, big('a')),
    ];
    const old = new Set(['p1', 'p2', 'r1']);
    assert.deepEqual(candidatesOf(view, { oldMessageIds: old }), ['p1:duplicate', 'r1:old']);
    const cut = truncationCandidates(view, {
      excess: 10_000,
      exclude: new Set(),
      countOutput: options().countOutput,
      countStub: options().countStub,
      memo: new EngineMemo(),
    });
    assert.deepEqual(cut.map((c) => c.output.messageId).sort(), ['p1', 'r1']);
  });

  it('prunes an older read of a file that was read again, never the latest read', () => {
    const view = [
      user('u', 'look at a.ts'),
      ...call('r1', 'read_file', { path: 'src/a.ts' }, big('a')),
      ...call('r2', 'read_file', { path: './src//a.ts' }, big('b')),
    ];
    assert.deepEqual(candidatesOf(view), ['r1:duplicate']);
  });

  it('supersedes a read of some lines by a later read that covers them, not by a read of other lines', () => {
    const view = [
      user('u', 'read'),
      ...call('r1', 'read_file', { path: 'a.ts', startLine: 1, endLine: 50 }, big('a')),
      ...call('r2', 'read_file', { path: 'a.ts', startLine: 60, endLine: 100 }, big('b')),
      ...call('r3', 'read_file', { path: 'a.ts', startLine: 40 }, big('c')),
    ];
    assert.deepEqual(candidatesOf(view), ['r2:duplicate']);
  });

  it('prunes a read made stale by a later edit or creation of the file; a failed edit changes nothing', () => {
    const view = [
      user('u', 'fix'),
      ...call('r1', 'read_file', { path: 'a.ts' }, big('a')),
      ...call('e1', 'edit_file', { path: 'a.ts', edits: [{ oldText: 'x', newText: 'y' }] }, 'Edited a.ts: 1 replacement applied.'),
      ...call('r2', 'read_file', { path: 'b.ts' }, big('b')),
      ...call('e2', 'edit_file', { path: 'b.ts', edits: [{ oldText: 'x', newText: 'y' }] }, 'Error: oldText not found in b.ts.'),
      ...call('r3', 'read_file', { path: 'c.ts' }, big('c')),
      ...call('w3', 'create_file', { path: 'c.ts', content: 'new' }, 'Created c.ts (1 line).'),
    ];
    assert.deepEqual(candidatesOf(view), ['r1:stale', 'r3:stale']);
  });

  it('supersedes a listing or a search run again with the same arguments, in any key order or spacing, not one with others', () => {
    const view = [
      user('u', 'find'),
      ...call('l1', 'list_files', { glob: '**/*.ts' }, big('l', 1_000)),
      ...call('s1', 'search_text', { query: 'foo', glob: 'src/**' }, big('s', 1_000)),
      ...call('s2', 'search_text', { query: 'bar', glob: 'src/**' }, big('t', 1_000)),
      ...call('l2', 'list_files', { glob: '**/*.ts' }, big('m', 1_000)),
      ...call('s3', 'search_text', { glob: 'src/**', query: ' foo ' }, big('u', 1_000)),
    ];
    assert.deepEqual(candidatesOf(view), ['l1:duplicate', 's1:duplicate']);
  });

  it('deduplicates a tool of any name by its arguments, and only by a later call that succeeded', () => {
    const view = [
      user('u', 'fetch'),
      ...call('f1', 'vscode_fetchWebPage', { urls: ['https://example.com'] }, big('f', 1_000)),
      ...call('f2', 'vscode_fetchWebPage', { urls: ['https://example.com'] }, big('g', 1_000)),
      ...call('f3', 'vscode_fetchWebPage', { urls: ['https://example.com'] }, 'Error: offline', true),
    ];
    assert.deepEqual(candidatesOf(view), ['f1:duplicate']);
  });

  it('prunes old outputs only in the part a summary would replace, and only from largeOutputTokens on', () => {
    const view = [
      user('u', 'run'),
      ...call('o1', 'run_command', { command: 'npm test' }, big('o', 8_000)),
      ...call('o2', 'run_command', { command: 'npm run lint' }, big('p', 2_000)),
      ...call('o3', 'run_command', { command: 'npm run build' }, big('q', 8_000)),
    ];
    const oldMessageIds = new Set(['u', 'o1-a', 'o1', 'o2-a', 'o2']);
    assert.deepEqual(candidatesOf(view, { oldMessageIds }), ['o1:old']);
    assert.deepEqual(candidatesOf(view, { oldMessageIds, largeOutputTokens: 400 }), ['o1:old', 'o2:old']);
  });

  it('orders the candidates: duplicates, then stale reads, then old large outputs, oldest first within each', () => {
    const view = [
      user('u', 'work'),
      ...call('old', 'run_command', { command: 'make' }, big('o', 8_000)),
      ...call('stale', 'read_file', { path: 'b.ts' }, big('b')),
      ...call('dup1', 'read_file', { path: 'a.ts' }, big('a')),
      ...call('dup2', 'list_files', { glob: '*' }, big('l')),
      ...call('edit', 'edit_file', { path: 'b.ts', edits: [] }, 'Edited b.ts: 1 replacement applied.'),
      ...call('again1', 'read_file', { path: 'a.ts' }, big('c')),
      ...call('again2', 'list_files', { glob: '*' }, big('m')),
    ];
    const oldMessageIds = new Set(view.slice(0, 7).map((m) => m.id));
    assert.deepEqual(candidatesOf(view, { oldMessageIds }), ['dup1:duplicate', 'dup2:duplicate', 'stale:stale', 'old:old']);
  });

  it('leaves alone an output already pruned, and one whose stub would free almost nothing', () => {
    const view = [
      user('u', 'read'),
      ...call('r1', 'read_file', { path: 'a.ts' }, big('a')),
      ...call('r2', 'read_file', { path: 'a.ts' }, big('b')),
      ...call('r3', 'read_file', { path: 'a.ts' }, 'a.ts: empty file (0 lines)'),
      ...call('r4', 'read_file', { path: 'a.ts' }, big('c')),
    ];
    assert.deepEqual(candidatesOf(view, { alreadyPruned: new Set([prunedKey('r1', 'r1-c')]) }), ['r2:duplicate']);
  });

  it('writes a stub that says what the output was and how to get it back', () => {
    const view = [
      user('u', 'x'),
      ...call('r1', 'read_file', { path: 'src/a.ts' }, big('a')),
      ...call('r2', 'read_file', { path: 'src/a.ts' }, big('a')),
    ];
    const [read] = pruningCandidates(view, options());
    assert.match(
      read!.output.stub,
      /^\[Pruned by Longrun: this read_file output \(1,000 tokens\) was superseded.*Re-read "src\/a\.ts".*recall with path "src\/a\.ts"/,
    );
    const searches = [user('u', 'x'), ...call('s1', 'search_text', { query: 'q' }, big('s')), ...call('s2', 'search_text', { query: 'q' }, big('s'))];
    const [search] = pruningCandidates(searches, options());
    assert.match(
      search!.output.stub,
      /this search_text output \(1,000 tokens\) was superseded, the same call was made again later\. To see this one again, call recall with query "s1-c"/,
    );
    assert.equal(read!.saved, 1_000 - counter.countText(read!.output.stub));
  });
});

// ---------------------------------------------------------------------------------------------

/** A conversation that reads the same three files in each of `turns` turns (each read 1,000 tokens). */
function rereading(turns: number): Message[] {
  const out: Message[] = [sys('s', 'You are a coding agent.')];
  for (let t = 0; t < turns; t++) {
    out.push(user(`t${t}-u`, `turn ${t}: look again`));
    for (const f of ['a', 'b', 'c']) out.push(...call(`t${t}-${f}`, 'read_file', { path: `src/${f}.ts` }, big(f)));
    out.push(assistant(`t${t}-done`, `turn ${t} done`));
  }
  return out;
}

/** Entry ids are unique across the compactions of one log, as they are in a conversation. */
const newId = idGenerator('step');

function tiers(log: readonly LogRecord[], over: Partial<CompactionRequest> = {}) {
  const summarizer = new RecordingSummarizer();
  const deps: CompactionDeps = { counter: estimatingCounter(), summarizer, clock: new FakeClock(), newId, memo: new EngineMemo() };
  const request: CompactionRequest = {
    log,
    reason: 'threshold',
    config: config((c) => ({ ...c, minMessages: 2, keepRecent: { ...c.keepRecent, mode: 'messages', messages: 4 } })),
    window: { limit: 100_000, source: 'model' },
    ledger: EMPTY_LEDGER,
    ...over,
  };
  return { summarizer, deps, run: () => computeCompaction(request, deps) };
}

describe('compaction in tiers: pruning first, a summary only when pruning is not enough', () => {
  const log = asLog(rereading(4));
  const before = estimatingCounter().countMessages(modelView(log, new EngineMemo()));

  it('asks no summary of an automatic compaction that pruning brings under its target', async () => {
    const target = before - 5_000;
    const { summarizer, deps, run } = tiers(log, { pruneTarget: target });
    const outcome = await run();
    assert.equal(outcome.status, 'compacted');
    if (outcome.status !== 'compacted') return;
    assert.equal(summarizer.requests.length, 0, 'no summary request');
    assert.equal(outcome.compaction.entry, undefined);
    const pruning = outcome.compaction.pruning!;
    // The oldest duplicates first, only as many as the target needs: 1,000 tokens less a stub each.
    assert.deepEqual(
      pruning.outputs.map((o) => `${o.messageId}:${o.kind}`),
      ['t0-a:duplicate', 't0-b:duplicate', 't0-c:duplicate', 't1-a:duplicate', 't1-b:duplicate', 't1-c:duplicate'],
    );
    assert.ok(outcome.compaction.tokensAfter <= target, `${outcome.compaction.tokensAfter} > ${target}`);
    assert.equal(outcome.compaction.tokensAfter, deps.counter.countMessages(outcome.compaction.view));
    assert.deepEqual(outcome.compaction.records, [{ type: 'pruning', entry: pruning }]);
    // Every message stays in the view; the pruned outputs read as their stubs.
    assert.deepEqual(
      outcome.compaction.view.map((m) => m.id),
      modelView(log, new EngineMemo()).map((m) => m.id),
    );
    const shown = outcome.compaction.view.find((m) => m.id === 't0-a')!.content[0];
    assert.ok(shown?.type === 'tool-result' && String(shown.output).startsWith('[Pruned by Longrun'));
  });

  it('runs the summarizer when pruning cannot get under the target, on the view with the superseded outputs pruned', async () => {
    const { summarizer, run } = tiers(log, { pruneTarget: 1_000 });
    const outcome = await run();
    assert.equal(outcome.status, 'compacted');
    if (outcome.status !== 'compacted') return;
    assert.equal(summarizer.requests.length, 1);
    const { entry, pruning } = outcome.compaction;
    assert.ok(entry && pruning);
    assert.equal(entry.pruningId, pruning.id);
    // Every read but the last of each file was superseded.
    assert.equal(pruning.outputs.length, 9);
    assert.ok(pruning.outputs.every((o) => o.kind === 'duplicate'));
    assert.deepEqual(
      outcome.compaction.records.map((r) => r.type),
      ['pruning', 'compaction'],
    );
    // The summarizer read stubs, not the superseded contents.
    const sent = summarizer.requests[0]!.messages.map((m) => m.content).join('\n');
    assert.match(sent, /Pruned by Longrun/);
    assert.equal(entry.tokensBefore, before, 'the entry counts from before the pruning');
    assert.ok(entry.tokensAfter < pruning.tokensAfter);
  });

  it('leaves old large outputs for the summarizer to read when it runs', async () => {
    const commands: Message[] = [
      user('u1', 'build it'),
      ...call('o1', 'run_command', { command: 'make' }, big('o', 20_000)),
      assistant('d1', 'built'),
    ];
    const later = [user('u2', 'and now?'), ...call('o2', 'run_command', { command: 'make test' }, big('t', 400)), assistant('d2', 'tested')];
    const { summarizer, run } = tiers(asLog([...commands, ...later]), { pruneTarget: 100 });
    const outcome = await run();
    assert.equal(outcome.status, 'compacted');
    if (outcome.status !== 'compacted') return;
    assert.equal(outcome.compaction.pruning, undefined);
    assert.match(summarizer.requests[0]!.messages.map((m) => m.content).join('\n'), /oooo/);
  });

  it('prunes an old large output when that alone is enough', async () => {
    const commands: Message[] = [
      user('u1', 'build it'),
      ...call('o1', 'run_command', { command: 'make' }, big('o', 20_000)),
      assistant('d1', 'built'),
    ];
    const later = [user('u2', 'and now?'), ...call('o2', 'run_command', { command: 'make test' }, big('t', 400)), assistant('d2', 'tested')];
    const { summarizer, run } = tiers(asLog([...commands, ...later]), { pruneTarget: 1_000 });
    const outcome = await run();
    assert.equal(outcome.status, 'compacted');
    if (outcome.status !== 'compacted') return;
    assert.equal(summarizer.requests.length, 0);
    assert.deepEqual(
      outcome.compaction.pruning?.outputs.map((o) => `${o.messageId}:${o.kind}`),
      ['o1:old'],
    );
  });

  it('summarizes a compaction the user asked for, even when pruning alone would be enough', async () => {
    const { summarizer, run } = tiers(log, { reason: 'manual', pruneTarget: before - 5_000 });
    const outcome = await run();
    assert.equal(outcome.status, 'compacted');
    if (outcome.status !== 'compacted') return;
    assert.equal(summarizer.requests.length, 1);
    assert.ok(outcome.compaction.entry);
  });

  it('aims at the warning level of the window when the caller names no target', async () => {
    const window = { limit: Math.ceil(before / 0.8), source: 'model' as const };
    const { summarizer, run } = tiers(log, { window });
    const outcome = await run();
    assert.equal(outcome.status, 'compacted');
    if (outcome.status !== 'compacted') return;
    assert.equal(summarizer.requests.length, 0);
    assert.ok(outcome.compaction.tokensAfter <= Math.floor(window.limit * 0.75));
  });

  it('summarizes as before when pruning is off', async () => {
    const { summarizer, run } = tiers(log, {
      pruneTarget: before - 5_000,
      config: config((c) => ({
        ...c,
        minMessages: 2,
        keepRecent: { ...c.keepRecent, mode: 'messages', messages: 4 },
        pruning: { ...c.pruning, enabled: false },
      })),
    });
    const outcome = await run();
    assert.equal(outcome.status, 'compacted');
    if (outcome.status !== 'compacted') return;
    assert.equal(summarizer.requests.length, 1);
    assert.equal(outcome.compaction.pruning, undefined);
  });

  it('never prunes an output twice: a second pruning takes the next ones', async () => {
    const first = await tiers(log, { pruneTarget: before - 2_000 }).run();
    assert.ok(first.status === 'compacted');
    const after = [...log, ...first.compaction.records];
    const second = await tiers(after, { pruneTarget: first.compaction.tokensAfter - 2_000 }).run();
    assert.ok(second.status === 'compacted');
    const ids = (o: typeof first) => (o.status === 'compacted' ? (o.compaction.pruning?.outputs.map((p) => p.messageId) ?? []) : []);
    assert.deepEqual(ids(first), ['t0-a', 't0-b', 't0-c']);
    assert.deepEqual(ids(second), ['t1-a', 't1-b', 't1-c']);
    assert.equal(activePrunings([...after, ...second.compaction.records]).length, 2);
  });

  it('applies to the log as it grew meanwhile, keeping what came after the snapshot in full', async () => {
    const outcome = await tiers(log, { pruneTarget: before - 2_000 }).run();
    assert.ok(outcome.status === 'compacted');
    const grown = [...log, ...asLog([...call('late', 'read_file', { path: 'src/a.ts' }, big('z'))])];
    const applied = applyCompaction(grown, outcome.compaction, new EngineMemo());
    assert.ok(applied.ok);
    const late = applied.view.find((m) => m.id === 'late')!.content[0];
    assert.ok(late?.type === 'tool-result' && late.output === big('z'));
    assert.equal(currentBasis(applied.log), outcome.compaction.pruning!.id);
  });
});

/** A view in short: each message's id and the start of its tool outputs, so that a failing comparison stays readable. */
function brief(log: readonly LogRecord[]): string[] {
  return modelView(log, new EngineMemo()).map(
    (m) => `${m.id} ${m.content.map((p) => (p.type === 'tool-result' ? String(p.output).slice(0, 24) : '')).join('')}`,
  );
}

/** Numbered lines, as read_file answers, of about `tokens` tokens in all. */
function numbered(tokens: number, tag: string): string {
  const lines: string[] = [];
  for (let i = 1; lines.join('\n').length < tokens * 4; i++) lines.push(`${i}| export const ${tag}${i} = compute('${tag}', ${i});`);
  return lines.join('\n');
}

describe('cutting the largest tool outputs to fit the window', () => {
  const truncation = (excess: number, exclude = new Set<string>()) => ({
    excess,
    exclude,
    countOutput: (_message: Message, part: ToolResultPart) => counter.countText(stringifyOutput(part.output)),
    countStub: (_part: ToolResultPart, _key: string, stub: string) => counter.countText(stub),
    memo: new EngineMemo(),
  });

  it('cuts the largest outputs down to one common size that frees what is asked, keeping their first and last lines', () => {
    const view = [
      user('u', 'read them'),
      ...call('r1', 'read_file', { path: 'src/a.ts' }, numbered(6_000, 'a')),
      ...call('r2', 'read_file', { path: 'src/b.ts' }, numbered(3_000, 'b')),
      ...call('r3', 'search_text', { query: 'x' }, numbered(800, 'c')),
    ];
    const cut = truncationCandidates(view, truncation(5_000));
    assert.deepEqual(
      cut.map((c) => `${c.output.messageId}:${c.output.kind}`),
      ['r1:truncated', 'r2:truncated'],
      'the largest first; the small one is left whole',
    );
    const freed = cut.reduce((sum, c) => sum + c.saved, 0);
    assert.ok(freed >= 5_000 && freed < 5_600, `freed ${freed}`);
    const kept = cut.map((c) => c.output.tokens - c.saved);
    assert.ok(Math.abs(kept[0]! - kept[1]!) < 150, `both kept about the same: ${kept.join(', ')}`);
    const stub = cut[0]!.output.stub;
    assert.ok(stub.startsWith('1| export const a1 '), 'the head stays');
    assert.ok(stub.endsWith(numbered(6_000, 'a').split('\n').at(-1)!), 'the tail stays');
    assert.match(
      stub,
      /\[Pruned by Longrun: about [\d,]+ of this read_file output's [\d,]+ tokens were cut here to fit the context window\. Re-read "src\/a\.ts" for the lines in between, or call recall with query "r1-c"\.\]/,
    );
  });

  it('cuts everything large to the floor when even that is not enough, and leaves alone what is excluded', () => {
    const view = [
      user('u', 'read them'),
      ...call('r1', 'read_file', { path: 'src/a.ts' }, numbered(3_000, 'a')),
      ...call('r2', 'read_file', { path: 'src/b.ts' }, numbered(3_000, 'b')),
    ];
    const cut = truncationCandidates(view, truncation(50_000, new Set([prunedKey('r2', 'r2-c')])));
    assert.deepEqual(
      cut.map((c) => c.output.messageId),
      ['r1'],
    );
    assert.ok(cut[0]!.output.tokens - cut[0]!.saved <= MIN_TRUNCATED_TOKENS + 100);
  });
});

describe('a view over the window', () => {
  /** A first request of two reads, too large for the window: fewer messages than automatic compaction waits for. */
  const twoReads = asLog([
    sys('s', 'You are a coding agent.'),
    user('u', 'compare a.ts and b.ts'),
    ...call('r1', 'read_file', { path: 'src/a.ts' }, numbered(9_000, 'a')),
    ...call('r2', 'read_file', { path: 'src/b.ts' }, numbered(9_000, 'b')),
  ]);
  /** A first request of ten reads of 900 tokens, each too small to be pruned as large. */
  const tenReads = asLog([
    sys('s', 'You are a coding agent.'),
    user('u', 'read the ten modules'),
    ...Array.from({ length: 10 }, (_, i) => call(`r${i}`, 'read_file', { path: `src/m${i}.ts` }, numbered(900, `m${i}_`))).flat(),
  ]);
  const window = { limit: 16_000, source: 'model' as const };
  const defaults = config();

  it('prunes its outputs outside the recent part first, whatever its message count, without a summary', async () => {
    const { summarizer, deps, run } = tiers(twoReads, { window, config: defaults });
    assert.ok(deps.counter.countMessages(modelView(twoReads, new EngineMemo())) > window.limit, 'the view is over the window');
    const outcome = await run();
    assert.equal(outcome.status, 'compacted');
    if (outcome.status !== 'compacted') return;
    assert.equal(summarizer.requests.length, 0);
    assert.deepEqual(
      outcome.compaction.pruning?.outputs.map((o) => `${o.messageId}:${o.kind}`),
      ['r1:old'],
    );
    assert.ok(outcome.compaction.tokensAfter <= window.limit * 0.75, `${outcome.compaction.tokensAfter} tokens after`);
  });

  it('then cuts its largest tool outputs evenly until it fits, without a summary', async () => {
    const small = { limit: 8_000, source: 'model' as const };
    const { summarizer, deps, run } = tiers(tenReads, { window: small, config: defaults });
    assert.ok(deps.counter.countMessages(modelView(tenReads, new EngineMemo())) > small.limit, 'the view is over the window');
    const outcome = await run();
    assert.equal(outcome.status, 'compacted');
    if (outcome.status !== 'compacted') return;
    assert.equal(summarizer.requests.length, 0);
    const outputs = outcome.compaction.pruning?.outputs ?? [];
    assert.equal(outputs.length, 10);
    assert.ok(outputs.every((o) => o.kind === 'truncated'));
    assert.ok(outcome.compaction.tokensAfter <= small.limit * 0.75, `${outcome.compaction.tokensAfter} tokens after`);
    assert.ok(outcome.compaction.tokensAfter > small.limit * 0.6, `cut no more than needed: ${outcome.compaction.tokensAfter} tokens after`);
  });

  it('is not cut when it fits: automatic compaction still waits for its messages', async () => {
    const { run } = tiers(tenReads, { window: { limit: 40_000, source: 'model' }, config: defaults, pruneTarget: 5_000 });
    const outcome = await run();
    assert.equal(outcome.status, 'noop');
  });

  it('prunes at the threshold with fewer messages than compaction waits for, when the pruning alone brings the view under the target', async () => {
    const waiting = { ...defaults, minMessages: 20 };
    const before = estimatingCounter().countMessages(modelView(twoReads, new EngineMemo()));
    const { summarizer, run } = tiers(twoReads, { window: { limit: 40_000, source: 'model' }, config: waiting, pruneTarget: before - 5_000 });
    const outcome = await run();
    assert.equal(outcome.status, 'compacted', outcome.status === 'noop' ? outcome.reason : '');
    if (outcome.status !== 'compacted') return;
    assert.equal(summarizer.requests.length, 0);
    assert.equal(outcome.compaction.entry, undefined, 'a pruning, no summary');
    assert.ok(outcome.compaction.tokensAfter <= before - 5_000);
    // Not enough to get under: it still waits, and asks for no summary.
    const short = tiers(twoReads, { window: { limit: 40_000, source: 'model' }, config: waiting, pruneTarget: 100 });
    const waited = await short.run();
    assert.equal(waited.status, 'noop');
    assert.match(waited.status === 'noop' ? waited.reason : '', /waits for 20/);
    assert.equal(short.summarizer.requests.length, 0);
  });

  it('summarizes after cutting when cutting cannot get it under the target', async () => {
    const { summarizer, run } = tiers(tenReads, { window: { limit: 8_000, source: 'model' }, config: defaults, pruneTarget: 600 });
    const outcome = await run();
    assert.equal(outcome.status, 'compacted');
    if (outcome.status !== 'compacted') return;
    assert.equal(summarizer.requests.length, 1);
    const { entry, pruning } = outcome.compaction;
    assert.ok(entry && pruning && pruning.outputs.every((o) => o.kind === 'truncated'));
    assert.equal(entry.pruningId, pruning.id);
    assert.equal(outcome.compaction.view.find((m) => m.role === 'user' && !m.summaryOf)?.id, 'u', 'the request stays verbatim');
  });
});

describe('undoing a pruning', () => {
  const log = asLog(rereading(3));

  it('brings the pruned outputs back into the view', async () => {
    const outcome = await tiers(log, { pruneTarget: estimatingCounter().countMessages(modelView(log, new EngineMemo())) - 3_000 }).run();
    assert.ok(outcome.status === 'compacted' && outcome.compaction.pruning && !outcome.compaction.entry);
    const pruned = [...log, ...outcome.compaction.records];
    assert.notDeepEqual(brief(pruned), brief(log));
    const undo = undoLastStep(pruned, 1);
    assert.ok(!('error' in undo));
    assert.deepEqual(undo.records, [{ type: 'undo', entryId: outcome.compaction.pruning.id, at: 1 }]);
    assert.deepEqual(brief([...pruned, ...undo.records]), brief(log));
    assert.equal(currentBasis([...pruned, ...undo.records]), null);
  });

  it('undoes a summary and the pruning made with it together, and an earlier pruning only on the next undo', async () => {
    const first = await tiers(log, { pruneTarget: estimatingCounter().countMessages(modelView(log, new EngineMemo())) - 1_000 }).run();
    assert.ok(first.status === 'compacted' && !first.compaction.entry);
    const afterFirst = [...log, ...first.compaction.records];
    const second = await tiers(afterFirst, { pruneTarget: 10 }).run();
    assert.ok(second.status === 'compacted' && second.compaction.entry && second.compaction.pruning);
    const afterSecond = [...afterFirst, ...second.compaction.records];
    const undo = undoLastStep(afterSecond, 2);
    assert.ok(!('error' in undo));
    assert.deepEqual(
      undo.records.map((r) => r.type === 'undo' && r.entryId),
      [second.compaction.entry.id, second.compaction.pruning.id],
    );
    const undone = [...afterSecond, ...undo.records];
    assert.deepEqual(brief(undone), brief(afterFirst));
    const again = undoLastStep(undone, 3);
    assert.ok(!('error' in again));
    assert.deepEqual(brief([...undone, ...again.records]), brief(log));
    assert.ok('error' in undoLastStep([...undone, ...again.records], 4));
  });
});
