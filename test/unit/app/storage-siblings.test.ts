import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConversationStore } from '../../../src/app/store/conversation-store';
import { user } from '../core/fixtures';

/**
 * VS Code gives a window's extension host the workspace's storage folder, or `<folder>-1`, `-2`…
 * while an earlier extension host still holds it: a window reloaded quickly stores in another folder
 * than the one before it. A conversation must be found, and continued where it is, whichever
 * folder this window got.
 */
describe("a conversation in another of the workspace's storage folders", () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'longrun-siblings-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('is found and continued in place by a window given the folder with a suffix, and the other way round', async () => {
    const first = new ConversationStore(join(dir, '5c172500'), () => 1);
    await first.create('c1');
    await first.append('c1', { type: 'message', message: user('u1', 'remember ALPHA-7') });

    const reloaded = new ConversationStore(join(dir, '5c172500-2'), () => 2);
    assert.equal(await reloaded.exists('c1'), true);
    await reloaded.append('c1', { type: 'message', message: user('u2', 'remember BRAVO-9') });
    const { log } = await reloaded.open('c1');
    assert.deepEqual(
      log.map((r) => (r.type === 'message' ? r.message.id : r.type)),
      ['u1', 'u2'],
    );
    // Continued where it was, not copied.
    assert.deepEqual(await readdir(join(dir, '5c172500-2', 'conversations')).catch(() => []), []);

    await reloaded.create('c2');
    await reloaded.append('c2', { type: 'message', message: user('v1', 'started in the reloaded window') });
    const later = new ConversationStore(join(dir, '5c172500'), () => 3);
    assert.equal((await later.open('c2')).log.length, 1);
  });

  it('is not looked for in the folders of other workspaces', async () => {
    const other = new ConversationStore(join(dir, 'aaaa0000'), () => 1);
    await other.create('c1');
    const mine = new ConversationStore(join(dir, '5c172500'), () => 1);
    assert.equal(await mine.exists('c1'), false);
  });
});
