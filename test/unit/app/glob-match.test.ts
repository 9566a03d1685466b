import assert from 'node:assert/strict';
import { matchesGlob } from '../../../src/app/workspace/glob-match';

describe('matchesGlob: VS Code glob patterns', () => {
  const cases: Array<[path: string, glob: string, expected: boolean]> = [
    ['src/a.ts', 'src/*.ts', true],
    ['src/deep/a.ts', 'src/*.ts', false],
    ['src/deep/a.ts', 'src/**/*.ts', true],
    ['src/a.ts', 'src/**/*.ts', true],
    ['.git/config', '**/.git/**', true],
    ['pkg/sub/.git/hooks/pre-commit', '**/.git/**', true],
    ['.git', '**/.git/**', true],
    ['.gitignore', '**/.git/**', false],
    ['x.git/config', '**/.git/**', false],
    ['anything/at/all', '**', true],
    ['a.ts', '*.{ts,js}', true],
    ['a.md', '*.{ts,js}', false],
    ['a/b.ts', '{a/*,c}.ts', true],
    ['file1', 'file[0-9]', true],
    ['filex', 'file[!0-9]', true],
    ['file1', 'file[!0-9]', false],
    ['a/b', 'a?b', false],
    ['a{b', 'a{b', true],
    ['a[b', 'a[b', true],
    ['one\ntwo/.git/config', '**/.git/**', true],
  ];
  for (const [p, glob, expected] of cases) {
    it(`${JSON.stringify(p)} ${expected ? 'matches' : 'does not match'} ${glob}`, () => {
      assert.equal(matchesGlob(p, glob), expected);
    });
  }

  it('ignores case only when asked', () => {
    assert.equal(matchesGlob('.GIT/Config', '**/.git/**'), false);
    assert.equal(matchesGlob('.GIT/Config', '**/.git/**', { caseInsensitive: true }), true);
  });
});
