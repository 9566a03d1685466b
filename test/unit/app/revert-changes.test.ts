import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { applyRevert, changesWithIds, previewRevert, revertOffer, textHash } from '../../../src/app/turn/revert-changes';
import { WorkspaceFiles } from '../../../src/app/workspace/workspace-files';
import { onTurn, TurnIndex } from '../../../src/core/branches';
import { fileChange } from '../../../src/core/file-changes';
import type { LogRecord } from '../../../src/core/history';
import { FakeEditor } from './fake-editor';

describe("reverting Longrun's changes the chat was rewound past", () => {
  let dir: string;
  let files: WorkspaceFiles;
  let editor: FakeEditor;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'longrun-revert-'));
    const roots = [{ name: 'ws', fsPath: dir }];
    editor = new FakeEditor(() => roots);
    files = new WorkspaceFiles({ roots: () => roots, autoApprove: () => false, confirm: async () => false, editor });
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const signal = new AbortController().signal;
  const turn = (id: string, parent: string | null, chat = 'chat-1'): LogRecord => ({ type: 'turn', turn: { id, parent, at: 0, chat } });
  const change = (turnId: string, id: string, path: string, kind: 'created' | 'modified', before: string, after: string): LogRecord =>
    onTurn({ type: 'change', change: fileChange(id, path, kind, before, after, textHash) }, turnId);

  it('offers the changes of the turns a rewind leaves behind, oldest first, and none of the turns kept', () => {
    const log = [
      turn('t1', null),
      change('t1', 'c1', 'kept.txt', 'modified', 'a', 'b'),
      turn('t2', 't1'),
      change('t2', 'c2', 'a.txt', 'modified', '1', '2'),
      turn('t3', 't2'),
      change('t3', 'c3', 'a.txt', 'modified', '2', '3'),
      change('t3', 'c4', 'new.txt', 'created', '', 'x'),
    ];
    const offer = revertOffer(log, new TurnIndex(), 't1', 'chat-1');
    assert.equal(offer?.turns, 2);
    assert.deepEqual(
      offer?.changes.map((c) => c.id),
      ['c2', 'c3', 'c4'],
    );
    assert.equal(revertOffer(log, new TurnIndex(), 't3', 'chat-1'), undefined, 'a chat that goes on leaves nothing behind');
    assert.equal(revertOffer(log, new TurnIndex(), 't1', 'fork-chat'), undefined, 'a fork leaves nothing behind in its parent chat');
  });

  it('writes back exactly the text before, deletes what the agent created, and leaves a file changed since', async () => {
    await writeFile(join(dir, 'a.txt'), 'three\n');
    await writeFile(join(dir, 'new.txt'), 'created by the agent\n');
    await writeFile(join(dir, 'touched.txt'), 'agent wrote this\nand the user this\n');
    const log = [
      turn('t1', null),
      change('t1', 'c1', 'a.txt', 'modified', 'one\n', 'two\n'),
      change('t1', 'c2', 'a.txt', 'modified', 'two\n', 'three\n'),
      change('t1', 'c3', 'new.txt', 'created', '', 'created by the agent\n'),
      change('t1', 'c4', 'touched.txt', 'modified', 'before\n', 'agent wrote this\n'),
    ];
    const plans = await previewRevert(changesWithIds(log, ['c1', 'c2', 'c3', 'c4']), files, signal);
    assert.deepEqual(
      plans.map((p) => [p.path, p.kind]),
      [
        ['a.txt', 'revert'],
        ['new.txt', 'revert'],
        ['touched.txt', 'skip'],
      ],
    );
    const report = await applyRevert(plans, files, signal);
    assert.equal(await readFile(join(dir, 'a.txt'), 'utf8'), 'one\n');
    await assert.rejects(stat(join(dir, 'new.txt')), /ENOENT/);
    assert.equal(await readFile(join(dir, 'touched.txt'), 'utf8'), 'agent wrote this\nand the user this\n');
    assert.deepEqual(report.reverted, [
      { path: 'a.txt', removed: false },
      { path: 'new.txt', removed: true },
    ]);
    assert.match(report.skipped[0]!.why, /changed since/);
  });

  it('writes nothing over a file that changed between the preview and the click', async () => {
    await writeFile(join(dir, 'a.txt'), 'two\n');
    const log = [turn('t1', null), change('t1', 'c1', 'a.txt', 'modified', 'one\n', 'two\n')];
    const plans = await previewRevert(changesWithIds(log, ['c1']), files, signal);
    await writeFile(join(dir, 'a.txt'), 'two\nplus a late edit\n');
    const report = await applyRevert(plans, files, signal);
    assert.equal(await readFile(join(dir, 'a.txt'), 'utf8'), 'two\nplus a late edit\n');
    assert.deepEqual(report.reverted, []);
  });

  it('leaves a file with unsaved changes in the editor for the user', async () => {
    await writeFile(join(dir, 'a.txt'), 'two\n');
    editor.unsaved.set(join(dir, 'a.txt'), 'two\nunsaved\n');
    const log = [turn('t1', null), change('t1', 'c1', 'a.txt', 'modified', 'one\n', 'two\n')];
    const [plan] = await previewRevert(changesWithIds(log, ['c1']), files, signal);
    assert.equal(plan?.kind, 'skip');
    assert.match(plan?.kind === 'skip' ? plan.why : '', /unsaved/);
  });

  it('never reverts a path outside the workspace, whatever the record says', async () => {
    const log = [turn('t1', null), change('t1', 'c1', '../outside.txt', 'modified', 'a', 'b')];
    const [plan] = await previewRevert(changesWithIds(log, ['c1']), files, signal);
    assert.equal(plan?.kind, 'skip');
  });
});
