import type { KeepRecentConfig } from './config';
import { isSummaryMessage } from './history';
import type { Message } from './messages';

/**
 * Which messages to summarize and which to keep verbatim. The cut never separates a tool call
 * from its results; system messages stay; an earlier summary is set aside to be chained into the
 * new one, so nothing it held is lost. The latest user message is always kept verbatim. Kept
 * by tokens, the recent part is the latest tokens wherever turns begin: when they all lie inside
 * the latest turn, the cut falls between its steps and its user message stays in the kept part.
 * Kept by messages or by halves, the cut never passes the latest user message unless that turn
 * alone is larger than the kept part may be. A selection whose kept part is larger than it may be is
 * never given as usable (but for the latest user message alone, which nothing can make smaller): the
 * caller is told it does not fit and keeps less.
 */

export interface Selection {
  /** System messages kept in front of the summary. */
  readonly pinned: readonly Message[];
  /** The summary already in the view, if any: it is integrated, not summarized as a message. */
  readonly previousSummary?: Message;
  /** Messages to summarize, in their original order. */
  readonly toCompact: readonly Message[];
  /** Messages kept verbatim after the summary, in their original order. */
  readonly kept: readonly Message[];
  /** True when the latest turn alone was too large and its early part is summarized too. */
  readonly splitTurn: boolean;
}

export type SelectionResult =
  | { readonly ok: true; readonly selection: Selection }
  /** `tooLarge`: the recent part as configured is larger than the kept part may be. */
  | { readonly ok: false; readonly reason: string; readonly tooLarge?: true };

export interface SelectionOptions {
  readonly keepRecent: KeepRecentConfig;
  /** The model's window, for the share-of-window forms; 0 when unknown. */
  readonly limit: number;
  readonly countMessage: (message: Message) => number;
  readonly keepSystemMessages: boolean;
  /**
   * Most tokens the kept part may hold. When the latest turn alone is larger, it is split:
   * its user message stays, its early part is summarized (a split turn).
   */
  readonly maxKeptTokens: number;
}

/** How many recent tokens to keep: `keepRecent.tokens`, or `tokensShare` of the window when that is smaller. */
export function keepRecentTokens(keepRecent: KeepRecentConfig, limit: number): number {
  if (limit <= 0) return keepRecent.tokens;
  return Math.min(keepRecent.tokens, Math.floor(limit * keepRecent.tokensShare));
}

export function selectForCompaction(view: readonly Message[], options: SelectionOptions): SelectionResult {
  const pinned: Message[] = [];
  const body: Message[] = [];
  let previousSummary: Message | undefined;
  for (const message of view) {
    if (isSummaryMessage(message)) previousSummary = message;
    else if (message.role === 'system' && options.keepSystemMessages) pinned.push(message);
    else body.push(message);
  }
  if (body.length === 0)
    return { ok: false, reason: 'Nothing to compact: the conversation has no messages besides system messages and the summary.' };

  const valid = validCuts(body);
  const latestUser = findLastIndex(body, (m) => m.role === 'user');
  const suffix = suffixTokens(body, options.countMessage);
  const target = targetCut(body, suffix, options);

  // Normal case: a valid cut at or before the latest user message, keeping at least the target.
  const limitForNormal = latestUser >= 0 ? latestUser : body.length;
  let cut = -1;
  for (let c = Math.min(target, limitForNormal); c >= 1; c--) {
    if (valid[c]) {
      cut = c;
      break;
    }
  }
  // Counted in tokens, the recent part may lie wholly inside the latest turn (a long tool loop): the
  // turn is then split like one too large to keep, or its early steps would stay "recent" for ever.
  const recentInsideTurn = options.keepRecent.mode === 'tokens' && latestUser >= 0 && target > latestUser + 1;
  const keptTokens = cut > 0 ? (suffix[cut] ?? 0) : (suffix[0] ?? 0);
  if (cut > 0 && keptTokens <= options.maxKeptTokens && !recentInsideTurn) {
    return { ok: true, selection: { pinned, previousSummary, toCompact: body.slice(0, cut), kept: body.slice(cut), splitTurn: false } };
  }

  // The latest turn is larger than the kept part may be, or than the recent part: keep its user
  // message, summarize its early part.
  if (latestUser >= 0 && ((suffix[latestUser] ?? 0) > options.maxKeptTokens || recentInsideTurn)) {
    const userMessage = body[latestUser]!;
    const userTokens = options.countMessage(userMessage);
    let splitCut = -1;
    for (let c = body.length; c > latestUser + 1; c--) {
      if (!valid[c]) continue;
      if (userTokens + (suffix[c] ?? 0) > options.maxKeptTokens && splitCut >= 0) break;
      splitCut = c;
      if (c <= target) break;
    }
    if (splitCut > latestUser + 1) {
      const toCompact = [...body.slice(0, latestUser), ...body.slice(latestUser + 1, splitCut)];
      return {
        ok: true,
        selection: { pinned, previousSummary, toCompact, kept: [userMessage, ...body.slice(splitCut)], splitTurn: true },
      };
    }
  }

  if (cut > 0) {
    // Only the latest request is kept, and nothing can make it smaller: what is before it is summarized.
    const onlyTheRequest = cut === latestUser && latestUser === body.length - 1;
    if (keptTokens <= options.maxKeptTokens || onlyTheRequest) {
      return { ok: true, selection: { pinned, previousSummary, toCompact: body.slice(0, cut), kept: body.slice(cut), splitTurn: false } };
    }
    return {
      ok: false,
      tooLarge: true,
      reason:
        `Not compacting as configured: the recent part that would be kept (${describeKeep(options)}) holds about ` +
        `${keptTokens.toLocaleString('en-US')} tokens, more than the ${options.maxKeptTokens.toLocaleString('en-US')} the kept part may hold.`,
    };
  }
  const count = body.length;
  return {
    ok: false,
    reason:
      `Nothing to compact: all ${count} message${count === 1 ? '' : 's'} belong to the recent part that is kept ` +
      `(${describeKeep(options)}), and the latest request stays with its answer.`,
  };
}

