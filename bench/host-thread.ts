/**
 * What the benchmarks of the extension host's thread share: a ticker that notes the longest stretch
 * the thread could not run, the compaction worker as the extension ships it, and a core kept busy
 * beside the benchmark (as when the agent runs `npm test` or the TypeScript server works).
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { build, type BuildOptions } from 'esbuild';

/** The longest stretch (ms) this thread could not run while `work` ran, and all of them over 1 ms together. */
export interface Gaps {
  readonly longest: number;
  readonly busy: number;
}

/** Runs `work` while a ticker on this thread notes the gaps it could not run in. */
export async function gapsDuring(work: () => Promise<unknown>): Promise<Gaps> {
  let last = performance.now();
  let longest = 0;
  let busy = 0;
  let running = true;
  const tick = (): void => {
    const now = performance.now();
    const gap = now - last;
    last = now;
    longest = Math.max(longest, gap);
    if (gap > 1) busy += gap;
    if (running) setImmediate(tick);
  };
  setImmediate(tick);
  try {
    await work();
  } finally {
    running = false;
  }
  tick();
  return { longest, busy };
}

/** The compaction worker as the extension ships it (`dist/compaction-worker.js`), built into `dir` with its vocabulary inside. */
export async function buildWorker(dir: string): Promise<string> {
  const { buildOptions } = require('../esbuild.js') as {
    buildOptions: (options: { production: boolean; outdir: string }) => Promise<Record<string, BuildOptions>>;
  };
  const { worker } = await buildOptions({ production: true, outdir: dir });
  // The vocabulary is bundled in rather than required from a file beside it: the same code, one file.
  await build({ ...worker, define: {}, logLevel: 'warning' });
  return join(dir, 'compaction-worker.js');
}

/**
 * Runs `work` while another process keeps one core busy (a loop that never yields, at the normal
 * priority), and stops that process after.
 */
export async function withBusyCore<T>(work: () => Promise<T>): Promise<T> {
  const busy = spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
  await new Promise<void>((resolve, reject) => {
    busy.once('spawn', resolve);
    busy.once('error', reject);
  });
  try {
    return await work();
  } finally {
    busy.kill('SIGKILL');
    await new Promise((resolve) => (busy.exitCode !== null || busy.signalCode !== null ? resolve(undefined) : busy.once('exit', resolve)));
  }
}
