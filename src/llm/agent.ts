import {
  asSchema,
  experimental_streamTextLowMemory as streamTextOnce,
  stepCountIs,
  type LanguageModel,
  type ModelMessage,
  type TelemetryOptions,
  type TextStreamPart,
  type ToolSet,
} from 'ai';
import type { BudgetAssessment } from '../core/budget';
import type { CompactionOutcome } from '../core/compaction';
import { stopsForLoop, type CompactionDecision, type CompactionMoment } from '../core/compaction-guard';
import { hasMarker, mark } from '../core/errors';
import type { CompactionReason, ConversationLog, LogRecord } from '../core/history';
import { text, type Message, type Producer } from '../core/messages';
import { describeOverflow } from '../core/overflow-error';
import type { Spent, StepLimit } from '../core/step-limit';
import { detectTruncation, type ReportedUsage, type RequestBasis, type TruncationVerdict } from '../core/usage-calibration';
import { fromResponseMessages, producerOf } from './model-messages';
import { withFirstTokenDeadline } from './first-token-deadline';
import { hintedRequest, takesBreakpoints, type CacheHints, type HintedRequest } from './cache-hints';
import { callUsage } from './call-usage';
import { MAX_KEPT_TEXT_CHARS, withKeptText } from './kept-text';

/**
 * One turn of the coding agent: `streamText` with the workspace tools and a step limit. At the
 * start of every step (`prepareStep`, before each request to the model) the budget is checked
 * and the conversation compacted when it must be; on a provider's context-overflow error the
 * conversation is compacted and the turn retried (once by default). After either compaction the
 * request is measured again, and compacted harder while it would still not fit: a request known to be
 * over the window is never sent. A compaction never ends the turn: the next step is asked for at once;
 * but two compactions in a row with no progress between them stop it (`stopsForLoop`), never a third.
 * Every step's messages are appended to the log as they come, so a cancelled or failed turn leaves a
 * consistent history.
 */

/** Compactions tried after one that left the next request over the window, before the request is given up. */
const MAX_FIT_COMPACTIONS = 2;

/** The conversation as the agent sees it; implemented by the extension over its store. */
export interface AgentConversation {
  /** The model's view of the log, kept up to date by the conversation. */
  view(): readonly Message[];
  append(records: readonly LogRecord[]): Promise<void>;
  /** The budget of the model's current view. */
  assess(): BudgetAssessment;
  /**
   * The conversation's anti-loop guard (see `CompactionGuard`): the agent says when its turn starts and
   * asks it at each moment whether to compact; the conversation notes the compactions it makes.
   */
  readonly guard: { startTurn(): void; decide(moment: CompactionMoment): CompactionDecision };
  /**
   * Compacts the conversation now. `stated` is the window a provider named in an overflow error
   * (or the one a cut prompt suggests), when there is one: smaller than the declared window, it is
   * the one to aim for; `why` says where it came from.
   */
  compact(
    reason: CompactionReason,
    signal: AbortSignal,
    stated?: { readonly limit: number; readonly why: string; readonly lowerBound?: boolean },
  ): Promise<CompactionOutcome>;
  /** What a request sent now is built on; stamped on the usage that comes back for it. */
  requestBasis(): RequestBasis & { readonly model?: string };
  newId(): string;
  /**
   * The id of the message that ends the part of the view the last compaction left stable (its summary
   * and what it kept), where a cache breakpoint keeps it; absent when there is none.
   */
  stableEnd?(): string | undefined;
  /**
   * The branch's records, for the rule against compaction loops (`stopsForLoop`), which reads what
   * came between two compactions of the turn. Absent: the rule does not apply.
   */
  log?(): ConversationLog;
}

/** How the turn shows itself; the chat participant implements it over the response stream. */
export interface AgentUi {
  text(delta: string): void;
  toolCall(toolName: string, input: unknown): void;
  compacting(reason: CompactionReason): void;
  compacted(outcome: CompactionOutcome, reason: CompactionReason): void;
  notice(message: string): void;
  /**
   * Asks the user once whether to compact now (with `requireConfirmation`); resolves true for
   * "Compact". Absent: compaction needs no confirmation.
   */
  confirmCompaction?(signal: AbortSignal): Promise<boolean>;
}

