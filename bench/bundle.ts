/**
 * The production bundle: its size, how long the extension host takes to require it and run
 * `activate`, and how long the first call into the extension then takes to load the rest of it
 * (composition.js), in fresh Node processes (bench/activation-host.js, with a stub `vscode`). Built
 * into a temporary folder, so that `dist/` stays as the last build left it.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { median } from './stats';

const { buildAll, VOCABULARIES, LAZY_FILES } = require('../esbuild.js') as {
  buildAll: (options: { production: boolean; outdir: string; logLevel: 'warning' }) => Promise<unknown>;
  VOCABULARIES: readonly string[];
  LAZY_FILES: Readonly<Record<string, readonly string[]>>;
};

export interface BundleBench {
  /**
   * Bytes of the extension's own code, vocabularies and the packages loaded on first use not
   * included: the production `extension.js` (what activation loads) and `composition.js` (what the
   * first use loads), which were one file until activation stopped loading the second.
   */
  readonly bundle_bytes: number;
  readonly extension_bytes: number;
  readonly composition_bytes: number;
  /** Bytes of each vocabulary file beside it. */
  readonly vocabulary_bytes: Readonly<Record<string, number>>;
  /** Bytes of each file loaded on first use (the model packages, tracing). */
  readonly lazy_bytes: Readonly<Record<string, number>>;
  /** Median ms of `require(extension.js)` + `activate()` over fresh processes, and its two parts. */
  readonly activation_ms: number;
  readonly activation_require_ms: number;
  readonly activation_activate_ms: number;
  readonly activation_runs: number;
  /** Median ms of the first call into the extension after activation: requiring composition.js and composing. */
  readonly first_use_ms: number;
  /**
   * Files loaded on first use that were required during activation (none expected), and after it:
   * where Longrun has been used (the rest of the extension, zod and, once a GPT-4o model is in use,
   * its vocabulary), and where it never was, VS Code having asked for its models with no endpoint
   * set (none).
   */
  readonly vocabularies_during_activation: readonly string[];
  readonly vocabularies_after_activation: readonly string[];
  readonly loaded_when_unused: readonly string[];
  /** Warnings the extension logged in that run (none expected). */
  readonly check_warnings: readonly string[];
}

interface HostReport {
  readonly requireMs: number;
  readonly activateMs: number;
  readonly totalMs: number;
  readonly firstUseMs?: number;
  readonly vocabularies: { readonly duringActivation: string[]; readonly afterActivation: string[] };
  readonly errors: string[];
  readonly logged: string[];
  /** With --check-unused: what was loaded before an endpoint was added to the settings. */
  readonly loadedBeforeEndpoints?: string[];
}

/** One fresh process: plain Node, none of this process's TypeScript loader flags. */
async function host(outdir: string, args: readonly string[]): Promise<HostReport> {
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  const child = spawn(process.execPath, [join(__dirname, 'activation-host.js'), outdir, ...args], { stdio: ['ignore', 'pipe', 'inherit'], env });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`the activation host failed (exit code ${code})`);
  return JSON.parse(out) as HostReport;
}

/** Builds the production bundle into a temp folder and measures it. */
export async function benchBundle(runs = 21): Promise<BundleBench> {
  const outdir = await mkdtemp(join(tmpdir(), 'longrun-bench-bundle-'));
  try {
    await buildAll({ production: true, outdir, logLevel: 'warning' });
    const extensionBytes = (await stat(join(outdir, 'extension.js'))).size;
    const compositionBytes = (await stat(join(outdir, 'composition.js'))).size;
    const vocabularyBytes: Record<string, number> = {};
    for (const name of VOCABULARIES) vocabularyBytes[name] = (await stat(join(outdir, `${name}.js`))).size;
    const lazyBytes: Record<string, number> = {};
    for (const file of Object.keys(LAZY_FILES)) lazyBytes[file] = (await stat(join(outdir, file))).size;

    const check = await host(outdir, ['--check']);
    if (check.errors.length > 0) throw new Error(`activation failed in the stub host: ${check.errors[0]}`);
    const unused = await host(outdir, ['--check-unused']);
    if (unused.errors.length > 0) throw new Error(`activation failed in the stub host: ${unused.errors[0]}`);
    const reports: HostReport[] = [];
    for (let run = 0; run < runs; run++) reports.push(await host(outdir, []));
    return {
      bundle_bytes: extensionBytes + compositionBytes,
      extension_bytes: extensionBytes,
      composition_bytes: compositionBytes,
      vocabulary_bytes: vocabularyBytes,
      lazy_bytes: lazyBytes,
      activation_ms: median(reports.map((r) => r.totalMs)),
      activation_require_ms: median(reports.map((r) => r.requireMs)),
      activation_activate_ms: median(reports.map((r) => r.activateMs)),
      activation_runs: runs,
      first_use_ms: median(reports.map((r) => r.firstUseMs ?? Number.NaN)),
      vocabularies_during_activation: [...check.vocabularies.duringActivation, ...unused.vocabularies.duringActivation],
      vocabularies_after_activation: check.vocabularies.afterActivation,
      loaded_when_unused: unused.loadedBeforeEndpoints ?? unused.vocabularies.afterActivation,
      check_warnings: [...check.logged, ...unused.logged],
    };
  } finally {
    await rm(outdir, { recursive: true, force: true });
  }
}
