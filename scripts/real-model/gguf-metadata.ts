/**
 * The key–value header of a GGUF model file, read without loading the model: what the install checks
 * (that the model is an instruction-tuned one, with a chat template) before a phase relies on it.
 */
import { closeSync, openSync, readSync } from 'node:fs';

/** A header value: arrays are reported by their length alone, since a vocabulary runs to megabytes. */
export type GgufValue = string | number | bigint | boolean | { readonly arrayOf: number };

const CHUNK = 1 << 20;

/** Reads a file forward in chunks, so that the header is read and the tensors never are. */
class Cursor {
  private buffer = Buffer.alloc(0);
  private start = 0;
  private offset = 0;

  constructor(private readonly fd: number) {}

  private need(bytes: number): void {
    while (this.offset + bytes > this.start + this.buffer.length) {
      const chunk = Buffer.alloc(Math.max(CHUNK, bytes));
      const read = readSync(this.fd, chunk, 0, chunk.length, this.start + this.buffer.length);
      if (read === 0) throw new Error('the file ends inside its GGUF header');
      const kept = this.buffer.subarray(this.offset - this.start);
      this.buffer = Buffer.concat([kept, chunk.subarray(0, read)]);
      this.start = this.offset;
    }
  }

  private take(bytes: number): Buffer {
    this.need(bytes);
    const at = this.offset - this.start;
    this.offset += bytes;
    return this.buffer.subarray(at, at + bytes);
  }

  u32(): number {
    return this.take(4).readUInt32LE(0);
  }

  u64(): bigint {
    return this.take(8).readBigUInt64LE(0);
  }

  skip(bytes: number): void {
    this.take(bytes);
  }

  string(): string {
    return this.take(Number(this.u64())).toString('utf8');
  }

  scalar(type: number): GgufValue {
    switch (type) {
      case 0:
        return this.take(1).readUInt8(0);
      case 1:
        return this.take(1).readInt8(0);
      case 2:
        return this.take(2).readUInt16LE(0);
      case 3:
        return this.take(2).readInt16LE(0);
      case 4:
        return this.u32();
      case 5:
        return this.take(4).readInt32LE(0);
      case 6:
        return this.take(4).readFloatLE(0);
      case 7:
        return this.take(1).readUInt8(0) !== 0;
      case 8:
        return this.string();
      case 10:
        return this.u64();
      case 11:
        return this.take(8).readBigInt64LE(0);
      case 12:
        return this.take(8).readDoubleLE(0);
      default:
        throw new Error(`unknown GGUF value type ${type}`);
    }
  }
}

const FIXED_SIZE: Readonly<Record<number, number>> = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };

function readValue(cursor: Cursor, type: number): GgufValue {
  if (type !== 9) return cursor.scalar(type);
  const itemType = cursor.u32();
  const length = Number(cursor.u64());
  const size = FIXED_SIZE[itemType];
  if (size !== undefined) cursor.skip(size * length);
  else for (let i = 0; i < length; i++) readValue(cursor, itemType);
  return { arrayOf: length };
}

/** The header's keys and values; throws, naming the file, when it is not a GGUF file. */
export function readGgufMetadata(path: string): Map<string, GgufValue> {
  const fd = openSync(path, 'r');
  try {
    const cursor = new Cursor(fd);
    if (cursor.u32() !== 0x46554747) throw new Error(`${path} is not a GGUF file`);
    cursor.u32();
    cursor.u64();
    const count = Number(cursor.u64());
    const metadata = new Map<string, GgufValue>();
    for (let i = 0; i < count; i++) {
      const key = cursor.string();
      metadata.set(key, readValue(cursor, cursor.u32()));
    }
    return metadata;
  } finally {
    closeSync(fd);
  }
}
