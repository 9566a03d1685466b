import type { ImportanceConfig, TruncationConfig } from './config';
import type { EngineMemo } from './engine-memo';
import { scoreGroup, scoreMessage } from './importance';
import type { Message } from './messages';

/**
 * Splitting a summary request that would not fit the summarizer's window: messages are grouped so that a tool call stays with its results, groups are
 * ordered by importance (lowest first) and packed into batches, and each batch is sent in its
 * original order.
 */

export interface Positioned {
  readonly message: Message;
  /** Position in the model's view, shown to the summarizer as [#n]. */
  readonly position: number;
  /** Tighter limits for this message, when it matters little (see `briefTruncation`). */
  readonly truncation?: TruncationConfig;
}

/** Limits for the least important messages of a brief summary. */
export const BRIEF_TRUNCATION: TruncationConfig = { resultChars: 300, hugeResultChars: 300, messageChars: 500 };

/**
 * At brief depth, the least important third of the messages is cut to a few hundred
 * characters before it reaches the summarizer: a brief summary needs their gist only. User
 * messages are never cut this way, since the user's words are what a summary must keep.
 */
export function briefTruncation(items: readonly Positioned[], total: number, importance: ImportanceConfig, memo: EngineMemo): Positioned[] {
  const order = items
    .map((item) => ({ item, score: scoreMessage(item.message, item.position, total, importance, memo) }))
    .sort((a, b) => a.score - b.score || a.item.position - b.item.position);
  const low = new Set(order.slice(0, Math.floor(order.length / 3)).map((s) => s.item.position));
  return items.map((item) => (low.has(item.position) && item.message.role !== 'user' ? { ...item, truncation: BRIEF_TRUNCATION } : item));
}

/** Consecutive messages that belong together: a message and the tool results that follow it. */
export function groupUnits(items: readonly Positioned[]): Positioned[][] {
  const units: Positioned[][] = [];
  for (const item of items) {
    const current = units.at(-1);
    if (item.message.role === 'tool' && current) current.push(item);
    else units.push([item]);
  }
  return units;
}

/**
 * Packs units into batches of at most `budget` tokens each, least important units first. A unit
 * larger than the budget gets a batch of its own (its content is cut further when rendered).
 */
export function planBatches(
  items: readonly Positioned[],
  total: number,
  budget: number,
  measure: (item: Positioned) => number,
  importance: ImportanceConfig,
  memo: EngineMemo,
): Positioned[][] {
  const units = groupUnits(items).map((unit, order) => ({
    unit,
    order,
    score: scoreGroup(
      unit.map((u) => u.message),
      unit[0]!.position,
      total,
      importance,
      memo,
    ),
    tokens: unit.reduce((sum, item) => sum + measure(item), 0),
  }));
  units.sort((a, b) => a.score - b.score || a.order - b.order);
  const batches: { items: Positioned[]; tokens: number }[] = [];
  for (const u of units) {
    const open = batches.at(-1);
    if (open && open.tokens + u.tokens <= budget) {
      open.items.push(...u.unit);
      open.tokens += u.tokens;
    } else {
      batches.push({ items: [...u.unit], tokens: u.tokens });
    }
  }
  return batches.map((b) => b.items.sort((x, y) => x.position - y.position));
}
