import { activeSteps, type ConversationLog, type LogRecord } from './history';
import { stringifyOutput, type Message, type Role, type ToolCallPart } from './messages';
import { filePathOf } from './pruning';
import { normalizePath } from './text';

/**
 * What the `recall` tool searches: the originals of everything compaction and pruning took out of
 * the model's view and that is still out of it (an undone compaction's messages are back in the view,
 * so they are not archived), and the messages of the subagents the agent delegated tasks to (never
 * in its view: it got their reports). Searched by words or by file path; the answer is cut to a token
 * budget and says what it left out, so that the model can ask again more narrowly.
 */

/** One archived original: a summarized message, or a pruned tool output. */
export interface ArchivedItem {
  readonly messageId: string;
  /** 1-based position of the message among the conversation's messages. */
  readonly number: number;
  readonly role: Role;
  /** What took it out of the view; `subagent` for a message of a subagent's own conversation. */
  readonly archivedBy: 'summary' | 'pruning' | 'subagent';
  /** The text searched and shown: the message with its tool calls and results. */
  readonly text: string;
  /** The normalized paths its file tool calls (or the calls its results answer) name. */
  readonly paths: readonly string[];
}

/** An archived original without its text: what an answer says of a match it leaves out. */
export type ArchivedItemHead = Omit<ArchivedItem, 'text'>;

/** What the model asked for. At least one of `query` and `path` is needed. */
export interface RecallQuery {
  /** Words, all of which a message should hold (case does not matter). */
  readonly query?: string;
  /** A file path: messages of file tools on it, and messages that mention it. */
  readonly path?: string;
  /** Longest answer, in tokens. */
  readonly maxTokens?: number;
}

export interface RecalledItem {
  readonly item: ArchivedItem;
  /** The text shown, cut when it did not fit whole. */
  readonly text: string;
  readonly cut: boolean;
  readonly tokens: number;
}

export interface RecallResult {
  readonly query: RecallQuery;
  /** Archived originals there are in all. */
  readonly archived: number;
  /** Items that matched, best first. */
  readonly matched: number;
  /** True when no item held every word and the best partial matches are given instead. */
  readonly partial: boolean;
  /** What is shown, in conversation order. */
  readonly shown: readonly RecalledItem[];
  /** Matches left out for the budget, best first, with their size. */
  readonly omitted: ReadonlyArray<{ readonly item: ArchivedItemHead; readonly tokens: number }>;
  readonly maxTokens: number;
}

/** What `recall` answers while nothing is archived. */
export const NOTHING_ARCHIVED =
  'Nothing of this conversation has been compacted or pruned yet, and no subagent has worked for it: everything is still in your context.';

/** An item is cut rather than left out when at least this much of the budget is still free. */
const MIN_CUT_TOKENS = 200;
const DEFAULT_MAX_TOKENS = 4_000;

/**
 * Takes the records of a log one at a time, in order, and gives the archived original each message
 * is (or nothing): a log can be read in runs, from disk, without being held whole.
 */
export class ArchiveReader {
  private readonly summarized = new Set<string>();
  private readonly pruned = new Map<string, Set<string>>();
  private readonly calls = new Map<string, ToolCallPart>();
  /** The calls of each subagent's messages, by subagent: their ids are only unique within a conversation. */
  private readonly subagentCalls = new Map<string, Map<string, ToolCallPart>>();
  private readonly seen = new Set<string>();
  private readonly delegated: boolean;
  private number = 0;

  /** `log`: the log the records come from; its steps decide what is archived (messages held without content will do). */
  constructor(log: ConversationLog) {
    this.delegated = log.some((r) => r.type === 'subagent' && r.subagent.kind === 'message');
    for (const step of activeSteps(log)) {
      if (step.kind === 'compaction') for (const id of step.entry.compactedMessageIds) this.summarized.add(id);
      else {
        for (const o of step.entry.outputs) {
          const ids = this.pruned.get(o.messageId) ?? new Set<string>();
          this.pruned.set(o.messageId, ids.add(o.toolCallId));
        }
      }
    }
  }

  /** Whether nothing of the log is archived. */
  get empty(): boolean {
    return this.summarized.size === 0 && this.pruned.size === 0 && !this.delegated;
  }