export interface AgentTurnOptions {
  readonly model: LanguageModel;
  readonly system: string;
  readonly tools: ToolSet;
  readonly maxSteps: number;
  readonly signal: AbortSignal;
  readonly conversation: AgentConversation;
  readonly ui: AgentUi;
  readonly overflowRetriesPerTurn: number;
  /** The AI SDK's telemetry option (`{ isEnabled: false }` when tracing is off). */
  readonly telemetry?: TelemetryOptions;
  /**
   * Whether the provider's prompt-token reports are its own count of what it read (a server's
   * usage), so that a report far below what was sent means the server cut the prompt.
   */
  readonly detectTruncation?: boolean;
  /** The whole window the model's server states for it, when it does: a prompt within it was not cut. */
  readonly statedWindow?: () => number | undefined;
  /** Said after the notice of a cut prompt: how to raise the server's context, when known. */
  readonly truncationAdvice?: string;
  /**
   * Whether the window in use is only a lower bound (suggested by a prompt the server cut): a request
   * larger than it is not known not to fit, so it is sent once compacted as hard as it can be.
   */
  readonly windowIsLowerBound?: () => boolean;
  /**
   * The answer's maximum length for each attempt (the output reserve), read again after an overflow
   * has taught a smaller window; absent: the model's own default.
   */
  readonly maxOutputTokens?: () => number | undefined;
  /** How long a model call may send nothing: before its first chunk, and between chunks. */
  readonly timeouts?: { readonly firstChunkMs: number; readonly idleMs: number };
  /**
   * What each request tells the provider about caching (asked before every request: OpenRouter's
   * provider is learned from the first answer); absent or undefined: nothing, as for VS Code's models.
   */
  readonly cacheHints?: () => CacheHints | undefined;
  /** The clock a request's usage is stamped with (when it was sent). */
  readonly now?: () => number;
  /**
   * Most characters of one streamed text (or reasoning) that a step's message keeps, cut in the
   * middle past it; the chat is shown all of it. Default {@link MAX_KEPT_TEXT_CHARS}.
   */
  readonly maxKeptTextChars?: number;
  /**
   * Asked before every step with what the turn has spent (a loop with budgets, see `step-limit.ts`):
   * the step may go on, be the last (its directive is appended as a user message, and the step is
   * sent with tool use off), or not be sent at all (the turn then ends with `StepLimitReached`).
   * Absent: only `maxSteps` limits the turn.
   */
  readonly limit?: (spent: Spent) => StepLimit;
}

export interface AgentTurnResult {
  readonly steps: number;
  /** Tokens the provider reported for the turn's steps. */
  readonly usage: TurnUsage;
  readonly finishReason: string;
  readonly compactions: number;
  /** Set when the turn ended on an error that was not recovered from. */
  readonly error?: unknown;
  readonly cancelled: boolean;
  /** Set when the turn stopped after two compactions in a row with no progress between them. */
  readonly compactionLoop?: true;
}

/** Tokens a provider reported, summed over steps. */
export interface TurnUsage {
  readonly inputTokens: number;
  readonly outputTokens: number;
}

