import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as v8 from 'node:v8';
import fc from 'fast-check';
import { ConversationStore, type RecordLocation } from '../../../src/app/store/conversation-store';
import { awayAt, heldAway } from '../../../src/app/store/held-away';
import { lineCheck } from '../../../src/app/store/lines';
import type { LogRecord } from '../../../src/core/history';

v8.setFlagsFromString('--allow-natives-syntax');
/** Whether the engine holds `n` as a small integer: inside the object that has it, not as a number object of its own. */
const isSmallInteger = new Function('n', 'return %IsSmi(n)') as (n: number) => boolean;
/** Whether two objects have one shape (a record made after another did not change the shape the first has). */
const haveSameShape = new Function('a', 'b', 'return %HaveSameMap(a, b)') as (a: object, b: object) => boolean;

function message(id: string, text = `Text of ${id}.`): LogRecord & { type: 'message' } {
  return { type: 'message', turnId: 't1', message: { id, role: 'assistant', content: [{ type: 'text', text }] } };
}

/**
 * A message made before turns were recorded. Its records held away have a shape of their own, which
 * numbers past any a location reaches (over a gigabyte) change; those with a turn keep theirs.
 */
function messageWithoutTurn(id: string): LogRecord & { type: 'message' } {
  return { type: 'message', message: { id, role: 'assistant', content: [{ type: 'text', text: `Text of ${id}.` }] } };
}

/** `n` as a number that went through floating-point arithmetic, as a file's size from `stat` does. */
function floating(n: number): number {
  return new Float64Array([n])[0]!;
}

describe('messages held without their content', () => {
  it('keep where their line is, whatever the numbers', () => {
    const location = fc.record(
      {
        part: fc.nat({ max: 2 ** 40 }),
        offset: fc.nat({ max: 2 ** 45 }),
        bytes: fc.nat({ max: 2 ** 40 }),
        check: fc.nat({ max: 2 ** 30 - 1 }),
      },
      { requiredKeys: ['part', 'offset', 'bytes'] },
    );
    fc.assert(
      fc.property(location, fc.boolean(), (at, throughFloats) => {
        const given: RecordLocation = throughFloats
          ? {
              part: floating(at.part),
              offset: floating(at.offset),
              bytes: floating(at.bytes),
              ...(at.check === undefined ? {} : { check: floating(at.check) }),
            }
          : at;
        assert.deepEqual(awayAt(heldAway(messageWithoutTurn('m1'), given)), { ...at });
      }),
      { numRuns: 2_000 },
    );
  });

  it('hold the numbers of a line the store appended inside themselves, in the shape of every other such record', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'longrun-held-away-'));
    try {
      const store = new ConversationStore(dir, () => 0);
      const before = heldAway(message('opened'), { part: 1, offset: 5_150_098, bytes: 25_047, check: 174_138_743 });
      const located: Array<[LogRecord, RecordLocation]> = [];
      const records = [message('a', 'x'.repeat(5_000)), message('b'), message('c')];
      await store.appendAll('held', records, (stored, at) => void located.push([stored, at]));
      assert.equal(located.length, records.length);
      const held = located.map(([record, at]) => heldAway(record as LogRecord & { type: 'message' }, at));
      // A location whose numbers went through floating-point arithmetic, as a size from `stat` does.
      held.push(heldAway(message('d'), { part: floating(3), offset: floating(7_590_735), bytes: floating(249), check: floating(198_470_742) }));
      for (const record of [before, ...held]) {
        assert.ok(haveSameShape(record, before), 'a record held away changed the shape of those held before');
        const at = awayAt(record)!;
        for (const [name, n] of Object.entries(at)) assert.ok(isSmallInteger(n), `${name} ${n} is a number object of its own`);
      }
      assert.deepEqual(awayAt(held.at(-1)!), { part: 3, offset: 7_590_735, bytes: 249, check: 198_470_742 });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('a line’s check', () => {
  it('is a small integer, the same for the same bytes, and tells a changed byte', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 1, maxLength: 200 }), fc.nat(), fc.integer({ min: 1, max: 255 }), (bytes, at, change) => {
        const check = lineCheck(bytes);
        assert.ok(Number.isInteger(check) && check >= 0 && check < 2 ** 30);
        assert.ok(isSmallInteger(check));
        assert.equal(lineCheck(Uint8Array.from(bytes)), check);
        const changed = Uint8Array.from(bytes);
        const i = at % bytes.length;
        changed[i] = changed[i]! ^ change;
        assert.notEqual(lineCheck(changed), check);
      }),
      { numRuns: 2_000 },
    );
  });
});
