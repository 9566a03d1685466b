import { activeSteps, type ConversationLog } from './history';
import { stringifyOutput, type Message, type Role, type ToolCallPart } from './messages';
import { filePathOf } from './pruning';
import { normalizePath } from './text';

/**
 * What the `recall` tool searches: the originals of everything compaction and pruning took out of
 * the model's view and that is still out of it (an undone compaction's messages are back in the view,
 * so they are not archived). Searched by words or by file path; the answer is cut to a token budget
 * and says what it left out, so that the model can ask again more narrowly.
 */

/** One archived original: a summarized message, or a pruned tool output. */
export interface ArchivedItem {
  readonly messageId: string;
  /** 1-based position of the message among the conversation's messages. */
  readonly number: number;
  readonly role: Role;
  /** What took it out of the view. */
  readonly archivedBy: 'summary' | 'pruning';
  /** The text searched and shown: the message with its tool calls and results. */
  readonly text: string;
  /** The normalized paths its file tool calls (or the calls its results answer) name. */
  readonly paths: readonly string[];
}

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
  readonly omitted: ReadonlyArray<{ readonly item: ArchivedItem; readonly tokens: number }>;
  readonly maxTokens: number;
}

/** What `recall` answers while nothing is archived. */
export const NOTHING_ARCHIVED = 'Nothing of this conversation has been compacted or pruned yet: everything is still in your context.';

/** An item is cut rather than left out when at least this much of the budget is still free. */
const MIN_CUT_TOKENS = 200;
const DEFAULT_MAX_TOKENS = 4_000;

/** The archived originals of a log, in conversation order. */
export function archivedItems(log: ConversationLog): ArchivedItem[] {
  const summarized = new Set<string>();
  const pruned = new Map<string, Set<string>>();
  for (const step of activeSteps(log)) {
    if (step.kind === 'compaction') for (const id of step.entry.compactedMessageIds) summarized.add(id);
    else {
      for (const o of step.entry.outputs) {
        const ids = pruned.get(o.messageId) ?? new Set<string>();
        pruned.set(o.messageId, ids.add(o.toolCallId));
      }
    }
  }
  const calls = new Map<string, ToolCallPart>();
  const items: ArchivedItem[] = [];
  const seen = new Set<string>();
  let number = 0;
  for (const record of log) {
    if (record.type !== 'message') continue;
    const message = record.message;
    number++;
    for (const part of message.content) if (part.type === 'tool-call') calls.set(part.toolCallId, part);
    // An id repeated by a damaged log is archived once.
    if (seen.has(message.id)) continue;
    if (summarized.has(message.id)) {
      seen.add(message.id);
      items.push(item(message, number, 'summary', calls, undefined));
    } else if (pruned.has(message.id)) {
      seen.add(message.id);
      items.push(item(message, number, 'pruning', calls, pruned.get(message.id)));
    }
  }
  return items;
}

/** Searches `items` and fits the best matches in the budget (`query.maxTokens`). */
export function recall(items: readonly ArchivedItem[], query: RecallQuery, countText: (text: string) => number): RecallResult {
  const maxTokens = query.maxTokens ?? DEFAULT_MAX_TOKENS;
  const words = (query.query ?? '')
    .toLowerCase()
    .split(/\s+/)
    .filter((w) => w !== '');
  const path = query.path?.trim() ? normalizePath(query.path.trim()) : undefined;
  const scored: Array<{ item: ArchivedItem; words: number; path: number }> = [];
  for (const candidate of items) {
    const lower = candidate.text.toLowerCase();
    const pathScore = path === undefined ? 0 : pathMatch(candidate, lower, path);
    if (path !== undefined && pathScore === 0) continue;
    const wordHits = words.filter((w) => lower.includes(w)).length;
    if (words.length > 0 && wordHits === 0) continue;
    scored.push({ item: candidate, words: wordHits, path: pathScore });
  }
  const complete = scored.filter((s) => s.words === words.length);
  const partial = complete.length === 0 && scored.length > 0;
  const ranked = (partial ? scored : complete).sort((a, b) => b.path - a.path || b.words - a.words || b.item.number - a.item.number);

  const shown: RecalledItem[] = [];
  const omitted: Array<{ item: ArchivedItem; tokens: number }> = [];
  let left = maxTokens;
  for (const { item: match } of ranked) {
    const tokens = countText(match.text);
    if (tokens <= left) {
      shown.push({ item: match, text: match.text, cut: false, tokens });
      left -= tokens;
    } else if (left >= MIN_CUT_TOKENS && shown.every((s) => !s.cut)) {
      // The best match that does not fit is shown in part rather than not at all.
      const text = cutToTokens(match.text, left, countText);
      const used = countText(text);
      shown.push({ item: match, text, cut: true, tokens: used });
      left -= used;
    } else {
      omitted.push({ item: match, tokens });
    }
  }
  shown.sort((a, b) => a.item.number - b.item.number);
  return { query, archived: items.length, matched: ranked.length, partial, shown, omitted, maxTokens };
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

function item(
  message: Message,
  number: number,
  archivedBy: ArchivedItem['archivedBy'],
  calls: ReadonlyMap<string, ToolCallPart>,
  only: ReadonlySet<string> | undefined,
): ArchivedItem {
  const how = archivedBy === 'summary' ? 'summarized' : 'pruned';
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
function cutToTokens(text: string, budget: number, countText: (text: string) => number): string {
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
