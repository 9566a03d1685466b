import { applyCompaction, type ApplyResult, type ComputedCompaction } from './compaction';
import type { EngineMemo } from './engine-memo';
import { renderFileOperations } from './file-ledger';
import { ledgerOf, summaryMessage, type CompactionEntry, type ConversationLog, type LogRecord } from './history';
import { keepNeedles, stripKeptNeedles } from './kept-needles';
import { needleLedgerOf } from './needles';
import { NEEDLE_BUDGET_SHARE, stripFileOperations } from './summary-repair';
import { renderWorkState, stripWorkState } from './work-state';

/**
 * A summary's ledgers are those of the log it is applied to, never those of the snapshot it was
 * computed from: a summary prepared in the background is applied after more files were read, edited
 * or created, more errors hit or resolved, and the plan moved on. At apply time the file lists are
 * made again from every file operation the log holds, the needle ledger from every message, the block
 * of needles the summary lacks is checked again against what then stays in the view, and the work
 * state (the plan, where the agent is) is made from the log as it is. The summary's own text is kept.
 */

/** The needle budget of a summary of the default 800-token target, for a compaction that does not say its own. */
const DEFAULT_NEEDLE_BUDGET = Math.floor(800 * NEEDLE_BUDGET_SHARE);

export type AppliedWithLedgers =
  (ApplyResult & { readonly ok: false }) | (ApplyResult & { readonly ok: true; readonly compaction: ComputedCompaction });

/**
 * `applyCompaction`, with the summary's file lists, needle ledger and kept needles made from `current`
 * as it is; the compaction returned is the one applied (its entry, records and view).
 */
export function applyWithCurrentLedgers(
  current: ConversationLog,
  computed: ComputedCompaction,
  countText: (value: string) => number,
  memo: EngineMemo,
): AppliedWithLedgers {
  const applied = applyCompaction(current, computed, memo);
  return applied.ok ? currentLedgersInParts(current, computed, applied, countText, memo).finish() : applied;
}

/**
 * The second half of `applyWithCurrentLedgers`: `applied` (what `applyCompaction` made of `current`
 * and `computed`) with the summary's ledgers made from `current`, itself in two parts: the ledgers
 * and the needles the summary lacks now, then the work state and the summary made from them when
 * `finish` is called. The parts may run apart as long as `current` is the same log for all of them.
 */
export function currentLedgersInParts(
  current: ConversationLog,
  computed: ComputedCompaction,
  applied: ApplyResult & { readonly ok: true },
  countText: (value: string) => number,
  memo: EngineMemo,
): { finish(): AppliedWithLedgers & { readonly ok: true } } {
  const entry = computed.entry;
  if (!entry) return { finish: () => ({ ...applied, compaction: computed }) };
  const refresh: LedgerRefresh = {
    inView: applied.view.filter((m) => m.summaryOf !== entry.id),
    countText,
    needleBudgetTokens: computed.needleBudgetTokens ?? DEFAULT_NEEDLE_BUDGET,
    memo,
  };
  const ledgers = ledgersOf(current, entry, refresh);
  return {
    finish: () => {
      const refreshed = entryWithLedgers(current, entry, ledgers, refresh);
      const records: LogRecord[] = computed.records.map((r) =>
        r.type === 'compaction' && r.entry.id === entry.id ? { type: 'compaction', entry: refreshed } : r,
      );
      const view = applied.view.map((m) => (m.summaryOf === entry.id ? summaryMessage(refreshed, memo) : m));
      return { ok: true, log: [...current, ...records], view, compaction: { ...computed, entry: refreshed, records, view } };
    },
  };
}

/** What making an entry's ledgers again needs besides the log. */
export interface LedgerRefresh {
  /** The messages that stay in the model's view beside the summary. */
  readonly inView: Parameters<typeof keepNeedles>[0]['inView'];
  readonly countText: (value: string) => number;
  readonly needleBudgetTokens: number;
  /** Where the needle scan of the log is remembered. */
  readonly memo: EngineMemo;
}

/** The ledgers of a log, and what of them a summary's text is checked against and lacks. */
interface Ledgers {
  readonly fileOperations: CompactionEntry['fileOperations'];
  readonly needles: NonNullable<CompactionEntry['needles']>;
  /** The summary's own text, what Longrun adds to it taken out. */
  readonly body: string;
  /** The block of needles the summary and the view lack. */
  readonly kept: string;
}

/** The file ledger and the needle ledger of `log`, and the needles `entry`'s summary and the view lack. */
function ledgersOf(log: ConversationLog, entry: CompactionEntry, refresh: LedgerRefresh): Ledgers {
  const fileOperations = ledgerOf(log, refresh.memo);
  // The entry's own ledger was made from a prefix of this log: only what came after it is scanned.
  const needles = needleLedgerOf(log, refresh.memo, entry.needles);
  const body = stripWorkState(stripKeptNeedles(stripFileOperations(entry.summary))).trimEnd();
  const kept = keepNeedles({
    ledger: needles,
    summary: body,
    inView: refresh.inView,
    budgetTokens: refresh.needleBudgetTokens,
    countText: refresh.countText,
  });
  return { fileOperations, needles, body, kept: kept.block };
}

/** `entry` with `ledgers`, and its summary's lists, kept needles and work state made from them. */
function entryWithLedgers(log: ConversationLog, entry: CompactionEntry, ledgers: Ledgers, refresh: LedgerRefresh): CompactionEntry {
  const work = renderWorkState({ log, inView: refresh.inView, countText: refresh.countText });
  const summary = [ledgers.body, ledgers.kept, work, renderFileOperations(ledgers.fileOperations)].filter(Boolean).join('\n\n');
  return { ...entry, summary, fileOperations: ledgers.fileOperations, needles: ledgers.needles };
}
