import type { TriggerConfig } from './config';
import type { ContextWindow } from './context-window';

export type BudgetLevel = 'ok' | 'warning' | 'critical' | 'over' | 'unknown';

export interface BudgetAssessment {
  readonly level: BudgetLevel;
  /** Tokens in use. */
  readonly used: number;
  /** The window's size; 0 when unknown. */
  readonly limit: number;
  /** Share of the window in use (0 when the window is unknown). */
  readonly fraction: number;
  /** Where the warning level begins. */
  readonly warningAt: number;
  /** Where the critical level begins: automatic compaction runs from here. */
  readonly compactAt: number;
  /** Whether automatic compaction may run at this level (and is needed). */
  readonly shouldCompact: boolean;
  /** One sentence for a person: the level, and the numbers behind it. */
  readonly explanation: string;
}

/** The token count at which the configured trigger mode (`trigger.mode`) says to compact. */
export function compactionThreshold(limit: number, trigger: TriggerConfig): number {
  switch (trigger.mode) {
    case 'levels':
      return Math.floor(limit * trigger.criticalThreshold);
    case 'reserve':
      return limit - Math.min(trigger.reserveTokens, Math.floor(limit * trigger.reserveShare));
    case 'reserved-percent': {
      const available = limit - trigger.systemReserve - trigger.outputReserve - trigger.safetyBuffer;
      return Math.max(0, Math.floor(available * trigger.reservedThreshold));
    }
    case 'percent':
      return Math.floor(limit * trigger.windowThreshold);
  }
}

function describeRule(trigger: TriggerConfig): string {
  switch (trigger.mode) {
    case 'levels':
      return `${pct(trigger.criticalThreshold)} of the window`;
    case 'reserve':
      return `the window less a ${trigger.reserveTokens.toLocaleString('en-US')}-token reserve (at most ${pct(trigger.reserveShare)})`;
    case 'reserved-percent':
      return `${pct(trigger.reservedThreshold)} of the window less system, output and safety reserves`;
    case 'percent':
      return `${pct(trigger.windowThreshold)} of the window`;
  }
}

/**
 * The level of a conversation's use of the window. Pure: the same numbers give the same answer.
 * An unknown or zero window disables automatic compaction and says so.
 */
export function assessBudget(used: number, window: ContextWindow, trigger: TriggerConfig, autoCompact = true): BudgetAssessment {
  const limit = window.limit > 0 ? window.limit : 0;
  if (limit === 0) {
    return {
      level: 'unknown',
      used,
      limit: 0,
      fraction: 0,
      warningAt: 0,
      compactAt: 0,
      shouldCompact: false,
      explanation: `Automatic compaction is off: ${window.reason ?? 'the context window is unknown'}.`,
    };
  }
  const compactAt = Math.min(limit, compactionThreshold(limit, trigger));
  const warningAt = Math.min(compactAt, Math.floor(limit * trigger.warningThreshold));
  const fraction = used / limit;
  const numbers = `${fmt(used)} of ${fmt(limit)} tokens (${pct(fraction)})`;
  let level: BudgetLevel;
  let explanation: string;
  if (used > limit) {
    level = 'over';
    explanation = `Over the window: ${numbers}; the next request will not fit without compaction.`;
  } else if (used >= compactAt) {
    level = 'critical';
    explanation = `Critical: ${numbers}, at or above the compaction point ${fmt(compactAt)} (${describeRule(trigger)}).`;
  } else if (used >= warningAt) {
    level = 'warning';
    explanation = `Warning: ${numbers}; compaction starts at ${fmt(compactAt)} (${describeRule(trigger)}).`;
  } else {
    level = 'ok';
    explanation = `OK: ${numbers}; warning at ${fmt(warningAt)}, compaction at ${fmt(compactAt)}.`;
  }
  const needed = level === 'critical' || level === 'over';
  if (needed && !autoCompact) explanation += ' Automatic compaction is turned off.';
  return { level, used, limit, fraction, warningAt, compactAt, shouldCompact: needed && autoCompact, explanation };
}

function fmt(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

function pct(fraction: number): string {
  return `${Math.round(fraction * 1000) / 10}%`;
}

/** Where the tokens of a request go, as the gauge's tooltip and `/context` break them down. */
export interface UsageBreakdown {
  /** The request overhead (system prompt and tool definitions), with the view's system messages (instructions, loaded skills). */
  readonly requestOverhead: number;
  readonly summary: number;
  readonly messages: number;
  readonly toolResults: number;
  /** Room kept for the model's answer (what is sent as its maximum output). */
  readonly outputReserve: number;
  /** The whole window and where its size came from; the budget's limit is this less the reserve. */
  readonly window?: { readonly limit: number; readonly origin: string; readonly assumed: boolean };
}
