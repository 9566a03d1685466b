import type { ProviderKind } from '../../core/provider-kind';

/** The version of Anthropic's API every request names; the Messages API and the Models API answer it. */
export const ANTHROPIC_VERSION = '2023-06-01';

/**
 * The headers that carry an endpoint's key on a request Longrun makes itself (listing models, asking
 * for a window), as each provider's API expects it: Anthropic's `x-api-key` with the API version,
 * Gemini's `x-goog-api-key`, and a bearer token for OpenAI, OpenRouter and compatible servers.
 * Anthropic's version header goes with every request, a key or not.
 */
export function authHeaders(kind: ProviderKind, apiKey: string | undefined): Record<string, string> {
  switch (kind) {
    case 'anthropic':
      return { 'anthropic-version': ANTHROPIC_VERSION, ...(apiKey ? { 'x-api-key': apiKey } : {}) };
    case 'google':
      return apiKey ? { 'x-goog-api-key': apiKey } : {};
    default:
      return apiKey ? { Authorization: `Bearer ${apiKey}` } : {};
  }
}
