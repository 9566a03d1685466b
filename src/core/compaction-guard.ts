import type { BudgetLevel } from './budget';

/**
 * Anti-loop rules, so compaction cannot repeat itself turn after turn: a compaction that frees less
 * than the configured share is reported and automatic compaction is not tried again on the next
 * turn, unless the next request would not fit the window at all (waiting would only earn an
 * overflow error); a context-overflow error is answered by at most the configured number of
 * compactions per turn.
 */

export interface GuardState {
  /** The current turn, counted from 0. */
  readonly turn: number;
  readonly overflowRetries: number;
  /** The turn of the last low-gain compaction, if any. */
  readonly lowGainTurn?: number;
}

export const INITIAL_GUARD: GuardState = { turn: 0, overflowRetries: 0 };

export type Verdict = { readonly allowed: true } | { readonly allowed: false; readonly reason: string };

export function beginTurn(state: GuardState): GuardState {
  return { ...state, turn: state.turn + 1, overflowRetries: 0 };
}

/**
 * Whether automatic (threshold) compaction may run now, the view being at `budget`'s level. Over the
 * window it always may: the next request would be refused, so there is no loop to break.
 */
export function mayAutoCompact(state: GuardState, budget: { readonly level: BudgetLevel }): Verdict {
  if (budget.level === 'over') return { allowed: true };
  if (state.lowGainTurn !== undefined && state.turn - state.lowGainTurn <= 1) {
    return {
      allowed: false,
      reason: 'the last compaction freed too little, so automatic compaction waits a turn instead of trying again at once',
    };
  }
  return { allowed: true };
}

/** Whether a context-overflow error may be answered by compacting and retrying. */
export function mayRetryOverflow(state: GuardState, retriesPerTurn: number): Verdict {
  if (state.overflowRetries >= retriesPerTurn) {
    return {
      allowed: false,
      reason: `the request overflowed the context window again after ${state.overflowRetries} compaction${state.overflowRetries === 1 ? '' : 's'} in this turn`,
    };
  }
  return { allowed: true };
}

export function noteOverflowRetry(state: GuardState): GuardState {
  return { ...state, overflowRetries: state.overflowRetries + 1 };
}

export function noteCompaction(state: GuardState, lowGain: boolean): GuardState {
  if (lowGain) return { ...state, lowGainTurn: state.turn };
  const { lowGainTurn: _cleared, ...rest } = state;
  return rest;
}
