import { Worker } from 'node:worker_threads';
import type { SearchMatch } from '../../llm/workspace-port';

/**
 * Runs `search_text`'s regular expression on a worker thread with a deadline. Pure Node (no `vscode`).
 *
 * JavaScript's regular expressions backtrack: `^(a+)+$` against 29 `a`s and a `b` takes seconds, and
 * on the extension host's thread that freezes every extension. On a worker it only costs that
 * worker, which is terminated when the deadline passes.
 *
 * The worker's code is a string run with `eval: true`, so it exists wherever this module does: in
 * the single esbuild bundle and under tsx alike, with no second entry point to ship.
 */

/** A file's text, sent to the worker. */
export interface SearchedFile {
  /** Workspace-relative path, as the model sees it. */
  readonly path: string;
  readonly text: string;
}

/** Longest line text a match carries back; the tool shows far less, and a minified line can be a megabyte. */
export const MAX_MATCH_TEXT = 2_000;

/** Thrown by {@link TextSearch.search} when the deadline passed first; the worker is gone by then. */
export class SearchTimedOut extends Error {
  override readonly name = 'SearchTimedOut';

  /** @param matching whether the worker was running the pattern when time ran out (else files were still being gathered). */
  constructor(
    message: string,
    readonly matching: boolean,
  ) {
    super(message);
  }
}

const WORKER_SOURCE = `
'use strict';
const { parentPort, workerData } = require('node:worker_threads');
const pattern = new RegExp(workerData.source, workerData.flags);
const maxText = workerData.maxText;
parentPort.on('message', (request) => {
  const matches = [];
  search: for (const file of request.files) {
    const lines = file.text === '' ? [] : file.text.split(/\\r?\\n/);
    if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i];
      if (!pattern.test(line)) continue;
      matches.push({ path: file.path, line: i + 1, text: line.length > maxText ? line.slice(0, maxText) : line });
      if (matches.length >= request.wanted) break search;
    }
  }
  parentPort.postMessage({ id: request.id, matches });
});
`;

interface Pending {
  readonly resolve: (matches: SearchMatch[]) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * One search: a worker holding the compiled pattern, fed batches of files. The deadline counts from
 * construction; when it passes, or the signal aborts, the worker is terminated and every pending
 * and later {@link search} rejects. Call {@link dispose} when done.
 */
export class TextSearch {
  private readonly worker: Worker;
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  private failure: unknown;
  private readonly timer: NodeJS.Timeout;
  private readonly onAbort: () => void;
  private rejectStopped: (reason: unknown) => void = () => undefined;
  /** Rejects, with the reason, as soon as searching stops (deadline, abort, worker failure or dispose). */
  readonly stopped: Promise<never>;

  /**
   * @param pattern compiled once on the caller's thread already, so that a syntax error is reported
   *   there; no `g` or `y` flag (`test` must not keep state between lines).
   */
  constructor(
    pattern: RegExp,
    readonly deadlineMs: number,
    private readonly signal: AbortSignal,
  ) {
    this.stopped = new Promise<never>((_, reject) => (this.rejectStopped = reject));
    this.stopped.catch(() => undefined);
    this.worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { source: pattern.source, flags: pattern.flags.replace(/[gy]/g, ''), maxText: MAX_MATCH_TEXT },
    });
    this.worker.on('message', (reply: { id: number; matches: SearchMatch[] }) => {
      const request = this.pending.get(reply.id);
      this.pending.delete(reply.id);
      request?.resolve(reply.matches);
    });
    this.worker.on('error', (error) => this.fail(error));
    this.worker.on('exit', () => this.fail(new Error('The search worker stopped unexpectedly.')));
    this.timer = setTimeout(() => this.fail(new SearchTimedOut(`The search took longer than ${deadlineMs} ms.`, this.pending.size > 0)), deadlineMs);
    this.onAbort = () => this.fail(signal.reason);
    signal.addEventListener('abort', this.onAbort, { once: true });
    if (signal.aborted) this.fail(signal.reason);
  }

  /** The matching lines of `files`, in order, at most `wanted` of them. */
  search(files: readonly SearchedFile[], wanted: number): Promise<SearchMatch[]> {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    const id = this.nextId++;
    return new Promise<SearchMatch[]>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage({ id, files, wanted });
    });
  }

  dispose(): void {
    this.fail(new Error('The search is over.'));
  }

  private fail(reason: unknown): void {
    if (this.failure !== undefined) return;
    this.failure = reason;
    clearTimeout(this.timer);
    this.signal.removeEventListener('abort', this.onAbort);
    void this.worker.terminate();
    for (const request of this.pending.values()) request.reject(reason);
    this.pending.clear();
    this.rejectStopped(reason);
  }
}
