import { currentLedgersInParts, type AppliedWithLedgers } from '../../core/apply-ledgers';
import { applicable, appliedTo, type ComputedCompaction } from '../../core/compaction';
import type { EngineMemo } from '../../core/engine-memo';
import { summaryMessage, type CompactionEntry, type LiveModelView, type LogRecord } from '../../core/history';
import type { StoredTokens } from '../../core/message-tokens';
import type { Message } from '../../core/messages';

/**
 * `applyWithCurrentLedgers` on the log as `records()` gives it now, in parts with the editor's thread
 * let go after each: whether it still applies, the view, the ledgers and the needles the summary
 * lacks, the work state and the summary made from them, then (with `countMessage`) the count of the
 * summary as it now reads, which the counter remembers for the message: the count the compaction was
 * computed with, while the summary reads as it did then. On the very log the compaction was computed
 * from, a summary as computed already has that log's ledgers, and is taken as it is. What was appended
 * meanwhile (or a log replaced by another branch's) is taken in by starting again, the last time
 * without letting go, so the ledgers are those of the log the result is written to. `live()` gives the
 * live view of `records()`, brought up to date: the view after the compaction is made from it, not
 * from the whole log.
 */
export async function ledgersAtApply(
  records: () => readonly LogRecord[],
  computed: ComputedCompaction,
  countText: (text: string) => number,
  memo: EngineMemo,
  live?: () => LiveModelView,
  countMessage?: (message: Message, stored?: StoredTokens) => number,
): Promise<AppliedWithLedgers> {
  for (let attempt = 0; ; attempt++) {
    const log = records();
    const length = log.length;
    const lettingGo = attempt < 2;
    const unchanged = async (): Promise<boolean> => {
      if (!lettingGo) return true;
      await new Promise<void>((resolve) => setImmediate(resolve));
      return records() === log && log.length === length;
    };
    const check = applicable(log, computed, live?.());
    if (!check.ok) return check;
    if (!(await unchanged())) continue;
    const applied = appliedTo(log, computed, memo, live?.());
    if (!(await unchanged())) continue;
    let withLedgers: AppliedWithLedgers & { readonly ok: true };
    if (log.length === computed.basis.records && readsAsComputed(computed)) {
      // The log the compaction was computed from, nothing added: the summary has its ledgers already.
      withLedgers = { ...applied, compaction: { ...computed, view: applied.view } };
    } else {
      const ledgers = currentLedgersInParts(log, computed, applied, countText, memo);
      if (!(await unchanged())) continue;
      withLedgers = ledgers.finish();
      if (!(await unchanged())) continue;
    }
    const entry = withLedgers.compaction.entry;
    if (!entry || !countMessage) return withLedgers;
    countMessage(summaryMessage(entry, memo), countedAsComputed(entry, computed));
    if (await unchanged()) return withLedgers;
  }
}

/**
 * The count `computed` carries of its summary's message, when `entry` (made from `computed`'s entry,
 * its skills and role kept) reads the same; undefined otherwise.
 */
function countedAsComputed(entry: CompactionEntry, computed: ComputedCompaction): StoredTokens | undefined {
  const counted = computed.summaryCount;
  return counted && entry.summary === counted.summary ? counted.tokens : undefined;
}

/**
 * Whether `computed`'s summary reads as it was computed, with the ledgers it was computed with (one the
 * user edited is made again with the log's): a compaction that only prunes has none to make again.
 */
function readsAsComputed(computed: ComputedCompaction): boolean {
  return !computed.entry || computed.entry.summary === computed.summaryCount?.summary;
}
