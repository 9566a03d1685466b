import { TurnIndex } from '../../core/branches';
import { EngineMemo } from '../../core/engine-memo';
import { hasMarker, mark } from '../../core/errors';
import type { LogRecord } from '../../core/history';
import { Emitter, type Event } from '../emitter';
import type { ExpectedLine, RecordLocation } from '../store/conversation-store';
import { ConversationChangedError } from '../store/errors';
import { awayAt, heldAway, isHeldAway } from '../store/held-away';

/**
 * Reads message records again from the conversation's files, each at its location and checked to be
 * the message expected there, in the order given (see `ConversationStore.readAt`).
 */
export type ReadRecordsAt = (lines: readonly ExpectedLine[]) => Promise<LogRecord[]>;

/**
 * Every record of a conversation, on every branch, as on disk, and where each turn starts: shared
 * by the branches of the conversation a window has loaded, so that a new branch is made without
 * reading the file again. What the compaction engine remembers of the records goes with them: it
 * lasts as long as the conversation is loaded, and every branch and compaction of it finds it.
 *
 * A message no view needs (compacted away, or on a branch left behind) is held without its content
 * when its line's place in the files is known: memory follows what the model sees, not how long the
 * history is. Such a record keeps everything but its content (its id, role, turn and token counts);
 * `readBack` reads it back when a view needs it again (an undo, a rewind, a search of the archive), and
 * `letGo` lets a located record go again once its view no longer needs it (after a compaction).
 */
export class ConversationRecords {
  readonly all: LogRecord[];
  private readonly index = new TurnIndex();
  /**
   * Where the line of each located record held with its content is: those `letGo` may let go. A
   * record held without its content says where its line is itself (`awayAt`).
   */
  private readonly located = new Map<LogRecord, RecordLocation>();
  /** How many records are held without their content. */
  private away = 0;
  private generationCount = 0;
  /** What showed the files are no longer those these records were read from, once something did. */
  private changedOnDisk: ConversationChangedError | undefined;
  private readonly changedEmitter = new Emitter<ConversationChangedError>();
  /**
   * Fired once, when the conversation's files turn out to have been changed by something else since
   * these records were read from them: the records must then be read again (see `markChanged`).
   */
  readonly onDidFindChanged: Event<ConversationChangedError> = this.changedEmitter.event;

  /**
   * `memo`: what the engine remembers of these records; given when they go on from records another
   * object worked on. `locations`: where the lines of records of `log` held with their content are,
   * as `open` found them (those it gave without their content say it themselves).
   */
  constructor(
    log: readonly LogRecord[],
    readonly memo: EngineMemo = new EngineMemo(),
    locations: ReadonlyMap<LogRecord, RecordLocation> = new Map(),
  ) {
    this.all = [...log];
    for (const record of this.all) if (isHeldAway(record)) this.away++;
    for (const [record, location] of locations) this.located.set(record, location);
  }

  /**
   * What showed that the files changed under these records, once something did: they are out of
   * date from then on. Nothing more is read back from the files or written to them through them;
   * the conversation is read again instead.
   */
  get changed(): ConversationChangedError | undefined {
    return this.changedOnDisk;
  }

  /** Notes that the files changed under these records (see `changed`), and says so once. */
  markChanged(error: ConversationChangedError): void {
    if (this.changedOnDisk) return;
    this.changedOnDisk = error;
    this.changedEmitter.fire(error);
  }

  /** Notes where the line of `record`, one of `all` held with its content, is in the files. */
  locate(record: LogRecord, location: RecordLocation): void {
    this.located.set(record, location);
  }

  /** The located records held with their content. */
  heldWithContent(): Iterable<LogRecord> {
    return this.located.keys();
  }

