import type { ProviderKind } from '../../core/provider-kind';

/**
 * Where each kind of endpoint is reached. A native provider's endpoint may leave `baseUrl` out:
 * its API's own root is used, as that provider's SDKs do. The root is the URL each request path is
 * appended to (`/messages`, `/responses`, `/models/{id}:streamGenerateContent`, `/chat/completions`).
 */

/** The public API root of each native provider; an `openai-compatible` endpoint must name its own. */
export const DEFAULT_API_ROOTS: Readonly<Record<Exclude<ProviderKind, 'openai-compatible'>, string>> = {
  openai: 'https://api.openai.com/v1',
  anthropic: 'https://api.anthropic.com/v1',
  google: 'https://generativelanguage.googleapis.com/v1beta',
  openrouter: 'https://openrouter.ai/api/v1',
};

/** The root a native provider uses when its endpoint names none; undefined for `openai-compatible`. */
export function defaultApiRoot(kind: ProviderKind): string | undefined {
  return kind === 'openai-compatible' ? undefined : DEFAULT_API_ROOTS[kind];
}

/**
 * The root requests of `kind` go to, from the configured base URL. Anthropic's SDKs take a base
 * URL without the version (`ANTHROPIC_BASE_URL=https://api.anthropic.com`) and add `/v1` to every
 * path; a URL already ending in `/v1` is taken as the versioned root, so that both ways of writing
 * it reach the same place. Every other kind's base URL is its root as written.
 */
export function apiRoot(kind: ProviderKind, baseUrl: string): string {
  const trimmed = baseUrl.trim().replace(/\/+$/, '');
  if (kind === 'anthropic' && !/\/v1$/.test(trimmed)) return `${trimmed}/v1`;
  return trimmed;
}
