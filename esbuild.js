// Bundles the extension into one CommonJS file that VS Code can require, and each tokenizer
// vocabulary into a file of its own beside it (dist/o200k_base.js, dist/cl100k_base.js): together
// they are most of the size, and a conversation needs one at most, well after activation
// (src/core/vocabularies.ts requires it on first use). The AI SDK is ESM-only; esbuild converts it.
// `vscode` is provided by the editor at run time.
//
// `node esbuild.js [--production] [--watch]`; benchmarks and tests build elsewhere through `buildOptions`.
const esbuild = require('esbuild');
const path = require('node:path');

/** The encodings shipped as files of their own; each becomes `<name>.js` beside the extension. */
const VOCABULARIES = ['o200k_base', 'cl100k_base'];

/**
 * zod's classic API re-exports its ~40 message locales as one namespace (`export * as locales`),
 * which esbuild cannot tree-shake: about 260 KB of translations the extension never uses (zod
 * configures English on import, and Longrun never switches). Only English is kept.
 */
const zodEnglishOnly = {
  name: 'zod-english-only',
  setup(build) {
    build.onLoad({ filter: /[\\/]zod[\\/]v4[\\/]locales[\\/]index\.js$/ }, (args) => ({
      contents: "export { default as en } from './en.js';",
      loader: 'js',
      resolveDir: path.dirname(args.path),
    }));
  },
};

/**
 * The esbuild options for the extension and its vocabularies.
 * @param {{ production?: boolean, outdir?: string }} [options]
 * @returns {import('esbuild').BuildOptions}
 */
function buildOptions({ production = false, outdir = 'dist' } = {}) {
  return {
    entryPoints: [
      { in: path.join(__dirname, 'src', 'extension.ts'), out: 'extension' },
      ...VOCABULARIES.map((name) => ({ in: `gpt-tokenizer/encoding/${name}`, out: name })),
    ],
    absWorkingDir: __dirname,
    bundle: true,
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    outdir,
    external: ['vscode'],
    // Tells src/core/vocabularies.ts to require the vocabulary files instead of importing the package.
    define: { LONGRUN_VOCABULARY_FILES: 'true' },
    // ESM builds first: esbuild tree-shakes them, while OpenTelemetry's CommonJS builds would bring
    // in whole packages (the metrics SDK among them) that tracing never calls.
    mainFields: ['module', 'main'],
    plugins: [zodEnglishOnly],
    minify: production,
    sourcemap: !production,
    sourcesContent: false,
    logLevel: 'info',
  };
}

async function main() {
  const production = process.argv.includes('--production');
  const watch = process.argv.includes('--watch');
  const context = await esbuild.context(buildOptions({ production }));
  if (watch) {
    await context.watch();
  } else {
    await context.rebuild();
    await context.dispose();
  }
}

module.exports = { buildOptions, VOCABULARIES };

if (require.main === module) {
  main().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
