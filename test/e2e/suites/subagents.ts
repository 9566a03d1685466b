/**
 * Subagents through VS Code's chat: the agent hands a search to a subagent with `delegate`, the
 * subagent (on the model `longrun.subagent.model` names, its prices set in `longrun.models.overrides`) reads the
 * file the task names and reports;
 * the agent gets the report, the chat shows the subagent's line with its cost and a button that opens
 * its transcript, and the transcript is kept in the conversation's log.
 */
import * as assert from 'assert';
import * as vscode from 'vscode';
import { subagentRuns } from '../../../src/core/subagents';
import { api, chat, lastToolOutput, log, model, newConversation, requestText, ui, waitFor, type RecordedRequest } from './harness';

describe('Longrun subagents', function () {
  this.timeout(300_000);
  const config = () => vscode.workspace.getConfiguration('longrun');
  let overrides: unknown;

  before(async () => {
    await model.reset();
    overrides = config().inspect('models.overrides')?.globalValue;
    // The scripted model's prices, as a user sets those of a model the catalogue does not know.
    await config().update(
      'models.overrides',
      { ...(overrides as object | undefined), 'scripted-small': { input: 3, output: 15 } },
      vscode.ConfigurationTarget.Global,
    );
    // A smaller model than the conversation's, as the setting is meant for.
    await config().update('subagent.model', 'longrun/offline/scripted-small', vscode.ConfigurationTarget.Global);
  });

  after(async () => {
    await config().update('subagent.model', undefined, vscode.ConfigurationTarget.Global);
    await config().update('models.overrides', overrides, vscode.ConfigurationTarget.Global);
  });

  it('returns the report of a delegated search, shows its cost in the chat, and opens its transcript', async () => {
    await newConversation();
    const before = (await model.requests()).length;
    // The agent's first step delegates; the subagent then reads the file its task names (the
    // scripted model's own scenario) and answers from what it read.
    await model.script([{ toolCalls: [{ name: 'delegate', arguments: { task: 'Read README.md and say what the project is.' } }] }]);
    await chat('Find out what this project is, with a subagent.');

    const report = await lastToolOutput('delegate');
    assert.match(report, /^Subagent report \(2 steps, [\d,]+ tokens\):/);
    assert.match(report, /Offline scripted model: the tool returned "README\.md \(lines 1-\d+ of \d+\)"/);
    assert.match(report, /Files read \(lines\):\n- README\.md: all of \d+/);

    const requests = (await model.requests()).slice(before);
    const bySubagent = (r: RecordedRequest) => requestText(r).includes('You are a subagent of Longrun');
    assert.deepEqual(
      requests.filter(bySubagent).map((r) => r.model),
      ['scripted-small', 'scripted-small'],
      'the subagent runs on longrun.subagent.model',
    );
    assert.ok(
      requests.filter((r) => !bySubagent(r)).every((r) => r.model === 'scripted'),
      "the agent stays on the conversation's model",
    );

    const [run] = subagentRuns(await log());
    assert.ok(run, 'the subagent is in the conversation log');
    assert.equal(run.status, 'reported');
    assert.equal(run.start.model, 'longrun/offline/scripted-small');
    assert.deepEqual(
      run.messages.map((m) => m.role),
      ['user', 'assistant', 'tool', 'assistant'],
    );
    assert.ok(run.end!.cost !== undefined && run.end!.cost > 0, 'its cost is recorded');

    const transcript = () =>
      vscode.workspace.textDocuments.find((d) => d.uri.scheme === 'longrun' && d.getText().startsWith(`# Subagent ${run.start.id}`));
    const answer = await ui<string>('chat-button', { text: 'Show transcript' });
    assert.match(answer, /Subagent Read README\.md and say what the project is\. — reported in \d+ s · 2 steps · [\d,]+ tokens · \$\d/);
    let opened = await waitFor('the transcript', transcript, 20_000).catch(() => undefined);
    // A click in this headless browser now and then does not reach the button: click it again.
    for (let attempt = 0; opened === undefined && attempt < 2; attempt++) {
      await ui('chat-button', { text: 'Show transcript' });
      opened = await waitFor('the transcript', transcript, 20_000).catch(() => undefined);
    }
    if (opened === undefined) throw new Error('the transcript did not open after three clicks on "Show transcript"');
    const text = opened.getText();
    assert.match(text, /## Task\n\n> Read README\.md and say what the project is\./);
    assert.match(text, /\*\*Tool result\*\* `read_file`/);
    assert.match(text, /## What the agent got back/);
    assert.ok((await api()).participant.turns().active === 0);
  });
});
