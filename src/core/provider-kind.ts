/**
 * The wire formats Longrun's own endpoints speak, each through its AI SDK provider package.
 * `openai-compatible` is Chat Completions as Ollama, LM Studio, vLLM and most gateways serve it.
 */
export const PROVIDER_KINDS = ['openai-compatible', 'openai', 'anthropic', 'google', 'openrouter'] as const;

/** One of {@link PROVIDER_KINDS}. */
export type ProviderKind = (typeof PROVIDER_KINDS)[number];

/** The kind an endpoint that names none speaks. */
export const DEFAULT_PROVIDER_KIND: ProviderKind = 'openai-compatible';

/**
 * Whether a server of `kind` may cut a prompt longer than its context without saying so, and report
 * only what it read: OpenAI-compatible servers do (Ollama, LM Studio, llama.cpp with context shift).
 * The native APIs (OpenAI's, Anthropic's, Gemini's, OpenRouter's) refuse such a prompt with an
 * error, so their counts, however far from the local estimate, only calibrate it.
 */
export function mayCutPrompts(kind: ProviderKind | undefined): boolean {
  return kind === 'openai-compatible';
}