export async function runAgentTurn(options: AgentTurnOptions): Promise<AgentTurnResult> {
  const { conversation, ui, signal } = options;
  const guard = conversation.guard;
  guard.startTurn();
  let stepsDone = 0;
  let usage: TurnUsage = { inputTokens: 0, outputTokens: 0 };
  let compactions = 0;
  let finishReason = 'unknown';
  // "Not now" holds for the rest of the turn: the question is asked at most once.
  let declined = false;
  let asked = false;
  // The last compaction of this turn, and whether the turn stops for a compaction loop.
  let earlier: string | undefined;
  let loop = false;

  /** `harder`: a compaction that goes on from the one before it until the request fits, not a new one (never a loop). */
  const compactNow = async (
    reason: CompactionReason,
    stated?: { limit: number; why: string; lowerBound?: boolean },
    harder = false,
  ): Promise<CompactionOutcome> => {
    const records = conversation.log?.();
    const stalled = !harder && records !== undefined && stopsForLoop(records, earlier);
    ui.compacting(reason);
    const outcome = await conversation.compact(reason, signal, stated);
    ui.compacted(outcome, reason);
    if (outcome.status === 'compacted') {
      compactions++;
      // Only a summary counts: a pruning alone calls no model and loses nothing the view does not
      // hold again, so it neither starts nor ends a loop.
      if (outcome.compaction.entry) {
        earlier = outcome.compaction.entry.id;
        if (!harder) loop = stalled;
      }
    }
    return outcome;
  };
  const stoppedForLoop = (): AgentTurnResult => ({
    steps: stepsDone,
    usage,
    finishReason: 'compaction-loop',
    compactions,
    cancelled: false,
    compactionLoop: true,
  });

  /**
   * After a compaction, the request is measured again: while it would still not fit the window, the
   * conversation is compacted harder, as after an overflow error, a few times at most. False when it
   * still does not fit.
   */
  const fits = async (): Promise<boolean> => {
    for (let round = 0; conversation.assess().level === 'over'; round++) {
      if (round >= MAX_FIT_COMPACTIONS || signal.aborted) return false;
      const outcome = await compactNow('overflow', undefined, true);
      if (outcome.status !== 'compacted') return conversation.assess().level !== 'over';
    }
    return true;
  };

  /** Whether a request that does not fit the window is known to be refused (the window is not a mere lower bound). */
  const knownTooLarge = (): boolean => !(options.windowIsLowerBound?.() ?? false);

  const compactBeforeStep = async (): Promise<void> => {
    await compactNow('threshold');
    if (loop) return;
    if (!(await fits()) && !signal.aborted && knownTooLarge()) throw new OverWindow(conversation.assess());
  };

  const beforeStep = async (): Promise<void> => {
    const decision = guard.decide({ at: 'before-request', confirm: ui.confirmCompaction !== undefined, asked, declined });
    switch (decision.kind) {
      case 'blocked':
        ui.notice(`Not compacting automatically: ${decision.reason}.`);
        return;
      case 'ask':
        asked = true;
        if (!(await ui.confirmCompaction?.(signal))) {
          declined = true;
          return;
        }
        await compactBeforeStep();
        break;
      case 'compact':
        await compactBeforeStep();
        break;
      default:
        return;
    }
    // The step is not sent: the turn stops here (see `stoppedForLoop`).
    if (loop) throw new CompactionLoop();
  };

  for (;;) {
    if (signal.aborted) return { steps: stepsDone, usage, finishReason: 'cancelled', compactions, cancelled: true };
    const attempt = await runSteps(options, options.maxSteps - stepsDone, beforeStep, {
      steps: stepsDone,
      tokens: usage.inputTokens + usage.outputTokens,
    });
    stepsDone += attempt.steps;
    usage = { inputTokens: usage.inputTokens + attempt.usage.inputTokens, outputTokens: usage.outputTokens + attempt.usage.outputTokens };
    finishReason = attempt.finishReason;
    if (attempt.error === undefined) return { steps: stepsDone, usage, finishReason, compactions, cancelled: false };
    if (signal.aborted) return { steps: stepsDone, usage, finishReason: 'cancelled', compactions, cancelled: true };
    if (loop) return stoppedForLoop();
    // Compacted as hard as it can be and still over the window: sending it would only be refused.
    if (OverWindow.isInstance(attempt.error))
      return { steps: stepsDone, usage, finishReason: 'error', compactions, error: attempt.error, cancelled: false };

    const truncation = attempt.error instanceof SilentTruncation ? attempt.error : undefined;
    const overflow = truncation
      ? { limit: truncation.statedWindow, why: 'suggested by a prompt the server cut', lowerBound: true }
      : statedOverflow(attempt.error);
    if (!overflow) return { steps: stepsDone, usage, finishReason: 'error', compactions, error: attempt.error, cancelled: false };
    if (truncation) ui.notice(describeTruncation(truncation.verdict, options.truncationAdvice));
    const retry = stepsDone < options.maxSteps ? guard.decide({ at: 'overflow', retriesPerTurn: options.overflowRetriesPerTurn }) : undefined;
    if (retry?.kind !== 'compact') {
      ui.notice(
        `The model's context window overflowed and Longrun will not retry: ${retry?.kind === 'blocked' ? retry.reason : 'the step limit was reached'}.`,
      );
      return { steps: stepsDone, usage, finishReason: 'error', compactions, error: attempt.error, cancelled: false };
    }
    if (declined) ui.notice("The request no longer fits the model's window, so Longrun compacts now although you chose not to.");
    const outcome = await compactNow('overflow', overflow.limit !== undefined ? { ...overflow, limit: overflow.limit } : undefined);
    if (outcome.status !== 'compacted') {
      return { steps: stepsDone, usage, finishReason: 'error', compactions, error: attempt.error, cancelled: signal.aborted };
    }
    if (loop) return stoppedForLoop();
    // The retried request is measured again before it is sent.
    const fitted = await fits();
    if (loop) return stoppedForLoop();
    if (!fitted && (signal.aborted || knownTooLarge())) {
      if (!signal.aborted) ui.notice(OverWindow.describe(conversation.assess()));
      return { steps: stepsDone, usage, finishReason: 'error', compactions, error: attempt.error, cancelled: signal.aborted };
    }
  }
}

