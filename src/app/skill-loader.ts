import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { renderSkillInstructions, type LoadedSkill } from '../core/loaded-skills';
import type { SkillPort, SkillRequest } from '../llm/agent-tools';
import { capText } from '../llm/result-cap';
import { ToolFailure } from '../llm/workspace-port';
import { isInside, locateReal } from './path-guard';
import { MAX_SKILL_FILE_BYTES, type SkillCatalog, type SkillEntry } from './skill-catalog';
import { parseSkillFile } from './skill-file';

/**
 * The `skill` tool of one turn of a conversation: a skill's instructions, loaded once per branch (a
 * second load is answered without them: they are above, or kept after the summary), or a file of the
 * skill's folder, never one outside it (`..`, an absolute path, a symbolic link leading out). Free of
 * `vscode`.
 */

/** What the loader needs of the conversation whose turn loads skills. */
export interface SkillConversation {
  /** The skills loaded on this branch: in the model's view, or kept after its summary. */
  loadedSkills(): readonly LoadedSkill[];
  /** Most tokens the loaded skills may take together. */
  skillBudgetTokens(): number;
  countText(text: string): number;
}

/** Longest skill instructions loaded; the rest is read as the file `SKILL.md`. */
export const MAX_SKILL_BODY_CHARS = 16_000;
/** Longest file of a skill's folder loaded. */
export const MAX_SKILL_FILE_CHARS = 18_000;
/** Most files of a skill's folder named with its instructions, and how deep they are looked for. */
const MAX_LISTED_FILES = 40;
const MAX_LISTING_DEPTH = 3;

export class SkillLoader implements SkillPort {
  /** Loaded during this turn: a step's results reach the view only after all its calls have run. */
  private readonly thisTurn = new Map<string, LoadedSkill>();

  constructor(
    private readonly catalog: SkillCatalog,
    private readonly conversation: SkillConversation | undefined,
  ) {}

  async load(request: SkillRequest, signal: AbortSignal): Promise<string> {
    const entry = this.catalog.find(request.name);
    if (!entry) throw new ToolFailure(this.unknown(request.name));
    return request.file === undefined ? this.instructions(entry, signal) : this.file(entry, request.file, signal);
  }

  private async instructions(entry: SkillEntry, signal: AbortSignal): Promise<string> {
    const loaded = [...(this.conversation?.loadedSkills() ?? []), ...this.thisTurn.values()];
    if (loaded.some((s) => s.name === entry.name)) {
      return `The skill "${entry.name}" is already loaded in this conversation: its instructions are above, or kept after the summary of its earlier part, and still in force. Follow them; they are not sent again.`;
    }
    const parsed = parseSkillFile(await this.catalog.readSkillFile(entry, signal), path.basename(entry.absolute));
    if (!parsed.ok) throw new ToolFailure(`The skill "${entry.name}" cannot be loaded: its SKILL.md changed, and ${parsed.problem}.`);
    const body = capText(parsed.skill.body, MAX_SKILL_BODY_CHARS, 'Load the rest with the skill tool, file "SKILL.md".');
    const files = await filesOf(entry, signal);
    const text = renderSkillInstructions({ name: entry.name, folder: entry.folder, body, ...files });
    this.checkBudget(entry.name, text, loaded);
    this.thisTurn.set(entry.name, { name: entry.name, text });
    return text;
  }

  /**
   * Loaded skills stay in the view for good: together they may take a share of the window, and a
   * skill that would pass it is refused (nothing is loaded), rather than crowd out the conversation.
   */
  private checkBudget(name: string, text: string, loaded: readonly LoadedSkill[]): void {
    const conversation = this.conversation;
    if (!conversation) return;
    const budget = conversation.skillBudgetTokens();
    const used = loaded.reduce((sum, s) => sum + conversation.countText(s.text), 0);
    const needed = conversation.countText(text);
    if (used + needed <= budget) return;
    throw new ToolFailure(
      `The skill "${name}" was not loaded: its instructions take about ${needed.toLocaleString('en-US')} tokens, and the skills loaded in one conversation may take ${budget.toLocaleString('en-US')} together (${used.toLocaleString('en-US')} are taken). Go on without it, or tell the user that a new conversation could load it.`,
    );
  }

  private async file(entry: SkillEntry, file: string, signal: AbortSignal): Promise<string> {
    const relative = file.replace(/\\/g, '/').replace(/^(\.\/)+/, '');
    if (relative === '' || relative.includes('\0'))
      throw new ToolFailure('Give the file as a path relative to the skill\'s folder, e.g. "references/FORMS.md".');
    const absolute = path.resolve(entry.absolute, ...relative.split('/'));
    if (path.isAbsolute(relative) || !isInside(entry.absolute, absolute) || absolute === path.resolve(entry.absolute)) {
      throw new ToolFailure(`"${file}" is not a file inside the skill's folder (${entry.folder}); only the skill's own files can be loaded.`);
    }
    const shown = path.relative(entry.absolute, absolute).split(path.sep).join('/');
    try {
      // Inside the skill's folder once every link is followed; the read itself is confined to the workspace (or user) folder.
      const where = await locateReal({ name: entry.folder, fsPath: entry.absolute }, absolute, shown);
      if (!where.exists) throw new ToolFailure(`The skill "${entry.name}" has no file "${shown}".`);
    } catch (error) {
      if (!(error instanceof ToolFailure) || !/symbolic link/.test(error.message)) throw error;
      throw new ToolFailure(
        `"${shown}" leads out of the skill's folder (${entry.folder}) through a symbolic link; only the skill's own files can be loaded.`,
      );
    }
    const text = await this.catalog.readText({ absolute, relative: `${entry.folder}/${shown}`, root: entry.root }, MAX_SKILL_FILE_BYTES, signal);
    const capped = capText(text, MAX_SKILL_FILE_CHARS, '');
    return `<skill-file name="${entry.name}" file="${shown.replace(/"/g, '&quot;')}">\n${capped}\n</skill-file>`;
  }

  private unknown(name: string): string {
    const names = this.catalog.skills().map((s) => s.name);
    if (names.length === 0) return `There is no skill named "${name}": no skills are offered now.`;
    const shown = names.length > 30 ? `${names.slice(0, 30).join(', ')}, …` : names.join(', ');
    return `There is no skill named "${name}". The skills: ${shown}.`;
  }
}

/** The files of a skill's folder (not `SKILL.md`), sorted, a few levels deep; no link is followed. */
async function filesOf(entry: SkillEntry, signal: AbortSignal): Promise<{ files: string[]; moreFiles?: boolean }> {
  const files: string[] = [];
  let more = false;
  let real: string;
  try {
    real = (await locateReal(entry.root, entry.absolute, entry.folder)).real;
  } catch {
    return { files };
  }
  const walk = async (folder: string, prefix: string, depth: number): Promise<void> => {
    const dirents = await fs.readdir(folder, { withFileTypes: true }).catch(() => []);
    dirents.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const dirent of dirents) {
      signal.throwIfAborted();
      if (dirent.name.startsWith('.') || dirent.name === 'node_modules') continue;
      const name = `${prefix}${dirent.name}`;
      if (dirent.isFile() && name !== 'SKILL.md') {
        if (files.length >= MAX_LISTED_FILES) {
          more = true;
          return;
        }
        files.push(name);
      } else if (dirent.isDirectory() && depth < MAX_LISTING_DEPTH) {
        await walk(path.join(folder, dirent.name), `${name}/`, depth + 1);
      }
    }
  };
  await walk(real, '', 1);
  return more ? { files, moreFiles: true } : { files };
}
