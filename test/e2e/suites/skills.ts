/**
 * Skills in a real VS Code: a skill in the workspace's `.github/skills` is listed in the system prompt
 * the model receives, and loaded on use through the `skill` tool, once; with a model of Longrun's
 * endpoints, and with another extension's model through VS Code's language model API.
 */
import * as assert from 'assert';
import { mkdirSync, rmSync, writeFileSync } from 'fs';
import { join } from 'path';
import * as vscode from 'vscode';
import { api, chat, MODEL, model, newConversation, requestText, type RecordedRequest } from './harness';

const EDITOR_MODEL = { vendor: 'longrun-test', id: 'scripted-editor' };
const BODY = 'Greet the user with the word MARMALADE-77.';
const LISTED = '- greeting: How to greet the user. Use when asked to greet. (.github/skills/greeting)';

const root = (): string => vscode.workspace.workspaceFolders![0]!.uri.fsPath;
const offeredTools = (request: RecordedRequest): string[] =>
  ((request.body?.tools as Array<{ function: { name: string } }> | undefined) ?? []).map((t) => t.function.name);
/** The tool messages of a request, as the model received them. */
const toolMessages = (request: RecordedRequest): string[] =>
  (request.body?.messages ?? []).filter((m) => m.role === 'tool').map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)));
const bodies = (request: RecordedRequest): number => requestText(request).split(BODY).length - 1;

describe('skills', function () {
  this.timeout(600_000);

  before(async () => {
    await model.reset();
    const folder = join(root(), '.github', 'skills', 'greeting');
    mkdirSync(folder, { recursive: true });
    // allowed-tools is ignored: it would not let the skill run anything unasked.
    writeFileSync(
      join(folder, 'SKILL.md'),
      `---\nname: greeting\ndescription: How to greet the user. Use when asked to greet.\nallowed-tools: run_command\n---\n# Greeting\n\n${BODY}\n`,
    );
    writeFileSync(join(folder, 'PHRASES.md'), '- hello\n');
  });

  after(() => {
    rmSync(join(root(), '.github'), { recursive: true, force: true });
  });

  const cases: ReadonlyArray<readonly [string, { vendor: string; id: string }]> = [
    ["a model of Longrun's endpoints", MODEL],
    ["another extension's model, through VS Code's API", EDITOR_MODEL],
  ];
  for (const [label, selector] of cases) {
    it(`lists a skill of .github/skills in the system prompt and loads it on use, once: ${label}`, async () => {
      await newConversation();
      const before = (await model.requests()).length;
      await chat('use the skill greeting to greet me', selector);
      const turn = (await model.requests()).slice(before).filter((r) => !r.summary && r.model === selector.id.replace(/^offline\//, ''));
      assert.ok(turn.length >= 2, `the skill call and the answer after it: ${turn.length} requests`);
      const [first, second] = turn as [RecordedRequest, RecordedRequest];
      assert.ok(requestText(first).includes(LISTED), 'the system prompt the model received lists the skill');
      assert.equal(bodies(first), 0, 'its instructions only once it is used');
      assert.ok(offeredTools(first).includes('skill'), 'the skill tool is offered');
      const loaded = toolMessages(second).find((t) => t.includes('<skill-instructions name="greeting"'));
      assert.ok(loaded?.includes(BODY), `the skill's instructions came back as the tool's result: ${toolMessages(second).join('\n')}`);
      assert.ok(loaded?.includes('PHRASES.md'), "with the names of its folder's files");
      const conversation = (await api()).registry.currentIfLoaded()!;
      assert.deepEqual(
        conversation.loadedSkills().map((s) => s.name),
        ['greeting'],
      );

      const again = (await model.requests()).length;
      await chat('now use the skill greeting again', selector);
      const last = (await model.requests())
        .slice(again)
        .filter((r) => !r.summary)
        .at(-1)!;
      assert.equal(bodies(last), 1, 'the instructions are not sent a second time');
      assert.ok(
        toolMessages(last).some((t) => /already loaded in this conversation/.test(t)),
        'the second load says so',
      );
    });
  }
});
