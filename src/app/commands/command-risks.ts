/**
 * Arguments that make an allowed command do something its rule did not name: set configuration,
 * name a program or a script to run, or fetch a package to run. Pure (no `vscode`, no Node).
 *
 * A prefix rule (`git *`, `npm run *`) allows a program with arguments the user did not see; an
 * argument that sets configuration (`git -c core.pager=…`, `npm … --script-shell=…`, `make CC=…`)
 * or names a program (`--upload-pack`, `-e`/`--eval`, `find -exec`) turns that program into a way to
 * run anything. Such an argument, past the words the rule itself lists, makes the command ask.
 *
 * Options are recognised in every spelling the program accepts: `--name`, `--name=value`, a short
 * letter alone, with its value attached or among grouped letters (`-pe`), and, for programs whose long
 * options take one dash (`find`, `go`), `-name`. An unknown program is checked against the options
 * that run code or set configuration in most tools ({@link EVERY_PROGRAM}).
 */

export interface ArgumentContext {
  /**
   * The packages, and the programs they install, that the workspace's lock files pin: `npx` and the
   * like run those without fetching anything.
   */
  readonly lockedPackages: ReadonlySet<string>;
}

interface ProgramRules {
  /** Long options (without dashes, lower case) that set configuration or name a program, anywhere. */
  readonly long?: readonly string[];
  /** Short option letters that do, anywhere (case matters). */
  readonly short?: string;
  /** Long options and short letters that do only before the subcommand (`git -c x log`, not `git log -c`). */
  readonly globalLong?: readonly string[];
  readonly globalShort?: string;
  /** Global options whose value is the next word, to find the subcommand after them. */
  readonly globalValued?: readonly string[];
  /**
   * Per subcommand: its own risky options; `always` for one that changes configuration or runs what
   * it is given; `fetches` for one that runs a package, fetching it unless the lock files pin it.
   */
  readonly subcommands?: Readonly<Record<string, 'always' | 'fetches' | { readonly long?: readonly string[]; readonly short?: string }>>;
  /** Long options are also written with one dash (`-exec`, `-toolexec`). */
  readonly singleDashLong?: boolean;
  /** Arguments `NAME=value` override the build's variables (`make CC=…`). */
  readonly assignmentsAreSettings?: boolean;
  /**
   * The program runs a package named by its first argument, fetching it: unless the npm lock files
   * pin it (`npx`: `npm`), or always (`uvx`: `never-pinned`, its lock files are not read).
   */
  readonly fetchesPackage?: 'npm' | 'never-pinned';
}

/** Long options that run code or set configuration in most tools, whatever the program. */
const EVERY_PROGRAM: readonly string[] = [
  'eval',
  'exec',
  'execdir',
  'exec-path',
  'upload-pack',
  'receive-pack',
  'config',
  'config-env',
  'script-shell',
  'shell',
  'node-options',
  'require',
  'import',
  'loader',
  'experimental-loader',
  'env-file',
  'userconfig',
  'globalconfig',
  'init-module',
  'editor',
  'pager',
  'registry',
  'rsh',
  'rsync-path',
  'checkpoint-action',
  'rcfile',
  'init-file',
];

/** Long option names ending so name a program or a script in most tools (`--to-command`, `--use-compress-program`). */
const PROGRAM_SUFFIX = /-(?:cmd|command|program|shell|exec|pager|editor|script|loader|hook)$/;

/** npm's per-registry settings: `--@scope:registry=…`, `--//host/:_authToken=…`. */
const REGISTRY_SETTING = /(?:registry$|^\/\/)/;

const NPM_FAMILY: ProgramRules = {
  long: ['git', 'browser', 'viewer', 'call', 'package', 'node-gyp', 'prefix', 'cafile', 'workspace-config'],
  short: 'c',
  subcommands: {
    config: 'always',
    set: 'always',
    pkg: 'always',
    init: 'always',
    create: 'always',
    explore: 'always',
    edit: 'always',
    plugin: 'always',
    patch: 'always',
    'patch-commit': 'always',
    exec: 'fetches',
    x: 'fetches',
    dlx: 'fetches',
  },
};

