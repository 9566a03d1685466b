/**
 * After the VS Code server was killed in the middle of a tool call and started again: the
 * conversation opens, nothing that was on disk is lost, and the next message is answered.
 */
import * as assert from 'assert';
import { readFileSync } from 'fs';
import { join } from 'path';
import * as vscode from 'vscode';
import { api, chat, model, MODEL, orphanToolResults, requestText, waitFor } from './harness';

describe('Longrun after the server was killed', function () {
  this.timeout(300_000);
  const saved = JSON.parse(readFileSync(join(process.env.LONGRUN_E2E_DIR!, 'crash.json'), 'utf8')) as { conversationId: string; messages: number };

  it('opens the conversation and answers the next message', async () => {
    const longrun = await api();
    await vscode.commands.executeCommand('longrun.openConversation', saved.conversationId);
    const conversation = await waitFor('the conversation', () => longrun.registry.currentIfLoaded());
    assert.equal(conversation.id, saved.conversationId);
    const messages = conversation.log().filter((r) => r.type === 'message').length;
    assert.ok(messages >= saved.messages, `nothing on disk was lost (${messages} of ${saved.messages})`);
    const before = (await model.requests()).length;
    await vscode.commands.executeCommand('workbench.action.chat.newChat');
    await chat('are you still there after the crash?', MODEL);
    const sent = (await model.requests()).slice(before).filter((r) => !r.summary && requestText(r).includes('still there after the crash'));
    assert.equal(sent.length, 1, 'the message reached the model');
    assert.equal(sent[0]!.status, 200, 'and was answered');
    assert.match(requestText(sent[0]!), /create the settings file/, 'the interrupted request is still in the conversation');
    assert.deepEqual(orphanToolResults(sent[0]!), []);
    assert.equal(longrun.registry.currentIfLoaded()!.id, saved.conversationId, 'the conversation continues');
  });
});
