import { TurnIndex } from '../core/branches';
import { EngineMemo } from '../core/engine-memo';
import type { LogRecord } from '../core/history';
import type { RecordLocation } from './store/conversation-store';

/** Reads records again from the conversation's files, at the locations given, in that order. */
export type ReadRecordsAt = (locations: readonly RecordLocation[]) => Promise<LogRecord[]>;

/**
 * Every record of a conversation, on every branch, as on disk, and where each turn starts: shared
 * by the branches of the conversation a window has loaded, so that a new branch is made without
 * reading the file again. What the compaction engine remembers of the records goes with them: it
 * lasts as long as the conversation is loaded, and every branch and compaction of it finds it.
 *
 * A message no view needs (compacted away, or on a branch left behind) is held without its content
 * when its line's place in the files is known: memory follows what the model sees, not how long the
 * history is. Such a record keeps everything but its content (its id, role, turn and token counts);
 * `fill` reads it back when a view needs it again (an undo, a rewind, a search of the archive).
 */
export class ConversationRecords {
  readonly all: LogRecord[];
  private readonly index = new TurnIndex();
  /** Where the line of each located record is, full or held without content. */
  private readonly located = new Map<LogRecord, RecordLocation>();
  /** The records held without their content. */
  private readonly away = new Set<LogRecord>();
  private generationCount = 0;

  /**
   * `memo`: what the engine remembers of these records; given when they go on from records another
   * object worked on. `stored`: where the records of `log` are in the files, as `open` found them,
   * and whether it gave those records without their content.
   */
  constructor(
    log: readonly LogRecord[],
    readonly memo: EngineMemo = new EngineMemo(),
    stored: { readonly locations: ReadonlyMap<LogRecord, RecordLocation>; readonly withoutContent: boolean } = {
      locations: new Map(),
      withoutContent: false,
    },
  ) {
    this.all = [...log];
    for (const [record, location] of stored.locations) {
      this.located.set(record, location);
      if (stored.withoutContent) this.away.add(record);
    }
  }

  /** The turns, up to date with the records. */
  turns(): TurnIndex {
    return this.index.update(this.all);
  }

  /** Changes each time records held without content were read back: a branch's log from before holds stale copies. */
  get generation(): number {
    return this.generationCount;
  }

  /** Whether `record` is held without its content. */
  isAway(record: LogRecord): boolean {
    return this.away.has(record);
  }

  /** How many records are held without their content. */
  awayCount(): number {
    return this.away.size;
  }

  /**
   * Reads back the records of `wanted` held without content, putting them in their places; returns
   * how many were read. Branches made before must make their log again (see `generation`).
   */
  async fill(wanted: Iterable<LogRecord>, read: ReadRecordsAt): Promise<number> {
    const replacing = await this.readBack(new Set(wanted), read);
    if (replacing.size === 0) return 0;
    for (let i = 0; i < this.all.length; i++) {
      const was = this.all[i]!;
      const now = replacing.get(was);
      if (now === undefined) continue;
      this.located.set(now, this.located.get(was)!);
      this.located.delete(was);
      this.away.delete(was);
      this.all[i] = now;
    }
    this.generationCount++;
    return replacing.size;
  }

  /** `records` with those held without content read back, in order, without keeping them in memory. */
  async readThrough(records: readonly LogRecord[], read: ReadRecordsAt): Promise<readonly LogRecord[]> {
    const replacing = await this.readBack(records, read);
    return replacing.size === 0 ? records : records.map((r) => replacing.get(r) ?? r);
  }

  /** The records of `records` held without content, each with its full record read from disk. */
  private async readBack(records: Iterable<LogRecord>, read: ReadRecordsAt): Promise<Map<LogRecord, LogRecord>> {
    const hollow = [...records].filter((r) => this.away.has(r));
    if (hollow.length === 0) return new Map();
    const full = await read(hollow.map((r) => this.located.get(r)!));
    return new Map(hollow.map((r, i) => [r, full[i]!]));
  }
}

/** Where a conversation object stands in its conversation: the branch it is, and the records it shares. */
export interface BranchOptions {
  /** The leaf turn of the branch; null for the trunk; absent: the turn started last. */
  readonly leaf?: string | null;
  /** The conversation's records, shared with its other branches; absent: made from the log given. */
  readonly records?: ConversationRecords;
}
