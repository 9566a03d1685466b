import assert from 'node:assert/strict';
import fc from 'fast-check';
import { EngineMemo } from '../../../src/core/engine-memo';
import type { Actor, FileEvent, FileOpKind } from '../../../src/core/file-ledger';
import { ledgerOf, type LogRecord } from '../../../src/core/history';

/** What a step of the property does to the branches of a conversation. */
type Step =
  | { readonly kind: 'append'; readonly branch: number; readonly record: { readonly file: boolean; readonly event: FileEvent } }
  | { readonly kind: 'fork'; readonly branch: number; readonly at: number }
  | { readonly kind: 'drop'; readonly branch: number; readonly at: number }
  | { readonly kind: 'ledger'; readonly branch: number; readonly extra: FileEvent };

const paths = ['a.ts', 'b.ts', 'src/c.ts'];
const event: fc.Arbitrary<FileEvent> = fc.record({
  kind: fc.constantFrom<FileOpKind>('read', 'created', 'modified', 'deleted', 'renamed'),
  path: fc.constantFrom(...paths),
  from: fc.constantFrom(...paths),
  actor: fc.constantFrom<Actor>('agent', 'user'),
  at: fc.integer({ min: 0, max: 1_000 }),
});
const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('append' as const), branch: fc.nat(), record: fc.record({ file: fc.boolean(), event }) }),
  fc.record({ kind: fc.constant('fork' as const), branch: fc.nat(), at: fc.nat() }),
  fc.record({ kind: fc.constant('drop' as const), branch: fc.nat(), at: fc.nat() }),
  fc.record({ kind: fc.constant('ledger' as const), branch: fc.nat(), extra: event }),
);

describe('file ledger remembered between calls', () => {
  it('is the ledger of every file operation of the log, whichever log grew, forked, left a record out or was asked before', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 60 }), (steps) => {
        const memo = new EngineMemo();
        // Branches share the records before the point they forked at, as a conversation's branches do.
        const branches: LogRecord[][] = [[]];
        let messages = 0;
        for (const s of steps) {
          const branch = branches[s.branch % branches.length]!;
          if (s.kind === 'append') {
            branch.push(
              s.record.file
                ? { type: 'file', event: s.record.event }
                : { type: 'message', message: { id: `m${++messages}`, role: 'user', content: [{ type: 'text', text: 'go on' }] } },
            );
          } else if (s.kind === 'fork') {
            branches.push(branch.slice(0, s.at % (branch.length + 1)));
          } else if (s.kind === 'drop') {
            // A log of the same records with one left out, as a branch leaves out another's records.
            const at = s.at % (branch.length + 1);
            branches.push([...branch.slice(0, at), ...branch.slice(at + 1)]);
          } else {
            // A log as a caller holds it: the branch itself, or a copy of it with more appended.
            assert.deepEqual(ledgerOf(branch, memo), ledgerOf(branch));
            const longer: LogRecord[] = [...branch, { type: 'file', event: s.extra }];
            assert.deepEqual(ledgerOf(longer, memo), ledgerOf(longer));
          }
        }
        for (const branch of branches) assert.deepEqual(ledgerOf(branch, memo), ledgerOf(branch));
      }),
      { numRuns: 500 },
    );
  });
});
