import assert from 'node:assert/strict';
import { diffStats, fencedBlock, unifiedDiff, unifiedDiffPreview } from '../../../src/app/workspace/diff-preview';

function numbered(count: number, change?: (i: number) => string | undefined): string {
  const lines: string[] = [];
  for (let i = 1; i <= count; i++) lines.push(change?.(i) ?? `line ${i}`);
  return `${lines.join('\n')}\n`;
}

describe('unifiedDiffPreview', () => {
  it('shows a one-line change with three lines of context and file headers', () => {
    const before = numbered(20);
    const after = numbered(20, (i) => (i === 10 ? 'changed 10' : undefined));
    assert.equal(
      unifiedDiffPreview(before, after, 'src/a.ts'),
      [
        '--- src/a.ts',
        '+++ src/a.ts',
        '@@ -7,7 +7,7 @@',
        ' line 7',
        ' line 8',
        ' line 9',
        '-line 10',
        '+changed 10',
        ' line 11',
        ' line 12',
        ' line 13',
      ].join('\n'),
    );
  });

  it('keeps distant changes in separate hunks', () => {
    const before = numbered(40);
    const after = numbered(40, (i) => (i === 5 ? 'five' : i === 35 ? 'thirty-five' : undefined));
    const hunkHeaders = unifiedDiffPreview(before, after, 'a.ts')
      .split('\n')
      .filter((l) => l.startsWith('@@'));
    assert.deepEqual(hunkHeaders, ['@@ -2,7 +2,7 @@', '@@ -32,7 +32,7 @@']);
  });

  it('shows a new file as all additions against an empty side', () => {
    assert.equal(unifiedDiffPreview('', 'hello\nworld', 'new.ts'), ['--- new.ts', '+++ new.ts', '@@ -0,0 +1,2 @@', '+hello', '+world'].join('\n'));
  });

  it('cuts the body to maxLines and says how much is left', () => {
    const preview = unifiedDiffPreview('', numbered(100), 'big.ts', 10);
    const lines = preview.split('\n');
    assert.equal(lines.length, 2 + 10 + 1);
    assert.equal(lines[lines.length - 1], '… 91 more lines');
    assert.equal(lines[11], '+line 9');
  });

  it('treats CRLF and LF as the same text', () => {
    assert.equal(unifiedDiffPreview('a\r\nb\r\n', 'a\nb\n', 'x.ts'), '--- x.ts\n+++ x.ts\n(no changes)');
  });

  it('says "no changes" for identical texts', () => {
    assert.equal(unifiedDiffPreview('same\n', 'same\n', 'x.ts'), '--- x.ts\n+++ x.ts\n(no changes)');
  });

  it('falls back to a whole-file replacement when the texts differ everywhere', () => {
    const before = numbered(6000);
    const after = numbered(6000, (i) => `other ${i}`);
    const lines = unifiedDiffPreview(before, after, 'x.ts', 3).split('\n');
    assert.deepEqual(lines, ['--- x.ts', '+++ x.ts', '@@ -1,6000 +1,6000 @@', '-line 1', '-line 2', '… 11998 more lines']);
  });

  it('gives the whole diff of a 120-line change, uncut, and counts its lines', () => {
    const before = numbered(150);
    const after = numbered(150, (i) => (i > 10 && i <= 130 ? `rewritten ${i}` : undefined));
    const diff = unifiedDiff(before, after, 'src/long.ts');
    assert.doesNotMatch(diff, /more lines/);
    assert.deepEqual(diffStats(diff), { added: 120, removed: 120, bodyLines: 1 + 3 + 240 + 3 });
    assert.ok(diff.includes('-line 130\n') && diff.includes('+rewritten 130\n'), 'the last changed line is there');
  });
});

describe('fencedBlock', () => {
  it('fences a diff so that backticks in it cannot end the block early', () => {
    assert.equal(fencedBlock('+const s = `x`;', 'diff'), '```diff\n+const s = `x`;\n```');
    assert.equal(fencedBlock('+```js\n+code\n+```', 'diff'), '````diff\n+```js\n+code\n+```\n````');
  });
});
