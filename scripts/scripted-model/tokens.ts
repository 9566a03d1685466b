/**
 * How the stand-ins count tokens: the o200k tokenizer (`gpt-tokenizer`), scaled for each provider by
 * the ratio of its own tokenizer to o200k that Longrun's priors use (`src/core/tokenizer-priors.ts`:
 * Claude 1.128, Gemini 1.249), rounded up per piece of text. Deterministic, and close enough to each
 * provider's counts for what the stand-ins are for; OpenAI's own models count with o200k itself.
 */
import { familyPrior } from '../../src/core/tokenizer-priors';

export type TokenFamily = 'openai' | 'anthropic' | 'google';

/** The ratio of a provider's tokenizer to o200k. */
export function familyRatio(family: TokenFamily): number {
  if (family === 'anthropic') return familyPrior('claude')?.ratio ?? 1;
  if (family === 'google') return familyPrior('gemini')?.ratio ?? 1;
  return 1;
}
