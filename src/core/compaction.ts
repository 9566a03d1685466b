import { applicable, appliedTo, applyCompaction, lowGain, messageIds, tokensAfterAt } from './apply-compaction';
import { briefTruncation, type Positioned } from './batches';
import type { ApplyResult, CompactionDeps, CompactionOutcome, CompactionProgress, CompactionRequest, ComputedCompaction } from './compaction-types';
import { assessBudget } from './budget';
import type { CompactionConfig } from './config';
import { outputReserveFor } from './context-window';
import { redactSecrets } from './redact';
import { recentPartStart, selectForCompaction, type Selection, type SelectionOptions, type SelectionResult } from './cut-point';
import { extractiveSummary, FALLBACK_MODEL } from './fallback-summary';
import { carriedSkills } from './loaded-skills';
import { EMPTY_LEDGER, renderFileOperations } from './file-ledger';
import {
  activePrunings,
  currentBasis,
  isSummaryMessage,
  lastEntry,
  modelView,
  nextRound,
  originalTask,
  summaryMessage,
  type CompactionEntry,
  type ConversationLog,
  type LogRecord,
} from './history';
import { stringifyOutput, type Message } from './messages';
import { filesHoldingWrites } from './written-content';
import { planPruning, prunedKey, pruningCandidates, truncationCandidates, type PruneCandidate, type PruningEntry } from './pruning';
import { needleLedgerOf } from './needles';
import {
  boundTask,
  expectationsFor,
  NEEDLE_BUDGET_SHARE,
  ORIGINAL_TASK_MAX_TOKENS,
  rejectionOf,
  repairSummary,
  type BoundedTask,
} from './summary-repair';
import { buildDirective, SHORT_TEMPLATE_ROOM, systemPrompt, templateHeadings, type DirectiveOptions } from './summary-request';
import { renderWorkState } from './work-state';
import { describeFailure, isMisshapen, summarize, SummarizerFailure, type CallCount } from './summarizer-calls';

export { applicable, appliedTo, applyCompaction, lowGain, tokensAfterAt };
export type { ApplyResult, CompactionDeps, CompactionOutcome, CompactionProgress, CompactionRequest, ComputedCompaction };

/**
 * One compaction, computed from a snapshot of the log and applied separately: applying checks that
 * the snapshot is still a prefix of the log, so a compaction computed in the background keeps
 * everything appended meanwhile. The summarizer failing, timing out or returning nothing never
 * loses anything: the log is untouched, or an extractive summary (marked as such) is used.
 *
 * Compaction has two tiers. Pruning (`pruning.ts`) first replaces superseded and old large tool
 * outputs with stubs, which costs no model call; when that brings the view under its target, an
 * automatic compaction ends there. A view over the window then also has its largest tool outputs cut
 * to their head and tail, whatever its message count. Otherwise (and always when the user asks for a
 * compaction) the summarizer runs on the view with the superseded outputs pruned (and, over the
 * window, with everything the first tier took); old large ones are otherwise left for it to read,
 * since it is about to replace them anyway.
 */

/** The kept part may take at most this share of the window; a larger latest turn is split. */
const MAX_KEPT_SHARE = 0.5;

/** What `log` looks like as the snapshot a compaction is computed from (`ComputedCompaction.basis`). */
function basisOf(log: ConversationLog): ComputedCompaction['basis'] {
  return { messageIds: messageIds(log), lastEntryId: currentBasis(log), records: log.length };
}

