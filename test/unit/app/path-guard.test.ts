import assert from 'node:assert/strict';
import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { ToolFailure } from '../../../src/llm/workspace-port';
import { lexicalTarget, locateReal, resolveInWorkspace, toWorkspaceRelative, type WorkspaceRoot } from '../../../src/app/workspace/path-guard';

async function rejectsWith(promise: Promise<unknown>, pattern: RegExp): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof ToolFailure, `expected a ToolFailure, got ${String(error)}`);
    assert.match(error.message, pattern);
    return true;
  });
}

describe('path-guard', () => {
  let base: string;
  let project: string;
  let outside: string;
  let single: WorkspaceRoot[];

  beforeEach(async () => {
    base = await fs.mkdtemp(path.join(os.tmpdir(), 'longrun-guard-'));
    project = path.join(base, 'project');
    outside = path.join(base, 'outside');
    await fs.mkdir(path.join(project, 'src', 'deep'), { recursive: true });
    await fs.mkdir(outside);
    await fs.writeFile(path.join(project, 'src', 'a.ts'), 'export const a = 1;\n');
    await fs.writeFile(path.join(outside, 'secret.txt'), 'secret');
    single = [{ name: 'project', fsPath: project }];
  });

  afterEach(async () => {
    await fs.rm(base, { recursive: true, force: true });
  });

  describe('resolveInWorkspace, single root', () => {
    it('resolves a workspace-relative path to the file under the root', async () => {
      const resolved = await resolveInWorkspace(single, 'src/a.ts');
      assert.equal(resolved.absolute, path.join(project, 'src', 'a.ts'));
      assert.equal(resolved.relative, 'src/a.ts');
      assert.equal(resolved.root, single[0]);
    });

    it('accepts ./ prefixes, backslashes and harmless .. segments', async () => {
      for (const requested of ['./src/a.ts', 'src\\a.ts', '.\\src\\a.ts', 'src/deep/../a.ts', 'src//a.ts']) {
        const resolved = await resolveInWorkspace(single, requested);
        assert.equal(resolved.relative, 'src/a.ts', requested);
        assert.equal(resolved.absolute, path.join(project, 'src', 'a.ts'), requested);
      }
    });

    it('accepts an absolute path inside the root and reports it relative', async () => {
      const resolved = await resolveInWorkspace(single, path.join(project, 'src', 'a.ts'));
      assert.equal(resolved.relative, 'src/a.ts');
    });

    it('treats a leading folder name as an ordinary directory in a single-root workspace', async () => {
      await rejectsWith(resolveInWorkspace(single, 'project/src/a.ts'), /not found: project\/src\/a\.ts/);
    });

    it('refuses an absolute path outside every root', async () => {
      await rejectsWith(resolveInWorkspace(single, path.join(outside, 'secret.txt')), /outside the workspace/);
    });

    it('refuses a path that escapes the root with ..', async () => {
      await rejectsWith(resolveInWorkspace(single, '../outside/secret.txt'), /escapes with "\.\."/);
      await rejectsWith(resolveInWorkspace(single, 'src/../../outside/secret.txt'), /escapes/);
      await rejectsWith(resolveInWorkspace(single, '..'), /escapes/);
    });

    it('refuses ".." escapes written with backslashes', async () => {
      await rejectsWith(resolveInWorkspace(single, '..\\outside\\secret.txt'), /escapes/);
    });

    it('allows a file whose name merely starts with two dots', async () => {
      await fs.writeFile(path.join(project, '..notes'), 'x');
      const resolved = await resolveInWorkspace(single, '..notes');
      assert.equal(resolved.relative, '..notes');
    });

    it('refuses an empty path and a path with a NUL byte', async () => {
      await rejectsWith(resolveInWorkspace(single, ''), /empty/);
      await rejectsWith(resolveInWorkspace(single, '   '), /empty/);
      await rejectsWith(resolveInWorkspace(single, 'src/a.ts\0.png'), /NUL/);
    });

    it('refuses everything when no workspace folder is open', async () => {
      await rejectsWith(resolveInWorkspace([], 'src/a.ts'), /No workspace folder is open/);
    });

    it('reports a missing file unless mustExist is false', async () => {
      await rejectsWith(resolveInWorkspace(single, 'src/missing.ts'), /File not found: src\/missing\.ts/);
      const resolved = await resolveInWorkspace(single, 'src/new/dir/b.ts', { mustExist: false });
      assert.equal(resolved.absolute, path.join(project, 'src', 'new', 'dir', 'b.ts'));
      assert.equal(resolved.relative, 'src/new/dir/b.ts');
    });

    it('shows the root itself as "."', async () => {
      const resolved = await resolveInWorkspace(single, '.');
      assert.equal(resolved.relative, '.');
      assert.equal(resolved.absolute, project);
    });
  });

  describe('resolveInWorkspace, symlinks', () => {
    it('allows a symlink whose target stays inside the root', async () => {
      await fs.symlink(path.join(project, 'src', 'a.ts'), path.join(project, 'link.ts'));
      await fs.symlink(path.join(project, 'src'), path.join(project, 'srclink'), 'dir');
      assert.equal((await resolveInWorkspace(single, 'link.ts')).relative, 'link.ts');
      const viaDir = await resolveInWorkspace(single, 'srclink/a.ts');
      assert.equal(viaDir.relative, 'srclink/a.ts');
      assert.equal(viaDir.absolute, path.join(project, 'srclink', 'a.ts'));
    });

    it('refuses a final symlink pointing outside the root', async () => {
      await fs.symlink(path.join(outside, 'secret.txt'), path.join(project, 'src', 'leak.txt'));
      await rejectsWith(resolveInWorkspace(single, 'src/leak.txt'), /symbolic link/);
    });

    it('refuses a symlinked directory pointing outside, also for files that do not exist yet', async () => {
      await fs.symlink(outside, path.join(project, 'out'), 'dir');
      await rejectsWith(resolveInWorkspace(single, 'out/secret.txt'), /symbolic link/);
      await rejectsWith(resolveInWorkspace(single, 'out/new.txt', { mustExist: false }), /symbolic link/);
      await rejectsWith(resolveInWorkspace(single, 'out/a/b/new.txt', { mustExist: false }), /symbolic link/);
    });

    it('refuses a dangling symlink pointing outside the root', async () => {
      await fs.symlink(path.join(outside, 'not-yet.txt'), path.join(project, 'dangling.txt'));
      await rejectsWith(resolveInWorkspace(single, 'dangling.txt', { mustExist: false }), /symbolic link/);
      await fs.symlink(path.join(outside, 'no-dir'), path.join(project, 'dangling-dir'), 'dir');
      await rejectsWith(resolveInWorkspace(single, 'dangling-dir/x.txt', { mustExist: false }), /symbolic link/);
    });

    it('allows a dangling symlink pointing inside the root but reports the file as missing', async () => {
      await fs.symlink(path.join(project, 'src', 'later.ts'), path.join(project, 'later-link.ts'));
      const resolved = await resolveInWorkspace(single, 'later-link.ts', { mustExist: false });
      assert.equal(resolved.relative, 'later-link.ts');
      await rejectsWith(resolveInWorkspace(single, 'later-link.ts'), /not found/);
    });

    it('refuses a chain of relative links that ends outside', async () => {
      await fs.symlink('../outside', path.join(project, 'hop1'), 'dir');
      await fs.symlink('hop1/secret.txt', path.join(project, 'hop2'));
      await rejectsWith(resolveInWorkspace(single, 'hop2'), /symbolic link/);
    });

    it('reports a symlink loop instead of hanging', async () => {
      await fs.symlink(path.join(project, 'loop-b'), path.join(project, 'loop-a'));
      await fs.symlink(path.join(project, 'loop-a'), path.join(project, 'loop-b'));
      await rejectsWith(resolveInWorkspace(single, 'loop-a', { mustExist: false }), /loop/);
    });

    it('resolves the root through its own symlink', async () => {
      const linkedRoot = path.join(base, 'linked-project');
      await fs.symlink(project, linkedRoot, 'dir');
      const roots = [{ name: 'project', fsPath: linkedRoot }];
      const resolved = await resolveInWorkspace(roots, 'src/a.ts');
      assert.equal(resolved.absolute, path.join(linkedRoot, 'src', 'a.ts'));
      // An absolute path the model saw under the real location maps back onto the folder.
      const viaReal = await resolveInWorkspace(roots, path.join(project, 'src', 'a.ts'));
      assert.equal(viaReal.relative, 'src/a.ts');
      assert.equal(viaReal.absolute, path.join(linkedRoot, 'src', 'a.ts'));
      await rejectsWith(resolveInWorkspace(roots, path.join(outside, 'secret.txt')), /outside the workspace/);
    });
  });

  describe('resolveInWorkspace, multi-root', () => {
    let multi: WorkspaceRoot[];

    beforeEach(async () => {
      const api = path.join(base, 'api');
      await fs.mkdir(path.join(api, 'src'), { recursive: true });
      await fs.writeFile(path.join(api, 'src', 'a.ts'), 'api');
      multi = [
        { name: 'web', fsPath: project },
        { name: 'api', fsPath: api },
      ];
    });

    it('uses the folder name as the first segment', async () => {
      const web = await resolveInWorkspace(multi, 'web/src/a.ts');
      assert.equal(web.absolute, path.join(project, 'src', 'a.ts'));
      assert.equal(web.relative, 'web/src/a.ts');
      assert.equal(web.root.name, 'web');
      const api = await resolveInWorkspace(multi, './api\\src\\a.ts');
      assert.equal(api.absolute, path.join(base, 'api', 'src', 'a.ts'));
      assert.equal(api.relative, 'api/src/a.ts');
    });

    it('names the folders when a path lacks a folder name', async () => {
      await rejectsWith(resolveInWorkspace(multi, 'src/a.ts'), /folders: web, api/);
    });

    it('refuses escaping from one folder into another with ..', async () => {
      await rejectsWith(resolveInWorkspace(multi, 'web/../api/src/a.ts'), /escapes/);
    });

    it('shows absolute paths with the folder name of the deepest containing root', async () => {
      const nested = path.join(project, 'src');
      const roots = [...multi, { name: 'web-src', fsPath: nested }];
      const resolved = await resolveInWorkspace(roots, path.join(nested, 'a.ts'));
      assert.equal(resolved.relative, 'web-src/a.ts');
    });
  });

  describe('locateReal', () => {
    it('refuses, when asked again, a path whose folder became a link after it was resolved', async () => {
      const resolved = await resolveInWorkspace(single, 'src/a.ts');
      assert.deepEqual(await locateReal(resolved.root, resolved.absolute, 'src/a.ts'), {
        realRoot: await fs.realpath(project),
        real: await fs.realpath(path.join(project, 'src', 'a.ts')),
        exists: true,
      });
      await fs.rename(path.join(project, 'src'), path.join(project, 'src-old'));
      await fs.symlink(outside, path.join(project, 'src'), 'dir');
      await rejectsWith(locateReal(resolved.root, resolved.absolute, 'src/a.ts'), /symbolic link that points outside/);
    });
  });

  describe('lexicalTarget', () => {
    it('gives the folder and the model-facing path of a found file without looking at the disk', () => {
      const multi = [
        { name: 'web', fsPath: project },
        { name: 'web-src', fsPath: path.join(project, 'src') },
      ];
      const target = lexicalTarget(multi, path.join(project, 'src', 'not-there.ts'));
      assert.deepEqual(target, { absolute: path.join(project, 'src', 'not-there.ts'), relative: 'web-src/not-there.ts', root: multi[1] });
      assert.equal(lexicalTarget(multi, path.join(outside, 'secret.txt')), undefined);
    });
  });

  describe('toWorkspaceRelative', () => {
    it('gives the model-facing path in single- and multi-root workspaces', () => {
      assert.equal(toWorkspaceRelative(single, path.join(project, 'src', 'a.ts')), 'src/a.ts');
      const multi = [
        { name: 'web', fsPath: project },
        { name: 'api', fsPath: path.join(base, 'api') },
      ];
      assert.equal(toWorkspaceRelative(multi, path.join(base, 'api', 'x', 'y.ts')), 'api/x/y.ts');
    });

    it('is undefined outside every root, including a sibling folder sharing a name prefix', () => {
      assert.equal(toWorkspaceRelative(single, path.join(outside, 'secret.txt')), undefined);
      assert.equal(toWorkspaceRelative(single, `${project}-other${path.sep}a.ts`), undefined);
      assert.equal(toWorkspaceRelative([], path.join(project, 'a.ts')), undefined);
    });
  });
});
