import type { FileChange } from './history';

/**
 * The agent's changes to files, kept so that they can be taken back: when the user rewinds the
 * chat past the turns that made them, Longrun offers to revert exactly those changes. A change is
 * kept as the one stretch where the texts differ, with a hash of each whole text, so that a revert
 * writes back exactly the text before, and only over a file that still holds exactly what the
 * agent wrote.
 */

/** A text's fingerprint (the app layer gives a cryptographic hash). */
export type TextHash = (text: string) => string;

/** The stretch where `before` and `after` differ: what both share before and after it is left out. */
export function changeBetween(before: string, after: string): { at: number; removed: string; inserted: string } {
  const shortest = Math.min(before.length, after.length);
  let start = 0;
  while (start < shortest && before.charCodeAt(start) === after.charCodeAt(start)) start++;
  let end = 0;
  while (end < shortest - start && before.charCodeAt(before.length - 1 - end) === after.charCodeAt(after.length - 1 - end)) end++;
  // Never split a surrogate pair: the stretch then holds whole characters, and so does the record.
  if (start > 0 && isHighSurrogate(before.charCodeAt(start - 1))) start--;
  if (end > 0 && isLowSurrogate(before.charCodeAt(before.length - end))) end--;
  return { at: start, removed: before.slice(start, before.length - end), inserted: after.slice(start, after.length - end) };
}

/** The record of a change the agent wrote. */
export function fileChange(id: string, path: string, kind: FileChange['kind'], before: string, after: string, hash: TextHash): FileChange {
  return { id, path, kind, beforeHash: hash(before), afterHash: hash(after), ...changeBetween(before, after) };
}

/** What reverting a file's changes comes to. */
export type RevertPlan =
  /** Write `text` back (or delete the file when `remove`: the agent created it). */
  | { readonly kind: 'revert'; readonly path: string; readonly text: string; readonly remove: boolean }
  /** The file no longer holds what the agent wrote: it is left as it is. */
  | { readonly kind: 'changed-since'; readonly path: string }
  /** The record cannot give the text back (it was cut when stored): nothing is written. */
  | { readonly kind: 'unrecoverable'; readonly path: string };

/**
 * How to take back `changes` of one file (oldest first) from its text now (undefined: the file is
 * gone): each change, newest first, is taken back only when the text is exactly what that change
 * left, and the result must be exactly what was there before it.
 */
export function planRevert(changes: readonly FileChange[], current: string | undefined, hash: TextHash): RevertPlan {
  const path = changes[0]?.path ?? '';
  if (current === undefined) return { kind: 'changed-since', path };
  let text = current;
  for (let i = changes.length - 1; i >= 0; i--) {
    const change = changes[i]!;
    if (hash(text) !== change.afterHash) return { kind: i === changes.length - 1 ? 'changed-since' : 'unrecoverable', path };
    const end = change.at + change.inserted.length;
    if (text.slice(change.at, end) !== change.inserted) return { kind: 'unrecoverable', path };
    text = text.slice(0, change.at) + change.removed + text.slice(end);
    if (hash(text) !== change.beforeHash) return { kind: 'unrecoverable', path };
  }
  const first = changes[0];
  return { kind: 'revert', path, text, remove: first?.kind === 'created' };
}

/** The changes among `changes`, grouped by file in the order their files were first changed, each group oldest first. */
export function changesByFile(changes: readonly FileChange[]): FileChange[][] {
  const groups = new Map<string, FileChange[]>();
  for (const change of changes) {
    let group = groups.get(change.path);
    if (!group) groups.set(change.path, (group = []));
    group.push(change);
  }
  return [...groups.values()];
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}