export async function computeCompaction(request: CompactionRequest, deps: CompactionDeps): Promise<CompactionOutcome> {
  const { config, log } = request;
  const started = deps.clock.now();
  if (request.signal?.aborted) return { status: 'cancelled', reason: 'Compaction was cancelled.' };

  const view = modelView(log, deps.memo);
  const tokensBefore = deps.counter.countMessages(view);
  const over = isOverWindow(request, tokensBefore);
  const conversational = view.filter((m) => m.role !== 'system' && !isSummaryMessage(m)).length;
  // Too few messages to summarize; a pruning that alone brings the view under the target still is made.
  const waiting: CompactionOutcome | undefined =
    request.reason === 'threshold' && !over && conversational < config.minMessages
      ? {
          status: 'noop',
          reason: `Not compacting: the conversation has ${conversational} messages and automatic compaction waits for ${config.minMessages}.`,
        }
      : undefined;
  if (!config.pruning.enabled) return waiting ?? summarizeLog({ ...request, overWindow: over }, deps, started, view, view);

  const basis = basisOf(log);
  const alreadyPruned = activePrunings(log).flatMap((p) => p.outputs.map((o) => prunedKey(o.messageId, o.toolCallId)));
  // Old outputs are those outside the recent part as configured: a view over the window does not make
  // the latest turn's outputs old (they are cut evenly instead, below).
  const selected = selectMessages(view, request, deps, request.reason !== 'threshold');
  const candidates = pruningCandidates(view, {
    oldMessageIds: new Set(selected.ok ? selected.selection.toCompact.map((m) => m.id) : []),
    largeOutputTokens: config.pruning.largeOutputTokens,
    alreadyPruned: new Set(alreadyPruned),
    countOutput: (message, part) => deps.counter.countToolOutput(message, part),
    countStub: (part, key, stub) => deps.counter.countDerived(part, key, stub),
    memo: deps.memo,
    // What a write call wrote is on disk once the call is older than the recent part.
    writes: {
      recentFrom: recentPartStart(view, selectionOptionsOf(request, deps)),
      holds: filesHoldingWrites(log, request.ledger),
      countInput: (part) => deps.counter.countDerived(part, 'input', () => stringifyOutput(part.input)),
    },
  });
  const target = pruneTargetOf({ ...request, overWindow: over });
  const pruned = (taken: readonly PruneCandidate[]) => pruningOutcome(log, taken, request, deps, { tokensBefore, basis });

  // The user asked for a summary; an automatic compaction stops at the cheap tier when it is enough.
  let firstTier = candidates.filter((c) => c.output.kind !== 'old');
  if (request.reason !== 'manual' && target !== undefined && tokensBefore > target) {
    const excess = tokensBefore - target;
    const plan = planPruning(candidates, excess);
    if (plan.freed >= excess) return pruned(plan.taken);
    if (over) {
      // Over the window, a summary is not waited for while outputs can be cut: the largest, evenly.
      const taken = new Set(plan.taken.map((c) => prunedKey(c.output.messageId, c.output.toolCallId)));
      const cut = truncationCandidates(view, {
        excess: excess - plan.freed,
        exclude: new Set([...alreadyPruned, ...taken]),
        countOutput: (message, part) => deps.counter.countToolOutput(message, part),
        countStub: (part, key, stub) => deps.counter.countDerived(part, key, stub),
        memo: deps.memo,
      });
      firstTier = [...plan.taken, ...cut];
      if (plan.freed + cut.reduce((sum, c) => sum + c.saved, 0) >= excess) return pruned(firstTier);
    }
  }
  if (waiting) return waiting;
  const summarizing: CompactionRequest = { ...request, overWindow: over };
  if (firstTier.length === 0) return summarizeLog(summarizing, deps, started, view, view);
  const first = pruned(firstTier);
  if (first.status !== 'compacted' || !first.compaction.pruning) return summarizeLog(summarizing, deps, started, view, view);
  const pruning = first.compaction.pruning;
  const summarized = await summarizeLog({ ...summarizing, log: [...log, ...first.compaction.records] }, deps, started, first.compaction.view, view);
  // Nothing left worth a summary: the pruning alone is still a compaction.
  if (summarized.status === 'noop') return first;
  if (summarized.status !== 'compacted' || !summarized.compaction.entry) return summarized;
  const entry: CompactionEntry = {
    ...summarized.compaction.entry,
    tokensBefore,
    lowGain: lowGain(tokensBefore, summarized.compaction.tokensAfter, config),
    pruningId: pruning.id,
  };
  const records: LogRecord[] = [...first.compaction.records, { type: 'compaction', entry }];
  return {
    status: 'compacted',
    compaction: { ...summarized.compaction, entry, pruning, records, basis, tokensBefore, lowGain: entry.lowGain },
  };
}

