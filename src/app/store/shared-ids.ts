import type { LogRecord } from '../../core/history';

/**
 * One copy of each id a conversation's lines repeat, while it is read: a message's id comes again in
 * the compaction that took it out of the view, and a turn's id on every record of the turn and on
 * the turns that continue it. Parsed
 * apart, each repetition would be a string of its own, held as long as the conversation is open.
 */
export class SharedIds {
  private readonly seen = new Map<string, string>();

  of(value: string): string {
    const known = this.seen.get(value);
    if (known !== undefined) return known;
    this.seen.set(value, value);
    return value;
  }

  /**
   * `record`, just parsed and held by nothing else, with its ids replaced by the copies seen before.
   * It is changed in place: a copy would cost what sharing saves.
   */
  share(record: LogRecord): LogRecord {
    const ids = record as { turnId?: string };
    if (ids.turnId !== undefined) ids.turnId = this.of(ids.turnId);
    if (record.type === 'message') {
      (record.message as { id: string }).id = this.of(record.message.id);
    } else if (record.type === 'turn') {
      const turn = record.turn as { id: string; parent: string | null };
      turn.id = this.of(turn.id);
      if (turn.parent !== null) turn.parent = this.of(turn.parent);
    } else if (record.type === 'compaction') {
      const entry = record.entry as unknown as { compactedMessageIds: string[]; firstKeptMessageId: string | null };
      const compacted = entry.compactedMessageIds;
      for (let i = 0; i < compacted.length; i++) compacted[i] = this.of(compacted[i]!);
      if (entry.firstKeptMessageId !== null) entry.firstKeptMessageId = this.of(entry.firstKeptMessageId);
    }
    return record;
  }
}
