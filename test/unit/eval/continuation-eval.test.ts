import assert from 'node:assert/strict';
import { MessageTokenCounter } from '../../../src/core/message-tokens';
import { text, type Message } from '../../../src/core/messages';
import { loadTokenizer } from '../../../src/core/tokenizer';
import { figuresOf, knowledgeOf, nextMove, runContinuation, shownView, type TaskOutcome } from '../../../eval/continuation';
import { SUMMARY_PREFIX } from '../../../src/core/history';

const request: Message = {
  id: 'u1',
  role: 'user',
  content: [text('Document each of these modules (read it, write notes/<name>.md, run its tests): src/a/one.ts src/a/two.ts')],
};
const summary = (body: string): Message => ({ id: 's1', role: 'user', summaryOf: 'e1', content: [text(`${SUMMARY_PREFIX}\n\n${body}`)] });
const workState = [
  '<work-state>',
  '1. [done] Document src/a/one.ts · evidence: notes/one.md, `npm test -- one`',
  '2. [in progress] Document src/a/two.ts',
  'Last tool call: read_file {"path":"src/a/two.ts"}; its result began:',
  '    // src/a/two.ts: the two module.',
  '</work-state>',
  '',
  '<read-files>',
  'src/a/two.ts',
  'test/two.test.ts',
  '</read-files>',
].join('\n');

describe('continuation eval: the stand-in decides from its view alone', () => {
  it('goes on from the work state and the file lists: writes the note of the module whose first line it shows, reading nothing again', () => {
    const view = [summary(`## Summary\nWork is ongoing.\n\n${workState}`), request];
    assert.deepEqual(nextMove(knowledgeOf(shownView(view, 'plan')), 'plan'), {
      tool: 'create_file',
      input: { path: 'notes/two.md', content: 'Notes on // src/a/two.ts: the two module.\n' },
    });
  });

  it('shown the same summary without the engine blocks, starts over from what the prose says', () => {
    const view = [summary(`## Summary\nNotes written to notes/one.md.\n\n${workState}`), request];
    // The prose names the note of the first module but not its test run: the run is done again.
    assert.deepEqual(nextMove(knowledgeOf(shownView(view, 'summaries')), 'summaries'), {
      tool: 'run_command',
      input: { command: 'npm test -- one' },
    });
  });
});

describe('continuation eval: the scripted tasks', () => {
  let withPlan: TaskOutcome[];
  let summariesOnly: TaskOutcome[];
  before(async function () {
    this.timeout(120_000);
    const counter = new MessageTokenCounter(await loadTokenizer('o200k_base'));
    withPlan = await runContinuation('plan', { counter });
    summariesOnly = await runContinuation('summaries', { counter: new MessageTokenCounter(counter.tokenizer) });
  });

  it('runs long tasks, each compacted at least three times inside its turns and some between them, to their end', () => {
    const figures = figuresOf(withPlan);
    assert.ok(figures.minCallsPerTask >= 30, `${figures.minCallsPerTask} calls`);
    assert.ok(figures.minCompactionsPerTask >= 3, `${figures.minCompactionsPerTask} compactions`);
    assert.ok(figures.betweenTurns >= 1, `${figures.betweenTurns} between turns`);
    for (const task of withPlan) assert.ok(task.finished, task.name);
  });

  it('meets the targets with the plan and ledgers: redo rate at most 0.05, accuracy 1, no stall, no loop', () => {
    const figures = figuresOf(withPlan);
    assert.ok(figures.redoRate <= 0.05, `redo rate ${figures.redoRate}`);
    assert.equal(figures.accuracy, 1);
    assert.equal(figures.stalls, 0);
    assert.equal(figures.loops, 0);
  });

  it('redoes work with summaries alone, so the measure can fail', () => {
    assert.ok(figuresOf(summariesOnly).redoRate > 0.05, `redo rate ${figuresOf(summariesOnly).redoRate}`);
  });
});
