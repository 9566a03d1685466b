import type { Message } from './messages';
import type { MessageTokenCounter } from './message-tokens';

/** Token usage a provider reported for one model call. */
export interface ReportedUsage {
  /** The last message of the request/response the usage belongs to (usually the assistant reply). */
  readonly anchorMessageId: string;
  readonly inputTokens: number;
  readonly outputTokens: number;
  /** The compaction round the view was at when the call was made; a later compaction voids it. */
  readonly round: number;
}

export interface ContextCount {
  /** The best count of the view: calibrated when possible, else local. */
  readonly tokens: number;
  /** The local tokenizer's count of the whole view, always computed. */
  readonly localTokens: number;
  readonly source: 'provider+local' | 'local';
  /** Local count of the messages added since the provider's report (0 without a report). */
  readonly sinceReport: number;
}

/**
 * Current tokens = last reported (input + output) + the local count of what was added since.
 * The provider's count includes the system prompt and tool definitions that the local count of
 * the messages cannot see, so it is preferred whenever it still describes the current view.
 */
export function countContext(
  view: readonly Message[],
  counter: MessageTokenCounter,
  usage: ReportedUsage | undefined,
  currentRound: number,
  localOverhead = 0,
): ContextCount {
  const localTokens = counter.countMessages(view) + localOverhead;
  if (!usage || usage.round !== currentRound) {
    return { tokens: localTokens, localTokens, source: 'local', sinceReport: 0 };
  }
  const anchor = view.findIndex((m) => m.id === usage.anchorMessageId);
  if (anchor < 0) return { tokens: localTokens, localTokens, source: 'local', sinceReport: 0 };
  const sinceReport = counter.countMessages(view.slice(anchor + 1));
  return {
    tokens: usage.inputTokens + usage.outputTokens + sinceReport,
    localTokens,
    source: 'provider+local',
    sinceReport,
  };
}