/** What a pruning alone needs: no summarizer. */
export type PruningDeps = Omit<CompactionDeps, 'summarizer'>;

/**
 * The pruning a cold cache makes free (see `cache-lifetime.ts`): every tool output no longer needed
 * (superseded, stale, or old and large in the part a summary would replace), whatever the view's
 * size, and no summary: pruning that would otherwise wait for the compaction point, so as not to
 * change the prefix the provider's cache holds. Noop when nothing is worth it or pruning is off.
 */
export function computeColdPruning(
  request: Omit<CompactionRequest, 'ledger'> & { readonly view?: readonly Message[] },
  deps: PruningDeps,
): CompactionOutcome {
  const { config, log } = request;
  if (!config.pruning.enabled) return { status: 'noop', reason: 'Pruning is turned off (longrun.compaction.pruning.enabled).' };
  // The view of `log`, when the caller keeps it already.
  const view = request.view ?? modelView(log, deps.memo);
  const tokensBefore = deps.counter.countMessages(view);
  const alreadyPruned = activePrunings(log).flatMap((p) => p.outputs.map((o) => prunedKey(o.messageId, o.toolCallId)));
  const selected = selectMessages(view, { ...request, ledger: EMPTY_LEDGER }, deps, false);
  const candidates = pruningCandidates(view, {
    oldMessageIds: new Set(selected.ok ? selected.selection.toCompact.map((m) => m.id) : []),
    largeOutputTokens: config.pruning.largeOutputTokens,
    alreadyPruned: new Set(alreadyPruned),
    countOutput: (message, part) => deps.counter.countToolOutput(message, part),
    countStub: (part, key, stub) => deps.counter.countDerived(part, key, stub),
    memo: deps.memo,
  });
  const basis = basisOf(log);
  return pruningOutcome(log, candidates, { ...request, ledger: EMPTY_LEDGER }, deps, { tokensBefore, basis });
}

/**
 * The messages a summary would replace and those it would keep, as configured. When the configured
 * recent part is larger than the kept part may be, or when `harder` and the configured recent part is
 * all there is, only the latest request and what follows it are kept (`hardestSelection`).
 */
function selectMessages(
  view: readonly Message[],
  request: CompactionRequest,
  deps: Pick<CompactionDeps, 'counter'>,
  harder: boolean,
): SelectionResult {
  const selected = selectForCompaction(view, selectionOptionsOf(request, deps));
  // Asked for by the user, or forced by an overflow or a view over the window: when the configured
  // recent part is all there is, keep only the latest request and its answer. A recent part too large
  // to keep is never kept, whatever the reason.
  if (selected.ok || !(harder || selected.tooLarge)) return selected;
  const hardest = hardestSelection(view, request, deps);
  return hardest.ok ? hardest : selected;
}

/** The selection that keeps only the latest request and what follows it (its early steps summarized when too large). */
function hardestSelection(view: readonly Message[], request: CompactionRequest, deps: Pick<CompactionDeps, 'counter'>): SelectionResult {
  const options = selectionOptionsOf(request, deps);
  return selectForCompaction(view, { ...options, keepRecent: { ...options.keepRecent, mode: 'messages', messages: 0 } });
}

