/**
 * Asking the summarizer: one request, or batches of a request too large for its window whose
 * summaries are merged, each call under the summarizer's deadline, counted, and its failure told apart.
 */

import { planBatches, type Positioned } from './batches';
import type { CompactionDeps, CompactionRequest } from './compaction-types';
import type { TruncationConfig } from './config';
import type { Message } from './messages';
import type { SummaryRequest, SummaryResponse } from './ports';
import { unusableReason } from './summary-repair';
import {
  buildDirective,
  buildMergeRequest,
  buildSummaryRequest,
  countRequest,
  renderedMessageTokens,
  type DirectiveOptions,
} from './summary-request';

const MIN_BATCH_BUDGET = 256;
const MERGE_DEPTH_LIMIT = 4;
/**
 * A summarizer call that gave no usable summary. `misshapen` when its answer was real text the checks
 * turned down for its shape or length: that is not counted against the summarizer (see `compaction-guard.ts`).
 */
export class SummarizerFailure extends Error {
  constructor(
    message: string,
    readonly misshapen = false,
  ) {
    super(message);
  }
}

/** Whether `error` is a summary turned down for its shape or length rather than the summarizer's failure. */
export function isMisshapen(error: unknown): boolean {
  return error instanceof SummarizerFailure && error.misshapen;
}

export function describeFailure(error: unknown): string {
  if (error instanceof SummarizerFailure) return error.message;
  if (error instanceof Error) return `the summarizer failed (${error.message || error.name})`;
  return `the summarizer failed (${String(error)})`;
}

interface Produced {
  readonly text: string;
  readonly model?: string;
}

/** Counts summarizer calls, including those made before a failure. */
export interface CallCount {
  calls: number;
}

type CountingDeps = CompactionDeps & { readonly counted: CallCount };

/**
 * One summary request. A summarizer that is the agent's own model is sent the conversation it has
 * cached instead, when that fits its window with room for the summary (not after an overflow: it did
 * not fit). Such a request offers the conversation's tools with tool use off; a model whose server
 * lets it call one anyway (or that answers nothing) is asked once more with the plain request, which
 * offers none.
 */
async function summarizeInOneCall(
  single: SummaryRequest,
  window: number,
  directive: DirectiveOptions,
  request: CompactionRequest,
  deps: CountingDeps,
  continuation: readonly Message[] | undefined,
): Promise<Produced> {
  request.onProgress?.({ phase: 'summarizing', call: 1, calls: 1 });
  const continueWith = deps.summarizer.continues && continuation && request.reason !== 'overflow' ? continuation : undefined;
  const directiveText = continueWith ? buildDirective({ ...directive, continuation: true }) : '';
  const fits = (messages: readonly Message[]): boolean =>
    window <= 0 || deps.counter.countMessages(messages) + deps.counter.countText(directiveText) + single.maxOutputTokens <= window;
  const continued = continueWith && fits(continueWith) ? { ...single, continuation: { messages: continueWith, directive: directiveText } } : single;
  const response = await callSummarizer(continued, request, deps);
  if (continued === single || !strayed(response)) return { text: response.text, model: response.model };
  request.onProgress?.({ phase: 'summarizing', call: 2, calls: 2 });
  const plain = await callSummarizer(single, request, deps);
  return { text: plain.text, model: plain.model };
}

/** A summary request answered with a tool call, or with nothing a summary could be made of. */
function strayed(response: SummaryResponse): boolean {
  return (response.calledTools?.length ?? 0) > 0 || unusableReason(response.text) !== undefined;
}

