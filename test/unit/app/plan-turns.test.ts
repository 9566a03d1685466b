import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { conversationMarkdown } from '../../../src/app/conversation/conversation-export';
import { CARRY_ACCOUNT_COMMAND, COMPACT_HARDER_COMMAND, NEW_FROM_PLAN_COMMAND } from '../../../src/app/contributions';
import { LOOP_NOTICE } from '../../../src/app/plan/loop-offer';
import { checkPlan } from '../../../src/core/plan-check';
import { config } from '../core/fixtures';
import { testRegistry } from '../fixtures/conversation-deps';
import { turnFixture, type FakeChat, type TurnFixture } from './turn-fixture';

/** A "plan" request for the scripted model: it calls the plan tool with these steps. */
const plan = (...steps: Array<[string, string]>): string => `plan ${JSON.stringify({ steps: steps.map(([step, status]) => ({ step, status })) })}`;

/** The steps of the plan in force on the branch the chat's last response names. */
async function planOf(f: TurnFixture, chat: FakeChat): Promise<string[]> {
  const id = chat.metadata().conversationId!;
  const conversation = await f.registry.branch(id, chat.metadata().turnId ?? null);
  return checkPlan(conversation!.log())?.steps.map((s) => `${s.step}:${s.status}`) ?? [];
}

