import assert from 'node:assert/strict';
import { SUMMARY_PREFIX } from '../../../src/core/history';
import { LOST_PLACE, planScenario } from '../../../scripts/scripted-model/scenarios';
import type { ChatCompletionRequest } from '../../../scripts/scripted-model/wire';

type Messages = ChatCompletionRequest['messages'];

const tools = ['plan', 'read_file', 'create_file'].map((name) => ({ type: 'function' as const, function: { name } }));
const request = (messages: Messages): ChatCompletionRequest => ({ model: 'scripted', messages, tools }) as ChatCompletionRequest;
const answer = (messages: Messages) => planScenario({ request: request(messages), promptTokens: 100, window: 8_192 });

const ask: Messages = [{ role: 'user', content: 'work through step by step: src/a.ts src/b.ts' }];
const called = (id: string, name: string, args: unknown, output: string): Messages => [
  { role: 'assistant', content: null, tool_calls: [{ id, type: 'function', function: { name, arguments: JSON.stringify(args) } }] },
  { role: 'tool', tool_call_id: id, content: output },
];
const firstPlan = {
  steps: [
    { step: 'Note src/a.ts', status: 'in_progress' },
    { step: 'Note src/b.ts', status: 'pending' },
  ],
};

describe('the scripted model works through a plan from what its request holds', () => {
  it('writes the plan, then reads, notes and marks done the step in progress, one call at a time', () => {
    assert.deepEqual(answer(ask), { toolCalls: [{ name: 'plan', arguments: firstPlan }] });
    const planned = [...ask, ...called('c1', 'plan', firstPlan, 'Plan saved')];
    assert.deepEqual(answer(planned), { toolCalls: [{ name: 'read_file', arguments: { path: 'src/a.ts' } }] });
    const read = [...planned, ...called('c2', 'read_file', { path: 'src/a.ts' }, 'src/a.ts (lines 1-1 of 1)')];
    assert.deepEqual(answer(read), { toolCalls: [{ name: 'create_file', arguments: { path: 'notes/a.md', content: 'Notes on src/a.ts.\n' } }] });
    const noted = [...read, ...called('c3', 'create_file', { path: 'notes/a.md' }, 'Created notes/a.md (1 line).')];
    assert.deepEqual(answer(noted), {
      toolCalls: [
        {
          name: 'plan',
          arguments: {
            steps: [
              { step: 'Note src/a.ts', status: 'done', evidence: { files: ['notes/a.md'] } },
              { step: 'Note src/b.ts', status: 'in_progress' },
            ],
          },
        },
      ],
    });
  });

  it('finds its plan in the work state once its plan calls were summarized away', () => {
    const summary = `${SUMMARY_PREFIX}\n\n## Summary\n<work-state>\n1. [done] Note src/a.ts · evidence: notes/a.md\n2. [in progress] Note src/b.ts\n</work-state>`;
    const messages: Messages = [
      { role: 'user', content: summary },
      ...ask,
      ...called('c9', 'read_file', { path: 'src/b.ts' }, 'src/b.ts (lines 1-1 of 1)'),
    ];
    assert.deepEqual(answer(messages), { toolCalls: [{ name: 'create_file', arguments: { path: 'notes/b.md', content: 'Notes on src/b.ts.\n' } }] });
  });

  it('says it lost its place when its request shows tool work but no plan, and is done when every step is', () => {
    assert.deepEqual(answer([...ask, ...called('c9', 'read_file', { path: 'src/b.ts' }, 'text')]), { text: LOST_PLACE });
    const done = {
      steps: [
        { step: 'Note src/a.ts', status: 'done' },
        { step: 'Note src/b.ts', status: 'done' },
      ],
    };
    assert.match((answer([...ask, ...called('c1', 'plan', done, 'Plan saved')]) as { text: string }).text, /all 2 steps of the plan are done/);
    const other = { steps: [{ step: 'Note src/z.ts', status: 'in_progress' }] };
    assert.deepEqual(
      answer([...called('c0', 'plan', other, 'Plan saved'), ...ask]),
      { toolCalls: [{ name: 'plan', arguments: firstPlan }] },
      "an earlier request's plan is not this one's",
    );
    assert.equal(planScenario({ request: request([{ role: 'user', content: 'hello' }]), promptTokens: 1, window: 1 }), undefined);
    const quoted = 'remember X\n\n<earlier-branch>\n- "work through step by step: src/a.ts"\n</earlier-branch>';
    assert.equal(
      planScenario({ request: request([{ role: 'user', content: quoted }]), promptTokens: 1, window: 1 }),
      undefined,
      'only a request that asks for it',
    );
  });
});
