/**
 * End-to-end scenarios in a real VS Code (code-server in headless Chromium), against the loopback
 * scripted model. They run in order and share one workbench; `after-reload.ts` continues after
 * the window is reloaded.
 */
import * as assert from 'assert';
import { writeFileSync } from 'fs';
import { join } from 'path';
import * as vscode from 'vscode';
import { COMMANDS } from '../../../src/app/contributions';
import {
  api,
  chat,
  entries,
  gaugeInDom,
  log,
  model,
  MODEL,
  newConversation,
  orphanToolResults,
  OVERFLOW_MODEL,
  requestText,
  SIX_K_MODEL,
  SMALL_MODEL,
  TRUNCATING_MODEL,
  ui,
  waitFor,
} from './harness';

const percentOf = (text: string): number => Number(/(\d+)%/.exec(text)?.[1] ?? NaN);
const workspaceUri = (path: string): vscode.Uri => vscode.Uri.joinPath(vscode.workspace.workspaceFolders![0]!.uri, path);
const chatText = async (): Promise<string> => (await ui<string[]>('chat-text')).join('\n');

describe('Longrun in a real VS Code', function () {
  this.timeout(600_000);

  // These scenarios are about summaries and read the same files again on purpose, which pruning
  // would make enough on its own: it is off here, and the memory phase is about it.
  const pruning = () => vscode.workspace.getConfiguration('longrun');
  before(async () => {
    await model.reset();
    await pruning().update('compaction.pruning.enabled', false, vscode.ConfigurationTarget.Global);
  });
  after(async () => {
    await pruning().update('compaction.pruning.enabled', undefined, vscode.ConfigurationTarget.Global);
  });

  describe('1. activation and contributions', () => {
    it('activates and registers its commands, the participant, the gauge and the longrun model vendor', async () => {
      const longrun = await api();
      assert.ok(longrun.session && longrun.gauge && longrun.participant, 'the extension exports its state');
      const commands = await vscode.commands.getCommands(true);
      for (const command of COMMANDS) assert.ok(commands.includes(command), `${command} is registered`);
      const extension = vscode.extensions.getExtension('longrun.longrun')!;
      assert.equal(extension.packageJSON.contributes.chatParticipants[0].id, 'longrun.agent');
      const models = await vscode.lm.selectChatModels({ vendor: 'longrun' });
      assert.deepEqual(models.map((m) => m.id).sort(), [
        'offline/scripted',
        'offline/scripted-6k',
        'offline/scripted-6k-tools',
        'offline/scripted-overflow',
        'offline/scripted-small',
        'offline/scripted-trunc',
      ]);
      const gauge = await gaugeInDom();
      assert.match(gauge.text, /no conversation/);
      assert.match(gauge.ariaLabel, /^Longrun context/);
    });

    it("is timed by VS Code itself: loading Longrun's code and calling its activate", async () => {
      const [longrun, beside] = await vscodeActivationTimings(['longrun.longrun', 'longrun-tests.e2e-models']);
      // Read by the runner (test/e2e/run.ts) beside "Developer: Show Running Extensions".
      writeFileSync(join(process.env.LONGRUN_E2E_ROOT!, 'test-results', 'activation-vscode.json'), JSON.stringify({ longrun, beside }));
      assert.ok(longrun && beside && longrun.requireMs >= 0 && longrun.callActivateMs >= 0, JSON.stringify(longrun));
    });
  });

  describe('2. a chat request through the chat panel', () => {
    it('reaches @longrun with a Longrun model selected, and the reply streams in', async () => {
      await chat('hello there');
      await waitFor('the reply in the chat panel', async () => (await chatText()).includes('Offline scripted model: I received your message'));
      const requests = await model.requests();
      assert.ok(
        requests.some((r) => r.model === 'scripted' && requestText(r).includes('hello there')),
        'the request reached the model',
      );
    });

    it('answers a request typed into the chat input', async () => {
      const longrun = await api();
      const before = longrun.participant.turns().completed;
      await ui('chat-type', { text: '@longrun how are you today' });
      await waitFor('the typed request to finish', () => longrun.participant.turns().completed > before && longrun.participant.turns().active === 0);
      const requests = await model.requests();
      assert.ok(requests.some((r) => requestText(r).includes('how are you today')));
    });
  });

  describe('3. a multi-turn conversation with tool calls', () => {
    it('moves the gauge, in text and level, as files are read', async () => {
      await newConversation();
      const seen: number[] = [];
      let level = '';
      for (let i = 1; i <= 10 && level !== 'warning'; i++) {
        await chat(`please read src/big-${i}.ts`, SMALL_MODEL);
        const gauge = await waitFor('the gauge to show a percentage', async () => {
          const g = await gaugeInDom();
          return /\d+% · [\d.]+k\/7\.7k/.test(g.text) ? g : undefined;
        });
        seen.push(percentOf(gauge.text));
        level = /, (ok|warning|critical|over)$/.exec(gauge.ariaLabel)?.[1] ?? '';
        if (i === 1) await ui('screenshot', { name: 'gauge-ok', gauge: true, docs: true });
      }
      for (let i = 1; i < seen.length; i++) assert.ok(seen[i]! > seen[i - 1]!, `the gauge rises: ${seen.join(' → ')}`);
      assert.equal(level, 'warning', `the gauge reached the warning level: ${seen.join(' → ')}`);
      const gauge = await gaugeInDom();
      assert.equal(gauge.background, 'warning');
      await ui('screenshot', { name: 'gauge-warning', gauge: true, docs: true });
      const reads = (await log()).filter((r) => r.type === 'message' && r.message.role === 'tool').length;
      assert.ok(reads >= 4, `tool results are in the history (${reads})`);
    });
  });

  describe('4. automatic compaction in the middle of a tool loop', () => {
    it('compacts at the threshold between steps, and the next request holds the summary and the kept messages without orphans', async () => {
      const before = (await entries()).length;
      const requestsBefore = (await model.requests()).length;
      await model.script([
        { toolCalls: [{ name: 'read_file', arguments: { path: 'src/big-7.ts' } }] },
        { toolCalls: [{ name: 'read_file', arguments: { path: 'src/big-8.ts' } }] },
        { toolCalls: [{ name: 'read_file', arguments: { path: 'src/big-1.ts' } }] },
        { toolCalls: [{ name: 'read_file', arguments: { path: 'src/big-2.ts' } }] },
        { text: 'All four files read; the loop is finished.' },
      ]);
      await chat('read four more files one by one', SMALL_MODEL);
      const after = await entries();
      assert.ok(after.length > before, 'a compaction happened');
      assert.equal(after.at(-1)!.reason, 'threshold');
      const entry = after.at(-1)!;
      assert.equal(entry.fallback, false, 'the summary was written by the model');
      // The summary may have been prepared ahead, from the warning level on, before this request:
      // what counts is that one step of this turn was sent without it and the next one with it.
      const heading = `Session Summary (Compaction Round ${entry.round})`;
      const steps = (await model.requests()).slice(requestsBefore).filter((r) => !r.summary);
      const nextAt = steps.findIndex((r) => requestText(r).includes(heading));
      assert.ok(nextAt > 0, `a step was sent before the compaction and the conversation continued after it (${nextAt} of ${steps.length})`);
      assert.equal(steps.length, 5, 'each of the five scripted steps was asked for once');
      const next = steps[nextAt]!;
      assert.match(requestText(next), /read four more files one by one/, 'the latest request is kept');
      assert.deepEqual(orphanToolResults(next), []);
      let shown = '';
      await waitFor('the compaction line and the final answer in the chat', async () => {
        shown = await chatText();
        return /Compacted \d+ messages: [\d.]+k? → [\d.]+k? tokens \(round \d+\)/.test(shown) && shown.includes('All four files read')
          ? shown
          : undefined;
      }).catch((error: unknown) => {
        throw new Error(`${error instanceof Error ? error.message : String(error)}; the chat shows: ${shown}`);
      });
      await ui('screenshot', { name: 'compaction-in-chat', chat: true, docs: true });
    });
  });

  describe('5. the provider answers context_length_exceeded', () => {
    it('compacts, retries once, and the answer arrives', async () => {
      await newConversation();
      for (let i = 1; i <= 6; i++) await chat(`please read src/big-${i}.ts`, OVERFLOW_MODEL);
      const requestsBefore = (await model.requests()).length;
      await model.setWindow('scripted-overflow', 4_000);
      try {
        await chat('what do these files have in common?', OVERFLOW_MODEL);
      } finally {
        await model.setWindow('scripted-overflow', 128_000);
      }
      const requests = (await model.requests()).slice(requestsBefore);
      assert.ok(
        requests.some((r) => r.status === 400),
        'the server refused the oversized request',
      );
      const last = (await entries()).at(-1);
      assert.equal(last?.reason, 'overflow');
      assert.equal(last?.fallback, false, 'the summary request was sized for the window the provider stated');
      const retried = requests.filter((r) => !r.summary).at(-1)!;
      assert.equal(retried.status, 200, 'the retry succeeded');
      assert.deepEqual(orphanToolResults(retried), []);
      await waitFor('the answer after the retry', async () => (await chatText()).includes('what do these files have in common') || undefined);
    });
  });

  describe('5b. an honest gauge on a small local model', () => {
    // About 150 tokens of words that no tokenizer compresses much.
    const padding = (i: number): string => Array.from({ length: 60 }, (_, j) => `note${i}x${j}`).join(' ');
    const outputLimit = (r: { body?: Record<string, unknown> }): number => Number(r.body?.max_tokens ?? r.body?.max_completion_tokens ?? 0);

    it('shows the 6,000-token window its server states before any overflow; twenty turns compact a few times and no request is refused', async () => {
      await newConversation();
      const longrun = await api();
      const before = (await model.requests()).length;
      await chat('hello, small model', SIX_K_MODEL);
      await waitFor('the window the server states', () => longrun.session.modelContext().whole?.limit === 6_000 || undefined);
      longrun.gauge.update();
      assert.match(longrun.gauge.current().tooltipMarkdown, /Window 6,000 tokens, from the server's model list/);
      await waitFor('the gauge on the 4,500 tokens left for the conversation', async () =>
        (await gaugeInDom()).text.includes('/4.5k') ? true : undefined,
      );
      for (let i = 1; i <= 20; i++) await chat(`turn ${i}: ${padding(i)}`, SIX_K_MODEL);
      const requests = (await model.requests()).slice(before).filter((r) => r.model === 'scripted-6k');
      assert.deepEqual(
        requests.filter((r) => r.status !== 200).map((r) => r.status),
        [],
        'no request was refused',
      );
      const turns = requests.filter((r) => !r.summary);
      // Once the window is known, the answer's room is a quarter of it, not a fixed 4,096.
      for (const r of turns.slice(1)) assert.ok(outputLimit(r) <= 1_500, `max_tokens ${outputLimit(r)}`);
      const compactions = (await entries()).length;
      // Kept with the run's results, to be stated wherever the count matters.
      writeFileSync(join(process.env.LONGRUN_E2E_ROOT!, 'test-results', 'compactions-6k.txt'), String(compactions));
      assert.ok(compactions >= 1 && compactions <= 4, `${compactions} compactions in 21 turns`);
    });

    it('keeps a tool loop of fifteen reads in one request within the 6,000-token window: no request is refused', async () => {
      await newConversation();
      const before = (await model.requests()).length;
      const entriesBefore = (await entries()).length;
      // Fifteen files, each read once: reading on through new files is progress, not a compaction loop.
      const reads = Array.from({ length: 15 }, (_, i) => `src/big-${i + 1}.ts`);
      await model.script([
        ...reads.map((path) => ({ toolCalls: [{ name: 'read_file', arguments: { path } }] })),
        { text: 'All fifteen files read.' },
      ]);
      await chat('read the big files one by one, fifteen reads in all', SIX_K_MODEL);
      const requests = (await model.requests()).slice(before).filter((r) => r.model === 'scripted-6k');
      assert.deepEqual(
        requests.filter((r) => r.status !== 200).map((r) => r.status),
        [],
        'no request was refused',
      );
      const turns = requests.filter((r) => !r.summary);
      assert.equal(turns.length, 16, `${turns.length} model calls: fifteen reads and the answer`);
      assert.ok((await entries()).length > entriesBefore, 'the loop was compacted inside the request');
      assert.match(requestText(turns.at(-1)!), /read the big files one by one/, 'the request is kept verbatim');
      assert.deepEqual(orphanToolResults(turns.at(-1)!), []);
      await waitFor('the answer in the chat', async () => (await chatText()).includes('All fifteen files read') || undefined);
    });

    it('notices a server that cuts the prompt silently: compacts, asks again, and says so in the chat', async () => {
      await newConversation();
      const longrun = await api();
      const before = (await model.requests()).length;
      for (let i = 1; i <= 16; i++) {
        await chat(`step ${i}: ${padding(i)} ${padding(i + 100)}`, TRUNCATING_MODEL);
        if ((await model.requests()).slice(before).some((r) => r.truncated)) break;
      }
      const requests = (await model.requests()).slice(before);
      const cutAt = requests.findIndex((r) => r.truncated);
      assert.ok(cutAt >= 0, 'the server cut a prompt');
      const after = requests.slice(cutAt + 1);
      const summaryAt = after.findIndex((r) => r.summary);
      assert.ok(summaryAt >= 0, 'Longrun compacted after the cut');
      const retry = after.slice(summaryAt + 1).find((r) => !r.summary);
      assert.ok(retry, 'Longrun asked again');
      assert.equal(retry.truncated, undefined, 'the second request fit');
      // No second compaction follows that could free too little to be worth its summarizer call.
      assert.equal((await entries()).at(-1)?.reason, 'overflow');
      assert.ok(
        longrun.participant.recentNotices().some((n) => n.includes('cut the prompt')),
        'the chat says the server cut the prompt',
      );
      // Where it stays in sight once VS Code folds the steps of the answer.
      assert.match(await ui<string>('chat-shown', { contains: 'cut the prompt' }), /cut the prompt/);
      assert.ok((longrun.session.modelContext().whole?.limit ?? Infinity) <= 4_096, 'the window the cut suggests is used from now on');
    });
  });

  describe('5c. one conversation per chat', () => {
    it('keeps two chats apart, goes back to the first through the chat history, and the gauge follows the chat used last', async () => {
      const longrun = await api();
      await vscode.commands.executeCommand('workbench.action.chat.newChat');
      await chat('alphachat first request', MODEL);
      const first = longrun.registry.currentIfLoaded()!.id;
      await vscode.commands.executeCommand('workbench.action.chat.newChat');
      await chat('betachat first request', MODEL);
      const second = longrun.registry.currentIfLoaded()!.id;
      assert.notEqual(first, second, 'a new chat starts a new conversation');

      // Back to the first chat through VS Code's list of chats.
      // The list of chats fills in as VS Code saves them: open it again until the first chat is there.
      let offered: string[] = [];
      for (let attempt = 0; attempt < 8 && !offered.some((label) => label.includes('alphachat')); attempt++) {
        if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, 2_000));
        void vscode.commands.executeCommand('workbench.action.chat.pickAgentSession');
        offered = await ui<string[]>('quick-pick', { text: 'alphachat' });
      }
      assert.ok(
        offered.some((label) => label.includes('alphachat')),
        `the first chat is offered: ${JSON.stringify(offered)}`,
      );
      // A user types once the chat picked shows its first request.
      await waitFor('the first chat in the chat panel', async () => ((await chatText()).includes('alphachat first request') ? true : undefined));
      const before = (await model.requests()).length;
      const completed = longrun.participant.turns().completed;
      await ui('chat-type', { text: '@longrun alphachat second request' });
      await waitFor('the follow-up to finish', () => longrun.participant.turns().completed > completed && longrun.participant.turns().active === 0);
      const sent = (await model.requests()).slice(before).filter((r) => !r.summary && requestText(r).includes('alphachat second'));
      assert.equal(sent.length, 1);
      assert.match(
        requestText(sent[0]!),
        /alphachat first request/,
        `the first chat continues its own conversation: ${requestText(sent[0]!).slice(-600)}`,
      );
      assert.doesNotMatch(requestText(sent[0]!), /betachat/, 'nothing of the other chat reaches it');
      assert.equal(longrun.registry.currentIfLoaded()!.id, first, 'the gauge follows the chat used last');
      const titles = (await longrun.registry.conversations()).map((c) => c.title);
      assert.ok(titles.includes('alphachat first request') && titles.includes('betachat first request'), JSON.stringify(titles));
    });
  });

  describe('5d. summaries ready before they are needed', () => {
    it('crosses the compaction point in the middle of a tool loop without waiting for a 5 s summarizer', async () => {
      const longrun = await api();
      await newConversation();
      await model.failSummaries({ delayMs: 5_000 });
      try {
        // Fill the 7,680-token room past the warning level (75%) but not to the compaction point (90%).
        for (let i = 1; i <= 10 && longrun.registry.currentIfLoaded()?.assess().level !== 'warning'; i++) {
          await chat(`please read src/big-${i}.ts`, SMALL_MODEL);
        }
        const conversation = longrun.registry.currentIfLoaded()!;
        assert.equal(conversation.assess().level, 'warning');
        // The summary is prepared while the user reads the answer.
        await waitFor('the summary prepared ahead', () => (conversation.isSummarizingAhead() ? true : undefined));
        await new Promise((resolve) => setTimeout(resolve, 6_000));
        const before = (await model.requests()).length;
        const entriesBefore = (await entries()).length;
        await model.script([
          { toolCalls: [{ name: 'read_file', arguments: { path: 'src/big-7.ts' } }] },
          { toolCalls: [{ name: 'read_file', arguments: { path: 'src/big-8.ts' } }] },
          { toolCalls: [{ name: 'read_file', arguments: { path: 'src/big-9.ts' } }] },
          { text: 'Three more files read.' },
        ]);
        await chat('read three more files', SMALL_MODEL);
        const after = await entries();
        assert.ok(after.length > entriesBefore, 'a compaction happened during the loop');
        assert.equal(after.at(-1)!.reason, 'threshold');
        const turn = (await model.requests()).slice(before).filter((r) => !r.summary && r.path === '/v1/chat/completions');
        assert.ok(turn.length >= 4, `the loop's requests: ${turn.length}`);
        const gaps = turn.slice(1).map((r, i) => r.receivedAt - (turn[i]!.answeredAt ?? turn[i]!.receivedAt));
        assert.ok(Math.max(...gaps) < 4_000, `no step waited for the summarizer: gaps ${gaps.join(', ')} ms`);
      } finally {
        await model.failSummaries(null);
      }
    });
  });

  describe('6. compacting on demand', () => {
    before(async () => {
      await newConversation();
      await chat('please read src/big-1.ts', MODEL);
    });

    it('compacts when the gauge is clicked', async () => {
      await chat('please read src/big-3.ts', MODEL);
      await chat('please read src/big-4.ts', MODEL);
      const before = (await entries()).length;
      await ui('click-statusbar', { idContains: 'longrun.gauge' });
      const after = await waitFor('a compaction from the gauge', async () => {
        const list = await entries();
        return list.length > before ? list : undefined;
      });
      assert.equal(after.at(-1)!.reason, 'manual');
    });

    it('compacts from "Compact Conversation" typed into the Command Palette', async () => {
      await chat('please read src/big-5.ts', MODEL);
      await chat('please read src/big-6.ts', MODEL);
      const before = (await entries()).length;
      await ui('command-palette', { text: 'Longrun: Compact Conversation' });
      const after = await waitFor('a compaction from the Command Palette', async () => {
        const list = await entries();
        return list.length > before ? list : undefined;
      });
      assert.equal(after.at(-1)!.reason, 'manual');
    });

    it('passes the focus of /compact into the summary request', async () => {
      await chat('please read src/big-7.ts', MODEL);
      await chat('please read src/big-8.ts', MODEL);
      const requestsBefore = (await model.requests()).length;
      await chat('/compact the parser module', MODEL);
      const summary = (await model.requests()).slice(requestsBefore).find((r) => r.summary);
      assert.ok(summary, 'a summary request was made');
      assert.match(requestText(summary), /focus on: the parser module/);
      const last = (await entries()).at(-1)!;
      assert.equal(last.focus, 'the parser module');
      assert.match(last.summary, /the parser module/, 'the focus reached the summary');
    });
  });

  describe('7. file operations from the editor', () => {
    it('lists a file the user edited, one created and one deleted in the next summary', async () => {
      const document = await vscode.workspace.openTextDocument(workspaceUri('src/app.ts'));
      const editor = await vscode.window.showTextDocument(document);
      await editor.edit((edit) => edit.insert(new vscode.Position(0, 0), '// edited by the user\n'));
      await document.save();
      const create = new vscode.WorkspaceEdit();
      create.createFile(workspaceUri('src/created-by-user.ts'), { contents: Buffer.from('export const created = true;\n') });
      assert.ok(await vscode.workspace.applyEdit(create));
      const remove = new vscode.WorkspaceEdit();
      remove.deleteFile(workspaceUri('src/to-delete.ts'));
      assert.ok(await vscode.workspace.applyEdit(remove));
      await chat('please read README.md', MODEL);
      await chat('please read src/big-1.ts', MODEL);
      const before = (await entries()).length;
      await vscode.commands.executeCommand('longrun.compact');
      const last = await waitFor('the compaction', async () => {
        const list = await entries();
        return list.length > before ? list.at(-1) : undefined;
      });
      const modified = /<modified-files>([\s\S]*)<\/modified-files>/.exec(last.summary)?.[1] ?? '';
      assert.match(modified, /src\/app\.ts \(modified; user\)/);
      assert.match(modified, /src\/created-by-user\.ts \(created; user\)/);
      assert.match(modified, /src\/to-delete\.ts \(deleted; user\)/);
      assert.match(last.summary, /<read-files>[\s\S]*README\.md[\s\S]*<\/read-files>/);
    });
  });

  describe('9. the summarizer fails', () => {
    it('keeps the chat going, loses nothing, and shows the fallback', async () => {
      await model.failSummaries({ error: { status: 500, body: { error: { message: 'summarizer down' } } } });
      try {
        await chat('please read src/big-2.ts', MODEL);
        await chat('please read src/big-3.ts', MODEL);
        const messagesBefore = (await log()).filter((r) => r.type === 'message').length;
        const before = (await entries()).length;
        await vscode.commands.executeCommand('longrun.compact');
        const last = await waitFor('the fallback compaction', async () => {
          const list = await entries();
          return list.length > before ? list.at(-1) : undefined;
        });
        assert.equal(last.fallback, true);
        assert.equal(last.model, 'extractive-fallback');
        assert.match(last.summary, /extractive fallback/);
        await waitFor('the fallback notice', async () =>
          (await ui<string[]>('notifications')).join('\n').includes('extractive fallback') ? true : undefined,
        );
        const messagesAfter = (await log()).filter((r) => r.type === 'message').length;
        assert.equal(messagesAfter, messagesBefore, 'no message was lost');
      } finally {
        await model.failSummaries(null);
      }
      await chat('are you still there?', MODEL);
      await waitFor('a reply after the failure', async () => ((await chatText()).includes('are you still there') ? true : undefined));
    });
  });

  describe('10. settings', () => {
    const config = () => vscode.workspace.getConfiguration('longrun');

    it('applies a new threshold without reload', async () => {
      const longrun = await api();
      await config().update('compaction.auto', false, vscode.ConfigurationTarget.Global);
      try {
        await config().update('compaction.warningThreshold', 0.001, vscode.ConfigurationTarget.Global);
        await config().update('compaction.criticalThreshold', 0.002, vscode.ConfigurationTarget.Global);
        await waitFor('the new threshold', () => longrun.settings().compaction.trigger.criticalThreshold === 0.002 || undefined);
        longrun.gauge.update();
        const gauge = await waitFor('the critical level in the status bar', async () => {
          const g = await gaugeInDom();
          return g.background === 'error' ? g : undefined;
        });
        assert.match(gauge.ariaLabel, /critical|over/);
        await ui('screenshot', { name: 'gauge-critical', gauge: true, docs: true });
      } finally {
        await config().update('compaction.criticalThreshold', undefined, vscode.ConfigurationTarget.Global);
        await config().update('compaction.warningThreshold', undefined, vscode.ConfigurationTarget.Global);
        await config().update('compaction.auto', undefined, vscode.ConfigurationTarget.Global);
      }
      await waitFor('the default threshold again', () => longrun.settings().compaction.trigger.criticalThreshold === 0.9 || undefined);
    });

    it('warns about an invalid threshold and uses the default', async () => {
      const longrun = await api();
      await config().update('compaction.criticalThreshold', 7, vscode.ConfigurationTarget.Global);
      try {
        const notice = await waitFor('the warning', async () =>
          (await ui<string[]>('notifications')).find((n) => n.includes('longrun.compaction.criticalThreshold')),
        );
        assert.match(notice, /using 0\.9 instead/);
        assert.equal(longrun.settings().compaction.trigger.criticalThreshold, 0.9);
      } finally {
        await config().update('compaction.criticalThreshold', undefined, vscode.ConfigurationTarget.Global);
      }
    });
  });

  describe('before the reload', () => {
    it('records what the reloaded window must show', async () => {
      const longrun = await api();
      const conversation = (await longrun.registry.current())!;
      longrun.gauge.update();
      const gauge = await gaugeInDom();
      const state = {
        conversationId: conversation.id,
        records: conversation.log().length,
        entries: (await entries()).map((e) => e.id),
        gaugeText: gauge.text,
        view: conversation.view().map((m) => m.id),
      };
      writeFileSync(join(process.env.LONGRUN_E2E_DIR!, 'state.json'), JSON.stringify(state));
      assert.ok(state.entries.length >= 3);
    });
  });
});

