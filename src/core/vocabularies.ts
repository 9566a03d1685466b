/**
 * Where the tokenizer's vocabularies come from. They are most of Longrun's size (o200k about
 * 2.3 MB, cl100k 1.1 MB), so the bundle does not carry them: esbuild.js builds each into a file of
 * its own beside `composition.js` (`dist/o200k_base.js`, `dist/cl100k_base.js`), required when a
 * conversation first counts tokens, never during activation, and only the one its model uses. Run
 * from source (unit tests, benchmarks), they come from the package.
 */

/** The tokenizer's encodings. */
export type EncodingName = 'o200k_base' | 'cl100k_base';

/** What the tokenizer uses of a `gpt-tokenizer` encoding module. */
export interface EncodingModule {
  countTokens(text: string, options: { readonly disallowedSpecial: Set<string> }): number;
}

/** Loads the module of one encoding; rejects with a `VocabularyError` when it cannot. */
export type EncodingSource = (encoding: EncodingName) => Promise<EncodingModule>;

/** The name of an encoding's vocabulary file in the bundle's folder. */
export function vocabularyFileName(encoding: EncodingName): string {
  return `${encoding}.js`;
}

/** A vocabulary file is missing or is not an encoding module: the installation is incomplete or damaged. */
export class VocabularyError extends Error {
  override readonly name = 'VocabularyError';

  constructor(
    readonly encoding: EncodingName,
    readonly file: string,
    cause: unknown,
  ) {
    super(`The ${encoding} vocabulary could not be loaded from ${file} (${describe(cause, file)}); reinstalling Longrun restores it.`, { cause });
  }
}

/**
 * Encodings from the vocabulary files in `dir`. The path is computed at run time, so that esbuild
 * leaves the `require` alone instead of inlining the file. Node caches what it requires; the
 * tokenizer loader asks once per encoding anyway.
 */
export function vocabularyFiles(
  dir: string,
  // A path known only at run time: the vocabulary file beside the bundle, never bundled itself.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  requireFile: (file: string) => unknown = (file) => require(file),
): EncodingSource {
  return async (encoding) => {
    // Node accepts `/` on every platform, also after a Windows folder.
    const file = `${dir}/${vocabularyFileName(encoding)}`;
    let loaded: unknown;
    try {
      loaded = requireFile(file);
    } catch (error) {
      throw new VocabularyError(encoding, file, error);
    }
    if (!isEncodingModule(loaded)) throw new VocabularyError(encoding, file, 'it is not a tokenizer encoding');
    return loaded;
  };
}

/** Encodings straight from the `gpt-tokenizer` package. */
async function fromPackage(encoding: EncodingName): Promise<EncodingModule> {
  switch (encoding) {
    case 'cl100k_base':
      return import('gpt-tokenizer/encoding/cl100k_base');
    case 'o200k_base':
      return import('gpt-tokenizer/encoding/o200k_base');
  }
}

// Defined as `true` by esbuild.js in the bundle; undeclared when the sources run as they are.
declare const LONGRUN_VOCABULARY_FILES: true | undefined;

/**
 * The vocabularies of this build: the files beside the bundle, or the package when the sources run
 * as they are. The test is on the literal `typeof`, so that esbuild drops the package's branch
 * (and with it both vocabularies) from the bundle.
 */
export function bundledOrPackage(): EncodingSource {
  if (typeof LONGRUN_VOCABULARY_FILES === 'undefined') {
    return fromPackage;
  } else {
    return vocabularyFiles(__dirname);
  }
}

function isEncodingModule(value: unknown): value is EncodingModule {
  return typeof value === 'object' && value !== null && typeof (value as { countTokens?: unknown }).countTokens === 'function';
}

function describe(cause: unknown, file: string): string {
  if (!(cause instanceof Error)) return String(cause);
  if ((cause as { code?: unknown }).code === 'MODULE_NOT_FOUND' && cause.message.includes(file)) return 'the file is missing';
  // Node's messages go on with the require stack; the first line says enough.
  return cause.message.split('\n')[0] || cause.name;
}
