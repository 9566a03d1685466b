import assert from 'node:assert/strict';
import { normalizePath, protectionOf } from '../../../src/app/workspace/protected-paths';

describe('protectionOf: files the agent may only write with approval', () => {
  const reasonOf = (p: string, userGlobs: string[] = []) => protectionOf([p], userGlobs)?.reason;

  it('names why each kind of sensitive file is protected', () => {
    assert.equal(reasonOf('.git/config'), '.git/config can make git run commands (core.fsmonitor, core.hooksPath, aliases, filters).');
    assert.equal(reasonOf('.git/hooks/pre-commit'), 'Git runs the files in .git/hooks as programs on commit, checkout, merge and push.');
    assert.equal(reasonOf('.git/HEAD'), 'Files under .git control the repository: git reads its settings, hooks and references from them.');
    assert.equal(reasonOf('.vscode/tasks.json'), '.vscode/tasks.json can run tasks when the folder opens.');
    assert.match(reasonOf('.vscode/launch.json') ?? '', /programs the debugger starts/);
    assert.match(reasonOf('.vscode/settings.json') ?? '', /which programs they run/);
    assert.match(reasonOf('.vscode/extensions.json') ?? '', /configure VS Code/);
    assert.match(reasonOf('.devcontainer/devcontainer.json') ?? '', /initializeCommand/);
    assert.match(reasonOf('.devcontainer.json') ?? '', /initializeCommand/);
    assert.match(reasonOf('.github/workflows/release.yml') ?? '', /GitHub Actions workflows run code in CI/);
    assert.match(reasonOf('.husky/pre-push') ?? '', /Husky/);
    assert.match(reasonOf('team.code-workspace') ?? '', /\.code-workspace/);
  });

  it('protects nested repositories and folders too', () => {
    assert.ok(reasonOf('packages/tool/.git/config'));
    assert.ok(reasonOf('sub/.vscode/tasks.json'));
  });

  it('leaves ordinary files alone, including look-alikes', () => {
    for (const p of [
      'src/a.ts',
      '.gitignore',
      '.gitattributes',
      'docs/.github/README.md',
      '.github/CODEOWNERS',
      'vscode/tasks.json',
      'my.git/config',
    ]) {
      assert.equal(reasonOf(p), undefined, p);
    }
  });

  it('matches what case-insensitive and Windows file systems treat as the same name', () => {
    for (const p of [
      '.GIT/config',
      '.Git/Hooks/pre-commit',
      '.git./config',
      '.git. . /config',
      '.git::$INDEX_ALLOCATION/config',
      '.vscode:stream/tasks.json',
      '.g\u200cit/config',
      '.hus\u212Ay/pre-commit',
      '.\\.git\\config',
    ]) {
      assert.ok(reasonOf(p), p);
    }
  });

  it('protects the files that decide what commands do only while some command runs without asking', () => {
    const files = [
      'package.json',
      'packages/web/package.json',
      'package-lock.json',
      'pnpm-lock.yaml',
      '.npmrc',
      '.yarnrc',
      '.yarnrc.yml',
      '.yarn/releases/yarn-4.cjs',
      'pyproject.toml',
      'setup.cfg',
      'setup.py',
      'tox.ini',
      'Makefile',
      'GNUmakefile',
      'rules.mk',
      'justfile',
      'Taskfile.yml',
      'Cargo.toml',
      'build.rs',
      '.cargo/config',
      '.cargo/config.toml',
      'build.gradle',
      'build.gradle.kts',
      'settings.gradle.kts',
      'gradle/wrapper/gradle-wrapper.properties',
      'pom.xml',
      'go.mod',
      '.envrc',
      '.gitattributes',
      '.gitmodules',
      '.mocharc.json',
      'jest.config.ts',
      'PACKAGE.JSON',
    ];
    for (const p of files) {
      assert.equal(protectionOf([p], [], undefined, false), undefined, `${p}: no command runs unasked`);
      assert.match(protectionOf([p], [], undefined, true)?.reason ?? '', /longrun\.agent\.allowedCommands lets commands run without asking\.$/, p);
    }
    assert.match(protectionOf(['Makefile'], [], undefined, true)?.reason ?? '', /^Makefile defines the commands that make/);
    for (const p of ['src/package.ts', 'README.md', 'docs/makefile.md', 'src/cargo.rs']) {
      assert.equal(protectionOf([p], [], undefined, true), undefined, p);
    }
    assert.match(protectionOf(['.git/config'], [], undefined, true)?.reason ?? '', /^\.git\/config can make git run/, 'built-in reasons first');
  });

  it('checks every name the file goes by', () => {
    assert.ok(protectionOf(['meta/config', '.git/config'], []));
    assert.equal(protectionOf(['meta/config', 'other/config'], []), undefined);
  });

  it("adds the user's globs, relative to the folder or to the path as written", () => {
    assert.equal(reasonOf('secrets/api.txt', ['secrets/**']), 'It matches "secrets/**" in the setting longrun.agent.protectedPaths.');
    assert.ok(reasonOf('deploy/KEY.PEM', ['**/*.pem']));
    assert.ok(reasonOf('secrets/x', ['./secrets/**']));
    assert.ok(protectionOf(['src/app.env'], ['web/src/*.env'], 'web/src/app.env'));
    assert.equal(reasonOf('src/a.ts', ['secrets/**']), undefined);
  });

  it('prefers the built-in reason when a user glob also matches', () => {
    assert.match(reasonOf('.git/config', ['**']) ?? '', /core\.fsmonitor/);
  });
});

describe('normalizePath', () => {
  it('drops empty and . segments, uses forward slashes and lower case', () => {
    assert.equal(normalizePath('./A//b/./C.txt'), 'a/b/c.txt');
    assert.equal(normalizePath('a\\B'), 'a/b');
  });

  it('keeps names made only of dots', () => {
    assert.equal(normalizePath('.../x'), '.../x');
  });
});