/** What VS Code measured of one extension's activation, in ms. */
interface ActivationTiming {
  /** "Load Code" of Developer: Startup Performance: from the start of loading to the end of `require`. */
  readonly loadCodeMs: number;
  /** "Call Activate": the call of `activate` itself. */
  readonly callActivateMs: number;
  /** The `require` of the extension's main file alone, between VS Code's own performance marks around it. */
  readonly requireMs: number;
}

/**
 * VS Code's own timing of an extension's activation. "Developer: Show Running Extensions" shows
 * Load Code + Call Activate. Load Code starts when the extension host begins loading the extension
 * and ends when its `require` returns; in between, the host runs whatever the extensions activated
 * at the same moment queued before it, so that part says as much about them as about this one. The
 * host marks the `require` alone (code/extHost/willLoadExtensionCode/…, didLoadExtensionCode/…) in
 * its own performance marks, which an extension in the same host can read.
 */
async function vscodeActivationTimings(ids: readonly string[]): Promise<ActivationTiming[]> {
  // "Developer: Startup Performance" registers the document's provider the first time it is shown.
  await vscode.commands.executeCommand('perfview.show');
  const stats = await vscode.workspace.openTextDocument(vscode.Uri.from({ scheme: 'perf', path: 'Startup Performance' }));
  await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
  // | extension | eager | load code | call activate | finish activate | event | by |
  const rows = stats
    .getText()
    .split('\n')
    .map((line) => line.split('|').map((cell) => cell.trim()));
  const marks =
    (globalThis as { MonacoPerformanceMarks?: { getMarks(): { name: string; startTime: number }[] } }).MonacoPerformanceMarks?.getMarks() ?? [];
  return ids.map((id) => {
    const row = rows.find((cells) => cells[1] === id);
    assert.ok(row, `Developer: Startup Performance lists no activation of ${id}:\n${stats.getText().slice(0, 2_000)}`);
    const mark = (name: string): number => {
      const found = marks.find((m) => m.name === `code/extHost/${name}/${id}`);
      assert.ok(found, `the extension host has no performance mark ${name} for ${id}`);
      return found.startTime;
    };
    return {
      loadCodeMs: Number(row[3]),
      callActivateMs: Number(row[4]),
      requireMs: Math.round((mark('didLoadExtensionCode') - mark('willLoadExtensionCode')) * 10) / 10,
    };
  });
}