  /**
   * The archived original `record` is again, as message `number` (the number `take` gave it), its
   * results shown with the calls taken since: a search's second read of the few items it shows.
   */
  again(record: LogRecord, number: number): ArchivedItem | undefined {
    if (record.type === 'subagent' && record.subagent.kind === 'message') {
      return subagentItem(record.subagent.message, number, record.subagent.id, this.callsOf(record.subagent.id));
    }
    return record.type === 'message' ? this.itemOf(record.message, number) : undefined;
  }

  /** The archived original `record` is, given whole; undefined for anything else. */
  take(record: LogRecord): ArchivedItem | undefined {
    if (record.type === 'subagent' && record.subagent.kind === 'message') return this.takeSubagent(record.subagent.id, record.subagent.message);
    if (record.type !== 'message') return undefined;
    const message = record.message;
    this.number++;
    for (const part of message.content) if (part.type === 'tool-call') this.calls.set(part.toolCallId, part);
    // An id repeated by a damaged log is archived once.
    if (this.seen.has(message.id)) return undefined;
    const found = this.itemOf(message, this.number);
    if (found) this.seen.add(message.id);
    return found;
  }

  /** A message of subagent `id`: always archived, since the agent's view never held it. */
  private takeSubagent(id: string, message: Message): ArchivedItem | undefined {
    this.number++;
    const calls = this.callsOf(id);
    for (const part of message.content) if (part.type === 'tool-call') calls.set(part.toolCallId, part);
    if (this.seen.has(message.id)) return undefined;
    this.seen.add(message.id);
    return subagentItem(message, this.number, id, calls);
  }

  private callsOf(id: string): Map<string, ToolCallPart> {
    let calls = this.subagentCalls.get(id);
    if (!calls) this.subagentCalls.set(id, (calls = new Map()));
    return calls;
  }

  /** `message` as archived original number `number`, as what took it out of the view left it; undefined when nothing did. */
  private itemOf(message: Message, number: number): ArchivedItem | undefined {
    if (this.summarized.has(message.id)) return item(message, number, 'summary', this.calls, undefined);
    const outputs = this.pruned.get(message.id);
    return outputs === undefined ? undefined : item(message, number, 'pruning', this.calls, outputs);
  }
}

/** The id of the message `record` holds when it is one `recall` may show (the agent's, or a subagent's); undefined for any other. */
export function archivedId(record: LogRecord): string | undefined {
  if (record.type === 'message') return record.message.id;
  return record.type === 'subagent' && record.subagent.kind === 'message' ? record.subagent.message.id : undefined;
}

/** The archived originals of a log, in conversation order. */
export function archivedItems(log: ConversationLog): ArchivedItem[] {
  const reader = new ArchiveReader(log);
  const items: ArchivedItem[] = [];
  for (const record of log) {
    const found = reader.take(record);
    if (found) items.push(found);
  }
  return items;
}

/** A match: the item without its text, how well it matched, and its size. */
interface Match {
  readonly item: ArchivedItemHead;
  readonly words: number;
  readonly path: number;
  readonly tokens: number;
}

/** Negative when `a` ranks before `b`: a file tool on the path first, then more words, then the newer. */
function rank(a: Match, b: Match): number {
  return b.path - a.path || b.words - a.words || b.item.number - a.item.number;
}

function headOf(item: ArchivedItem): ArchivedItemHead {
  const { text: _text, ...head } = item;
  return head;
}

/**
 * Searches archived items as they are given (see `ArchiveReader`), keeping of each match what ranks
 * it and its size, not its text: a search of a long archive read in runs holds the archive's matches
 * in a few numbers each. The answer takes the matches best first while they fit, and cuts the first
 * that does not while enough of the budget is left; `wanted` says whose text that needs (about the
 * budget), and `result` is given those texts.
 */
export class RecallSearch {
  private readonly words: readonly string[];
  private readonly path: string | undefined;
  private readonly maxTokens: number;
  private archived = 0;
  private readonly complete: Match[] = [];
  /** Matches of some of the words, kept only while no item holds them all. */
  private partial: Match[] | undefined = [];

  constructor(
    private readonly query: RecallQuery,
    private readonly countText: (text: string) => number,
  ) {
    this.maxTokens = query.maxTokens ?? DEFAULT_MAX_TOKENS;
    this.words = (query.query ?? '')
      .toLowerCase()
      .split(/\s+/)
      .filter((w) => w !== '');
    this.path = query.path?.trim() ? normalizePath(query.path.trim()) : undefined;
  }

