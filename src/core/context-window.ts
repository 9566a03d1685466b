/**
 * How many tokens a model's context window holds, and where that number came from. Precedence:
 * the user's override, then what the model itself reports (VS Code's `maxInputTokens`), then the
 * table of known models. An unknown window is returned as such, never guessed.
 */

export type WindowSource = 'override' | 'model' | 'table' | 'unknown';

export interface ContextWindow {
  /** Tokens the window holds; 0 when unknown. */
  readonly limit: number;
  readonly source: WindowSource;
  /** Why the window is unknown, when it is. */
  readonly reason?: string;
}

/** Known context windows, matched against the model id (longest pattern first wins). */
export const MODEL_CONTEXT_LIMITS: ReadonlyArray<readonly [pattern: string, limit: number]> = [
  ['gpt-4o', 128_000],
  ['gpt-4o-mini', 128_000],
  ['gpt-4-turbo', 128_000],
  ['gpt-4-32k', 32_768],
  ['gpt-4', 8_192],
  ['gpt-4.1', 1_047_576],
  ['gpt-4.5', 128_000],
  ['gpt-5', 400_000],
  ['gpt-3.5-turbo', 16_385],
  ['gpt-oss', 131_072],
  ['o1', 200_000],
  ['o1-mini', 128_000],
  ['o3', 200_000],
  ['o4-mini', 200_000],
  ['claude-3-5-sonnet', 200_000],
  ['claude-3-haiku', 200_000],
  ['claude-3-7-sonnet', 200_000],
  ['claude-sonnet-4', 200_000],
  ['claude-opus-4', 200_000],
  ['claude', 200_000],
  ['gemini-1.5-pro', 2_097_152],
  ['gemini-1.5-flash', 1_048_576],
  ['gemini-2', 1_048_576],
  ['gemini', 1_048_576],
  ['llama3.1', 131_072],
  ['llama3.2', 131_072],
  ['llama3', 8_192],
  ['qwen2.5-coder', 32_768],
  ['qwen3', 40_960],
  ['deepseek-r1', 131_072],
  ['deepseek-v3', 131_072],
  ['mistral-large', 131_072],
  ['mistral', 32_768],
  ['codestral', 262_144],
];

/** The table's window for a model id, matching the longest known name inside it. */
export function tableLimit(modelId: string | undefined): number | undefined {
  if (!modelId) return undefined;
  // Provider prefixes ("openai/gpt-4o", "ollama:llama3") and tags ("llama3:8b") do not matter.
  const id = modelId.toLowerCase();
  let best: readonly [string, number] | undefined;
  for (const entry of MODEL_CONTEXT_LIMITS) {
    if (matchesName(id, entry[0]) && (!best || entry[0].length > best[0].length)) best = entry;
  }
  return best?.[1];
}

function matchesName(id: string, name: string): boolean {
  const at = id.indexOf(name);
  if (at < 0) return false;
  const before = at === 0 ? '' : id.charAt(at - 1);
  return before === '' || /[/:_ .-]/.test(before) || /[^a-z]/.test(before);
}

export interface WindowInputs {
  readonly modelId?: string;
  /** What the model reports (VS Code `LanguageModelChat.maxInputTokens`, or an endpoint setting). */
  readonly reported?: number;
  /** The user's override. */
  readonly override?: number;
}

export function resolveContextWindow(inputs: WindowInputs): ContextWindow {
  if (isPositive(inputs.override)) return { limit: Math.floor(inputs.override), source: 'override' };
  if (isPositive(inputs.reported)) return { limit: Math.floor(inputs.reported), source: 'model' };
  const fromTable = tableLimit(inputs.modelId);
  if (fromTable) return { limit: fromTable, source: 'table' };
  return {
    limit: 0,
    source: 'unknown',
    reason: inputs.modelId
      ? `the context window of "${inputs.modelId}" is unknown: the model reports none and it is not in the table; set one to enable automatic compaction`
      : 'no model is selected, so the context window is unknown',
  };
}

function isPositive(value: number | undefined): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0;
}

/** Output may take at most this share of the window, and never more than `MAX_OUTPUT_RESERVE`. */
export const OUTPUT_RESERVE_SHARE = 0.25;
export const MAX_OUTPUT_RESERVE = 16_384;

/**
 * Tokens to keep free for a model's answer (and to send as its `max_tokens`): the model's own
 * maximum output when known, capped at min(16,384, 25% of the window), so that a small local window
 * (4,096; 6,000) keeps three quarters of itself for the conversation instead of a fixed 4,096.
 * A window of 0 (unknown) leaves the configured maximum as it is.
 */
export function outputReserveFor(window: number, maxOutput?: number): number {
  const configured = maxOutput !== undefined && Number.isFinite(maxOutput) && maxOutput > 0 ? Math.floor(maxOutput) : undefined;
  if (!(window > 0)) return configured ?? 0;
  const cap = Math.max(1, Math.min(MAX_OUTPUT_RESERVE, Math.floor(window * OUTPUT_RESERVE_SHARE)));
  return configured === undefined ? cap : Math.min(configured, cap);
}
