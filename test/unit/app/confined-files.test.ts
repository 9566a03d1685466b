import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { ToolFailure } from '../../../src/llm/workspace-port';
import { abortable, createConfined, overwriteConfined, readConfined } from '../../../src/app/workspace/confined-files';
import { resolveInWorkspace, type WorkspaceRoot } from '../../../src/app/workspace/path-guard';

const never = new AbortController().signal;
const bytes = (text: string) => new TextEncoder().encode(text);

/** Runs the suite as on Linux (through `/proc/self/fd`) and as on a system without `/proc`. */
for (const platform of ['linux', 'darwin'] as const) {
  describe(`confined files (${platform === 'linux' ? 'through /proc/self/fd' : 'without /proc: device and inode checks'})`, () => {
    let base: string;
    let project: string;
    let outside: string;
    let roots: WorkspaceRoot[];
    const realPlatform = Object.getOwnPropertyDescriptor(process, 'platform');
    const target = (p: string, mustExist = true) => resolveInWorkspace(roots, p, { mustExist });

    before(() => {
      // The fallback is what macOS and Windows run; here it is run on this system's files.
      Object.defineProperty(process, 'platform', { value: platform });
    });

    after(() => {
      if (realPlatform) Object.defineProperty(process, 'platform', realPlatform);
    });

    beforeEach(async () => {
      base = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'longrun-confined-')));
      project = path.join(base, 'project');
      outside = path.join(base, 'outside');
      await fs.mkdir(path.join(project, 'src'), { recursive: true });
      await fs.mkdir(outside);
      await fs.writeFile(path.join(project, 'src', 'a.txt'), 'inside\n');
      await fs.writeFile(path.join(outside, 'a.txt'), 'inside\n');
      roots = [{ name: 'project', fsPath: project }];
    });

    afterEach(async () => {
      await fs.rm(base, { recursive: true, force: true });
    });

    it('reads a regular file, and says what anything else is', async () => {
      assert.deepEqual(await readConfined(await target('src/a.txt'), 100, never), { bytes: Buffer.from('inside\n') });
      execFileSync('mkfifo', [path.join(project, 'fifo')]);
      assert.deepEqual(await readConfined(await target('fifo'), 100, never), { skipped: 'not-a-file', kind: 'FIFO (named pipe)' });
      assert.deepEqual(await readConfined(await target('src'), 100, never), { skipped: 'not-a-file', kind: 'directory' });
      assert.deepEqual(await readConfined(await target('.'), 100, never), { skipped: 'not-a-file', kind: 'directory' });
    });

    it('reads up to the limit and no further', async () => {
      assert.ok('bytes' in (await readConfined(await target('src/a.txt'), 7, never)));
      assert.deepEqual(await readConfined(await target('src/a.txt'), 6, never), { skipped: 'large', size: 7 });
    });

    it('overwrites only the content it was computed from, and truncates what is left', async () => {
      const t = await target('src/a.txt');
      assert.equal(await overwriteConfined(t, bytes('something else\n'), bytes('x'), never), 'changed');
      assert.equal(await fs.readFile(path.join(project, 'src', 'a.txt'), 'utf8'), 'inside\n');
      assert.equal(await overwriteConfined(t, bytes('inside\n'), bytes('x'), never), 'written');
      assert.equal(await fs.readFile(path.join(project, 'src', 'a.txt'), 'utf8'), 'x');
    });

    it('creates a file and the folders leading to it, but never over something already there', async () => {
      assert.equal(await createConfined(await target('new/deep/b.txt', false), bytes('b'), never), 'created');
      assert.equal(await fs.readFile(path.join(project, 'new', 'deep', 'b.txt'), 'utf8'), 'b');
      assert.equal(await createConfined(await target('src/a.txt', false), bytes('b'), never), 'exists');
      await assert.rejects(createConfined(await target('src/a.txt/x/c.txt', false), bytes('c'), never), /a\.txt on its path is a file, not a folder/);
      assert.equal(await fs.readFile(path.join(project, 'src', 'a.txt'), 'utf8'), 'inside\n');
      const late = await target('src/late.txt', false);
      // A link put where the file is to be created, after the path was checked.
      await fs.symlink(path.join(outside, 'planted.txt'), path.join(project, 'src', 'late.txt'));
      await assert.rejects(createConfined(late, bytes('x'), never), ToolFailure);
      await assert.rejects(fs.stat(path.join(outside, 'planted.txt')), { code: 'ENOENT' });
    });

    it('refuses, and leaves the outside alone, when a folder became a link after the check', async () => {
      const read = await target('src/a.txt');
      const created = await target('src/new.txt', false);
      await fs.rename(path.join(project, 'src'), path.join(project, 'src.real'));
      await fs.symlink(outside, path.join(project, 'src'), 'dir');
      await assert.rejects(readConfined(read, 100, never), ToolFailure);
      await assert.rejects(overwriteConfined(read, bytes('inside\n'), bytes('OWNED'), never), ToolFailure);
      await assert.rejects(createConfined(created, bytes('OWNED'), never), ToolFailure);
      assert.deepEqual(await fs.readdir(outside), ['a.txt']);
      assert.equal(await fs.readFile(path.join(outside, 'a.txt'), 'utf8'), 'inside\n');
    });

    it('settles as soon as the signal aborts', async () => {
      const controller = new AbortController();
      const pending = abortable(controller.signal, () => new Promise<never>(() => undefined));
      controller.abort();
      await assert.rejects(pending, { name: 'AbortError' });
      await assert.rejects(readConfined(await target('src/a.txt'), 100, controller.signal), { name: 'AbortError' });
    });
  });
}