  add(candidate: ArchivedItem): void {
    this.archived++;
    const lower = candidate.text.toLowerCase();
    const pathScore = this.path === undefined ? 0 : pathMatch(candidate, lower, this.path);
    if (this.path !== undefined && pathScore === 0) return;
    const wordHits = this.words.filter((w) => lower.includes(w)).length;
    if (this.words.length > 0 && wordHits === 0) return;
    const every = wordHits === this.words.length;
    if (!every && !this.partial) return;
    const match: Match = { item: headOf(candidate), words: wordHits, path: pathScore, tokens: this.countText(candidate.text) };
    if (every) {
      this.complete.push(match);
      this.partial = undefined;
    } else this.partial!.push(match);
  }

  /**
   * The message ids whose text the answer may show, with their numbers: the matches that fit, the
   * first that does not (cut), and those after it that fit in what was left before the cut.
   */
  wanted(): ReadonlyMap<string, number> {
    const wanted = new Map<string, number>();
    let left = this.maxTokens;
    let cut = false;
    for (const match of this.ranked()) {
      if (match.tokens <= left) {
        left -= match.tokens;
        wanted.set(match.item.messageId, match.item.number);
      } else if (!cut && left >= MIN_CUT_TOKENS) {
        cut = true;
        wanted.set(match.item.messageId, match.item.number);
      }
    }
    return wanted;
  }

  /** The answer, given the text of the items `wanted` named, by message id. */
  result(texts: ReadonlyMap<string, string>): RecallResult {
    const ranked = this.ranked();
    const shown: RecalledItem[] = [];
    const omitted: Match[] = [];
    let left = this.maxTokens;
    for (const match of ranked) {
      const text = texts.get(match.item.messageId);
      if (text !== undefined && match.tokens <= left) {
        shown.push({ item: { ...match.item, text }, text, cut: false, tokens: match.tokens });
        left -= match.tokens;
      } else if (text !== undefined && left >= MIN_CUT_TOKENS && shown.every((s) => !s.cut)) {
        // The best match that does not fit is shown in part rather than not at all.
        const part = cutToTokens(text, left, this.countText);
        const used = this.countText(part);
        shown.push({ item: { ...match.item, text }, text: part, cut: true, tokens: used });
        left -= used;
      } else omitted.push(match);
    }
    shown.sort((a, b) => a.item.number - b.item.number);
    const partial = this.complete.length === 0 && ranked.length > 0;
    return { query: this.query, archived: this.archived, matched: ranked.length, partial, shown, omitted, maxTokens: this.maxTokens };
  }

  /** The matches the answer is made of, best first. */
  private ranked(): Match[] {
    return (this.complete.length > 0 ? this.complete : (this.partial ?? [])).sort(rank);
  }
}

/** Searches `items` and fits the best matches in the budget (`query.maxTokens`). */
export function recall(items: Iterable<ArchivedItem>, query: RecallQuery, countText: (text: string) => number): RecallResult {
  const search = new RecallSearch(query, countText);
  const texts = new Map<string, string>();
  for (const found of items) {
    search.add(found);
    texts.set(found.messageId, found.text);
  }
  const wanted = search.wanted();
  return search.result(new Map([...texts].filter(([id]) => wanted.has(id))));
}

/** The answer as the model reads it: what was found, then what was cut or left out and how to get it. */
export function formatRecall(result: RecallResult): string {
  const asked = describeQuery(result.query);
  if (result.archived === 0) return NOTHING_ARCHIVED;
  if (result.matched === 0)
    return `No archived message matches ${asked} (${plural(result.archived, 'archived message')} searched). Try other words or a shorter path.`;
  const lines: string[] = [];
  const head = `${plural(result.matched, 'archived message')} ${result.matched === 1 ? 'matches' : 'match'} ${asked}`;
  lines.push(result.partial ? `${head} in part: none holds every word, these hold the most.` : `${head}.`);
  for (const s of result.shown) {
    lines.push('', s.text);
    if (s.cut)
      lines.push(
        `[Cut to fit the answer's budget of ${result.maxTokens.toLocaleString('en-US')} tokens: ${s.tokens.toLocaleString('en-US')} tokens shown of message ${s.item.number}. Ask with more precise words, or a larger maxTokens, for the rest.]`,
      );
  }
  if (result.omitted.length > 0) {
    const total = result.omitted.reduce((sum, o) => sum + o.tokens, 0);
    const listed = result.omitted
      .slice(0, OMITTED_LISTED)
      .map((o) => `message ${o.item.number} (${o.item.role}, ${o.tokens.toLocaleString('en-US')} tokens)`);
    const more = result.omitted.length > OMITTED_LISTED ? `, and ${result.omitted.length - OMITTED_LISTED} more` : '';
    lines.push(
      '',
      `[Not shown, for the budget of ${result.maxTokens.toLocaleString('en-US')} tokens: ${plural(result.omitted.length, 'more match', 'more matches')} of ${total.toLocaleString('en-US')} tokens: ${listed.join(', ')}${more}. Narrow the query to see them.]`,
    );
  }
  return lines.join('\n');
}