  /**
   * Holds the located messages of `records` without their content from now on, as a reload would,
   * in their places in `all`; returns each record let go with the one that replaces it, and its
   * position in `all`. Branches made before must make their log again (see `generation`).
   */
  letGo(records: Iterable<LogRecord>): { readonly replaced: Map<LogRecord, LogRecord>; readonly positions: number[] } {
    const replaced = new Map<LogRecord, LogRecord>();
    for (const record of records) {
      const location = this.located.get(record);
      if (record.type !== 'message' || location === undefined) continue;
      replaced.set(record, heldAway(record, location));
      this.located.delete(record);
      this.away++;
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
    return isHeldAway(record);
  }

  /** How many records are held without their content. */
  awayCount(): number {
    return this.away;
  }

  /**
   * Reads back the records of `wanted` held without content, putting them in their places; returns
   * how many were read. Branches made before must make their log again (see `generation`).
   */
  async readBack(wanted: Iterable<LogRecord>, read: ReadRecordsAt): Promise<number> {
    const replacing = await this.readLines(new Set(wanted), read);
    if (replacing.size === 0) return 0;
    for (let i = 0; i < this.all.length; i++) {
      const was = this.all[i]!;
      const now = replacing.get(was);
      if (now === undefined) continue;
      this.located.set(now, awayAt(was)!);
      this.away--;
      this.all[i] = now;
    }
    this.generationCount++;
    return replacing.size;
  }

  /** `records` with those held without content read back, in order, without keeping them in memory. */
  async readThrough(records: readonly LogRecord[], read: ReadRecordsAt): Promise<readonly LogRecord[]> {
    const replacing = await this.readLines(records, read);
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
      bytes += awayAt(record)?.bytes ?? 0;
      if (bytes >= runBytes || i === records.length - 1) {
        yield await this.readThrough(records.slice(start, i + 1), read);
        start = i + 1;
        bytes = 0;
      }
    }
  }

  /**
   * The records of `records` held without content, each with its full record read from disk and
   * checked to be the one located there (see `ReadRecordsAt`). Files found changed mark these records
   * out of date (`markChanged`), and nothing is given back.
   */
  private async readLines(records: Iterable<LogRecord>, read: ReadRecordsAt): Promise<Map<LogRecord, LogRecord>> {
    const away = [...records].filter(isHeldAway);
    if (away.length === 0) return new Map();
    if (this.changedOnDisk) throw this.changedOnDisk;
    try {
      const full = await read(away.map((r) => ({ at: awayAt(r)!, messageId: r.type === 'message' ? r.message.id : '' })));
      return new Map(away.map((r, i) => [r, full[i]!]));
    } catch (error) {
      if (ConversationChangedError.isInstance(error)) this.markChanged(error);
      throw error;
    }
  }
}

/** Where a conversation object stands in its conversation: the branch it is, and the records it shares. */
export interface BranchOptions {
  /** The leaf turn of the branch; null for the trunk; absent: the turn started last. */
  readonly leaf?: string | null;
  /** The conversation's records, shared with its other branches; absent: made from the log given. */
  readonly records?: ConversationRecords;
}

const VIEW_NOT_WHOLE = Symbol.for('longrun.ViewNotWholeError');

/**
 * A request was about to show the model messages held without their content (not read back from
 * disk), and was not sent: a message is never sent without its content.
 */
export class ViewNotWholeError extends Error {
  constructor(
    readonly conversationId: string,
    readonly messages: number,
  ) {
    super(
      `Longrun did not send the request: ${messages === 1 ? 'a message' : `${messages} messages`} of conversation "${conversationId}" ` +
        `the model must see ${messages === 1 ? 'is' : 'are'} held on disk only and ${messages === 1 ? 'was' : 'were'} not read back, ` +
        `and a message is never sent without its content. Send your message again: Longrun reads them back first.`,
    );
    this.name = 'ViewNotWholeError';
    mark(this, VIEW_NOT_WHOLE);
  }

  static isInstance(error: unknown): error is ViewNotWholeError {
    return hasMarker(error, VIEW_NOT_WHOLE);
  }
}
