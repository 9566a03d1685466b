import { cutMarker, isHighSurrogate, isLowSurrogate } from '../../core/cut-marker';
import type { LogRecord } from '../../core/history';
import { CONVERSATION_FORMAT_VERSION } from './schemas';

/** A string in a record that may be cut, and how to put the cut one in its place. */
interface Slot {
  readonly original: string;
  /** Serialized bytes per character, so cuts are sized in what the line is measured in. */
  readonly density: number;
  set(value: string): void;
}

/** Room for the marker a cut leaves: the text plus JSON escapes of its newlines. */
const MARKER_BYTES = 160;

/**
 * The record of `line` with its longest texts cut in the middle until the line fits `maxBytes`.
 * Only content is cut (message text and reasoning, tool inputs and outputs, summaries); ids and
 * structure never are, since cutting them would change what the conversation means. First the
 * strings inside tool inputs and outputs are cut, keeping their shape; when that is not enough
 * (an output of a million small items), whole inputs and outputs become cut JSON text.
 */
export function capRecord(line: string, maxBytes: number): LogRecord {
  const excess = Buffer.byteLength(line) - maxBytes;
  let smallest: LogRecord | undefined;
  for (const whole of [false, true]) {
    const copy = withoutTokenCounts((JSON.parse(line) as { record: LogRecord }).record);
    const slots = contentSlots(copy, whole);
    let target = excess;
    for (let attempt = 0; attempt < 8; attempt++) {
      const enough = cutSlots(slots, target);
      const bytes = Buffer.byteLength(JSON.stringify({ v: CONVERSATION_FORMAT_VERSION, record: copy }));
      if (bytes <= maxBytes) return copy;
      smallest = copy;
      if (!enough) break;
      // Escapes and wide characters are spread unevenly: cut by what is still over, and again.
      target += bytes - maxBytes;
    }
  }
  return smallest!;
}

/** A message cut to fit no longer has the counts of the whole one: a reload counts it anew. */
function withoutTokenCounts(record: LogRecord): LogRecord {
  if (record.type !== 'message' || record.tokens === undefined) return record;
  const { tokens: _tokens, ...rest } = record;
  return rest;
}

function contentSlots(record: LogRecord, whole: boolean): Slot[] {
  const slots: Slot[] = [];
  const message =
    record.type === 'message'
      ? record.message
      : record.type === 'subagent' && record.subagent.kind === 'message'
        ? record.subagent.message
        : undefined;
  if (message) {
    for (const part of message.content as unknown as Array<Record<string, unknown>>) {
      // A signature no longer matches the text it was made for once that is cut: the part goes without it.
      if (part.type === 'text' || part.type === 'reasoning') stringSlot(slots, part, 'text', () => delete part.providerMetadata);
      else if (part.type === 'tool-call') valueSlots(slots, part, 'input', whole, 0);
      else if (part.type === 'tool-result') valueSlots(slots, part, 'output', whole, 0);
    }
  } else if (record.type === 'subagent') {
    const event = record.subagent as unknown as Record<string, unknown>;
    for (const key of ['task', 'summary', 'result']) stringSlot(slots, event, key);
  } else if (record.type === 'compaction') {
    const entry = record.entry as unknown as Record<string, unknown>;
    for (const key of ['summary', 'focus', 'failure']) stringSlot(slots, entry, key);
  } else if (record.type === 'change') {
    // A change cut to fit can no longer be reverted; its hashes say so when a revert is asked for.
    const change = record.change as unknown as Record<string, unknown>;
    for (const key of ['removed', 'inserted']) stringSlot(slots, change, key);
  }
  return slots;
}

function stringSlot(slots: Slot[], holder: Record<string, unknown> | unknown[], key: string | number, onCut?: () => void): void {
  const value = (holder as Record<string | number, unknown>)[key];
  if (typeof value !== 'string' || value.length === 0) return;
  const density = Buffer.byteLength(JSON.stringify(value)) / value.length;
  slots.push({
    original: value,
    density,
    set: (next) => {
      (holder as Record<string | number, unknown>)[key] = next;
      if (next !== value) onCut?.();
    },
  });
}

function valueSlots(slots: Slot[], holder: Record<string, unknown> | unknown[], key: string | number, whole: boolean, depth: number): void {
  const value = (holder as Record<string | number, unknown>)[key];
  if (typeof value === 'string') return stringSlot(slots, holder, key);
  if (typeof value !== 'object' || value === null) return;
  if (whole || depth > 64) {
    const text = JSON.stringify(value);
    slots.push({
      original: text,
      density: Buffer.byteLength(JSON.stringify(text)) / text.length,
      set: (next) => ((holder as Record<string | number, unknown>)[key] = next),
    });
    return;
  }
  if (Array.isArray(value)) value.forEach((_, index) => valueSlots(slots, value, index, whole, depth + 1));
  else for (const child of Object.keys(value)) valueSlots(slots, value as Record<string, unknown>, child, whole, depth + 1);
}

/**
 * Cuts the longest slots to a common length, the largest that frees `excess` bytes; every slot
 * is set from its original, so repeated calls do not nest markers. False when even cutting every
 * slot to nothing frees too little (they are then cut to nothing).
 */
function cutSlots(slots: readonly Slot[], excess: number): boolean {
  const freed = (keep: number) => slots.reduce((sum, s) => sum + Math.max(0, (s.original.length - keep) * s.density - MARKER_BYTES), 0);
  let low = 0;
  let high = slots.reduce((max, s) => Math.max(max, s.original.length), 0);
  const enough = freed(0) >= excess;
  if (enough) {
    // The largest length to keep that still frees enough.
    while (low < high) {
      const mid = Math.ceil((low + high) / 2);
      if (freed(mid) >= excess) low = mid;
      else high = mid - 1;
    }
  }
  for (const slot of slots) {
    const cutsSomething = (slot.original.length - low) * slot.density > MARKER_BYTES;
    slot.set(cutsSomething ? cutText(slot.original, low) : slot.original);
  }
  return enough;
}

/** `text` with its middle taken out, keeping about `keep` characters, and a marker in their place. */
function cutText(text: string, keep: number): string {
  let head = Math.ceil(keep / 2);
  let tailStart = text.length - Math.floor(keep / 2);
  // Never split a surrogate pair: half a character is not text.
  if (head > 0 && isHighSurrogate(text.charCodeAt(head - 1))) head--;
  if (tailStart < text.length && isLowSurrogate(text.charCodeAt(tailStart))) tailStart++;
  const tail = text.length - tailStart;
  return `${text.slice(0, head)}${cutMarker(text.length, head, tail)}${text.slice(tailStart)}`;
}
