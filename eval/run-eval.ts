/**
 * The needle eval: each scripted session is played turn by turn through the real engine
 * (`computeCompaction` / `applyCompaction`, compacting whenever the budget says so, as the extension
 * does) until it has been summarized `summaries` times; then the planted needles are probed against
 * what the next request would hold, without asking any model:
 *
 * - summary alone: the model's view with the engine's ledger blocks taken out of the summary;
 * - summary + ledgers: the model's view as it is (file lists and kept needles included);
 * - summary + ledgers + recall: that, or the needle found by the recall search over the archived
 *   originals (the messages compaction and pruning took out of the view), as the agent's recall tool
 *   would find it.
 */
import { assessBudget } from '../src/core/budget';
import { applyCompaction, computeCompaction, type CompactionDeps } from '../src/core/compaction';
import { DEFAULT_CONFIG, type CompactionConfig } from '../src/core/config';
import type { ContextWindow } from '../src/core/context-window';
import { EngineMemo } from '../src/core/engine-memo';
import { stripFileOperations } from '../src/core/summary-repair';
import { activeEntries, ledgerOf, modelView, type ConversationLog } from '../src/core/history';
import { stringifyOutput, type Message } from '../src/core/messages';
import type { MessageTokenCounter } from '../src/core/message-tokens';
import { stripKeptNeedles } from '../src/core/kept-needles';
import { stripWorkState } from '../src/core/work-state';
import type { Clock, Summarizer } from '../src/core/ports';
import { archivedItems, recall } from '../src/core/recall';
import { INJECTED, NEEDLE_KINDS, type EvalSession, type NeedleKind, type PlantedNeedle } from './sessions';
import { metered, type SpendCount } from './summarizers';

/** How each planted needle fared after the last summary. */
export interface NeedleOutcome {
  readonly kind: NeedleKind;
  readonly summary: boolean;
  readonly ledgers: boolean;
  readonly recall: boolean;
}

/** One session after its last summary: the needles, what the summaries cost and what compaction freed. */
export interface SessionReport {
  readonly name: string;
  /** Compactions with a summary, and compactions that pruned tool outputs and needed none. */
  readonly summaries: number;
  readonly pruningOnly: number;
  readonly turns: number;
  /** Summaries that were the extractive fallback (a failed or rejected summarizer answer). */
  readonly fallbacks: number;
  readonly needles: readonly NeedleOutcome[];
  /** Tokens sent to and written by the summarizer over the session. */
  readonly summaryTokens: number;
  readonly summarizerCalls: number;
  /** Tokens the compactions freed in all, and the part of it pruning freed. */
  readonly freedTokens: number;
  readonly freedByPruning: number;
  /** Whether a file's instructions ended up among the user's constraints (they must not). */
  readonly injectedConstraint: boolean;
  /** Why a compaction failed, if one did. */
  readonly failures: readonly string[];
}

/** Every session run with one summarizer. */
export interface EvalReport {
  readonly summarizer: string;
  readonly sessions: readonly SessionReport[];
}

/** The sessions, the summarizer and the engine's settings an eval runs with. */
export interface EvalOptions {
  readonly sessions: readonly EvalSession[];
  readonly summarizer: Summarizer;
  readonly counter: MessageTokenCounter;
  /** Summaries each session goes through (5). */
  readonly summaries?: number;
  /** The chat model's window (16,000 tokens: a few turns fill it). */
  readonly window?: number;
  readonly config?: CompactionConfig;
  /** Progress lines, for a long run against a model. */
  readonly log?: (line: string) => void;
}

/** Ordinary turns a session may take before it is given up on (a summarizer that never compacts). */
const MAX_TURNS = 400;

export async function runEval(options: EvalOptions): Promise<EvalReport> {
  const reports: SessionReport[] = [];
  for (const session of options.sessions) reports.push(await runSession(session, options));
  return { summarizer: options.summarizer.name, sessions: reports };
}

