import type { CompactionConfig } from './config';
import type { ApplyResult, ComputedCompaction } from './compaction-types';
import type { EngineMemo } from './engine-memo';
import { currentBasis, modelView, type ConversationLog, type LiveModelView } from './history';
import type { Message } from './messages';

/** Whether a compaction from `before` to `after` tokens frees less than the configured share of the view. */
export function lowGain(before: number, after: number, config: CompactionConfig): boolean {
  return (before > 0 ? (before - after) / before : 0) < config.minGainShare;
}

/**
 * Applies a computed compaction to the current log. The snapshot it was computed from must still
 * be a prefix of the log (same messages, no compaction or undo since); messages appended after it
 * stay in the view as recent messages.
 */
export function applyCompaction(current: ConversationLog, computed: ComputedCompaction, memo: EngineMemo, live?: LiveModelView): ApplyResult {
  const check = applicable(current, computed);
  return check.ok ? appliedTo(current, computed, memo, live) : check;
}

/**
 * The log and view `computed` makes of `current`, once `applicable` said it applies. `live`, a live
 * view up to date with `current`, gives the view at the cost of the view rather than of the log,
 * when it can (see `LiveModelView.after`).
 */
export function appliedTo(
  current: ConversationLog,
  computed: ComputedCompaction,
  memo: EngineMemo,
  live?: LiveModelView,
): ApplyResult & { readonly ok: true } {
  const log = [...current, ...computed.records];
  return { ok: true, log, view: live?.after(computed.records) ?? modelView(log, memo) };
}

/**
 * Whether a compaction computed from a snapshot still applies to the log as it is now: the snapshot's
 * messages are a prefix of the log's, and no compaction, pruning or undo came between. `live`: as for
 * `appliedTo`.
 */
export function applicable(
  current: ConversationLog,
  computed: ComputedCompaction,
  live?: LiveModelView,
): { readonly ok: true } | { readonly ok: false; readonly reason: string } {
  if (!startsWithMessages(current, computed.basis.messageIds)) {
    return { ok: false, reason: 'The conversation changed in a way the compaction did not expect (its messages are no longer a prefix).' };
  }
  // A live view up to date with `current` knows the steps in force without reading the whole log.
  const basis = live ? (live.activeSteps().at(-1)?.entry.id ?? null) : currentBasis(current);
  if (basis !== computed.basis.lastEntryId) {
    return { ok: false, reason: 'Another compaction or an undo happened while this one was computed.' };
  }
  return { ok: true };
}

/** Whether the log's messages begin with the messages `ids` names, in that order. */
function startsWithMessages(log: ConversationLog, ids: readonly string[]): boolean {
  let next = 0;
  for (let i = 0; i < log.length && next < ids.length; i++) {
    const record = log[i]!;
    if (record.type !== 'message') continue;
    if (record.message.id !== ids[next]) return false;
    next++;
  }
  return next === ids.length;
}

/**
 * The local count of the view `computed` makes of `current` as it is now (`countView` counting it), or
 * undefined when it cannot be applied at all: a summary prepared on an older snapshot may cover too
 * little of a log that grew meanwhile. `live`: as for `appliedTo`.
 */
export function tokensAfterAt(
  current: ConversationLog,
  computed: ComputedCompaction,
  countView: (view: readonly Message[]) => number,
  memo: EngineMemo,
  live?: LiveModelView,
): number | undefined {
  const applied = applyCompaction(current, computed, memo, live);
  return applied.ok ? countView(applied.view) : undefined;
}

/** The ids of the log's messages, in order: the basis a compaction is computed on. */
export function messageIds(log: ConversationLog): string[] {
  const ids: string[] = [];
  for (const record of log) if (record.type === 'message') ids.push(record.message.id);
  return ids;
}
