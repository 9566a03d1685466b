/**
 * Whether an agent loop with budgets may send its next step: go on, make it the last one (sent
 * with tool use off, after a directive asking for the answer now), or stop before sending it. One
 * pure rule, asked before every step; the loop only carries it out.
 */

/** What a loop has spent so far. */
export interface Spent {
  /** Steps (model calls) finished. */
  readonly steps: number;
  /** Tokens the provider reported for them, input and output. */
  readonly tokens: number;
}

/** The budgets of a loop: its most steps, and its most tokens (input and output of every step). */
export interface StepBudget {
  readonly steps: number;
  readonly tokens: number;
}

export type StepLimit =
  | { readonly kind: 'go-on' }
  /** This step is the last: the model is told `directive` and gets no tool to call. */
  | { readonly kind: 'last'; readonly directive: string; readonly why: 'steps' | 'tokens' }
  /** Not even this step fits the budget: the loop stops before sending it. */
  | { readonly kind: 'stop'; readonly reason: string };

/**
 * The rule: the step that the budget allows but no step after it is the last one. `nextStep` is what
 * the next step is expected to cost (the request as it stands plus room for an answer): a step that
 * would not fit at all is not sent, and one after which no other would fit is the last. So the loop
 * ends with an answer written from what it has, and spends no more than its budget but for the
 * error of that expectation.
 */
export function stepLimit(spent: Spent, budget: StepBudget, nextStep: number, directive: string): StepLimit {
  if (spent.steps >= budget.steps) return { kind: 'stop', reason: `it used all ${budget.steps} of its steps` };
  const left = budget.tokens - spent.tokens;
  if (nextStep > left) {
    return {
      kind: 'stop',
      reason: `its token budget is spent (${spent.tokens.toLocaleString('en-US')} of ${budget.tokens.toLocaleString('en-US')} tokens used; the next step needs about ${nextStep.toLocaleString('en-US')})`,
    };
  }
  if (spent.steps === budget.steps - 1) return { kind: 'last', directive, why: 'steps' };
  if (2 * nextStep > left) return { kind: 'last', directive, why: 'tokens' };
  return { kind: 'go-on' };
}
