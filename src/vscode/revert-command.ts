import * as vscode from 'vscode';
import { applyRevert, changesWithIds, describeRevert, previewRevert, type RevertFiles, type RevertReport } from '../app/turn/revert-changes';
import type { LogRecord } from '../core/history';
import type { ChangeDocuments } from './change-view';
import type { ConversationRegistry } from '../app/conversation/conversation-registry';

/**
 * The chat's "Revert Longrun's changes…" button: shows exactly what would be written back (one diff
 * of every file), asks, and reverts only the files that still hold what Longrun wrote. What was
 * reverted is recorded in the conversation as the user's own file operations.
 */

export interface RevertCommandDeps {
  readonly registry: ConversationRegistry;
  readonly workspace: RevertFiles;
  readonly changes: ChangeDocuments;
  readonly log: vscode.LogOutputChannel;
  readonly now: () => number;
}

/** Runs the revert a button asked for; resolves with what was done, undefined when nothing was. */
export async function revertChanges(deps: RevertCommandDeps, conversationId: unknown, changeIds: unknown): Promise<RevertReport | undefined> {
  const ids = Array.isArray(changeIds) ? changeIds.filter((id): id is string => typeof id === 'string') : [];
  const conversation = typeof conversationId === 'string' ? await deps.registry.find(conversationId) : undefined;
  const changes = conversation ? changesWithIds(conversation.allRecords(), ids) : [];
  if (changes.length === 0) {
    void vscode.window.showInformationMessage('Longrun: these changes are no longer recorded, so there is nothing to revert.');
    return undefined;
  }
  deps.log.info(`Revert asked for ${changes.length} recorded change(s) to ${[...new Set(changes.map((c) => c.path))].join(', ')}.`);
  const signal = new AbortController().signal;
  const plans = await previewRevert(changes, deps.workspace, signal);
  const revertable = plans.filter((p) => p.kind === 'revert');
  if (revertable.length === 0) {
    const report = await applyRevert(plans, deps.workspace, signal);
    void vscode.window.showInformationMessage(`Longrun: ${describeRevert(report)}`);
    return report;
  }
  const diff = revertable.map((p) => (p.kind === 'revert' ? p.diff : '')).join('\n');
  const shown = await deps.changes.open('Revert of Longrun’s changes', diff);
  const skipped = plans.filter((p) => p.kind === 'skip').map((p) => (p.kind === 'skip' ? `${p.path}: ${p.why}` : ''));
  const files = revertable.map((p) => p.path).join(', ');
  const answer = await vscode.window.showWarningMessage(
    `Revert Longrun's changes to ${files}?`,
    {
      modal: true,
      detail: `The diff shows what would be written back.${skipped.length ? ` Left as they are: ${skipped.join('; ')}.` : ''}`,
    },
    'Revert',
  );
  // Left open, the diff would be attached to the next request as the active editor.
  await deps.changes.close(shown).catch(() => undefined);
  if (answer !== 'Revert') return undefined;
  const report = await applyRevert(plans, deps.workspace, signal);
  await record(deps, report);
  deps.log.info(`Reverted on request: ${describeRevert(report)}`);
  void vscode.window.showInformationMessage(`Longrun: ${describeRevert(report)}`);
  return report;
}

/** The reverted files, as the user's own operations, in the conversation of the chat used last. */
async function record(deps: RevertCommandDeps, report: RevertReport): Promise<void> {
  const conversation = deps.registry.currentIfLoaded();
  if (!conversation || report.reverted.length === 0) return;
  const at = deps.now();
  const records: LogRecord[] = report.reverted.map((r) => ({
    type: 'file',
    event: { kind: r.removed ? 'deleted' : 'modified', path: r.path, actor: 'user', at, revert: true },
  }));
  await conversation.append(records).catch((error: unknown) => deps.log.warn(`Could not record the revert: ${String(error)}`));
}
