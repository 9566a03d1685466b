/**
 * Extension-host checks that need no browser: they run in code-server (`npm run test:e2e`) and in a
 * downloaded desktop VS Code (`npm run test:electron`).
 */
import * as assert from 'assert';
import { readFileSync } from 'fs';
import * as vscode from 'vscode';
import { api, chat, entries, model, MODEL, newConversation, waitFor } from './harness';

describe('Longrun through the extension API', function () {
  this.timeout(300_000);

  it("ignores what a repository's .vscode/settings.json sets for the settings a workspace must not set", async () => {
    const file = vscode.Uri.joinPath(vscode.workspace.workspaceFolders![0]!.uri, '.vscode', 'settings.json');
    const fromRepository = JSON.parse(readFileSync(file.fsPath, 'utf8')) as Record<string, unknown>;
    assert.ok(Object.keys(fromRepository).length >= 10, 'the workspace sets them');
    const settings = (await api()).settings();
    assert.equal(settings.summarizerModel, undefined, 'the summarizer model');
    assert.equal(settings.compaction.summary.customPrompt, '', 'the summarizer prompt');
    assert.ok(
      settings.endpoints.every((e) => e.name === 'offline'),
      'the endpoints',
    );
    assert.equal(settings.agent.autoApproveEdits, true, 'auto-approve stays as the user set it');
    assert.equal(settings.agent.maxSteps, 25, 'the step limit');
    assert.deepEqual(settings.agent.protectedPaths, [], 'the protected paths');
    assert.deepEqual(settings.agent.allowedCommands, [], 'the allowed commands');
    assert.equal(settings.agent.commandTimeoutSeconds, 120, 'the command time limit');
    assert.deepEqual(settings.agent.editorTools, [], "the other extensions' tools");
    assert.equal(settings.telemetry.enabled, false, 'tracing');
    assert.equal(settings.telemetry.otlpEndpoint, undefined, 'the trace endpoint');
    assert.equal(settings.verboseLogging, false, 'verbose logging');
  });

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
    const conversation = (await longrun.registry.current())!;
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
      assert.deepEqual(
        summaries.map((r) => r.model),
        ['scripted-small'],
      );
      const chats = (await model.requests()).filter((r) => !r.summary && r.path.endsWith('/chat/completions'));
      assert.ok(
        chats.every((r) => r.model === 'scripted'),
        'the conversation stays on its own model',
      );
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
