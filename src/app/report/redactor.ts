import { KnownSecrets, redactSecrets } from '../../core/redact';

/**
 * Cleans text of the API keys Longrun holds, and of anything shaped like a key: the one redactor
 * every written text goes through (the conversation's files, the output log, traces, error texts in
 * the chat). It knows the exact value of every key in use, whatever its shape: each endpoint's
 * stored key as soon as it is read or set (forgotten when it is deleted), and the keys the
 * environment hands over (`npm start`'s `LONGRUN_API_KEY`, the providers' own variables).
 */

/** Where the stored API keys are read: secret storage in the editor. */
export interface StoredKeys {
  get(endpoint: string): PromiseLike<string | undefined>;
}

/** The variables of the environment that hold API keys Longrun may be given. */
export const ENVIRONMENT_KEY_VARIABLES = ['LONGRUN_API_KEY', 'ANTHROPIC_API_KEY', 'OPENAI_API_KEY', 'GEMINI_API_KEY', 'OPENROUTER_API_KEY'] as const;

/** What a stored key is known under, apart from the environment's. */
function storedSource(endpoint: string): string {
  return `endpoint:${endpoint}`;
}

export class Redactor {
  /** The endpoints whose stored key is known. */
  private readonly endpointsKnown = new Set<string>();

  constructor(
    private readonly endpoints: () => readonly { readonly name: string }[],
    private readonly keys: StoredKeys,
    /** The exact values known: shared with the store, which looks for them in every line it writes. */
    readonly secrets: KnownSecrets = new KnownSecrets(),
  ) {}

  /** Knows `value` as `endpoint`'s stored key (it was read or set); an empty value forgets it. */
  stored(endpoint: string, value: string | undefined): void {
    this.secrets.set(storedSource(endpoint), value);
    if (value) this.endpointsKnown.add(endpoint);
    else this.endpointsKnown.delete(endpoint);
  }

  /** Forgets `endpoint`'s stored key (it was deleted). */
  deleted(endpoint: string): void {
    this.secrets.delete(storedSource(endpoint));
    this.endpointsKnown.delete(endpoint);
  }

  /** Knows the keys `env` holds in the variables that carry them. */
  fromEnvironment(env: Readonly<Record<string, string | undefined>>): void {
    for (const name of ENVIRONMENT_KEY_VARIABLES) this.secrets.set(`env:${name}`, env[name]);
  }

  /**
   * Reads the stored keys again (a key or the endpoints changed): a key no longer stored, or of an
   * endpoint no longer configured, is forgotten; one that cannot be read is kept as it was known.
   */
  async refresh(): Promise<void> {
    const endpoints = this.endpoints().map((e) => e.name);
    // null: the key could not be read.
    const found = await Promise.all(endpoints.map((name) => Promise.resolve(this.keys.get(name)).catch(() => null)));
    const configured = new Set(endpoints);
    for (const name of [...this.endpointsKnown]) if (!configured.has(name)) this.deleted(name);
    endpoints.forEach((name, i) => {
      const key = found[i];
      if (key !== null) this.stored(name, key);
    });
  }

  /** `text` without the keys known or anything shaped like one. */
  redact(text: string): string {
    return redactSecrets(this.secrets.redact(text));
  }
}