/** Summarizes the items in one call, or in batches and a merge when one call would not fit. */
export async function summarize(
  items: readonly Positioned[],
  total: number,
  previousSummary: Message | undefined,
  directive: DirectiveOptions,
  request: CompactionRequest,
  deps: CountingDeps,
  continuation?: readonly Message[],
): Promise<Produced> {
  const { config } = request;
  // Rendered messages are counted once each, however often they are checked and packed.
  const countTokens = (built: SummaryRequest): number => countRequest(built, deps.counter, deps.memo);
  const window = deps.summarizer.contextWindow && deps.summarizer.contextWindow > 0 ? deps.summarizer.contextWindow : request.window.limit;
  const single = buildSummaryRequest({
    summary: config.summary,
    truncation: config.truncation,
    messages: items,
    previousSummary,
    directive,
    purpose: 'summary',
    importance: config.importance,
    total,
    memo: deps.memo,
  });
  if (window <= 0 || countTokens(single) <= window) return summarizeInOneCall(single, window, directive, request, deps, continuation);

  // Too large for one request: batches by importance, then a merge of the batch summaries.
  const emptyBatch = buildSummaryRequest({
    summary: config.summary,
    truncation: config.truncation,
    messages: [],
    directive: { ...directive, batch: { index: 1, count: 99 } },
    purpose: 'batch',
    memo: deps.memo,
  });
  const budget = window - countTokens(emptyBatch);
  if (budget < MIN_BATCH_BUDGET) {
    throw new SummarizerFailure(`the summarizer's window (${window} tokens) is too small to hold a summary request`);
  }
  const measure = (item: Positioned): number =>
    renderedMessageTokens(item.message, item.position, item.truncation ?? config.truncation, deps.counter, deps.memo) + 4;
  const batches = planBatches(items, total, budget, measure, config.importance, deps.memo);
  const planned = batches.length + 1;
  const summaries: string[] = [];
  let model: string | undefined;
  for (const [index, batch] of batches.entries()) {
    request.onProgress?.({ phase: 'summarizing', call: index + 1, calls: planned });
    const batchRequest = fitToWindow(
      (truncation) =>
        buildSummaryRequest({
          summary: config.summary,
          truncation,
          messages: batch,
          directive: { ...directive, batch: { index: index + 1, count: batches.length } },
          purpose: 'batch',
          importance: config.importance,
          total,
          memo: deps.memo,
        }),
      config.truncation,
      window,
      countTokens,
    );
    const response = await callSummarizer(batchRequest, request, deps);
    const usable = unusableReason(response.text);
    if (usable) throw new SummarizerFailure(`batch ${index + 1} of ${batches.length}: ${usable}`);
    summaries.push(response.text.trim());
    model = response.model ?? model;
  }
  request.onProgress?.({ phase: 'merging', call: planned, calls: planned });
  const merged = await mergeSummaries(summaries, previousSummary, directive, window, request, deps, 0);
  return { text: merged.text, model: merged.model ?? model };
}

async function mergeSummaries(
  summaries: readonly string[],
  previousSummary: Message | undefined,
  directive: DirectiveOptions,
  window: number,
  request: CompactionRequest,
  deps: CountingDeps,
  depth: number,
): Promise<{ text: string; model?: string }> {
  const whole = buildMergeRequest(request.config.summary, summaries, previousSummary, directive);
  if (countRequest(whole, deps.counter, deps.memo) <= window || summaries.length <= 1 || depth >= MERGE_DEPTH_LIMIT) {
    const response = await callSummarizer(whole, request, deps);
    return { text: response.text, model: response.model };
  }
  // Even the batch summaries do not fit together: merge them in halves first (a merge tree).
  const middle = Math.ceil(summaries.length / 2);
  const halves = [summaries.slice(0, middle), summaries.slice(middle)];
  const partials: string[] = [];
  for (const half of halves) {
    const partial = await mergeSummaries(half, undefined, directive, window, request, deps, depth + 1);
    partials.push(partial.text.trim());
  }
  return mergeSummaries(partials, previousSummary, directive, window, request, deps, depth + 1);
}

/** Builds a request, cutting message content harder until it fits the window (or cannot shrink more). */
function fitToWindow(
  build: (truncation: TruncationConfig) => SummaryRequest,
  truncation: TruncationConfig,
  window: number,
  countTokens: (request: SummaryRequest) => number,
): SummaryRequest {
  let current = truncation;
  let built = build(current);
  for (let i = 0; i < 8 && countTokens(built) > window; i++) {
    current = {
      resultChars: Math.max(100, Math.floor(current.resultChars / 2)),
      hugeResultChars: Math.max(100, Math.floor(current.hugeResultChars / 2)),
      messageChars: Math.max(200, Math.floor(current.messageChars / 2)),
    };
    built = build(current);
  }
  return built;
}

/** One summarizer call with the configured timeout, abortable by the request's signal. */
async function callSummarizer(summaryRequest: SummaryRequest, request: CompactionRequest, deps: CountingDeps) {
  deps.counted.calls++;
  const controller = new AbortController();
  const outer = request.signal;
  const onAbort = (): void => controller.abort(outer?.reason);
  outer?.addEventListener('abort', onAbort, { once: true });
  let cancelTimer: () => void = () => undefined;
  const timeoutMs = request.config.summarizerTimeoutMs;
  const timedOut = new Promise<never>((_, reject) => {
    cancelTimer = deps.clock.setTimer(timeoutMs, () => {
      const error = new SummarizerFailure(`the summarizer did not answer within ${Math.round(timeoutMs / 1000)} s`);
      controller.abort(error);
      reject(error);
    });
  });
  let rejectAborted: (reason: unknown) => void = () => undefined;
  const aborted = new Promise<never>((_, reject) => {
    rejectAborted = reject;
  });
  const onOuterAbort = (): void => rejectAborted(new Error('cancelled'));
  if (outer?.aborted) onOuterAbort();
  outer?.addEventListener('abort', onOuterAbort, { once: true });
  try {
    return await Promise.race([deps.summarizer.summarize(summaryRequest, controller.signal), timedOut, aborted]);
  } finally {
    cancelTimer();
    outer?.removeEventListener('abort', onAbort);
    outer?.removeEventListener('abort', onOuterAbort);
  }
}
