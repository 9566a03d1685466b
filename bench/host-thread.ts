/**
 * What the benchmarks of the extension host's thread share: a ticker that notes the longest stretch
 * the thread could not run, the compaction worker as the extension ships it, and a core kept busy
 * beside the benchmark (as when the agent runs `npm test` or the TypeScript server works).
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { build, type BuildOptions } from 'esbuild';
import { compactionWorkerOptions, type WorkerPriority } from '../src/app/compaction/worker-priority';

/**
 * The longest stretch (ms) this thread could not run while `work` ran, all of them over 1 ms together,
 * and how much of the longest the runtime's garbage collector held the thread (ms; its collections of
 * this thread's heap, as the runtime reports them).
 */
export interface Gaps {
  readonly longest: number;
  readonly busy: number;
  readonly collector: number;
  /** How many collections of this thread's heap ran while `work` ran. */
  readonly collections: number;
}

/**
 * How long the ticker sleeps between ticks (ms). Each tick allocates a little (the runtime's record
 * of the next turn), and the ticks of an idle wait add up to a good part of what the thread allocates
 * during a compaction: ticking more often would bring on collections of the host's heap that an idle
 * extension host, asleep until its next event, does not have. A sleep does not hide a stretch: a gap
 * is counted from the end of one sleep to the start of the next.
 */
const NAP_MS = 0.25;

/**
 * Runs `work` while a ticker on this thread notes the gaps it could not run in: from the end of a
 * tick to the start of the next. Between ticks the ticker sleeps a little, as an idle extension
 * host's thread does, rather than running every turn of the event loop: a thread that never sleeps
 * is always waiting for a core, and when the compaction worker and another process use both cores
 * the system takes it off its core for whole clock ticks (4 ms on these machines), which a spinning
 * ticker counts as the host's own stretches. A gap still counts whatever holds the thread: the work,
 * the garbage collector, and the system taking the thread off its core while it works.
 */
export async function gapsDuring(work: () => Promise<unknown>): Promise<Gaps> {
  const nap = new Int32Array(new SharedArrayBuffer(4));
  const collections: PerformanceEntry[] = [];
  const observer = new PerformanceObserver((list) => void collections.push(...list.getEntries()));
  observer.observe({ entryTypes: ['gc'] });
  // The ticker's numbers live in an array of doubles: a number kept in a variable the ticker's
  // closures share is a new object on the heap at every write, and the ticker's own allocation
  // would bring on collections of the very heap it measures.
  const t = new Float64Array(5);
  const LAST = 0,
    LONGEST = 1,
    FROM = 2,
    TO = 3,
    BUSY = 4;
  t[LAST] = performance.now();
  t[FROM] = t[TO] = t[LAST];
  let running = true;
  const note = (): void => {
    const now = performance.now();
    const gap = now - t[LAST]!;
    if (gap > t[LONGEST]!) {
      t[LONGEST] = gap;
      t[FROM] = t[LAST]!;
      t[TO] = now;
    }
    if (gap > 1) t[BUSY] = t[BUSY]! + gap;
  };
  const tick = (): void => {
    if (!running) return;
    note();
    Atomics.wait(nap, 0, 0, NAP_MS);
    t[LAST] = performance.now();
    setImmediate(tick);
  };
  setImmediate(tick);
  try {
    await work();
  } finally {
    running = false;
  }
  note();
  collections.push(...observer.takeRecords());
  observer.disconnect();
  const [from, to] = [t[FROM]!, t[TO]!];
  const collector = collections.reduce(
    (sum, entry) => sum + Math.max(0, Math.min(to, entry.startTime + entry.duration) - Math.max(from, entry.startTime)),
    0,
  );
  return { longest: t[LONGEST]!, busy: t[BUSY]!, collector, collections: collections.length };
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
 * Starts the compaction worker built by `buildWorker` as the extension starts it: plain Node on the
 * bundled file, at the priority the engine asks for. A worker inherits the options of the process
 * that starts it, and the benchmarks run under a TypeScript loader, which in the worker would load
 * the bundle through loader hooks (and their own thread) and compile what they run on the threads
 * the host's thread shares its cores with.
 */
export function startWorker(file: string, priority: WorkerPriority): Worker {
  return new Worker(file, { ...compactionWorkerOptions(priority), execArgv: [] });
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