function describeKeep(options: SelectionOptions): string {
  switch (options.keepRecent.mode) {
    case 'messages':
      return `the last ${options.keepRecent.messages} messages`;
    case 'half':
      return 'the newer half of the messages';
    case 'tokens':
      return `about ${keepRecentTokens(options.keepRecent, options.limit).toLocaleString('en-US')} recent tokens`;
  }
}

/**
 * Where the recent part the configuration keeps (`keepRecent`) begins in `view`: the position of its
 * first message, every message from there on lying wholly in it. By tokens, a message from which more
 * than the recent tokens reach to the end is before it, one larger than them too; by messages or
 * halves, the recent messages. System messages kept in front and the summary do not count.
 */
export function recentPartStart(
  view: readonly Message[],
  options: Pick<SelectionOptions, 'keepRecent' | 'limit' | 'countMessage' | 'keepSystemMessages'>,
): number {
  const inBody = (m: Message): boolean => !isSummaryMessage(m) && !(m.role === 'system' && options.keepSystemMessages);
  const { keepRecent } = options;
  let wanted = Number.POSITIVE_INFINITY;
  if (keepRecent.mode === 'messages') wanted = keepRecent.messages;
  else if (keepRecent.mode === 'half') {
    let body = 0;
    for (const m of view) if (inBody(m)) body++;
    wanted = body - Math.floor(body / 2);
  }
  const keep = keepRecent.mode === 'tokens' ? keepRecentTokens(keepRecent, options.limit) : Number.POSITIVE_INFINITY;
  let start = view.length;
  let tokens = 0;
  let count = 0;
  for (let i = view.length - 1; i >= 0 && count < wanted; i--) {
    const message = view[i]!;
    if (!inBody(message)) continue;
    if (keepRecent.mode === 'tokens') {
      tokens += options.countMessage(message);
      if (tokens > keep) break;
    }
    count++;
    start = i;
  }
  return start;
}

/** The cut (index of the first kept message) that keeps the configured recent part. */
function targetCut(body: readonly Message[], suffix: readonly number[], options: SelectionOptions): number {
  if (options.keepRecent.mode === 'messages') return Math.max(0, body.length - options.keepRecent.messages);
  // Halves: the oldest half is summarized (the split point rounds down, so an odd count keeps one more).
  if (options.keepRecent.mode === 'half') return Math.floor(body.length / 2);
  const keep = keepRecentTokens(options.keepRecent, options.limit);
  // The largest cut whose kept part holds at least `keep` tokens (all of it if the body is smaller).
  for (let c = body.length; c >= 0; c--) if ((suffix[c] ?? 0) >= keep) return c;
  return 0;
}

/** suffix[c] = tokens of body[c..]. */
function suffixTokens(body: readonly Message[], count: (m: Message) => number): number[] {
  const suffix = new Array<number>(body.length + 1).fill(0);
  for (let i = body.length - 1; i >= 0; i--) suffix[i] = suffix[i + 1]! + count(body[i]!);
  return suffix;
}

/**
 * valid[c] is true when keeping body[c..] leaves no tool result without its call and no tool call
 * without its results: every call/result pair lies wholly on one side of the cut. A result pairs
 * with the nearest call of its id before it, since providers may reuse ids in later turns.
 */
export function validCuts(body: readonly Message[]): boolean[] {
  const n = body.length;
  const lastCall = new Map<string, number>();
  // The span of each pair, from its call to its last result.
  const spanEnd = new Map<number, number>();
  body.forEach((message, index) => {
    for (const part of message.content) {
      if (part.type === 'tool-call') lastCall.set(part.toolCallId, index);
      else if (part.type === 'tool-result') {
        const call = lastCall.get(part.toolCallId);
        if (call !== undefined && call < index) spanEnd.set(call, Math.max(spanEnd.get(call) ?? call, index));
      }
    }
  });
  // A cut at c splits a pair when call < c <= result.
  const crossing = new Array<number>(n + 2).fill(0);
  for (const [start, end] of spanEnd) {
    crossing[start + 1]! += 1;
    crossing[end + 1]! -= 1;
  }
  const valid = new Array<boolean>(n + 1).fill(false);
  let open = 0;
  for (let c = 0; c <= n; c++) {
    open += crossing[c]!;
    valid[c] = open === 0 && body[c]?.role !== 'tool';
  }
  return valid;
}

function findLastIndex<T>(items: readonly T[], predicate: (item: T) => boolean): number {
  for (let i = items.length - 1; i >= 0; i--) if (predicate(items[i]!)) return i;
  return -1;
}