/** How the request's configuration selects: its recent part, and at most `MAX_KEPT_SHARE` of the window kept. */
function selectionOptionsOf(request: CompactionRequest, deps: Pick<CompactionDeps, 'counter'>): SelectionOptions {
  const limit = request.window.limit;
  return {
    keepRecent: request.config.keepRecent,
    limit,
    countMessage: (m: Message) => deps.counter.countMessage(m),
    keepSystemMessages: request.config.keepSystemMessages,
    maxKeptTokens: limit > 0 ? Math.floor(limit * MAX_KEPT_SHARE) : Number.POSITIVE_INFINITY,
  };
}

/** The count to get under: the request's, else the compaction target of the window; undefined when unknown. */
function pruneTargetOf(request: CompactionRequest): number | undefined {
  if (request.pruneTarget !== undefined) return request.pruneTarget;
  if (request.window.limit <= 0) return undefined;
  const warningAt = assessBudget(0, request.window, request.config.trigger).warningAt;
  // Over the window, the aim is to fit again with as much of the turn under way kept as can be.
  return request.overWindow ? warningAt : compactionTarget(request.window.limit, warningAt, request.config);
}

/** Where an automatic compaction brings the view: the target share of the window, never above the warning level. */
export function compactionTarget(limit: number, warningAt: number, config: Pick<CompactionConfig, 'targetThreshold'>): number {
  return Math.min(warningAt, Math.floor(limit * config.targetThreshold));
}

/** Whether a compaction answers a request that does not fit: after an overflow error, or a view over the window. */
function overPath(request: CompactionRequest): boolean {
  return request.reason === 'overflow' || request.overWindow === true;
}

/** Whether the view of `tokensBefore` (local count) does not fit: as the caller says, else by the local count. */
function isOverWindow(request: CompactionRequest, tokensBefore: number): boolean {
  if (request.reason === 'overflow') return true;
  if (request.overWindow !== undefined) return request.overWindow;
  return request.window.limit > 0 && tokensBefore > request.window.limit;
}

/** The compaction that prunes `taken` and nothing else; noop when that would free nothing. */
function pruningOutcome(
  log: ConversationLog,
  taken: readonly PruneCandidate[],
  request: CompactionRequest,
  deps: PruningDeps,
  before: { readonly tokensBefore: number; readonly basis: ComputedCompaction['basis'] },
): CompactionOutcome {
  const { tokensBefore, basis } = before;
  const provisional: PruningEntry = {
    id: deps.newId(),
    reason: request.reason,
    outputs: taken.map((c) => c.output),
    tokensBefore,
    tokensAfter: 0,
    createdAt: deps.clock.now(),
  };
  // The view does not depend on the entry's numbers: the one derived here is the final one.
  const view = modelView([...log, { type: 'pruning', entry: provisional }], deps.memo);
  const tokensAfter = deps.counter.countMessages(view);
  if (taken.length === 0 || tokensAfter >= tokensBefore) return { status: 'noop', reason: 'Not compacting: no tool output is worth pruning.' };
  const entry: PruningEntry = { ...provisional, tokensAfter };
  return {
    status: 'compacted',
    compaction: {
      pruning: entry,
      records: [{ type: 'pruning', entry }],
      basis,
      view,
      repairs: [],
      compactedCount: 0,
      tokensBefore,
      tokensAfter,
      lowGain: lowGain(tokensBefore, tokensAfter, request.config),
    },
  };
}

/**
 * The summary tier: summarizes the view of `request.log` (`view`, when already derived) as
 * configured. `sent` is the view as the agent last sent it (before a pruning made in the same
 * compaction), which a request continuing the conversation repeats.
 */
