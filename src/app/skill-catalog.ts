import type { Dirent } from 'node:fs';
import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { ToolFailure } from '../llm/workspace-port';
import { readConfined } from './confined-files';
import { isInside, locateReal, type ResolvedPath, type WorkspaceRoot } from './path-guard';
import { parseSkillFile, type SkillFile } from './skill-file';

/**
 * The skills the agent is offered: the Agent Skills folders (`<name>/SKILL.md`) of each workspace
 * folder's `.github/skills`, `.agents/skills` and `.claude/skills` (in that order, as VS Code reads
 * them), then of the user's folders (`longrun.skills.userFolders`). Free of `vscode`.
 *
 * Everything is read through the confined files (`confined-files.ts`): a skill of the workspace is
 * read only inside the workspace folder, and one of a user folder only inside that folder; a folder
 * or a `SKILL.md` that a symbolic link leads out of it is refused and reported. In an untrusted
 * workspace, the workspace's skills are not offered (its text would become the agent's
 * instructions); the user's are.
 *
 * Read again at the start of every turn (`refresh`), so a skill added, changed or removed is seen
 * by the next request; the listing is sorted and rendered the same way every time, so the system
 * prompt is the same bytes while the skills on disk do not change. What is wrong with a skill is
 * reported once (the output log) and the skill skipped; nothing here throws for a bad skill.
 */

/** One skill the agent may load. */
export interface SkillEntry {
  readonly name: string;
  readonly description: string;
  /** Where its folder is, as the model is shown it: workspace-relative, or `~/…` for a user folder. */
  readonly folder: string;
  /** Its folder on disk (not resolved: links followed only where they are checked). */
  readonly absolute: string;
  /** What its files are confined to: the workspace folder, or the user folder it was found in. */
  readonly root: WorkspaceRoot;
}

export interface SkillCatalogDeps {
  /** The open workspace folders. */
  readonly roots: () => readonly WorkspaceRoot[];
  /** Whether the workspace is trusted: only then are its skills offered. */
  readonly trusted: () => boolean;
  /** `longrun.skills.userFolders`: absolute paths, `~` for the home folder. */
  readonly userFolders: () => readonly string[];
  readonly log: { warn(message: string): void };
  /** The home folder, for `~` (tests give their own). */
  readonly home?: string;
}

/** The folders of a workspace folder that hold skills, in the order a name found twice is taken from. */
export const WORKSPACE_SKILL_FOLDERS = ['.github/skills', '.agents/skills', '.claude/skills'] as const;
/** Most skills listed in the system prompt; the rest are named in the log. */
export const MAX_LISTED_SKILLS = 100;
/** Most characters the listing takes in the system prompt. */
export const MAX_LISTING_CHARS = 16_000;
/** Largest `SKILL.md` read. */
export const MAX_SKILL_FILE_BYTES = 512 * 1024;
/** Most entries of one skills folder looked at. */
const MAX_FOLDER_ENTRIES = 500;

const utf8 = new TextDecoder('utf-8');

export class SkillCatalog {
  private entries: readonly SkillEntry[] = [];
  private readonly reported = new Set<string>();
  /** Each `SKILL.md` read, by path: parsed again only when its text changed. */
  private readonly parsed = new Map<string, { readonly text: string; readonly skill: SkillFile | undefined }>();

  constructor(private readonly deps: SkillCatalogDeps) {}

  /** The skills offered, sorted by name. */
  skills(): readonly SkillEntry[] {
    return this.entries;
  }

  /** The skill named `name`, when it is offered. */
  find(name: string): SkillEntry | undefined {
    return this.entries.find((s) => s.name === name);
  }

  /** Reads the skills folders again. */
  async refresh(signal: AbortSignal): Promise<void> {
    const found: SkillEntry[] = [];
    const byName = new Map<string, SkillEntry>();
    const realFolders = new Set<string>();
    for (const source of this.sources()) {
      for (const candidate of await this.scan(source, realFolders, signal)) {
        const first = byName.get(candidate.name);
        if (first) {
          this.report(
            `The skill "${candidate.name}" in ${candidate.folder} is not offered: ${first.folder} has a skill of that name, which comes first.`,
          );
          continue;
        }
        byName.set(candidate.name, candidate);
        found.push(candidate);
      }
    }
    found.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    if (found.length > MAX_LISTED_SKILLS) {
      const left = found.slice(MAX_LISTED_SKILLS).map((s) => s.name);
      this.report(`Only ${MAX_LISTED_SKILLS} skills are offered to the agent; not offered: ${left.join(', ')}.`);
    }
    this.entries = found.slice(0, MAX_LISTED_SKILLS);
  }

  /** The text of the skill's `SKILL.md` now, confined like every read of it. */
  async readSkillFile(entry: SkillEntry, signal: AbortSignal): Promise<string> {
    return this.readText(skillFileOf(entry.root, entry.absolute, entry.folder), MAX_SKILL_FILE_BYTES, signal);
  }

  /** Reads a confined text file; a `ToolFailure` says why it could not be. */
  async readText(target: ResolvedPath, maxBytes: number, signal: AbortSignal): Promise<string> {
    const read = await readConfined(target, maxBytes, signal);
    if ('bytes' in read) {
      if (read.bytes.subarray(0, 8_192).includes(0)) throw new ToolFailure(`${target.relative} is a binary file; only text files can be loaded.`);
      return utf8.decode(read.bytes);
    }
    if (read.skipped === 'large') throw new ToolFailure(`${target.relative} is larger than ${Math.round(maxBytes / 1024)} KB and cannot be loaded.`);
    throw new ToolFailure(`${target.relative} is a ${read.kind}, not a file.`);
  }

