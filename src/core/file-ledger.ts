import { lazily } from './lazy';
import { z } from 'zod';
import { isRecord } from './errors';
import { normalizePath } from './text';

/**
 * A deterministic record of the file operations in a conversation, carried through compaction so
 * the summary never depends on what the model chose to write about files.
 *
 * The ledger is fed events from the agent's tools (read_file, create_file, edit_file …) and from
 * the editor (user edits, saves, file create/delete/rename), each marked `agent` or `user`. Every
 * operation is pure: it returns a new, frozen value and never changes its arguments. A ledger is
 * plain JSON, so it can be stored inside a compaction entry and reloaded with {@link parseLedger}.
 *
 * State of one record (one file, keyed by its current path):
 * - `read`: the file was read (under this or an earlier name).
 * - `created`: the file came into existence during the tracked history (a new file). It stays set
 *   through later edits, so "created then modified" is still created.
 * - `modified`: an edit was recorded. Never cleared.
 * - `deleted`: the file is gone *now*. A create, an edit, or a rename onto the path brings it back
 *   (`deleted` false); a read does not (a read of a deleted path proves nothing).
 * - `renamedFrom`: earlier names, oldest first; absent when the file was never renamed.
 * - `actors`: who touched the file, sorted and unique; `lastAt`: the latest event time seen.
 *
 * Event rules:
 * - `read` sets `read`.
 * - `created` sets `created` and clears `deleted` (deleted then created again → alive, created).
 * - `modified` sets `modified`; on a deleted file it also revives it as a new file (`created`
 *   set, `deleted` cleared), since the file exists again.
 * - `deleted` sets `deleted`; `created`/`modified` stay as history, but rendering shows a deleted
 *   file only as deleted.
 * - `renamed` (`from` → `path`) moves the record at `from` to `path` with all its history (reads of
 *   the old name count as reads of the new one; a record that was deleted revives as created, as
 *   for an edit) and appends `from` to `renamedFrom`, so chains
 *   a→b→c give `[a, b]`. A rename of an unseen file creates a record with `renamedFrom: [from]`.
 *   When a record already exists at `path`, the two are merged: flags and actors combined, the
 *   later `lastAt` kept, the moved file's names first, then the replaced record's earlier names.
 *   Renaming back to an earlier name cancels the chain from that name on (a→b→a leaves no
 *   `renamedFrom`: there is no net rename). Events for `from` after the rename start a new record.
 *
 * Invalid events (an empty path, a rename without `from` or onto itself, an unknown kind) are
 * ignored rather than thrown: the ledger must never break compaction. A non-finite `at` counts as 0.
 */

export const FILE_OP_KINDS = ['read', 'created', 'modified', 'deleted', 'renamed'] as const;
export type FileOpKind = (typeof FILE_OP_KINDS)[number];
export const ACTORS = ['agent', 'user'] as const;
export type Actor = (typeof ACTORS)[number];

export interface FileEvent {
  kind: FileOpKind;
  /** Workspace-relative path; for `renamed`, the new path. */
  path: string;
  actor: Actor;
  /** Milliseconds since the epoch, given by the caller. */
  at: number;
  /** For `renamed`: the old path. */
  from?: string;
  /**
   * Set when the event is the user's revert of Longrun's changes: the file no longer holds what the
   * agent wrote, so a write's content is no longer to be found there.
   */
  revert?: true;
}

export interface FileRecord {
  path: string;
  read: boolean;
  created: boolean;
  modified: boolean;
  deleted: boolean;
  /** Earlier names, oldest first. Absent when the file was never (net) renamed. */
  renamedFrom?: string[];
  /** Sorted, unique. */
  actors: Actor[];
  lastAt: number;
}

export interface FileLedger {
  readonly version: 1;
  /** Keyed by each record's `path`; keys are kept in sorted order so JSON output is stable. */
  readonly files: Readonly<Record<string, FileRecord>>;
}

export const EMPTY_LEDGER: FileLedger = Object.freeze({ version: 1, files: Object.freeze({}) });

type Files = Map<string, FileRecord>;

const KNOWN_KINDS: ReadonlySet<string> = new Set<string>(FILE_OP_KINDS);
const KNOWN_ACTORS: ReadonlySet<string> = new Set<string>(ACTORS);

function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function toMap(ledger: FileLedger): Files {
  return new Map(Object.entries(ledger.files));
}

function unionActors(...lists: (readonly Actor[])[]): Actor[] {
  const set = new Set<Actor>();
  for (const list of lists) for (const actor of list) set.add(actor);
  return [...set].sort(compareStrings);
}

/** Cuts a name chain at the first occurrence of `path` (renaming back cancels the detour). */
function truncateAt(path: string, names: readonly string[]): string[] {
  const index = names.indexOf(path);
  return index < 0 ? [...names] : names.slice(0, index);
}

/** Removes duplicates (first occurrence wins) and the current path itself. */
function cleanChain(path: string, names: readonly string[]): string[] {
  const seen = new Set<string>([path]);
  const out: string[] = [];
  for (const name of names) {
    if (seen.has(name)) continue;
    seen.add(name);
    out.push(name);
  }
  return out;
}