async function summarizeLog(
  request: CompactionRequest,
  deps: CompactionDeps,
  started: number,
  view: readonly Message[] = modelView(request.log, deps.memo),
  sent: readonly Message[] = view,
): Promise<CompactionOutcome> {
  const tokensBefore = deps.counter.countMessages(view);
  const over = overPath(request);
  let selected = selectMessages(view, request, deps, request.reason !== 'threshold' || over);
  if (!selected.ok) return { status: 'noop', reason: selected.reason };
  let tooLittle = tooLittleToSummarize(selected.selection, request, deps, tokensBefore);
  // Over the window, a summary of too little would leave the request over it: the latest request alone is kept instead.
  if (tooLittle && over) {
    const hardest = hardestSelection(view, request, deps);
    if (hardest.ok) {
      selected = hardest;
      tooLittle = tooLittleToSummarize(hardest.selection, request, deps, tokensBefore);
    }
  }
  if (tooLittle) return { status: 'noop', reason: tooLittle };
  const plan = { ...planSummary(view, selected.selection, request, deps), sent };
  const written = await writeSummary(plan, request, deps);
  if ('status' in written) return written;
  return finishCompaction(plan, written, request, deps, { started, tokensBefore });
}

/**
 * Why an automatic compaction (at the threshold, or after an overflow) is not worth a summarizer call:
 * the messages a summary would replace hold less than the share of the view a compaction must free,
 * so even an empty summary would free too little. Over the window too: such a summary would not make
 * the request fit. Only a compaction the user asks for is always tried.
 */
function tooLittleToSummarize(selection: Selection, request: CompactionRequest, deps: CompactionDeps, tokensBefore: number): string | undefined {
  if (request.reason === 'manual' || tokensBefore <= 0) return undefined;
  const freeable = deps.counter.countMessages(selection.toCompact);
  if (freeable >= tokensBefore * request.config.minGainShare) return undefined;
  const count = selection.toCompact.length;
  return (
    `Not compacting: the ${count} message${count === 1 ? '' : 's'} a summary could replace hold about ${freeable} of the view's ${tokensBefore} tokens, ` +
    `less than the ${Math.round(request.config.minGainShare * 100)}% a compaction must free; the rest is the recent part that is kept.`
  );
}

/** What one summary covers and how it is asked for: the round, its size, the task, the directive. */
interface SummaryPlan {
  readonly view: readonly Message[];
  readonly selection: Selection;
  readonly round: number;
  readonly task: BoundedTask | undefined;
  /** The configuration with the summary's target sized for the window. */
  readonly config: CompactionConfig;
  /** The messages to summarize, with their positions (cut short at brief depth). */
  readonly items: readonly Positioned[];
  readonly directive: DirectiveOptions;
  /** The view as the agent last sent it (see `summarizeLog`). */
  readonly sent?: readonly Message[];
}

function planSummary(view: readonly Message[], selection: Selection, request: CompactionRequest, deps: CompactionDeps): SummaryPlan {
  const { config, log } = request;
  const round = nextRound(log);
  // The same task comes back at every compaction: its count is remembered.
  const sized = sizeSummary(config, request.window.limit, deps.summarizer.contextWindow, (value) => deps.counter.countRemembered(value));
  const task = sized.task(originalTask(log));
  const summaryConfig: CompactionConfig = { ...config, summary: { ...config.summary, targetTokens: sized.targetFor(task) } };
  const positionOf = new Map(view.map((m, i) => [m.id, i] as const));
  const positioned: Positioned[] = selection.toCompact.map((message) => ({ message, position: positionOf.get(message.id) ?? 0 }));
  const items = config.summary.depth === 'brief' ? briefTruncation(positioned, view.length, config.importance, deps.memo) : positioned;
  const directive: DirectiveOptions = {
    round,
    summary: summaryConfig.summary,
    originalTask: task?.text,
    focus: request.focus,
    splitTurn: selection.splitTurn,
    ...(sized.short ? { short: true } : {}),
  };
  return { view, selection, round, task, config: summaryConfig, items, directive };
}

/** A summary's text and who wrote it: the summarizer, or the extractive fallback after its failure. */
interface WrittenSummary {
  readonly text: string;
  readonly model: string;
  readonly fallback: boolean;
  readonly failure?: string;
  /** The summarizer's text was turned down for its shape or length only (see `SummarizerFailure`). */
  readonly misshapen?: true;
  readonly calls: number;
}