describe("the agent's plan follows the chat's branches", () => {
  let f: TurnFixture;
  beforeEach(async () => {
    f = await turnFixture();
  });
  afterEach(async () => {
    await f.close();
  });

  it('shows a plan in the chat when it changes, and not when it is sent again unchanged', async () => {
    const chat = f.newChat();
    const first = await chat.send(plan(['Parse the input', 'done'], ['Write the output', 'in_progress']));
    assert.match(first.surface.text(), /\*\*Plan\*\* · 1 of 2 done, 1 unverified\n/);
    assert.match(first.surface.text(), /- ⚠ Parse the input — \*done, unverified: no evidence named\*\n- ▸ \*\*Write the output\*\*/);
    const again = await chat.send(plan(['Parse the input', 'done'], ['Write the output', 'in_progress']));
    assert.doesNotMatch(again.surface.text(), /\*\*Plan\*\*/);
  });

  it('after Restore Checkpoint, keeps the plan of the turn the chat went back to, and shows it', async () => {
    const chat = f.newChat();
    await chat.send(plan(['Alpha step', 'in_progress']));
    await chat.send(plan(['Alpha step', 'done'], ['Bravo step', 'in_progress']));
    chat.restore(2);
    const after = await chat.send('remember CHARLIE');
    assert.deepEqual(await planOf(f, chat), ['Alpha step:in_progress']);
    assert.match(after.surface.text(), /\*\*The plan at this point of the chat\*\* · 0 of 1 done\n\n- ▸ \*\*Alpha step\*\*/);
    const sent = f.sent();
    assert.ok(sent.includes('Alpha step') && !sent.includes('Bravo step'), 'the model is sent the plan of this branch alone');
  });

  it('does not show the plan again after a rewind past turns that left it as it was', async () => {
    const chat = f.newChat();
    await chat.send(plan(['Alpha step', 'in_progress']));
    await chat.send('remember BRAVO');
    chat.restore(2);
    const after = await chat.send('remember CHARLIE');
    assert.doesNotMatch(after.surface.text(), /The plan at this point/);
    assert.deepEqual(await planOf(f, chat), ['Alpha step:in_progress']);
  });

  it('after a retry, keeps the plan the retried turn wrote, and not the one it replaced', async () => {
    const chat = f.newChat();
    await chat.send(plan(['Alpha step', 'in_progress']));
    await chat.send(plan(['Alpha step', 'done'], ['Bravo step', 'in_progress']));
    await chat.retry();
    assert.deepEqual(await planOf(f, chat), ['Alpha step:done', 'Bravo step:in_progress']);
    const conversation = await f.registry.branch(chat.metadata().conversationId!, chat.metadata().turnId!);
    assert.equal(conversation!.log().filter((r) => r.type === 'plan').length, 2, 'the branch holds the first plan and the retried one');
    assert.equal(conversation!.allRecords().filter((r) => r.type === 'plan').length, 3, 'the replaced one stays on disk');
  });

  it('keeps a fork and the chat it came from on plans of their own', async () => {
    const chat = f.newChat();
    await chat.send(plan(['Alpha step', 'in_progress']));
    await chat.send(plan(['Alpha step', 'done'], ['Bravo step', 'in_progress']));
    const fork = chat.fork(2, 'fork');
    await fork.send(plan(['Alpha step', 'done'], ['Delta step', 'in_progress']));
    await chat.send('remember ECHO');
    assert.deepEqual(await planOf(f, fork), ['Alpha step:done', 'Delta step:in_progress']);
    assert.deepEqual(await planOf(f, chat), ['Alpha step:done', 'Bravo step:in_progress']);
  });

  it('keeps the plan across a reload, and in the export', async () => {
    const chat = f.newChat();
    await chat.send(plan(['Alpha step', 'done'], ['Bravo step', 'pending']));
    const id = chat.metadata().conversationId!;
    const reloaded = testRegistry(join(f.dir, 'storage')).registry;
    const conversation = await reloaded.open(id);
    assert.deepEqual(
      checkPlan(conversation!.log())?.steps.map((s) => s.step),
      ['Alpha step', 'Bravo step'],
    );
    const markdown = conversationMarkdown(conversation!.log(), 'Export');
    assert.match(markdown, /> \*\*Plan\*\* \(2 steps, as the agent wrote it\):\n>\n> 1\. \[done\] Alpha step\n> 2\. \[pending\] Bravo step/);
  });

  it('refuses a plan naming a file outside the workspace, and keeps the plan as it was', async () => {
    const chat = f.newChat();
    await chat.send(plan(['Alpha step', 'in_progress']));
    const outside = { steps: [{ step: 'Alpha step', status: 'done', evidence: { files: ['../secrets.txt'] } }] };
    await chat.send(`plan ${JSON.stringify(outside)}`);
    assert.deepEqual(await planOf(f, chat), ['Alpha step:in_progress']);
    const result = f.sent();
    assert.match(
      result,
      /Error: Step 1 names the file \\"\.\.\/secrets\.txt\\" as evidence: .*outside.*Nothing was written; the plan is as it was\./,
    );
  });

  it('refuses a done step naming a command never run, and keeps the plan as it was', async () => {
    const chat = f.newChat();
    await chat.send(plan(['Alpha step', 'in_progress']));
    await chat.send(`plan ${JSON.stringify({ steps: [{ step: 'Alpha step', status: 'done', evidence: { commands: ['npm test'] } }] })}`);
    assert.deepEqual(await planOf(f, chat), ['Alpha step:in_progress']);
    assert.match(f.sent(), /Error: A done step names `npm test` as evidence, but it was never run with run_command in this conversation/);
  });

  it('holds a done step on a file the agent wrote, and marks it unverified once the user changed it', async () => {
    const chat = f.newChat();
    await chat.send('create notes.txt with first line');
    await chat.send(`plan ${JSON.stringify({ steps: [{ step: 'Write notes', status: 'done', evidence: { files: ['notes.txt'] } }] })}`);
    assert.match(f.sent(), /1\. \[done\] Write notes · evidence: notes\.txt/);
    const conversation = await f.registry.branch(chat.metadata().conversationId!, chat.metadata().turnId!);
    await conversation!.append([{ type: 'file', event: { kind: 'modified', path: 'notes.txt', actor: 'user', at: 5 } }]);
    assert.equal(checkPlan(conversation!.log())!.steps[0]!.unverified, 'notes.txt was changed by the user since the agent wrote it');
  });
});

