/**
 * Simulated time for benchmarks of waiting: a 2 s summarizer and a model that takes seconds per
 * step would make a 60-turn session take minutes of real time. Time here moves only when nothing
 * else can happen: every promise has settled, no file operation is under way, and the next thing
 * due is a timer of this clock. Work done in between takes no simulated time, so what is measured
 * is waiting on the summarizer and the model alone.
 */
import type { Clock } from '../src/core/ports';

interface Timer {
  readonly at: number;
  readonly order: number;
  readonly fn: () => void;
}

/** A clock whose time advances only through `run`. */
export class VirtualClock implements Clock {
  private time = 0;
  private order = 0;
  private timers: Timer[] = [];

  /** `busy` says whether real input/output is under way, which time must not overtake. */
  constructor(private readonly busy: () => boolean = () => false) {}

  now(): number {
    return this.time;
  }

  setTimer(ms: number, fn: () => void): () => void {
    const timer: Timer = { at: this.time + Math.max(0, ms), order: this.order++, fn };
    this.timers.push(timer);
    return () => {
      this.timers = this.timers.filter((t) => t !== timer);
    };
  }

  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.setTimer(ms, resolve));
  }

  /** Runs `work` to its end, moving time to the next timer whenever everything else is idle. */
  async run<T>(work: () => Promise<T>): Promise<T> {
    let outcome: { ok: true; value: T } | { ok: false; error: unknown } | undefined;
    void work().then(
      (value) => (outcome = { ok: true, value }),
      (error: unknown) => (outcome = { ok: false, error }),
    );
    let stalled = 0;
    while (!outcome) {
      await this.idle();
      if (outcome) break;
      const next = this.timers.reduce<Timer | undefined>((a, t) => (!a || t.at < a.at || (t.at === a.at && t.order < a.order) ? t : a), undefined);
      if (!next) {
        // Nothing scheduled and not done: something waits on a real timer; give it real time.
        if (++stalled > 10_000) throw new Error('the simulated session is stuck: nothing is scheduled and nothing is under way');
        await new Promise((resolve) => setTimeout(resolve, 1));
        continue;
      }
      stalled = 0;
      this.timers = this.timers.filter((t) => t !== next);
      this.time = next.at;
      next.fn();
    }
    if (!outcome.ok) throw outcome.error;
    return outcome.value;
  }

  /** Until no file operation is under way and a few turns of the event loop changed nothing. */
  private async idle(): Promise<void> {
    do {
      // Each turn of the loop runs every pending promise continuation first.
      for (let i = 0; i < 4; i++) await new Promise((resolve) => setImmediate(resolve));
    } while (this.busy());
  }
}
