import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { changeBetween, fileChange, planRevert } from '../../../src/core/file-changes';

const hash = (text: string): string => createHash('sha256').update(text).digest('hex');

describe("the agent's changes to files, kept so that they can be taken back", () => {
  it('keeps only the stretch that differs, and the texts are rebuilt from it exactly (any texts, surrogates included)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), fc.string({ unit: 'grapheme' }), (before, after) => {
        const { at, removed, inserted } = changeBetween(before, after);
        assert.equal(before.slice(0, at) + inserted + before.slice(at + removed.length), after);
        assert.equal(after.slice(0, at) + removed + after.slice(at + inserted.length), before);
        assert.ok(removed.length + inserted.length <= before.length + after.length);
        // Whole characters only: a stored stretch never starts or ends inside a surrogate pair.
        for (const piece of [removed, inserted]) assert.equal(piece, Buffer.from(piece, 'utf8').toString('utf8'));
      }),
      { numRuns: 2_000 },
    );
  });

  it('never splits a character made of two UTF-16 units', () => {
    assert.deepEqual(changeBetween('a😀b', 'a😁b'), { at: 1, removed: '😀', inserted: '😁' });
  });

  it('keeps an edit of one line of a long file as that line', () => {
    const before = `${'line\n'.repeat(5_000)}old value\n${'line\n'.repeat(5_000)}`;
    const after = before.replace('old value', 'new value');
    const change = changeBetween(before, after);
    assert.ok(change.removed.length + change.inserted.length <= 6, JSON.stringify(change));
  });

  it('takes back a chain of changes to one file, newest first, to exactly the text before the first', () => {
    fc.assert(
      fc.property(fc.array(fc.string(), { minLength: 2, maxLength: 6 }), (texts) => {
        const changes = texts.slice(1).map((text, i) => fileChange(`c${i}`, 'a.txt', 'modified', texts[i]!, text, hash));
        const plan = planRevert(changes, texts.at(-1)!, hash);
        assert.deepEqual(plan, { kind: 'revert', path: 'a.txt', text: texts[0], remove: false });
      }),
    );
  });

  it('leaves a file that changed since the agent wrote it as it is', () => {
    const change = fileChange('c1', 'a.txt', 'modified', 'one\n', 'two\n', hash);
    assert.deepEqual(planRevert([change], 'two\nand the user typed this\n', hash), { kind: 'changed-since', path: 'a.txt' });
    assert.deepEqual(planRevert([change], undefined, hash), { kind: 'changed-since', path: 'a.txt' });
  });

  it('deletes a file the agent created, and only when it still holds what the agent wrote', () => {
    const change = fileChange('c1', 'new.txt', 'created', '', 'fresh\n', hash);
    assert.deepEqual(planRevert([change], 'fresh\n', hash), { kind: 'revert', path: 'new.txt', text: '', remove: true });
    assert.equal(planRevert([change], 'fresh\nedited\n', hash).kind, 'changed-since');
  });

  it('refuses a change whose record was cut when stored rather than write back something else', () => {
    const change = fileChange('c1', 'a.txt', 'modified', 'x'.repeat(100), 'y', hash);
    const cut = { ...change, removed: `${change.removed.slice(0, 10)}[cut]` };
    assert.deepEqual(planRevert([cut], 'y', hash), { kind: 'unrecoverable', path: 'a.txt' });
  });
});
