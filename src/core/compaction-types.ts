import type { CompactionConfig } from './config';
import type { ContextWindow } from './context-window';
import type { EngineMemo } from './engine-memo';
import type { FileLedger } from './file-ledger';
import type { CompactionEntry, CompactionReason, ConversationLog, LogRecord, PruningEntry, StoredTokens } from './log';
import type { Message } from './messages';
import type { MessageTokenCounter } from './message-tokens';
import type { Clock, Summarizer } from './ports';

/** What computing and applying a compaction take and give (`compaction.ts`, `apply-compaction.ts`). */

export interface CompactionDeps {
  readonly counter: MessageTokenCounter;
  readonly summarizer: Summarizer;
  readonly clock: Clock;
  readonly newId: () => string;
  /** What the engine remembers between compactions: the caller's, kept as long as the caller keeps its state. */
  readonly memo: EngineMemo;
  /**
   * Cleans a summarizer's error text of the stored API keys; key-shaped text is removed in any case,
   * since the reason is stored, shown and quoted in fallback summaries sent to other providers.
   */
  readonly redact?: (text: string) => string;
}

export interface CompactionProgress {
  readonly phase: 'summarizing' | 'merging';
  /** 1-based number of the summarizer call under way, and how many are planned. */
  readonly call: number;
  readonly calls: number;
}

export interface CompactionRequest {
  /** The snapshot to compact. */
  readonly log: ConversationLog;
  readonly reason: CompactionReason;
  readonly config: CompactionConfig;
  readonly window: ContextWindow;
  /** The cumulative file ledger; it is rendered after the summary and stored in the entry. */
  readonly ledger: FileLedger;
  readonly focus?: string;
  readonly signal?: AbortSignal;
  readonly onProgress?: (progress: CompactionProgress) => void;
  /**
   * The local count of the view (messages only) to get under. A threshold or overflow compaction
   * whose pruning gets there needs no summary. Absent: the warning level of `window`.
   */
  readonly pruneTarget?: number;
  /**
   * The next request would not fit the window (the caller's calibrated count says so; absent, the local
   * count of the view over `window` does). The minimum message count then does not hold, and when
   * pruning is not enough the largest tool outputs are cut to their head and tail before a summary.
   */
  readonly overWindow?: boolean;
  /**
   * Why the summarizer is not asked this time (its recent summaries failed, see `compaction-guard.ts`):
   * the summary is the extractive one at once, or, when the settings keep the history instead, there is none.
   */
  readonly summarizerResting?: string;
}

export interface ComputedCompaction {
  /** The summary; absent when pruning alone brought the view under its target. */
  readonly entry?: CompactionEntry;
  /** The tool outputs replaced by stubs, before the summary or instead of one. */
  readonly pruning?: PruningEntry;
  /** The records to append to the log, in this order and in one write. */
  readonly records: readonly LogRecord[];
  /**
   * What the snapshot looked like: the applying side checks it is still a prefix. `records` is how many
   * records it held: a log of as many that passes the check is the snapshot itself.
   */
  readonly basis: { readonly messageIds: readonly string[]; readonly lastEntryId: string | null; readonly records?: number };
  /** The model's view of the snapshot after this compaction. */
  readonly view: readonly Message[];
  /** Deterministic repairs made to the model's summary (e.g. the original task put back). */
  readonly repairs: readonly string[];
  /** Messages summarized (0 when pruning alone was enough). */
  readonly compactedCount: number;
  /** The view's local count before and after the whole compaction, pruning and summary. */
  readonly tokensBefore: number;
  readonly tokensAfter: number;
  /** True when the whole compaction freed less than the configured minimum share. */
  readonly lowGain: boolean;
  /** Most tokens the summary's block of kept needles may take, when it is made again at apply time. */
  readonly needleBudgetTokens?: number;
  /**
   * The count of the summary's message as it was computed (by tokenizer, without its framing, as a
   * record stores a message's count), with the summary text it counts: the side that applies the
   * compaction takes it rather than tokenizing the summary again while the summary reads the same.
   */
  readonly summaryCount?: { readonly summary: string; readonly tokens: StoredTokens };
  /**
   * The entry's summary is the fallback because the summarizer's text was turned down for its shape
   * or length only: real text, not the summarizer's failure, so it does not count against it.
   */
  readonly summaryMisshapen?: true;
}

export type CompactionOutcome =
  | { readonly status: 'compacted'; readonly compaction: ComputedCompaction }
  | { readonly status: 'noop'; readonly reason: string }
  | {
      readonly status: 'failed';
      readonly reason: string;
      /** What went wrong with the summarizer, when that is why (the settings keep the history rather than a fallback). */
      readonly summarizerFailure?: string;
      /** That failure was real text turned down for its shape or length (see `ComputedCompaction`). */
      readonly summaryMisshapen?: true;
    }
  | { readonly status: 'cancelled'; readonly reason: string };

export type ApplyResult =
  { readonly ok: true; readonly log: ConversationLog; readonly view: Message[] } | { readonly ok: false; readonly reason: string };
