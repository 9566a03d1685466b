import { cacheLifetimeMs, cacheState, type CacheLifetimeSettings, type CacheState } from '../../core/cache-lifetime';
import { decideColdCompaction, type ColdCompaction } from '../../core/compaction-guard';
import { isAgentUsage, type ConversationLog } from '../../core/history';
import type { ReportedUsage } from '../../core/log';
import type { CostBreakdown } from '../../core/usage-cost';
import { usageReport, type UsageReport } from '../../core/usage-report';
import type { CacheHints } from '../../llm/cache-hints';
import type { ProviderKind } from '../../core/provider-kind';
import type { Conversation } from '../conversation/conversation';
import { configuredId } from '../models/model-catalogue';
import type { LongrunSettings } from '../settings';

/**
 * What a conversation's records say about the provider's prompt cache and what the conversation
 * cost: when its last request was sent, whether the cache has expired since, which provider
 * OpenRouter served it from, the hints its next request carries, and its usage report.
 */

/** The usage records of `records`, in order. */
function usages(records: ConversationLog): ReportedUsage[] {
  const out: ReportedUsage[] = [];
  for (const record of records) if (record.type === 'usage') out.push(record.usage);
  return out;
}

/**
 * The last request of the branch (the agent's or a summary continuing it) that says when it was sent;
 * a subagent's is left out: its prompt is its own, so it keeps none of the agent's cache alive.
 */
export function lastTimedRequest(records: ConversationLog): ReportedUsage | undefined {
  for (let i = records.length - 1; i >= 0; i--) {
    const record = records[i]!;
    if (record.type === 'usage' && record.usage.at !== undefined && record.usage.purpose !== 'subagent') return record.usage;
  }
  return undefined;
}

/** When a compaction of an expired cache was last applied on the branch, if ever. */
export function lastColdCompactionAt(records: ConversationLog): number | undefined {
  let at: number | undefined;
  for (const record of records) {
    if ((record.type === 'compaction' || record.type === 'pruning') && record.entry.reason === 'cache-expired') {
      at = Math.max(at ?? 0, record.entry.createdAt);
    }
  }
  return at;
}

/** The ids of the compactions and prunings made because the cache had expired: the rewrite after them is free. */
export function coldCompactionIds(records: ConversationLog): ReadonlySet<string> {
  const ids = new Set<string>();
  for (const record of records) {
    if ((record.type === 'compaction' || record.type === 'pruning') && record.entry.reason === 'cache-expired') ids.add(record.entry.id);
  }
  return ids;
}

/** Whether the cache still holds the branch's conversation at `now` (unknown for a provider that does not say). */
export function branchCacheState(records: ConversationLog, settings: CacheLifetimeSettings, now: number): CacheState {
  const last = lastTimedRequest(records);
  if (!last) return { kind: 'unknown' };
  const lifetime = cacheLifetimeMs(last.provider, last.modelId ?? configuredId(last.model), settings);
  return cacheState(last.at, lifetime, now);
}

/** The provider OpenRouter served the conversation's first request from, which the next requests are pinned to. */
export function pinnedProvider(records: ConversationLog): string | undefined {
  for (const record of records) {
    if (record.type === 'usage' && isAgentUsage(record.usage) && record.usage.provider === 'openrouter' && record.usage.servedBy) {
      return record.usage.servedBy;
    }
  }
  return undefined;
}

/**
 * OpenAI's cache key for a conversation's branch: requests with the same key (and prefix) reach the
 * same cache. Each of VS Code's chats continues a branch of its own.
 */
export function promptCacheKey(conversationId: string, chat: string | undefined): string {
  return chat ? `longrun-${conversationId}-${shortHash(chat)}` : `longrun-${conversationId}`;
}

/** A short, stable hash of a chat's id (FNV-1a): the key stays short whatever VS Code's ids look like. */
function shortHash(text: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(36);
}

/** The hints a request of the branch tells its provider (undefined for a model of VS Code's, which takes none). */
export function cacheHintsFor(
  provider: ProviderKind | undefined,
  settings: CacheLifetimeSettings,
  branch: { readonly conversationId: string; readonly chat?: string; readonly records: ConversationLog },
): CacheHints | undefined {
  if (provider === undefined) return undefined;
  const pinned = provider === 'openrouter' ? pinnedProvider(branch.records) : undefined;
  return {
    provider,
    ttl: settings.ttl,
    ...(provider === 'openai' ? { promptCacheKey: promptCacheKey(branch.conversationId, branch.chat) } : {}),
    ...(provider === 'openai' && settings.openaiRetention24h ? { retention24h: true } : {}),
    ...(pinned !== undefined ? { pinnedProvider: pinned } : {}),
  };
}

/**
 * The usage report of a conversation: every request on every branch (all were billed), each priced by
 * `cost`; the rewrite after a pruning made because the cache had expired is no compaction's cost.
 */
export function conversationUsage(all: ConversationLog, cost: (usage: ReportedUsage) => CostBreakdown | undefined): UsageReport {
  const cold = coldCompactionIds(all);
  return usageReport(usages(all), cost, (basis) => cold.has(basis));
}

/**
 * The hints of a turn's requests, asked before each: the provider of the model in use, the cache
 * settings, the branch's key, and the provider OpenRouter served the conversation from (looked for
 * until found, then kept).
 */
export function turnCacheHints(
  provider: () => ProviderKind | undefined,
  settings: () => CacheLifetimeSettings,
  branch: { readonly conversationId: string; readonly chat?: string; readonly records: () => ConversationLog },
): () => CacheHints | undefined {
  let pinned: CacheHints | undefined;
  return () => {
    const kind = provider();
    const now = settings();
    if (pinned && pinned.provider === kind && pinned.ttl === now.ttl) return pinned;
    const hints = cacheHintsFor(kind, now, {
      conversationId: branch.conversationId,
      ...(branch.chat !== undefined ? { chat: branch.chat } : {}),
      records: branch.records(),
    });
    if (hints?.pinnedProvider !== undefined) pinned = hints;
    return hints;
  };
}

/**
 * What an expired cache lets a turn starting now do (see `decideColdCompaction`), and since when it
 * has expired; undefined while the cache is warm or its lifetime unknown, or while a compaction runs.
 */
export function coldCompactionOf(
  conversation: Conversation,
  settings: LongrunSettings['cache'],
  now: number,
  midTurn: boolean,
): { readonly decision: ColdCompaction; readonly since: number } | undefined {
  const records = conversation.log();
  const cache = branchCacheState(records, settings, now);
  if (cache.kind !== 'expired' || conversation.isCompacting()) return undefined;
  const ahead = conversation.aheadState();
  const decision = decideColdCompaction({
    enabled: settings.coldCompaction,
    cache,
    lastRequestAt: lastTimedRequest(records)?.at,
    lastColdAt: lastColdCompactionAt(records),
    midTurn,
    level: conversation.assess().level,
    aheadReady: ahead === 'ready',
    aheadRunning: ahead === 'preparing' || ahead === 'ready',
  });
  return { decision, since: cache.since };
}
