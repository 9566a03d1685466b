import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { LogRecord } from '../../../src/core/history';
import { ConversationStore, type RecordLocation } from '../../../src/app/store/conversation-store';
import { ConversationChangedError } from '../../../src/app/store/errors';

const NOW = 1_700_000_000_000;

function message(id: string, body: string): LogRecord {
  return { type: 'message', message: { id, role: 'user', content: [{ type: 'text', text: body }] } };
}

describe('conversation store: files changed by something other than Longrun', () => {
  let dir: string;
  const fileOf = (id: string) => path.join(dir, 'conversations', `${id}.jsonl`);
  const store = () => new ConversationStore(dir, () => NOW, { locateOverBytes: 0 });

  beforeEach(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'longrun-changed-'));
  });
  afterEach(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  /** Conversation c1 of three messages, opened by a store that located each. */
  async function opened(): Promise<{ store: ConversationStore; at: Map<string, RecordLocation>; text: string }> {
    await store().appendAll('c1', [message('m1', 'the first answer'), message('m2', 'the second answer'), message('m3', 'the third')]);
    const mine = store();
    const { log, locations } = await mine.open('c1');
    const at = new Map(log.map((r) => [r.type === 'message' ? r.message.id : '', locations.get(r)!]));
    return { store: mine, at, text: await fs.readFile(fileOf('c1'), 'utf8') };
  }

  const rejectsChanged = (promise: Promise<unknown>, found: RegExp) =>
    assert.rejects(promise, (error: unknown) => {
      assert.ok(ConversationChangedError.isInstance(error), String(error));
      assert.match(error.message, /^Conversation "c1" was changed on disk by something other than Longrun since this window read it: /);
      assert.match(error.message, found);
      assert.doesNotMatch(error.message, /ENOENT/);
      return true;
    });

  describe('reading a message back', () => {
    it('gives it back from the very line it located', async () => {
      const { store: mine, at } = await opened();
      assert.deepEqual(await mine.readAt('c1', [{ at: at.get('m2')!, messageId: 'm2' }]), [message('m2', 'the second answer')]);
    });

    it('refuses that line changed in place at the same length, though it still reads as a record', async () => {
      const { store: mine, at, text } = await opened();
      await fs.writeFile(fileOf('c1'), text.replace('the first answer', 'the first ANSWER'));
      await rejectsChanged(
        mine.readAt('c1', [{ at: at.get('m1')!, messageId: 'm1' }]),
        /the line at byte \d+ of .*c1\.jsonl is no longer the message "m1" Longrun read there\.$/,
      );
    });

    it('refuses another message at the same place, located without a check too', async () => {
      const { store: mine, at, text } = await opened();
      await fs.writeFile(fileOf('c1'), text.replace('"m2"', '"m9"'));
      const { check: _check, ...where } = at.get('m2')!;
      await rejectsChanged(mine.readAt('c1', [{ at: where, messageId: 'm2' }]), /no longer the message "m2"/);
      await rejectsChanged(mine.readAt('c1', [{ at: at.get('m2')!, messageId: 'm2' }]), /no longer the message "m2"/);
    });

    it('says a deleted file was deleted or moved, not ENOENT', async () => {
      const { store: mine, at } = await opened();
      await fs.rm(fileOf('c1'));
      await rejectsChanged(mine.readAt('c1', [{ at: at.get('m1')!, messageId: 'm1' }]), /c1\.jsonl was deleted or moved\.$/);
    });
  });

  describe('appending', () => {
    it('refuses a file replaced by another of the same size, and leaves it as it is', async () => {
      const { store: mine, text } = await opened();
      const other = text.replace('the first answer', 'ANOTHER answer!!');
      await fs.writeFile(`${fileOf('c1')}.new`, other);
      await fs.rename(`${fileOf('c1')}.new`, fileOf('c1'));
      await rejectsChanged(mine.append('c1', message('m4', 'next')), /c1\.jsonl was replaced or cut short\.$/);
      assert.equal(await fs.readFile(fileOf('c1'), 'utf8'), other);
    });

    it('refuses a file rewritten in place at the same size', async () => {
      const { store: mine, text } = await opened();
      const other = text.replace('the first answer', 'ANOTHER answer!!');
      await fs.writeFile(fileOf('c1'), other);
      // A rewrite moves the file's time on, however coarse the system's clock.
      const later = new Date(NOW + 60_000);
      await fs.utimes(fileOf('c1'), later, later);
      await rejectsChanged(mine.append('c1', message('m4', 'next')), /c1\.jsonl was rewritten\.$/);
      assert.equal(await fs.readFile(fileOf('c1'), 'utf8'), other);
    });

    it('refuses a file cut short', async () => {
      const { store: mine, text } = await opened();
      const cut = text.slice(0, text.lastIndexOf('{'));
      await fs.writeFile(fileOf('c1'), cut);
      await rejectsChanged(mine.append('c1', message('m4', 'next')), /replaced or cut short\.$/);
      assert.equal(await fs.readFile(fileOf('c1'), 'utf8'), cut);
    });

    it('refuses a file deleted since it was read, and makes no file again', async () => {
      const { store: mine } = await opened();
      await fs.rm(fileOf('c1'));
      await rejectsChanged(mine.append('c1', message('m4', 'next')), /c1\.jsonl was deleted or moved\.$/);
      assert.equal(await mine.exists('c1'), false);
    });

    it('refuses a file that holds another conversation, even read anew, and leaves it as it is', async () => {
      await store().append('c2', message('o1', 'of another conversation'));
      const other = await fs.readFile(path.join(dir, 'conversations', 'c2.jsonl'), 'utf8');
      await fs.writeFile(fileOf('c1'), other);
      const mine = store();
      const { problems } = await mine.open('c1');
      assert.match(problems.join('\n'), /Line 1 of conversation "c1" could not be read \(the header names conversation "c2"\)/);
      await rejectsChanged(mine.append('c1', message('m4', 'next')), /c1\.jsonl now holds conversation "c2"\.$/);
      assert.equal(await fs.readFile(fileOf('c1'), 'utf8'), other);
    });

    it('adds to a file changed before it was last read, and after its own appends', async () => {
      const { store: mine, text } = await opened();
      await fs.writeFile(fileOf('c1'), text.replace('the first answer', 'the first ANSWER'));
      await assert.rejects(mine.append('c1', message('m4', 'next')), ConversationChangedError.isInstance);
      await mine.open('c1');
      await mine.append('c1', message('m4', 'next'));
      await mine.append('c1', message('m5', 'and the one after'));
      const { log } = await store().open('c1');
      assert.deepEqual(
        log.map((r) => (r.type === 'message' ? r.message.id : '')),
        ['m1', 'm2', 'm3', 'm4', 'm5'],
      );
    });
  });
});
