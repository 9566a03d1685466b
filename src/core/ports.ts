import type { ReportedUsage } from './log';
import type { Message } from './messages';

/**
 * The engine's ports: how it reaches a model, the clock and fresh ids. The extension supplies
 * real implementations (the AI SDK summarizer lives in `src/llm`); tests supply fakes.
 */

/** One message of a summary request. The `system` role carries earlier summaries, kept apart from the conversation. */
export interface SummaryRequestMessage {
  readonly role: 'system' | 'user' | 'assistant';
  readonly content: string;
}

export interface SummaryRequest {
  /** The summarizer's system prompt: the user's custom prompt as written, or the default. */
  readonly system: string;
  readonly messages: readonly SummaryRequestMessage[];
  readonly maxOutputTokens: number;
  readonly temperature: number;
  /** A whole summary, one batch of a split request, or the merge of batch summaries. */
  readonly purpose: 'summary' | 'batch' | 'merge';
  /**
   * The same request as a continuation of the conversation, for a summarizer that `continues` it:
   * the conversation's messages as the agent last sent them, from the start through the last one
   * summarized, then `directive` as a user message. Sent after the agent's own system prompt and
   * tools, it begins with what the agent's last request began with, which a provider's prompt cache
   * still holds. Only on a whole summary that fits one request.
   */
  readonly continuation?: { readonly messages: readonly Message[]; readonly directive: string };
}

export interface SummaryResponse {
  readonly text: string;
  /** The model that wrote it, when the implementation knows. */
  readonly model?: string;
  /** What the call used, as its provider reported it (the tokens by kind, where it was sent, what it cost). */
  readonly usage?: SummaryUsage;
  /**
   * The tools the model called instead of writing the summary, by name: a server that does not hold
   * it to `tool_choice: "none"` lets it, when a continuation offers the conversation's tools. The
   * text is then no summary.
   */
  readonly calledTools?: readonly string[];
}

/** A summarizer call's usage: what a usage record keeps of it, but what only the agent's requests have. */
export type SummaryUsage = Pick<ReportedUsage, 'inputTokens' | 'outputTokens'> &
  Partial<Pick<ReportedUsage, 'cacheReadTokens' | 'cacheWriteTokens' | 'cacheTtl' | 'provider' | 'modelId' | 'servedBy' | 'cost' | 'estimated'>>;

/** Anything that turns a summary request into text: an LLM in production, a fake in tests. */
export interface Summarizer {
  /** A name for logs and entries, e.g. `openai:gpt-4o-mini`. */
  readonly name: string;
  /** Tokens one request may hold (input and output); 0 or absent means unknown. */
  readonly contextWindow?: number;
  /** Whether it can send a request as a continuation of the conversation (see `SummaryRequest.continuation`). */
  readonly continues?: boolean;
  summarize(request: SummaryRequest, signal?: AbortSignal): Promise<SummaryResponse>;
}

/** `summarizer` as it states itself, its calls made by `summarize` (which may call it in turn). */
export function withSummarize(summarizer: Summarizer, summarize: Summarizer['summarize']): Summarizer {
  return {
    name: summarizer.name,
    ...(summarizer.contextWindow !== undefined ? { contextWindow: summarizer.contextWindow } : {}),
    ...(summarizer.continues ? { continues: true } : {}),
    summarize,
  };
}

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Calls `fn` after `ms` milliseconds; the returned function cancels it. */
  setTimer(ms: number, fn: () => void): () => void;
}

/** The real clock, for the composition root to hand in. The engine never reaches for it itself. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer: (ms, fn) => {
    const handle = setTimeout(fn, ms);
    return () => clearTimeout(handle);
  },
};
