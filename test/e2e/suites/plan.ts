/**
 * The agent's plan through VS Code's chat: a long turn that works through a plan is compacted in its
 * middle and goes on to its end without a "continue", its plan carried by the summary's work state;
 * after Restore Checkpoint the chat shows the plan of the turn it went back to, and the account of
 * the turns left behind reaches the model only when the user clicks for it.
 */
import * as assert from 'assert';
import * as vscode from 'vscode';
import { api, chat, entries, log, model, MODEL, requestText, SMALL_MODEL, ui, waitFor, type RecordedRequest } from './harness';

const workspaceUri = (path: string): vscode.Uri => vscode.Uri.joinPath(vscode.workspace.workspaceFolders![0]!.uri, path);
const exists = async (path: string): Promise<boolean> =>
  Promise.resolve(vscode.workspace.fs.stat(workspaceUri(path))).then(
    () => true,
    () => false,
  );
const chatText = async (): Promise<string> => (await ui<string[]>('chat-text')).join('\n');
const config = () => vscode.workspace.getConfiguration('longrun');

/** Whether a request shows the plan only in a work state: its plan calls were summarized away. */
function planOnlyInWorkState(request: RecordedRequest): boolean {
  const messages = request.body?.messages ?? [];
  const called = messages.some((m) =>
    (m as { tool_calls?: Array<{ function: { name: string } }> }).tool_calls?.some((c) => c.function.name === 'plan'),
  );
  return !called && requestText(request).includes('<work-state>');
}

async function newChat(): Promise<void> {
  await vscode.commands.executeCommand('workbench.action.chat.newChat');
  await new Promise((resolve) => setTimeout(resolve, 500));
}

describe("The agent's plan in VS Code's chat", function () {
  this.timeout(600_000);
  before(async () => {
    await model.reset();
  });

  it('a long turn compacted in its middle goes on to its end without a "continue", its plan found in the work state', async () => {
    // Less of the recent work kept than by default: the plan's own calls are summarized away. The
    // plan takes 26 steps, more than the 25 a request may take by default.
    await config().update('compaction.keepRecent.tokens', 600, vscode.ConfigurationTarget.Global);
    await config().update('agent.maxSteps', 40, vscode.ConfigurationTarget.Global);
    try {
      await newChat();
      const files = Array.from({ length: 8 }, (_, i) => `src/big-${i + 1}.ts`);
      const requestsBefore = (await model.requests()).length;
      await chat(`work through step by step: ${files.join(' ')}`, SMALL_MODEL);
      const steps = (await model.requests()).slice(requestsBefore).filter((r) => !r.summary);
      assert.ok(
        (await entries()).some((e) => e.reason === 'threshold'),
        'compacted during the turn',
      );
      assert.ok(steps.some(planOnlyInWorkState), 'a step found its plan only in the work state');
      const shown = await waitFor('the end of the plan in the chat', async () => {
        const text = await chatText();
        return text.includes('all 8 steps of the plan are done') ? text : undefined;
      });
      assert.doesNotMatch(shown, /lost track of the plan/);
      assert.match(shown, /Plan · 8 of 8 done/);
      for (const file of files) assert.ok(await exists(`notes/${file.slice(4, -3)}.md`), `notes of ${file}`);
      const longrun = await api();
      assert.ok(!longrun.participant.recentNotices().some((n) => /compacted twice in a row/.test(n)), 'no compaction loop');
      const plans = (await log()).filter((r) => r.type === 'plan');
      const last = plans.at(-1);
      assert.ok(last?.type === 'plan' && last.plan.steps.every((s) => s.status === 'done'), 'the last plan has every step done');
    } finally {
      await config().update('compaction.keepRecent.tokens', undefined, vscode.ConfigurationTarget.Global);
      await config().update('agent.maxSteps', undefined, vscode.ConfigurationTarget.Global);
    }
  });

  it('after Restore Checkpoint shows the plan of the turn it went back to, and carries the account of the others only on the click', async () => {
    await newChat();
    await chat('work through step by step: src/big-9.ts', MODEL);
    await chat('work through step by step: src/big-10.ts', MODEL);
    await ui('chat-request-action', { text: 'step by step: src/big-10.ts', label: 'Restores workspace and chat to this point' });
    const requestsBefore = (await model.requests()).length;
    await chat('remember KILO-PLAN', MODEL);
    const shown = await waitFor('the plan of this point in the chat', async () => {
      const text = await chatText();
      return text.includes('The plan at this point of the chat') ? text : undefined;
    });
    assert.match(shown, /Note src\/big-9\.ts/);
    const sent = (await model.requests()).slice(requestsBefore).filter((r) => !r.summary);
    assert.ok(sent.length > 0);
    for (const request of sent) {
      const text = requestText(request);
      assert.ok(text.includes('Note src/big-9.ts') && !text.includes('src/big-10.ts'), 'the model is sent the plan of this branch alone');
      assert.ok(!text.includes('earlier-branch'), 'nothing of the turn left behind');
    }
    await ui<string>('chat-button', { text: 'Carry over what they learned' });
    await waitFor('the account to be carried', async () => ((await log()).some((r) => r.type === 'account') ? true : undefined));
    const carriedFrom = (await model.requests()).length;
    await chat('remember LIMA-PLAN', MODEL);
    const carried = (await model.requests()).slice(carriedFrom).filter((r) => !r.summary);
    assert.ok(
      carried.some((r) => requestText(r).includes('<earlier-branch>') && requestText(r).includes('src/big-10.ts')),
      'the account goes with the next request',
    );
  });
});
