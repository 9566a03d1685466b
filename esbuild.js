// Bundles the extension for VS Code: dist/extension.js, which VS Code loads, holds the entry points
// registered at activation and nothing else; dist/composition.js, the rest of the extension, is
// required by them on first use. Each tokenizer vocabulary is a file of its own beside them
// (dist/o200k_base.js, dist/cl100k_base.js: together they are most of the size, and a conversation
// needs one at most; src/core/vocabularies.ts requires it on first use), and so are the packages
// that call models (dist/models.js, and one file for each native provider: dist/anthropic.js,
// dist/google.js, dist/openrouter.js), validate (dist/schemas.js), read YAML (dist/yaml.js) and
// trace (dist/tracing.js), each
// required on first use. The AI SDK is ESM-only; esbuild converts it. `vscode` is provided by the editor.
//
// The compaction worker is dist/compaction-worker.js, started by the composition on the first compaction.
//
// `node esbuild.js [--production] [--watch]`; benchmarks and tests build elsewhere through `buildAll`.
const esbuild = require('esbuild');
const path = require('node:path');

/** The encodings shipped as files of their own; each becomes `<name>.js` beside the extension. */
const VOCABULARIES = ['o200k_base', 'cl100k_base'];

/**
 * The packages that talk to models, in files of their own beside `composition.js`, each required the
 * first time one of its exports is used rather than when the composition loads (compiling and
 * evaluating them was most of what loading it cost): `models.js` holds the AI SDK and
 * its OpenAI provider; `anthropic.js`, `google.js` and `openrouter.js` each one more provider, loaded
 * only by a conversation on an endpoint of that kind, and using the SDK, its provider utilities and
 * its zod from `models.js` rather than copies of their own; `catalogue.js` the model catalogue
 * (`@pydantic/genai-prices`: prices and windows); `schemas.js` zod (Longrun builds its schemas on first use, so zod loads with
 * the first stored conversation or setting read, just after activation), `tracing.js`
 * OpenTelemetry, loaded only when tracing is turned on. (The AI SDK in `models.js` keeps its own zod.)
 * @type {Readonly<Record<string, readonly string[]>>}
 */
const LAZY_FILES = {
  'models.js': ['ai', '@ai-sdk/openai', '@ai-sdk/provider', '@ai-sdk/provider-utils', 'zod/v4', 'zod/v4/core'],
  'anthropic.js': ['@ai-sdk/anthropic'],
  'google.js': ['@ai-sdk/google'],
  'openrouter.js': ['@openrouter/ai-sdk-provider'],
  'schemas.js': ['zod'],
  // The model catalogue (windows and prices): read when a model's window or a cost is first asked.
  'catalogue.js': ['@pydantic/genai-prices'],
  // The YAML reader of skills' front matter: read at the first turn in a workspace with skills.
  'yaml.js': ['js-yaml'],
  'tracing.js': [
    '@ai-sdk/otel',
    '@opentelemetry/api',
    '@opentelemetry/exporter-trace-otlp-http',
    '@opentelemetry/resources',
    '@opentelemetry/sdk-trace',
  ],
};

/** The lazy files of the native providers, each built on the SDK of `models.js`. */
const PROVIDER_FILES = ['anthropic.js', 'google.js', 'openrouter.js'];

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
 * Replaces each package of `files` by a stand-in that has the package's export names and requires
 * the package's file when one of them is first read. esbuild reads an imported binding at the
 * moment it is used (`(0, import_ai.streamText)(…)`), so nothing is loaded until a call is made;
 * test/unit/package.test.ts checks that activation never loads them. Only third-party code lives in
 * the lazy files: Longrun's own modules exist once, so their classes and state are never doubled.
 * @param {readonly string[]} files the lazy files whose packages are replaced
 */
