/**
 * A loopback HTTP proxy in front of the real `llama-server`, for the real-model phase: it passes
 * every request through as it is and records each chat completion (what was sent, the status, the
 * error body, the usage the server reported), and on request slows a stream down or holds it, as a
 * busy machine or a stalled server does. Controlled over `/__control/*`, as the scripted model is.
 */
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One chat completion that went through the proxy. */
export interface ProxiedRequest {
  readonly path: string;
  readonly body: unknown;
  /** The HTTP status the server answered; null while it has not. */
  status: number | null;
  /** The body of an answer that was not a 200, as the server sent it. */
  errorBody?: unknown;
  /** The server's own counts, from the answer's `usage`. */
  usage?: { readonly prompt_tokens: number; readonly completion_tokens: number };
  /** Whether the answer reached its end, or the client went away before it did. */
  outcome: 'pending' | 'answered' | 'client-closed';
  readonly receivedAt: number;
  answeredAt?: number;
}

/** How the next streamed answers are paced. */
export interface StreamPace {
  /** Each chunk of the server's stream waits this long before it is passed on. */
  readonly chunkDelayMs?: number;
  /** After this many chunks, the stream is held... */
  readonly stallAfterChunks?: number;
  /** ...for this long (or until the client goes away). */
  readonly stallMs?: number;
}

export interface RealModelProxy {
  /** The OpenAI-compatible API root Longrun is given, `http://127.0.0.1:PORT/v1`. */
  readonly url: string;
  close(): Promise<void>;
}

export async function startRealModelProxy(upstreamRoot: string): Promise<RealModelProxy> {
  const upstream = new URL(upstreamRoot);
  let recorded: ProxiedRequest[] = [];
  let pace: StreamPace = {};

  const server = createServer((req, res) => {
    void handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(String(error));
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req);
    const path = req.url ?? '/';
    if (path.startsWith('/__control/')) return control(path, body, res);
    const entry: ProxiedRequest | undefined = path.endsWith('/chat/completions')
      ? { path, body: parseJson(body), status: null, outcome: 'pending', receivedAt: Date.now() }
      : undefined;
    if (entry) recorded.push(entry);
    const headers = { ...req.headers, host: upstream.host, 'content-length': String(body.length) };
    const forwarded = httpRequest({ host: upstream.hostname, port: upstream.port, path, method: req.method, headers });
    res.on('close', () => {
      if (entry && entry.outcome === 'pending') entry.outcome = 'client-closed';
      forwarded.destroy();
    });
    forwarded.on('response', (answer) => void relay(answer, res, entry));
    forwarded.on('error', (error) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(String(error));
    });
    forwarded.end(body);
  }

  async function relay(answer: IncomingMessage, res: ServerResponse, entry: ProxiedRequest | undefined): Promise<void> {
    const status = answer.statusCode ?? 502;
    if (entry) entry.status = status;
    res.writeHead(status, answer.headers);
    const streamed = /event-stream/.test(String(answer.headers['content-type'] ?? ''));
    const kept: Buffer[] = [];
    const current = streamed && entry ? pace : {};
    let chunks = 0;
    for await (const chunk of answer) {
      if (res.destroyed) return;
      kept.push(chunk as Buffer);
      if (current.chunkDelayMs) await sleep(current.chunkDelayMs);
      if (current.stallAfterChunks !== undefined && chunks === current.stallAfterChunks && current.stallMs) {
        await sleepUnless(current.stallMs, () => res.destroyed);
        if (res.destroyed) return;
      }
      res.write(chunk);
      chunks++;
    }
    res.end();
    if (!entry) return;
    entry.outcome = 'answered';
    entry.answeredAt = Date.now();
    const text = Buffer.concat(kept).toString('utf8');
    if (status !== 200) entry.errorBody = parseJson(text);
    const usage = streamed ? usageOfStream(text) : (parseJson(text) as { usage?: ProxiedRequest['usage'] } | undefined)?.usage;
    if (usage) entry.usage = usage;
  }

  function control(path: string, body: Buffer, res: ServerResponse): void {
    const reply = (value: unknown): void => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(value ?? null));
    };
    if (path === '/__control/requests') return reply(recorded);
    if (path === '/__control/reset') {
      recorded = [];
      pace = {};
      return reply(true);
    }
    if (path === '/__control/pace') {
      pace = (parseJson(body.toString('utf8')) as StreamPace | undefined) ?? {};
      return reply(pace);
    }
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end(`no control ${path}`);
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The `usage` of a streamed answer: llama-server sends it on the last chunk before `[DONE]`. */
function usageOfStream(text: string): ProxiedRequest['usage'] {
  let usage: ProxiedRequest['usage'];
  for (const line of text.split('\n')) {
    if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
    const event = parseJson(line.slice(6)) as { usage?: ProxiedRequest['usage'] } | undefined;
    if (event?.usage) usage = event.usage;
  }
  return usage;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function parseJson(text: string | Buffer): unknown {
  try {
    return JSON.parse(text.toString());
  } catch {
    return undefined;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function sleepUnless(ms: number, stop: () => boolean): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until && !stop()) await sleep(Math.min(200, until - Date.now()));
}
