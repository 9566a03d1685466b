import { redactSecrets } from '../../core/redact';

/**
 * Cleans text from a provider (an error, a failure reason) of the API keys stored for the configured
 * endpoints, and of anything shaped like a key. Built before anything that talks to a model, and
 * handed to each of them.
 */

/** Where the stored API keys are read: secret storage in the editor. */
export interface StoredKeys {
  get(endpoint: string): PromiseLike<string | undefined>;
}

export class Redactor {
  private secrets: readonly string[] = [];

  constructor(
    private readonly endpoints: () => readonly { readonly name: string }[],
    private readonly keys: StoredKeys,
  ) {}

  /** Reads the stored keys again (a key or the endpoints changed); a key that cannot be read is skipped. */
  async refresh(): Promise<void> {
    const found = await Promise.all(this.endpoints().map((e) => Promise.resolve(this.keys.get(e.name)).catch(() => undefined)));
    this.secrets = found.filter((k): k is string => typeof k === 'string' && k.length > 0);
  }

  /** `text` without the stored keys or anything shaped like one. */
  redact(text: string): string {
    return redactSecrets(text, this.secrets);
  }
}