const OMITTED_LISTED = 12;

/** A message of subagent `id`'s conversation as an archived item. */
function subagentItem(message: Message, number: number, id: string, calls: ReadonlyMap<string, ToolCallPart>): ArchivedItem {
  return item(message, number, 'subagent', calls, undefined, `of subagent ${id}`);
}

function item(
  message: Message,
  number: number,
  archivedBy: ArchivedItem['archivedBy'],
  calls: ReadonlyMap<string, ToolCallPart>,
  only: ReadonlySet<string> | undefined,
  how: string = archivedBy === 'summary' ? 'summarized' : 'pruned',
): ArchivedItem {
  const lines = [`--- message ${number} (${message.role}, ${how}) ---`];
  const paths = new Set<string>();
  for (const part of message.content) {
    switch (part.type) {
      case 'text':
        lines.push(part.text);
        break;
      case 'reasoning':
        lines.push(`(reasoning) ${part.text}`);
        break;
      case 'tool-call': {
        const path = filePathOf(part.toolName, part.input);
        if (path !== undefined) paths.add(path);
        lines.push(`[tool call ${part.toolName} ${stringifyOutput(part.input)} · id ${part.toolCallId}]`);
        break;
      }
      case 'tool-result': {
        if (only && !only.has(part.toolCallId)) continue;
        const call = calls.get(part.toolCallId);
        const path = call ? filePathOf(call.toolName, call.input) : undefined;
        if (path !== undefined) paths.add(path);
        const args = call ? ` ${stringifyOutput(call.input)}` : '';
        lines.push(`[result of ${part.toolName}${args} · id ${part.toolCallId}${part.isError ? ' · error' : ''}]`, stringifyOutput(part.output));
        break;
      }
      case 'file':
        lines.push(`[attachment ${part.name ?? part.mediaType}]`);
        break;
    }
  }
  return { messageId: message.id, number, role: message.role, archivedBy, text: lines.join('\n'), paths: [...paths] };
}

/** 3 for a file tool on the path, 2 for one on a path ending with it, 1 for a mention, 0 for none. */
function pathMatch(candidate: ArchivedItem, lower: string, path: string): number {
  const wanted = path.toLowerCase();
  if (candidate.paths.some((p) => p.toLowerCase() === wanted)) return 3;
  if (candidate.paths.some((p) => p.toLowerCase().endsWith(`/${wanted}`))) return 2;
  return lower.includes(wanted) ? 1 : 0;
}

/** The start of `text` within `budget` tokens, cut at a line end when one is near. */
export function cutToTokens(text: string, budget: number, countText: (text: string) => number): string {
  let low = 0;
  let high = text.length;
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (countText(text.slice(0, mid)) <= budget) low = mid;
    else high = mid - 1;
  }
  const cut = text.slice(0, low);
  const lineEnd = cut.lastIndexOf('\n');
  return lineEnd > low * 0.8 ? cut.slice(0, lineEnd) : cut;
}

function describeQuery(query: RecallQuery): string {
  const parts: string[] = [];
  if (query.query?.trim()) parts.push(`the words ${JSON.stringify(query.query.trim())}`);
  if (query.path?.trim()) parts.push(`the path ${JSON.stringify(query.path.trim())}`);
  return parts.join(' and ') || 'an empty query';
}

function plural(count: number, one: string, many = `${one}s`): string {
  return `${count} ${count === 1 ? one : many}`;
}
