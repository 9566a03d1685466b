import { createHash } from 'node:crypto';
import { leftBehind, onPath, type TurnIndex } from '../../core/branches';
import { changesByFile, planRevert, type TextHash } from '../../core/file-changes';
import type { ConversationLog, FileChange } from '../../core/history';
import { unifiedDiff } from '../workspace/diff-preview';

/**
 * Taking back the agent's changes to files when the chat is rewound past the turns that made them.
 * VS Code's Restore Checkpoint restores only the files its own editing session changed; Longrun
 * writes files itself, so when a request continues from an earlier turn than the one the chat went
 * on from last, the chat says which of Longrun's changes the turns left behind hold, and offers to
 * revert exactly those. Nothing is reverted without the user's click, and a file that changed since
 * is left as it is.
 */

/** The hash the change records carry. */
export const textHash: TextHash = (text) => createHash('sha256').update(text, 'utf8').digest('hex');

/** What a rewind left behind of Longrun's changes to files. */
export interface RevertOffer {
  /** How many turns the chat no longer holds. */
  readonly turns: number;
  /** The changes those turns made, oldest first. */
  readonly changes: readonly FileChange[];
}

/**
 * The changes a new turn under `parent` leaves behind: those made in the turns below `parent` on
 * the branch continued last (see `leftBehind`). None when those turns came from another chat (the
 * chat this one was forked from still holds them), or when they changed no file.
 */
export function revertOffer(records: ConversationLog, turns: TurnIndex, parent: string | null, chat?: string): RevertOffer | undefined {
  const left = leftBehind(turns.update(records), parent);
  if (left.length === 0) return undefined;
  if (chat !== undefined && left.every((id) => fromOtherChat(turns, id, chat))) return undefined;
  const path = turns.path(left.at(-1)!);
  const inLeft = new Set(left);
  const changes: FileChange[] = [];
  records.forEach((record, index) => {
    if (record.type === 'change' && record.turnId !== undefined && inLeft.has(record.turnId) && onPath(record, index, path)) {
      changes.push(record.change);
    }
  });
  return changes.length > 0 ? { turns: left.length, changes } : undefined;
}

function fromOtherChat(turns: TurnIndex, id: string, chat: string): boolean {
  const made = turns.info(id)?.chat;
  return made !== undefined && made !== chat;
}

/** The changes with these ids, oldest first. */
export function changesWithIds(records: ConversationLog, ids: readonly string[]): FileChange[] {
  const wanted = new Set(ids);
  const out: FileChange[] = [];
  for (const record of records) if (record.type === 'change' && wanted.has(record.change.id)) out.push(record.change);
  return out;
}

/** How a revert reads and writes files: the agent's confined workspace. */
export interface RevertFiles {
  /** The file's text (the editor's when it has unsaved changes), undefined when it does not exist. */
  textForRevert(path: string, signal: AbortSignal): Promise<{ text: string; unsaved: boolean } | undefined>;
  /** Replaces the file with `text` (deletes it when undefined) if it still holds `expected`; false when it changed. */
  writeRevert(path: string, expected: string, text: string | undefined, signal: AbortSignal): Promise<boolean>;
}

/** What reverting one file comes to, before anything is written. */
export type FileRevert =
  | {
      readonly path: string;
      readonly kind: 'revert';
      readonly current: string;
      readonly text: string;
      readonly remove: boolean;
      readonly diff: string;
    }
  | { readonly path: string; readonly kind: 'skip'; readonly why: string };

/** What reverting `changes` would do to each file, as things are now. */
export async function previewRevert(changes: readonly FileChange[], files: RevertFiles, signal: AbortSignal): Promise<FileRevert[]> {
  const out: FileRevert[] = [];
  for (const group of changesByFile(changes)) {
    const path = group[0]!.path;
    let current: { text: string; unsaved: boolean } | undefined;
    try {
      current = await files.textForRevert(path, signal);
    } catch (error) {
      out.push({ path, kind: 'skip', why: `it cannot be read (${error instanceof Error ? error.message : String(error)})` });
      continue;
    }
    if (current?.unsaved) {
      out.push({ path, kind: 'skip', why: 'it has unsaved changes in the editor; save or discard them first' });
      continue;
    }
    const plan = planRevert(group, current?.text, textHash);
    if (plan.kind === 'revert' && current) {
      const diff = unifiedDiff(current.text, plan.remove ? '' : plan.text, path);
      out.push({ path, kind: 'revert', current: current.text, text: plan.text, remove: plan.remove, diff });
    } else if (plan.kind === 'unrecoverable') {
      out.push({ path, kind: 'skip', why: 'the change was too large to be kept whole, so it cannot be taken back exactly' });
    } else {
      out.push({ path, kind: 'skip', why: current ? 'it changed since Longrun wrote it' : 'it no longer exists' });
    }
  }
  return out;
}

/** What a revert did. */
export interface RevertReport {
  readonly reverted: readonly { readonly path: string; readonly removed: boolean }[];
  readonly skipped: readonly { readonly path: string; readonly why: string }[];
}

/** Reverts what `previewRevert` found revertable, each file only if it still holds what was previewed. */
export async function applyRevert(plans: readonly FileRevert[], files: RevertFiles, signal: AbortSignal): Promise<RevertReport> {
  const reverted: { path: string; removed: boolean }[] = [];
  const skipped: { path: string; why: string }[] = [];
  for (const plan of plans) {
    if (plan.kind === 'skip') {
      skipped.push({ path: plan.path, why: plan.why });
      continue;
    }
    const written = await files.writeRevert(plan.path, plan.current, plan.remove ? undefined : plan.text, signal);
    if (written) reverted.push({ path: plan.path, removed: plan.remove });
    else skipped.push({ path: plan.path, why: 'it changed while it was being reverted' });
  }
  return { reverted, skipped };
}

/** The report as one or two sentences for the user. */
export function describeRevert(report: RevertReport): string {
  const parts: string[] = [];
  if (report.reverted.length > 0) {
    parts.push(`Reverted ${report.reverted.map((r) => `${r.path}${r.removed ? ' (deleted: Longrun had created it)' : ''}`).join(', ')}.`);
  }
  if (report.skipped.length > 0) parts.push(`Left as they are: ${report.skipped.map((s) => `${s.path} (${s.why})`).join('; ')}.`);
  return parts.join(' ') || 'There was nothing to revert.';
}
