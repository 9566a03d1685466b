import type { ModelMessage, SystemModelMessage } from 'ai';
import { lastCacheablePart, planBreakpoints } from '../core/cache-breakpoints';
import type { CacheTtl } from '../core/log';
import type { Message, Producer } from '../core/messages';
import type { ProviderKind } from '../core/provider-kind';
import { sentPartIndex, toModelMessages } from './model-messages';

/**
 * What a request tells its provider about caching, in the provider's own terms through its AI SDK
 * package:
 * - Anthropic: `cache_control` breakpoints (`providerOptions.anthropic.cacheControl` on the system
 *   message, on a message, or on one of its parts), placed by `planBreakpoints`;
 * - OpenRouter: the same breakpoints (its package reads `providerOptions.anthropic.cacheControl` too,
 *   the assistant's only from the message, a tool result's from the part), and the provider that
 *   served the conversation's first request (`provider.order`, no fallbacks): a request routed to
 *   another provider finds none of the cache;
 * - OpenAI: a `promptCacheKey` that sends the conversation's requests to the same cache, and the
 *   24-hour retention when asked for.
 * Other servers (OpenAI-compatible ones, VS Code's models) are sent no hints.
 */

export interface CacheHints {
  /** The wire format of the endpoint: which hints it takes. */
  readonly provider: ProviderKind;
  /** How long breakpoints ask the provider to keep what they cache. */
  readonly ttl: CacheTtl;
  /** OpenAI: requests with the same key reach the same cache. */
  readonly promptCacheKey?: string;
  /** OpenAI: keep cached prefixes for 24 hours instead of minutes. */
  readonly retention24h?: boolean;
  /** OpenRouter: the provider that served the conversation's first request. */
  readonly pinnedProvider?: string;
}

type ProviderOptions = NonNullable<SystemModelMessage['providerOptions']>;

/** A request as the AI SDK takes it, with the hints of `CacheHints` in place. */
export interface HintedRequest {
  readonly instructions: string | SystemModelMessage;
  readonly messages: ModelMessage[];
  /** Options of the whole request (OpenAI's cache key, OpenRouter's routing); absent when there are none. */
  readonly providerOptions?: ProviderOptions;
}

/** What ends the part of the conversation that stays the same, and what follows the messages. */
export interface HintedParts {
  /** The id of the message that ends the stable part after the last compaction. */
  readonly stableEnd?: string;
  /** Messages after the conversation that later requests will not send (a summary's directive): never marked. */
  readonly tail?: readonly ModelMessage[];
  /** The provider and model the request goes to: the metadata they made is sent back with its parts (see `toModelMessages`). */
  readonly to?: Producer;
}

/** Whether the provider takes Anthropic's breakpoints. */
export function takesBreakpoints(provider: ProviderKind | undefined): boolean {
  return provider === 'anthropic' || provider === 'openrouter';
}

/** The request of `system` and `messages` (then `parts.tail`), with the cache hints `hints` asks for. */
export function hintedRequest(system: string, messages: readonly Message[], hints: CacheHints | undefined, parts: HintedParts = {}): HintedRequest {
  const converted = [...toModelMessages(messages, parts.to), ...(parts.tail ?? [])];
  if (!hints) return { instructions: system, messages: converted };
  const providerOptions = requestOptions(hints);
  if (!takesBreakpoints(hints.provider)) return { instructions: system, messages: converted, ...(providerOptions ? { providerOptions } : {}) };
  const mark = cacheControl(hints.ttl);
  const plan = planBreakpoints(messages, { head: system.length > 0, ...(parts.stableEnd !== undefined ? { stableEnd: parts.stableEnd } : {}) });
  for (const index of plan.messages) converted[index] = marked(converted[index]!, messages[index]!, mark, parts.to);
  return {
    instructions: plan.head ? { role: 'system', content: system, providerOptions: mark } : system,
    messages: converted,
    ...(providerOptions ? { providerOptions } : {}),
  };
}

/** A breakpoint, as both Anthropic's and OpenRouter's packages read it; the 5-minute lifetime is the provider's default. */
function cacheControl(ttl: CacheTtl): ProviderOptions {
  return { anthropic: { cacheControl: ttl === '1h' ? { type: 'ephemeral', ttl: '1h' } : { type: 'ephemeral' } } };
}

/** The options of the whole request, by provider; undefined when there are none. */
function requestOptions(hints: CacheHints): ProviderOptions | undefined {
  if (hints.provider === 'openai' && (hints.promptCacheKey !== undefined || hints.retention24h)) {
    return {
      openai: {
        ...(hints.promptCacheKey !== undefined ? { promptCacheKey: hints.promptCacheKey } : {}),
        ...(hints.retention24h ? { promptCacheRetention: '24h' } : {}),
      },
    };
  }
  if (hints.provider === 'openrouter' && hints.pinnedProvider !== undefined) {
    return { openrouter: { provider: { order: [hints.pinnedProvider], allow_fallbacks: false } } };
  }
  return undefined;
}

/**
 * `converted` (the model message of `message`) with a breakpoint on its last cacheable block: on that
 * part for a user message or a tool result (OpenRouter would put a tool message's on every result), on
 * the message for an assistant whose last part takes it (OpenRouter reads an assistant's there only)
 * or for a system message, whose content is one text.
 */
function marked(converted: ModelMessage, message: Message, mark: ProviderOptions, to: Producer | undefined): ModelMessage {
  const at = lastCacheablePart(message);
  // A part's own options (the metadata sent back with it) are kept beside the breakpoint.
  const withMark = <P extends object>(part: P): P => ({ ...part, providerOptions: joined(optionsOf(part), mark) });
  switch (converted.role) {
    case 'system':
      return { ...converted, providerOptions: mark };
    case 'user': {
      if (typeof converted.content === 'string') return { ...converted, providerOptions: mark };
      return { ...converted, content: converted.content.map((part, i) => (i === at ? withMark(part) : part)) };
    }
    case 'assistant': {
      // Reasoning left out of the request moves the parts after it.
      const sent = sentPartIndex(message, at, to);
      if (typeof converted.content === 'string' || sent === converted.content.length - 1) return { ...converted, providerOptions: mark };
      return { ...converted, content: converted.content.map((part, i) => (i === sent ? withMark(part) : part)) };
    }
    case 'tool': {
      // The tool message holds the engine message's results only, in order.
      const result = message.content.slice(0, at + 1).filter((part) => part.type === 'tool-result').length - 1;
      return { ...converted, content: converted.content.map((part, i) => (i === result ? withMark(part) : part)) };
    }
  }
}

function optionsOf(part: object): ProviderOptions | undefined {
  return 'providerOptions' in part ? (part.providerOptions as ProviderOptions | undefined) : undefined;
}

/** `options` with `mark`'s entries added, namespace by namespace. */
function joined(options: ProviderOptions | undefined, mark: ProviderOptions): ProviderOptions {
  if (!options) return mark;
  const out: ProviderOptions = { ...options };
  for (const [namespace, value] of Object.entries(mark)) out[namespace] = { ...options[namespace], ...value };
  return out;
}
