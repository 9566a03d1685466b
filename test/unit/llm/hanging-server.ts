import * as net from 'node:net';

/**
 * A server on 127.0.0.1 that accepts every connection and never answers: no status line, no
 * headers, no body. What a stuck model server looks like from the client.
 */
export class HangingServer {
  private readonly server = net.createServer((socket) => {
    this.sockets.add(socket);
    this.connections++;
    socket.on('data', () => undefined);
    socket.on('close', () => this.sockets.delete(socket));
  });
  private readonly sockets = new Set<net.Socket>();
  /** Connections accepted so far. */
  connections = 0;

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    const { port } = this.server.address() as net.AddressInfo;
    return `http://127.0.0.1:${port}/v1`;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** Rejects when `promise` has not settled within `ms`: a test of a deadline must not wait for the test timeout. */
export function within<T>(ms: number, promise: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`still waiting after ${ms} ms`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}
