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

/** The scripted models the tests declare to Longrun (the windows Longrun is told about). */
const OFFLINE_MODELS = {
  scripted: { id: 'scripted', name: 'Offline scripted model', contextWindow: 128_000, maxOutputTokens: 500 },
  'scripted-small': { id: 'scripted-small', name: 'Offline scripted model (small)', contextWindow: 8_192, maxOutputTokens: 512 },
  // Declares more than its server will accept when a test shrinks it: overflow errors.
  'scripted-overflow': { id: 'scripted-overflow', name: 'Offline scripted model (overflowing)', contextWindow: 128_000, maxOutputTokens: 500 },
  // As a newcomer sets a model up: an id and nothing else. Its server states a 6,000-token window.
  'scripted-6k': { id: 'scripted-6k' },
  // Nothing stated anywhere, and a server that cuts long prompts silently, as Ollama does.
  'scripted-trunc': { id: 'scripted-trunc' },
  // Set up like scripted-6k, on a server that does not read tool_choice, as Ollama's OpenAI layer.
  'scripted-6k-tools': { id: 'scripted-6k-tools' },
} as const;

/** The models the scripted server runs for the tests: the windows it really has. */
export const SERVED_MODELS = [
  { id: 'scripted', window: 128_000 },
  { id: 'scripted-small', window: 8_192 },
  { id: 'scripted-overflow', window: 128_000 },
  { id: 'scripted-6k', window: 6_000, advertiseWindow: true },
  // Ollama's default context: 4,096 tokens, the start of a longer prompt dropped silently.
  { id: 'scripted-trunc', window: 4_096, overflow: 'truncate' as const },
  { id: 'scripted-6k-tools', window: 6_000, advertiseWindow: true, ignoresToolChoice: true },
  // Served to the test extension's model (test/e2e/models-extension), which declares its own window.
  { id: 'scripted-editor', window: 128_000 },
];

/** The models the stand-in of Anthropic's Messages API runs: named as Claude models are, so Longrun counts them as Claude's. */
export const ANTHROPIC_MODELS = [
  { id: 'claude-scripted', window: 128_000 },
  { id: 'claude-scripted-small', window: 8_192 },
  // Listed by its dated snapshot, as Anthropic's Models API lists it, and asked for by its alias.
  { id: 'claude-sonnet-4-5-20250929', window: 20_000 },
];

/** `longrun.endpoints` with one endpoint, `offline`, serving the named scripted models from `baseUrl`. */
export function offlineEndpoints(baseUrl: string, ids: ReadonlyArray<keyof typeof OFFLINE_MODELS>): unknown[] {
  return [{ name: 'offline', baseUrl, models: ids.map((id) => OFFLINE_MODELS[id]) }];
}
