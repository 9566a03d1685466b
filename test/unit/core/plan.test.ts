import assert from 'node:assert/strict';
import fc from 'fast-check';
import { PLAN_LIMITS, readPlanInput, samePlan, type PlanStep } from '../../../src/core/plan';
import { PLAN_STATUSES } from '../../../src/core/log-values';

const refusal = (input: unknown): string => {
  const read = readPlanInput(input);
  assert.equal(read.ok, false, 'refused');
  return read.ok ? '' : read.error;
};

describe('the plan tool input: read within its bounds, or refused with the bound it breaks', () => {
  it('reads steps as written, text trimmed, empty evidence and notes left out', () => {
    const read = readPlanInput({
      steps: [
        { step: '  Fix the parser ', status: 'done', evidence: { files: ['src/parser.ts', ' src/parser.ts'], commands: ['npm test'] } },
        { step: 'Document it', status: 'in_progress', evidence: { files: [] }, note: '  ' },
        { step: 'Release', status: 'blocked', note: 'needs the release key' },
      ],
    });
    assert.deepEqual(read, {
      ok: true,
      steps: [
        { step: 'Fix the parser', status: 'done', evidence: { files: ['src/parser.ts'], commands: ['npm test'] } },
        { step: 'Document it', status: 'in_progress' },
        { step: 'Release', status: 'blocked', note: 'needs the release key' },
      ],
    });
  });

  it('refuses what is not a plan, saying what one looks like and that nothing was written', () => {
    for (const input of [undefined, null, 'a plan', [], { steps: 'all of it' }, { plan: [] }]) {
      const error = refusal(input);
      assert.match(error, /^The plan must be an object \{"steps": \[\.\.\.\]\}/);
      assert.match(error, /Nothing was written; the plan is as it was\.$/);
    }
  });

  it('refuses a plan of hundreds of steps by its count alone, whatever the steps say', () => {
    const steps = Array.from({ length: 400 }, () => ({ step: 'x'.repeat(5_000), status: 'nonsense' }));
    assert.equal(
      refusal({ steps }),
      'The plan has 400 steps; a plan may have at most 50. Group the work into fewer, larger steps. Nothing was written; the plan is as it was.',
    );
  });

  it('names each bound a step breaks, the first one and how many more', () => {
    const long = 'y'.repeat(PLAN_LIMITS.stepChars + 1);
    assert.match(refusal({ steps: [{ step: long, status: 'pending' }] }), /^Step 1 has 201 characters; a step may have at most 200\./);
    assert.match(refusal({ steps: [{ step: 'a', status: 'pending' }, { status: 'done' }] }), /^Step 2 has no text \("step"\)\./);
    assert.match(
      refusal({ steps: [{ step: 'a', status: 'finished' }] }),
      /^Step 1 has status "finished"; it must be one of pending, in_progress, done, blocked\./,
    );
    const files = Array.from({ length: 8 }, (_, i) => `f${i}.ts`);
    const commands = ['npm test', 'npm run lint', 'npm run build'];
    assert.match(
      refusal({ steps: [{ step: 'a', status: 'done', evidence: { files, commands } }] }),
      /^Step 1 names 11 pieces of evidence; a step may name at most 10 files and commands together\./,
    );
    assert.match(refusal({ steps: [{ step: 'a', status: 'done', evidence: { files: ['z'.repeat(201)] } }] }), /each may have at most 200/);
    assert.match(refusal({ steps: [{ step: 'a', status: 'done', evidence: { files: 'src/a.ts' } }] }), /evidence files must be a list of text/);
    assert.match(refusal({ steps: [{ step: 'a', status: 'done', note: 'n'.repeat(201) }] }), /a note may have at most 200/);
    assert.match(
      refusal({
        steps: [
          { step: 'a', status: 'in_progress' },
          { step: 'b', status: 'in_progress' },
          { step: '', status: 'x' },
        ],
      }),
      /^Step 3 has no text \("step"\)\. \(and 2 more problems\)/,
    );
    assert.match(
      refusal({
        steps: [
          { step: 'a', status: 'in_progress' },
          { step: 'b', status: 'in_progress' },
        ],
      }),
      /^Steps 1, 2 are all in_progress; at most one step may be in progress at a time\./,
    );
  });

  it('never echoes the input back: a refusal stays short however large the plan', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ step: fc.string({ maxLength: 400 }), status: fc.constantFrom(...PLAN_STATUSES, 'done!', '') }), { maxLength: 120 }),
        (steps) => {
          const read = readPlanInput({ steps });
          if (read.ok) {
            assert.ok(read.steps.length <= PLAN_LIMITS.steps);
            for (const s of read.steps) assert.ok(s.step.length > 0 && s.step.length <= PLAN_LIMITS.stepChars);
          } else {
            assert.ok(read.error.length < 400, read.error);
          }
        },
      ),
    );
  });

  it('tells plans apart by their steps, statuses, evidence and notes', () => {
    const a: PlanStep[] = [{ step: 'a', status: 'done', evidence: { files: ['x.ts'] } }];
    assert.ok(samePlan(a, [{ step: 'a', status: 'done', evidence: { files: ['x.ts'] } }]));
    assert.ok(!samePlan(a, [{ step: 'a', status: 'in_progress', evidence: { files: ['x.ts'] } }]));
    assert.ok(!samePlan(a, [{ step: 'a', status: 'done', evidence: { commands: ['x.ts'] } }]));
    assert.ok(!samePlan(a, [...a, { step: 'b', status: 'pending' }]));
  });
});