function makeRecord(fields: {
  path: string;
  read: boolean;
  created: boolean;
  modified: boolean;
  deleted: boolean;
  renamedFrom: readonly string[];
  actors: readonly Actor[];
  lastAt: number;
}): FileRecord {
  // A fixed key order (renamedFrom only when present) keeps the JSON text stable.
  const record: FileRecord = {
    path: fields.path,
    read: fields.read,
    created: fields.created,
    modified: fields.modified,
    deleted: fields.deleted,
    ...(fields.renamedFrom.length > 0 ? { renamedFrom: Object.freeze([...fields.renamedFrom]) as string[] } : {}),
    actors: Object.freeze(unionActors(fields.actors)) as Actor[],
    lastAt: fields.lastAt,
  };
  return Object.freeze(record);
}

function blank(path: string, at: number): FileRecord {
  return makeRecord({
    path,
    read: false,
    created: false,
    modified: false,
    deleted: false,
    renamedFrom: [],
    actors: [],
    lastAt: at,
  });
}

/**
 * The ledgers made here: frozen through and through, from records made here, so valid for good; a
 * record that carries one is checked before it is stored without checking its ledger again.
 */
const made = new WeakSet<FileLedger>();

function freezeLedger(files: Files): FileLedger {
  const entries = [...files.entries()].sort(([a], [b]) => compareStrings(a, b));
  // Object.fromEntries defines own properties, so even a path like `__proto__` is stored safely.
  const ledger: FileLedger = Object.freeze({ version: 1, files: Object.freeze(Object.fromEntries(entries)) });
  made.add(ledger);
  return ledger;
}

function applyEvent(files: Files, event: FileEvent): void {
  if (event === null || typeof event !== 'object') return;
  if (!KNOWN_KINDS.has(event.kind) || !KNOWN_ACTORS.has(event.actor) || typeof event.path !== 'string') return;
  const path = normalizePath(event.path);
  if (path === '') return;
  const at = typeof event.at === 'number' && Number.isFinite(event.at) ? event.at : 0;

  if (event.kind === 'renamed') {
    if (typeof event.from !== 'string') return;
    const from = normalizePath(event.from);
    if (from === '' || from === path) return;
    const moved = files.get(from);
    const target = files.get(path);
    files.delete(from);
    const base = moved ?? blank(path, at);
    const chain = cleanChain(path, [...truncateAt(path, [...(moved?.renamedFrom ?? []), from]), ...(target?.renamedFrom ?? [])]);
    files.set(
      path,
      makeRecord({
        path,
        read: base.read || (target?.read ?? false),
        // A file recorded as deleted that is renamed must exist again: it revives as a new file.
        created: base.created || base.deleted || (target?.created ?? false),
        modified: base.modified || (target?.modified ?? false),
        // The rename proves a file now exists at `path`.
        deleted: false,
        renamedFrom: chain,
        actors: unionActors(base.actors, target?.actors ?? [], [event.actor]),
        lastAt: Math.max(base.lastAt, target?.lastAt ?? at, at),
      }),
    );
    return;
  }

  const prev = files.get(path) ?? blank(path, at);
  let { read, created, modified, deleted } = prev;
  switch (event.kind) {
    case 'read':
      read = true;
      break;
    case 'created':
      created = true;
      deleted = false;
      break;
    case 'modified':
      modified = true;
      if (deleted) {
        created = true;
        deleted = false;
      }
      break;
    case 'deleted':
      deleted = true;
      break;
  }
  files.set(
    path,
    makeRecord({
      path,
      read,
      created,
      modified,
      deleted,
      renamedFrom: prev.renamedFrom ?? [],
      actors: unionActors(prev.actors, [event.actor]),
      lastAt: Math.max(prev.lastAt, at),
    }),
  );
}

/** Returns a new ledger with `event` applied (see the module comment for the rules). */
export function recordFileEvent(ledger: FileLedger, event: FileEvent): FileLedger {
  const files = toMap(ledger);
  applyEvent(files, event);
  return freezeLedger(files);
}

/** Returns a new ledger with `events` applied in order. */
export function recordFileEvents(ledger: FileLedger, events: readonly FileEvent[]): FileLedger {
  const files = toMap(ledger);
  for (const event of events) applyEvent(files, event);
  return freezeLedger(files);
}

function hasRename(record: FileRecord): boolean {
  return (record.renamedFrom?.length ?? 0) > 0;
}

