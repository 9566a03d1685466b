import { execFile } from 'node:child_process';
import { existsSync, readFileSync, readlinkSync } from 'node:fs';
import { constants, setPriority } from 'node:os';
import type { WorkerOptions } from 'node:worker_threads';

/**
 * How low the compaction worker's thread runs, on Linux, where a thread has a priority of its own
 * (elsewhere the priority belongs to the whole process, and is left alone):
 * - `idle`: only on a processor no other thread wants (the `SCHED_IDLE` policy): the editor's thread,
 *   when it wakes, takes the processor from the worker at once rather than waiting for a turn.
 * - `low`: a lowered priority (a nice value of 10), which still gets a share of a busy machine.
 *
 * A worker that runs only on idle processors can wait as long as the machine stays busy: the host
 * watches how long it waits for a processor (`threadTimes`) and starts the next one at `low` when it
 * starves (`remote-compaction.ts`).
 */
export type WorkerPriority = 'idle' | 'low';

/**
 * How the compaction worker is started, at `priority`. Its young generation is kept as small as the
 * runtime allows (one megabyte a semi-space), so that the runtime collects it on the worker's own
 * thread, at the worker's priority: a larger one is collected by several helper threads at once, at
 * the normal priority, which on a machine with few processors take them from the editor's thread.
 */
export function compactionWorkerOptions(priority: WorkerPriority): WorkerOptions {
  return { workerData: { priority }, resourceLimits: { maxYoungGenerationSizeMb: 1 } };
}

/** What the worker's thread got: its id in the system and its priority (`normal` where none could be lowered). */
export interface LoweredThread {
  readonly tid?: number;
  readonly priority: WorkerPriority | 'normal';
}

/**
 * Where Linux systems keep `chrt`. It is run from one of these, never looked up in the search path,
 * which a workspace's tools can put first.
 */
export const CHRT_PATHS: readonly string[] = ['/usr/bin/chrt', '/bin/chrt', '/run/current-system/sw/bin/chrt'];

/** Runs a program and tells whether it succeeded. */
function succeeds(file: string, args: readonly string[]): Promise<boolean> {
  return new Promise((resolve) => execFile(file, [...args], { timeout: 5_000, windowsHide: true }, (error) => resolve(!error)));
}

/**
 * Lowers the calling thread's priority to `wanted`, as far as the system lets it. `idle` is set with
 * `chrt` (part of Linux's standard tools, run from `CHRT_PATHS`), and only where the thread's waiting
 * time can be read, so that the host can tell when it starves; where either is missing, the thread
 * stays `low`.
 */
export async function lowerThisThread(wanted: WorkerPriority): Promise<LoweredThread> {
  if (process.platform !== 'linux') return { priority: 'normal' };
  try {
    setPriority(0, constants.priority.PRIORITY_BELOW_NORMAL);
  } catch {
    return { priority: 'normal' };
  }
  let tid: number;
  try {
    // `/proc/thread-self` names the calling thread: `<pid>/task/<tid>`.
    tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
  } catch {
    return { priority: 'low' };
  }
  if (!Number.isInteger(tid) || tid <= 0) return { priority: 'low' };
  const chrt = CHRT_PATHS.find((path) => existsSync(path));
  if (wanted !== 'idle' || !chrt || !threadTimes(tid)) return { tid, priority: 'low' };
  return { tid, priority: (await succeeds(chrt, ['--idle', '-p', '0', String(tid)])) ? 'idle' : 'low' };
}

/** How long (ms) the thread `tid` of this process has run, and waited ready to run for a processor; undefined where the system does not say. */
export function threadTimes(tid: number): { readonly run: number; readonly wait: number } | undefined {
  try {
    const [run, wait] = readFileSync(`/proc/self/task/${tid}/schedstat`, 'utf8').split(' ').map(Number);
    return Number.isFinite(run) && Number.isFinite(wait) ? { run: run! / 1e6, wait: wait! / 1e6 } : undefined;
  } catch {
    return undefined;
  }
}
