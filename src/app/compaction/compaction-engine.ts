import { computeCompaction, type CompactionDeps, type CompactionOutcome, type CompactionRequest } from '../../core/compaction';
import { ledgerOf, type ConversationLog, type LogRecord } from '../../core/history';

/**
 * Where a compaction is computed: on the extension host's thread, or in a worker (see
 * `remote-compaction.ts`), so that the first compaction after a reload and the tokenizing it does
 * never hold up the editor. Either way the engine computes on a snapshot of the conversation's
 * branch, and the conversation applies the result.
 */

/** What a compaction is computed from: the branch's snapshot, and the conversation's records it was taken from. */
export interface CompactionInput {
  readonly conversationId: string;
  /** Every record of the conversation, on every branch, in order (a worker mirrors them). */
  readonly all: ConversationLog;
  /** The branch's leaf turn; null for the trunk. */
  readonly leaf: string | null;
  /** The branch's records when the compaction starts: the records of the path to `leaf`, in order. */
  readonly snapshot: readonly LogRecord[];
  /** The request, but for the log and the ledger, which are the snapshot's. */
  readonly request: Omit<CompactionRequest, 'log' | 'ledger'>;
  readonly deps: CompactionDeps;
}

/** Messages of a conversation to count with a tokenizer (a long conversation reopened, or counted by another tokenizer). */
export interface CountInput {
  readonly conversationId: string;
  readonly all: ConversationLog;
  /** The messages, by id, among `all`'s. */
  readonly ids: readonly string[];
  /** The tokenizer's name (`o200k_base`, `cl100k_base`). */
  readonly tokenizer: string;
}

export interface CompactionEngine {
  compute(input: CompactionInput): Promise<CompactionOutcome>;
  /**
   * Each message's count without its framing, as `StoredTokens` holds it, by id; made where it
   * does not hold up the editor. Absent: counting is done where it is asked for.
   */
  count?(input: CountInput): Promise<ReadonlyMap<string, number>>;
  /**
   * The records at `positions` of the conversation's records are now held without their content
   * (see `ConversationRecords.letGo`): a copy kept of them may let go of theirs too.
   */
  letGo?(conversationId: string, positions: readonly number[]): void;
  /** The conversation is no longer loaded: whatever was kept of it goes. */
  forget(conversationId: string): void;
  dispose(): void;
}

/** Computes on the calling thread. */
export const IN_THREAD_ENGINE: CompactionEngine = {
  compute: ({ snapshot, request, deps }) => computeCompaction({ ...request, log: snapshot, ledger: ledgerOf(snapshot, deps.memo) }, deps),
  forget: () => undefined,
  dispose: () => undefined,
};