const NODE_RUNNER: ProgramRules = { short: 'epr', long: ['print', 'inspect', 'inspect-brk'] };
const SHELL: ProgramRules = { short: 'c', long: ['command', 'encodedcommand'] };
const PYTHON: ProgramRules = { short: 'c' };

const PROGRAMS: Readonly<Record<string, ProgramRules>> = {
  git: {
    globalShort: 'cC',
    globalLong: ['git-dir', 'work-tree', 'namespace', 'super-prefix', 'list-cmds'],
    globalValued: ['-c', '-C', '--git-dir', '--work-tree', '--namespace', '--super-prefix', '--config-env'],
    long: ['template', 'separate-git-dir', 'extcmd', 'open-files-in-pager', 'tool', 'sendmail-cmd', 'to-cmd', 'cc-cmd'],
    subcommands: {
      config: 'always',
      'filter-branch': 'always',
      'filter-repo': 'always',
      submodule: 'always',
      bisect: 'always',
      daemon: 'always',
      'send-email': 'always',
      credential: 'always',
      clone: { short: 'cu' },
      'ls-remote': { short: 'u' },
      rebase: { short: 'x' },
      difftool: { short: 'xt' },
      mergetool: { short: 't' },
      grep: { short: 'O' },
      archive: { long: ['remote'] },
    },
  },
  npm: NPM_FAMILY,
  pnpm: NPM_FAMILY,
  yarn: NPM_FAMILY,
  yarnpkg: NPM_FAMILY,
  bun: { ...NPM_FAMILY, short: 'ecp', long: [...(NPM_FAMILY.long ?? []), 'print', 'preload'] },
  npx: { ...NPM_FAMILY, short: 'cp', fetchesPackage: 'npm' },
  pnpx: { ...NPM_FAMILY, short: 'cp', fetchesPackage: 'npm' },
  bunx: { ...NPM_FAMILY, short: 'cp', fetchesPackage: 'npm' },
  uvx: { fetchesPackage: 'never-pinned' },
  pipx: { subcommands: { run: 'always' } },
  uv: { long: ['index-url', 'extra-index-url', 'find-links', 'index'], subcommands: { tool: 'always' } },
  node: NODE_RUNNER,
  nodejs: NODE_RUNNER,
  'ts-node': NODE_RUNNER,
  tsx: NODE_RUNNER,
  deno: { subcommands: { eval: 'always' } },
  python: PYTHON,
  python3: PYTHON,
  python2: PYTHON,
  py: PYTHON,
  pypy3: PYTHON,
  sh: SHELL,
  bash: SHELL,
  zsh: SHELL,
  dash: SHELL,
  ksh: SHELL,
  fish: SHELL,
  pwsh: SHELL,
  powershell: SHELL,
  perl: { short: 'eEMmIx' },
  ruby: { short: 'erI' },
  php: { short: 'rdcB' },
  sed: { short: 'ef', long: ['expression', 'file'] },
  rsync: { short: 'e' },
  ssh: { short: 'oFS' },
  scp: { short: 'oFS' },
  tar: { short: 'IF' },
  find: { singleDashLong: true, long: ['ok', 'okdir', 'fprint', 'fprint0', 'fprintf', 'fls'] },
  make: { short: 'fEIe', long: ['file', 'makefile', 'include-dir', 'environment-overrides'], assignmentsAreSettings: true },
  gmake: { short: 'fEIe', long: ['file', 'makefile', 'include-dir', 'environment-overrides'], assignmentsAreSettings: true },
  cargo: { short: 'Z', subcommands: { install: 'always' } },
  rustc: { short: 'CZ', long: ['codegen'] },
  go: {
    singleDashLong: true,
    long: ['toolexec', 'overlay', 'modfile', 'pgo'],
    subcommands: { generate: 'always', env: { short: 'wu' } },
  },
  gradle: { short: 'IDPbc', long: ['init-script', 'build-file', 'settings-file', 'project-prop', 'system-prop'] },
  gradlew: { short: 'IDPbc', long: ['init-script', 'build-file', 'settings-file', 'project-prop', 'system-prop'] },
  mvn: { short: 'Dsft', long: ['define', 'settings', 'global-settings', 'file', 'toolchains'] },
  mvnw: { short: 'Dsft', long: ['define', 'settings', 'global-settings', 'file', 'toolchains'] },
  pytest: { short: 'pco', long: ['override-ini', 'rootdir', 'confcutdir'] },
  'py.test': { short: 'pco', long: ['override-ini', 'rootdir', 'confcutdir'] },
  tox: { short: 'cx', long: ['conf', 'override'] },
  eslint: { short: 'c', long: ['rulesdir', 'plugin', 'resolve-plugins-relative-to'] },
  jest: { short: 'c', long: ['setupfiles', 'setupfilesafterenv', 'globalsetup', 'testrunner', 'transform'] },
  vitest: { short: 'c', long: ['root', 'dir', 'setupfiles', 'globalsetup'] },
  mocha: { short: 'r', long: ['file', 'ui'] },
  pip: { short: 'if', long: ['index-url', 'extra-index-url', 'find-links'] },
  pip3: { short: 'if', long: ['index-url', 'extra-index-url', 'find-links'] },
  docker: { short: 'ev', long: ['env', 'env-file', 'volume', 'privileged', 'mount'] },
  podman: { short: 'ev', long: ['env', 'env-file', 'volume', 'privileged', 'mount'] },
};

