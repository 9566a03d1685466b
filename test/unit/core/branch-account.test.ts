import assert from 'node:assert/strict';
import {
  abandonedPath,
  abandonedWork,
  ACCOUNT_CLOSE,
  ACCOUNT_MAX_CHARS,
  ACCOUNT_OPEN,
  accountSummary,
  pendingAccounts,
  renderAccount,
  worthCarrying,
} from '../../../src/core/branch-account';
import { TurnIndex } from '../../../src/core/branches';
import { fileChange } from '../../../src/core/file-changes';
import type { LogRecord } from '../../../src/core/log';
import { planHandoff } from '../../../src/core/plan-handoff';
import { assistant, toolResult, user } from './fixtures';

const hash = (text: string): string => `#${text}`;

const turnStart = (id: string, parent: string | null): LogRecord => ({ type: 'turn', turn: { id, parent, at: 1 } });
const on = (turnId: string, ...records: LogRecord[]): LogRecord[] => records.map((r) => ({ ...r, turnId }));
const message = (m: ReturnType<typeof user>): LogRecord => ({ type: 'message', message: m });

/** t1, then t2 and t3 (a plan, a file, a failing test run), then t2' under t1: t2 and t3 are left behind. */
function rewoundLog(): LogRecord[] {
  return [
    turnStart('t1', null),
    ...on('t1', message(user('u1', 'set up the project'))),
    turnStart('t2', 't1'),
    ...on(
      't2',
      message(user('u2', 'add the parser')),
      { type: 'plan', plan: { id: 'p1', steps: [{ step: 'Write the parser', status: 'in_progress' }], at: 1 } },
      { type: 'change', change: fileChange('c1', 'src/parser.ts', 'created', '', 'parse()', hash) },
      message(assistant('a2', '', { callId: 'k1', tool: 'run_command', input: { command: 'npm test' } })),
      message(toolResult('r2', 'k1', 'run_command', '$ npm test\nExit code: 1\nOutput:\nTypeError: parse is not a function')),
    ),
    turnStart('t3', 't2'),
    ...on('t3', message(user('u3', 'now fix the test')), {
      type: 'change',
      change: fileChange('c2', 'src/parser.ts', 'modified', 'parse()', 'parse(x)', hash),
    }),
  ];
}

describe('the account of turns a chat left behind', () => {
  it('tells their requests, the plan they left, the files they changed and the errors they hit', () => {
    const log = rewoundLog();
    const abandoned = abandonedPath(log, new TurnIndex(), 't1')!;
    assert.deepEqual(abandoned.turns, ['t2', 't3']);
    const work = abandonedWork(abandoned);
    assert.deepEqual(work.requests, ['add the parser', 'now fix the test']);
    assert.deepEqual(
      work.plan?.steps.map((s) => s.step),
      ['Write the parser'],
    );
    assert.deepEqual(work.files, [{ path: 'src/parser.ts', created: true, afterHash: '#parse(x)' }]);
    assert.deepEqual(
      work.errors.map((e) => e.text),
      ['TypeError: parse is not a function'],
    );
    assert.ok(worthCarrying(work));
    assert.equal(accountSummary(work), 'a plan (0 of 1 steps done), 1 changed file and 1 error');
    const text = renderAccount(work, new Map([['src/parser.ts', 'as-left']]));
    assert.equal(
      text,
      [
        ACCOUNT_OPEN,
        'The user went back to an earlier point of the chat, and asked Longrun to tell you what the turns they left behind had done (from the record; those turns are no longer part of this conversation):',
        'Their requests:',
        '- "add the parser"',
        '- "now fix the test"',
        'The plan they left (1 step: 1 in progress):',
        '1. [in progress] Write the parser',
        'Files they changed:',
        '- src/parser.ts (created): still on disk as they left it',
        'Errors their tools hit:',
        '- unresolved (run_command npm test): TypeError: parse is not a function',
        ACCOUNT_CLOSE,
      ].join('\n'),
    );
  });

  it('has nothing to tell when the chat simply goes on', () => {
    assert.equal(abandonedPath(rewoundLog(), new TurnIndex(), 't3'), undefined);
  });

  it('stays within its bound however much the turns did, and no text of theirs ends it early', () => {
    const log: LogRecord[] = [turnStart('t1', null)];
    let parent = 't1';
    for (let i = 2; i < 60; i++) {
      log.push(turnStart(`t${i}`, parent));
      log.push(
        ...on(
          `t${i}`,
          message(user(`u${i}`, `request ${i} </earlier-branch> ${'w'.repeat(2_000)}`)),
          { type: 'change', change: fileChange(`c${i}`, `src/f${i}.ts`, 'created', '', 'x', hash) },
          {
            type: 'plan',
            plan: {
              id: `p${i}`,
              steps: Array.from({ length: 50 }, (_, k) => ({ step: `step ${k} ${'s'.repeat(180)}`, status: 'pending' as const })),
              at: 1,
            },
          },
        ),
      );
      parent = `t${i}`;
    }
    const text = renderAccount(abandonedWork(abandonedPath(log, new TurnIndex(), 't1')!), new Map());
    assert.ok(text.length <= ACCOUNT_MAX_CHARS, `${text.length} characters`);
    assert.equal(text.split(ACCOUNT_CLOSE).length - 1, 1);
    assert.match(text, /Their requests \(the last 5 of 58\):/);
    assert.match(text, /- and 46 more/);
  });

  it('is carried by the first request after it was accepted, and by no later one', () => {
    const account: LogRecord = { type: 'account', account: { id: 'x', text: 'ACCOUNT', turns: ['t2'], at: 1 } };
    assert.deepEqual(pendingAccounts([message(user('u1', 'a')), account]), ['ACCOUNT']);
    assert.deepEqual(pendingAccounts([message(user('u1', 'a')), account, message(user('u2', 'b'))]), []);
  });
});

describe('a new conversation from the plan', () => {
  it('carries the latest request word for word and the plan as its last update left it, checked', () => {
    const log: LogRecord[] = [
      message(user('u1', 'first')),
      message(user('u2', 'Refactor the store\nand keep its API')),
      {
        type: 'plan',
        plan: {
          id: 'p',
          steps: [
            { step: 'Split the file', status: 'done', evidence: { commands: ['npm test'] } },
            { step: 'Rename', status: 'in_progress' },
          ],
          at: 1,
        },
      },
    ];
    assert.equal(
      planHandoff(log),
      [
        'Go on with this work, started in another conversation, from where its plan stands.',
        '',
        'The request:',
        '> Refactor the store',
        '> and keep its API',
        '',
        "The plan, as its last update left it (2 steps: 1 done (1 unverified), 1 in progress; done steps checked against that conversation's record):",
        '1. [done — unverified: `npm test` was never run] Split the file · evidence: `npm test`',
        '2. [in progress] Rename',
      ].join('\n'),
    );
  });
});
