import { TurnIndex } from '../core/branches';
import { EngineMemo } from '../core/engine-memo';
import type { LogRecord } from '../core/history';

/**
 * Every record of a conversation, on every branch, as on disk, and where each turn starts: shared
 * by the branches of the conversation a window has loaded, so that a new branch is made without
 * reading the file again. What the compaction engine remembers of the records goes with them: it
 * lasts as long as the conversation is loaded, and every branch and compaction of it finds it.
 */
export class ConversationRecords {
  readonly all: LogRecord[];
  private readonly index = new TurnIndex();

  /** `memo`: what the engine remembers of these records; given when they go on from records another object worked on. */
  constructor(
    log: readonly LogRecord[],
    readonly memo: EngineMemo = new EngineMemo(),
  ) {
    this.all = [...log];
  }

  /** The turns, up to date with the records. */
  turns(): TurnIndex {
    return this.index.update(this.all);
  }
}

/** Where a conversation object stands in its conversation: the branch it is, and the records it shares. */
export interface BranchOptions {
  /** The leaf turn of the branch; null for the trunk; absent: the turn started last. */
  readonly leaf?: string | null;
  /** The conversation's records, shared with its other branches; absent: made from the log given. */
  readonly records?: ConversationRecords;
}
