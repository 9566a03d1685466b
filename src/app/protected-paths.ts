import { COMMAND_FILE_RULES } from './command-files';
import { globToRegExp } from './glob-match';

/**
 * Files whose content can make tools run programs: writing them always needs the user's approval,
 * whatever `longrun.agent.autoApproveEdits` says. Pure (no `vscode`, no Node).
 *
 * A path is checked relative to its workspace folder (so `web/.git/config` in a multi-root
 * workspace is `.git/config` of the folder `web`), case-insensitively, and after removing what
 * Windows and macOS ignore in a file name, since on those file systems `.GIT/config`,
 * `.git./config` and `.git::$INDEX_ALLOCATION/config` all name `.git/config`.
 */

/** Why a file is protected, in words the confirmation shows. */
export interface Protection {
  /** A sentence naming what the file can make run, e.g. `.vscode/tasks.json can run tasks when the folder opens.` */
  readonly reason: string;
}

interface Rule {
  readonly glob: string;
  readonly reason: string;
}

/** Most specific first: the first rule that matches gives the reason. */
const BUILT_IN_RULES: readonly Rule[] = [
  { glob: '**/.git/hooks/**', reason: 'git runs the files in .git/hooks as programs on commit, checkout, merge and push.' },
  { glob: '**/.git/config', reason: '.git/config can make git run commands (core.fsmonitor, core.hooksPath, aliases, filters).' },
  { glob: '**/.git/**', reason: 'files under .git control the repository: git reads its settings, hooks and references from them.' },
  { glob: '**/.husky/**', reason: 'Husky runs the scripts in .husky as git hooks on every commit.' },
  { glob: '**/.vscode/tasks.json', reason: '.vscode/tasks.json can run tasks when the folder opens.' },
  { glob: '**/.vscode/launch.json', reason: '.vscode/launch.json defines the programs the debugger starts.' },
  {
    glob: '**/.vscode/settings.json',
    reason: '.vscode/settings.json changes how VS Code and its extensions behave, including which programs they run.',
  },
  { glob: '**/.vscode/**', reason: 'files in .vscode configure VS Code and its extensions for this folder.' },
  {
    glob: '**/*.code-workspace',
    reason: 'a .code-workspace file holds settings, tasks and launch configurations that VS Code applies when it is opened.',
  },
  {
    glob: '**/{.devcontainer/**,.devcontainer.json}',
    reason: 'dev container configuration runs commands on this machine (initializeCommand) and in the container (postCreateCommand).',
  },
  { glob: '**/.github/workflows/**', reason: "GitHub Actions workflows run code in CI with the repository's secrets." },
];

const COMPILED_BUILT_INS = BUILT_IN_RULES.map((rule) => ({ ...rule, pattern: globToRegExp(rule.glob, { caseInsensitive: true }) }));

const COMPILED_COMMAND_FILES = COMMAND_FILE_RULES.map((rule) => ({ ...rule, pattern: globToRegExp(rule.glob, { caseInsensitive: true }) }));

/**
 * Whether writing a file needs the user's approval, and why.
 *
 * @param paths the file's path relative to its workspace folder, POSIX; give every name the file
 *   goes by (the path as asked and its real path with symlinks resolved), since a link named
 *   `cfg` pointing at `.git` makes `cfg/config` the repository's configuration.
 * @param userGlobs `longrun.agent.protectedPaths`, relative to each workspace folder.
 * @param displayPath the path as the model wrote it (`web/src/a.ts` in a multi-root workspace),
 *   which a user glob may also name.
 * @param commandsRunUnasked whether some command may run without asking: the files that decide
 *   what commands do (`command-files.ts`) are then protected too.
 */
export function protectionOf(
  paths: readonly string[],
  userGlobs: readonly string[],
  displayPath?: string,
  commandsRunUnasked = false,
): Protection | undefined {
  const normalized = paths.map(normalizePath);
  for (const rule of COMPILED_BUILT_INS) {
    if (normalized.some((p) => rule.pattern.test(p))) return { reason: capitalize(rule.reason) };
  }
  const commandFile = commandsRunUnasked ? commandFileOf(paths, normalized) : undefined;
  if (commandFile !== undefined) return commandFile;
  const candidates = displayPath === undefined ? normalized : [...normalized, normalizePath(displayPath)];
  for (const glob of userGlobs) {
    const pattern = globToRegExp(normalizeGlob(glob), { caseInsensitive: true });
    if (candidates.some((p) => pattern.test(p))) {
      return { reason: `It matches "${glob}" in the setting longrun.agent.protectedPaths.` };
    }
  }
  return undefined;
}

/** `package.json holds the scripts …, and longrun.agent.allowedCommands lets commands run without asking.` */
function commandFileOf(paths: readonly string[], normalized: readonly string[]): Protection | undefined {
  for (const rule of COMPILED_COMMAND_FILES) {
    const at = normalized.findIndex((p) => rule.pattern.test(p));
    if (at === -1) continue;
    const name = (paths[at] ?? '').split(/[\\/]/).pop() ?? '';
    return { reason: `${name} ${rule.decides}, and longrun.agent.allowedCommands lets commands run without asking.` };
  }
  return undefined;
}

/**
 * The path as a case-insensitive file system with Windows' or macOS's naming rules sees it:
 * backslashes as separators, no empty or `.` segments, and each name without what those systems
 * ignore (see {@link normalizeName}).
 */
export function normalizePath(p: string): string {
  return p
    .replace(/\\/g, '/')
    .split('/')
    .filter((segment) => segment !== '' && segment !== '.')
    .map(normalizeName)
    .join('/');
}

/**
 * Code points HFS+ leaves out when it compares names (zero-width joiners, direction marks, BOM),
 * so `.g\u200cit` is `.git` there; git's own `is_hfs_dotgit` skips the same ones.
 */
const HFS_IGNORABLE = /[\u200b-\u200f\u202a-\u202e\u206a-\u206f\ufeff]/g;

/**
 * One file name as Windows and macOS compare it: compatibility characters folded (the Kelvin sign
 * is a `K` on APFS), HFS+ ignorable code points removed, an NTFS stream suffix (`:$DATA`,
 * `::$INDEX_ALLOCATION`) and trailing dots and spaces dropped (Win32 strips them), lower case.
 */
function normalizeName(name: string): string {
  const stripped = name
    .normalize('NFKC')
    .replace(HFS_IGNORABLE, '')
    .replace(/:.*$/s, '')
    .replace(/[. ]+$/, '');
  // `..` never reaches here (paths are resolved first); a name made only of dots stays as it was.
  return (stripped === '' ? name : stripped).toLowerCase();
}

/** A user's glob, relative to the folder whichever way it was written (`./x`, `/x`, `x\\y`). */
function normalizeGlob(glob: string): string {
  return glob
    .trim()
    .replace(/\\/g, '/')
    .replace(/^(?:\.?\/)+/, '');
}

function capitalize(sentence: string): string {
  return sentence.charAt(0).toUpperCase() + sentence.slice(1);
}
