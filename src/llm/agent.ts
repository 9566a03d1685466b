import { asSchema, stepCountIs, streamText, type LanguageModel, type ModelMessage, type TelemetryOptions, type ToolSet } from 'ai';
import type { BudgetAssessment } from '../core/budget';
import type { CompactionOutcome } from '../core/compaction';
import { beginTurn, mayAutoCompact, mayRetryOverflow, noteCompaction, noteOverflowRetry, type GuardState } from '../core/compaction-guard';
import { modelView, type CompactionReason, type ConversationLog, type LogRecord } from '../core/history';
import type { Message } from '../core/messages';
import { describeOverflow } from '../core/overflow-error';
import type { ReportedUsage } from '../core/usage-calibration';
import { fromResponseMessages, toModelMessages } from './model-messages';

/**
 * One turn of the coding agent: `streamText` with the workspace tools and a step limit. At the
 * start of every step (seed 000 `prepareStep`, seed 001 "task turn start") the budget is checked
 * and the conversation compacted when it must be; on a provider's context-overflow error the
 * conversation is compacted and the turn retried once (seed 001). Every step's messages are
 * appended to the log as they come, so a cancelled or failed turn leaves a consistent history.
 */

/** The conversation as the agent sees it; implemented by the extension over its store. */
export interface AgentConversation {
  log(): ConversationLog;
  append(records: readonly LogRecord[]): Promise<void>;
  /** The budget of the model's current view. */
  assess(): BudgetAssessment;
  /**
   * Compacts the conversation now. `statedLimit` is the window a provider named in an overflow
   * error, when it named one: smaller than the declared window, it is the one to aim for.
   */
  compact(reason: CompactionReason, signal: AbortSignal, statedLimit?: number): Promise<CompactionOutcome>;
  /** The compaction round the view is at (0 before any compaction). */
  round(): number;
  newId(): string;
}

/** How the turn shows itself; the chat participant implements it over the response stream. */
export interface AgentUi {
  text(delta: string): void;
  toolCall(toolName: string, input: unknown): void;
  toolResult(toolName: string, output: unknown, isError: boolean): void;
  compacting(reason: CompactionReason): void;
  compacted(outcome: CompactionOutcome, reason: CompactionReason): void;
  notice(message: string): void;
}

export interface AgentTurnOptions {
  readonly model: LanguageModel;
  readonly system: string;
  readonly tools: ToolSet;
  readonly maxSteps: number;
  readonly signal: AbortSignal;
  readonly conversation: AgentConversation;
  readonly ui: AgentUi;
  /** Anti-loop state carried from turn to turn. */
  readonly guard: GuardState;
  readonly overflowRetriesPerTurn: number;
  /** The AI SDK's telemetry option (`{ isEnabled: false }` when tracing is off). */
  readonly telemetry?: TelemetryOptions;
}

export interface AgentTurnResult {
  readonly steps: number;
  readonly finishReason: string;
  readonly compactions: number;
  readonly guard: GuardState;
  /** Set when the turn ended on an error that was not recovered from. */
  readonly error?: unknown;
  readonly cancelled: boolean;
}

export async function runAgentTurn(options: AgentTurnOptions): Promise<AgentTurnResult> {
  const { conversation, ui, signal } = options;
  let guard = beginTurn(options.guard);
  let stepsDone = 0;
  let compactions = 0;
  let finishReason = 'unknown';

  const compactNow = async (reason: CompactionReason, statedLimit?: number): Promise<CompactionOutcome> => {
    ui.compacting(reason);
    const outcome = await conversation.compact(reason, signal, statedLimit);
    ui.compacted(outcome, reason);
    if (outcome.status === 'compacted') {
      compactions++;
      guard = noteCompaction(guard, outcome.compaction.entry.lowGain);
    }
    return outcome;
  };

  for (;;) {
    if (signal.aborted) return { steps: stepsDone, finishReason: 'cancelled', compactions, guard, cancelled: true };
    const attempt = await runSteps(options, options.maxSteps - stepsDone, async () => {
      const budget = conversation.assess();
      if (!budget.shouldCompact) return;
      const verdict = mayAutoCompact(guard);
      if (!verdict.allowed) {
        ui.notice(`Not compacting automatically: ${verdict.reason}.`);
        return;
      }
      await compactNow('threshold');
    });
    stepsDone += attempt.steps;
    finishReason = attempt.finishReason;
    if (attempt.error === undefined) return { steps: stepsDone, finishReason, compactions, guard, cancelled: false };
    if (signal.aborted) return { steps: stepsDone, finishReason: 'cancelled', compactions, guard, cancelled: true };

    const overflow = describeOverflow(attempt.error);
    if (!overflow) return { steps: stepsDone, finishReason: 'error', compactions, guard, error: attempt.error, cancelled: false };
    const verdict = mayRetryOverflow(guard, options.overflowRetriesPerTurn);
    if (!verdict.allowed || stepsDone >= options.maxSteps) {
      ui.notice(`The model's context window overflowed and Longrun will not retry: ${verdict.allowed ? 'the step limit was reached' : verdict.reason}.`);
      return { steps: stepsDone, finishReason: 'error', compactions, guard, error: attempt.error, cancelled: false };
    }
    guard = noteOverflowRetry(guard);
    const outcome = await compactNow('overflow', overflow.limit);
    if (outcome.status !== 'compacted') {
      return { steps: stepsDone, finishReason: 'error', compactions, guard, error: attempt.error, cancelled: signal.aborted };
    }
  }
}

