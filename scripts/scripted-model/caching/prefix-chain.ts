import { createHash } from 'node:crypto';

/**
 * Names for the prefixes of a sequence: the i-th hash stands for the sequence's first i+1 pieces, so
 * two requests share a hash exactly when they share that whole prefix, byte for byte. What the pieces
 * are (content blocks, runs of 128 tokens) is the caller's; `seed` keeps apart what must never share a
 * cache (another model, another cache key).
 */
export function prefixHashes(seed: string, pieces: readonly string[]): string[] {
  const hashes: string[] = [];
  let previous = createHash('sha256').update(seed).digest('hex');
  for (const piece of pieces) {
    previous = createHash('sha256').update(previous).update('\u0000').update(piece).digest('hex');
    hashes.push(previous);
  }
  return hashes;
}

/** The running sums of `counts`: entry i is the sum of the first i+1. */
export function runningTotals(counts: readonly number[]): number[] {
  let sum = 0;
  return counts.map((count) => (sum += count));
}
