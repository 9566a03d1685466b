import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { config } from '../core/fixtures';
import { turnFixture, type FixtureOptions, type TurnFixture } from '../app/turn-fixture';

/**
 * What the model is sent, request by request, in the situations that change a request: a fresh
 * conversation, a tool loop, after pruning, after a summary, after an undo, in a fork, with a skill,
 * and in a small window. Each
 * scenario's requests are a checked-in file under `test/unit/golden/requests/`, so a change to
 * what the model is sent shows up as a diff in review. `LONGRUN_UPDATE_GOLDEN=1` writes the
 * files anew; without it a missing or different file fails the test.
 */

const FOLDER = join(__dirname, 'requests');
const UPDATE = process.env.LONGRUN_UPDATE_GOLDEN === '1';

type Call = TurnFixture['model']['doStreamCalls'][number];

/**
 * A request as the provider adapter receives it, without what differs from run to run; the tools
 * by name (their definitions are a golden file of their own, `tools.json`).
 */
function described(call: Call, workspace: string): unknown {
  const { abortSignal: _signal, headers: _headers, tools, ...rest } = call as Call & { abortSignal?: unknown; headers?: unknown };
  const json = JSON.stringify({ ...rest, tools: tools?.map((t) => t.name) }, null, 2);
  return JSON.parse(json.split(workspace).join('<workspace>')) as unknown;
}

function checkGolden(name: string, requests: unknown): void {
  const file = join(FOLDER, `${name}.json`);
  const actual = `${JSON.stringify(requests, null, 2)}\n`;
  if (UPDATE) {
    mkdirSync(FOLDER, { recursive: true });
    writeFileSync(file, actual);
    return;
  }
  assert.ok(existsSync(file), `${file} is missing: run the test with LONGRUN_UPDATE_GOLDEN=1 to write it, and review it`);
  const expected = readFileSync(file, 'utf8');
  assert.equal(actual, expected, `the requests of "${name}" differ from ${file}: review the change, then LONGRUN_UPDATE_GOLDEN=1 writes it`);
}

async function scenario(name: string, options: FixtureOptions, run: (f: TurnFixture) => Promise<void>): Promise<void> {
  const f = await turnFixture(options);
  try {
    await run(f);
    checkGolden(
      name,
      f.model.doStreamCalls.map((call) => described(call, f.workspace)),
    );
  } finally {
    await f.close();
  }
}

const noAuto = config((c) => ({ ...c, autoCompact: false }));

describe('what the model is sent (golden files)', () => {
  it('the tools the agent is offered, as the provider adapter receives them', async () => {
    const f = await turnFixture();
    try {
      await f.newChat().send('remember ALPHA-7');
      checkGolden('tools', f.model.doStreamCalls[0]!.tools);
    } finally {
      await f.close();
    }
  });

  it('the tools offered in a 4,096-token window: a sentence each, inputs without descriptions', async () => {
    const f = await turnFixture({ contextWindow: 4_096, window: 3_072 });
    try {
      await f.newChat().send('remember ALPHA-7');
      checkGolden('small-window-tools', f.model.doStreamCalls[0]!.tools);
    } finally {
      await f.close();
    }
  });

  it('a 4,096-token window: the compact system prompt', async () => {
    await scenario('small-window', { contextWindow: 4_096, window: 3_072 }, async (f) => {
      const chat = f.newChat();
      await chat.send('remember ALPHA-7');
      await chat.send('what do you remember?');
    });
  });

  it('a fresh conversation: its first two requests', async () => {
    await scenario('fresh', {}, async (f) => {
      const chat = f.newChat();
      await chat.send('remember ALPHA-7');
      await chat.send('what do you remember?');
    });
  });

  it('a tool loop that reads two files', async () => {
    await scenario('tool-loop', {}, async (f) => {
      await writeFile(join(f.workspace, 'a.txt'), 'first file\n');
      await writeFile(join(f.workspace, 'b.txt'), 'second file\n');
      await f.newChat().send('read a.txt b.txt');
    });
  });

  it('after pruning: a file read again replaces the older read by a stub', async () => {
    await scenario('after-pruning', { window: 6_000, config: noAuto }, async (f) => {
      await writeFile(join(f.workspace, 'big.txt'), `${'line of the big file\n'.repeat(120)}`);
      const chat = f.newChat();
      await chat.send('read big.txt');
      await chat.send('read big.txt');
      await chat.send('', 'compact');
      await chat.send('remember AFTER');
    });
  });

  it('after a summary: the summary and the kept part, then the next request', async () => {
    await scenario('after-summary', { window: 4_000, config: noAuto }, async (f) => {
      const chat = f.newChat();
      for (let i = 1; i <= 4; i++) await chat.send(`remember N-${i} ${'x'.repeat(1_200)}`);
      await chat.send('', 'compact');
      await chat.send('remember AFTER');
    });
  });

  it('after an undo: the originals again', async () => {
    await scenario('after-undo', { window: 4_000, config: noAuto }, async (f) => {
      const chat = f.newChat();
      for (let i = 1; i <= 4; i++) await chat.send(`remember N-${i} ${'x'.repeat(1_200)}`);
      await chat.send('', 'compact');
      const conversation = await f.registry.find(chat.metadata().conversationId!);
      const undone = await conversation!.undo();
      assert.ok(undone.ok, 'the compaction is undone');
      await chat.send('remember AFTER-UNDO');
    });
  });

  it('with a skill: listed in the system prompt, then loaded on use', async () => {
    await scenario('skill', {}, async (f) => {
      const folder = join(f.workspace, '.github', 'skills', 'demo');
      await mkdir(folder, { recursive: true });
      await writeFile(
        join(folder, 'SKILL.md'),
        '---\nname: demo\ndescription: Demo steps. Use when the user asks for the demo.\n---\n# Demo\n\nRun the checklist.\n',
      );
      await writeFile(join(folder, 'CHECKLIST.md'), '- one\n');
      const chat = f.newChat();
      await chat.send('use the skill demo');
      await chat.send('use the skill demo');
    });
  });

  it('in a fork: the turns before the fork point, then the fork of its own', async () => {
    await scenario('fork', {}, async (f) => {
      const chat = f.newChat();
      await chat.send('remember ALPHA-7');
      await chat.send('remember BRAVO-9');
      await chat.send('remember CHARLIE-3');
      const fork = chat.fork(3, 'forked');
      await fork.send('remember DELTA-4');
      await chat.send('remember ECHO-5');
    });
  });
});