const OVER_WINDOW = Symbol.for('longrun.OverWindow');

/**
 * The next request would not fit the model's window even after compacting as hard as the
 * conversation can be: it is not sent. (The latest request alone, with the system prompt and tools,
 * may be larger than the window.)
 */
export class OverWindow extends Error {
  override readonly name = 'OverWindow';
  constructor(budget: Pick<BudgetAssessment, 'used' | 'limit'>) {
    super(OverWindow.describe(budget));
    mark(this, OVER_WINDOW);
  }

  /** What the chat says of a request that does not fit after compacting. */
  static describe(budget: Pick<BudgetAssessment, 'used' | 'limit'>): string {
    return `The next request would still not fit the model's context window after compacting (about ${budget.used.toLocaleString('en-US')} of ${budget.limit.toLocaleString('en-US')} tokens), so Longrun did not send it.`;
  }

  /** Whether `error` is one, or carries one as its cause (the AI SDK may wrap what a callback threw). */
  static isInstance(error: unknown): boolean {
    let current: unknown = error;
    for (let depth = 0; depth < 5 && current !== undefined && current !== null; depth++) {
      if (hasMarker(current, OVER_WINDOW)) return true;
      current = current instanceof Error ? current.cause : undefined;
    }
    return false;
  }
}

/** Thrown before a step to end the `streamText` call when the turn stops for a compaction loop. */
class CompactionLoop extends Error {
  override readonly name = 'CompactionLoop';
  constructor() {
    super('Two compactions in a row in this turn with no progress between them: the turn stops.');
  }
}

function statedOverflow(error: unknown): { limit?: number; why: string } | undefined {
  const overflow = describeOverflow(error);
  if (!overflow) return undefined;
  return { ...(overflow.limit !== undefined ? { limit: overflow.limit } : {}), why: 'stated by the server in an overflow error' };
}

/** A server reported reading far fewer prompt tokens than were sent: it cut the prompt silently. */
export class SilentTruncation extends Error {
  override readonly name = 'SilentTruncation';
  constructor(
    readonly verdict: TruncationVerdict,
    /** The window the report suggests: what the server read plus what it wrote. */
    readonly statedWindow: number,
  ) {
    super(`The server read ${verdict.reported} prompt tokens of about ${verdict.expected} sent: it cut the prompt.`);
  }
}

function describeTruncation(verdict: TruncationVerdict, advice: string | undefined): string {
  const numbers = `it read ${verdict.reported.toLocaleString('en-US')} prompt tokens of about ${verdict.expected.toLocaleString('en-US')} sent`;
  return `The server cut the prompt without saying so (${numbers}), dropping the start of the conversation. Longrun compacts and asks again.${advice ? ` ${advice}` : ''}`;
}

/** The turn's step limit said not to send the next step (see `AgentTurnOptions.limit`). */
export class StepLimitReached extends Error {
  override readonly name = 'StepLimitReached';
}

