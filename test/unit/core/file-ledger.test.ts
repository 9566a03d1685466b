import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  EMPTY_LEDGER,
  ledgerFromThread,
  parseLedger,
  recordFileEvent,
  recordFileEvents,
  renderFileOperations,
  type Actor,
  type FileEvent,
  type FileLedger,
  type FileOpKind,
} from '../../../src/core/file-ledger';

let clock = 1_000;
function ev(kind: FileOpKind, path: string, actor: Actor = 'agent', from?: string): FileEvent {
  clock += 1;
  return from === undefined ? { kind, path, actor, at: clock } : { kind, path, actor, at: clock, from };
}
const rename = (from: string, to: string, actor: Actor = 'agent'): FileEvent => ev('renamed', to, actor, from);

function ledgerOf(...events: FileEvent[]): FileLedger {
  return recordFileEvents(EMPTY_LEDGER, events);
}

/** The lines between the opening and closing tag of one section. */
function section(text: string, name: 'read-files' | 'modified-files'): string[] {
  const lines = text.split('\n');
  const open = lines.indexOf(`<${name}>`);
  const close = lines.indexOf(`</${name}>`);
  assert.ok(open >= 0 && close > open, `section ${name} missing in:\n${text}`);
  return lines.slice(open + 1, close);
}

function render(...events: FileEvent[]): { read: string[]; modified: string[]; text: string } {
  const text = renderFileOperations(ledgerOf(...events));
  return { read: section(text, 'read-files'), modified: section(text, 'modified-files'), text };
}