function escapePath(path: string): string {
  // Keep one file per line whatever the name holds.
  return path.replace(/[\u0000-\u001f\u007f]/g, (c) => {
    switch (c) {
      case '\n':
        return '\\n';
      case '\r':
        return '\\r';
      case '\t':
        return '\\t';
      default:
        return `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
    }
  });
}

function isChanged(record: FileRecord): boolean {
  return record.created || record.modified || record.deleted || hasRename(record);
}

/**
 * The status shown in parentheses under `<modified-files>`:
 * - `renamed` first when the file has earlier names, then
 * - one of `deleted` (wins over everything: a deleted file never looks alive), `created` (a new
 *   file, also when edited afterwards), or `modified`;
 * so the combinations are `created`, `modified`, `deleted`, `renamed`, `renamed, created`,
 * `renamed, modified`, `renamed, deleted`. Then the actor: nothing when only the agent touched
 * the file, `; user` when only the user did, `; agent and user` when both did.
 */
function describe(record: FileRecord): string {
  const parts: string[] = [];
  if (hasRename(record)) parts.push('renamed');
  if (record.deleted) parts.push('deleted');
  else if (record.created) parts.push('created');
  else if (record.modified) parts.push('modified');
  const user = record.actors.includes('user');
  const agent = record.actors.includes('agent');
  const who = user && agent ? '; agent and user' : user ? '; user' : '';
  return `${parts.join(', ')}${who}`;
}

/**
 * Renders the ledger as exactly two sections, always both present, lines sorted by current path,
 * no timestamps, joined by `\n` with no trailing newline:
 *
 * ```
 * <read-files>
 * src/a.ts
 * </read-files>
 * <modified-files>
 * src/b.ts (created)
 * src/c.ts (modified; user)
 * src/old.ts → src/new.ts (renamed, modified)
 * </modified-files>
 * ```
 *
 * `<read-files>` lists files that were read and neither created, modified, deleted nor renamed
 * (a file read and then changed appears only under `<modified-files>`); these lines carry no
 * status or actor. `<modified-files>` lists every other file once as `path (status)`, or
 * `oldest-name → path (status)` for a renamed file; see {@link describe} for the wording.
 * Control characters in paths are escaped (`\n`, `\t`, `\uXXXX`) so each file stays on one line.
 * A record with none of these facts (a file renamed back to its own name) is not listed.
 */
export function renderFileOperations(ledger: FileLedger): string {
  const records = Object.values(ledger.files).sort((a, b) => compareStrings(a.path, b.path));
  const read: string[] = [];
  const changed: string[] = [];
  for (const record of records) {
    if (isChanged(record)) {
      const oldest = record.renamedFrom?.[0];
      const name = oldest !== undefined ? `${escapePath(oldest)} → ${escapePath(record.path)}` : escapePath(record.path);
      changed.push(`${name} (${describe(record)})`);
    } else if (record.read) {
      read.push(escapePath(record.path));
    }
  }
  return ['<read-files>', ...read, '</read-files>', '<modified-files>', ...changed, '</modified-files>'].join('\n');
}

const recordSchema = lazily(() =>
  z.object({
    path: z.string().min(1),
    read: z.boolean(),
    created: z.boolean(),
    modified: z.boolean(),
    deleted: z.boolean(),
    renamedFrom: z.array(z.string().min(1)).optional(),
    actors: z.array(z.enum(ACTORS)).min(1),
    lastAt: z.number(), // zod 4 rejects NaN and ±Infinity
  }),
);

const ledgerSchema = lazily(() =>
  z.object({
    version: z.literal(1),
    files: z.custom<Record<string, unknown>>(isRecord),
  }),
);

/**
 * A ledger made by this module on another thread of the extension (the compaction worker), as the
 * copy between threads gives it: the same code made it, so it is frozen in place and taken as made
 * here, and a record that carries it is not checked again when it is stored. Data from anywhere
 * else (a file, a setting) goes through `parseLedger`.
 */
export function ledgerFromThread(copy: FileLedger): FileLedger {
  if (made.has(copy)) return copy;
  for (const record of Object.values(copy.files)) {
    if (record.renamedFrom) Object.freeze(record.renamedFrom);
    Object.freeze(record.actors);
    Object.freeze(record);
  }
  Object.freeze(copy.files);
  made.add(Object.freeze(copy));
  return copy;
}

/**
 * Validates stored data (for example a ledger that went through `JSON.stringify`/`JSON.parse`)
 * and returns it as a fresh, frozen ledger (a ledger made here is returned as it is); `undefined`
 * when anything is malformed: a version other than 1, a wrong type, a missing field, no actor, or a
 * key that differs from its record's `path`. Actors are re-sorted and an empty `renamedFrom` is dropped.
 */
export function parseLedger(value: unknown): FileLedger | undefined {
  if (typeof value === 'object' && value !== null && made.has(value as FileLedger)) return value as FileLedger;
  const top = ledgerSchema().safeParse(value);
  if (!top.success) return undefined;
  const files: Files = new Map();
  for (const [key, raw] of Object.entries(top.data.files)) {
    const parsed = recordSchema().safeParse(raw);
    if (!parsed.success || parsed.data.path !== key) return undefined;
    const r = parsed.data;
    files.set(
      key,
      makeRecord({
        path: r.path,
        read: r.read,
        created: r.created,
        modified: r.modified,
        deleted: r.deleted,
        renamedFrom: r.renamedFrom ?? [],
        actors: r.actors,
        lastAt: r.lastAt,
      }),
    );
  }
  return freezeLedger(files);
}
