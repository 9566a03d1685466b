/**
 * The HTTP plumbing of the scripted model: who may call it, reading a body within a limit, waiting
 * unless the client leaves, and writing answers and broken streams.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/** The largest request body read; a larger one is drained, not kept, and refused. */
export const MAX_BODY_BYTES = 16 * 1024 * 1024;

/** Whether a `Host` header names this machine's loopback, the only callers let in (no DNS rebinding onto the control API). */
export function isLoopbackHost(host: string | undefined): boolean {
  if (!host) return false;
  const name = host.replace(/:\d+$/, '').toLowerCase();
  return name === '127.0.0.1' || name === 'localhost';
}

/** A request body read whole, or why not. */
export type Body = { kind: 'ok'; text: string } | { kind: 'too-large' } | { kind: 'closed' };

/** Reads a body up to {@link MAX_BODY_BYTES}. */
export async function readBody(req: IncomingMessage): Promise<Body> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of req) {
      const buffer = chunk as Buffer;
      size += buffer.length;
      // Past the limit the rest is drained, not kept, so that a 413 can still be answered.
      if (size <= MAX_BODY_BYTES) chunks.push(buffer);
    }
  } catch {
    return { kind: 'closed' };
  }
  if (size > MAX_BODY_BYTES) return { kind: 'too-large' };
  return { kind: 'ok', text: Buffer.concat(chunks).toString('utf8') };
}

/** Resolves true after `ms`, or false as soon as the client's connection closes. */
export function waitUnlessClosed(res: ServerResponse, ms: number): Promise<boolean> {
  if (res.destroyed) return Promise.resolve(false);
  if (ms <= 0) return Promise.resolve(true);
  return new Promise((resolve) => {
    const onClose = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      res.off('close', onClose);
      resolve(true);
    }, ms);
    res.once('close', onClose);
  });
}

/** Answers with a JSON body. */
export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'Content-Type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

/** Sends `frames`, then destroys the socket once they are written, before the stream's end. */
export function breakStream(res: ServerResponse, frames: readonly string[]): void {
  if (frames.length === 0) {
    res.flushHeaders();
    setImmediate(() => res.destroy());
    return;
  }
  frames.forEach((frame, i) => {
    const last = i === frames.length - 1;
    res.write(frame, last ? () => res.destroy() : undefined);
  });
}
