import { FAILSAFE_SCHEMA, load } from 'js-yaml';
import { isRecord } from '../core/errors';

/**
 * A `SKILL.md` in the Agent Skills format: YAML front matter between `---` lines, with the skill's
 * `name` and `description`, then the Markdown body the agent loads when it uses the skill.
 *
 * The rules are the format's: `name` is 1–64 lowercase letters, digits and hyphens, neither starting
 * nor ending with a hyphen nor holding two in a row, and names its folder; `description` is 1–1024
 * characters. A file that breaks what Longrun needs (no front matter, YAML that does not parse, no
 * usable name, no description) is not a skill, and the reason is given; what only breaks the format's
 * letter (a name other than its folder's, a description too long) is reported and the skill kept,
 * as other agents keep it, so a skill written for them works here too.
 *
 * `allowed-tools` is read by no one: a skill is text of the workspace (or of the user's skills
 * folder), and nothing in it changes what the agent may do. `disable-model-invocation: true` keeps
 * the skill out of the agent's list, which only narrows.
 */

/** A skill as its `SKILL.md` describes it. */
export interface SkillFile {
  readonly name: string;
  readonly description: string;
  /** The Markdown after the front matter, trimmed. */
  readonly body: string;
  /** `disable-model-invocation: true`: the agent is not offered the skill. */
  readonly hidden: boolean;
}

/** What reading a `SKILL.md` gives: the skill, or why it is none, and what is wrong without mattering. */
export type ParsedSkillFile =
  { readonly ok: true; readonly skill: SkillFile; readonly warnings: readonly string[] } | { readonly ok: false; readonly problem: string };

/** Longest name and description the format allows. */
export const MAX_NAME_CHARS = 64;
export const MAX_DESCRIPTION_CHARS = 1_024;
/** Front matter longer than this is not front matter but a document: refused before it is parsed. */
const MAX_FRONT_MATTER_CHARS = 16_384;

const NAME = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
const DELIMITER = /^---[ \t]*$/;
const CLOSING = /^(?:---|\.\.\.)[ \t]*$/;

/** Whether `name` is a name the format allows. */
export function isSkillName(name: string): boolean {
  return name.length <= MAX_NAME_CHARS && NAME.test(name);
}

/** Reads the text of a `SKILL.md` found in the folder named `folder`. */
export function parseSkillFile(text: string, folder: string): ParsedSkillFile {
  const split = splitFrontMatter(text);
  if ('problem' in split) return { ok: false, problem: split.problem };
  const fields = parseFields(split.frontMatter);
  if ('problem' in fields) return { ok: false, problem: fields.problem };
  const warnings: string[] = [];

  const name = fields.values.name;
  if (name === undefined || name === null) return { ok: false, problem: 'its front matter has no "name"' };
  if (typeof name !== 'string' || !isSkillName(name)) {
    return {
      ok: false,
      problem: `its name ${JSON.stringify(name)} is not one the format allows (1-64 lowercase letters, digits and single hyphens, not at either end)`,
    };
  }
  if (name !== folder) warnings.push(`its name "${name}" is not its folder's ("${folder}"); it is used by its name`);

  const raw = fields.values.description;
  const description = typeof raw === 'string' ? raw.trim().replace(/\s+/g, ' ') : '';
  if (description === '') return { ok: false, problem: 'its front matter has no "description", which says when to use it' };
  let shown = description;
  if (description.length > MAX_DESCRIPTION_CHARS) {
    warnings.push(`its description has ${description.length} characters, more than the ${MAX_DESCRIPTION_CHARS} allowed; it is cut`);
    shown = `${description.slice(0, MAX_DESCRIPTION_CHARS - 1)}…`;
  }
  return {
    ok: true,
    skill: { name, description: shown, body: split.body.trim(), hidden: fields.values['disable-model-invocation'] === 'true' },
    warnings,
  };
}

/** The front matter and the body, or why there is no front matter. */
function splitFrontMatter(text: string): { frontMatter: string; body: string } | { problem: string } {
  const lines = text
    .replace(/^\uFEFF/, '')
    .replace(/\r\n?/g, '\n')
    .split('\n');
  if (!DELIMITER.test(lines[0] ?? '')) return { problem: 'it does not begin with front matter (a "---" line, the fields, then "---")' };
  const end = lines.findIndex((line, i) => i > 0 && CLOSING.test(line));
  if (end < 0) return { problem: 'its front matter is not closed by a "---" line' };
  const frontMatter = lines.slice(1, end).join('\n');
  if (frontMatter.length > MAX_FRONT_MATTER_CHARS) return { problem: `its front matter is longer than ${MAX_FRONT_MATTER_CHARS} characters` };
  return { frontMatter, body: lines.slice(end + 1).join('\n') };
}

/**
 * The fields of the front matter. Skills written for other agents often hold a plain value with a
 * colon in it (`description: Use when: the user asks`), which YAML refuses but their readers accept:
 * when the front matter does not parse, such values are read again quoted.
 */
function parseFields(frontMatter: string): { values: Record<string, unknown> } | { problem: string } {
  let parsed: unknown;
  try {
    parsed = loadYaml(frontMatter);
  } catch (error) {
    const quoted = quotePlainValues(frontMatter);
    try {
      if (quoted === frontMatter) throw error;
      parsed = loadYaml(quoted);
    } catch {
      return { problem: `its front matter is not valid YAML (${firstLine(error)})` };
    }
  }
  if (parsed === undefined || parsed === null) return { problem: 'its front matter is empty' };
  if (!isRecord(parsed) || Array.isArray(parsed)) return { problem: 'its front matter is not a list of fields (key: value)' };
  return { values: parsed };
}

/**
 * Every value read as text (YAML's failsafe schema): a name such as `2024` or `007` is the name as
 * written, never a number. No aliases and a shallow depth: a few fields need neither, and they are
 * what a YAML bomb is made of.
 */
function loadYaml(text: string): unknown {
  return load(text, { schema: FAILSAFE_SCHEMA, maxAliases: 0, maxDepth: 16 });
}

/** Each top-level `key: value` whose plain value holds `: ` or ` #`, with the value quoted. */
function quotePlainValues(frontMatter: string): string {
  return frontMatter
    .split('\n')
    .map((line) => {
      const match = /^([A-Za-z][\w-]*):[ \t]+(.+?)[ \t]*$/.exec(line);
      if (!match) return line;
      const [, key, value] = match as unknown as [string, string, string];
      if (/^["'|>[{&*!]/.test(value) || !/: | #/.test(value)) return line;
      return `${key}: ${JSON.stringify(value)}`;
    })
    .join('\n');
}

function firstLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.split('\n')[0] ?? message;
}
