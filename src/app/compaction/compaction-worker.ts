import { constants, setPriority } from 'node:os';
import { parentPort } from 'node:worker_threads';
import { serveCompactions } from './remote-compaction';

/**
 * The compaction worker's entry point (`dist/compaction-worker.js`): see `remote-compaction.ts`.
 *
 * On Linux a thread has a priority of its own, and the worker's is lowered: a compaction waits for
 * the editor's thread rather than the other way round, where there are fewer cores than busy threads.
 * Elsewhere the priority belongs to the whole process, and is left alone.
 */
if (process.platform === 'linux') {
  try {
    setPriority(0, constants.priority.PRIORITY_BELOW_NORMAL);
  } catch {
    // Not allowed here: the worker runs at the editor's priority.
  }
}
if (parentPort) serveCompactions(parentPort);