async function lazyPackages(files) {
  /** @type {Map<string, { file: string, names: string[] }>} */
  const packages = new Map();
  for (const file of files) {
    for (const name of LAZY_FILES[file] ?? []) {
      const names = Object.keys(await import(name)).filter((key) => key !== '__esModule');
      packages.set(name, { file, names });
    }
  }
  return {
    name: 'lazy-packages',
    setup(build) {
      build.onResolve({ filter: /^[@a-z]/ }, (args) => (packages.has(args.path) ? { path: args.path, namespace: 'lazy-package' } : undefined));
      build.onLoad({ filter: /.*/, namespace: 'lazy-package' }, (args) => {
        const { file, names } = /** @type {{ file: string, names: string[] }} */ (packages.get(args.path));
        return {
          loader: 'js',
          contents: [
            "Object.defineProperty(exports, '__esModule', { value: true });",
            'let loaded;',
            // Computed at run time, so that esbuild leaves the require alone.
            `const load = () => (loaded ??= require(__dirname + '/${file}')[${JSON.stringify(args.path)}]);`,
            `for (const name of ${JSON.stringify(names)}) {`,
            '  Object.defineProperty(exports, name, { enumerable: true, get: () => load()[name] });',
            '}',
          ].join('\n'),
        };
      });
    },
  };
}

/** The source of a lazy file: each of its packages, by name. */
function lazyEntry(file) {
  const names = LAZY_FILES[file] ?? [];
  return names
    .map((name, i) => `import * as p${i} from ${JSON.stringify(name)};`)
    .concat(`module.exports = { ${names.map((name, i) => `${JSON.stringify(name)}: p${i}`).join(', ')} };`)
    .join('\n');
}

/**
 * The AI SDK resolves a model given by name through the Vercel AI Gateway; Longrun always passes
 * model objects, so the gateway's client (about 90 KB with its OIDC helper) is left out. What the
 * SDK calls of it says so if it is ever reached, and its errors are never seen.
 */
const noGateway = {
  name: 'no-gateway',
  setup(build) {
    build.onResolve({ filter: /^@ai-sdk\/gateway$/ }, () => ({ path: 'no-gateway', namespace: 'no-gateway' }));
    build.onLoad({ filter: /.*/, namespace: 'no-gateway' }, () => ({
      loader: 'js',
      contents: [
        "const unused = () => { throw new Error('Longrun passes a model object: the AI Gateway is not part of this build.'); };",
        'class GatewayError extends Error { static isInstance() { return false; } }',
        'class GatewayAuthenticationError extends GatewayError {}',
        'export { GatewayError, GatewayAuthenticationError };',
        'export const createGateway = unused;',
        'export const gateway = new Proxy(unused, { get: () => unused });',
      ].join('\n'),
    }));
  },
};

/**
 * The esbuild options for the entry points, the composition and its vocabularies, and each lazy file.
 * Asynchronous because the composition's stand-ins need the model packages' export names.
 * @param {{ production?: boolean, outdir?: string }} [options]
 * @returns {Promise<Record<string, import('esbuild').BuildOptions>>}
 */
