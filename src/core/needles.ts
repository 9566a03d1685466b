import { lazily } from './lazy';
import { z } from 'zod';
import type { EngineMemo, Scan } from './engine-memo';
import { isRecord } from './errors';
import { allMessages, isSummaryMessage, lastEntry, type ConversationLog } from './history';
import type { Needle, NeedleKind, NeedleLedger } from './log';

export type { Needle, NeedleKind, NeedleLedger };
import { stringifyOutput, type Message, type ToolResultPart } from './messages';
import { plainText } from './text';

/**
 * Needles: the few facts a summary must never lose, found without a model and kept outside it.
 * Besides the file ledger (`file-ledger.ts`), the engine keeps a ledger of
 *
 * - **constraints**: the user's explicit rules and preferences, in their words;
 * - **errors**: the exact error messages the agent's tool calls hit, and whether they were resolved;
 * - **tasks**: work the user deferred or listed that no later message closed.
 *
 * After every summary (the model's or the extractive fallback) the engine checks the summary and what
 * stays in the view against the ledger, and appends what is missing word for word in one
 * `<kept-needles>` block, which is removed and rendered anew at each round (as the file lists are),
 * so it never repeats. The ledger is cumulative: it is stored in each compaction entry and the next
 * compaction goes on scanning from the last message it took in.
 *
 * Where each kind comes from, and the deterministic rules (no model, nothing random):
 *
 * Constraints come from user messages only: never from tool results, files the agent read, the
 * assistant's text or a summary, so a file that says "you must push to main" is not a rule of the
 * user's. Fenced code and quoted (`>`) lines are left out too: they are pasted material, not the
 * user speaking. The text is cut into lines and sentences; a sentence is a constraint when it says
 * must, must not, never, don't / do not, always or prefer (any form), is not a question, and is not a
 * reminder ("don't forget to …", "remember to …": those are tasks).
 *
 * Errors come from failed tool calls: a result marked as an error, one that starts with `Error:`
 * (how Longrun's tools report a failure), or a command that ended with a non-zero exit code or was
 * stopped. From its output the lines that look like error messages (`TypeError: …`, `error TS2322:
 * …`, `npm ERR! …`, `fatal: …`, `FAIL …`, a panic, a traceback, a `file:line: message`
 * diagnostic) are kept, at most three, or else its first line. A result that did not fail yields nothing, whatever it contains: a file read
 * that mentions an error is not an error the agent hit. An error is resolved when a later call of
 * the same tool on the same target (its `command`, `path` or `file` argument, else all of its
 * arguments) succeeds; the same error coming back opens it again.
 *
 * Tasks come from user messages: a sentence or list item that is an unchecked checklist item
 * (`- [ ] …`), starts with TODO, defers work ("later", "afterwards", "after that", "next time",
 * "at the end", "eventually", "when you're done", "before you finish", "don't forget to", "remember
 * to", "still need to"), or is one of two or more list items of a message (a list of asks). A task is
 * closed by a later user or assistant message (never a tool result) holding a sentence that says it
 * is done or dropped (done, finished, added, fixed, implemented, created, updated, removed, skipped,
 * cancelled, "never mind", "no longer needed" …) without a negation (not, n't, yet, still, failed,
 * unable), and shares at least half of the task's key terms (words of three or more letters outside
 * a list of common words, crudely stemmed; paths and identifiers as whole tokens). Closed tasks
 * leave the ledger.
 */

import { NEEDLE_KINDS } from './log-values';

export { NEEDLE_KINDS };

export const EMPTY_NEEDLES: NeedleLedger = Object.freeze({ version: 1, through: null, needles: Object.freeze([]), openCalls: Object.freeze({}) });

/** Most needles of one kind the ledger holds; past it the oldest (resolved errors first) go. */
export const MAX_NEEDLES_PER_KIND = 50;

/** Longest needle text kept; a longer sentence is cut with an ellipsis. */
const MAX_NEEDLE_CHARS = 400;

/** Error lines taken from one failed call. */
const MAX_ERROR_LINES = 3;

