/**
 * The wire formats Longrun's own endpoints speak, each through its AI SDK provider package.
 * `openai-compatible` is Chat Completions as Ollama, LM Studio, vLLM and most gateways serve it.
 */
export const PROVIDER_KINDS = ['openai-compatible', 'openai', 'anthropic', 'google', 'openrouter'] as const;

/** One of {@link PROVIDER_KINDS}. */
export type ProviderKind = (typeof PROVIDER_KINDS)[number];

/** The kind an endpoint that names none speaks. */
export const DEFAULT_PROVIDER_KIND: ProviderKind = 'openai-compatible';
