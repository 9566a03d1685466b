/**
 * Extension-host checks that need no browser: they run in code-server (`npm run test:e2e`) and in a
 * downloaded desktop VS Code (`npm run test:electron`).
 */
import * as assert from 'assert';
import * as vscode from 'vscode';
import { api, chat, entries, model, MODEL, newConversation, waitFor } from './harness';

describe('Longrun through the extension API', function () {
  this.timeout(300_000);

  it('offers the longrun models with their declared windows', async () => {
    const [scripted] = await vscode.lm.selectChatModels({ vendor: 'longrun', id: 'offline/scripted' });
    assert.ok(scripted, 'the scripted model is offered');
    assert.equal(scripted.maxInputTokens, 128_000 - 500);
  });

  it('answers a chat request and compacts, shows and undoes on command', async () => {
    await model.reset();
    await newConversation();
    for (let i = 1; i <= 3; i++) await chat(`please read src/big-${i}.ts`, MODEL);
    const longrun = await api();
    const conversation = (await longrun.session.current())!;
    const messages = conversation.view().length;
    assert.ok(messages >= 9, `the conversation holds the turns (${messages})`);
    assert.equal(await vscode.commands.executeCommand('longrun.compact'), 'compacted');
    const [entry] = await entries();
    assert.ok(entry && entry.reason === 'manual');
    assert.ok(conversation.view().length < messages, 'the view shrank');
    assert.equal(await vscode.commands.executeCommand('longrun.showSummary'), entry.id);
    await waitFor('the summary document', () =>
      vscode.workspace.textDocuments.find((d) => d.uri.scheme === 'longrun' && d.getText().includes('Session Summary (Compaction Round 1)')),
    );
    assert.equal(await vscode.commands.executeCommand('longrun.undoCompaction'), true);
    assert.equal(conversation.view().length, messages, 'undo restores every message');
  });

  it('writes summaries with the model named in longrun.compaction.model', async () => {
    const config = vscode.workspace.getConfiguration('longrun');
    await config.update('compaction.model', 'longrun/offline/scripted-small', vscode.ConfigurationTarget.Global);
    try {
      await model.reset();
      await chat('please read src/big-2.ts', MODEL);
      assert.equal(await vscode.commands.executeCommand('longrun.compact'), 'compacted');
      const summaries = (await model.requests()).filter((r) => r.summary);
      assert.deepEqual(summaries.map((r) => r.model), ['scripted-small']);
      const chats = (await model.requests()).filter((r) => !r.summary && r.path.endsWith('/chat/completions'));
      assert.ok(chats.every((r) => r.model === 'scripted'), 'the conversation stays on its own model');
    } finally {
      await config.update('compaction.model', undefined, vscode.ConfigurationTarget.Global);
    }
  });

  it('reports context usage as a document', async () => {
    const markdown = await vscode.commands.executeCommand<string>('longrun.showContextUsage');
    assert.match(markdown, /\| Tool results \| [\d,]+ \|/);
    assert.match(markdown, /of 127,500 tokens/);
  });
});