/** `NAME=value`: an environment assignment before a command, or a build variable after `make`. */
const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*=/;

/**
 * Why the words from index `from` on make the command do more than its rule allows, or `undefined`.
 * `words` is the whole command; the words before `from` are the rule's own and are not questioned.
 */
export function riskyArgument(words: readonly string[], from: number, context: ArgumentContext): string | undefined {
  let at = 0;
  while (at < words.length && ASSIGNMENT.test(words[at] ?? '')) {
    if (at >= from) return `${words[at]} sets an environment variable for the command`;
    at++;
  }
  const programWord = words[at];
  if (programWord === undefined) return undefined;
  return new ArgumentCheck(words, at, from, context).run(programName(programWord));
}

/** The program a word runs, as the tables name it: `./gradlew.bat` is `gradlew`, `/usr/bin/git` is `git`. */
export function programName(word: string): string {
  const base = packageName(word) ?? word.split(/[\\/]/).pop() ?? word;
  return base.toLowerCase().replace(/\.(?:exe|cmd|bat|ps1|sh)$/, '');
}

class ArgumentCheck {
  constructor(
    private readonly words: readonly string[],
    private readonly program: number,
    private readonly from: number,
    private readonly context: ArgumentContext,
  ) {}

  run(name: string): string | undefined {
    const rules = PROGRAMS[name] ?? {};
    const subcommand = this.subcommandIndex(rules);
    // `npx pkg …`: the words after the package are its program's, checked as that program's own.
    const fetched = this.fetchedPackageIndex(rules, subcommand);
    const end = fetched ?? this.words.length;
    for (let i = Math.max(this.program + 1, this.from); i < end; i++) {
      const why = this.riskOf(this.words[i] ?? '', i, rules, subcommand);
      if (why !== undefined) return why;
    }
    if (fetched === undefined) return undefined;
    return this.fetchRisk(rules, fetched) ?? riskyArgument(this.words.slice(fetched), Math.max(1, this.from - fetched), this.context);
  }