// --- scanning ---------------------------------------------------------------------------------

/**
 * The ledger in force for `log`: `start` when given (a ledger made from an earlier state of the same
 * log), else the one stored with the compaction in force, brought up to date with the messages after
 * the last one it took in. A log without one (no compaction yet, or entries from before needles were
 * kept), or whose messages no longer hold the one it ends at, is scanned from its first message.
 * The scan so far is remembered in `memo`.
 */
export function needleLedgerOf(log: ConversationLog, memo: EngineMemo, start?: NeedleLedger): NeedleLedger {
  const stored = start ?? lastEntry(log)?.needles;
  const after = stored?.through ? messagesAfter(log, stored.through) : undefined;
  return after ? scanOnce(stored!, after, memo) : scanOnce(EMPTY_NEEDLES, allMessages(log), memo);
}

/**
 * The messages after the first one with id `id`, in order; undefined when the log holds none. Only
 * what follows is gathered: a long log's earlier messages are passed over, not copied.
 */
function messagesAfter(log: ConversationLog, id: string): Message[] | undefined {
  let after: Message[] | undefined;
  for (const record of log) {
    if (record.type !== 'message') continue;
    if (after) after.push(record.message);
    else if (record.message.id === id) after = [];
  }
  return after;
}

/**
 * `scanNeedles(from, messages)`, with the scan so far remembered with the last message: a log only
 * grows at its end, so the next call takes in only what was appended since (compactions prepared
 * ahead and the one applied read the same long history again and again). The needles are capped
 * only at the end, so the answer is the same as one scan of everything.
 */
function scanOnce(from: NeedleLedger, messages: readonly Message[], memo: EngineMemo): NeedleLedger {
  const last = messages.at(-1);
  if (last === undefined) return scanNeedles(from, messages);
  let scan: Scan | undefined;
  let start = 0;
  for (let i = messages.length - 1; i >= 0; i--) {
    const known = memo.needleScans.get(messages[i]!);
    if (known?.from !== from) continue;
    if (i === messages.length - 1) return known.ledger;
    scan = copy(known.scan);
    start = i + 1;
    break;
  }
  const done = take(scan ?? open(from), messages.slice(start));
  const ledger = finish(done);
  memo.needleScans.set(last, { from, scan: done, ledger });
  return ledger;
}

/** Returns a new ledger with `messages` (the ones after `ledger.through`, in order) taken in. */
export function scanNeedles(ledger: NeedleLedger, messages: readonly Message[]): NeedleLedger {
  return finish(take(open(ledger), messages));
}

function open(ledger: NeedleLedger): Scan {
  return { needles: [...ledger.needles], openCalls: new Map(Object.entries(ledger.openCalls)), through: ledger.through };
}

function copy(scan: Scan): Scan {
  return { needles: [...scan.needles], openCalls: new Map(scan.openCalls), through: scan.through };
}

function finish(scan: Scan): NeedleLedger {
  return freeze({ version: 1, through: scan.through, needles: capped(scan.needles), openCalls: Object.fromEntries(scan.openCalls) });
}

function take(scan: Scan, messages: readonly Message[]): Scan {
  const { needles, openCalls } = scan;
  for (const message of messages) {
    scan.through = message.id;
    if (isSummaryMessage(message)) continue;
    switch (message.role) {
      case 'user': {
        const text = userText(message);
        closeTasks(needles, text, message.id);
        addUnique(needles, userNeedles(text, message.id));
        break;
      }
      case 'assistant':
        for (const part of message.content) if (part.type === 'tool-call') openCalls.set(part.toolCallId, callKey(part.toolName, part.input));
        closeTasks(needles, visibleText(message), message.id);
        break;
      case 'tool':
        for (const part of message.content) {
          if (part.type !== 'tool-result') continue;
          const key = openCalls.get(part.toolCallId) ?? part.toolName;
          openCalls.delete(part.toolCallId);
          takeResult(needles, part, key, message.id);
        }
        break;
      case 'system':
        break;
    }
  }
  return scan;
}

