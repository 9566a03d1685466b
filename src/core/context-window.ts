/**
 * How many tokens a model's context window holds, as the engine is given it, and the rule for the
 * room kept for the answer. Where the number comes from (the user's settings, what the model or its
 * server states, the model catalogue, a window learned from a refused request) is decided in one
 * place, `windowFor` and `ModelWindows` in `src/app/models/model-windows.ts`; an unknown window is passed
 * as such, never guessed.
 */

/** `model`: stated by the user, the model, its server or the catalogue; `assumed`: a guess said to be one; `unknown`: none. */
export type WindowSource = 'model' | 'assumed' | 'unknown';

export interface ContextWindow {
  /** Tokens the window holds; 0 when unknown. */
  readonly limit: number;
  readonly source: WindowSource;
  /** Why the window is unknown, when it is. */
  readonly reason?: string;
}

/** Output may take at most this share of the window, and never more than `MAX_OUTPUT_RESERVE`. */
export const OUTPUT_RESERVE_SHARE = 0.25;
export const MAX_OUTPUT_RESERVE = 16_384;

/**
 * Tokens to keep free for a model's answer (and to send as its `max_tokens`): the model's own
 * maximum output when known, capped at min(16,384, 25% of the window), so that a small local window
 * (4,096; 6,000) keeps three quarters of itself for the conversation instead of a fixed 4,096.
 * A window of 0 (unknown) leaves the configured maximum as it is.
 */
export function outputReserveFor(window: number, maxOutput?: number): number {
  const configured = maxOutput !== undefined && Number.isFinite(maxOutput) && maxOutput > 0 ? Math.floor(maxOutput) : undefined;
  if (!(window > 0)) return configured ?? 0;
  const cap = Math.max(1, Math.min(MAX_OUTPUT_RESERVE, Math.floor(window * OUTPUT_RESERVE_SHARE)));
  return configured === undefined ? cap : Math.min(configured, cap);
}