async function buildOptions({ production = false, outdir = 'dist' } = {}) {
  /** @type {import('esbuild').BuildOptions} */
  const common = {
    absWorkingDir: __dirname,
    bundle: true,
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    external: ['vscode'],
    // ESM builds first: esbuild tree-shakes them, while OpenTelemetry's CommonJS builds would bring
    // in whole packages (the metrics SDK among them) that tracing never calls.
    mainFields: ['module', 'main'],
    minify: production,
    sourcemap: !production,
    sourcesContent: false,
    logLevel: 'info',
  };
  return {
    // What VS Code loads: the entry points, registered at activation, and nothing else.
    extension: {
      ...common,
      entryPoints: [{ in: path.join(__dirname, 'src', 'extension.ts'), out: 'extension' }],
      outdir,
    },
    // The rest of the extension, loaded by the entry points on first use.
    composition: {
      ...common,
      entryPoints: [
        { in: path.join(__dirname, 'src', 'composition.ts'), out: 'composition' },
        ...VOCABULARIES.map((name) => ({ in: `gpt-tokenizer/encoding/${name}`, out: name })),
      ],
      outdir,
      // Tells src/core/vocabularies.ts to require the vocabulary files instead of importing the package.
      define: { LONGRUN_VOCABULARY_FILES: 'true' },
      plugins: [zodEnglishOnly, await lazyPackages(Object.keys(LAZY_FILES))],
    },
    // The compaction worker (src/app/compaction/remote-compaction.ts): the engine, in a thread of its own. It
    // requires the vocabulary files beside it, as the composition does, and has its own zod.
    worker: {
      ...common,
      entryPoints: [{ in: path.join(__dirname, 'src', 'app', 'compaction', 'compaction-worker.ts'), out: 'compaction-worker' }],
      outdir,
      define: { LONGRUN_VOCABULARY_FILES: 'true' },
      plugins: [zodEnglishOnly],
    },
    models: {
      ...common,
      stdin: { contents: lazyEntry('models.js'), resolveDir: __dirname, sourcefile: 'models-entry.js', loader: 'js' },
      outfile: path.join(outdir, 'models.js'),
      plugins: [zodEnglishOnly, noGateway],
    },
    schemas: {
      ...common,
      stdin: { contents: lazyEntry('schemas.js'), resolveDir: __dirname, sourcefile: 'schemas-entry.js', loader: 'js' },
      outfile: path.join(outdir, 'schemas.js'),
      plugins: [zodEnglishOnly],
    },
    catalogue: {
      ...common,
      stdin: { contents: lazyEntry('catalogue.js'), resolveDir: __dirname, sourcefile: 'catalogue-entry.js', loader: 'js' },
      outfile: path.join(outdir, 'catalogue.js'),
    },
    yaml: {
      ...common,
      stdin: { contents: lazyEntry('yaml.js'), resolveDir: __dirname, sourcefile: 'yaml-entry.js', loader: 'js' },
      outfile: path.join(outdir, 'yaml.js'),
    },
    tracing: {
      ...common,
      stdin: { contents: lazyEntry('tracing.js'), resolveDir: __dirname, sourcefile: 'tracing-entry.js', loader: 'js' },
      outfile: path.join(outdir, 'tracing.js'),
      // Tracing's use of the AI SDK is the SDK of models.js, not a copy.
      plugins: [await lazyPackages(['models.js'])],
    },
    ...Object.fromEntries(
      await Promise.all(
        PROVIDER_FILES.map(async (file) => [
          file.replace(/\.js$/, ''),
          {
            ...common,
            stdin: { contents: lazyEntry(file), resolveDir: __dirname, sourcefile: `${file.replace(/\.js$/, '')}-entry.js`, loader: 'js' },
            outfile: path.join(outdir, file),
            plugins: [await lazyPackages(['models.js'])],
          },
        ]),
      ),
    ),
  };
}

/**
 * Builds everything `dist/` holds; the metafiles of both builds are merged when asked for.
 * @param {{ production?: boolean, outdir?: string, metafile?: boolean, logLevel?: import('esbuild').LogLevel }} [options]
 */
async function buildAll({ metafile = false, logLevel, ...options } = {}) {
  const extra = { metafile, ...(logLevel ? { logLevel } : {}) };
  const results = await Promise.all(Object.values(await buildOptions(options)).map((each) => esbuild.build({ ...each, ...extra })));
  if (!metafile) return { metafile: undefined };
  return {
    metafile: {
      inputs: Object.assign({}, ...results.map((r) => r.metafile?.inputs)),
      outputs: Object.assign({}, ...results.map((r) => r.metafile?.outputs)),
    },
  };
}

/** Says when each watch rebuild starts and ends, in the words .vscode/tasks.json waits for. */
const watchReporter = {
  name: 'watch-reporter',
  setup(build) {
    build.onStart(() => console.log('[watch] build started'));
    build.onEnd((result) => {
      for (const { text, location } of result.errors) {
        console.error(`✘ [ERROR] ${text}`);
        if (location) console.error(`    ${location.file}:${location.line}:${location.column}:`);
      }
      console.log('[watch] build finished');
    });
  },
};

async function main() {
  const production = process.argv.includes('--production');
  const watch = process.argv.includes('--watch');
  const options = Object.values(await buildOptions({ production }));
  const contexts = await Promise.all(
    options.map((each) => esbuild.context(watch ? { ...each, plugins: [...(each.plugins ?? []), watchReporter] } : each)),
  );
  if (watch) {
    await Promise.all(contexts.map((context) => context.watch()));
  } else {
    for (const context of contexts) {
      await context.rebuild();
      await context.dispose();
    }
  }
}

module.exports = { buildOptions, buildAll, VOCABULARIES, LAZY_FILES };

if (require.main === module) {
  main().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
