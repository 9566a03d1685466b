import assert from 'node:assert/strict';
import fc from 'fast-check';
import { capText } from '../../../src/llm/result-cap';

describe('capText: the size cap of results from outside the agent', () => {
  it('keeps a text that fits as it is', () => {
    assert.equal(capText('short\ntext', 100, 'hint'), 'short\ntext');
  });

  it('cuts at a line boundary and says how much is left out, with the hint', () => {
    const text = Array.from({ length: 50 }, (_, i) => `line ${i}`).join('\n');
    const capped = capText(text, 250, 'Ask for less.');
    assert.ok(capped.length <= 250);
    const [kept, note] = [capped.slice(0, capped.lastIndexOf('\n')), capped.slice(capped.lastIndexOf('\n') + 1)];
    assert.ok(text.startsWith(`${kept}\n`), 'whole lines are kept');
    const rest = text.slice(kept.length);
    assert.equal(
      note,
      `[Truncated at 250 characters: ${rest.length} more characters (${rest.split('\n').filter(Boolean).length} lines) not shown. Ask for less.]`,
    );
  });

  it('cuts inside a first line that alone is too long', () => {
    const capped = capText('x'.repeat(5_000), 1_000, '');
    assert.match(capped, /^x+\n\[Truncated at 1,000 characters: [\d,]+ more characters \(1 line\) not shown\.\]$/);
    assert.ok(capped.length <= 1_000);
  });

  it('is never longer than the cap', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 3_000 }), fc.integer({ min: 1, max: 2_000 }), fc.string({ maxLength: 80 }), (text, max, hint) => {
        assert.ok(capText(text, max, hint).length <= max);
      }),
    );
  });
});