async function runSession(session: EvalSession, options: EvalOptions): Promise<SessionReport> {
  const config = options.config ?? DEFAULT_CONFIG;
  const window: ContextWindow = { limit: options.window ?? 16_000, source: 'model' };
  const wanted = options.summaries ?? 5;
  const spend: SpendCount = { inputTokens: 0, outputTokens: 0, calls: 0 };
  const countText = (value: string): number => options.counter.countText(value);
  let ids = 0;
  const deps: CompactionDeps = {
    counter: options.counter,
    summarizer: metered(options.summarizer, spend, countText),
    clock: evalClock,
    newId: () => `${session.name}-entry-${++ids}`,
    memo: new EngineMemo(),
  };

  let log: ConversationLog = [...session.opening];
  let summaries = 0;
  let pruningOnly = 0;
  let freedTokens = 0;
  let freedByPruning = 0;
  const failures: string[] = [];
  let turn = 0;
  for (; summaries < wanted && turn < MAX_TURNS; turn++) {
    log = [...log, ...session.turn(turn)];
    const used = options.counter.countMessages(modelView(log, deps.memo));
    if (!assessBudget(used, window, config.trigger, config.autoCompact).shouldCompact) continue;
    const outcome = await computeCompaction({ log, reason: 'threshold', config, window, ledger: ledgerOf(log) }, deps);
    if (outcome.status !== 'compacted') {
      if (outcome.status === 'failed') failures.push(outcome.reason);
      continue;
    }
    const applied = applyCompaction(log, outcome.compaction, deps.memo);
    if (!applied.ok) {
      failures.push(applied.reason);
      continue;
    }
    log = applied.log;
    const { pruning, entry } = outcome.compaction;
    freedTokens += outcome.compaction.tokensBefore - outcome.compaction.tokensAfter;
    if (pruning) freedByPruning += pruning.tokensBefore - pruning.tokensAfter;
    if (entry) summaries++;
    else pruningOnly++;
    options.log?.(`  ${session.name}: turn ${turn}, ${entry ? `summary ${summaries}${entry.fallback ? ' (fallback)' : ''}` : 'pruning only'}`);
  }

  const entries = activeEntries(log);
  const injectedConstraint = (entries.at(-1)?.needles?.needles ?? []).some((n) => n.kind === 'constraint' && n.text.includes(INJECTED.slice(0, 30)));
  return {
    name: session.name,
    summaries,
    pruningOnly,
    turns: turn,
    fallbacks: entries.filter((e) => e.fallback).length,
    needles: probe(log, session.planted, countText, deps.memo),
    summaryTokens: spend.inputTokens + spend.outputTokens,
    summarizerCalls: spend.calls,
    freedTokens,
    freedByPruning,
    injectedConstraint,
    failures,
  };
}

/** The eval's clock: time stands still and timers never fire (the scripted summarizers answer at once). */
const evalClock: Clock = {
  now: () => 1_700_000_000_000,
  setTimer: () => () => undefined,
};

/** Probes each planted needle against the view (with and without the ledgers) and the archive. */
function probe(log: ConversationLog, planted: readonly PlantedNeedle[], countText: (value: string) => number, memo: EngineMemo): NeedleOutcome[] {
  const view = modelView(log, memo);
  const request = normalised(view.map(searchable).join('\n'));
  const summaryOnly = normalised(
    view.map((m) => (m.summaryOf !== undefined ? stripWorkState(stripKeptNeedles(stripFileOperations(searchable(m)))) : searchable(m))).join('\n'),
  );
  const archive = archivedItems(log);
  const recalled = (probeText: string): boolean =>
    recall(archive, { query: probeText, maxTokens: 8_000 }, countText).shown.some((shown) => normalised(shown.text).includes(normalised(probeText)));
  return planted.map((needle) => {
    const summary = needle.probes.every((p) => summaryOnly.includes(normalised(p)));
    const ledgers = needle.probes.every((p) => request.includes(normalised(p)));
    return { kind: needle.kind, summary, ledgers, recall: ledgers || needle.probes.every((p) => request.includes(normalised(p)) || recalled(p)) };
  });
}

/** All a message shows the model: its text, tool inputs and outputs. */
function searchable(message: Message): string {
  return message.content
    .map((part) => {
      switch (part.type) {
        case 'text':
        case 'reasoning':
          return part.text;
        case 'tool-call':
          return stringifyOutput(part.input);
        case 'tool-result':
          return stringifyOutput(part.output);
        case 'file':
          return '';
      }
    })
    .join('\n');
}

/** Compared without case, typographic quotes or differences in spacing. */
function normalised(value: string): string {
  return value
    .replace(/[\u2018\u2019]/g, "'")
    .replace(/\s+/g, ' ')
    .toLowerCase();
}

/** Share of needles of `kind` (every kind when undefined) that survive at `tier`, over the sessions. */
export function survival(report: EvalReport, tier: 'summary' | 'ledgers' | 'recall', kinds: ReadonlySet<NeedleKind> = new Set(NEEDLE_KINDS)): number {
  const needles = report.sessions.flatMap((s) => s.needles).filter((n) => kinds.has(n.kind));
  return needles.length === 0 ? 0 : needles.filter((n) => n[tier]).length / needles.length;
}
