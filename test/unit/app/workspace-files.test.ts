import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs/promises';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import type { ToolSet } from 'ai';
import { createAgentTools } from '../../../src/llm/agent-tools';
import { ToolFailure } from '../../../src/llm/workspace-port';
import type { WorkspaceRoot } from '../../../src/app/workspace/path-guard';
import { WorkspaceFiles, type ApprovalRequest, type WorkspaceChange, type WorkspaceFilesDeps } from '../../../src/app/workspace/workspace-files';
import { FakeEditor } from './fake-editor';

/** The pattern that blocked the extension host for 8.4 s, and a line it backtracks on. */
const CATASTROPHIC = '^(a+)+$';
const BACKTRACKING_LINE = `${'a'.repeat(32)}!`;

describe('WorkspaceFiles: the agent tools on real folders', () => {
  let base: string;
  let project: string;
  let outside: string;
  let roots: WorkspaceRoot[];
  let editor: FakeEditor;
  let asked: ApprovalRequest[];
  let answer: boolean;
  let autoApprove: boolean;
  let userGlobs: string[];
  let changes: WorkspaceChange[];
  let port: WorkspaceFiles;
  let tools: ToolSet;
  const never = new AbortController().signal;

  const file = (...parts: string[]) => path.join(project, ...parts);
  const read = (p: string) => fs.readFile(p, 'utf8');

  function build(overrides: Partial<WorkspaceFilesDeps> = {}): void {
    port = new WorkspaceFiles({
      roots: () => roots,
      autoApprove: () => autoApprove,
      protectedPaths: () => userGlobs,
      confirm: async (request) => {
        asked.push(request);
        return answer;
      },
      editor,
      ...overrides,
    });
    port.onDidWrite((c) => changes.push(c));
    tools = createAgentTools(port, { readOnly: false });
  }

  async function call(name: string, input: unknown, abortSignal?: AbortSignal): Promise<string> {
    const t = tools[name];
    assert.ok(t?.execute);
    return (await t.execute(input, { toolCallId: 'c1', messages: [], abortSignal, context: {} })) as string;
  }

  beforeEach(async () => {
    base = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'longrun-files-')));
    project = path.join(base, 'project');
    outside = path.join(base, 'outside');
    await fs.mkdir(path.join(project, 'src'), { recursive: true });
    await fs.mkdir(outside);
    await fs.writeFile(file('src', 'a.ts'), 'export const a = 1;\nexport const b = 2;\n');
    await fs.writeFile(path.join(outside, 'secret.txt'), 'OUTSIDE SECRET\n');
    roots = [{ name: 'project', fsPath: project }];
    editor = new FakeEditor(() => roots);
    asked = [];
    answer = true;
    autoApprove = false;
    userGlobs = [];
    changes = [];
    build();
  });

  afterEach(async () => {
    await fs.rm(base, { recursive: true, force: true });
  });

  describe('reads of regular files only', () => {
    it('refuses a FIFO at once instead of waiting for a writer', async () => {
      execFileSync('mkfifo', [file('src', 'pipe')]);
      const started = Date.now();
      const output = await call('read_file', { path: 'src/pipe' });
      assert.equal(output, 'Error: src/pipe is a FIFO (named pipe), not a regular file; only regular files can be read or edited.');
      assert.ok(Date.now() - started < 1_000, `took ${Date.now() - started} ms`);
    });

    it('refuses a socket, and a FIFO reached through a symlink inside the workspace', async () => {
      execFileSync('mkfifo', [file('src', 'pipe')]);
      await fs.symlink(file('src', 'pipe'), file('pipe-link'));
      assert.match(await call('read_file', { path: 'pipe-link' }), /^Error: pipe-link is a FIFO/);
      const server = net.createServer();
      await new Promise<void>((resolve) => server.listen(file('src', 'sock'), resolve));
      try {
        assert.match(await call('read_file', { path: 'src/sock' }), /^Error: src\/sock is a socket, not a regular file/);
      } finally {
        server.close();
      }
    });

    it('refuses to edit a FIFO without blocking', async () => {
      execFileSync('mkfifo', [file('src', 'pipe')]);
      autoApprove = true;
      assert.match(await call('edit_file', { path: 'src/pipe', edits: [{ oldText: 'a', newText: 'b' }] }), /^Error: src\/pipe is a FIFO/);
    });

    it('lists and searches around a FIFO without hanging on it', async () => {
      execFileSync('mkfifo', [file('src', 'pipe')]);
      assert.equal(await call('list_files', { glob: '**' }), 'src/a.ts');
      assert.equal(await call('search_text', { query: 'const b' }), 'src/a.ts:2: export const b = 2;');
    });

    it('reads the unsaved text of a file open in the editor', async () => {
      editor.unsaved.set(file('src', 'a.ts'), 'unsaved text\n');
      assert.equal(await call('read_file', { path: 'src/a.ts' }), 'src/a.ts (lines 1-1 of 1)\n1| unsaved text');
    });
  });

  describe('Stop', () => {
    it('stops a read when the signal fires', async () => {
      const controller = new AbortController();
      controller.abort();
      await assert.rejects(port.readFile('src/a.ts', {}, controller.signal), { name: 'AbortError' });
    });

    it('stops a search that is busy on a costly pattern, long before its deadline', async () => {
      build({ searchDeadlineMs: 30_000 });
      await fs.writeFile(file('src', 'slow.txt'), `${BACKTRACKING_LINE}\n`);
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 200);
      const started = Date.now();
      await assert.rejects(port.searchText(CATASTROPHIC, { isRegex: true, caseSensitive: true, limit: 10 }, controller.signal), {
        name: 'AbortError',
      });
      assert.ok(Date.now() - started < 2_000, `took ${Date.now() - started} ms`);
    });

    it('stops waiting for an approval the user has not given yet', async () => {
      build({ confirm: () => new Promise<boolean>(() => undefined) });
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 50);
      await assert.rejects(port.editFile('src/a.ts', [{ oldText: 'a = 1', newText: 'a = 9' }], controller.signal), { name: 'AbortError' });
      assert.equal(await read(file('src', 'a.ts')), 'export const a = 1;\nexport const b = 2;\n');
    });

    it('stops listing when the signal fires', async () => {
      const controller = new AbortController();
      controller.abort();
      await assert.rejects(port.listFiles('**', 10, controller.signal), { name: 'AbortError' });
    });
  });

  describe('search that cannot hang', () => {
    it('reports a catastrophic pattern as an error within its deadline while the extension host keeps running', async () => {
      build({ searchDeadlineMs: 500 });
      await fs.writeFile(file('src', 'slow.txt'), `${BACKTRACKING_LINE}\n`);
      let ticks = 0;
      const timer = setInterval(() => ticks++, 10);
      const started = Date.now();
      let output: string;
      try {
        output = await call('search_text', { query: CATASTROPHIC, isRegex: true, caseSensitive: true });
      } finally {
        clearInterval(timer);
      }
      const elapsed = Date.now() - started;
      assert.equal(
        output,
        'Error: The pattern took longer than 0.5 s and the search was stopped; simplify it (nested quantifiers such as (a+)+ can take exponential time) or narrow the glob.',
      );
      assert.ok(elapsed < 1_500, `took ${elapsed} ms`);
      // A 10 ms timer over half a second: a blocked thread would have ticked at most once.
      assert.ok(ticks >= 20, `the main thread ticked ${ticks} times`);
    });

    it('asks for a narrower glob, not a simpler pattern, when finding the files took the time', async () => {
      build({
        searchDeadlineMs: 200,
        editor: Object.assign(Object.create(editor) as FakeEditor, {
          findFiles: () => new Promise<string[]>((resolve) => setTimeout(() => resolve([]), 1_000)),
        }),
      });
      assert.equal(
        await call('search_text', { query: 'a+', isRegex: true }),
        'Error: The search took longer than 0.2 s and was stopped; narrow it with a glob.',
      );
    });

    it('searches a folder reached through a link that stays inside the workspace', async () => {
      await fs.symlink(file('src'), file('alias'), 'dir');
      const { matches } = await port.searchText('const b', { isRegex: false, caseSensitive: true, limit: 10 }, never);
      assert.deepEqual(
        matches.map((m) => m.path),
        ['alias/a.ts', 'src/a.ts'],
      );
    });

    it('still finds matches of a simple pattern, stopping at the limit', async () => {
      await fs.writeFile(file('src', 'many.txt'), Array.from({ length: 50 }, (_, i) => `item ${i}`).join('\n'));
      const { matches, truncated } = await port.searchText('item \\d+', { isRegex: true, caseSensitive: true, limit: 5 }, never);
      assert.deepEqual(
        matches.map((m) => m.line),
        [1, 2, 3, 4, 5],
      );
      assert.equal(truncated, true);
    });

    it('searches unsaved editor text, and skips binary files and files behind a link leading out', async () => {
      editor.unsaved.set(file('src', 'a.ts'), 'needle in the editor\n');
      await fs.writeFile(file('src', 'bin.dat'), Buffer.from([110, 101, 101, 100, 108, 101, 0, 1]));
      await fs.writeFile(path.join(outside, 'n.txt'), 'needle outside\n');
      await fs.symlink(outside, file('out'), 'dir');
      const { matches } = await port.searchText('needle', { isRegex: false, caseSensitive: false, limit: 10 }, never);
      assert.deepEqual(matches, [{ path: 'src/a.ts', line: 1, text: 'needle in the editor' }]);
    });
  });

  describe('protected paths', () => {
    beforeEach(async () => {
      autoApprove = true;
      await fs.mkdir(file('.git', 'hooks'), { recursive: true });
      await fs.mkdir(file('.vscode'));
      await fs.writeFile(file('.git', 'config'), '[core]\n\tbare = false\n');
      await fs.writeFile(file('.vscode', 'tasks.json'), '{}\n');
    });

    it('asks before editing .git/config even with auto-approve on, and says why', async () => {
      const output = await call('edit_file', { path: '.git/config', edits: [{ oldText: 'bare = false', newText: 'fsmonitor = evil' }] });
      assert.equal(output, 'Edited .git/config: 1 replacement applied.');
      assert.equal(asked.length, 1);
      assert.equal(
        asked[0]!.question,
        'Allow Longrun to edit .git/config? This file is protected: .git/config can make git run commands (core.fsmonitor, core.hooksPath, aliases, filters).',
      );
      assert.equal(asked[0]!.before, '[core]\n\tbare = false\n', 'the whole file as it is');
      assert.equal(asked[0]!.after, '[core]\n\tfsmonitor = evil\n', 'the whole file as it will be written');
      assert.equal(await read(file('.git', 'config')), asked[0]!.after, 'what was written is what was shown');
    });

    it('leaves a protected file untouched when the user declines', async () => {
      answer = false;
      const output = await call('edit_file', { path: '.vscode/tasks.json', edits: [{ oldText: '{}', newText: '{"runOn":"folderOpen"}' }] });
      assert.match(output, /^Error: The user declined to edit \.vscode\/tasks\.json\./);
      assert.match(asked[0]!.question, /This file is protected: \.vscode\/tasks\.json can run tasks when the folder opens\.$/);
      assert.equal(await read(file('.vscode', 'tasks.json')), '{}\n');
    });

    it('asks before creating a git hook, a workflow or a dev container file', async () => {
      answer = false;
      for (const p of [
        '.git/hooks/pre-commit',
        '.husky/pre-commit',
        '.github/workflows/ci.yml',
        '.devcontainer/devcontainer.json',
        '.vscode/settings.json',
      ]) {
        asked = [];
        assert.match(await call('create_file', { path: p, content: 'x' }), /^Error: The user declined/, p);
        assert.equal(asked.length, 1, p);
        assert.match(asked[0]!.question, /This file is protected: /, p);
        await assert.rejects(fs.stat(file(...p.split('/'))), { code: 'ENOENT' }, `${p} was not created`);
      }
    });

    it('recognises a protected file however its path is written', async () => {
      answer = false;
      for (const p of ['./.git/config', 'src/../.git/config', '.git//config', '.git\\config', path.join(project, '.git', 'config')]) {
        asked = [];
        assert.match(await call('edit_file', { path: p, edits: [{ oldText: '[core]', newText: '[x]' }] }), /declined/, p);
        assert.equal(asked.length, 1, p);
        assert.match(asked[0]!.question, /This file is protected: \.git\/config can make git run commands/, p);
      }
      assert.equal(await read(file('.git', 'config')), '[core]\n\tbare = false\n');
    });

    it('recognises the names Windows and macOS treat as .git or .vscode', async () => {
      answer = false;
      // Case-insensitive file systems, Win32 dropping trailing dots and spaces, NTFS streams, HFS+ ignorable code points.
      for (const p of ['.GIT/CONFIG', '.Vscode/Tasks.json', '.git./config', '.git /config', '.git::$INDEX_ALLOCATION/config', '.g\u200cit/config']) {
        asked = [];
        assert.match(await call('create_file', { path: p, content: 'x' }), /declined/, p);
        assert.equal(asked.length, 1, p);
        assert.match(asked[0]!.question, /This file is protected: /, p);
      }
    });

    it('recognises .git reached through a symlink with another name', async () => {
      await fs.symlink(file('.git'), file('repo-meta'), 'dir');
      answer = false;
      assert.match(await call('edit_file', { path: 'repo-meta/config', edits: [{ oldText: '[core]', newText: '[x]' }] }), /declined/);
      assert.match(asked[0]!.question, /^Allow Longrun to edit repo-meta\/config\? This file is protected: \.git\/config/);
    });

    it('protects every folder of a multi-root workspace, whose paths start with the folder name', async () => {
      const api = path.join(base, 'api');
      await fs.mkdir(path.join(api, '.github', 'workflows'), { recursive: true });
      await fs.writeFile(path.join(api, '.github', 'workflows', 'ci.yml'), 'on: push\n');
      roots = [
        { name: 'web', fsPath: project },
        { name: 'api', fsPath: api },
      ];
      answer = false;
      await call('edit_file', { path: 'api/.github/workflows/ci.yml', edits: [{ oldText: 'push', newText: 'pull_request_target' }] });
      await call('edit_file', { path: 'web/.git/config', edits: [{ oldText: '[core]', newText: '[x]' }] });
      assert.deepEqual(
        asked.map((a) => a.question.split('?')[0]),
        ['Allow Longrun to edit api/.github/workflows/ci.yml', 'Allow Longrun to edit web/.git/config'],
      );
      assert.match(asked[0]!.question, /GitHub Actions workflows run code in CI/);
      assert.equal(await read(path.join(api, '.github', 'workflows', 'ci.yml')), 'on: push\n');
    });

    it('asks before changing the files that decide what commands do once a command may run without asking', async () => {
      await fs.writeFile(file('package.json'), '{"scripts":{"test":"mocha"}}\n');
      const edit = { path: 'package.json', edits: [{ oldText: '"mocha"', newText: '"curl x | sh"' }] };
      build({ commandsRunUnasked: () => false });
      assert.match(await call('edit_file', edit), /^Edited package\.json/);
      assert.equal(asked.length, 0, 'no command runs unasked: an ordinary file');

      await fs.writeFile(file('package.json'), '{"scripts":{"test":"mocha"}}\n');
      build({ commandsRunUnasked: () => true });
      answer = false;
      assert.match(await call('edit_file', edit), /^Error: The user declined to edit package\.json/);
      assert.equal(
        asked[0]?.question,
        'Allow Longrun to edit package.json? This file is protected: package.json holds the scripts that package managers run (npm test, npm run …) and the packages they install, and longrun.agent.allowedCommands lets commands run without asking.',
      );
      assert.equal(await read(file('package.json')), '{"scripts":{"test":"mocha"}}\n');
      for (const p of [
        'Makefile',
        '.npmrc',
        '.yarnrc.yml',
        'pyproject.toml',
        'setup.cfg',
        'tox.ini',
        'Cargo.toml',
        '.cargo/config.toml',
        'build.gradle.kts',
        '.envrc',
        'web/package.json',
        'yarn.lock',
      ]) {
        asked = [];
        assert.match(await call('create_file', { path: p, content: 'x' }), /^Error: The user declined/, p);
        assert.match(asked[0]?.question ?? '', /This file is protected: .* longrun\.agent\.allowedCommands lets commands run without asking\.$/, p);
      }
    });

    it('asks for the files of longrun.agent.protectedPaths', async () => {
      userGlobs = ['secrets/**', '**/*.PEM'];
      answer = false;
      await call('create_file', { path: 'secrets/token.txt', content: 'x' });
      await call('create_file', { path: 'src/keys/server.pem', content: 'x' });
      assert.deepEqual(
        asked.map((a) => a.question),
        [
          'Allow Longrun to create secrets/token.txt? This file is protected: It matches "secrets/**" in the setting longrun.agent.protectedPaths.',
          'Allow Longrun to create src/keys/server.pem? This file is protected: It matches "**/*.PEM" in the setting longrun.agent.protectedPaths.',
        ],
      );
    });

    it('does not ask for an ordinary file when edits are auto-approved', async () => {
      assert.equal(
        await call('edit_file', { path: 'src/a.ts', edits: [{ oldText: 'a = 1', newText: 'a = 10' }] }),
        'Edited src/a.ts: 1 replacement applied.',
      );
      assert.equal(await call('create_file', { path: 'src/.gitignore', content: 'dist\n' }), 'Created src/.gitignore (1 line).');
      assert.deepEqual(asked, []);
    });
  });

  describe('an approved edit changes exactly the replaced text', () => {
    beforeEach(() => {
      autoApprove = true;
    });

    it('keeps every other byte: mixed line endings, a BOM, trailing spaces, no final newline', async () => {
      const original = '\ufeffline one  \r\nline two\nline three\t\r\nlast line';
      await fs.writeFile(file('src', 'mixed.txt'), original);
      const output = await call('edit_file', { path: 'src/mixed.txt', edits: [{ oldText: 'line two\nline three', newText: 'line 2\nline 3' }] });
      assert.equal(output, 'Edited src/mixed.txt: 1 replacement applied.');
      assert.equal(await read(file('src', 'mixed.txt')), '\ufeffline one  \r\nline 2\nline 3\t\r\nlast line');
    });

    it('writes new lines with the line ending of the text they replace', async () => {
      await fs.writeFile(file('src', 'crlf.txt'), 'a\r\nb\r\nc\r\n');
      await call('edit_file', { path: 'src/crlf.txt', edits: [{ oldText: 'b\nc', newText: 'b\nx\ny' }] });
      assert.equal(await read(file('src', 'crlf.txt')), 'a\r\nb\r\nx\r\ny\r\n');
    });

    it('edits a file with unsaved changes in the editor only, never writing the unsaved text to disk', async () => {
      editor.unsaved.set(file('src', 'a.ts'), 'export const a = 1;\n// the user is typing here\n');
      const output = await call('edit_file', { path: 'src/a.ts', edits: [{ oldText: 'a = 1', newText: 'a = 5' }] });
      assert.match(output, /^Edited src\/a\.ts in the editor: 1 replacement applied\. The file has unsaved changes/);
      assert.equal(editor.unsaved.get(file('src', 'a.ts')), 'export const a = 5;\n// the user is typing here\n');
      assert.equal(await read(file('src', 'a.ts')), 'export const a = 1;\nexport const b = 2;\n');
    });

    it('refuses to edit a file that is not UTF-8 rather than damage the rest of it', async () => {
      const latin1 = Buffer.from('caf\xe9 = 1\nx = 2\n', 'latin1');
      await fs.writeFile(file('src', 'old.txt'), latin1);
      assert.match(await call('edit_file', { path: 'src/old.txt', edits: [{ oldText: 'x = 2', newText: 'x = 3' }] }), /not valid UTF-8/);
      assert.deepEqual(await fs.readFile(file('src', 'old.txt')), latin1);
    });

    it('refuses an edit when the file changed during the approval', async () => {
      autoApprove = false;
      build({
        confirm: async () => {
          await fs.writeFile(file('src', 'a.ts'), 'export const a = 1;\nexport const b = 3;\n');
          return true;
        },
      });
      assert.match(
        await call('edit_file', { path: 'src/a.ts', edits: [{ oldText: 'a = 1', newText: 'a = 9' }] }),
        /changed while waiting for approval/,
      );
      assert.equal(await read(file('src', 'a.ts')), 'export const a = 1;\nexport const b = 3;\n');
    });

    it('shows the whole file of a 120-line edit for approval and writes exactly what was shown', async () => {
      autoApprove = false;
      const original = Array.from({ length: 150 }, (_, i) => `const v${i + 1} = ${i + 1};`).join('\n') + '\n';
      await fs.writeFile(file('src', 'long.ts'), original);
      const oldText = original.split('\n').slice(10, 130).join('\n');
      const newText = oldText.replace(/= (\d+);/g, '= $1 * 2;');
      await call('edit_file', { path: 'src/long.ts', edits: [{ oldText, newText }] });
      assert.equal(asked.length, 1);
      assert.equal(asked[0]!.question, 'Allow Longrun to edit src/long.ts?');
      assert.equal(asked[0]!.before, original);
      assert.equal(asked[0]!.after, original.replace(oldText, newText));
      assert.equal(await read(file('src', 'long.ts')), asked[0]!.after);
      assert.ok(!changes[0]!.diff.includes('more lines'), 'the chat gets the whole diff');
      assert.equal(changes[0]!.diff.split('\n').filter((l) => l.startsWith('+const')).length, 120);
    });

    it('reports the change with its diff', async () => {
      await call('edit_file', { path: 'src/a.ts', edits: [{ oldText: 'b = 2', newText: 'b = 3' }] });
      assert.deepEqual(
        changes.map((c) => [c.kind, c.path]),
        [['modified', 'src/a.ts']],
      );
      assert.match(changes[0]!.diff, /-export const b = 2;\n\+export const b = 3;/);
    });
  });

  describe('no window for a folder swapped for a link', () => {
    const swapForLink = async (dir: string, target: string) => {
      await fs.rename(dir, `${dir}.real`);
      await fs.symlink(target, dir, 'dir');
    };

    it('does not write outside when a folder is swapped for a link while the approval is open', async () => {
      await fs.mkdir(file('dir'));
      await fs.writeFile(file('dir', 'secret.txt'), 'OUTSIDE SECRET\n');
      build({
        confirm: async () => {
          await swapForLink(file('dir'), outside);
          return true;
        },
      });
      const edit = await call('edit_file', { path: 'dir/secret.txt', edits: [{ oldText: 'SECRET', newText: 'OWNED' }] });
      assert.match(edit, /^Error: /);
      await fs.rm(file('dir'));
      await fs.rename(file('dir.real'), file('dir'));
      const create = await call('create_file', { path: 'dir/new.txt', content: 'x' });
      assert.match(create, /^Error: /);
      assert.deepEqual(await fs.readdir(outside), ['secret.txt']);
      assert.equal(await read(path.join(outside, 'secret.txt')), 'OUTSIDE SECRET\n');
    });

    it('never returns or modifies an outside file while another process swaps a folder for a link', async function () {
      this.timeout(60_000);
      autoApprove = true;
      const dir = file('dir');
      await fs.mkdir(dir);
      // The same content inside and out, so that a write gone astray would apply cleanly outside.
      await fs.writeFile(path.join(dir, 'f.txt'), 'value = 0\n');
      await fs.writeFile(path.join(outside, 'f.txt'), 'value = 0\n');
      const before = await fs.stat(path.join(outside, 'f.txt'));
      const swapper = startSwapper(dir, outside);
      let reads = 0;
      let writes = 0;
      let searches = 0;
      try {
        await new Promise((resolve) => setTimeout(resolve, 100));
        for (let i = 0; i < 1_500; i++) {
          const result = await port.readFile('dir/f.txt', {}, never).catch(expectToolFailure);
          if (result) {
            assert.doesNotMatch(result.text, /OUTSIDE/);
            reads++;
          }
          const current = result?.text.match(/value = (\d+)/)?.[1];
          if (current !== undefined) {
            const edited = await port
              .editFile('dir/f.txt', [{ oldText: `value = ${current}`, newText: `value = ${Number(current) + 1}` }], never)
              .catch(expectToolFailure);
            if (edited) writes++;
          }
          if (i % 5 === 0) await port.createFile(`dir/new-${i}.txt`, 'x\n', never).catch(expectToolFailure);
          if (i % 50 === 0) {
            // While the link is in place, findFiles lists dir/secret.txt: reading it must still fail.
            const found = await port.searchText('OUTSIDE', { isRegex: false, caseSensitive: true, limit: 10 }, never);
            assert.deepEqual(found.matches, []);
            searches++;
          }
        }
      } finally {
        swapper.kill();
      }
      assert.deepEqual((await fs.readdir(outside)).sort(), ['f.txt', 'secret.txt']);
      assert.equal(await read(path.join(outside, 'f.txt')), 'value = 0\n');
      const after = await fs.stat(path.join(outside, 'f.txt'));
      assert.equal(after.mtimeMs, before.mtimeMs, 'the outside file was never written');
      // The test only means something if the tools did work between the swaps.
      assert.ok(reads > 0 && writes > 0 && searches > 0, `${reads} reads, ${writes} writes and ${searches} searches succeeded`);
    });
  });
});

function expectToolFailure(error: unknown): undefined {
  if (error instanceof ToolFailure) return undefined;
  throw error;
}

/**
 * A process that keeps replacing `dir` by a symlink to `target` and back: the link for about a
 * millisecond, the folder for a few, so that whole tool calls fit between swaps now and then.
 */
function startSwapper(dir: string, target: string): ChildProcess {
  const script = `
    const fs = require('node:fs');
    const [dir, target] = process.argv.slice(1);
    const real = dir + '.real', link = dir + '.link';
    fs.symlinkSync(target, link, 'dir');
    const pause = new Int32Array(new SharedArrayBuffer(4));
    for (;;) {
      try {
        fs.renameSync(dir, real);
        fs.renameSync(link, dir);
        Atomics.wait(pause, 0, 0, 1);
        fs.renameSync(dir, link);
        fs.renameSync(real, dir);
        Atomics.wait(pause, 0, 0, 3);
      } catch {}
    }`;
  return spawn(process.execPath, ['-e', script, dir, target], { stdio: 'ignore' });
}
