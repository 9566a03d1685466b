/**
 * VS Code owns the chat: what its buttons do to a chat (Restore Checkpoint, Fork, Retry, an edited
 * request, Start Over) decides what the model is sent next, checked on what the loopback scripted
 * model receives. Also: instruction files go into the system prompt once, and a message typed right
 * after the window opened is answered (the driver types it as soon as the chat's input is drawn, and
 * not before 1.5 s after the workbench appears).
 */
import * as assert from 'assert';
import { existsSync, readFileSync } from 'fs';
import { join } from 'path';
import * as vscode from 'vscode';
import { FIRST_MESSAGE } from '../phrases';
import { api, chat, idle, model, MODEL, SMALL_MODEL, ui, waitFor, type RecordedRequest } from './harness';

const workspaceUri = (path: string): vscode.Uri => vscode.Uri.joinPath(vscode.workspace.workspaceFolders![0]!.uri, path);
const exists = async (path: string): Promise<boolean> =>
  Promise.resolve(vscode.workspace.fs.stat(workspaceUri(path))).then(
    () => true,
    () => false,
  );
const chatText = async (): Promise<string> => (await ui<string[]>('chat-text')).join('\n');

/** The text of each message of a request, by role. */
function messages(request: RecordedRequest): Array<{ role: string; text: string }> {
  return (request.body?.messages ?? []).map((m) => ({
    role: m.role,
    text: typeof m.content === 'string' ? m.content : JSON.stringify(m.content ?? ''),
  }));
}

const userTexts = (request: RecordedRequest): string[] =>
  messages(request)
    .filter((m) => m.role === 'user')
    .map((m) => m.text);

/** The latest conversation request (not a summary) whose last user message says `marker`. */
async function requestFor(marker: string): Promise<RecordedRequest> {
  return waitFor(`a request to the model for "${marker}"`, async () =>
    (await model.requests()).filter((r) => !r.summary && (userTexts(r).at(-1) ?? '').includes(marker)).at(-1),
  );
}

/** Waits until the participant has finished one more request than `before`. */
async function finished(before: number): Promise<void> {
  const longrun = await api();
  await waitFor(
    'the participant to finish the request',
    () => longrun.participant.turns().completed > before && longrun.participant.turns().active === 0,
    120_000,
  );
}

async function newChat(): Promise<void> {
  await vscode.commands.executeCommand('workbench.action.chat.newChat');
  await new Promise((resolve) => setTimeout(resolve, 500));
}

/** Whether the diff of what a revert would write back is open: the revert command is running. */
const revertShown = (): boolean => vscode.window.tabGroups.all.some((group) => group.tabs.some((tab) => tab.label.includes('Revert of Longrun')));

/**
 * Waits for the question the revert command asks. A click on an answer the chat was drawing again
 * can be lost; when nothing came of it (no question, no diff open), the button is clicked again.
 */
async function questionBeforeReverting(): Promise<void> {
  const asked = async (): Promise<true | undefined> => ((await ui<string[]>('dialog')).join(' ').includes('bravo-notes.txt') ? true : undefined);
  for (let attempt = 1; ; attempt++) {
    const shown = await waitFor('the question before reverting', asked, 15_000).catch(() => false);
    if (shown) return;
    if (revertShown()) {
      await waitFor('the question before reverting, its diff open', asked);
      return;
    }
    const notices = (await ui<string[]>('notifications')).join(' | ');
    assert.ok(attempt < 3, `no question before reverting after ${attempt} clicks; notifications: ${notices || 'none'}`);
    await ui<string>('chat-button', { text: "Revert Longrun's changes" });
  }
}

