/**
 * After the window is reloaded: the conversation, the gauge and the summaries are back, and
 * "Undo Last Compaction" restores the originals.
 */
import * as assert from 'assert';
import { readFileSync } from 'fs';
import { join } from 'path';
import * as vscode from 'vscode';
import { api, entries, gaugeInDom, waitFor } from './harness';

interface SavedState {
  readonly conversationId: string;
  readonly records: number;
  readonly entries: string[];
  readonly gaugeText: string;
  readonly view: string[];
}

describe('Longrun after a window reload', function () {
  this.timeout(300_000);
  const saved = JSON.parse(readFileSync(join(process.env.LONGRUN_E2E_DIR!, 'state.json'), 'utf8')) as SavedState;

  it('8a. restores the conversation, its summaries and the gauge', async () => {
    const longrun = await api();
    const conversation = await waitFor('the saved conversation', () => longrun.registry.current());
    assert.equal(conversation.id, saved.conversationId);
    assert.equal(conversation.log().length, saved.records);
    assert.deepEqual(
      (await entries()).map((e) => e.id),
      saved.entries,
    );
    assert.deepEqual(
      conversation.view().map((m) => m.id),
      saved.view,
    );
    const summaries = longrun.index.summaries(conversation.id).map((s) => s.entryId);
    assert.deepEqual(summaries, saved.entries, 'the summaries are in workspace state');
    const gauge = await waitFor(
      'the gauge as it was',
      async () => {
        const g = await gaugeInDom();
        return g.text === saved.gaugeText ? g : undefined;
      },
      30_000,
    );
    assert.equal(gauge.text, saved.gaugeText);
  });

  it('8b. "Undo Last Compaction" brings the originals back', async () => {
    const longrun = await api();
    const conversation = (await longrun.registry.current())!;
    const last = (await entries()).at(-1)!;
    const undone = await vscode.commands.executeCommand<boolean>('longrun.undoCompaction');
    assert.equal(undone, true);
    const ids = new Set(conversation.view().map((m) => m.id));
    for (const id of last.compactedMessageIds) assert.ok(ids.has(id), `${id} is back in the model's view`);
    assert.deepEqual(
      (await entries()).map((e) => e.id),
      saved.entries.slice(0, -1),
    );
    assert.ok(!longrun.index.summaries(conversation.id).some((s) => s.entryId === last.id), 'the summary left workspace state');
  });
});
