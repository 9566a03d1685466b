import type { LoadedSkill } from './log';
import type { Message, ToolResultPart } from './messages';
import { TOOL_NAMES } from './tool-names';

export type { LoadedSkill };

/**
 * A skill the agent loaded is an instruction of the conversation, like the instruction files of the
 * system prompt: it is never pruned, and a compaction that summarizes the tool result holding it puts
 * it back word for word after the summary (the entry carries it: `CompactionEntry.skills`), so the
 * agent keeps following it however often the conversation is compacted. It is known by structure: a
 * result of the `skill` tool whose text begins with the header only that tool writes.
 *
 * It stays after the summary rather than moving into the system prompt: the system prompt and the
 * tools are the prefix every request shares, and a provider's cache keeps serving them across a
 * compaction only while they do not change.
 */

const OPEN = '<skill-instructions name="';
const CLOSE = '</skill-instructions>';
const HEADER = /^<skill-instructions name="([a-z0-9-]+)"/;

/** The block after a summary that holds the skills loaded in what the summary replaced. */
export const LOADED_SKILLS_OPEN = '<loaded-skills>';
export const LOADED_SKILLS_CLOSE = '</loaded-skills>';

/** What the `skill` tool answers with a skill's instructions: the text the model keeps. */
export interface SkillInstructions {
  readonly name: string;
  /** Where the skill's folder is, as the model is shown it. */
  readonly folder: string;
  readonly body: string;
  /** Files of the skill's folder the model may load with the `skill` tool (never loaded here). */
  readonly files: readonly string[];
  /** Set when the folder holds more files than `files` lists. */
  readonly moreFiles?: boolean;
}

/**
 * The skill's instructions as the `skill` tool returns them:
 *
 * ```
 * <skill-instructions name="pdf-forms" folder=".github/skills/pdf-forms">
 * …the body of SKILL.md…
 * Files in the skill's folder (load one with the skill tool, giving name "pdf-forms" and file): references/FORMS.md
 * </skill-instructions>
 * ```
 */
export function renderSkillInstructions(skill: SkillInstructions): string {
  const lines = [`${OPEN}${skill.name}" folder="${attribute(skill.folder)}">`, skill.body.trim()];
  if (skill.files.length > 0) {
    const more = skill.moreFiles ? ', and more' : '';
    lines.push(`Files in the skill's folder (load one with the skill tool, giving name "${skill.name}" and file): ${skill.files.join(', ')}${more}`);
  }
  lines.push(CLOSE);
  return lines.join('\n');
}

/** The skill a tool result loaded, when it is a result of the `skill` tool carrying a skill's instructions. */
export function loadedSkillIn(part: ToolResultPart): LoadedSkill | undefined {
  if (part.toolName !== TOOL_NAMES.skill || part.isError || typeof part.output !== 'string') return undefined;
  const name = HEADER.exec(part.output)?.[1];
  return name === undefined ? undefined : { name, text: part.output };
}

/** Whether a tool result carries a loaded skill: such a result is never pruned. */
export function isLoadedSkill(part: ToolResultPart): boolean {
  return loadedSkillIn(part) !== undefined;
}

/** The skills loaded by the tool results of `messages`, in order, each once. */
export function skillsLoadedIn(messages: readonly Message[]): LoadedSkill[] {
  const found: LoadedSkill[] = [];
  for (const message of messages) {
    if (message.role !== 'tool') continue;
    for (const part of message.content) {
      if (part.type !== 'tool-result') continue;
      const skill = loadedSkillIn(part);
      if (skill) found.push(skill);
    }
  }
  return once(found);
}

/**
 * The skills a compaction's summary carries: those the summary it replaces carried, then those loaded
 * in the messages it takes out of the view; `undefined` when there are none.
 */
export function carriedSkills(previous: readonly LoadedSkill[] | undefined, compacted: readonly Message[]): readonly LoadedSkill[] | undefined {
  const carried = once([...(previous ?? []), ...skillsLoadedIn(compacted)]);
  return carried.length > 0 ? carried : undefined;
}

/** The block that follows a summary with the skills it carries, word for word; empty when there are none. */
export function renderLoadedSkills(skills: readonly LoadedSkill[] | undefined): string {
  if (!skills || skills.length === 0) return '';
  return [
    LOADED_SKILLS_OPEN,
    'Skills loaded earlier in this conversation, kept word for word: they are still in force.',
    ...skills.map((s) => s.text),
    LOADED_SKILLS_CLOSE,
  ].join('\n');
}

/** The first of each name: a skill is loaded once per branch, and a copy says nothing new. */
function once(skills: readonly LoadedSkill[]): LoadedSkill[] {
  const seen = new Set<string>();
  return skills.filter((s) => !seen.has(s.name) && seen.add(s.name));
}

function attribute(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/\n/g, ' ');
}
