import assert from 'node:assert/strict';
import fc from 'fast-check';
import { PLAN_ANSWER_CHARS, planAnswer } from '../../../src/app/plan/plan-keeper';
import type { PlanStep } from '../../../src/core/log';
import { PLAN_LIMITS } from '../../../src/core/plan';
import type { CheckedPlan } from '../../../src/core/plan-check';

const checked = (steps: readonly PlanStep[]): CheckedPlan => ({ update: { id: 'p', steps, at: 1 }, index: 0, steps });
const long = (what: string, i: number): string => `${what} ${i} `.padEnd(PLAN_LIMITS.stepChars, 'x');

describe("the plan tool's answer", () => {
  it('lists a short plan whole, each step with its mark and evidence', () => {
    const answer = planAnswer(
      checked([
        { step: 'Parse', status: 'done', evidence: { files: ['src/a.ts'], commands: ['npm test'] } },
        { step: 'Print', status: 'in_progress' },
      ]),
      false,
    );
    assert.equal(
      answer,
      ['Plan saved: 2 steps: 1 done, 1 in progress.', '1. [done] Parse · evidence: src/a.ts, `npm test`', '2. [in progress] Print'].join('\n'),
    );
  });

  it('keeps the plan within its bound at the largest the tool takes, the step in progress and those to do first', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: PLAN_LIMITS.steps }), fc.nat(PLAN_LIMITS.steps - 1), (count, at) => {
        const current = at % count;
        const evidence = {
          files: Array.from({ length: 5 }, (_, i) => long('src/f', i)),
          commands: Array.from({ length: 5 }, (_, i) => long('npm run', i)),
        };
        const steps: PlanStep[] = Array.from({ length: count }, (_, i) => ({
          step: long('Step', i),
          status: i < current ? 'done' : i === current ? 'in_progress' : 'pending',
          ...(i < current ? { evidence } : {}),
          note: long('note', i),
        }));
        const answer = planAnswer(checked(steps), false);
        const [, ...lines] = answer.split('\n');
        assert.ok(lines.join('\n').length <= PLAN_ANSWER_CHARS, `${lines.join('\n').length} characters`);
        assert.ok(answer.includes(`${current + 1}. [in progress] ${long('Step', current)}`), 'the step in progress');
        if (current + 1 < count) assert.ok(answer.includes(`${current + 2}. [pending]`), 'the next step to do');
      }),
      { numRuns: 40 },
    );
  });
});
