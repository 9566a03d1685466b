import type { CompactionProgress } from '../../core/compaction';
import type { CompactionConfig } from '../../core/config';
import type { CompactionEntry } from '../../core/history';
import type { Clock, Summarizer } from '../../core/ports';
import type { CalibrationMemory } from '../../core/usage-calibration';
import type { LongrunTelemetry } from '../../llm/telemetry';
import type { CompactionEngine } from '../compaction/compaction-engine';
import type { ModelContext } from './conversation-meter';
import type { ConversationIndex } from '../store/conversation-index';
import type { ConversationStore } from '../store/conversation-store';

/** What a `Conversation` is made with, and what a compaction of it is asked with. */

/**
 * Where a conversation's records are written and read back from: its files (`ConversationStore`),
 * or, for a conversation that lives in memory (a subagent's), something that takes them elsewhere.
 */
export type ConversationFiles = Pick<ConversationStore, 'appendAll' | 'readAt'>;

/** What a conversation tells the list of conversations (its title, its summaries): `ConversationIndex`. */
export type ConversationListing = Pick<ConversationIndex, 'list' | 'upsert' | 'addSummary' | 'removeSummary'>;

export interface ConversationDeps {
  readonly store: ConversationFiles;
  readonly index: ConversationListing;
  readonly clock: Clock;
  readonly newId: () => string;
  readonly config: () => CompactionConfig;
  readonly model: () => ModelContext;
  /**
   * The summarizer for a compaction, asked for when one is computed and made then for the model and
   * settings as they are (see `summarizer-source.ts`); undefined when no model can summarize.
   */
  readonly summarizer: () => Promise<Summarizer | undefined>;
  /** Tracing of compactions (a span each, numbers only, never content). */
  readonly telemetry?: () => LongrunTelemetry;
  /** Cleans provider text (a summarizer's error) of API keys before it is stored or summarized. */
  readonly redact?: (text: string) => string;
  /**
   * Whether to start summarizing in the background once the view passes the warning level, so that
   * the swap at the compaction point costs no wait. Off when absent.
   */
  readonly summarizeAhead?: () => boolean;
  /** Where compactions are computed: in a worker, or on this thread when absent. */
  readonly engine?: CompactionEngine;
  /** What earlier conversations learned of each model's ratio, and where this one's is kept. Absent: the family table alone. */
  readonly calibrations?: CalibrationMemory;
}

export interface CompactOptions {
  readonly focus?: string;
  readonly signal?: AbortSignal;
  readonly onProgress?: (progress: CompactionProgress) => void;
  /**
   * Shows the computed summary to the user before it is applied (the preview): resolves with the
   * summary to apply instead (whole, file lists included, see `summary-edit.ts`), or undefined to
   * apply nothing. Absent: the summary is applied as computed.
   */
  readonly review?: (entry: CompactionEntry) => Promise<string | undefined>;
  /** For a compaction of an expired cache: apply the summary prepared ahead, when it is ready, instead of pruning. */
  readonly applyAhead?: boolean;
  /**
   * Keep less of the recent work than the settings say (a quarter): "Compact harder", offered when
   * a turn stopped for a compaction loop. A summary prepared ahead is not used for it.
   */
  readonly keepLess?: boolean;
}