  private riskOf(word: string, index: number, rules: ProgramRules, subcommand: number | undefined): string | undefined {
    if (/^ext::/i.test(word)) return `${word} names a program for git to run`;
    if (index === subcommand) {
      const sub = rules.subcommands?.[word];
      if (sub === 'always') return `"${this.words[this.program]} ${word}" changes configuration or runs what it is given`;
      return undefined;
    }
    if (rules.assignmentsAreSettings && ASSIGNMENT.test(word)) return `${word} overrides a build setting`;
    if (!word.startsWith('-') || word === '-' || word === '--') return undefined;
    const beforeSubcommand = subcommand === undefined || index < subcommand;
    const subRules = !beforeSubcommand && subcommand !== undefined ? rules.subcommands?.[this.words[subcommand] ?? ''] : undefined;
    const own = typeof subRules === 'object' ? subRules : {};
    const long = [...EVERY_PROGRAM, ...(rules.long ?? []), ...(own.long ?? []), ...(beforeSubcommand ? (rules.globalLong ?? []) : [])];
    const short = `${rules.short ?? ''}${own.short ?? ''}${beforeSubcommand ? (rules.globalShort ?? '') : ''}`;
    return optionRisk(word, long, short, rules.singleDashLong === true);
  }

  /** Where the subcommand is (`git -C x log`: `log`), for programs that have them. */
  private subcommandIndex(rules: ProgramRules): number | undefined {
    if (!rules.subcommands && !rules.globalShort) return undefined;
    const valued = rules.globalValued ?? [];
    for (let i = this.program + 1; i < this.words.length; i++) {
      const word = this.words[i] ?? '';
      if (word === '--') return undefined;
      if (valued.includes(word)) i++;
      else if (!word.startsWith('-')) return i;
    }
    return undefined;
  }

  /** Where the package is that `npx`, `npm exec`, `pnpm dlx` and the like run; `undefined` for other commands. */
  private fetchedPackageIndex(rules: ProgramRules, subcommand: number | undefined): number | undefined {
    const bySubcommand = subcommand !== undefined && rules.subcommands?.[this.words[subcommand] ?? ''] === 'fetches';
    if (rules.fetchesPackage === undefined && !bySubcommand) return undefined;
    const start = (bySubcommand ? subcommand : this.program) + 1;
    const index = this.words.findIndex((w, i) => i >= start && !w.startsWith('-'));
    return index === -1 ? undefined : index;
  }

  /** The package must be one the lock files pin, unless the rule itself names it. */
  private fetchRisk(rules: ProgramRules, index: number): string | undefined {
    if (index < this.from) return undefined;
    const spec = this.words[index] ?? '';
    const name = packageName(spec);
    const pinned = rules.fetchesPackage !== 'never-pinned' && name !== undefined && this.context.lockedPackages.has(name);
    if (pinned) return undefined;
    return `${spec} is not a package of the workspace's lock file, so it would be fetched and run`;
  }
}

/** Why an option word sets configuration or names a program, or `undefined`. */
function optionRisk(word: string, long: readonly string[], short: string, singleDashLong: boolean): string | undefined {
  const risky = `${word.split('=')[0]} sets configuration or names a program to run`;
  if (word.startsWith('--') || (singleDashLong && word.length > 2)) {
    const name = word.replace(/^--?/, '').split('=')[0]?.toLowerCase() ?? '';
    if (long.includes(name) || PROGRAM_SUFFIX.test(name) || REGISTRY_SETTING.test(name)) return risky;
    if (word.startsWith('--')) return undefined;
  }
  const letters = word.slice(1).split('=')[0] ?? '';
  for (const letter of letters) if (short.includes(letter)) return risky;
  return undefined;
}

/** The package a spec names (`@scope/name@1.2` → `@scope/name`); `undefined` for a path, URL or git spec. */
function packageName(spec: string): string | undefined {
  const match = /^((?:@[^/@\s:]+\/)?[^/@\s:]+)(?:@[^/\s:]*)?$/.exec(spec);
  return match?.[1]?.toLowerCase();
}
