import { branchLog, leftBehind, turnOf, type TurnIndex } from './branches';
import { allMessages, isSummaryMessage, type ConversationLog, type FileChange, type LogRecord } from './history';
import { EMPTY_NEEDLES, oneLine, scanNeedles, type Needle } from './needles';
import { checkPlan, type CheckedPlan } from './plan-check';
import { planCounts, planLines } from './plan-text';
import { normalizePath } from './text';

/**
 * What turns a chat left behind had done, told in a short account the user may carry into the
 * branch they went on with (a rewind, an edited request, a retry, a fork): the requests they were
 * made for, the plan they left, the files they changed (and whether those changes are still on
 * disk), and the errors they hit. Deterministic, from the record alone; bounded
 * (`ACCOUNT_MAX_CHARS`). Nothing of it reaches the model unless the user asks for it, and then once,
 * with their next request.
 */

export const ACCOUNT_OPEN = '<earlier-branch>';
export const ACCOUNT_CLOSE = '</earlier-branch>';

/** The account's bounds: about 1,500 tokens at most. */
export const ACCOUNT_LIMITS = {
  /** The latest requests told, each cut at `requestChars`. */
  requests: 5,
  requestChars: 240,
  /** The plan's lines take at most this many characters. */
  planChars: 2_000,
  files: 12,
  errors: 6,
  errorChars: 200,
} as const;

/** The longest an account can be, its bounds all reached. */
export const ACCOUNT_MAX_CHARS = 6_000;

/** The turns a new turn under `parent` leaves behind, and the path they were on. */
export interface AbandonedPath {
  /** The turns left behind, oldest first. */
  readonly turns: readonly string[];
  /** The records of the path they end: the shared part before `parent`, then theirs. */
  readonly path: readonly LogRecord[];
}

/** The turns a new turn under `parent` leaves behind (see `leftBehind`), with their path; undefined when none. */
export function abandonedPath(all: ConversationLog, turns: TurnIndex, parent: string | null): AbandonedPath | undefined {
  const left = leftBehind(turns.update(all), parent);
  if (left.length === 0) return undefined;
  return { turns: left, path: branchLog(all, left.at(-1)!, turns) };
}

/** A file the abandoned turns changed: its path, whether they created it, and the hash their last change left. */
export interface AbandonedFile {
  readonly path: string;
  readonly created: boolean;
  /** The hash of the file's whole text as their last change left it. */
  readonly afterHash: string;
}

/** What the abandoned turns did, read from their records. */
export interface AbandonedWork {
  readonly turns: readonly string[];
  readonly requests: readonly string[];
  /** The plan they left, checked against their path; absent when they made none. */
  readonly plan?: CheckedPlan;
  readonly files: readonly AbandonedFile[];
  /** The errors their tools hit, each with whether a later call of theirs resolved it. */
  readonly errors: readonly Needle[];
}

/**
 * What the turns of `abandoned` did. Its path must hold their messages with their content (read
 * back from disk when held without it).
 */
export function abandonedWork(abandoned: AbandonedPath): AbandonedWork {
  const left = new Set(abandoned.turns);
  const theirs = abandoned.path.filter((r) => left.has(turnOf(r) ?? ''));
  const messages = allMessages(theirs);
  const requests = messages
    .filter((m) => m.role === 'user' && !isSummaryMessage(m))
    .map((m) =>
      m.content
        .map((p) => (p.type === 'text' ? p.text : ''))
        .join('\n')
        .trim(),
    )
    .filter((t) => t !== '');
  const planned = theirs.some((r) => r.type === 'plan');
  const plan = planned ? checkPlan(abandoned.path) : undefined;
  const errors = scanNeedles(EMPTY_NEEDLES, messages).needles.filter((n) => n.kind === 'error');
  return { turns: abandoned.turns, requests, ...(plan ? { plan } : {}), files: changedFiles(theirs), errors };
}

function changedFiles(records: readonly LogRecord[]): AbandonedFile[] {
  const byPath = new Map<string, { first: FileChange; last: FileChange }>();
  for (const record of records) {
    if (record.type !== 'change') continue;
    const path = normalizePath(record.change.path);
    const known = byPath.get(path);
    byPath.set(path, { first: known?.first ?? record.change, last: record.change });
  }
  return [...byPath].map(([path, { first, last }]) => ({ path, created: first.kind === 'created', afterHash: last.afterHash }));
}

