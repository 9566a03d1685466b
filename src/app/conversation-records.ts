import { TurnIndex } from '../core/branches';
import { EngineMemo } from '../core/engine-memo';
import { withoutContent, type LogRecord } from '../core/history';
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
 * `fill` reads it back when a view needs it again (an undo, a rewind, a search of the archive), and
 * `release` lets a located record go again once its view no longer needs it (after a compaction).
 */
export class ConversationRecords {
  readonly all: LogRecord[];
  private readonly index = new TurnIndex();
  /** Where the line of each located record is, full or held without content. */
  private readonly located = new Map<LogRecord, RecordLocation>();
  /** The records held without their content. */
  private readonly away = new Set<LogRecord>();
  /** The located records held with their content: those `release` may let go. */
  private readonly held = new Set<LogRecord>();
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
      (stored.withoutContent ? this.away : this.held).add(record);
    }
  }

  /** Notes where the line of `record`, one of `all` held with its content, is in the files. */
  locate(record: LogRecord, location: RecordLocation): void {
    this.located.set(record, location);
    this.held.add(record);
  }

  /** The located records held with their content. */
  heldWithContent(): ReadonlySet<LogRecord> {
    return this.held;
  }

  /**
   * Holds the located messages of `records` without their content from now on, as a reload would,
   * in their places in `all`; returns each record let go with the one that replaces it, and its
   * position in `all`. Branches made before must make their log again (see `generation`).
   */
  release(records: Iterable<LogRecord>): { readonly replaced: Map<LogRecord, LogRecord>; readonly positions: number[] } {
    const replaced = new Map<LogRecord, LogRecord>();
    for (const record of records) {
      if (record.type !== 'message' || !this.held.has(record)) continue;
      const hollow = withoutContent(record);
      replaced.set(record, hollow);
      this.located.set(hollow, this.located.get(record)!);
      this.located.delete(record);
      this.held.delete(record);
      this.away.add(hollow);
    }
    const positions: number[] = [];
    if (replaced.size === 0) return { replaced, positions };
    for (let i = 0; i < this.all.length; i++) {
      const now = replaced.get(this.all[i]!);
      if (now === undefined) continue;
      this.all[i] = now;
      positions.push(i);
    }
    this.generationCount++;
    return { replaced, positions };
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
      this.held.add(now);
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

  /**
   * `records` in order, in runs, those held without content read back for their run only: a run
   * holds at most `runBytes` of lines read back (or one line longer than that), so the records can be
   * gone through whole in that much memory.
   */
  async *readInRuns(records: readonly LogRecord[], read: ReadRecordsAt, runBytes = 8 * 1024 * 1024): AsyncGenerator<readonly LogRecord[]> {
    let start = 0;
    let bytes = 0;
    for (let i = 0; i < records.length; i++) {
      const record = records[i]!;
      if (this.away.has(record)) bytes += this.located.get(record)!.bytes;
      if (bytes >= runBytes || i === records.length - 1) {
        yield await this.readThrough(records.slice(start, i + 1), read);
        start = i + 1;
        bytes = 0;
      }
    }
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
