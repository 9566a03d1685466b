import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { LogRecord, PlanStep } from '../../../src/core/log';
import { PLAN_STATUSES } from '../../../src/core/log-values';
import { renderWorkState, stripWorkState, turnState, WORK_STATE_MAX_TOKENS, workStateOf } from '../../../src/core/work-state';
import { assistant, estimatingCounter, toolResult, user } from './fixtures';

const counter = estimatingCounter();
const countText = (value: string): number => counter.countText(value);
const message = (m: ReturnType<typeof user>): LogRecord => ({ type: 'message', message: m });
const plan = (...steps: PlanStep[]): LogRecord => ({ type: 'plan', plan: { id: `p${steps.length}`, steps, at: 1 } });

/** A request, a plan, and a read whose result is the last thing in the log. */
const working: LogRecord[] = [
  message(user('u1', 'Port the parser\nto the new API')),
  plan({ step: 'Port parse()', status: 'in_progress' }, { step: 'Port format()', status: 'pending' }),
  { type: 'file', event: { kind: 'modified', path: 'src/parser.ts', actor: 'agent', at: 1 } },
  message(assistant('a1', '', { callId: 'c1', tool: 'read_file', input: { path: 'src/api.ts' } })),
  message(toolResult('t1', 'c1', 'read_file', Array.from({ length: 9 }, (_, i) => `line ${i + 1}`).join('\n'))),
];

describe('the work state a summary ends with', () => {
  it('says, when the view after the summary keeps neither, the request word for word and the first lines of the last result', () => {
    const block = renderWorkState({ log: working, inView: [], countText });
    assert.equal(
      block,
      [
        '<work-state>',
        "Where the work stands (Longrun keeps this from the conversation's record; the summarizer did not write it):",
        'The plan, as its last update left it (2 steps: 1 in progress, 1 pending; done steps checked against the record):',
        '1. [in progress] Port parse()',
        '2. [pending] Port format()',
        'Step in progress: 1. Port parse()',
        'Last tool call: read_file {"path":"src/api.ts"}; its result began:',
        '    line 1',
        '    line 2',
        '    line 3',
        '    line 4',
        '    line 5',
        '    (4 more lines)',
        'Files the agent changed since that step began: src/parser.ts.',
        "The user's latest request, word for word:",
        '> Port the parser',
        '> to the new API',
        'The turn is under way: go on with the step in progress (or the next pending one) now, without waiting for the user to say "continue".',
        '</work-state>',
      ].join('\n'),
    );
  });

  it('says nothing without a plan unless the agent is at work in a turn, and what to do next as the turn stands', () => {
    const asked = [message(user('u1', 'hello'))];
    assert.equal(turnState(asked), 'asked');
    assert.equal(renderWorkState({ log: asked, inView: [], countText }), '');
    const answered = [...working, message(assistant('a2', 'All ported.'))];
    assert.equal(turnState(answered), 'answered');
    assert.match(
      renderWorkState({ log: answered, inView: [], countText }),
      /The last request was answered: go on with the plan when the user asks\./,
    );
    const noPlan = working.filter((r) => r.type !== 'plan');
    assert.match(renderWorkState({ log: noPlan, inView: [], countText }), /go on with the user's latest request now, without waiting/);
    assert.doesNotMatch(renderWorkState({ log: noPlan, inView: [], countText }), /Step in progress/);
  });

  it('is taken out of a text whole, whatever surrounds it, and found again', () => {
    const text = `Summary.\n\n<work-state>\nold\n</work-state>\n\n<read-files>\n</read-files>`;
    assert.equal(stripWorkState(text), 'Summary.\n\n<read-files>\n</read-files>');
    assert.equal(workStateOf(text), '<work-state>\nold\n</work-state>');
    assert.equal(stripWorkState('A\n</work-state>\nB'), 'A\nB');
  });

  it('takes at most its budget for any plan within the bounds, and always names the step in progress', () => {
    const step = fc.record({
      step: fc.string({ minLength: 1, maxLength: 200 }).filter((s) => s.trim() !== ''),
      status: fc.constantFrom(...PLAN_STATUSES.filter((s) => s !== 'in_progress')),
      note: fc.option(fc.string({ maxLength: 200 }), { nil: undefined }),
    });
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 50 }), fc.nat(49), (steps, at) => {
        const planned: PlanStep[] = steps.map((s, i) => ({
          step: s.step.trim(),
          status: i === at % steps.length ? 'in_progress' : s.status,
          ...(s.note ? { note: s.note } : {}),
        }));
        const log = [message(user('u', 'go')), plan(...planned), ...working.slice(3)];
        const block = renderWorkState({ log, inView: [], countText });
        assert.ok(countText(block) <= WORK_STATE_MAX_TOKENS, `${countText(block)} tokens`);
        assert.ok(block.includes(`Step in progress: ${(at % steps.length) + 1}.`));
      }),
      { numRuns: 60 },
    );
  });
});