interface Attempt {
  readonly steps: number;
  readonly finishReason: string;
  readonly error?: unknown;
}

/** One `streamText` call of up to `maxSteps` steps, persisting each step's messages. */
async function runSteps(options: AgentTurnOptions, maxSteps: number, beforeStep: () => Promise<void>): Promise<Attempt> {
  const { conversation, ui } = options;
  let persisted = 0;
  let steps = 0;
  let pendingUsage: { inputTokens: number; outputTokens: number } | undefined;
  let finishReason = 'unknown';
  let streamError: unknown;

  // Appends the response messages not yet in the log, and the usage of the latest step.
  const sync = async (responseMessages: readonly ModelMessage[]): Promise<void> => {
    const fresh = responseMessages.slice(persisted).filter((m) => m.role === 'assistant' || m.role === 'tool');
    persisted = responseMessages.length;
    if (fresh.length === 0) return;
    const messages = fromResponseMessages(fresh as Parameters<typeof fromResponseMessages>[0], () => conversation.newId());
    const records: LogRecord[] = messages.map((message) => ({ type: 'message', message }));
    const anchor = lastAssistant(messages);
    if (pendingUsage && anchor) {
      const usage: ReportedUsage = { anchorMessageId: anchor.id, ...pendingUsage, round: conversation.round() };
      records.push({ type: 'usage', usage });
      pendingUsage = undefined;
    }
    await conversation.append(records);
  };

  try {
    const result = streamText({
      model: options.model,
      instructions: options.system,
      messages: toModelMessages(modelView(conversation.log())),
      allowSystemInMessages: true,
      tools: options.tools,
      stopWhen: stepCountIs(Math.max(1, maxSteps)),
      abortSignal: options.signal,
      maxRetries: 1,
      // Errors are handled below (overflow recovery, error details); keep the original error.
      onError: ({ error }) => {
        streamError ??= error;
      },
      ...(options.telemetry ? { telemetry: options.telemetry } : {}),
      prepareStep: async ({ responseMessages }) => {
        await sync(responseMessages);
        await beforeStep();
        return { messages: toModelMessages(modelView(conversation.log())) };
      },
    });
    for await (const part of result.fullStream) {
      switch (part.type) {
        case 'text-delta':
          ui.text(part.text);
          break;
        case 'tool-call':
          ui.toolCall(part.toolName, part.input);
          break;
        case 'tool-result':
          ui.toolResult(part.toolName, part.output, false);
          break;
        case 'tool-error':
          ui.toolResult(part.toolName, part.error, true);
          break;
        case 'finish-step':
          steps++;
          finishReason = part.finishReason;
          if (part.usage.inputTokens !== undefined) {
            pendingUsage = { inputTokens: part.usage.inputTokens, outputTokens: part.usage.outputTokens ?? 0 };
          }
          break;
        case 'error':
          streamError = part.error;
          break;
        default:
          break;
      }
    }
    if (streamError === undefined) {
      await sync(await result.responseMessages);
    }
  } catch (error) {
    streamError = error;
  }
  return streamError === undefined ? { steps, finishReason } : { steps, finishReason, error: streamError };
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
