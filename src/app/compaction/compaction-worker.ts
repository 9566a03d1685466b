import { parentPort, workerData } from 'node:worker_threads';
import { serveCompactions, type WorkerStarted } from './remote-compaction';
import { lowerThisThread, type WorkerPriority } from './worker-priority';

/**
 * The compaction worker's entry point (`dist/compaction-worker.js`): see `remote-compaction.ts`.
 *
 * The worker's thread runs at the priority the host asks for (`workerData.priority`, `idle` unless
 * said otherwise; see `worker-priority.ts`): a compaction waits for the editor's thread rather than
 * the other way round, where there are fewer cores than busy threads. It tells the host which thread
 * it is and what it got, so that the host can watch it wait.
 */
const port = parentPort;
if (port) {
  serveCompactions(port);
  const wanted = (workerData as { priority?: WorkerPriority } | undefined)?.priority === 'low' ? 'low' : 'idle';
  void lowerThisThread(wanted).then((thread) => port.postMessage({ kind: 'started', ...thread } satisfies WorkerStarted));
}
