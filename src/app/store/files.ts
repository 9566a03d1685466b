import { promises as fs } from 'node:fs';
import { isRecord } from '../../core/errors';

/** The file opened for reading; undefined when it does not exist. */
export async function openIfExists(file: string): Promise<fs.FileHandle | undefined> {
  try {
    return await fs.open(file, 'r');
  } catch (error) {
    if (isCode(error, 'ENOENT')) return undefined;
    throw error;
  }
}

/** Writes all of `data` with as few writes as the system allows: one, unless a write comes back short. */
export async function writeAll(handle: fs.FileHandle, data: Buffer): Promise<void> {
  let offset = 0;
  while (offset < data.length) {
    const { bytesWritten } = await handle.write(data, offset, data.length - offset);
    if (bytesWritten <= 0) throw new Error(`Could not write to the conversation file: ${data.length - offset} bytes were left unwritten.`);
    offset += bytesWritten;
  }
}

export async function appendWhole(file: string, text: string): Promise<void> {
  const handle = await fs.open(file, 'a');
  try {
    await writeAll(handle, Buffer.from(text, 'utf8'));
  } finally {
    await handle.close();
  }
}

export async function byteAt(handle: fs.FileHandle, position: number): Promise<number | undefined> {
  const buffer = Buffer.alloc(1);
  const { bytesRead } = await handle.read(buffer, 0, 1, position);
  return bytesRead === 1 ? buffer[0] : undefined;
}

export async function isFile(file: string): Promise<boolean> {
  try {
    return (await fs.stat(file)).isFile();
  } catch (error) {
    if (isCode(error, 'ENOENT')) return false;
    throw error;
  }
}

export function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export function isCode(error: unknown, code: string): boolean {
  return isRecord(error) && error.code === code;
}
