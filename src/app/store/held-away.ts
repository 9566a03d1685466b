import { contentHeldAway, type LogRecord } from '../../core/history';
import type { LineLocation } from './part-writer';

/*
 * Where the line of a message record held without its content is, and the line's check (`lineCheck`),
 * kept on the record itself as four small integers: a conversation of a hundred thousand records holds
 * no table beside them, and no object per location. Symbol keys are left out of the record's JSON and
 * of the copies sent to a worker.
 */
const PART = Symbol('longrun.part');
const OFFSET = Symbol('longrun.offset');
const BYTES = Symbol('longrun.bytes');
const CHECK = Symbol('longrun.check');

interface Located {
  readonly [PART]?: number;
  readonly [OFFSET]?: number;
  readonly [BYTES]?: number;
  readonly [CHECK]?: number | undefined;
}

/** The record of a message held without its content (see `contentHeldAway`), knowing where its line is. */
export function heldAway(record: LogRecord & { type: 'message' }, at: LineLocation): LogRecord {
  const { message } = contentHeldAway(record);
  const part = small(at.part);
  const offset = small(at.offset);
  const bytes = small(at.bytes);
  const check = at.check === undefined ? undefined : small(at.check);
  // Written out, so that each such record is one small object of a shape they all share.
  const held: LogRecord & Located =
    record.turnId === undefined
      ? { type: 'message', message, [PART]: part, [OFFSET]: offset, [BYTES]: bytes, [CHECK]: check }
      : { type: 'message', message, turnId: record.turnId, [PART]: part, [OFFSET]: offset, [BYTES]: bytes, [CHECK]: check };
  return held;
}

/** Below this, a whole number is a small integer to the JavaScript engine, on every platform it runs on. */
const SMALL_LIMIT = 0x40000000;

/**
 * `n`, made a small integer when its value is one. A location's numbers are whole, but one that went
 * through floating-point arithmetic (a file's size from `stat`, plus a length) comes as a number object
 * of its own; stored in one record, such a value changes the record's shape, and every record held so
 * far then takes a number object of its own in that field (16 bytes each) as it is next read.
 */
function small(n: number): number {
  return Number.isInteger(n) && n >= 0 && n < SMALL_LIMIT ? n | 0 : n;
}

/** Where the line of `record` is when it is held without its content; undefined for any other record. */
export function awayAt(record: LogRecord): LineLocation | undefined {
  const located = record as Located;
  const part = located[PART];
  if (part === undefined) return undefined;
  const check = located[CHECK];
  return check === undefined
    ? { part, offset: located[OFFSET]!, bytes: located[BYTES]! }
    : { part, offset: located[OFFSET]!, bytes: located[BYTES]!, check };
}

/** Whether `record` is held without its content. */
export function isHeldAway(record: LogRecord): boolean {
  return (record as Located)[PART] !== undefined;
}

/**
 * While a conversation is read, its short messages not yet taken out of the view, by id: when a
 * compaction record names them as compacted, they are given without their content from then on.
 */
export class CompactedAway {
  private readonly pending = new Map<string, { readonly index: number; readonly at: LineLocation }>();

  note(id: string, index: number, at: LineLocation): void {
    this.pending.set(id, { index, at });
  }

  /**
   * Replaces in `log` the messages of `ids` noted, held without their content (those already held so
   * stay as they are); `onTaken` is told the index of each.
   */
  takeOut(ids: readonly string[], log: LogRecord[], onTaken?: (index: number) => void): void {
    for (const id of ids) {
      const noted = this.pending.get(id);
      if (noted === undefined) continue;
      this.pending.delete(id);
      const record = log[noted.index];
      if (record?.type !== 'message') continue;
      if (!isHeldAway(record)) log[noted.index] = heldAway(record, noted.at);
      onTaken?.(noted.index);
    }
  }
}