describe('Longrun follows what the user does to the chat', function () {
  this.timeout(600_000);
  before(async () => {
    await model.reset();
  });

  it('answers a message typed as soon as the chat takes input after a reload', async () => {
    // The driver began typing 1.5 s after the workbench appeared, or once the chat's input was drawn.
    const typed = await waitFor('the driver to type the message', () => {
      const file = join(process.env.LONGRUN_E2E_DIR!, 'first-message.json');
      return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as { inputMs: number; typingMs: number; sentMs: number }) : undefined;
    });
    const request = await waitFor(
      'the message typed after the reload to reach the model',
      async () => (await model.requests()).find((r) => !r.summary && userTexts(r).some((t) => t.includes(FIRST_MESSAGE))),
      90_000,
    );
    assert.ok(request);
    const shown = await waitFor('its answer in the chat', async () => {
      const text = await chatText();
      return text.includes('Offline scripted model') ? text : undefined;
    });
    await idle();
    assert.doesNotMatch(shown, /Language model unavailable/);
    // Typed as soon as a user could: how soon the input is drawn depends on the machine, not on Longrun.
    assert.ok(
      typed.typingMs - Math.max(1_500, typed.inputMs) < 1_000,
      `typing began ${typed.typingMs} ms, the input was drawn at ${typed.inputMs} ms`,
    );
  });

  it("Restore Checkpoint: the removed turns are not sent again, and Longrun's edit in them is reverted on the click", async () => {
    const longrun = await api();
    await newChat();
    await chat('remember ALPHA-7');
    await chat('create bravo-notes.txt');
    await waitFor('the file the agent created', () => exists('bravo-notes.txt'));
    await chat('remember CHARLIE-3');
    await ui('chat-request-action', { text: 'create bravo-notes.txt', label: 'Restores workspace and chat to this point' });
    await chat('what do you remember? DELTA-4');
    const sent = userTexts(await requestFor('DELTA-4'));
    assert.deepEqual(sent, ['remember ALPHA-7', 'what do you remember? DELTA-4']);
    assert.ok(
      longrun.participant.recentNotices().some((n) => n.includes('bravo-notes.txt')),
      'the chat says the rewound turns changed a file',
    );
    // VS Code's checkpoint restored only its own edits: Longrun's file is still there until the user asks.
    await vscode.workspace.fs.stat(workspaceUri('bravo-notes.txt'));
    // Shown below the answer, where VS Code does not fold it: the files and the button, no fold opened.
    const answer = await ui<string>('chat-button', { text: "Revert Longrun's changes", inSight: true });
    assert.match(answer, /bravo-notes\.txt/);
    await questionBeforeReverting();
    await ui('dialog-button', { button: 'Revert' });
    await waitFor('the created file to be removed', async () => ((await exists('bravo-notes.txt')) ? undefined : true));
  });

  it('Fork: the fork sends only the turns before the fork point, and both chats then go on apart', async () => {
    await newChat();
    await chat('remember FOXTROT-1 forkchat');
    await chat('remember GOLF-2');
    await chat('remember HOTEL-3');
    await ui('chat-request-action', { text: 'remember GOLF-2', label: 'Fork conversation from this point' });
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    await chat('fork says INDIA-4');
    assert.deepEqual(userTexts(await requestFor('INDIA-4')), ['remember FOXTROT-1 forkchat', 'fork says INDIA-4']);

    // Back to the chat it was forked from, through VS Code's list of chats. The fork's row may not say
    // "Forked" yet when the list is drawn: a user who opened the wrong one opens the list again and
    // takes the other. A user types once the chat picked shows its requests (HOTEL-3 is the original's alone).
    const showsOriginal = async (): Promise<boolean> => (await chatText()).includes('remember HOTEL-3');
    let offered: string[] = [];
    for (let attempt = 0; attempt < 8 && !(await showsOriginal()); attempt++) {
      if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, 1_000));
      void vscode.commands.executeCommand('workbench.action.chat.pickAgentSession');
      offered = await ui<string[]>('quick-pick', { text: 'forkchat', not: 'Forked', skip: attempt % 2 });
      await waitFor('the chat picked to show', async () => ((await showsOriginal()) ? true : undefined), 5_000).catch(() => undefined);
    }
    assert.ok(await showsOriginal(), `the original chat in the chat panel (the list offered: ${offered.join(' | ')})`);
    const longrun = await api();
    const before = longrun.participant.turns().completed;
    await ui('chat-type', { text: '@longrun original says JULIET-5' });
    await finished(before);
    // Typed into the chat: the prompt may keep the participant's name when the chat had it already.
    const original = userTexts(await requestFor('JULIET-5')).map((t) => t.replace(/^@longrun /, ''));
    assert.deepEqual(original, ['remember FOXTROT-1 forkchat', 'remember GOLF-2', 'remember HOTEL-3', 'original says JULIET-5']);
  });

  it('Retry: the request is sent once, and the answer VS Code discarded is not sent', async () => {
    const longrun = await api();
    await newChat();
    await chat('remember KILO-1');
    await chat('remember LIMA-2');
    const before = longrun.participant.turns().completed;
    const requestsBefore = (await model.requests()).length;
    await ui('chat-retry');
    await finished(before);
    const retried = (await model.requests()).slice(requestsBefore).filter((r) => !r.summary);
    assert.equal(retried.length, 1);
    assert.deepEqual(
      messages(retried[0]!).map((m) => m.role),
      ['system', 'user', 'assistant', 'user'],
      'the first turn, then the retried request alone',
    );
    assert.deepEqual(userTexts(retried[0]!), ['remember KILO-1', 'remember LIMA-2']);
  });

  it('An edited earlier request replaces it, and what came after it is not sent', async () => {
    const longrun = await api();
    await newChat();
    await chat('remember MIKE-1');
    await chat('remember NOVEMBER-2');
    await chat('remember OSCAR-3');
    const before = longrun.participant.turns().completed;
    await ui('chat-edit-request', { text: 'remember NOVEMBER-2', replacement: '@longrun remember PAPA-9' });
    await finished(before);
    assert.deepEqual(userTexts(await requestFor('PAPA-9')), ['remember MIKE-1', 'remember PAPA-9']);
  });

  it('Start Over starts a new conversation', async () => {
    const longrun = await api();
    await newChat();
    await chat('remember QUEBEC-1');
    const first = longrun.registry.currentIfLoaded()!.id;
    await ui('chat-request-action', { text: 'remember QUEBEC-1', label: 'Clears the chat and undoes all changes' });
    await chat('what do you remember? ROMEO-2');
    assert.deepEqual(userTexts(await requestFor('ROMEO-2')), ['what do you remember? ROMEO-2']);
    assert.notEqual(longrun.registry.currentIfLoaded()!.id, first);
  });

  it('A rewind past a compaction sends the originals again, not the summary', async () => {
    await newChat();
    const filler = 'filler words to make the turn long enough to be worth compacting. '.repeat(30);
    await chat(`remember SIERRA-1 ${filler}`, SMALL_MODEL);
    await chat(`remember SIERRA-2 ${filler}`, SMALL_MODEL);
    await chat(`remember SIERRA-3 ${filler}`, SMALL_MODEL);
    await chat('/compact', SMALL_MODEL);
    await chat('remember TANGO-4', SMALL_MODEL);
    const compacted = messages(await requestFor('TANGO-4'));
    assert.ok(
      compacted.some((m) => m.text.includes('compacted into the following summary')),
      'the request after /compact carries the summary',
    );
    // Restore Checkpoint on the /compact request: the chat is back to its three turns.
    await ui('chat-request-action', { text: '/compact', label: 'Restores workspace and chat to this point' });
    await chat('remember UNIFORM-5', SMALL_MODEL);
    const rewound = await requestFor('UNIFORM-5');
    assert.ok(!messages(rewound).some((m) => m.text.includes('compacted into the following summary')), 'no summary after the rewind');
    assert.deepEqual(
      userTexts(rewound).map((t) => t.slice(0, 17)),
      ['remember SIERRA-1', 'remember SIERRA-2', 'remember SIERRA-3', 'remember UNIFORM-'],
    );
  });

  it('sends each request as the one before it plus its tail, except right after a compaction', async () => {
    await newChat();
    const first = (await model.requests()).length;
    await chat('please read src/big-1.ts');
    await chat('remember WHISKEY-1');
    await chat('please read src/big-2.ts');
    await chat('/compact');
    await chat('remember XRAY-2');
    await chat('please read src/big-3.ts');
    const sent = (await model.requests()).slice(first).filter((r) => !r.summary);
    assert.ok(sent.length >= 8, `${sent.length} requests`);
    let breaks = 0;
    for (let i = 1; i < sent.length; i++) {
      const [before, after] = [sent[i - 1]!.body!, sent[i]!.body!];
      assert.deepEqual(after.tools, before.tools, `request ${i}: the same tools`);
      const prefix = JSON.stringify(before.messages);
      const starts = JSON.stringify(after.messages?.slice(0, before.messages?.length ?? 0)) === prefix;
      if (!starts) breaks++;
    }
    assert.equal(breaks, 1, 'one break: the request after /compact');
  });

  it('puts AGENTS.md into the system prompt once and into no user message, over five turns', async () => {
    const rules = '# Rules for agents\n\nAlways name the file you change. RULE-MARKER-42\n';
    await vscode.workspace.fs.writeFile(workspaceUri('AGENTS.md'), Buffer.from(rules));
    try {
      await newChat();
      for (let i = 1; i <= 5; i++) {
        await chat(`remember VICTOR-${i}`, MODEL);
        const sent = messages(await requestFor(`VICTOR-${i}`));
        const system = sent.filter((m) => m.role === 'system');
        assert.equal(system.length, 1);
        assert.equal(system[0]!.text.split('RULE-MARKER-42').length - 1, 1, `request ${i}: the rules once in the system prompt`);
        assert.ok(!sent.some((m) => m.role !== 'system' && m.text.includes('RULE-MARKER-42')), `request ${i}: in no other message`);
      }
    } finally {
      await vscode.workspace.fs.delete(workspaceUri('AGENTS.md'));
    }
  });
});