/**
 * The ledgers made here: frozen through and through, so valid for good; a record that carries one is
 * checked before it is stored without checking its ledger again.
 */
const made = new WeakSet<NeedleLedger>();

function freeze(ledger: NeedleLedger): NeedleLedger {
  const frozen = Object.freeze({
    ...ledger,
    needles: Object.freeze(ledger.needles.map((n) => Object.freeze({ ...n }))),
    openCalls: Object.freeze({ ...ledger.openCalls }),
  });
  made.add(frozen);
  return frozen;
}

/**
 * A ledger made by this module on another thread of the extension (the compaction worker), as the
 * copy between threads gives it: frozen in place and taken as made here (see `ledgerFromThread` of
 * the file ledger). Data from anywhere else goes through `parseNeedleLedger`.
 */
export function needlesFromThread(copy: NeedleLedger): NeedleLedger {
  if (made.has(copy)) return copy;
  for (const needle of copy.needles) Object.freeze(needle);
  Object.freeze(copy.needles);
  Object.freeze(copy.openCalls);
  made.add(Object.freeze(copy));
  return copy;
}

/** Adds needles not already held (same kind, same text); a repeated constraint or task is one. */
function addUnique(needles: Needle[], found: readonly Needle[]): void {
  for (const needle of found) {
    const same = normalised(needle.text);
    if (!needles.some((n) => n.kind === needle.kind && normalised(n.text) === same)) needles.push(needle);
  }
}

/** Keeps at most `MAX_NEEDLES_PER_KIND` of each kind: resolved errors go first, then the oldest. */
function capped(needles: readonly Needle[]): Needle[] {
  const drop = new Set<Needle>();
  for (const kind of NEEDLE_KINDS) {
    const ofKind = needles.filter((n) => n.kind === kind);
    const excess = ofKind.length - MAX_NEEDLES_PER_KIND;
    if (excess <= 0) continue;
    const order = [...ofKind.filter((n) => n.resolvedBy !== undefined), ...ofKind.filter((n) => n.resolvedBy === undefined)];
    for (const n of order.slice(0, excess)) drop.add(n);
  }
  return drop.size === 0 ? [...needles] : needles.filter((n) => !drop.has(n));
}

// --- user messages: constraints and tasks -------------------------------------------------------

