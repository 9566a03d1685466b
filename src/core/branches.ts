import type { ConversationLog, LogRecord, TurnInfo } from './history';

/**
 * A conversation branches like the chat it lives in: rewinding, retrying or editing a request, or
 * forking the chat, continues from an earlier turn, and the turns after it stay on disk off the new
 * path. The log stays one append-only file: each request starts a turn (a `turn` record naming its
 * parent turn), and every record names the turn it was made on (`turnId`). What a path to a leaf
 * turn holds is decided by the file's order, which is the order things happened in:
 *
 * - a record made on turn T is on the path when T is, and it was written before the path's next
 *   turn after T began (a compaction made at T after the chat moved on from T, in another chat or
 *   after a rewind, is not part of the path that moved on);
 * - records with no turn (written before conversations had turns) form the trunk, which every path
 *   starts with, up to the first turn of the path.
 *
 * The records on a path form a log of their own, and everything derived from a log (the model's
 * view, compactions, prunings, undo, ledgers) is derived from it unchanged.
 */

/** The turn a record was made on; undefined for a record of the trunk. */
export function turnOf(record: LogRecord): string | undefined {
  return record.type === 'turn' ? record.turn.id : record.turnId;
}

/** Key of the trunk in a {@link TurnPath}: records with no turn. */
const TRUNK = '';

/**
 * The turns of a path, each with the position in the log up to which its records belong to the
 * path: the position of the path's next turn record, or the end for the leaf.
 */
export interface TurnPath {
  /** The leaf turn; null for the trunk alone. */
  readonly leaf: string | null;
  /** The turns from the first to the leaf (the trunk not included). */
  readonly turns: readonly string[];
  /** By turn id (the trunk under ''), the position before which its records are on the path. */
  readonly until: ReadonlyMap<string, number>;
}

/** Where each turn of a log was started, kept up to date as the log grows. */
export class TurnIndex {
  private readonly byId = new Map<string, { readonly info: TurnInfo; readonly index: number }>();
  private readonly order: string[] = [];
  private seen = 0;
  private log: ConversationLog | undefined;

  /** Takes in one turn record at `index` of a log read piece by piece (as an export streams it). */
  note(info: TurnInfo, index: number): void {
    if (this.byId.has(info.id)) return;
    this.byId.set(info.id, { info, index });
    this.order.push(info.id);
  }

  /** Takes in the records appended since the last call; a different log is taken in from its start. */
  update(log: ConversationLog): this {
    if (log !== this.log || log.length < this.seen) {
      this.log = log;
      this.seen = 0;
      this.byId.clear();
      this.order.length = 0;
    }
    for (; this.seen < log.length; this.seen++) {
      const record = log[this.seen]!;
      // A turn id seen twice (a damaged or hand-edited file) keeps its first start.
      if (record.type === 'turn') this.note(record.turn, this.seen);
    }
    return this;
  }

  has(id: string): boolean {
    return this.byId.has(id);
  }

  info(id: string): TurnInfo | undefined {
    return this.byId.get(id)?.info;
  }

  /** Position of the turn's record in the log. */
  position(id: string): number | undefined {
    return this.byId.get(id)?.index;
  }

  /** Every turn, in the order they were started. */
  all(): readonly TurnInfo[] {
    return this.order.map((id) => this.byId.get(id)!.info);
  }

  /** The turn started last; null when there is none. */
  latest(): string | null {
    return this.order.at(-1) ?? null;
  }

  /**
   * The path from the first turn to `leaf`. A parent that is not in the log (a damaged line), or
   * that was started after its child, ends the walk: the turns above it cannot be trusted.
   */
  path(leaf: string | null): TurnPath {
    const turns: string[] = [];
    const until = new Map<string, number>();
    let next = Number.POSITIVE_INFINITY;
    let at = leaf !== null ? this.byId.get(leaf) : undefined;
    while (at) {
      turns.push(at.info.id);
      until.set(at.info.id, next);
      next = at.index;
      const parent: { readonly info: TurnInfo; readonly index: number } | undefined =
        at.info.parent !== null ? this.byId.get(at.info.parent) : undefined;
      if (!parent || parent.index >= at.index || until.has(parent.info.id)) break;
      at = parent;
    }
    until.set(TRUNK, next);
    turns.reverse();
    return { leaf: turns.at(-1) ?? null, turns, until };
  }

  /** The turns started after `turn` that descend from it (null: every turn), newest last. */
  descendants(turn: string | null): string[] {
    const inside = new Set<string | null>([turn]);
    const out: string[] = [];
    for (const id of this.order) {
      const info = this.byId.get(id)!.info;
      if (info.id !== turn && inside.has(info.parent)) {
        inside.add(info.id);
        out.push(info.id);
      }
    }
    return out;
  }
}

/** Whether the record at `index` of the log is on `path`. */
export function onPath(record: LogRecord, index: number, path: TurnPath): boolean {
  const until = path.until.get(turnOf(record) ?? TRUNK);
  return until !== undefined && index < until;
}

/** The records of `log` on the path to `leaf`, in order: the log the model's view of that branch is derived from. */
export function branchLog(log: ConversationLog, leaf: string | null, turns: TurnIndex = new TurnIndex()): LogRecord[] {
  const path = turns.update(log).path(leaf);
  const out: LogRecord[] = [];
  log.forEach((record, index) => {
    if (onPath(record, index, path)) out.push(record);
  });
  return out;
}

/** `record` as made on `turn` (the trunk when null). */
export function onTurn(record: LogRecord, turn: string | null): LogRecord {
  if (record.type === 'turn' || turn === null) return record;
  return { ...record, turnId: turn };
}

/**
 * The turns a new turn under `parent` leaves behind: the branch below `parent` that was continued
 * last (the path from `parent`'s child down to the turn started last under it), oldest first. Empty
 * when `parent` has no later turns, as when the chat simply goes on.
 */
export function leftBehind(turns: TurnIndex, parent: string | null): string[] {
  const below = turns.descendants(parent);
  const last = below.at(-1);
  if (last === undefined) return [];
  const path = turns.path(last).turns;
  const from = parent === null ? 0 : path.indexOf(parent) + 1;
  return path.slice(from);
}
