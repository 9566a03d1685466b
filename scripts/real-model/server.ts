/**
 * `llama-server` on a loopback port with the installed model, as a user runs it for a small local
 * setup: one slot, a small window, the model's own chat template (through the Jinja engine, as tool
 * use needs), CPU only.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { createServer } from 'node:net';
import { availableParallelism } from 'node:os';
import type { RealModel } from './install';

/** The id the server answers to, in its model list and in requests. */
export const REAL_MODEL_ID = 'smollm2';

export interface LlamaServer {
  /** The OpenAI-compatible API root, `http://127.0.0.1:PORT/v1`. */
  readonly url: string;
  /** The server's own root, for its native endpoints (`/props`, `/tokenize`). */
  readonly root: string;
  readonly process: ChildProcess;
  close(): Promise<void>;
}

export interface LlamaServerOptions {
  /** The context the one slot holds (`-c`); 4,096 by default, the default of many local setups. */
  readonly contextSize?: number;
  /** Where the server's own log goes; discarded when absent. */
  readonly logFile?: string;
  /** How long the model may take to load. */
  readonly startTimeoutMs?: number;
}

/** Starts the server and resolves once it answers `/health` with the model loaded. */
export async function startLlamaServer(installed: RealModel, options: LlamaServerOptions = {}): Promise<LlamaServer> {
  const port = await freePort();
  const args = [
    ...['--model', installed.model, '--alias', REAL_MODEL_ID],
    ...['--ctx-size', String(options.contextSize ?? 4096), '--parallel', '1'],
    ...['--host', '127.0.0.1', '--port', String(port)],
    '--jinja',
    '--no-webui',
    // One processor is left to the editor and the browser beside it: threads that wait on each other
    // while another process holds their processor slow the model down several times over.
    ...['--threads', String(Math.max(1, availableParallelism() - 1))],
  ];
  const child = spawn(installed.server, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const log = options.logFile ? createWriteStream(options.logFile) : undefined;
  child.stdout?.on('data', (chunk: Buffer) => log?.write(chunk));
  child.stderr?.on('data', (chunk: Buffer) => log?.write(chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const root = `http://127.0.0.1:${port}`;
  const close = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000))]);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    log?.end();
  };
  const deadline = Date.now() + (options.startTimeoutMs ?? 120_000);
  let exitCode: number | null | undefined;
  void exited.then((code) => (exitCode = code));
  while (Date.now() < deadline) {
    if (exitCode !== undefined) throw new Error(`llama-server exited (${exitCode}) before it answered; see ${options.logFile ?? 'its log'}`);
    const healthy = await fetch(`${root}/health`)
      .then((r) => r.ok)
      .catch(() => false);
    if (healthy) return { url: `${root}/v1`, root, process: child, close };
    await new Promise((r) => setTimeout(r, 250));
  }
  await close();
  throw new Error(`llama-server did not load the model within ${Math.round((options.startTimeoutMs ?? 120_000) / 1000)} s`);
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}
