/**
 * Recognises a model provider's "the prompt does not fit the context window"
 * error, so the agent can compact the conversation and retry once instead of
 * failing the turn.
 *
 * Errors reach us from many SDKs and gateways in many shapes, so they are read
 * by duck typing only: importing an SDK's error class would tie the core to
 * one provider and break for wrapped or re-thrown errors anyway.
 */

/** Which rule recognised an error as a context-window overflow. */
export interface OverflowMatch {
  /** The table row (or HTTP rule) that matched, e.g. 'anthropic', 'http-413'. */
  provider: string;
  /** The regex source of the matching row, or a description of the HTTP rule. */
  pattern: string;
  /** The HTTP status found on the error, when there was one. */
  statusCode?: number;
  /** The window size the provider stated in its message ("maximum context length is 8192 tokens"), if any. */
  limit?: number;
}

/**
 * Phrasings in which providers state the real window. A model may declare a larger window than
 * the server it runs on allows (a local server started with a short context): the stated number
 * lets compaction aim at what actually fits.
 */
const LIMIT_PATTERNS: readonly RegExp[] = [
  /maximum (?:context|prompt) length is (\d[\d,]*)/i,
  /context length of only (\d[\d,]*)/i,
  /> ?(\d[\d,]*) maximum/i,
  // Anthropic's "input length and `max_tokens` exceed context limit: 197032 + 21333 > 200000".
  /exceed context limit: \d[\d,]* \+ \d[\d,]* > (\d[\d,]*)/i,
  /maximum number of tokens allowed \((\d[\d,]*)\)/i,
  /(\d[\d,]*) maximum context length/i,
  /exceeds? (?:the )?(?:limit|maximum) of (\d[\d,]*)/i,
  /context window (?:of|is) (\d[\d,]*) tokens/i,
  // llama.cpp's "request (5000 tokens) exceeds the available context size (4096 tokens), try increasing it"
  // and, with context shift on, "input (5000 tokens) is larger than the max context size (4096 tokens)".
  /(?:available|max) context size \((\d[\d,]*) tokens\)/i,
];

function statedLimit(texts: readonly string[]): number | undefined {
  for (const text of texts) {
    for (const pattern of LIMIT_PATTERNS) {
      const found = pattern.exec(text)?.[1];
      if (found === undefined) continue;
      const n = Number(found.replace(/,/g, ''));
      if (Number.isFinite(n) && n >= 256) return n;
    }
  }
  return undefined;
}

/**
 * Known overflow wordings, one row per wording, tried in order; the first row
 * to match names the provider. Specific rows come before the generic ones so
 * the reported provider is as precise as the text allows. Several providers
 * share wordings (OpenAI-compatible servers copy OpenAI's), so the provider is
 * a hint for logs, not proof of who answered.
 */