/** Whether `error` is, or carries, a `StepLimitReached` (the AI SDK may wrap what a callback threw). */
export function stepLimitReached(error: unknown): StepLimitReached | undefined {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof StepLimitReached) return e;
  }
  return undefined;
}

interface Attempt {
  readonly steps: number;
  /** Tokens the provider reported for the attempt's steps. */
  readonly usage: TurnUsage;
  readonly finishReason: string;
  readonly error?: unknown;
}

/** The tokens the provider reported for `steps`, input and output. */
function tokensOf(steps: ReadonlyArray<{ readonly usage: { readonly inputTokens?: number; readonly outputTokens?: number } }>): number {
  return steps.reduce((sum, step) => sum + (step.usage.inputTokens ?? 0) + (step.usage.outputTokens ?? 0), 0);
}

/**
 * One `streamText` call of up to `maxSteps` steps, persisting each step's messages. The stream is
 * read once, as it comes: the SDK's default result keeps every part for a second reader (and the
 * text again for its output), which for a long answer is the whole of it several times over. The
 * text is shown as the provider sends it, and the SDK is given of a long text only what the log
 * keeps (`withKeptText`).
 */
async function runSteps(options: AgentTurnOptions, maxSteps: number, beforeStep: () => Promise<void>, before: Spent): Promise<Attempt> {
  const { conversation } = options;
  const steps = new StepRecorder(options);
  const maxOutputTokens = options.maxOutputTokens?.();
  const to = producerOf(options.model);
  const request = (): HintedRequest => {
    steps.hints = options.cacheHints?.();
    const stableEnd = steps.hints && takesBreakpoints(steps.hints.provider) ? conversation.stableEnd?.() : undefined;
    return hintedRequest(options.system, viewOf(conversation), steps.hints, {
      ...(stableEnd !== undefined ? { stableEnd } : {}),
      ...(to ? { to } : {}),
    });
  };
  const first = request();
  let finalMessages: readonly ModelMessage[] | undefined;
  // Set once the step the limit made the last one is sent: the loop ends after it.
  let lastSent = false;
  try {
    const result = streamTextOnce({
      model: withFirstTokenDeadline(
        withKeptText(options.model, { maxChars: options.maxKeptTextChars ?? MAX_KEPT_TEXT_CHARS, onText: (delta) => options.ui.text(delta) }),
        options.timeouts?.firstChunkMs,
      ),
      ...(maxOutputTokens ? { maxOutputTokens } : {}),
      instructions: first.instructions,
      messages: first.messages,
      ...(first.providerOptions ? { providerOptions: first.providerOptions } : {}),
      allowSystemInMessages: true,
      tools: options.tools,
      stopWhen: [stepCountIs(Math.max(1, maxSteps)), () => lastSent],
      abortSignal: options.signal,
      maxRetries: 1,
      // The first chunk's deadline runs from the request (withFirstTokenDeadline), headers included.
      ...(options.timeouts ? { timeout: { chunkMs: options.timeouts.idleMs } } : {}),
      // Errors are handled below (overflow recovery, error details); keep the original error.
      onError: ({ error }) => {
        steps.streamError ??= error;
      },
      ...(options.telemetry ? { telemetry: options.telemetry } : {}),
      prepareStep: async ({ responseMessages, steps: done }) => {
        await steps.sync(responseMessages);
        // The step the server cut has run its tools (kept above); the next one is not sent as is.
        if (steps.truncation) throw steps.truncation;
        await beforeStep();
        const limit = options.limit?.({ steps: before.steps + done.length, tokens: before.tokens + tokensOf(done) });
        if (limit?.kind === 'stop') throw new StepLimitReached(limit.reason);
        if (limit?.kind === 'last') {
          await conversation.append([{ type: 'message', message: { id: conversation.newId(), role: 'user', content: [text(limit.directive)] } }]);
          lastSent = true;
        }
        const next = request();
        steps.takeBasis();
        return {
          messages: next.messages,
          ...(lastSent ? { toolChoice: 'none' as const } : {}),
          ...(next.instructions !== options.system ? { instructions: next.instructions } : {}),
          ...(next.providerOptions ? { providerOptions: next.providerOptions } : {}),
        };
      },
      // Called before the stream closes, once every step is done.
      onEnd: ({ responseMessages }) => {
        finalMessages = responseMessages;
      },
    });
    for await (const part of result.fullStream) steps.see(part);
    if (steps.streamError === undefined) {
      // Rejects with what ended the call early (a timeout, an abort), which the stream itself does not carry.
      await result.finishReason;
      // An answer written from a cut prompt is not kept: the turn asks again after compacting. What it
      // was billed is, marked as cut.
      if (steps.truncation) await steps.keepBilledUsage();
      else {
        if (!finalMessages) throw new Error('The model stream ended without its final messages.');
        await steps.sync(finalMessages);
      }
    }
  } catch (error) {
    steps.streamError = error;
  }
  return steps.attempt();
}

