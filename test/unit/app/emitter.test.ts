import assert from 'node:assert/strict';
import { Emitter } from '../../../src/app/emitter';

describe('an event', () => {
  it('calls each listener with every value fired, in the order they subscribed, until disposed', () => {
    const emitter = new Emitter<number>();
    const heard: string[] = [];
    const first = emitter.event((n) => heard.push(`first ${n}`));
    emitter.event((n) => heard.push(`second ${n}`));
    emitter.fire(1);
    first.dispose();
    emitter.fire(2);
    assert.deepEqual(heard, ['first 1', 'second 1', 'second 2']);
  });

  it('calls a function subscribed twice once, and lets a listener unsubscribe while it is called', () => {
    const emitter = new Emitter<string>();
    const heard: string[] = [];
    const listener = (value: string): void => void heard.push(value);
    emitter.event(listener);
    emitter.event(listener);
    const once = emitter.event((value) => {
      heard.push(`once ${value}`);
      once.dispose();
    });
    emitter.fire('a');
    emitter.fire('b');
    assert.deepEqual(heard, ['a', 'once a', 'b']);
  });
});