/**
 * Asks the summarizer (unless it is resting); on its failure, the fallback when the settings allow
 * it, else the outcome to return.
 */
async function writeSummary(plan: SummaryPlan, request: CompactionRequest, deps: CompactionDeps): Promise<WrittenSummary | CompactionOutcome> {
  const { selection } = plan;
  const counted: CallCount = { calls: 0 };
  if (request.summarizerResting) return withoutSummarizer(plan, request, deps, request.summarizerResting, counted);
  try {
    const produced = await summarize(
      plan.items,
      plan.view.length,
      selection.previousSummary,
      plan.directive,
      { ...request, config: plan.config },
      { ...deps, counted },
      continuationOf(plan),
    );
    const summarized = selection.previousSummary ? [selection.previousSummary, ...selection.toCompact] : selection.toCompact;
    const rejection = rejectionOf(produced.text, expectationsFor(plan.config.summary, summarized, deps.counter, promptOf(plan)));
    if (rejection) throw new SummarizerFailure(rejection.reason, rejection.kind === 'shape');
    return { text: produced.text, model: produced.model ?? deps.summarizer.name, fallback: false, calls: counted.calls };
  } catch (error) {
    if (request.signal?.aborted) return { status: 'cancelled', reason: 'Compaction was cancelled; the conversation is unchanged.' };
    const failure = redactSecrets(deps.redact ? deps.redact(describeFailure(error)) : describeFailure(error));
    return withoutSummarizer(plan, request, deps, failure, counted, isMisshapen(error));
  }
}

/** The instructions a summary was asked with, without the task it is to copy: a summary that says them back is none. */
function promptOf(plan: SummaryPlan): string {
  return `${systemPrompt(plan.config.summary)}\n${buildDirective({ ...plan.directive, originalTask: undefined })}`;
}

/** The summary when the summarizer failed or was not asked (`failure` says which): the extractive one, or none as the settings say. */
function withoutSummarizer(
  plan: SummaryPlan,
  request: CompactionRequest,
  deps: CompactionDeps,
  failure: string,
  counted: CallCount,
  misshapen = false,
): WrittenSummary | CompactionOutcome {
  if (request.config.onSummarizerFailure !== 'fallback') {
    return {
      status: 'failed',
      reason: `Compaction failed: ${failure}. The conversation is unchanged.`,
      summarizerFailure: failure,
      ...(misshapen ? { summaryMisshapen: true as const } : {}),
    };
  }
  const { selection } = plan;
  const text = extractiveSummary({
    round: plan.round,
    toCompact: selection.toCompact,
    previousSummary: selection.previousSummary,
    failure,
    budgetTokens: plan.config.summary.targetTokens * 2,
    ...(plan.task ? { skipUserText: originalTask(request.log) } : {}),
    countText: (value) => deps.counter.countText(value),
  });
  return { text, model: FALLBACK_MODEL, fallback: true, failure, calls: counted.calls, ...(misshapen ? { misshapen: true as const } : {}) };
}

