/**
 * VS Code's own models, tools and attachments, for real: a second installed extension
 * (test/e2e/models-extension) registers a chat model of its own vendor, served by the loopback
 * scripted model, that counts tokens its own way (characters / 3), and a tool that asks for
 * confirmation. With that model picked in the chat, @longrun runs tool loops, compacts and stops
 * through the bridge; it calls the tool through VS Code's confirmation (clicked in the browser);
 * and what the user attaches to a message reaches the model and the file ledger.
 */
import * as assert from 'assert';
import { mkdirSync, mkdtempSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import * as vscode from 'vscode';
import {
  api,
  chat,
  entries,
  gaugeInDom,
  lastToolOutput,
  log,
  model,
  newConversation,
  requestText,
  startChat,
  ui,
  waitFor,
  type RecordedRequest,
} from './harness';

const EDITOR_MODEL = { vendor: 'longrun-test', id: 'scripted-editor' };
const TOOL = 'longrun-test_lookup';
const TEST_EXTENSION = 'longrun-tests.e2e-models';
/** VS Code's answer to a tool confirmation that allows this one call (its primary button allows the whole session). */
const ALLOW_ONCE = { button: 'More Actions', menuItem: 'Allow Once' };

/** What the test extension exports: what its model and tool saw. */
interface TestModels {
  requests(): Array<{ messagesTokens: number; toolsTokens: number; tools: string[]; outcome: string }>;
  invocations(): Array<{ query: string; size?: number }>;
  counts(): number;
  countText(text: string): number;
  readonly maxInputTokens: number;
}

async function testModels(): Promise<TestModels> {
  const extension = vscode.extensions.getExtension<TestModels>(TEST_EXTENSION);
  if (!extension) throw new Error(`${TEST_EXTENSION} is not installed`);
  return extension.isActive ? extension.exports : extension.activate();
}

const root = (): vscode.Uri => vscode.workspace.workspaceFolders![0]!.uri;
const config = () => vscode.workspace.getConfiguration('longrun');
const editorRequests = async (since: number): Promise<RecordedRequest[]> =>
  (await model.requests()).slice(since).filter((r) => r.model === 'scripted-editor');
const offeredTools = (request: RecordedRequest): string[] =>
  ((request.body?.tools as Array<{ function: { name: string } }> | undefined) ?? []).map((t) => t.function.name);

describe("VS Code's models, tools and attachments", function () {
  this.timeout(600_000);

  before(async () => {
    await model.reset();
    await config().update('agent.editorTools', undefined, vscode.ConfigurationTarget.Global);
  });

  describe("another extension's chat model", () => {
    it('is offered with the window it declares, next to its tool', async () => {
      const [found] = await vscode.lm.selectChatModels(EDITOR_MODEL);
      assert.ok(found, 'the test extension registers its model');
      assert.equal(found.maxInputTokens, (await testModels()).maxInputTokens);
      assert.ok(
        vscode.lm.tools.some((t) => t.name === TOOL),
        'the test extension registers its tool',
      );
    });

    it("runs a turn with tool calls; the gauge reads the model's own window and its own token count", async () => {
      const longrun = await api();
      const models = await testModels();
      await newConversation();
      const before = (await model.requests()).length;
      await model.script([
        { toolCalls: [{ name: 'read_file', arguments: { path: 'src/big-1.ts' } }] },
        { toolCalls: [{ name: 'read_file', arguments: { path: 'src/big-2.ts' } }] },
        { text: 'Both files are read.' },
      ]);
      await chat('read two files, one after the other', EDITOR_MODEL);
      const turn = await editorRequests(before);
      assert.equal(turn.length, 3, 'three model calls through the test extension');
      assert.ok(
        turn.every((r) => offeredTools(r).includes('read_file')),
        "Longrun's tools reach the model through VS Code",
      );
      assert.equal((turn[2]!.body?.messages ?? []).filter((m) => m.role === 'tool').length, 2, 'both results went back to the model');
      const conversation = longrun.registry.currentIfLoaded()!;
      assert.equal(conversation.view().filter((m) => m.role === 'tool').length, 2);

      // The window is the model's maxInputTokens, and the count is the model's own.
      assert.deepEqual(longrun.session.modelContext().whole, {
        limit: 7_000,
        origin: "declared by longrun-test's model in VS Code (maxInputTokens)",
        assumed: false,
      });
      await waitFor("the gauge on the model's 7,000 tokens", async () => ((await gaugeInDom()).text.includes('/7k') ? true : undefined));
      const usage = [...conversation.log()].reverse().find((r) => r.type === 'usage');
      assert.ok(usage && usage.type === 'usage', 'the turn reported its usage');
      const last = models.requests().at(-1)!;
      assert.equal(usage.usage.inputTokens, last.messagesTokens + last.toolsTokens, "the usage is the model's own count of what was sent");
      const count = conversation.count();
      assert.equal(count.source, 'provider+local');
      assert.ok(
        Math.abs(count.tokens - count.localTokens) / count.localTokens > 0.05,
        `the gauge (${count.tokens}) is not Longrun's own count (${count.localTokens})`,
      );
      assert.ok(models.counts() > 0, 'VS Code asked the model to count');
    });

    it('compacts at the threshold in the middle of a tool loop, and the summary is written by that model', async () => {
      const before = (await model.requests()).length;
      const entriesBefore = (await entries()).length;
      await model.script([
        ...[3, 4, 5, 6, 7, 8, 9].map((i) => ({ toolCalls: [{ name: 'read_file', arguments: { path: `src/big-${i}.ts` } }] })),
        { text: 'Seven more files are read.' },
      ]);
      await chat('read seven more files, one after the other', EDITOR_MODEL);
      const after = await entries();
      assert.ok(after.length > entriesBefore, 'a compaction happened');
      const entry = after.at(-1)!;
      assert.equal(entry.reason, 'threshold');
      assert.equal(entry.fallback, false, 'the summary came from the model, not the fallback');
      const requests = await editorRequests(before);
      const summaryAt = requests.findIndex((r) => r.summary);
      assert.ok(summaryAt >= 0, "the summary request went to the test extension's model");
      const next = requests.slice(summaryAt + 1).find((r) => !r.summary && /Session Summary \(Compaction Round \d+\)/.test(requestText(r)));
      assert.ok(next, 'the loop went on from the summary');
      assert.match(requestText(requests.filter((r) => !r.summary).at(-1)!), /Seven more files|read seven more files/);
    });

    it('stops a turn when the user presses Stop, while the model is still thinking', async () => {
      const longrun = await api();
      const models = await testModels();
      const before = (await model.requests()).length;
      const served = models.requests().length;
      await model.script([{ delayMs: 60_000, text: 'This answer comes too late.' }]);
      const { finished } = await startChat('take your time with this one', EDITOR_MODEL);
      await waitFor('the model to be asked', async () =>
        (await editorRequests(before)).some((r) => !r.summary && r.outcome === 'pending') ? true : undefined,
      );
      const stopped = Date.now();
      await vscode.commands.executeCommand('workbench.action.chat.cancel');
      await finished;
      assert.ok(Date.now() - stopped < 15_000, `the request ended ${Date.now() - stopped} ms after Stop`);
      await waitFor('the test extension to give up its HTTP request', async () =>
        (await editorRequests(before)).some((r) => !r.summary && r.outcome === 'client-closed') ? true : undefined,
      );
      assert.equal(
        models
          .requests()
          .slice(served)
          .find((r) => r.outcome !== 'answered')?.outcome,
        'cancelled',
      );
      const answered = (await log()).some((r) => r.type === 'message' && JSON.stringify(r.message.content).includes('too late'));
      assert.equal(answered, false, 'nothing of the late answer is kept');
      await chat('are you still there?', EDITOR_MODEL);
      assert.equal(longrun.participant.turns().active, 0);
    });
  });

  describe("another extension's tool", () => {
    afterEach(async () => {
      await config().update('agent.editorTools', undefined, vscode.ConfigurationTarget.Global);
      // A test that failed while a confirmation waited must not leave its request to the next one.
      const longrun = await api();
      if (longrun.participant.turns().active > 0) {
        await vscode.commands.executeCommand('workbench.action.chat.cancel');
        await longrun.participant.idle();
      }
    });

    it('is picked with "Longrun: Choose Agent Tools…" and runs through VS Code\'s confirmation, its result capped', async () => {
      const longrun = await api();
      const models = await testModels();
      await ui('command-palette', { text: 'Longrun: Choose Agent Tools' });
      await ui('quick-pick-check', { labels: [TOOL] });
      await waitFor('the setting', () => (longrun.settings().agent.editorTools.join() === TOOL ? true : undefined));

      const before = (await model.requests()).length;
      await model.script([
        { toolCalls: [{ name: TOOL, arguments: { query: 'needle' } }] },
        { toolCalls: [{ name: TOOL, arguments: { query: 'haystack', size: 30_000 } }] },
        { text: 'The lookups are done.' },
      ]);
      const { finished } = await startChat('look the needle up, then the haystack', EDITOR_MODEL);
      const asked = await ui<{ said: string; buttons: string[] }>('chat-confirm', { ...ALLOW_ONCE, containing: 'Look up "needle"' });
      assert.match(asked.said, /Look it up in the test index\?/, `VS Code showed the tool's own confirmation: ${JSON.stringify(asked)}`);
      await waitFor('the first lookup', () => (models.invocations().at(-1)?.query === 'needle' ? true : undefined)).catch(async (error: unknown) => {
        // What the model was told instead, and what the confirmation offered, for whoever reads the failure.
        await ui('screenshot', { name: 'editor-tool-confirmation' }).catch(() => undefined);
        const sent = (await model.requests()).slice(before).map((r) => ({
          model: r.model,
          summary: r.summary,
          outcome: r.outcome,
          last: JSON.stringify(r.body?.messages?.at(-1) ?? null).slice(0, 200),
        }));
        throw new Error(
          `${String(error)}; buttons ${JSON.stringify(asked.buttons)}; invocations ${JSON.stringify(models.invocations())}; turns ${JSON.stringify(longrun.participant.turns())}; requests since: ${JSON.stringify(sent)}`,
        );
      });
      await ui('chat-confirm', { ...ALLOW_ONCE, containing: 'Look up "haystack"' });
      await finished;
      assert.deepEqual(models.invocations().slice(-2), [{ query: 'needle' }, { query: 'haystack', size: 30_000 }]);
      const requests = await editorRequests(before);
      assert.ok(offeredTools(requests[0]!).includes(TOOL), 'the tool was offered to the model');
      const toolMessages = (r: RecordedRequest) => (r.body?.messages ?? []).filter((m) => m.role === 'tool').map((m) => JSON.stringify(m.content));
      assert.ok(
        requests[1] && toolMessages(requests[1]).some((m) => m.includes('Lookup result for \\"needle\\": LOOKUP-MARKER-42')),
        'its result went back to the model',
      );
      // A 30,000-character result is cut to the cap of Longrun's own tool results.
      const output = await lastToolOutput(TOOL);
      assert.match(output, /^Lookup result for "haystack": LOOKUP-MARKER-42\./);
      assert.ok(output.length <= 20_000, `the result is capped (${output.length} characters)`);
      assert.match(output, /\[Truncated at 20,000 characters: [\d,]+ more characters \(\d+ lines\) not shown\./);
    });

    it('is offered for one request when the user names it with #, although the setting does not list it', async () => {
      const models = await testModels();
      const before = (await model.requests()).length;
      await model.script([
        { toolCalls: [{ name: TOOL, arguments: { query: 'hash' } }] },
        { toolCalls: [{ name: TOOL, arguments: { query: 'skipped' } }] },
        { text: 'Looked it up.' },
      ]);
      const { finished } = await startChat('use #lookup for the word hash', EDITOR_MODEL);
      const [first] = await waitFor('the first model call', async () =>
        (await editorRequests(before)).length > 0 ? editorRequests(before) : undefined,
      );
      assert.ok(offeredTools(first!).includes(TOOL), `the tool named with # is offered: ${JSON.stringify(offeredTools(first!))}`);
      assert.doesNotMatch(requestText(first!), /<attachment/, 'a tool named with # is no attachment');
      await ui('chat-confirm', { ...ALLOW_ONCE, containing: 'Look up "hash"' });
      await waitFor('the lookup', () => (models.invocations().at(-1)?.query === 'hash' ? true : undefined));
      // The second call is skipped: the tool does not run, and the agent is told.
      await ui('chat-confirm', { button: 'Proceed without running this tool', containing: 'Look up "skipped"' });
      await finished;
      assert.deepEqual(models.invocations().at(-1), { query: 'hash' });
      assert.match(await lastToolOutput(TOOL), /skip/i);
      const next = (await model.requests()).length;
      await model.script([{ text: 'Nothing to look up.' }]);
      await chat('and now without naming it', EDITOR_MODEL);
      assert.ok(!offeredTools((await editorRequests(next))[0]!).includes(TOOL), 'the next request does not offer it');
    });
  });

  describe('what the user attaches', () => {
    it("reaches the model with paths and line numbers, counts in the gauge, and is listed in the next summary's <read-files>", async () => {
      const longrun = await api();
      await newConversation();
      const notes = vscode.Uri.joinPath(root(), 'notes');
      mkdirSync(notes.fsPath, { recursive: true });
      writeFileSync(join(notes.fsPath, 'attached.md'), '# Attached notes\nThe magic word is ATTACHED-MARKER-7.\n');
      writeFileSync(join(notes.fsPath, 'range.ts'), `${Array.from({ length: 20 }, (_, i) => `export const r${i + 1} = ${i + 1};`).join('\n')}\n`);
      // Not an image: VS Code does not attach images for a model without image input.
      writeFileSync(join(notes.fsPath, 'data.bin'), Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0, 0, 0, 0, 0]));
      const outside = join(mkdtempSync(join(tmpdir(), 'longrun-outside-')), 'secret.txt');
      writeFileSync(outside, 'OUTSIDE-SECRET\n');

      const before = (await model.requests()).length;
      await model.script([{ text: 'I have read what you attached.' }]);
      const { finished } = await startChat('what do these say?', EDITOR_MODEL, {
        attachFiles: [
          vscode.Uri.joinPath(notes, 'attached.md'),
          { uri: vscode.Uri.joinPath(notes, 'range.ts'), range: { startLineNumber: 3, startColumn: 1, endLineNumber: 9, endColumn: 30 } },
          vscode.Uri.joinPath(notes, 'data.bin'),
          vscode.Uri.file(outside),
        ],
      });
      await finished;
      const [sent] = (await editorRequests(before)).filter((r) => !r.summary);
      assert.ok(sent, 'the request reached the model');
      const user = [...(sent.body?.messages ?? [])].reverse().find((m) => m.role === 'user');
      const text = typeof user?.content === 'string' ? user.content : JSON.stringify(user?.content);
      assert.match(text, /^what do these say\?\n\n<attachment /);
      assert.match(
        text,
        /<attachment path="notes\/attached\.md" lines="1-2">\n1\| # Attached notes\n2\| The magic word is ATTACHED-MARKER-7\.\n<\/attachment>/,
      );
      assert.match(text, /<attachment path="notes\/range\.ts" lines="3-9">\n3\| export const r3 = 3;[\s\S]*9\| export const r9 = 9;\n<\/attachment>/);
      assert.match(text, /<attachment path="notes\/data\.bin">\n\[Not included: notes\/data\.bin is a binary file/);
      assert.match(text, /\[Not included: the file is outside the workspace folders/);
      assert.doesNotMatch(text, /OUTSIDE-SECRET/);

      // The gauge counts what the model was sent: the attachments are in the conversation's view.
      const conversation = longrun.registry.currentIfLoaded()!;
      assert.ok(conversation.view().some((m) => m.role === 'user' && JSON.stringify(m.content).includes('ATTACHED-MARKER-7')));
      const reads = (await log()).flatMap((r) => (r.type === 'file' ? [r.event] : []));
      assert.deepEqual(
        reads
          .filter((e) => e.actor === 'user' && e.kind === 'read')
          .map((e) => e.path)
          .sort(),
        ['notes/attached.md', 'notes/range.ts'],
        'the attached files are recorded as read by the user',
      );

      // Enough after it that the attachments' turn is summarized rather than kept.
      // (This model's summaries are not cut at a maximum output, so the conversation must be larger than one.)
      for (const i of [3, 4, 5, 6, 7, 8]) await chat(`please read src/big-${i}.ts`, EDITOR_MODEL);
      assert.equal(await vscode.commands.executeCommand('longrun.compact'), 'compacted');
      const summary = (await entries()).at(-1)!.summary;
      const readFiles = /<read-files>([\s\S]*)<\/read-files>/.exec(summary)?.[1] ?? '';
      assert.match(readFiles, /notes\/attached\.md/);
      assert.match(readFiles, /notes\/range\.ts/);
      assert.doesNotMatch(readFiles, /data\.bin|secret\.txt/);
    });
  });
});
