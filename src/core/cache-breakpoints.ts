import type { Message } from './messages';

/**
 * Where a request asks the provider to cache its prefix (Anthropic's `cache_control` breakpoints,
 * which OpenRouter passes on). The provider caches the prefix that ends at each breakpoint, and
 * reads a prefix an earlier request cached when a breakpoint of this one ends it, or sits at most
 * `LOOKBACK_BLOCKS` content blocks after its end. A request takes at most `MAX_BREAKPOINTS`.
 *
 * The breakpoints of a request, in order of need:
 * - the head: the system prompt, which ends the tools and the system prompt every request begins with;
 * - the rolling one: the last block of the request, so that the next request reads all of it;
 * - the end of the request before it, when this request added too many blocks for the rolling one
 *   to look back that far (a step of many parallel tool calls): the previous request's rolling
 *   breakpoint cached exactly that prefix, so a breakpoint there reads it whatever the distance;
 * - the end of the stable part after the last compaction (the summary and what it kept), which every
 *   request until the next compaction begins with, when no other breakpoint reaches it.
 *
 * The messages of a request are the engine's, one model message each; only blocks of the
 * conversation are marked, never a tail later requests will not send (a summary's directive).
 */

/** Most breakpoints one request may carry: the provider refuses a fifth. */
export const MAX_BREAKPOINTS = 4;

/** How many blocks back from a breakpoint the provider looks for a prefix an earlier request cached. */
export const LOOKBACK_BLOCKS = 20;

/** A message as the content blocks of a request. */
export interface MessageBlocks {
  /** Content blocks the message becomes. */
  readonly count: number;
  /** Offset, among them, of the last block a breakpoint may sit on; -1 when none may. */
  readonly lastCacheable: number;
}

/**
 * The content blocks a message becomes: a block per part (an empty text of an assistant is left out).
 * Reasoning is counted as a block that takes no breakpoint (a thinking block cannot carry one), so a
 * distance is never under-counted, whether the provider is sent it or not.
 */
export function messageBlocks(message: Message): MessageBlocks {
  if (message.role === 'system') return { count: 1, lastCacheable: 0 };
  let count = 0;
  let lastCacheable = -1;
  for (const part of message.content) {
    if (message.role === 'tool' && part.type !== 'tool-result') continue;
    if (message.role === 'assistant' && part.type === 'text' && part.text.length === 0) continue;
    if (part.type !== 'reasoning' || message.role === 'user') lastCacheable = count;
    count++;
  }
  return { count, lastCacheable };
}

/**
 * The index, in `message.content`, of the part that becomes its last cacheable block (see
 * `messageBlocks`); -1 when none. A system message is one text and takes its breakpoint whole.
 */
export function lastCacheablePart(message: Message): number {
  if (message.role === 'system') return 0;
  for (let i = message.content.length - 1; i >= 0; i--) {
    const part = message.content[i]!;
    if (message.role === 'tool' && part.type !== 'tool-result') continue;
    if (message.role === 'assistant' && ((part.type === 'text' && part.text.length === 0) || part.type === 'reasoning')) continue;
    return i;
  }
  return -1;
}

/** What a request's breakpoints are placed on. */
export interface BreakpointRequest {
  /** The request has a system prompt (and tools): a breakpoint ends them. */
  readonly head: boolean;
  /** The id of the message that ends the stable part after the last compaction, if it is in the request. */
  readonly stableEnd?: string;
  /** How many messages at the end later requests will not send (a summary's directive): never marked. */
  readonly volatileTail?: number;
  /** Most breakpoints to place; `MAX_BREAKPOINTS` unless told. */
  readonly max?: number;
  /** The provider's look-back in blocks; `LOOKBACK_BLOCKS` unless told. */
  readonly lookback?: number;
}

/** Where the breakpoints go. */
export interface BreakpointPlan {
  /** A breakpoint on the system prompt. */
  readonly head: boolean;
  /** The messages whose last cacheable block carries a breakpoint, by index, ascending. */
  readonly messages: readonly number[];
}

interface Mark {
  readonly message: number;
  /** The block's position among all the request's message blocks. */
  readonly position: number;
}

/** The breakpoints of a request of `messages` (see the file's header for the rule). */
export function planBreakpoints(messages: readonly Message[], request: BreakpointRequest): BreakpointPlan {
  const max = request.max ?? MAX_BREAKPOINTS;
  const lookback = request.lookback ?? LOOKBACK_BLOCKS;
  const head = request.head && max > 0;
  const slots = max - (head ? 1 : 0);
  const end = messages.length - Math.max(0, request.volatileTail ?? 0);
  const layout = blockLayout(messages, end);
  const rolling = layout.markAt(end - 1);
  if (!rolling || slots <= 0) return { head, messages: [] };
  const marks: Mark[] = [rolling];
  const reached = (target: Mark): boolean => marks.some((m) => m.position >= target.position && m.position - target.position < lookback);
  const stableIndex = request.stableEnd === undefined ? -1 : messages.findIndex((m, i) => i < end && m.id === request.stableEnd);
  // The later target first: a breakpoint that reaches the earlier one makes it needless.
  const targets = [layout.markAt(previousRequestEnd(messages, end)), layout.markAt(stableIndex)]
    .filter((t): t is Mark => t !== undefined)
    .sort((a, b) => b.position - a.position);
  for (const target of targets) {
    if (marks.length < slots && !reached(target)) marks.push(target);
  }
  return { head, messages: [...new Set(marks.map((m) => m.message))].sort((a, b) => a - b) };
}

/**
 * The last message the request before this one sent: the one before the latest assistant message,
 * which that request was answered with. -1 when there is none (the first request).
 */
export function previousRequestEnd(messages: readonly Message[], end = messages.length): number {
  for (let i = end - 1; i >= 0; i--) if (messages[i]!.role === 'assistant') return i - 1;
  return -1;
}

/** The blocks of the first `end` messages, and where the last cacheable block at or before a message's end is. */
function blockLayout(messages: readonly Message[], end: number): { markAt(index: number): Mark | undefined } {
  const starts: number[] = [];
  const blocks: MessageBlocks[] = [];
  let position = 0;
  for (let i = 0; i < end; i++) {
    const b = messageBlocks(messages[i]!);
    starts.push(position);
    blocks.push(b);
    position += b.count;
  }
  return {
    markAt(index: number): Mark | undefined {
      for (let i = Math.min(index, end - 1); i >= 0; i--) {
        const b = blocks[i]!;
        if (b.lastCacheable >= 0) return { message: i, position: starts[i]! + b.lastCacheable };
      }
      return undefined;
    },
  };
}