/** Repairs the summary, adds the ledgers, and makes the entry, unless it would not shrink the view. */
function finishCompaction(
  plan: SummaryPlan,
  written: WrittenSummary,
  request: CompactionRequest,
  deps: CompactionDeps,
  timing: { readonly started: number; readonly tokensBefore: number },
): CompactionOutcome {
  const { log, config } = request;
  const { selection, round } = plan;
  const { tokensBefore } = timing;
  // The needle ledger, like the file ledger, is kept by the engine: what the summary dropped is appended.
  const needles = needleLedgerOf(log, deps.memo);
  const repaired = repairSummary(written.text, round, plan.task?.text, {
    ledger: needles,
    inView: [...selection.pinned, ...selection.kept],
    summaryTargetTokens: plan.config.summary.targetTokens,
    countText: (value) => deps.counter.countText(value),
  });
  const provisional: CompactionEntry = {
    id: deps.newId(),
    round,
    reason: request.reason,
    summary: [repaired.text, workState(log, selection, deps), renderFileOperations(request.ledger)].filter(Boolean).join('\n\n'),
    firstKeptMessageId: selection.kept[0]?.id ?? null,
    compactedMessageIds: selection.toCompact.map((m) => m.id),
    tokensBefore,
    tokensAfter: 0,
    fileOperations: request.ledger,
    needles,
    model: written.model,
    durationMs: 0,
    createdAt: deps.clock.now(),
    summaryRole: config.summary.messageRole,
    fallback: written.fallback,
    lowGain: false,
    splitTurn: selection.splitTurn,
    summarizerCalls: written.calls,
    ...(request.focus?.trim() ? { focus: request.focus.trim() } : {}),
    ...(written.failure ? { failure: written.failure } : {}),
    ...carried(lastEntry(log)?.skills, selection.toCompact),
  };
  // The view does not depend on the entry's numbers: the one derived here is the final one, but for its summary message.
  const provisionalView = modelView([...log, { type: 'compaction', entry: provisional }], deps.memo);
  const tokensAfter = deps.counter.countMessages(provisionalView);
  if (tokensAfter >= tokensBefore) {
    return {
      status: 'noop',
      reason: `Not compacting: the summary would leave ${tokensAfter.toLocaleString('en-US')} tokens, no fewer than the ${tokensBefore.toLocaleString('en-US')} there are now.`,
    };
  }
  // Over the window, a summary that frees little leaves the request over it: it is not applied.
  if (overPath(request) && lowGain(tokensBefore, tokensAfter, config)) {
    const freed = tokensBefore - tokensAfter;
    return {
      status: 'noop',
      reason: `Not compacting: the summary would free only ${freed.toLocaleString('en-US')} of the view's ${tokensBefore.toLocaleString('en-US')} tokens (${((freed / tokensBefore) * 100).toFixed(1)}%), less than the ${Math.round(config.minGainShare * 100)}% a compaction must free.`,
    };
  }
  const entry: CompactionEntry = {
    ...provisional,
    tokensAfter,
    lowGain: lowGain(tokensBefore, tokensAfter, config),
    durationMs: deps.clock.now() - timing.started,
  };
  const record: LogRecord = { type: 'compaction', entry };
  const summaryTokens = deps.counter.storedTokens(summaryMessage(entry, deps.memo));
  return {
    status: 'compacted',
    compaction: {
      entry,
      records: [record],
      basis: basisOf(log),
      view: provisionalView.map((m) => (m.summaryOf === provisional.id ? summaryMessage(entry, deps.memo) : m)),
      repairs: repaired.repairs,
      compactedCount: selection.toCompact.length,
      tokensBefore,
      tokensAfter,
      lowGain: entry.lowGain,
      needleBudgetTokens: Math.floor(plan.config.summary.targetTokens * NEEDLE_BUDGET_SHARE),
      ...(written.misshapen ? { summaryMisshapen: true as const } : {}),
      ...(summaryTokens ? { summaryCount: { summary: entry.summary, tokens: summaryTokens } } : {}),
    },
  };
}

/** The work state of `log` for a summary that keeps `selection` (made again when the summary is applied). */
function workState(log: ConversationLog, selection: Selection, deps: CompactionDeps): string {
  return renderWorkState({ log, inView: [...selection.pinned, ...selection.kept], countText: (value) => deps.counter.countText(value) });
}

/**
 * The summary's size for a conversation whose messages have `room` tokens: the template (the short
 * one in a small room), the bounded task, and the target the model writes within. The target is the
 * setting, cut to the summarizer's output room and to a tenth of the room, but never below the
 * template's headings and `SUMMARY_BODY_FLOOR` tokens of text (a floor itself at most
 * `SUMMARY_FLOOR_SHARE` of the room), unless the setting asks for less.
 */
