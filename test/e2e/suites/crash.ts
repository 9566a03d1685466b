/**
 * The VS Code server is killed while the agent is in the middle of a tool call (waiting for the
 * user to approve a write to a protected file). `after-crash.ts` runs in the restarted server.
 */
import * as assert from 'assert';
import { writeFileSync } from 'fs';
import { join } from 'path';
import * as vscode from 'vscode';
import { api, chat, log, model, MODEL, newConversation, ui, waitFor } from './harness';

describe('Longrun killed in the middle of a turn', function () {
  this.timeout(300_000);

  it('is killed while a tool call waits', async () => {
    const longrun = await api();
    await model.reset();
    await newConversation();
    await chat('please read src/big-1.ts', MODEL);
    const conversation = longrun.registry.currentIfLoaded()!;
    await model.script([
      { toolCalls: [{ name: 'create_file', arguments: { path: '.vscode/crash-test.json', content: '{}\n' } }] },
      { text: 'Created.' },
    ]);
    const requestsBefore = (await model.requests()).length;
    void vscode.commands.executeCommand('workbench.action.chat.open', { query: '@longrun create the settings file', modelSelector: MODEL });
    // The model has answered with the tool call; the tool now waits for the user's approval.
    await waitFor('the tool call', async () => ((await model.requests()).slice(requestsBefore).some((r) => r.status === 200) ? true : undefined));
    await waitFor('the turn to be under way', () => (longrun.participant.turns().active > 0 ? true : undefined));
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const onDisk = (await log()).filter((r) => r.type === 'message').length;
    writeFileSync(join(process.env.LONGRUN_E2E_DIR!, 'crash.json'), JSON.stringify({ conversationId: conversation.id, messages: onDisk }));
    assert.ok(onDisk >= 3);
    await ui('crash-server');
    // The server is killed now; nothing after this runs.
    await new Promise((resolve) => setTimeout(resolve, 60_000));
  });
});
