import assert from 'node:assert/strict';
import { normalizePath, plainText } from '../../../src/core/text';

describe('text: paths', () => {
  it('compares paths as the file tools do', () => {
    assert.equal(normalizePath('./src//app/./a.ts'), 'src/app/a.ts');
    assert.equal(normalizePath('src\\app\\a.ts'), 'src/app/a.ts');
    assert.equal(normalizePath('src/app/'), 'src/app');
    assert.equal(normalizePath('.\\src\\b.ts'), 'src/b.ts');
  });

  it('leaves .., a lone slash and surrounding whitespace alone', () => {
    assert.equal(normalizePath('a/../b.ts'), 'a/../b.ts');
    assert.equal(normalizePath('/'), '/');
    assert.equal(normalizePath(' a.ts '), ' a.ts ');
    assert.equal(normalizePath('./'), '');
  });
});

describe('text: tool values as plain text', () => {
  it('returns a string as it is', () => {
    assert.equal(plainText('a\\nb'), 'a\\nb');
  });

  it('unescapes structured values, so lines and keywords inside JSON stay apart', () => {
    assert.equal(plainText({ stderr: 'build\nerror' }), '{"stderr":"build\nerror"}');
    assert.equal(plainText({ path: 'a\\b', tab: '\t', note: '\u00e9' }), '{"path":"a\\b","tab":"\t","note":"é"}');
    assert.equal(plainText(undefined), '');
  });
});
