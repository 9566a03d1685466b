import { bundledOrPackage, type EncodingName, type EncodingSource } from './vocabularies';

/**
 * Counting the tokens of plain text. The real tokenizer (`gpt-tokenizer`) is loaded on demand,
 * because its vocabularies are large (`vocabularies.ts` says from where); the
 * `ceil(chars / 4)` estimator is always at hand as the fallback and as a baseline to compare against.
 */

/** Counts the tokens of a string. */
export interface TextTokenizer {
  /** Which counting this is, e.g. `o200k_base` or `chars/4`. */
  readonly name: string;
  count(text: string): number;
}

export type { EncodingName };

/** The cheap estimate that needs no vocabulary: about four characters a token, rounded up. */
export function estimateTokens(value: string): number {
  if (!value) return 0;
  return Math.ceil(value.length / 4);
}

export const charEstimator: TextTokenizer = { name: 'chars/4', count: estimateTokens };

/**
 * The encoding a model family uses. OpenAI's current models use o200k; GPT-4, GPT-3.5 and the
 * older embeddings use cl100k. Other families (Claude, Gemini, Llama, Qwen…) have tokenizers of
 * their own that are not published as data; o200k is the closest general-purpose stand-in.
 */
export function encodingForModel(modelId: string | undefined): EncodingName {
  const id = (modelId ?? '').toLowerCase();
  if (/(^|[/:])(gpt-3\.5|gpt-35|text-embedding-(ada|3)|gpt-4(-\d|-turbo|-32k|$|-vision))/.test(id)) {
    return 'cl100k_base';
  }
  return 'o200k_base';
}

// The library throws on text that spells a special token ("<|endoftext|>"); user text may do so,
// and here it is only text, so every special token is counted as ordinary characters.
const asPlainText = { disallowedSpecial: new Set<string>() };

/** Loads real tokenizers from a source of encodings, each encoding once. */
export interface TokenizerLoader {
  /** The real tokenizer for an encoding; rejects (with a `VocabularyError`) when its vocabulary cannot be loaded. */
  load(encoding?: EncodingName): Promise<TextTokenizer>;
  /**
   * The real tokenizer, or the chars/4 estimator when its vocabulary cannot be loaded, so that
   * counting goes on roughly rather than not at all; `onError` hears why, once per encoding.
   */
  loadOrEstimate(encoding: EncodingName, onError: (error: unknown) => void): Promise<TextTokenizer>;
}

/** A loader over `source`, for the extension (the shared one below) and for tests. */
export function createTokenizerLoader(source: EncodingSource): TokenizerLoader {
  const loaded = new Map<EncodingName, Promise<TextTokenizer>>();
  const reported = new Set<EncodingName>();
  const load = (encoding: EncodingName = 'o200k_base'): Promise<TextTokenizer> => {
    let pending = loaded.get(encoding);
    if (!pending) {
      pending = source(encoding).then((mod) => ({
        name: encoding,
        count: (value: string) => (value ? mod.countTokens(value, asPlainText) : 0),
      }));
      loaded.set(encoding, pending);
      // A failed load must not be remembered: a later call may succeed.
      pending.catch(() => loaded.delete(encoding));
    }
    return pending;
  };
  const loadOrEstimate = (encoding: EncodingName, onError: (error: unknown) => void): Promise<TextTokenizer> =>
    load(encoding).catch((error: unknown) => {
      if (!reported.has(encoding)) {
        reported.add(encoding);
        onError(error);
      }
      return charEstimator;
    });
  return { load, loadOrEstimate };
}

const shared = createTokenizerLoader(bundledOrPackage());

/** Loads the real tokenizer for an encoding (once per process). */
export function loadTokenizer(encoding: EncodingName = 'o200k_base'): Promise<TextTokenizer> {
  return shared.load(encoding);
}

/** The real tokenizer for an encoding, or the chars/4 estimator when it cannot be loaded (see `TokenizerLoader`). */
export function loadTokenizerOrEstimate(encoding: EncodingName, onError: (error: unknown) => void): Promise<TextTokenizer> {
  return shared.loadOrEstimate(encoding, onError);
}