/** Whether the abandoned turns did anything worth carrying: a plan, a file changed, an error hit. */
export function worthCarrying(work: AbandonedWork): boolean {
  return work.plan !== undefined || work.files.length > 0 || work.errors.length > 0;
}

/** Whether a file the abandoned turns changed still holds what they left, as the disk says now. */
export type DiskState = 'as-left' | 'changed' | 'gone' | 'unknown';

const DISK_WORDS: Readonly<Record<DiskState, string>> = {
  'as-left': 'still on disk as they left it',
  changed: 'changed since (reverted, or edited)',
  gone: 'no longer on disk',
  unknown: 'could not be read',
};

/** The account of `work` as the model gets it, within `ACCOUNT_MAX_CHARS`; `disk` says what each changed file holds now. */
export function renderAccount(work: AbandonedWork, disk: ReadonlyMap<string, DiskState>): string {
  const lines = [
    'The user went back to an earlier point of the chat, and asked Longrun to tell you what the turns they left behind had done (from the record; those turns are no longer part of this conversation):',
  ];
  const requests = work.requests.slice(-ACCOUNT_LIMITS.requests);
  if (requests.length > 0) {
    const earlier = work.requests.length - requests.length;
    lines.push(`Their requests${earlier > 0 ? ` (the last ${requests.length} of ${work.requests.length})` : ''}:`);
    lines.push(...requests.map((r) => `- ${JSON.stringify(cut(oneLine(r), ACCOUNT_LIMITS.requestChars))}`));
  }
  if (work.plan) {
    lines.push(`The plan they left (${planCounts(work.plan.steps)}):`);
    lines.push(...planLines(work.plan.steps, ACCOUNT_LIMITS.planChars, (text) => text.length));
  }
  if (work.files.length > 0) {
    lines.push('Files they changed:');
    for (const file of work.files.slice(0, ACCOUNT_LIMITS.files)) {
      lines.push(`- ${file.path}${file.created ? ' (created)' : ''}: ${DISK_WORDS[disk.get(file.path) ?? 'unknown']}`);
    }
    if (work.files.length > ACCOUNT_LIMITS.files) lines.push(`- and ${work.files.length - ACCOUNT_LIMITS.files} more`);
  }
  if (work.errors.length > 0) {
    lines.push('Errors their tools hit:');
    const shown = work.errors.slice(-ACCOUNT_LIMITS.errors);
    for (const error of shown) {
      const status = error.resolvedBy === undefined ? 'unresolved' : 'resolved later';
      lines.push(`- ${status} (${cut(oneLine(error.key ?? error.tool ?? 'tool'), 80)}): ${cut(oneLine(error.text), ACCOUNT_LIMITS.errorChars)}`);
    }
    if (work.errors.length > shown.length) lines.push(`- and ${work.errors.length - shown.length} earlier`);
  }
  // No text of theirs may end the block early.
  const body = lines.map((line) => line.replace(/<(\/?)earlier-branch>/g, '‹$1earlier-branch›'));
  return [ACCOUNT_OPEN, ...body, ACCOUNT_CLOSE].join('\n');
}

/** What the chat says the account holds: "a plan (2 of 4 done), 2 changed files and 1 error". */
export function accountSummary(work: AbandonedWork): string {
  const parts = [
    work.plan ? `a plan (${work.plan.steps.filter((s) => s.status === 'done').length} of ${work.plan.steps.length} steps done)` : '',
    work.files.length > 0 ? `${work.files.length} changed file${work.files.length === 1 ? '' : 's'}` : '',
    work.errors.length > 0 ? `${work.errors.length} error${work.errors.length === 1 ? '' : 's'}` : '',
  ].filter(Boolean);
  return parts.length <= 1 ? (parts[0] ?? 'nothing') : `${parts.slice(0, -1).join(', ')} and ${parts.at(-1)}`;
}

/**
 * The accounts the user chose to carry that have not reached the model yet: those on the branch
 * after its latest request. The next request takes them in, once.
 */
export function pendingAccounts(log: ConversationLog): string[] {
  const out: string[] = [];
  for (let i = log.length - 1; i >= 0; i--) {
    const record = log[i]!;
    if (record.type === 'message' && record.message.role === 'user' && !isSummaryMessage(record.message)) break;
    if (record.type === 'account') out.unshift(record.account.text);
  }
  return out;
}

function cut(value: string, max: number): string {
  return value.length > max ? `${value.slice(0, max - 1)}…` : value;
}