export const OVERFLOW_PATTERNS: ReadonlyArray<{ provider: string; pattern: RegExp }> = [
  // OpenAI's error code; Azure OpenAI and Groq send the same code.
  { provider: 'openai', pattern: /context_length_exceeded/i },
  { provider: 'openai', pattern: /maximum context length is \d+ tokens\.?\s*However,? your messages resulted in/i },
  // OpenAI's Responses API ("Your input exceeds the context window of this model").
  { provider: 'openai', pattern: /exceeds the context window/i },
  // Before vLLM: both say "However, you requested"; only OpenRouter says "endpoint".
  { provider: 'openrouter', pattern: /endpoint['’]?s maximum context length is \d+/i },
  { provider: 'vllm', pattern: /maximum context length is \d+ tokens\.?\s*However,? you requested \d+ tokens/i },
  { provider: 'vllm', pattern: /is too long and exceeds limit of \d*/i },
  { provider: 'vllm', pattern: /longer than the model['’]?s context length/i },
  { provider: 'vllm', pattern: /longer than the maximum model length/i },
  { provider: 'anthropic', pattern: /prompt is too long/i },
  { provider: 'anthropic', pattern: /input length and `?max_tokens`? exceed context limit/i },
  { provider: 'gemini', pattern: /input token count\s*\(?\d*\)?\s*exceeds the maximum number of tokens/i },
  { provider: 'ollama', pattern: /input length exceeds the context length/i },
  { provider: 'ollama', pattern: /prompt too long;?\s*exceeded (?:max(?:imum)? )?context length/i },
  // LM Studio's message really does say "when context the overflows".
  { provider: 'lmstudio', pattern: /trying to keep the first \d+ tokens when context (?:the )?overflows/i },
  { provider: 'lmstudio', pattern: /tokens to keep from the initial prompt is greater than the context length/i },
  { provider: 'mistral', pattern: /too large for model with \d+ maximum context length/i },
  { provider: 'xai', pattern: /maximum prompt length is \d+/i },
  { provider: 'llama.cpp', pattern: /exceeds the available context size/i },
  { provider: 'llama.cpp', pattern: /is larger than the max context size/i },
  // llama.cpp's error type, whatever its message says.
  { provider: 'llama.cpp', pattern: /exceed_context_size_error/i },
  { provider: 'bedrock', pattern: /input is too long for requested model/i },
  // Bedrock's throttling says "Too many tokens ... per minute"; that is a rate
  // limit, which compaction cannot fix, so per-time-unit wordings are excluded.
  {
    provider: 'bedrock',
    pattern: /too many input tokens(?!\s*(?:per|\/|a|an|each)\s*(?:minute|min|second|sec|hour|day)\b)/i,
  },
  // Azure OpenAI's and Groq's wording; after the OpenAI rows because OpenAI's
  // full message ends with the same request to reduce the messages.
  { provider: 'azure', pattern: /reduce the length of the messages/i },
  // Generic fallbacks. Each names the context's size explicitly so that Go's
  // "context canceled" / "context deadline exceeded" never match.
  { provider: 'generic', pattern: /context[\s_-]*(?:length|window|size)[\s_-]*(?:exceeded|overflow)/i },
  { provider: 'generic', pattern: /maximum context length/i },
  {
    provider: 'generic',
    pattern: /exceed(?:s|ed|ing)?\s+(?:the\s+)?(?:model(?:['’]s)?\s+)?(?:maximum\s+|max\s+|available\s+)?context\s+(?:length|window|size|limit)/i,
  },
];

/** Statuses that, with nothing in the body, providers use for "too big". */
const EMPTY_BODY_STATUSES: ReadonlySet<number> = new Set([400, 413, 429]);

/**
 * The OpenAI and Anthropic SDKs turn a body-less error response into a message
 * like "400 status code (no body)"; the status may not be on the object.
 */
const NO_BODY_MESSAGE = /^\s*(400|413|429)\s*(?:status code)?\s*\(no body\)/i;

/** How many error-to-error links (cause, lastError, errors[]) to follow. */
const MAX_LINK_DEPTH = 5;
/** How deep to descend into a parsed body (data.error.message and the like). */
const MAX_FIELD_DEPTH = 4;
/** Caps the work on pathological inputs such as huge `errors` arrays. */
const MAX_NODES = 200;

/** Fields whose string value is error text worth searching. */
const TEXT_FIELDS = ['message', 'responseBody', 'responseText', 'body', 'detail', 'code', 'type', 'error', 'data'];
/** Fields that may hold a parsed body, or an error object, to descend into. */
const NESTED_FIELDS = ['data', 'error', 'body', 'responseBody', 'response', 'details'];
/** Fields that link to another error. */
const LINK_FIELDS = ['cause', 'lastError', 'originalError'];
/** Fields that may carry the body; used to tell an empty body from an absent one. */
const BODY_FIELDS = ['responseBody', 'body', 'responseText'];

interface Gathered {
  texts: string[];
  statuses: number[];
  /** Statuses seen on a node whose body was present but empty. */
  emptyBodyStatuses: number[];
}

/**
 * Whether `error` is a provider's "context window overflow" error, the kind
 * that compacting the conversation and retrying can fix. Never throws.
 */
export function isContextOverflow(error: unknown): boolean {
  return describeOverflow(error) !== undefined;
}

/**
 * Which rule recognises `error` as a context-window overflow, or `undefined`
 * when none does. Text patterns are tried before the HTTP status rules
 * because they name the provider more precisely. Never throws.
 */
export function describeOverflow(error: unknown): OverflowMatch | undefined {
  try {
    const gathered = gather(error);
    const statusCode = gathered.statuses[0];
    const withStatus = (match: OverflowMatch): OverflowMatch =>
      statusCode === undefined || match.statusCode !== undefined ? match : { ...match, statusCode };

    for (const row of OVERFLOW_PATTERNS) {
      if (gathered.texts.some((text) => row.pattern.test(text))) {
        const limit = statedLimit(gathered.texts);
        return withStatus({ provider: row.provider, pattern: row.pattern.source, ...(limit !== undefined ? { limit } : {}) });
      }
    }
    // 413 means the request was too large, and the conversation is what grows.
    if (gathered.statuses.includes(413)) {
      return { provider: 'http-413', pattern: 'HTTP 413', statusCode: 413 };
    }
    // Cerebras, Mistral and some gateways answer an oversized prompt with a
    // bare 400/413/429; a real rate limit always says so in its body.
    const emptyStatus = gathered.emptyBodyStatuses[0];
    if (emptyStatus !== undefined) {
      return { provider: 'http-empty-body', pattern: `HTTP ${emptyStatus} with empty body`, statusCode: emptyStatus };
    }
    for (const text of gathered.texts) {
      const noBody = NO_BODY_MESSAGE.exec(text);
      if (noBody?.[1] !== undefined) {
        const status = Number(noBody[1]);
        return { provider: 'http-empty-body', pattern: `HTTP ${status} (no body)`, statusCode: status };
      }
    }
    return undefined;
  } catch {
    // Whatever went wrong reading the error, the caller must still be able to
    // report the original error; "not an overflow" is the safe answer.
    return undefined;
  }
}

/** Collects every piece of text and every HTTP status from the whole shape. */
function gather(root: unknown): Gathered {
  const gathered: Gathered = { texts: [], statuses: [], emptyBodyStatuses: [] };
  const seen = new Set<object>();
  let budget = MAX_NODES;

  const addText = (value: string): void => {
    gathered.texts.push(value);
    // Bodies from Go servers and some proxies escape quotes and '<', '>'.
    const unescaped = unescapeJson(value);
    if (unescaped !== value) gathered.texts.push(unescaped);
  };

  const visit = (node: unknown, linkDepth: number, fieldDepth: number): void => {
    if (typeof node === 'string') {
      addText(node);
      return;
    }
    if (typeof node !== 'object' || node === null) return;
    if (seen.has(node) || budget <= 0) return;
    seen.add(node);
    budget -= 1;

    if (safeIsArray(node)) {
      for (const item of safeArrayItems(node)) visit(item, linkDepth, fieldDepth + 1);
      return;
    }

    for (const field of TEXT_FIELDS) {
      const value = safeGet(node, field);
      if (typeof value === 'string') addText(value);
    }

    const status = readStatus(node);
    if (status !== undefined) {
      gathered.statuses.push(status);
      if (EMPTY_BODY_STATUSES.has(status) && hasEmptyBody(node)) gathered.emptyBodyStatuses.push(status);
    }

    if (fieldDepth < MAX_FIELD_DEPTH) {
      for (const field of NESTED_FIELDS) {
        const value = safeGet(node, field);
        if (typeof value === 'object' && value !== null) visit(value, linkDepth, fieldDepth + 1);
      }
    }

    if (linkDepth < MAX_LINK_DEPTH) {
      for (const field of LINK_FIELDS) visit(safeGet(node, field), linkDepth + 1, 0);
      // AI SDK RetryError: every attempt's error, of which the last may differ.
      const errors = safeGet(node, 'errors');
      if (safeIsArray(errors)) {
        for (const item of safeArrayItems(errors)) visit(item, linkDepth + 1, 0);
      }
    }
  };

  visit(root, 0, 0);
  return gathered;
}

/** The HTTP status on one error object, under any of the names SDKs use. */
function readStatus(node: object): number | undefined {
  const candidates: unknown[] = [safeGet(node, 'statusCode'), safeGet(node, 'status')];
  const response = safeGet(node, 'response');
  if (typeof response === 'object' && response !== null) {
    candidates.push(safeGet(response, 'status'), safeGet(response, 'statusCode'));
  }
  // AWS SDK v3 (Bedrock) keeps it in $metadata.
  const metadata = safeGet(node, '$metadata');
  if (typeof metadata === 'object' && metadata !== null) candidates.push(safeGet(metadata, 'httpStatusCode'));

  for (const candidate of candidates) {
    const status = toStatus(candidate);
    if (status !== undefined) return status;
  }
  return undefined;
}

/** Accepts 413 or "413"; ignores words such as Gemini's "INVALID_ARGUMENT". */
function toStatus(value: unknown): number | undefined {
  if (typeof value === 'number' && Number.isInteger(value) && value >= 100 && value <= 599) return value;
  if (typeof value === 'string' && /^\s*[1-5]\d\d\s*$/.test(value)) return Number(value);
  return undefined;
}

/**
 * True only when a body field is present and blank: an error object with no
 * body field at all tells us nothing about what the server sent.
 */
function hasEmptyBody(node: object): boolean {
  for (const field of BODY_FIELDS) {
    if (!safeHas(node, field)) continue;
    const value = safeGet(node, field);
    if (value === undefined || value === null) return true;
    if (typeof value === 'string' && value.trim() === '') return true;
  }
  return false;
}

function unescapeJson(text: string): string {
  if (!text.includes('\\')) return text;
  return text.replace(/\\u([0-9a-fA-F]{4})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))).replace(/\\(["'`\\/])/g, '$1');
}

// Getters, proxies and revoked proxies can all throw on a plain read.

function safeGet(target: unknown, key: string): unknown {
  try {
    return (target as Record<string, unknown>)[key];
  } catch {
    return undefined;
  }
}

function safeHas(target: object, key: string): boolean {
  try {
    return key in target;
  } catch {
    return false;
  }
}

function safeIsArray(value: unknown): value is readonly unknown[] {
  try {
    return Array.isArray(value);
  } catch {
    return false;
  }
}

function safeArrayItems(list: readonly unknown[]): unknown[] {
  const items: unknown[] = [];
  try {
    const length = Math.min(list.length, MAX_NODES);
    for (let i = 0; i < length; i += 1) items.push(safeGet(list, String(i)));
  } catch {
    // Keep whatever was read before the failure.
  }
  return items;
}
