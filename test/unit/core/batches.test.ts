import assert from 'node:assert/strict';
import { EngineMemo } from '../../../src/core/engine-memo';
import { planBatches, type Positioned } from '../../../src/core/batches';
import { assistant, config, sys, toolResult, user } from './fixtures';

/**
 * Without recency, the plain replies score 3 each, the tool call 8 (its result, 3, goes with it),
 * the question 8.5 and the system rules 10.
 */
const importance = { ...config().importance, recencyWeight: 0 };
const view = [
  sys('rules', 'rules'),
  assistant('ack', 'ok'),
  user('ask', 'Why does the build fail?'),
  assistant('call', 'looking', { callId: 'c1', tool: 'read_file', input: { path: 'src/app.ts' } }),
  toolResult('res', 'c1', 'read_file', 'fine'),
  assistant('done', 'done'),
];
const items: Positioned[] = view.map((message, position) => ({ message, position }));
const plan = (budget: number) =>
  planBatches(items, view.length, budget, () => 1, importance, new EngineMemo()).map((batch) => batch.map((item) => item.message.id));

describe('planning summary batches', () => {
  it('sends the least important units first, oldest first among equals, a tool call with its result', () => {
    assert.deepEqual(plan(1), [['ack'], ['done'], ['call', 'res'], ['ask'], ['rules']]);
  });

  it('packs units in importance order up to the budget and sends each batch in conversation order', () => {
    assert.deepEqual(plan(2), [
      ['ack', 'done'],
      ['call', 'res'],
      ['rules', 'ask'],
    ]);
  });
});
