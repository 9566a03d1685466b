/**
 * Previewing and editing compaction summaries in a real VS Code: with
 * `longrun.compaction.requireConfirmation` on, the chat's question offers "Preview"; the summary
 * opens as a document; closing it unsaved applies nothing, saving it applies exactly what was saved,
 * and the next request to the model carries it. After the compaction, "Edit summary" in the chat
 * opens the summary in force; a save reaches the next request, and Undo takes the edit back first.
 * Buttons are clicked in the browser; documents are edited and saved through the editor API.
 */
import * as assert from 'assert';
import * as vscode from 'vscode';
import { api, chat, entries, model, newConversation, requestText, SMALL_MODEL, ui, waitFor, type RecordedRequest } from './harness';

const SCHEME = 'longrun-summary';
const config = () => vscode.workspace.getConfiguration('longrun');
const chatText = async (): Promise<string> => (await ui<string[]>('chat-text')).join('\n');

/** Sends a request to @longrun and returns at once; `finished` settles when the participant has finished it. */
async function startChat(prompt: string): Promise<{ finished: Promise<void> }> {
  const longrun = await api();
  const before = longrun.participant.turns().completed;
  await vscode.commands.executeCommand('workbench.action.chat.open', { query: `@longrun ${prompt}`, modelSelector: SMALL_MODEL });
  const finished = waitFor(
    'the participant to finish the request',
    () => longrun.participant.turns().completed > before && longrun.participant.turns().active === 0,
    300_000,
  ).then(() => undefined);
  finished.catch(() => undefined);
  return { finished };
}

/** Resolves true when the request asks whether to compact, false when it finishes without asking. */
async function asksToCompact(finished: Promise<void>): Promise<boolean> {
  const longrun = await api();
  const asked = waitFor('the compaction question', () => longrun.participant.pendingQuestions().some((q) => q.startsWith('q')) || undefined, 300_000);
  asked.catch(() => undefined);
  return Promise.race([asked.then(() => true), finished.then(() => false)]);
}

/** The open summary document whose text matches, other than those named. */
function summaryDocument(matches: RegExp, except: readonly string[] = []): vscode.TextDocument | undefined {
  return vscode.workspace.textDocuments.find((d) => d.uri.scheme === SCHEME && !except.includes(d.uri.toString()) && matches.test(d.getText()));
}

/** Inserts `line` after the first line that matches `after`, through the editor, and saves. */
async function editAndSave(document: vscode.TextDocument, after: RegExp, line: string): Promise<void> {
  const editor = await vscode.window.showTextDocument(document, { preview: false });
  const at = document
    .getText()
    .split('\n')
    .findIndex((l) => after.test(l));
  assert.ok(at >= 0, `the document has a line matching ${after}`);
  assert.ok(await editor.edit((edit) => edit.insert(new vscode.Position(at + 1, 0), `${line}\n`)));
  assert.ok(await document.save(), 'the save went through');
}

function tabOf(uri: vscode.Uri): vscode.Tab | undefined {
  return vscode.window.tabGroups.all
    .flatMap((g) => g.tabs)
    .find((t) => t.input instanceof vscode.TabInputText && t.input.uri.toString() === uri.toString());
}

/** Requests to the conversation's model (not the summarizer) after `from`. */
const turnRequests = (requests: readonly RecordedRequest[], from: number): RecordedRequest[] =>
  requests.slice(from).filter((r) => !r.summary && r.path.endsWith('/chat/completions'));

