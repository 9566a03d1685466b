import assert from 'node:assert/strict';
import { errorText, hasMarker, isRecord, mark } from '../../../src/core/errors';

describe('errors: what every layer says about a thrown value', () => {
  it('gives an error its message, or its name when the message is empty, and anything else its text', () => {
    assert.equal(errorText(new TypeError('bad input')), 'bad input');
    assert.equal(errorText(new RangeError('')), 'RangeError');
    assert.equal(errorText('plain'), 'plain');
    assert.equal(errorText({ message: 'from a worker' }), 'from a worker');
    assert.equal(errorText(42), '42');
    assert.equal(errorText(undefined), 'undefined');
  });

  it('calls objects records, but not arrays or null', () => {
    assert.equal(isRecord({ a: 1 }), true);
    assert.equal(isRecord([]), false);
    assert.equal(isRecord(null), false);
    assert.equal(isRecord('x'), false);
  });

  it('recognises a marked error from another copy of its class, and nothing else', () => {
    const marker = Symbol.for('longrun.test-error');
    // Two classes standing for one class loaded twice (two bundles): instanceof fails, the marker holds.
    class CopyA extends Error {
      constructor() {
        super('a');
        mark(this, marker);
      }
    }
    class CopyB extends Error {
      constructor() {
        super('b');
        mark(this, Symbol.for('longrun.test-error'));
      }
    }
    const b = new CopyB();
    assert.equal(b instanceof CopyA, false);
    assert.equal(hasMarker(b, marker), true);
    assert.equal(hasMarker(new CopyA(), marker), true);
    assert.equal(hasMarker(new Error('plain'), marker), false);
    assert.equal(hasMarker({ [marker]: 'yes' }, marker), false);
    assert.equal(hasMarker(undefined, marker), false);
    // Not enumerable: a marked error logs and serialises like any other.
    assert.deepEqual(Object.keys(new CopyA()), []);
  });
});
