import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import type { Conversation } from '../../../src/app/conversation/conversation';
import { ConversationChangedError } from '../../../src/app/store/errors';
import type { Message } from '../../../src/core/messages';
import { user } from '../core/fixtures';
import { testRegistry } from '../fixtures/conversation-deps';
import { anotherConversation, fixedSummarizer, hollowIn, readingTurns } from './read-back-fixture';

/**
 * A conversation in several part files, compacted (its file reads held on disk only), opened by a
 * window; then its files change under the window at random (a byte changed anywhere, a part
 * replaced by another conversation's of the same line lengths, cut short or deleted), and the window
 * undoes the compaction, rewinds past it, recalls from it, or goes on with the next request. Whatever
 * the change: what succeeds gives exactly what it gives on unchanged files; what fails says in words
 * that the files changed, and wrote nothing; a file changed under it is never added to; no message
 * ever lacks its content; and the conversation read again is the one a new window reads.
 */

const PART_BYTES = 8_192;
const STORE = { partBytes: PART_BYTES };
const OPS = ['undo', 'rewind', 'recall', 'next'] as const;
type Op = (typeof OPS)[number];

type Change =
  | { readonly kind: 'byte'; readonly part: number; readonly at: number; readonly xor: number }
  | { readonly kind: 'foreign'; readonly part: number; readonly inPlace: boolean }
  | { readonly kind: 'cut'; readonly part: number; readonly at: number }
  | { readonly kind: 'delete'; readonly part: number };

const changeArb: fc.Arbitrary<Change> = fc.oneof(
  fc.record({
    kind: fc.constant('byte' as const),
    part: fc.nat(),
    at: fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
    xor: fc.integer({ min: 1, max: 255 }),
  }),
  fc.record({ kind: fc.constant('foreign' as const), part: fc.nat(), inPlace: fc.boolean() }),
  fc.record({ kind: fc.constant('cut' as const), part: fc.nat(), at: fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }) }),
  fc.record({ kind: fc.constant('delete' as const), part: fc.nat() }),
);

type Outcome = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly message: string };

/** Each part's bytes, null for a part missing; `count` parts. */
async function filesOf(partFile: (part: number) => string, count: number): Promise<Array<Buffer | null>> {
  return Promise.all(Array.from({ length: count }, (_, i) => fs.readFile(partFile(i + 1)).catch(() => null)));
}

/** Changes part `part` (1-based) as `change` says. */
async function apply(change: Change, file: string): Promise<void> {
  const bytes = await fs.readFile(file);
  switch (change.kind) {
    case 'byte': {
      const at = Math.floor(change.at * bytes.length);
      bytes[at] = bytes[at]! ^ change.xor;
      await fs.writeFile(file, bytes);
      return;
    }
    case 'foreign': {
      const other = anotherConversation(bytes.toString('utf8'));
      if (change.inPlace) await fs.writeFile(file, other);
      else {
        await fs.writeFile(`${file}.new`, other);
        await fs.rename(`${file}.new`, file);
      }
      return;
    }
    case 'cut':
      await fs.truncate(file, Math.floor(change.at * bytes.length));
      return;
    case 'delete':
      await fs.rm(file);
  }
}

/** What `op` gives on `conversation`; a refusal because the files changed is a failed outcome, anything else throws. */
async function run(op: Op, conversation: Conversation, rewind: () => Promise<Conversation | undefined>): Promise<Outcome> {
  try {
    switch (op) {
      case 'undo': {
        const undone = await conversation.undo();
        return undone.ok ? { ok: true, value: conversation.view() } : { ok: false, message: undone.reason };
      }
      case 'rewind':
        return { ok: true, value: (await rewind())!.view() };
      case 'recall':
        return { ok: true, value: await conversation.recall({ query: 'marker-2-word' }) };
      case 'next':
        await conversation.beginTurn('t9');
        await conversation.append([{ type: 'message', message: user('u9', 'and now?') }]);
        return { ok: true, value: conversation.view() };
    }
  } catch (error) {
    if (ConversationChangedError.isInstance(error)) return { ok: false, message: error.message };
    throw error;
  }
}

const whole = (view: readonly Message[]): void => assert.deepEqual(hollowIn(view), [], 'a message without its content');

