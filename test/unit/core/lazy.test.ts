import assert from 'node:assert/strict';
import { lazily } from '../../../src/core/lazy';

describe('lazily', () => {
  it('makes the value on first use only, and keeps it, also when it is undefined', () => {
    let made = 0;
    const value = lazily(() => {
      made++;
      return made === 1 ? undefined : 'again';
    });
    assert.equal(made, 0, 'nothing is made before it is used');
    assert.equal(value(), undefined);
    assert.equal(value(), undefined);
    assert.equal(made, 1);
  });
});