/**
 * What one `streamText` call has done so far: the steps finished, the messages and usage written to
 * the log, what the step under way was built from, and how the call went wrong, if it did.
 */
class StepRecorder {
  steps = 0;
  inputTokens = 0;
  outputTokens = 0;
  finishReason = 'unknown';
  streamError: unknown;
  truncation: SilentTruncation | undefined;
  /** The cache hints of the step under way, as its request was made. */
  hints: CacheHints | undefined;
  private persisted = 0;
  private pendingUsage: Omit<ReportedUsage, 'anchorMessageId'> | undefined;
  // What the step under way was built from: taken when its messages are made, before it is sent.
  private sent: ReturnType<AgentConversation['requestBasis']>;
  /** When the step under way was sent. */
  private sentAt: number | undefined;
  // The step just finished ended without a finish reason: its answer may be cut short.
  private cut = false;
  /** The provider and model that answer: what their parts' metadata is marked as made by. */
  private readonly producer: Producer | undefined;

  constructor(private readonly options: AgentTurnOptions) {
    this.producer = producerOf(options.model);
    this.sent = options.conversation.requestBasis();
    this.sentAt = options.now?.();
  }

  /** Takes what the next step is built from, once its messages are made. */
  takeBasis(): void {
    this.sent = this.options.conversation.requestBasis();
    this.sentAt = this.options.now?.();
  }

  /** Appends the response messages not yet in the log, and the usage of the latest step. */
  async sync(responseMessages: readonly ModelMessage[]): Promise<void> {
    const { conversation, ui } = this.options;
    const fresh = responseMessages.slice(this.persisted).filter((m) => m.role === 'assistant' || m.role === 'tool');
    this.persisted = responseMessages.length;
    if (fresh.length === 0) return;
    const converted = fromResponseMessages(fresh as Parameters<typeof fromResponseMessages>[0], () => conversation.newId(), this.producer);
    const messages = this.cut ? markLastAnswerIncomplete(converted) : converted;
    if (this.cut) ui.notice(CUT_ANSWER);
    this.cut = false;
    const records: LogRecord[] = messages.map((message) => ({ type: 'message', message }));
    const anchor = lastAssistant(messages);
    if (this.pendingUsage && anchor) {
      records.push({ type: 'usage', usage: { anchorMessageId: anchor.id, ...this.pendingUsage } });
      this.pendingUsage = undefined;
    }
    await conversation.append(records);
  }

  /**
   * The usage of a step whose answer is not kept (written from a prompt the server cut), anchored to
   * the view's last message: every billed request counts in the conversation's totals.
   */
  async keepBilledUsage(): Promise<void> {
    const anchor = this.options.conversation.view().at(-1);
    if (!this.pendingUsage || !anchor) return;
    const usage = { anchorMessageId: anchor.id, ...this.pendingUsage };
    this.pendingUsage = undefined;
    await this.options.conversation.append([{ type: 'usage', usage }]);
  }

  /** Shows one part of the stream (its text was shown as it arrived), and notes the end of a step and a stream error. */
  see(part: TextStreamPart<ToolSet>): void {
    const { ui } = this.options;
    switch (part.type) {
      case 'tool-call':
        ui.toolCall(part.toolName, part.input);
        break;
      case 'finish-step':
        this.steps++;
        this.finishReason = part.finishReason;
        this.cut = part.finishReason === 'interrupted';
        this.inputTokens += part.usage.inputTokens ?? 0;
        this.outputTokens += part.usage.outputTokens ?? 0;
        this.onUsage(part);
        break;
      case 'error':
        this.streamError = part.error;
        break;
      default:
        break;
    }
  }

