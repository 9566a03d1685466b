import { cpSync, writeFileSync } from 'node:fs';
import { build } from 'esbuild';
import { join } from 'node:path';
import { ROOT } from '../../scripts/sandbox';

/** The test workspace: the fixture files, plus `count` files of about 600 tokens each to read. */
export function makeWorkspace(dir: string, count: number): void {
  cpSync(join(ROOT, 'test', 'e2e', 'fixtures', 'workspace'), dir, { recursive: true });
  for (let i = 1; i <= count; i++) {
    const lines = Array.from({ length: 40 }, (_, j) => `export const item${i}_${j} = 'alpha beta gamma delta ${i * 100 + j}';`);
    writeFileSync(join(dir, 'src', `big-${i}.ts`), `${lines.join('\n')}\n`);
  }
}

/** Bundles test code for the extension host: `vscode` comes from the host, mocha from the project. */
export async function bundleForExtensionHost(entryPoints: string[], outdir: string): Promise<void> {
  await build({
    entryPoints,
    outdir,
    bundle: true,
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    external: ['vscode', 'mocha'],
    logLevel: 'warning',
  });
}
