/**
 * When two model ids name one model, as providers write them: an alias and its dated snapshots
 * (`claude-sonnet-4-5`, `claude-sonnet-4-5-20250929`, Vertex's `claude-sonnet-4-5@20250929`,
 * OpenAI's `gpt-4o-2024-08-06`, `claude-3-7-sonnet-latest`), a router's or an API's prefix
 * (`anthropic/`, `openai/`, `google/`, Gemini's `models/`), and a version written with a dot or a
 * dash (OpenRouter's `claude-sonnet-4.5`). Nothing else is taken away: a word or a number more is
 * another model (`claude-sonnet-4` is not `claude-sonnet-4-5`, `gpt-5` is not `gpt-5-mini`), and so
 * is a router's variant (`:free`, `:beta`) or a local server's tag (`:8b`).
 */

/** The prefixes an API or a router puts before a maker's own id. */
const PREFIXES = /^(?:models\/)?(?:(?:anthropic|openai|google)\/)?(?:models\/)?/;

/** A snapshot's date at the end of an id: `-20250929`, `@20250929` (Vertex) or `-2024-08-06` (OpenAI). */
const SNAPSHOT_DATE = /(?:[-@]20\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])|-20\d{2}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01]))$/;

/** The alias a provider keeps pointing at its newest snapshot. */
const LATEST = /-latest$/;

/** A version's dot between two numbers (`4.5`), written as a dash. */
const VERSION_DOT = /(\d)\.(?=\d)/g;

/** The name every way of writing model `id` shares: two ids are one model exactly when theirs are equal. */
export function modelKey(id: string): string {
  const bare = id.trim().toLowerCase().replace(PREFIXES, '');
  const undated = SNAPSHOT_DATE.test(bare) ? bare.replace(SNAPSHOT_DATE, '') : bare.replace(LATEST, '');
  return undated.replace(VERSION_DOT, '$1-');
}

/** Whether ids `a` and `b` name the same model. */
export function sameModel(a: string, b: string): boolean {
  return modelKey(a) === modelKey(b);
}

/** Whether `id` names a dated snapshot or the `-latest` alias, rather than the model's own name. */
export function isSnapshot(id: string): boolean {
  const bare = id.trim().toLowerCase();
  return SNAPSHOT_DATE.test(bare) || LATEST.test(bare);
}

/** The id of `ids` that is `wanted` itself, else the first that names the same model; undefined when none does. */
export function findModelId(ids: readonly string[], wanted: string): string | undefined {
  return ids.includes(wanted) ? wanted : ids.find((id) => sameModel(id, wanted));
}

/**
 * One id for each model of `ids`, where the model is first listed: of an alias and its snapshots, the alias where it
 * is listed, else the first listed of them (a provider lists its newest first).
 */
export function oneIdEach(ids: readonly string[]): string[] {
  const chosen = new Map<string, string>();
  for (const id of ids) {
    const key = modelKey(id);
    const known = chosen.get(key);
    if (known === undefined || (isSnapshot(known) && !isSnapshot(id))) chosen.set(key, id);
  }
  const seen = new Set<string>();
  const each: string[] = [];
  for (const id of ids) {
    const key = modelKey(id);
    if (!seen.has(key)) each.push(chosen.get(key)!);
    seen.add(key);
  }
  return each;
}
