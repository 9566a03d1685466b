/**
 * Which provider `npm start` talks to, from the environment, as each provider's own tools read it:
 *
 * - `LONGRUN_PROVIDER` names one (`openai-compatible`, `openai`, `anthropic`, `google`, `openrouter`);
 *   with that provider's key set it is used, without one its offline stand-in speaks its API.
 * - Otherwise the first that is set of: `OPENAI_BASE_URL` (any OpenAI-compatible server, as before),
 *   `ANTHROPIC_API_KEY` (with `ANTHROPIC_BASE_URL` when set, as Anthropic's SDKs read it),
 *   `GEMINI_API_KEY`, `OPENROUTER_API_KEY`, `OPENAI_API_KEY` (OpenAI's own API).
 * - Otherwise nothing: a local server or the offline stand-in (decided by `start.ts`).
 *
 * `LONGRUN_MODEL` names the model; each provider has a default. The key only ever goes to the editor's
 * secret storage. Pure, so that it is tested without starting anything.
 */
import { PROVIDER_KINDS, type ProviderKind } from '../src/core/provider-kind';

/** A provider chosen from the environment. */
export interface ProviderChoice {
  readonly kind: ProviderKind;
  /** Its key; absent means its offline stand-in (or, for OpenAI-compatible, a server that needs none). */
  readonly apiKey?: string;
  /** The base URL to use instead of the provider's default. */
  readonly baseUrl?: string;
  readonly model: string;
  /** Which variables decided it, for the line `npm start` prints. */
  readonly because: string;
}

/** The variable each provider's own tools read its key from. */
export const KEY_VARIABLES: Readonly<Record<ProviderKind, string>> = {
  'openai-compatible': 'OPENAI_API_KEY',
  openai: 'OPENAI_API_KEY',
  anthropic: 'ANTHROPIC_API_KEY',
  google: 'GEMINI_API_KEY',
  openrouter: 'OPENROUTER_API_KEY',
};

/** The model each provider is started with when `LONGRUN_MODEL` names none. */
export const DEFAULT_MODELS: Readonly<Record<ProviderKind, string>> = {
  'openai-compatible': 'gpt-4o-mini',
  openai: 'gpt-5-mini',
  anthropic: 'claude-sonnet-4-5',
  google: 'gemini-2.5-flash',
  openrouter: 'anthropic/claude-sonnet-4.5',
};

type Environment = Readonly<Record<string, string | undefined>>;

/** The provider the environment names, none (`undefined`), or why the environment is wrong. */
export function providerFromEnvironment(env: Environment): ProviderChoice | undefined | { readonly problem: string } {
  const set = (name: string): string | undefined => {
    const value = env[name]?.trim();
    return value ? value : undefined;
  };
  const named = set('LONGRUN_PROVIDER');
  if (named !== undefined) {
    if (!(PROVIDER_KINDS as readonly string[]).includes(named)) {
      return { problem: `LONGRUN_PROVIDER must be one of ${PROVIDER_KINDS.join(', ')}, not "${named}".` };
    }
    return choice(named as ProviderKind, set, `LONGRUN_PROVIDER=${named}`);
  }
  if (set('OPENAI_BASE_URL')) return choice('openai-compatible', set, 'OPENAI_BASE_URL');
  for (const kind of ['anthropic', 'google', 'openrouter', 'openai'] as const) {
    if (set(KEY_VARIABLES[kind])) return choice(kind, set, KEY_VARIABLES[kind]);
  }
  return undefined;
}

function choice(kind: ProviderKind, set: (name: string) => string | undefined, because: string): ProviderChoice {
  const apiKey = set(KEY_VARIABLES[kind]);
  const baseUrl =
    kind === 'anthropic' ? set('ANTHROPIC_BASE_URL') : kind === 'openai-compatible' || kind === 'openai' ? set('OPENAI_BASE_URL') : undefined;
  return {
    kind,
    ...(apiKey ? { apiKey } : {}),
    ...(baseUrl ? { baseUrl: baseUrl.replace(/\/+$/, '') } : {}),
    model: set('LONGRUN_MODEL') ?? DEFAULT_MODELS[kind],
    because,
  };
}
