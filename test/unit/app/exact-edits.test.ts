import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ToolFailure } from '../../../src/llm/workspace-port';
import { applyReplacements, locateEdits } from '../../../src/app/workspace/exact-edits';

const edit = (text: string, oldText: string, newText: string) => applyReplacements(text, locateEdits(text, [{ oldText, newText }], 'f.txt'));

describe('exact edits', () => {
  it('replaces the text the model gave in LF inside a CRLF file, keeping CRLF', () => {
    assert.equal(edit('a\r\nb\r\nc\r\n', 'a\nb', 'x\ny\nz'), 'x\r\ny\r\nz\r\nc\r\n');
  });

  it('keeps LF lines LF in a file that mixes both', () => {
    assert.equal(edit('crlf\r\nlf one\nlf two\ncrlf again\r\n', 'lf one\nlf two', 'one\ntwo\nthree'), 'crlf\r\none\ntwo\nthree\ncrlf again\r\n');
  });

  it('gives a single-line replacement the ending of the line it sits on', () => {
    assert.equal(edit('a = 1\r\nb = 2\r\n', 'b = 2', 'b = 2\nc = 3'), 'a = 1\r\nb = 2\r\nc = 3\r\n');
    assert.equal(edit('no newline at all', 'all', 'all\nmore'), 'no newline at all\nmore');
  });

  it('never splits a CRLF', () => {
    assert.equal(edit('a\r\nb\r\n', '\nb', '\nc'), 'a\r\nc\r\n');
    assert.equal(edit('a\r\nb\r\n', 'a\n', 'z\n'), 'z\r\nb\r\n');
  });

  it('refuses text that is missing, ambiguous or overlapping', () => {
    assert.throws(
      () => locateEdits('abc', [{ oldText: 'x', newText: '' }], 'f'),
      (e) => e instanceof ToolFailure && /not found/.test(e.message),
    );
    assert.throws(() => locateEdits('aaa', [{ oldText: 'aa', newText: '' }], 'f'), /occurs 2 times/);
    assert.throws(
      () =>
        locateEdits(
          'abcdef',
          [
            { oldText: 'abc', newText: '' },
            { oldText: 'cde', newText: '' },
          ],
          'f',
        ),
      /Edits 1 and 2 overlap/,
    );
  });

  it('changes nothing outside the replaced range, whatever the line endings (property)', () => {
    const piece = fc.constantFrom('a', 'b', ' ', '\t', '\n', '\r\n', '\r', 'é', '\ufeff');
    const text = fc.array(piece, { maxLength: 30 }).map((p) => p.join(''));
    const short = fc.array(piece, { maxLength: 8 }).map((p) => p.join(''));
    // The model writes its new text with LF; a lone CR is only ever in the file.
    const written = fc.array(fc.constantFrom('c', ' ', '\n', 'é'), { maxLength: 8 }).map((p) => p.join(''));
    let applied = 0;
    fc.assert(
      fc.property(text, short, text, written, (prefix, middle, suffix, replacement) => {
        const marker = 'UNIQUE';
        const original = `${prefix}${marker}${middle}${marker}!${suffix}`;
        // What the model copies from read_file: the lines, joined with LF.
        const oldText = `${marker}${middle}${marker}!`.split(/\r?\n/).join('\n');
        let located;
        try {
          located = locateEdits(original, [{ oldText, newText: replacement }], 'f');
        } catch (error) {
          // A lone CR before a line break makes the model's text ambiguous: refusing is safe.
          if (error instanceof ToolFailure) return;
          throw error;
        }
        const [r] = located;
        assert.ok(r);
        const result = applyReplacements(original, located);
        assert.equal(result.slice(0, r.start), original.slice(0, r.start));
        assert.equal(result.slice(r.start + r.newText.length), original.slice(r.end));
        assert.equal(original.slice(r.start, r.end).split(/\r?\n/).join('\n'), oldText);
        assert.equal(r.newText.split(/\r?\n/).join('\n'), replacement);
        applied++;
      }),
      { numRuns: 500 },
    );
    assert.ok(applied > 400, `only ${applied} of 500 edits were applied`);
  });
});