  /** Reports a problem once: the same one, found again at every turn, is not repeated. */
  report(message: string): void {
    if (this.reported.has(message)) return;
    this.reported.add(message);
    this.deps.log.warn(message);
  }

  /** The skills folders to read, in the order a name found twice is taken from. */
  private sources(): SkillSource[] {
    const roots = this.deps.roots();
    const sources: SkillSource[] = [];
    if (this.deps.trusted()) {
      for (const root of roots) {
        for (const folder of WORKSPACE_SKILL_FOLDERS) {
          sources.push({ root, absolute: path.join(root.fsPath, ...folder.split('/')), shown: roots.length > 1 ? `${root.name}/${folder}` : folder });
        }
      }
    }
    const home = this.deps.home ?? os.homedir();
    for (const setting of this.deps.userFolders()) {
      const expanded = setting === '~' || setting.startsWith('~/') ? path.join(home, setting.slice(1)) : setting;
      if (!path.isAbsolute(expanded)) {
        this.report(`The skills folder "${setting}" of longrun.skills.userFolders is not an absolute path; it is not read.`);
        continue;
      }
      const absolute = path.resolve(expanded);
      const shown = isInside(home, absolute) ? `~/${path.relative(home, absolute).split(path.sep).join('/')}`.replace(/\/$/, '') : absolute;
      sources.push({ root: { name: shown, fsPath: absolute }, absolute, shown });
    }
    return sources;
  }

  /**
   * The skills of one skills folder, in the order of their folders' names. A folder already read
   * (`seen`, by its real path: `.claude/skills` a link to `.github/skills`) is one skill, read once.
   */
  private async scan(source: SkillSource, seen: Set<string>, signal: AbortSignal): Promise<SkillEntry[]> {
    const dirents = await this.folderEntries(source);
    const skills: SkillEntry[] = [];
    for (const dirent of dirents) {
      signal.throwIfAborted();
      if (!dirent.isDirectory() && !dirent.isSymbolicLink()) continue;
      const absolute = path.join(source.absolute, dirent.name);
      const real = await fs.realpath(absolute).catch(() => absolute);
      if (seen.has(real)) continue;
      seen.add(real);
      const folder = `${source.shown}/${dirent.name}`;
      const skill = await this.readSkill(source.root, absolute, folder, dirent.name, signal);
      if (skill && !skill.hidden) skills.push({ name: skill.name, description: skill.description, folder, absolute, root: source.root });
    }
    return skills;
  }

  /** The entries of a skills folder, sorted; none when it does not exist or leads out of its root. */
  private async folderEntries(source: SkillSource): Promise<Dirent[]> {
    let real: string;
    try {
      const where = await locateReal(source.root, source.absolute, source.shown);
      if (!where.exists) return [];
      real = where.real;
    } catch (error) {
      if (!(error instanceof ToolFailure)) throw error;
      this.report(`The skills folder ${source.shown} is not read: ${error.message}`);
      return [];
    }
    let dirents: Dirent[];
    try {
      dirents = await fs.readdir(real, { withFileTypes: true });
    } catch (error) {
      // Not a folder, or not readable: nothing to offer, and said once.
      this.report(`The skills folder ${source.shown} could not be read: ${error instanceof Error ? error.message : String(error)}`);
      return [];
    }
    dirents.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    if (dirents.length > MAX_FOLDER_ENTRIES) {
      this.report(
        `The skills folder ${source.shown} has more than ${MAX_FOLDER_ENTRIES} entries; only the first ${MAX_FOLDER_ENTRIES} are looked at.`,
      );
    }
    return dirents.slice(0, MAX_FOLDER_ENTRIES);
  }

  /** The skill of a folder: undefined when it has no `SKILL.md`, or one that cannot be used (reported). */
  private async readSkill(
    root: WorkspaceRoot,
    absolute: string,
    folder: string,
    dirName: string,
    signal: AbortSignal,
  ): Promise<SkillFile | undefined> {
    const target = skillFileOf(root, absolute, folder);
    let text: string;
    try {
      if (!(await locateReal(root, target.absolute, target.relative)).exists) return undefined;
      text = await this.readText(target, MAX_SKILL_FILE_BYTES, signal);
    } catch (error) {
      if (!(error instanceof ToolFailure)) throw error;
      this.report(`The skill in ${folder} is not offered: ${error.message}`);
      return undefined;
    }
    const known = this.parsed.get(target.absolute);
    if (known?.text === text) return known.skill;
    const parsed = parseSkillFile(text, dirName);
    if (parsed.ok) for (const warning of parsed.warnings) this.report(`The skill in ${folder}: ${warning}.`);
    else this.report(`The skill in ${folder} is not offered: ${parsed.problem}.`);
    const skill = parsed.ok ? parsed.skill : undefined;
    this.parsed.set(target.absolute, { text, skill });
    return skill;
  }
}

/** A folder that holds skills, and the root its reads are confined to. */
interface SkillSource {
  readonly root: WorkspaceRoot;
  readonly absolute: string;
  /** As the model and the log are shown it. */
  readonly shown: string;
}

function skillFileOf(root: WorkspaceRoot, folderAbsolute: string, folder: string): ResolvedPath {
  return { absolute: path.join(folderAbsolute, 'SKILL.md'), relative: `${folder}/SKILL.md`, root };
}
