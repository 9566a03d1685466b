import assert from 'node:assert/strict';
import { changeIsOnlyTheReplacements, decideApproval } from '../../../src/app/workspace/approval-policy';
import { applyReplacements, locateEdits } from '../../../src/app/workspace/exact-edits';

const gitConfig = { reason: '.git/config can make git run commands (core.fsmonitor, core.hooksPath, aliases, filters).' };

describe('approval policy: when the agent asks before writing', () => {
  it('writes an ordinary file without asking when edits are auto-approved', () => {
    assert.deepEqual(decideApproval({ verb: 'edit', path: 'src/a.ts', autoApprove: true, onlyTheReplacements: true }), { ask: false });
  });

  it('asks for every write when edits are not auto-approved', () => {
    assert.deepEqual(decideApproval({ verb: 'create', path: 'src/b.ts', autoApprove: false, onlyTheReplacements: true }), {
      ask: true,
      question: 'Allow Longrun to create src/b.ts?',
    });
  });

  it('asks for a protected file even when edits are auto-approved, saying why', () => {
    assert.deepEqual(decideApproval({ verb: 'edit', path: '.git/config', autoApprove: true, protection: gitConfig, onlyTheReplacements: true }), {
      ask: true,
      question: `Allow Longrun to edit .git/config? This file is protected: ${gitConfig.reason}`,
    });
  });

  it('asks for a change that is more than its replacements even when edits are auto-approved', () => {
    const decision = decideApproval({ verb: 'edit', path: 'src/a.ts', autoApprove: true, onlyTheReplacements: false });
    assert.ok(decision.ask);
    assert.match(decision.question, /^Allow Longrun to edit src\/a\.ts\? This change is more than the replacements the agent asked for/);
  });
});

describe('changeIsOnlyTheReplacements', () => {
  const located = (before: string, edits: { oldText: string; newText: string }[]) => {
    const replacements = locateEdits(before, edits, 'f.txt');
    return { replacements, after: applyReplacements(before, replacements) };
  };

  it('accepts the change exact edits make, CRLF files included', () => {
    const before = 'one\r\ntwo\r\nthree\r\nfour\r\n';
    const edits = [
      { oldText: 'two\nthree', newText: 'TWO\nTHREE\nextra' },
      { oldText: 'four', newText: '' },
    ];
    const { replacements, after } = located(before, edits);
    assert.ok(changeIsOnlyTheReplacements(before, after, edits, replacements));
  });

  it('rejects a change that also deletes text outside the replacements', () => {
    const before = 'keep me\nold line\nalso keep\n';
    const edits = [{ oldText: 'old line', newText: 'new line' }];
    const { replacements } = located(before, edits);
    assert.ok(!changeIsOnlyTheReplacements(before, 'new line\nalso keep\n', edits, replacements));
  });

  it('rejects replacements located wider than the text they were asked to replace', () => {
    const before = 'a = 1;\nb = 2;\nc = 3;\n';
    const edits = [{ oldText: 'b = 2;', newText: 'b = 20;' }];
    const wide = [{ start: 0, end: before.indexOf('c'), newText: 'b = 20;\n' }];
    assert.ok(!changeIsOnlyTheReplacements(before, applyReplacements(before, wide), edits, wide));
  });

  it('rejects a change that rewrites the line endings of untouched lines', () => {
    const before = 'a\r\nb\r\nc\r\n';
    const edits = [{ oldText: 'b', newText: 'B' }];
    const { replacements } = located(before, edits);
    assert.ok(!changeIsOnlyTheReplacements(before, 'a\nB\nc\n', edits, replacements));
  });
});
