import assert from 'node:assert/strict';
import fc from 'fast-check';
import { firstInSight, type ShownPart } from '../../../src/app/chat-folds';

const md = (text = 'text'): ShownPart => ({ kind: 'markdown', empty: text.length === 0 });
const other: ShownPart = { kind: 'other' };

describe("what VS Code's chat folds of a finished response", () => {
  it('folds what came before the final text: an offer and its button before a one-line answer', () => {
    // The offer, its button, then the agent's answer: "Completed 2 steps", and the answer alone in sight.
    assert.equal(firstInSight([md(), other, md()]), 2);
  });

  it('keeps the final text and everything after it in sight', () => {
    // Tool progress, the answer, then a button after it.
    assert.equal(firstInSight([other, other, md(), md(), other]), 2);
  });

  it('takes consecutive Markdown as one final text, however many parts it was written in', () => {
    assert.equal(firstInSight([other, other, md(), md(), md()]), 2);
    assert.equal(firstInSight([md(), md(), md()]), 0);
  });

  it('folds nothing when fewer than two steps come before the final text', () => {
    assert.equal(firstInSight([other, md()]), 0);
    assert.equal(firstInSight([md(), md()]), 0);
  });

  it('counts a run of Markdown between other parts as one step', () => {
    assert.equal(firstInSight([md(), md(), md(), other, md()]), 4);
  });

  it('folds nothing in a response without text, and takes empty Markdown for no text', () => {
    assert.equal(firstInSight([other, other, other]), 0);
    assert.equal(firstInSight([other, md(), other, md('')]), 0);
    assert.equal(firstInSight([md(), other, other, md(''), other]), 0, 'the last text is the first part, with nothing before it');
  });

  it('leaves every part from the last text on in sight, and folds only what precedes its Markdown run', () => {
    const part = fc.oneof(fc.constant(other), fc.constant(md()), fc.constant(md('')));
    fc.assert(
      fc.property(fc.array(part, { maxLength: 30 }), (parts) => {
        const first = firstInSight(parts);
        const lastText = parts.findLastIndex((p) => p.kind === 'markdown' && !p.empty);
        if (lastText < 0) return first === 0;
        if (first === 0) return true;
        // Nothing after the last text, nor the text itself, is folded.
        if (first > lastText) return false;
        // All from `first` to the last text is Markdown: the final text, in one run.
        if (parts.slice(first, lastText + 1).some((p) => p.kind !== 'markdown')) return false;
        // The fold ends right before the final text's run.
        return parts[first - 1]!.kind === 'other';
      }),
    );
  });
});