describe('file ledger', () => {
  describe('rendering', () => {
    it('renders both sections, empty, for the empty ledger', () => {
      assert.equal(renderFileOperations(EMPTY_LEDGER), '<read-files>\n</read-files>\n<modified-files>\n</modified-files>');
    });

    it('lists files that were only read under read-files', () => {
      const out = render(ev('read', 'src/a.ts'), ev('read', 'src/b.ts'), ev('read', 'src/a.ts'));
      assert.deepEqual(out.read, ['src/a.ts', 'src/b.ts']);
      assert.deepEqual(out.modified, []);
    });

    it('moves a file that was read and then edited to modified-files only', () => {
      const out = render(ev('read', 'src/a.ts'), ev('modified', 'src/a.ts'));
      assert.deepEqual(out.read, []);
      assert.deepEqual(out.modified, ['src/a.ts (modified)']);
    });

    it('marks created, modified and deleted files with their status', () => {
      const out = render(ev('created', 'b.ts'), ev('modified', 'c.ts'), ev('deleted', 'd.ts'));
      assert.deepEqual(out.modified, ['b.ts (created)', 'c.ts (modified)', 'd.ts (deleted)']);
    });

    it('keeps a created file "created" after later edits', () => {
      const out = render(ev('created', 'n.ts'), ev('modified', 'n.ts'), ev('read', 'n.ts'));
      assert.deepEqual(out.modified, ['n.ts (created)']);
      assert.deepEqual(out.read, []);
    });

    it('shows a file created and then deleted as deleted, never as alive', () => {
      const ledger = ledgerOf(ev('created', 'tmp.ts'), ev('modified', 'tmp.ts'), ev('deleted', 'tmp.ts'));
      assert.equal(ledger.files['tmp.ts']?.deleted, true);
      const text = renderFileOperations(ledger);
      assert.deepEqual(section(text, 'modified-files'), ['tmp.ts (deleted)']);
      assert.deepEqual(section(text, 'read-files'), []);
    });

    it('keeps a deleted file deleted when it is read afterwards', () => {
      const out = render(ev('deleted', 'gone.ts'), ev('read', 'gone.ts'));
      assert.deepEqual(out.modified, ['gone.ts (deleted)']);
      assert.deepEqual(out.read, []);
    });

    it('shows a file deleted and then created again as created and alive', () => {
      const ledger = ledgerOf(ev('modified', 'x.ts'), ev('deleted', 'x.ts'), ev('created', 'x.ts'));
      assert.equal(ledger.files['x.ts']?.deleted, false);
      assert.equal(ledger.files['x.ts']?.created, true);
      assert.deepEqual(section(renderFileOperations(ledger), 'modified-files'), ['x.ts (created)']);
    });

    it('revives a deleted file as created when it is edited again', () => {
      const ledger = ledgerOf(ev('deleted', 'x.ts', 'user'), ev('modified', 'x.ts', 'user'));
      assert.equal(ledger.files['x.ts']?.deleted, false);
      assert.deepEqual(section(renderFileOperations(ledger), 'modified-files'), ['x.ts (created; user)']);
    });

    it('notes the user alone as "; user", both actors as "; agent and user", the agent alone not at all', () => {
      const ledger = ledgerOf(
        ev('modified', 'agent.ts', 'agent'),
        ev('modified', 'user.ts', 'user'),
        ev('modified', 'user.ts', 'user'),
        ev('modified', 'both.ts', 'user'),
        ev('modified', 'both.ts', 'agent'),
      );
      assert.deepEqual(section(renderFileOperations(ledger), 'modified-files'), [
        'agent.ts (modified)',
        'both.ts (modified; agent and user)',
        'user.ts (modified; user)',
      ]);
      assert.deepEqual(ledger.files['both.ts']?.actors, ['agent', 'user']);
      assert.deepEqual(ledger.files['user.ts']?.actors, ['user']);
    });

    it('renders the full format sorted by path, without timestamps', () => {
      const text = renderFileOperations(
        ledgerOf(
          ev('deleted', 'docs/x.md'),
          ev('read', 'src/old.ts'),
          rename('src/old.ts', 'src/new.ts'),
          ev('modified', 'src/new.ts'),
          ev('modified', 'src/c.ts', 'user'),
          ev('created', 'src/b.ts'),
          ev('read', 'src/a.ts'),
        ),
      );
      assert.equal(
        text,
        [
          '<read-files>',
          'src/a.ts',
          '</read-files>',
          '<modified-files>',
          'docs/x.md (deleted)',
          'src/b.ts (created)',
          'src/c.ts (modified; user)',
          'src/old.ts → src/new.ts (renamed, modified)',
          '</modified-files>',
        ].join('\n'),
      );
      assert.doesNotMatch(text, /\d{4}/);
    });

    it('keeps each file on one line when its name holds a newline', () => {
      const out = render(ev('read', 'a\nb.ts'));
      assert.deepEqual(out.read, ['a\\nb.ts']);
    });
  });

  describe('renames', () => {
    it('moves the record to the new name with its history, counting reads of the old name', () => {
      const ledger = ledgerOf(ev('read', 'old.ts'), ev('modified', 'old.ts'), rename('old.ts', 'new.ts'));
      assert.equal(ledger.files['old.ts'], undefined);
      const record = ledger.files['new.ts'];
      assert.equal(record?.read, true);
      assert.equal(record?.modified, true);
      assert.deepEqual(record?.renamedFrom, ['old.ts']);
      const text = renderFileOperations(ledger);
      assert.deepEqual(section(text, 'read-files'), []);
      assert.deepEqual(section(text, 'modified-files'), ['old.ts → new.ts (renamed, modified)']);
    });

    it('follows rename chains and shows the oldest name', () => {
      const ledger = ledgerOf(ev('created', 'a.ts'), rename('a.ts', 'b.ts'), rename('b.ts', 'c.ts', 'user'));
      assert.deepEqual(Object.keys(ledger.files), ['c.ts']);
      assert.deepEqual(ledger.files['c.ts']?.renamedFrom, ['a.ts', 'b.ts']);
      assert.deepEqual(section(renderFileOperations(ledger), 'modified-files'), ['a.ts → c.ts (renamed, created; agent and user)']);
    });

    it('creates a record for a rename of a file never seen before', () => {
      const ledger = ledgerOf(rename('x.ts', 'y.ts', 'user'));
      assert.deepEqual(ledger.files['y.ts'], {
        path: 'y.ts',
        read: false,
        created: false,
        modified: false,
        deleted: false,
        renamedFrom: ['x.ts'],
        actors: ['user'],
        lastAt: clock,
      });
      assert.deepEqual(section(renderFileOperations(ledger), 'modified-files'), ['x.ts → y.ts (renamed; user)']);
    });

    it('merges with a record already at the new name, which comes back to life', () => {
      const ledger = ledgerOf(
        ev('read', 'target.ts', 'user'),
        ev('deleted', 'target.ts', 'user'),
        ev('modified', 'src.ts'),
        rename('src.ts', 'target.ts'),
      );
      assert.deepEqual(Object.keys(ledger.files), ['target.ts']);
      const record = ledger.files['target.ts'];
      assert.equal(record?.read, true);
      assert.equal(record?.modified, true);
      assert.equal(record?.deleted, false);
      assert.deepEqual(record?.actors, ['agent', 'user']);
      assert.deepEqual(record?.renamedFrom, ['src.ts']);
    });

    it('revives a file recorded as deleted when it is renamed, as a new file', () => {
      const ledger = ledgerOf(ev('deleted', 'a.ts'), rename('a.ts', 'b.ts'));
      assert.equal(ledger.files['b.ts']?.deleted, false);
      assert.deepEqual(section(renderFileOperations(ledger), 'modified-files'), ['a.ts → b.ts (renamed, created)']);
    });

    it('cancels a rename back to an earlier name', () => {
      const ledger = ledgerOf(ev('read', 'a.ts'), rename('a.ts', 'b.ts'), rename('b.ts', 'a.ts'));
      assert.deepEqual(Object.keys(ledger.files), ['a.ts']);
      assert.equal(ledger.files['a.ts']?.renamedFrom, undefined);
      assert.deepEqual(section(renderFileOperations(ledger), 'read-files'), ['a.ts']);
      const unseen = ledgerOf(rename('x.ts', 'y.ts'), rename('y.ts', 'x.ts'));
      assert.equal(renderFileOperations(unseen), renderFileOperations(EMPTY_LEDGER), 'no net change is listed');
    });

    it('starts a new record for events at the old name after the rename', () => {
      const ledger = ledgerOf(ev('modified', 'a.ts'), rename('a.ts', 'b.ts'), ev('created', 'a.ts'));
      assert.deepEqual(section(renderFileOperations(ledger), 'modified-files'), ['a.ts (created)', 'a.ts → b.ts (renamed, modified)']);
    });
  });

  describe('path normalisation', () => {
    it('turns backslashes into slashes, drops a leading ./ and collapses duplicate slashes', () => {
      const ledger = ledgerOf(
        ev('read', 'src\\core\\a.ts'),
        ev('read', './src/core/a.ts'),
        ev('read', 'src//core///a.ts'),
        ev('modified', '.\\src\\b.ts'),
      );
      assert.deepEqual(Object.keys(ledger.files), ['src/b.ts', 'src/core/a.ts']);
    });

    it('leaves .. segments alone', () => {
      assert.deepEqual(Object.keys(ledgerOf(ev('read', 'a/../b.ts')).files), ['a/../b.ts']);
    });

    it('normalises both names of a rename', () => {
      const ledger = ledgerOf(ev('read', 'src/a.ts'), rename('.\\src\\a.ts', 'src//b.ts'));
      assert.deepEqual(Object.keys(ledger.files), ['src/b.ts']);
      assert.deepEqual(ledger.files['src/b.ts']?.renamedFrom, ['src/a.ts']);
    });

    it('ignores events without a usable path', () => {
      const before = ledgerOf(ev('read', 'a.ts'));
      const after = recordFileEvents(before, [ev('read', ''), ev('read', './'), ev('renamed', 'b.ts'), rename('a.ts', 'a.ts')]);
      assert.deepEqual(after, before);
    });
  });

  describe('immutability', () => {
    it('returns new values and never changes its inputs', () => {
      const emptyJson = JSON.stringify(EMPTY_LEDGER);
      const one = recordFileEvent(EMPTY_LEDGER, ev('read', 'a.ts'));
      const oneJson = JSON.stringify(one);
      const two = recordFileEvent(one, ev('modified', 'a.ts'));
      assert.notEqual(two, one);
      assert.equal(JSON.stringify(EMPTY_LEDGER), emptyJson);
      assert.equal(JSON.stringify(one), oneJson);
      assert.equal(one.files['a.ts']?.modified, false);
      assert.equal(two.files['a.ts']?.modified, true);
      assert.equal(JSON.stringify(one), oneJson);
      assert.ok(Object.isFrozen(two) && Object.isFrozen(two.files) && Object.isFrozen(two.files['a.ts']));
    });

    it('stores awkward names such as __proto__ as ordinary records', () => {
      const ledger = ledgerOf(ev('read', '__proto__'), ev('read', 'constructor'));
      assert.deepEqual(Object.keys(ledger.files), ['__proto__', 'constructor']);
      assert.equal(Object.getPrototypeOf(ledger.files), Object.prototype);
      assert.deepEqual(section(renderFileOperations(ledger), 'read-files'), ['__proto__', 'constructor']);
    });
  });

  describe('determinism', () => {
    it('renders the same ledger byte-identically', () => {
      const ledger = ledgerOf(ev('read', 'b.ts'), ev('created', 'a.ts', 'user'), rename('c.ts', 'd.ts'));
      assert.equal(renderFileOperations(ledger), renderFileOperations(ledger));
      assert.equal(renderFileOperations(ledger), renderFileOperations(parseLedger(JSON.parse(JSON.stringify(ledger)))!));
    });

    it('sorts by path even when a stored ledger holds its keys in another order', () => {
      const record = (path: string) => ({ path, read: true, created: false, modified: false, deleted: false, actors: ['agent' as const], lastAt: 1 });
      const ledger: FileLedger = { version: 1, files: { 'z.ts': record('z.ts'), 'a.ts': record('a.ts') } };
      assert.deepEqual(section(renderFileOperations(ledger), 'read-files'), ['a.ts', 'z.ts']);
    });

    it('renders and serialises identically when independent events arrive in another order', () => {
      const first = ledgerOf(
        { kind: 'read', path: 'z.ts', actor: 'agent', at: 5 },
        { kind: 'modified', path: 'a.ts', actor: 'user', at: 6 },
        { kind: 'modified', path: 'a.ts', actor: 'agent', at: 7 },
        { kind: 'deleted', path: 'm.ts', actor: 'agent', at: 8 },
      );
      const second = ledgerOf(
        { kind: 'deleted', path: 'm.ts', actor: 'agent', at: 8 },
        { kind: 'modified', path: 'a.ts', actor: 'agent', at: 7 },
        { kind: 'modified', path: 'a.ts', actor: 'user', at: 6 },
        { kind: 'read', path: 'z.ts', actor: 'agent', at: 5 },
      );
      assert.equal(renderFileOperations(first), renderFileOperations(second));
      assert.equal(JSON.stringify(first), JSON.stringify(second));
    });

    it('renders identically whether a file was read before or after being edited', () => {
      const readFirst = render(ev('read', 'a.ts'), ev('modified', 'a.ts'), ev('read', 'b.ts'));
      const editFirst = render(ev('read', 'b.ts'), ev('modified', 'a.ts'), ev('read', 'a.ts'));
      assert.equal(readFirst.text, editFirst.text);
    });
  });

  describe('parseLedger', () => {
    it('accepts a recorded ledger after a JSON round trip and gives back an equal ledger', () => {
      const ledger = ledgerOf(
        ev('read', 'a.ts'),
        ev('modified', 'b.ts', 'user'),
        ev('created', 'c.ts'),
        ev('deleted', 'c.ts'),
        rename('d.ts', 'e.ts'),
        rename('e.ts', 'f.ts', 'user'),
      );
      const reloaded = parseLedger(JSON.parse(JSON.stringify(ledger)));
      assert.ok(reloaded);
      assert.deepEqual(reloaded, ledger);
      assert.equal(renderFileOperations(reloaded), renderFileOperations(ledger));
      assert.equal(JSON.stringify(reloaded), JSON.stringify(ledger));
    });

    it('takes a ledger recorded here as it is, and checks a copy of it as stored data', () => {
      const ledger = ledgerOf(ev('modified', 'a.ts'), rename('b.ts', 'c.ts'), ev('read', 'd.ts', 'user'));
      assert.equal(parseLedger(ledger), ledger, 'a ledger made here is valid for good: it is not made again');
      const copy = { ...ledger, files: { ...ledger.files, 'a.ts': { ...ledger.files['a.ts']!, actors: [] } } };
      assert.equal(parseLedger(copy), undefined, 'a copy is checked, and one with no actor refused');
      assert.deepEqual(parseLedger(JSON.parse(JSON.stringify(ledger))), ledger);
    });

    it('takes a ledger made on the compaction worker and copied over as made here, frozen through and through', () => {
      const ledger = ledgerOf(ev('modified', 'a.ts'), rename('b.ts', 'c.ts'), rename('c.ts', 'e.ts', 'user'), ev('read', 'd.ts', 'user'));
      const copied = structuredClone(ledger);
      assert.notEqual(parseLedger(copied), copied, 'a copy between threads is not taken as it is by itself');
      const fromWorker = ledgerFromThread(structuredClone(ledger));
      assert.deepEqual(fromWorker, ledger);
      assert.equal(JSON.stringify(fromWorker), JSON.stringify(ledger));
      assert.equal(parseLedger(fromWorker), fromWorker, 'not checked again when the record that carries it is stored');
      assert.ok(Object.isFrozen(fromWorker) && Object.isFrozen(fromWorker.files));
      for (const record of Object.values(fromWorker.files)) {
        assert.ok(
          Object.isFrozen(record) && Object.isFrozen(record.actors) && (!record.renamedFrom || Object.isFrozen(record.renamedFrom)),
          record.path,
        );
      }
      assert.ok(fromWorker.files['e.ts']?.renamedFrom?.length, 'the renames came over');
    });

    it('accepts every ledger that recorded events produce, after a JSON round trip', () => {
      const paths = ['a', 'b', 'c/d'];
      const event = fc.record({
        kind: fc.constantFrom<FileOpKind>('read', 'created', 'modified', 'deleted', 'renamed'),
        path: fc.constantFrom(...paths),
        from: fc.constantFrom(...paths),
        actor: fc.constantFrom<Actor>('agent', 'user'),
        at: fc.integer({ min: 0, max: 1_000 }),
      });
      fc.assert(
        fc.property(fc.array(event, { maxLength: 20 }), (events) => {
          const ledger = ledgerOf(...events);
          assert.deepEqual(parseLedger(JSON.parse(JSON.stringify(ledger))), ledger);
        }),
        { numRuns: 300 },
      );
    });

    const good = (): Record<string, unknown> =>
      JSON.parse(JSON.stringify(ledgerOf(ev('modified', 'a.ts'), rename('b.ts', 'c.ts')))) as Record<string, unknown>;
    const fileA = (data: Record<string, unknown>): Record<string, unknown> => (data.files as Record<string, Record<string, unknown>>)['a.ts']!;

    const corruptions: [string, (data: Record<string, unknown>) => unknown][] = [
      ['null', () => null],
      ['a string', () => 'ledger'],
      ['an array', () => []],
      ['a wrong version', (d) => ({ ...d, version: 2 })],
      ['a missing version', (d) => ({ files: d.files })],
      ['files that are an array', (d) => ({ ...d, files: [] })],
      ['missing files', () => ({ version: 1 })],
      ['a record that is not an object', (d) => ({ ...d, files: { 'a.ts': 'modified' } })],
      ['a flag that is a string', (d) => ((fileA(d).modified = 'yes'), d)],
      ['a missing flag', (d) => (delete fileA(d).deleted, d)],
      ['an unknown actor', (d) => ((fileA(d).actors = ['robot']), d)],
      ['no actor', (d) => ((fileA(d).actors = []), d)],
      ['a lastAt that is not a number', (d) => ((fileA(d).lastAt = '12'), d)],
      ['a lastAt of null (NaN after JSON)', (d) => ((fileA(d).lastAt = null), d)],
      ['renamedFrom that is a string', (d) => ((fileA(d).renamedFrom = 'b.ts'), d)],
      ['a key that differs from its record path', (d) => ((fileA(d).path = 'other.ts'), d)],
    ];
    for (const [name, corrupt] of corruptions) {
      it(`rejects stored data with ${name}`, () => {
        assert.ok(parseLedger(good()), 'the uncorrupted data parses');
        assert.equal(parseLedger(corrupt(good())), undefined);
      });
    }
  });
});