const CONSTRAINT = /(?<![\p{L}\p{N}_])(?:must|mustn't|never|don't|do not|always|prefer|prefers|preferred|preferably)(?![\p{L}\p{N}_])/iu;
const REMINDER = /(?<![\p{L}\p{N}_])(?:don't forget|do not forget|remember to)(?![\p{L}\p{N}_])/iu;
const DEFERRAL =
  /(?<![\p{L}\p{N}_])(?:later|afterwards|after that|after this|next time|at the end|eventually|when you're done|when you are done|before you finish|still need to|still needs to)(?![\p{L}\p{N}_])/iu;
const CHECKBOX = /^\s*[-*+]\s+\[ \]\s+/;
const CHECKED = /^\s*[-*+]\s+\[[xX]\]\s+/;
const LIST_ITEM = /^\s*(?:[-*+]|\d{1,3}[.)])\s+/;
const TODO = /^todo\b[:\s-]*/i;

/** The needles a user message holds, in order. */
function userNeedles(text: string, messageId: string): Needle[] {
  const out: Needle[] = [];
  const lines = spokenLines(text);
  const listItems = lines.filter((line) => LIST_ITEM.test(line) && !CHECKED.test(line)).length;
  for (const line of lines) {
    if (CHECKED.test(line)) continue;
    const item = LIST_ITEM.test(line);
    for (const sentence of sentences(line.replace(CHECKBOX, '').replace(LIST_ITEM, ''))) {
      const kind = classify(sentence, { checkbox: CHECKBOX.test(line), listed: item && listItems >= 2 });
      if (kind) out.push({ kind, text: cap(sentence), messageId });
    }
  }
  return out;
}

/** Whether a sentence of the user's is a constraint, a task, or neither (see the module comment). */
function classify(sentence: string, line: { checkbox: boolean; listed: boolean }): NeedleKind | undefined {
  if (words(sentence).length < 3) return undefined;
  if (REMINDER.test(sentence)) return 'task';
  if (CONSTRAINT.test(sentence)) return sentence.endsWith('?') ? undefined : 'constraint';
  if (line.checkbox || TODO.test(sentence) || DEFERRAL.test(sentence) || line.listed) return 'task';
  return undefined;
}

/** The user's own lines: fenced code and quoted lines are pasted material, not the user speaking. */
function spokenLines(text: string): string[] {
  const out: string[] = [];
  let fenced = false;
  for (const line of text.split('\n')) {
    if (/^\s{0,3}(?:```|~~~)/.test(line)) {
      fenced = !fenced;
      continue;
    }
    if (fenced || /^\s*>/.test(line) || line.trim() === '') continue;
    out.push(line);
  }
  return out;
}

/** Abbreviations whose dot does not end a sentence. */
const ABBREVIATIONS = /(?:^|\s)(?:e\.g|i\.e|etc|vs|cf|approx|incl)\.$/i;

/** Sentences of one line: cut after `.`, `!` or `?` followed by a space, abbreviations aside. */
function sentences(line: string): string[] {
  const out: string[] = [];
  let start = 0;
  const boundary = /[.!?]+(?=\s+\S)/g;
  for (let match = boundary.exec(line); match; match = boundary.exec(line)) {
    const end = match.index + match[0].length;
    if (ABBREVIATIONS.test(line.slice(start, end))) continue;
    out.push(line.slice(start, end).trim());
    start = end;
  }
  out.push(line.slice(start).trim());
  return out.filter(Boolean);
}

// --- task closure ----------------------------------------------------------------------------

const COMPLETION =
  /(?<![\p{L}\p{N}_])(?:done|finished|complete|completed|implemented|added|fixed|created|wrote|written|updated|resolved|removed|deleted|renamed|moved|refactored|exported|migrated|handled|addressed|shipped|merged|skip|skipped|cancel|cancelled|canceled|dropped|never mind|no longer needed|not needed any more|not needed anymore)(?![\p{L}\p{N}_])/iu;
const NEGATION =
  /(?<![\p{L}\p{N}_])(?:not|no|yet|still|failed|unable|cannot|can't|couldn't|didn't|haven't|hasn't|isn't|wasn't|won't)(?![\p{L}\p{N}_])/iu;
const NEGATION_EXEMPT = /(?<![\p{L}\p{N}_])(?:never mind|no longer needed|not needed any more|not needed anymore)(?![\p{L}\p{N}_])/giu;

/** Closes the open tasks `text` (a later user or assistant message) says are done or dropped. */
function closeTasks(needles: Needle[], text: string, messageId: string): void {
  if (!needles.some((n) => n.kind === 'task') || !COMPLETION.test(apostrophes(text))) return;
  const closing = spokenLines(text)
    .flatMap((line) => sentences(line.replace(LIST_ITEM, '')))
    .map(apostrophes)
    .filter((s) => COMPLETION.test(s) && !NEGATION.test(s.replace(NEGATION_EXEMPT, ' ')))
    .map((s) => new Set(keyTerms(s)));
  if (closing.length === 0) return;
  for (let i = needles.length - 1; i >= 0; i--) {
    const needle = needles[i]!;
    if (needle.kind !== 'task' || needle.messageId === messageId) continue;
    const terms = keyTerms(needle.text);
    const needed = Math.max(1, Math.ceil(terms.length / 2));
    if (closing.some((said) => terms.filter((t) => said.has(t)).length >= needed)) needles.splice(i, 1);
  }
}

/** Words too common to tell one task from another, and the words that only mark a task or its end. */
const STOPWORDS = new Set(
  (
    'the and for with that this from into onto then than there their they them our your you its his her was were are ' +
    'has have had not but all any can could would should will shall may might also just now please later afterwards ' +
    'after next time end eventually when done before finish still need needs needed todo remember forget don dont ' +
    'make sure let lets get got one some more most much very each other use using used what which who how why where ' +
    'add added adding fix fixed fixing create created creating update updated updating remove removed removing ' +
    'implement implemented implementing finished complete completed write wrote written'
  ).split(' '),
);

/** Key terms of a sentence: paths and identifiers whole, other words crudely stemmed, common words out. */
function keyTerms(sentence: string): string[] {
  const tokens =
    apostrophes(sentence)
      .toLowerCase()
      .match(/[\p{L}\p{N}_][\p{L}\p{N}_./-]*[\p{L}\p{N}_]|[\p{L}\p{N}_]/gu) ?? [];
  const terms = new Set<string>();
  for (const token of tokens) {
    if (/[./-]/.test(token)) {
      terms.add(token);
      continue;
    }
    if (token.length < 3 || STOPWORDS.has(token) || /^\d+$/.test(token)) continue;
    const stem = stemOf(token);
    if (!STOPWORDS.has(stem)) terms.add(stem);
  }
  return [...terms];
}

function stemOf(word: string): string {
  for (const suffix of ['ing', 'ed', 'es', 's']) {
    if (word.length > suffix.length + 3 && word.endsWith(suffix)) return word.slice(0, -suffix.length);
  }
  return word;
}

// --- tool results: errors ---------------------------------------------------------------------

/** Arguments that name what a call acts on, so that a retry on the same target is recognised. */
const TARGET_ARGUMENTS = ['command', 'path', 'file', 'filePath', 'url'] as const;

/** The tool and what its call acted on. */
function callKey(toolName: string, input: unknown): string {
  if (isRecord(input)) {
    for (const name of TARGET_ARGUMENTS) {
      const value = input[name];
      if (typeof value === 'string' && value.trim()) return `${toolName} ${oneLine(value.trim()).slice(0, 200)}`;
    }
  }
  return `${toolName} ${oneLine(stringifyOutput(input)).slice(0, 200)}`;
}

const ERROR_START = /^Error:/;
const EXIT_CODE = /^Exit code: (-?\d+)\s*$/m;
const STOPPED = /^Stopped: still running after/m;
/** A line of output that reads as an error message. */
const ERROR_LINE =
  /(?:^|[\s(])(?:[A-Z][A-Za-z]*(?:Error|Exception)|Error|error(?:\[[A-Z]?\d+\])?|ERROR|ERR!|fatal|FATAL|FAIL|FAILED|panicked at|Traceback \(most recent call last\))(?=[:\s]|$)/;
/** A compiler's or linter's diagnostic: `file:line[:column]: message`. */
const DIAGNOSTIC = /^[\w./\\-]+\.\w+:\d+(?::\d+)?:\s+\S/;
/** Lines of Longrun's command output that frame it rather than say anything. */
const FRAME_LINE = /^(?:\$ .*|Exit code: .*|Output:|Stopped: .*|\(no output\)|\[… .*)$/;

/** Records the errors of a failed call, or resolves the errors of its target when it succeeded. */
function takeResult(needles: Needle[], part: ToolResultPart, key: string, messageId: string): void {
  const output = plainText(part.output);
  if (!failed(part, output)) {
    for (let i = 0; i < needles.length; i++) {
      const n = needles[i]!;
      if (n.kind === 'error' && n.key === key && n.resolvedBy === undefined) needles[i] = { ...n, resolvedBy: messageId };
    }
    return;
  }
  for (const line of errorLines(output)) {
    const text = cap(line);
    const same = needles.findIndex((n) => n.kind === 'error' && n.key === key && normalised(n.text) === normalised(text));
    // The same error again: open again, and as recent as its latest occurrence.
    if (same >= 0) needles.splice(same, 1);
    needles.push({ kind: 'error', text, messageId, tool: part.toolName, key });
  }
}

function failed(part: ToolResultPart, output: string): boolean {
  if (part.isError) return true;
  if (ERROR_START.test(output.trimStart())) return true;
  const exit = EXIT_CODE.exec(output);
  if (exit && Number(exit[1]) !== 0) return true;
  return STOPPED.test(output);
}

/** The error lines of a failed call's output (at most three, each once), else its first line. */
function errorLines(output: string): string[] {
  const lines = output
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !FRAME_LINE.test(l));
  const found: string[] = [];
  for (const line of lines) {
    if ((ERROR_LINE.test(line) || DIAGNOSTIC.test(line)) && !found.includes(line)) found.push(line);
    if (found.length >= MAX_ERROR_LINES) break;
  }
  if (found.length > 0) return found;
  const first = lines[0];
  return first ? [first] : [];
}

// --- stored data ------------------------------------------------------------------------------

const needleSchema = lazily(() =>
  z.object({
    kind: z.enum(NEEDLE_KINDS),
    text: z.string().min(1),
    messageId: z.string().min(1),
    tool: z.string().optional(),
    key: z.string().optional(),
    resolvedBy: z.string().optional(),
  }),
);

const ledgerSchema = lazily(() =>
  z.object({
    version: z.literal(1),
    through: z.string().nullable(),
    needles: z.array(needleSchema()),
    openCalls: z.record(z.string(), z.string()),
  }),
);

/** Validates a stored ledger and returns it frozen (a ledger made here as it is); `undefined` when anything is malformed. */
export function parseNeedleLedger(value: unknown): NeedleLedger | undefined {
  if (typeof value === 'object' && value !== null && made.has(value as NeedleLedger)) return value as NeedleLedger;
  const parsed = ledgerSchema().safeParse(value);
  if (!parsed.success) return undefined;
  const { through, needles, openCalls } = parsed.data;
  return freeze({
    version: 1,
    through,
    needles: needles.map((n) => ({
      kind: n.kind,
      text: n.text,
      messageId: n.messageId,
      ...(n.tool !== undefined ? { tool: n.tool } : {}),
      ...(n.key !== undefined ? { key: n.key } : {}),
      ...(n.resolvedBy !== undefined ? { resolvedBy: n.resolvedBy } : {}),
    })),
    openCalls,
  });
}

// --- text helpers -----------------------------------------------------------------------------

/** A user message's words: its text parts. */
function userText(message: Message): string {
  return apostrophes(
    message.content
      .map((p) => (p.type === 'text' ? p.text : ''))
      .filter(Boolean)
      .join('\n'),
  );
}

/** What the other side was shown of a message: text parts only (reasoning is the model thinking). */
function visibleText(message: Message): string {
  return message.content
    .map((p) => (p.type === 'text' ? p.text : ''))
    .filter(Boolean)
    .join('\n');
}

/** All a message shows the model: text, tool inputs and outputs. */
export function searchableText(message: Message): string {
  return message.content
    .map((p) => {
      switch (p.type) {
        case 'text':
        case 'reasoning':
          return p.text;
        case 'tool-call':
          return plainText(p.input);
        case 'tool-result':
          return plainText(p.output);
        case 'file':
          return '';
      }
    })
    .join('\n');
}

function apostrophes(value: string): string {
  return value.replace(/[\u2018\u2019]/g, "'");
}

export function oneLine(value: string): string {
  return value.replace(/\r?\n/g, ' ').replace(/[\u0000-\u001f\u007f]/g, ' ');
}

function words(value: string): string[] {
  return value.split(/\s+/).filter((w) => /[\p{L}\p{N}]/u.test(w));
}

function cap(value: string): string {
  const line = oneLine(value).trim();
  return line.length > MAX_NEEDLE_CHARS ? `${line.slice(0, MAX_NEEDLE_CHARS - 1)}…` : line;
}

/**
 * Text as compared: lowercase, typographic quotes made plain, Markdown emphasis and code marks
 * removed, spacing collapsed, a trailing full stop dropped (a summary that copies a sentence into a
 * list often drops it). A cut needle is compared without its ellipsis.
 */
export function normalised(value: string): string {
  return value
    .replace(/[\u2018\u2019]/g, "'")
    .replace(/[\u201c\u201d]/g, '"')
    .replace(/[`*_]/g, '')
    .replace(/…$/, '')
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/[.!;:]+$/, '')
    .toLowerCase();
}
