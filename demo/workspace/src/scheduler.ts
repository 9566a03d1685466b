/** SM-2 spaced repetition: the next interval from the last one and how well the card was recalled. */
export interface Review {
  /** 0 (forgot) to 5 (perfect). */
  readonly quality: number;
  readonly easeFactor: number;
  readonly interval: number;
  readonly repetitions: number;
}

export function nextReview(previous: Review, quality: number): Review {
  if (quality < 3) return { quality, easeFactor: previous.easeFactor, interval: 1, repetitions: 0 };
  const easeFactor = Math.max(1.3, previous.easeFactor + 0.1 - (5 - quality) * (0.08 + (5 - quality) * 0.02));
  const repetitions = previous.repetitions + 1;
  const interval = repetitions === 1 ? 1 : repetitions === 2 ? 6 : Math.round(previous.interval * easeFactor);
  return { quality, easeFactor, interval, repetitions };
}
