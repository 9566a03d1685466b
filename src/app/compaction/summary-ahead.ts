import { errorText } from '../../core/errors';
import type { CompactionOutcome } from '../../core/compaction';

/**
 * The states of the summary a conversation prepares ahead of need, once its view passes the warning
 * level, so that the compaction point finds it ready:
 *
 *   idle ──start──▶ preparing ──its summary computed (or failed)──▶ ready
 *   preparing, ready ──take, at a compaction──▶ applied (it served) or stale (the log outgrew the
 *                                                snapshot it was made on, it failed, or the compaction
 *                                                needed one of its own: made again then)
 *   preparing, ready ──cancel (the conversation left, undone past it, pruned first)──▶ idle
 *   preparing ──no summarizer to ask──▶ idle (the next message past the warning level asks again)
 *   applied, stale ──start──▶ preparing (the next one)
 *
 * One at a time: `start` does nothing unless the state is idle, applied or stale. What a compaction
 * says of a summary it took sets the state only while no other summary was started or cancelled since.
 */
export type AheadState = 'idle' | 'preparing' | 'ready' | 'stale' | 'applied';

/** A summary taken at a compaction: what it came to, and how the compaction used it. */
export interface TakenAhead {
  readonly outcome: Promise<CompactionOutcome>;
  /** The compaction applied it. */
  applied(): void;
  /** The compaction could not use it. */
  stale(): void;
}

interface Job {
  readonly promise: Promise<CompactionOutcome>;
  readonly controller: AbortController;
}

export class SummaryAhead {
  private current: AheadState = 'idle';
  private job: Job | undefined;
  /** Changes whenever a summary is started, taken or cancelled: what a compaction says of an older one is not the state. */
  private generation = 0;

  state(): AheadState {
    return this.current;
  }

  /** A summary is being prepared or is ready to apply. */
  pending(): boolean {
    return this.current === 'preparing' || this.current === 'ready';
  }

  /** Starts preparing a summary with `compute` (its failure is its outcome); false when one is pending. */
  start(compute: (signal: AbortSignal) => Promise<CompactionOutcome>): boolean {
    if (this.pending()) return false;
    const controller = new AbortController();
    const job: Job = {
      controller,
      promise: compute(controller.signal)
        .catch((error: unknown): CompactionOutcome => ({ status: 'failed', reason: errorText(error) }))
        .finally(() => {
          if (this.job === job && this.current === 'preparing') this.current = 'ready';
        }),
    };
    this.job = job;
    this.current = 'preparing';
    this.generation++;
    return true;
  }

  /** The job started with `signal` found nothing to prepare with: back to idle, unless it was replaced. */
  abandon(signal: AbortSignal): void {
    if (this.job?.controller.signal !== signal) return;
    this.job = undefined;
    this.current = 'idle';
    this.generation++;
  }

  /** Takes the pending summary for a compaction, which then says how it used it; undefined when none is pending. */
  take(): TakenAhead | undefined {
    const job = this.job;
    if (!job || !this.pending()) return undefined;
    this.job = undefined;
    // Until the compaction says, it is neither pending nor ready: nothing else takes it.
    this.current = 'stale';
    const generation = ++this.generation;
    return {
      outcome: job.promise,
      applied: () => {
        if (this.generation === generation) this.current = 'applied';
      },
      stale: () => {
        job.controller.abort();
        if (this.generation === generation) this.current = 'stale';
      },
    };
  }

  /** Drops the pending summary: the conversation was left, undone past it, or pruned first. */
  cancel(): void {
    this.job?.controller.abort();
    this.job = undefined;
    if (!this.pending()) return;
    this.current = 'idle';
    this.generation++;
  }
}