describe('read back from files changed at random under an opened conversation (property)', function () {
  this.timeout(300_000);
  let base: string;
  let baseState: Map<string, unknown>;
  let id: string;
  let parts: number;
  const expected = new Map<Op, unknown>();

  const window = (dir: string, state: Map<string, unknown>) =>
    testRegistry(dir, { state, limit: 200_000, summarizer: fixedSummarizer, store: STORE });

  /** A copy of the conversation as built, opened by a new window. */
  async function openedCopy() {
    const dir = await mkdtemp(join(tmpdir(), 'longrun-read-back-run-'));
    await fs.cp(base, dir, { recursive: true });
    const state = new Map(baseState);
    const opened = window(dir, state);
    const conversation = (await opened.registry.find(id))!;
    return { dir, ...opened, conversation, partFile: (part: number) => opened.store.partFile(id, part) };
  }

  before(async () => {
    base = await mkdtemp(join(tmpdir(), 'longrun-read-back-base-'));
    baseState = new Map();
    const built = window(base, baseState);
    const conversation = await built.registry.startNew();
    id = conversation.id;
    await readingTurns(conversation, 1, 6);
    assert.equal((await conversation.compact('manual')).status, 'compacted');
    await readingTurns(conversation, 7, 8);
    parts = (await built.store.size(id)) > 0 ? (await filesOf((p) => built.store.partFile(id, p), 50)).filter(Boolean).length : 0;
    assert.ok(parts >= 3, `${parts} parts`);
    for (const op of OPS) {
      const copy = await openedCopy();
      assert.ok(
        copy.conversation.allRecords().some((r) => r.type === 'message' && r.message.content.length === 0),
        'some messages are on disk only',
      );
      const outcome = await run(op, copy.conversation, () => copy.registry.branch(id, 't3'));
      assert.ok(outcome.ok, `${op} on unchanged files`);
      expected.set(op, outcome.value);
      await rm(copy.dir, { recursive: true, force: true });
    }
  });

  after(async () => {
    await rm(base, { recursive: true, force: true });
  });

  it('succeeds as on unchanged files, or writes nothing and says so; never adds to a changed file, never sends a message without its content', async () => {
    await fc.assert(
      fc.asyncProperty(changeArb, fc.constantFrom(...OPS), async (change, op) => {
        const copy = await openedCopy();
        try {
          const part = 1 + (change.part % parts);
          await apply(change, copy.partFile(part));
          const changed = await filesOf(copy.partFile, parts);

          const outcome = await run(op, copy.conversation, () => copy.registry.branch(id, 't3'));
          const now = await filesOf(copy.partFile, parts);

          if (outcome.ok) {
            assert.deepEqual(outcome.value, expected.get(op), `${op} gives what it gives on unchanged files`);
            if (op === 'undo' || op === 'next') {
              assert.notEqual(part, parts, 'the part written to had changed');
              assert.deepEqual(now.slice(0, -1), changed.slice(0, -1));
              assert.ok(
                now.at(-1)!.length > changed.at(-1)!.length && now.at(-1)!.subarray(0, changed.at(-1)!.length).equals(changed.at(-1)!),
                'only appended to',
              );
            } else assert.deepEqual(now, changed, 'a read writes nothing');
            return;
          }

          assert.match(outcome.message, /^Conversation "id1" was changed on disk by something other than Longrun since this window read it: /);
          assert.doesNotMatch(outcome.message, /ENOENT|EISDIR|undefined/);
          assert.deepEqual(now, changed, 'nothing was written');
          await assert.rejects(copy.conversation.append([{ type: 'message', message: user('u10', 'more') }]), ConversationChangedError.isInstance);
          assert.deepEqual(await filesOf(copy.partFile, parts), changed, 'nothing is written through the out-of-date copy');
          whole(copy.conversation.view());

          // Read again, it is what a new window reads of the files as they are.
          const again = await copy.registry.find(id);
          const fresh = await window(copy.dir, new Map(copy.state)).registry.find(id);
          assert.equal(again === undefined, fresh === undefined);
          if (again && fresh) {
            assert.notEqual(again, copy.conversation);
            whole(again.view());
            assert.deepEqual(again.view(), fresh.view());
          }
        } finally {
          await rm(copy.dir, { recursive: true, force: true });
        }
      }),
      { numRuns: 150 },
    );
  });
});