  /** Keeps a step's usage for the log, and notes a prompt the server cut when its report shows one. */
  private onUsage(part: Extract<TextStreamPart<ToolSet>, { type: 'finish-step' }>): void {
    const hints = this.hints;
    const usage = callUsage(part.usage, part.providerMetadata, hints?.provider, part.response.modelId);
    if (!usage) return;
    const { inputTokens, outputTokens } = usage;
    const sent = this.sent;
    const verdict = this.options.detectTruncation ? detectTruncation(inputTokens, sent, this.options.statedWindow?.()) : undefined;
    const wrote = (usage.cacheWriteTokens ?? 0) > 0 && hints !== undefined && takesBreakpoints(hints.provider);
    this.pendingUsage = {
      ...usage,
      ...(wrote ? { cacheTtl: hints.ttl } : {}),
      ...(this.sentAt !== undefined ? { at: this.sentAt } : {}),
      ...(hints ? { provider: hints.provider } : {}),
      basis: sent.basis,
      localTokens: sent.localTokens,
      ...(sent.localFraming !== undefined ? { localFraming: sent.localFraming } : {}),
      ...(sent.localFixed !== undefined ? { localFixed: sent.localFixed } : {}),
      ...(sent.model !== undefined ? { model: sent.model } : {}),
      ...(verdict ? { truncated: true } : {}),
    };
    if (verdict) this.truncation ??= new SilentTruncation(verdict, inputTokens + outputTokens);
  }

  /** How the call ended: a cut prompt wins over the error it caused. */
  attempt(): Attempt {
    const { steps, finishReason, streamError, truncation } = this;
    const usage = { inputTokens: this.inputTokens, outputTokens: this.outputTokens };
    if (truncation && (streamError === undefined || streamError === truncation || isWrapped(streamError, truncation))) {
      return { steps, usage, finishReason, error: truncation };
    }
    return streamError === undefined ? { steps, usage, finishReason } : { steps, usage, finishReason, error: streamError };
  }
}

/** Said in the chat when a model's stream ended without a finish reason. */
const CUT_ANSWER =
  'The answer was cut: the model\'s stream ended without saying it was finished (no finish reason; a server or proxy may have dropped the connection). What arrived is kept, marked incomplete; say "continue" to have the model go on.';

/** The messages with the last assistant one marked incomplete. */
function markLastAnswerIncomplete(messages: readonly Message[]): Message[] {
  const last = lastAssistant(messages);
  return messages.map((m) => (m === last ? { ...m, incomplete: true } : m));
}

/** Whether `error` carries `inner` as its cause (the AI SDK may wrap what a callback threw). */
function isWrapped(error: unknown, inner: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    if (current === inner) return true;
    current = current.cause;
  }
  return current === inner;
}

function viewOf(conversation: AgentConversation): Message[] {
  return [...conversation.view()];
}

function lastAssistant(messages: readonly Message[]): Message | undefined {
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i]!.role === 'assistant') return messages[i];
  return undefined;
}

/**
 * The tool definitions as the model receives them (name, description, JSON schema), as text: what
 * every request carries besides the messages, for the token count.
 */
export function toolDefinitionsText(tools: ToolSet): string {
  const parts: string[] = [];
  for (const [name, t] of Object.entries(tools)) {
    let schema: unknown = {};
    try {
      schema = asSchema(t.inputSchema).jsonSchema;
    } catch {
      schema = {};
    }
    const description = typeof t.description === 'string' ? t.description : '';
    parts.push(JSON.stringify({ type: 'function', function: { name, description, parameters: schema } }));
  }
  return parts.join('\n');
}

/** Whether a model call ended because it sent nothing for too long (the AI SDK's chunk timeouts). */
export function isModelTimeout(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e.name === 'TimeoutError' && /chunk timeout/i.test(e.message)) return true;
  }
  return false;
}