export function sizeSummary(config: CompactionConfig, room: number, summarizerWindow: number | undefined, countText: (value: string) => number) {
  const target = config.summary.targetTokens;
  const window = summarizerWindow && summarizerWindow > 0 ? summarizerWindow : room;
  const short = room > 0 && room < SHORT_TEMPLATE_ROOM;
  // The summary's output room is the target and a quarter; a small window caps it like any answer.
  const outputRoom = Math.min(Math.ceil(target * 1.25), outputReserveFor(window) || Number.POSITIVE_INFINITY);
  const ceiling = Math.min(target, Math.floor(outputRoom / 1.25));
  // A summary that takes a fifth of a small window would be compacted again a turn or two later.
  const shareCap = room > 0 ? Math.floor(room * SUMMARY_MAX_SHARE) : Number.POSITIVE_INFINITY;
  const headings = countText(templateHeadings(config.summary, short));
  const floor = Math.min(headings + SUMMARY_BODY_FLOOR, room > 0 ? Math.floor(room * SUMMARY_FLOOR_SHARE) : Number.POSITIVE_INFINITY);
  const fitted = Math.max(MIN_TARGET_TOKENS, Math.min(ceiling, Math.max(shareCap, floor)));
  const taskCap = Math.min(ORIGINAL_TASK_MAX_TOKENS, Math.floor(fitted / 2));
  return {
    short,
    task: (task: string | undefined) => (task === undefined ? undefined : boundTask(task, taskCap, countText)),
    // The task is inserted verbatim by the repair; the model writes the rest within what is left, never less than the floor.
    targetFor: (task: { tokens: number } | undefined) =>
      Math.max(MIN_TARGET_TOKENS, Math.min(ceiling, Math.max(floor, fitted - (task?.tokens ?? 0)))),
  };
}

/** A summary takes at most this share of the conversation's window (800 of 8,000 and more stays 800). */
const SUMMARY_MAX_SHARE = 0.1;

/** Tokens of text a summary is given beyond its template's headings, however small the window. */
export const SUMMARY_BODY_FLOOR = 150;

/** The floor of a summary's target takes at most this share of the room for the conversation's messages. */
export const SUMMARY_FLOOR_SHARE = 0.25;

/** The smallest summary target worth asking for (the setting's own minimum). */
const MIN_TARGET_TOKENS = 50;

/** Computes and applies in one step, for when nothing else can write meanwhile. */
export async function compact(request: CompactionRequest, deps: CompactionDeps): Promise<CompactionOutcome & { readonly log?: ConversationLog }> {
  const outcome = await computeCompaction(request, deps);
  if (outcome.status !== 'compacted') return outcome;
  const applied = applyCompaction(request.log, outcome.compaction, deps.memo);
  if (!applied.ok) return { status: 'failed', reason: applied.reason };
  return { ...outcome, log: applied.log };
}

/**
 * The messages a summary request continuing the conversation repeats: the view as sent, from its
 * start through the last message this summary replaces; undefined when there is nothing to continue.
 */
function continuationOf(plan: SummaryPlan): readonly Message[] | undefined {
  if (!plan.sent) return undefined;
  const replaced = new Set(plan.selection.toCompact.map((m) => m.id));
  let last = -1;
  plan.sent.forEach((message, index) => {
    if (replaced.has(message.id)) last = index;
  });
  return last >= 0 ? plan.sent.slice(0, last + 1) : undefined;
}

/** The `skills` field of an entry: what the summary it replaces carried, and what the messages it takes out loaded. */
function carried(previous: CompactionEntry['skills'], compacted: readonly Message[]): Pick<CompactionEntry, 'skills'> {
  const skills = carriedSkills(previous, compacted);
  return skills ? { skills } : {};
}