describe('Previewing and editing compaction summaries', function () {
  this.timeout(900_000);
  let compactionId = '';

  before(async () => {
    await model.reset();
    await config().update('compaction.requireConfirmation', true, vscode.ConfigurationTarget.Global);
    const longrun = await api();
    await waitFor('confirmation to be required', () => longrun.settings().requireConfirmation || undefined);
    await newConversation();
  });

  after(async () => {
    await config().update('compaction.requireConfirmation', undefined, vscode.ConfigurationTarget.Global);
  });

  it('offers Preview beside Compact and Not now; a preview closed without saving applies nothing', async () => {
    const longrun = await api();
    let pending: { finished: Promise<void> } | undefined;
    for (let i = 1; i <= 12 && !pending; i++) {
      const turn = await startChat(`please read src/big-${((i - 1) % 10) + 1}.ts`);
      if (await asksToCompact(turn.finished)) pending = turn;
    }
    assert.ok(pending, 'the window filled and Longrun asked whether to compact');
    await waitFor('the three answers in the chat', async () => (/Compact[\s\S]*Preview[\s\S]*Not now/.test(await chatText()) ? true : undefined));
    const before = (await entries()).length;
    const records = (await longrun.registry.current())!.log().length;

    // The question and its buttons are in sight while it waits, no fold opened.
    const asked = await ui<string>('chat-button', { text: 'Preview', inSight: true, pending: true });
    assert.match(asked, /Compact the conversation now\?/);
    const preview = await waitFor('the preview document', () => summaryDocument(/· not applied yet/));
    assert.match(preview.getText(), /Session Summary \(Compaction Round \d+\)/);
    assert.match(preview.getText(), /<read-files>[\s\S]*src\/big-1\.ts[\s\S]*<\/read-files>/, 'the file lists are shown with the summary');
    await ui('screenshot', { name: 'summary-preview' });
    const tab = await waitFor('the preview tab', () => tabOf(preview.uri));
    await vscode.window.tabGroups.close(tab);
    await pending.finished;

    assert.equal((await entries()).length, before, 'no compaction was applied');
    const log = (await longrun.registry.current())!.log();
    assert.ok(!log.slice(records).some((r) => r.type === 'compaction'), 'nothing of the preview reached the log');
    await waitFor('the chat to say so', async () => ((await chatText()).includes('The summary was not applied') ? true : undefined));
  });

  it('applies exactly the summary saved in the preview, and the next request to the model carries it', async () => {
    const longrun = await api();
    const before = (await entries()).length;
    const requestsBefore = (await model.requests()).length;
    const turn = await startChat('where are we now?');
    assert.ok(await asksToCompact(turn.finished), 'the next request asks again');
    const earlier = vscode.workspace.textDocuments.filter((d) => d.uri.scheme === SCHEME).map((d) => d.uri.toString());
    await ui('chat-button', { text: 'Preview' });
    const preview = await waitFor('the second preview document', () => summaryDocument(/· not applied yet/, earlier));
    await editAndSave(preview, /^### Completed Work/, '- Marmalade rule: every new file starts with the licence header.');
    await turn.finished;

    const list = await entries();
    assert.equal(list.length, before + 1, 'the compaction was applied');
    const entry = list.at(-1)!;
    compactionId = entry.id;
    assert.equal(preview.uri.path, `/${longrun.registry.currentIfLoaded()!.id}/${entry.id}/summary-round-${entry.round}.md`);
    assert.equal(entry.editOf, undefined, 'the preview is the compaction itself');
    assert.match(entry.summary, /^- Marmalade rule: every new file starts with the licence header\.$/m);
    assert.doesNotMatch(entry.summary, /Longrun · summary of compaction/, 'the header comment is not part of the summary');
    // The summary may have been written ahead, while the window filled: the turn's first request after the compaction carries it.
    const next = turnRequests(await model.requests(), requestsBefore).find((r) => /Session Summary \(Compaction Round \d+\)/.test(requestText(r)));
    assert.ok(next, 'the turn went on after the compaction');
    assert.match(requestText(next), /Marmalade rule: every new file starts with the licence header/);
    // The document now says that it is in force, and saving it edits the summary in force.
    await waitFor('the document to show the summary in force', () => (/· in force/.test(preview.getText()) && !preview.isDirty ? true : undefined));
  });

  it('opens the summary in force from "Edit summary" in the chat; a save reaches the next request, and Undo takes the edit back first', async () => {
    const longrun = await api();
    const conversation = (await longrun.registry.current())!;
    // Closed first, so that the button is seen opening it.
    const open = vscode.workspace.textDocuments.find((d) => d.uri.scheme === SCHEME && d.uri.path.includes(`/${compactionId}/`));
    const openTab = open && tabOf(open.uri);
    if (openTab) await vscode.window.tabGroups.close(openTab);

    await ui('chat-button', { text: 'Edit summary' });
    const document = await waitFor('the summary in force', () =>
      vscode.window.visibleTextEditors.map((e) => e.document).find((d) => d.uri.scheme === SCHEME && d.uri.path.includes(`/${compactionId}/`)),
    );
    // A document kept from before is read again when its content changed.
    await waitFor('the summary in force in the document', () => (/· in force/.test(document.getText()) ? true : undefined));
    assert.match(document.getText(), /Marmalade rule/);
    await editAndSave(document, /^### Current State/, '- Tabs, never spaces, in every file of this workspace.');
    const edit = await waitFor('the edit in the log', () => {
      const last = conversation.lastCompaction();
      return last?.editOf === compactionId ? last : undefined;
    });
    assert.match(edit.summary, /Tabs, never spaces/);
    assert.match(edit.summary, /Marmalade rule/);

    let requestsBefore = (await model.requests()).length;
    await chat('what is next?', SMALL_MODEL);
    const afterEdit = turnRequests(await model.requests(), requestsBefore)[0];
    assert.ok(afterEdit);
    assert.match(requestText(afterEdit), /Tabs, never spaces, in every file of this workspace/);

    assert.equal(await vscode.commands.executeCommand('longrun.undoCompaction'), true);
    assert.equal(conversation.lastCompaction()?.id, compactionId, 'the first undo takes back the edit only');
    await waitFor('the document to show the summary before the edit', () =>
      !/Tabs, never spaces/.test(document.getText()) && /Marmalade rule/.test(document.getText()) ? true : undefined,
    );
    requestsBefore = (await model.requests()).length;
    await chat('and now?', SMALL_MODEL);
    const afterUndo = turnRequests(await model.requests(), requestsBefore)[0];
    assert.ok(afterUndo);
    assert.match(requestText(afterUndo), /Marmalade rule/);
    assert.doesNotMatch(requestText(afterUndo), /Tabs, never spaces/);
  });
});
