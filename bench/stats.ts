/** Small statistics for the benchmarks. */

/** Milliseconds since `start` (from `process.hrtime.bigint()`). */
export function elapsedMs(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e6;
}

/** The value at quantile `q` (0–1) of `values`, by the nearest-rank method. */
export function percentile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

/** The middle value of `values` (the lower one of an even count). */
export function median(values: readonly number[]): number {
  return percentile(values, 0.5);
}

/** Rounds to `digits` decimals, for numbers meant to be read. */
export function round(value: number, digits = 2): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}
