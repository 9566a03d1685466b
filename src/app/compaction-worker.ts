import { parentPort } from 'node:worker_threads';
import { serveCompactions } from './remote-compaction';

/** The compaction worker's entry point (`dist/compaction-worker.js`): see `remote-compaction.ts`. */
if (parentPort) serveCompactions(parentPort);
