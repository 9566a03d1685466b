import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { user } from '../core/fixtures';
import { testRegistry } from '../fixtures/conversation-deps';

describe('the conversations a window has loaded', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'longrun-registry-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const registry = (state = new Map<string, unknown>()) => testRegistry(dir, { state });

  it('gives each leaf turn one branch object, reused while the chat goes on, and a new one for an earlier turn', async () => {
    const { registry: r } = registry();
    const conversation = await r.startNew();
    await conversation.beginTurn('t1');
    await conversation.append([{ type: 'message', message: user('u1', 'one') }]);
    await conversation.beginTurn('t2');
    assert.equal(await r.branch(conversation.id, 't2'), conversation, 'the chat went on from its own leaf');
    const rewound = await r.branch(conversation.id, 't1');
    assert.notEqual(rewound, conversation);
    assert.equal(rewound?.leaf(), 't1');
    assert.equal(r.currentIfLoaded(), rewound, 'the branch used last is the current one');
    // Both share the records: what one writes, the other's conversation holds on disk too.
    await rewound!.beginTurn('t3');
    assert.equal(conversation.allRecords().length, rewound!.allRecords().length);
    assert.deepEqual(
      conversation.log().map((rec) => rec.type),
      ['turn', 'message', 'turn'],
    );
  });

  it('keeps one engine memo per conversation while it is loaded: its branches share it, another conversation has its own', async () => {
    const { registry: r } = registry();
    const conversation = await r.startNew();
    const memo = conversation.memo();
    await conversation.beginTurn('t1');
    await conversation.append([{ type: 'message', message: user('u1', 'one') }]);
    await conversation.beginTurn('t2');
    assert.equal(conversation.memo(), memo, 'the same memo as the conversation grows');
    const rewound = await r.branch(conversation.id, 't1');
    assert.notEqual(rewound, conversation);
    assert.equal(rewound?.memo(), memo, 'a branch shares the memo of its records');
    const other = await r.startNew();
    assert.notEqual(other.memo(), memo, 'another conversation remembers for itself');
  });

  it('opens a conversation on the turn started last after a reload, and remembers which one was current', async () => {
    const state = new Map<string, unknown>();
    const first = registry(state);
    const conversation = await first.registry.startNew();
    await conversation.beginTurn('t1');
    await conversation.beginTurn('t2');
    const reloaded = registry(state).registry;
    const current = await reloaded.current();
    assert.equal(current?.id, conversation.id);
    assert.equal(current?.leaf(), 't2');
  });

  it('says a conversation could not be opened, and starts nothing in its place', async () => {
    const { registry: r } = registry();
    assert.equal(await r.branch('missing-id', null), undefined);
    assert.equal(await r.hasTurn('missing-id', 't1'), false);
  });

  it('keeps at most eight branches of one conversation, dropping the least recently used, never the current one', async () => {
    const { registry: r } = registry();
    const conversation = await r.startNew();
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) {
      await conversation.beginTurn(`t${i}`);
      ids.push(`t${i}`);
    }
    const seen = new Set<unknown>();
    for (const id of ids) seen.add(await r.branch(conversation.id, id));
    // The first branches were dropped: asking for them again makes a new object.
    const again = await r.branch(conversation.id, 't0');
    assert.ok(!seen.has(again), 'an evicted branch is made anew');
    // The latest ones are still loaded.
    assert.equal(await r.branch(conversation.id, 't11'), await r.branch(conversation.id, 't11'));
    const latest = await r.branch(conversation.id, 't10');
    assert.ok(seen.has(latest));
    assert.equal(r.currentIfLoaded(), latest, 'the branch asked for last is the current one');
  });
});
