import { hasMarker, mark } from '../../core/errors';
import type { ProviderKind } from '../../core/provider-kind';

const MARKER = Symbol.for('longrun.missing-api-key');

/**
 * A native provider's endpoint has no API key in secret storage. Its SDK would otherwise look for
 * one in the editor's environment (`ANTHROPIC_API_KEY`…), which is not where Longrun keeps keys,
 * and fail with a message about that variable; this says what to do instead.
 */
export class MissingApiKeyError extends Error {
  override readonly name = 'MissingApiKeyError';

  constructor(
    /** The endpoint's name in `longrun.endpoints`. */
    readonly endpoint: string,
    readonly provider: ProviderKind,
  ) {
    super(`The endpoint "${endpoint}" (${provider}) has no API key. Run "Longrun: Set API Key" to store it; nothing else is needed.`);
    mark(this, MARKER);
  }

  static isInstance(error: unknown): error is MissingApiKeyError {
    return hasMarker(error, MARKER);
  }
}
