/**
 * Anthropic's prompt caching, as rules: which part of a Messages request is read from the cache,
 * which part is written to it, and what the cache holds afterwards. Pure: the request, the cache and
 * the clock in, the outcome out; the stand-in's HTTP layer and a benchmark use it alike.
 *
 * The rules it follows:
 * - The prompt is the request's blocks in order: the tool definitions, then the system blocks, then
 *   each message's content blocks. A prefix is cached only up to a block marked with `cache_control`
 *   (a breakpoint), and matched only exactly: every byte up to it the same (the markers themselves
 *   excepted), and the same model.
 * - At most 4 breakpoints per request; more is an error. A 1-hour breakpoint may not follow a
 *   5-minute one in that order (tools, system, messages); that is an error too.
 * - Reading: from each breakpoint the cache is looked up at that block's boundary and then at each
 *   earlier one, 20 boundaries in all (the breakpoint's own included); the longest prefix found
 *   among all breakpoints is read from the cache. A prefix cached by an earlier request more than
 *   20 blocks before every breakpoint is not found.
 * - Writing: the prefix up to each breakpoint past what was read is written, when it is at least the
 *   model's minimum cacheable length; a shorter prefix is neither written nor an error. The tokens
 *   from the end of the read prefix to the last breakpoint written are billed as written, each
 *   stretch at the lifetime of the breakpoint that ends it; the rest of the prompt is ordinary input.
 * - Lifetime: 5 minutes, or 1 hour for `ttl: "1h"`; each read refreshes the entry it reads (and each
 *   breakpoint that meets an entry still alive refreshes it), at no cost.
 */
import { prefixHashes, runningTotals } from './prefix-chain';

export type CacheTtl = '5m' | '1h';

export const TTL_MS: Readonly<Record<CacheTtl, number>> = { '5m': 5 * 60_000, '1h': 60 * 60_000 };
export const MAX_BREAKPOINTS = 4;
/** Block boundaries looked at from each breakpoint, its own included. */
export const LOOKBACK_BLOCKS = 20;

/** One content block of the prompt, in the order the model reads them. */
export interface PromptBlock {
  /** What identifies the block's content, its section and role included, its cache marker excluded. */
  readonly key: string;
  readonly tokens: number;
  /** The block carries `cache_control`, with this lifetime. */
  readonly breakpoint?: CacheTtl;
}

export interface AnthropicCacheEntry {
  /** The length of the cached prefix. */
  readonly tokens: number;
  readonly ttl: CacheTtl;
  readonly expiresAt: number;
}

/** The cache: entries by the hash of the prefix they hold (model included). */
export type AnthropicCacheState = ReadonlyMap<string, AnthropicCacheEntry>;

export interface AnthropicCacheOutcome {
  readonly state: AnthropicCacheState;
  /** `cache_read_input_tokens`. */
  readonly read: number;
  /** `cache_creation.ephemeral_5m_input_tokens`. */
  readonly write5m: number;
  /** `cache_creation.ephemeral_1h_input_tokens`. */
  readonly write1h: number;
  /** `input_tokens`: neither read nor written. */
  readonly input: number;
  /** Every token of the prompt. */
  readonly total: number;
}

export type AnthropicCacheResult = { readonly outcome: AnthropicCacheOutcome } | { readonly problem: string };

/**
 * The shortest prefix each model caches, by model id: 4,096 tokens for Claude Opus 4.5 to 4.7 and
 * Haiku 4.5, 2,048 for the Haiku 3 models, 1,024 for the others.
 */
export function minimumCacheableTokens(model: string): number {
  const id = model.toLowerCase();
  if (/opus-4-[567]|haiku-4-5/.test(id)) return 4_096;
  if (/claude-3-(5-)?haiku|claude-haiku-3/.test(id)) return 2_048;
  return 1_024;
}

/** What the request reads from and writes to `state` at `now`, or why Anthropic refuses it. */
export function applyAnthropicCache(
  state: AnthropicCacheState,
  request: { readonly model: string; readonly blocks: readonly PromptBlock[] },
  now: number,
): AnthropicCacheResult {
  const { blocks } = request;
  const marked = blocks.flatMap((block, index) => (block.breakpoint ? [index] : []));
  if (marked.length > MAX_BREAKPOINTS)
    return { problem: `A maximum of ${MAX_BREAKPOINTS} blocks with cache_control may be provided. Found ${marked.length}.` };
  const firstShort = marked.findIndex((index) => blocks[index]!.breakpoint === '5m');
  if (firstShort >= 0 && marked.slice(firstShort).some((index) => blocks[index]!.breakpoint === '1h')) {
    return {
      problem:
        "a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block. Note that blocks are processed in the following order: `tools`, `system`, `messages`.",
    };
  }

  const live = new Map([...state].filter(([, entry]) => entry.expiresAt > now));
  const hashes = prefixHashes(
    `anthropic\u0000${request.model}`,
    blocks.map((block) => block.key),
  );
  const ends = runningTotals(blocks.map((block) => block.tokens));
  const total = ends.at(-1) ?? 0;

  // The longest prefix any breakpoint's look-back finds.
  let readEnd = -1;
  for (const breakpoint of marked) {
    for (let at = breakpoint; at >= 0 && at > breakpoint - LOOKBACK_BLOCKS; at--) {
      if (live.has(hashes[at]!)) {
        readEnd = Math.max(readEnd, at);
        break;
      }
    }
  }
  const read = readEnd >= 0 ? ends[readEnd]! : 0;
  if (readEnd >= 0) refresh(live, hashes[readEnd]!, now);

  const minimum = minimumCacheableTokens(request.model);
  let written = { '5m': 0, '1h': 0 };
  let writtenTo = read;
  for (const breakpoint of marked) {
    const ttl = blocks[breakpoint]!.breakpoint!;
    const hash = hashes[breakpoint]!;
    if (breakpoint <= readEnd) {
      if (live.has(hash)) refresh(live, hash, now);
      continue;
    }
    if (ends[breakpoint]! < minimum) continue;
    written = { ...written, [ttl]: written[ttl] + (ends[breakpoint]! - writtenTo) };
    writtenTo = ends[breakpoint]!;
    live.set(hash, { tokens: ends[breakpoint]!, ttl, expiresAt: now + TTL_MS[ttl] });
  }
  return {
    outcome: { state: live, read, write5m: written['5m'], write1h: written['1h'], input: total - read - written['5m'] - written['1h'], total },
  };
}

function refresh(cache: Map<string, AnthropicCacheEntry>, hash: string, now: number): void {
  const entry = cache.get(hash);
  if (entry) cache.set(hash, { ...entry, expiresAt: now + TTL_MS[entry.ttl] });
}