describe('what the turns a chat left behind learned', () => {
  let f: TurnFixture;
  beforeEach(async () => {
    f = await turnFixture();
  });
  afterEach(async () => {
    await f.close();
  });

  /** A chat whose second and third turns made a plan and a file, then were rewound. */
  async function rewound(): Promise<{
    chat: FakeChat;
    offer: ReturnType<FakeChat['metadata']>;
    surface: string;
    buttons: readonly { command: string; arguments?: readonly unknown[] }[];
  }> {
    const chat = f.newChat();
    await chat.send('remember ALPHA');
    await chat.send(plan(['Make notes', 'in_progress']));
    await chat.send('create notes.txt with a first line');
    chat.restore(2);
    const after = await chat.send('remember BRAVO');
    return { chat, offer: chat.metadata(), surface: after.surface.text(), buttons: after.surface.buttons };
  }

  it('offers, without forcing it, to carry what they did; ignored, nothing of them reaches the model', async () => {
    const { chat, surface, buttons } = await rewound();
    assert.match(surface, /The 2 turns this chat no longer holds left a plan \(0 of 1 steps done\) and 1 changed file\./);
    const carry = buttons.find((b) => b.command === CARRY_ACCOUNT_COMMAND);
    assert.ok(carry, 'the offer has its button');
    await chat.send('remember CHARLIE');
    const sent = f.sent();
    assert.doesNotMatch(sent, /earlier-branch|Make notes|notes\.txt/);
  });

  it('carries, accepted, an account of their requests, plan, files and their state on disk into the next request, once', async () => {
    const { chat, buttons } = await rewound();
    await writeFile(join(f.workspace, 'notes.txt'), 'changed by hand\n');
    const carry = buttons.find((b) => b.command === CARRY_ACCOUNT_COMMAND)!;
    assert.equal(await f.controller.carryAccount(...(carry.arguments as [unknown, unknown, unknown, unknown])), true);
    assert.equal(
      await f.controller.carryAccount(...(carry.arguments as [unknown, unknown, unknown, unknown])),
      true,
      'a second click carries nothing more',
    );
    const next = await chat.send('remember CHARLIE');
    assert.match(next.surface.text(), /goes to the model with this request/);
    const request = f.userTexts().at(-1)!;
    assert.match(request, /^remember CHARLIE\n\n<earlier-branch>\n/);
    assert.equal(request.split('<earlier-branch>').length - 1, 1);
    assert.match(request, /- "plan \{\\"steps\\"/);
    assert.match(request, /The plan they left \(1 step: 1 in progress\):\n1\. \[in progress\] Make notes/);
    assert.match(request, /- notes\.txt \(created\): still on disk as they left it/, 'the state when the offer was made');
    await chat.send('remember DELTA');
    assert.equal(f.userTexts().join('\n').split('<earlier-branch>').length - 1, 1, 'once: the next request does not carry it again');
  });

  it('says a file they changed is no longer as they left it', async () => {
    const chat = f.newChat();
    await chat.send('remember ALPHA');
    await chat.send('create notes.txt with a first line');
    chat.restore(2);
    await writeFile(join(f.workspace, 'notes.txt'), 'changed by hand\n');
    const after = await chat.send('remember BRAVO');
    const carry = after.surface.buttons.find((b) => b.command === CARRY_ACCOUNT_COMMAND)!;
    assert.match(String(carry.arguments![2]), /- notes\.txt \(created\): changed since \(reverted, or edited\)/);
    assert.equal(await readFile(join(f.workspace, 'notes.txt'), 'utf8'), 'changed by hand\n');
  });

  it('offers nothing when the turns left behind did nothing worth carrying, or none were left behind', async () => {
    const chat = f.newChat();
    await chat.send('remember ALPHA');
    const plain = await chat.send('remember BRAVO');
    chat.restore(2);
    const rewound = await chat.send('remember CHARLIE');
    for (const exchange of [plain, rewound]) assert.equal(exchange.surface.buttons.filter((b) => b.command === CARRY_ACCOUNT_COMMAND).length, 0);
  });
});

describe('a turn that compacts twice in a row without progress', () => {
  it('stops with a clear message and the offer of a harder compaction or a new conversation from the plan', async () => {
    const f = await turnFixture({
      window: 3_000,
      config: config((c) => ({ ...c, minMessages: 2, keepRecent: { ...c.keepRecent, mode: 'tokens', tokens: 300 } })),
    });
    try {
      const names = Array.from({ length: 12 }, (_, i) => `big${i}.txt`);
      for (const name of names) await writeFile(join(f.workspace, name), `${name}\n${'filler words '.repeat(180)}\n`);
      const chat = f.newChat();
      const exchange = await chat.send(`read ${names.join(' ')}`);
      const shown = exchange.surface.text();
      assert.ok(shown.includes(LOOP_NOTICE), shown);
      const commands = exchange.surface.buttons.map((b) => b.command);
      assert.ok(commands.includes(COMPACT_HARDER_COMMAND) && commands.includes(NEW_FROM_PLAN_COMMAND));
      assert.equal((shown.match(/Compacted \d+ messages/g) ?? []).length, 2, 'two summaries, never a third');
      assert.equal(exchange.result.errorDetails, undefined);
    } finally {
      await f.close();
    }
  });
});
