/**
 * The production bundle: its size, and how long the extension host takes to require it and run
 * `activate`, in fresh Node processes (bench/activation-host.js, with a stub `vscode`). Built into a
 * temporary folder, so that `dist/` stays as the last build left it.
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
  /** Bytes of the production `extension.js`, vocabularies not included. */
  readonly bundle_bytes: number;
  /** Bytes of each vocabulary file beside it. */
  readonly vocabulary_bytes: Readonly<Record<string, number>>;
  /** Bytes of each file loaded on first use (the model packages, tracing). */
  readonly lazy_bytes: Readonly<Record<string, number>>;
  /** Median ms of `require(extension.js)` + `activate()` over fresh processes, and its two parts. */
  readonly activation_ms: number;
  readonly activation_require_ms: number;
  readonly activation_activate_ms: number;
  readonly activation_runs: number;
  /** Vocabulary files required during activation (none expected), and once a GPT-4o model is in use. */
  readonly vocabularies_during_activation: readonly string[];
  readonly vocabularies_after_activation: readonly string[];
  /** Warnings the extension logged in that run (none expected). */
  readonly check_warnings: readonly string[];
}

interface HostReport {
  readonly requireMs: number;
  readonly activateMs: number;
  readonly totalMs: number;
  readonly vocabularies: { readonly duringActivation: string[]; readonly afterActivation: string[] };
  readonly errors: string[];
  readonly logged: string[];
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
    const bundleBytes = (await stat(join(outdir, 'extension.js'))).size;
    const vocabularyBytes: Record<string, number> = {};
    for (const name of VOCABULARIES) vocabularyBytes[name] = (await stat(join(outdir, `${name}.js`))).size;
    const lazyBytes: Record<string, number> = {};
    for (const file of Object.keys(LAZY_FILES)) lazyBytes[file] = (await stat(join(outdir, file))).size;

    const check = await host(outdir, ['--check']);
    if (check.errors.length > 0) throw new Error(`activation failed in the stub host: ${check.errors[0]}`);
    const reports: HostReport[] = [];
    for (let run = 0; run < runs; run++) reports.push(await host(outdir, []));
    return {
      bundle_bytes: bundleBytes,
      vocabulary_bytes: vocabularyBytes,
      lazy_bytes: lazyBytes,
      activation_ms: median(reports.map((r) => r.totalMs)),
      activation_require_ms: median(reports.map((r) => r.requireMs)),
      activation_activate_ms: median(reports.map((r) => r.activateMs)),
      activation_runs: runs,
      vocabularies_during_activation: check.vocabularies.duringActivation,
      vocabularies_after_activation: check.vocabularies.afterActivation,
      check_warnings: check.logged,
    };
  } finally {
    await rm(outdir, { recursive: true, force: true });
  }
}
