import assert from 'node:assert/strict';
import { fileChange } from '../../../src/core/file-changes';
import type { LogRecord, PlanStep } from '../../../src/core/log';
import { checkPlan, checkSteps, commandsNeverRun } from '../../../src/core/plan-check';

/** A text's "hash" that shows what it hashes, so a test reads as what it checks. */
const hash = (text: string): string => `#${text}`;

/** The records of an agent's write of `path` from `before` to `after`, as the turn controller writes them. */
function write(path: string, before: string, after: string, id = `w-${path}-${after}`): LogRecord[] {
  return [
    { type: 'file', event: { kind: before === '' ? 'created' : 'modified', path, actor: 'agent', at: 1 } },
    { type: 'change', change: fileChange(id, path, before === '' ? 'created' : 'modified', before, after, hash) },
  ];
}

const ran = (command: string, exitCode?: number, stopped = false): LogRecord => ({
  type: 'command',
  run: { command, ...(exitCode !== undefined ? { exitCode } : {}), ...(stopped ? { stopped: true } : {}), at: 1 },
});

const userDid = (kind: 'modified' | 'created' | 'deleted', path: string): LogRecord => ({
  type: 'file',
  event: { kind, path, actor: 'user', at: 2 },
});

const plan = (...steps: PlanStep[]): LogRecord => ({ type: 'plan', plan: { id: `p${steps.length}`, steps, at: 1 } });

const done = (step: string, files: string[] = [], commands: string[] = []): PlanStep => ({
  step,
  status: 'done',
  evidence: { ...(files.length ? { files } : {}), ...(commands.length ? { commands } : {}) },
});

/** The check's verdict on the first step of the latest plan of `log`: undefined when its evidence holds. */
const verdict = (log: LogRecord[]): string | undefined => checkPlan(log)!.steps[0]!.unverified;

describe("the plan's evidence, checked against the record", () => {
  it('holds a done step on a file the agent wrote and a command whose last run exited 0', () => {
    const log = [...write('src/a.ts', 'old', 'new'), ran('npm test', 1), ran('npm  test', 0), plan(done('Fix a', ['src/a.ts'], ['npm test']))];
    assert.equal(verdict(log), undefined);
  });

  it('marks unverified a file the agent never wrote', () => {
    const log = [...write('src/b.ts', '', 'x'), plan(done('Fix a', ['src/a.ts']))];
    assert.equal(verdict(log), 'no change to src/a.ts by the agent is recorded');
  });

  it('marks unverified a file the user changed after the agent wrote it, a revert of it included', () => {
    const log = [...write('src/a.ts', 'old', 'new'), plan(done('Fix a', ['src/a.ts'])), userDid('modified', 'src/a.ts')];
    assert.equal(verdict(log), 'src/a.ts was changed by the user since the agent wrote it');
  });

  it('marks unverified a file deleted, or renamed away, since', () => {
    const deleted = [...write('src/a.ts', '', 'new'), plan(done('Add a', ['src/a.ts'])), userDid('deleted', 'src/a.ts')];
    assert.equal(verdict(deleted), 'src/a.ts was deleted since');
    const renamed: LogRecord[] = [
      ...write('src/a.ts', '', 'new'),
      plan(done('Add a', ['src/a.ts'])),
      { type: 'file', event: { kind: 'renamed', from: 'src/a.ts', path: 'src/b.ts', actor: 'user', at: 3 } },
    ];
    assert.equal(verdict(renamed), 'src/a.ts was renamed to src/b.ts since');
  });

  it('marks unverified a file changed back to what it held before the step was marked done', () => {
    const log = [...write('src/a.ts', 'old', 'new'), plan(done('Fix a', ['src/a.ts'])), ...write('src/a.ts', 'new', 'old')];
    assert.equal(verdict(log), 'src/a.ts was changed back to what it held before');
  });

  it("holds an earlier step when only a later step's change to the same file was taken back", () => {
    const first = done('Add the parser', ['src/a.ts']);
    const second = done('Add logging', ['src/a.ts']);
    const log = [
      ...write('src/a.ts', 'A', 'B'),
      plan(first, { step: 'Add logging', status: 'in_progress' }),
      ...write('src/a.ts', 'B', 'C'),
      plan(first, second),
      ...write('src/a.ts', 'C', 'B'),
    ];
    const steps = checkPlan(log)!.steps;
    assert.equal(steps[0]!.unverified, undefined, 'the parser is still there');
    assert.equal(steps[1]!.unverified, 'src/a.ts was changed back to what it held before');
  });

  it('marks unverified a command never run, one whose last run failed, one stopped, one without an exit code', () => {
    assert.equal(verdict([plan(done('Test', [], ['npm test']))]), '`npm test` was never run');
    assert.equal(verdict([ran('npm test', 0), ran('npm test', 2), plan(done('Test', [], ['npm test']))]), '`npm test` last exited 2');
    assert.equal(verdict([ran('npm test', 0), plan(done('Test', [], ['npm test'])), ran('npm test', 1)]), '`npm test` last exited 1');
    assert.equal(
      verdict([ran('npm test', undefined, true), plan(done('Test', [], ['npm test']))]),
      '`npm test` was stopped before it ended, the last time it ran',
    );
    assert.equal(verdict([ran('npm test'), plan(done('Test', [], ['npm test']))]), '`npm test` last ended without an exit code');
  });

  it('says when a done step names no evidence, and checks nothing of the other steps', () => {
    const steps = checkPlan([
      plan({ step: 'Think', status: 'done' }, { step: 'Test', status: 'pending', evidence: { commands: ['npm test'] } }),
    ])!.steps;
    assert.equal(steps[0]!.unverified, 'no evidence named');
    assert.equal(steps[1]!.unverified, undefined);
  });

  it('gives every reason, the first two in full', () => {
    const log = [plan(done('All', ['a.ts', 'b.ts'], ['npm test']))];
    assert.equal(verdict(log), 'no change to a.ts by the agent is recorded; no change to b.ts by the agent is recorded; and 1 more');
  });

  it('checks a plan about to be written against the log as it is', () => {
    const log = [...write('src/a.ts', 'old', 'new')];
    const [step] = checkSteps(log, [done('Fix a', ['./src//a.ts'])], log.length);
    assert.equal(step!.unverified, undefined, 'paths compare in their one form');
  });

  it('names the commands of done steps never run, each once', () => {
    const steps = [
      done('a', [], ['npm test', 'npm run lint']),
      done('b', [], ['npm test']),
      { step: 'c', status: 'pending' as const, evidence: { commands: ['make'] } },
    ];
    assert.deepEqual(commandsNeverRun([ran('npm run lint', 1)], steps), ['npm test']);
  });
});
