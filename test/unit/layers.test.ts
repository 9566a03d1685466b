import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import * as contributions from '../../src/app/contributions';

/**
 * The layers of src/, lowest first: a module may import from its own layer and the ones below it.
 * `src/core` is the engine (relative files, `zod` and `gpt-tokenizer` only); `src/llm` talks to models
 * and never to the editor; `src/app` is the extension's behaviour without the editor; `src/vscode`
 * holds exactly the files that need the editor; `src/extension.ts` wires them together.
 */
const LAYERS = ['core', 'llm', 'app', 'vscode', 'extension'] as const;
type Layer = (typeof LAYERS)[number];

/** Packages each layer may import besides relative files. `vscode` is allowed in src/vscode and above. */
const PACKAGES: Record<Layer, (name: string) => boolean> = {
  core: (name) => ['zod', 'gpt-tokenizer'].includes(packageName(name)),
  llm: (name) => name !== 'vscode',
  app: (name) => name !== 'vscode',
  vscode: () => true,
  extension: () => true,
};

const SRC = resolve(__dirname, '..', '..', 'src');

/** The files at the root of src/app, which every room shares; everything else is in a room. */
const APP_ROOT_FILES = ['contributions.ts', 'emitter.ts', 'settings.ts'] as const;

function packageName(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] ?? specifier);
}

function layerOf(file: string): Layer | undefined {
  const path = relative(SRC, file).split('\\').join('/');
  if (path === 'extension.ts' || path === 'composition.ts') return 'extension';
  const top = path.split('/')[0];
  return (LAYERS as readonly string[]).includes(top ?? '') && path.includes('/') ? (top as Layer) : undefined;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Every module a file imports, `import type`, re-exports and `require` calls included. */
function importsOf(text: string): string[] {
  return ts.preProcessFile(text, true, true).importedFiles.map((file) => file.fileName);
}

/** What breaks the layering in one file, one line per import. */
export function layerViolations(file: string, text: string): string[] {
  const layer = layerOf(file);
  const name = relative(SRC, file);
  if (!layer) return [`${name} is in no layer: put it in src/core, src/llm, src/app or src/vscode`];
  const problems: string[] = [];
  for (const specifier of importsOf(text)) {
    if (specifier.startsWith('.')) {
      const target = layerOf(resolve(dirname(file), `${specifier}.ts`)) ?? layerOf(resolve(dirname(file), specifier, 'index.ts'));
      if (!target) problems.push(`${name} imports ${specifier}, outside src/`);
      else if (LAYERS.indexOf(target) > LAYERS.indexOf(layer))
        problems.push(`${name} (src/${layer}) imports ${specifier} from the layer above it (src/${target})`);
      continue;
    }
    const builtin = specifier.startsWith('node:') || builtinModules.includes(specifier);
    const allowed = layer === 'core' ? !builtin && PACKAGES.core(specifier) : PACKAGES[layer](specifier);
    if (!allowed) problems.push(`${name} (src/${layer}) imports ${specifier}, which src/${layer} may not use`);
  }
  return problems;
}

/**
 * The import cycles among `files` (path → the relative modules it imports, `import type` included):
 * each strongly connected group of more than one module, as paths relative to src/, sorted.
 */
export function importCycles(files: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (file: string): void => {
    index.set(file, index.size);
    low.set(file, index.get(file)!);
    stack.push(file);
    onStack.add(file);
    for (const next of files.get(file) ?? []) {
      if (!files.has(next)) continue;
      if (!index.has(next)) {
        visit(next);
        low.set(file, Math.min(low.get(file)!, low.get(next)!));
      } else if (onStack.has(next)) low.set(file, Math.min(low.get(file)!, index.get(next)!));
    }
    if (low.get(file) !== index.get(file)) return;
    const group: string[] = [];
    for (;;) {
      const member = stack.pop()!;
      onStack.delete(member);
      group.push(member);
      if (member === file) break;
    }
    if (group.length > 1) cycles.push(group.map((f) => relative(SRC, f).split('\\').join('/')).sort());
  };
  for (const file of files.keys()) if (!index.has(file)) visit(file);
  return cycles;
}

/** Each source file under `dir` with the source files it imports by relative path. */
function importGraph(dir: string): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(dir)) {
    const targets = importsOf(readFileSync(file, 'utf8'))
      .filter((specifier) => specifier.startsWith('.'))
      .map((specifier) => resolve(dirname(file), specifier))
      .map((target) => (existsSync(`${target}.ts`) ? `${target}.ts` : join(target, 'index.ts')));
    graph.set(file, targets);
  }
  return graph;
}

describe('layers', () => {
  it('every module imports only from its own layer or the ones below, and src/core only zod and gpt-tokenizer', () => {
    const problems = sourceFiles(SRC).flatMap((file) => layerViolations(file, readFileSync(file, 'utf8')));
    assert.deepEqual(problems, []);
  });

  it('src/vscode holds only files that need the editor', () => {
    const editorFree = sourceFiles(join(SRC, 'vscode')).filter((file) => !importsOf(readFileSync(file, 'utf8')).includes('vscode'));
    assert.deepEqual(
      editorFree.map((file) => relative(SRC, file)),
      [],
      'these never import vscode: move them to src/app (or src/core)',
    );
  });

  it('no module imports, through any chain, one that imports it back (type imports included)', () => {
    assert.deepEqual(importCycles(importGraph(SRC)), []);
  });

  it('finds a cycle however long, and none in a chain', () => {
    const at = (name: string) => join(SRC, 'core', `${name}.ts`);
    const graph = (edges: Record<string, string[]>) => new Map(Object.entries(edges).map(([from, to]) => [at(from), to.map(at)]));
    assert.deepEqual(importCycles(graph({ a: ['b'], b: ['c'], c: ['a'], d: ['a'] })), [['core/a.ts', 'core/b.ts', 'core/c.ts']]);
    assert.deepEqual(importCycles(graph({ a: ['b'], b: ['c'], c: [] })), []);
  });

  describe('the rule itself', () => {
    const at = (path: string) => join(SRC, path);

    it('refuses the editor, the network layer or Node in the engine', () => {
      assert.equal(layerViolations(at('core/x.ts'), "import * as vscode from 'vscode';").length, 1);
      assert.equal(layerViolations(at('core/x.ts'), "import { streamText } from 'ai';").length, 1);
      assert.equal(layerViolations(at('core/x.ts'), "import { readFile } from 'node:fs/promises';").length, 1);
      assert.equal(layerViolations(at('core/x.ts'), "import type { Conversation } from '../app/conversation';").length, 1);
      assert.deepEqual(
        layerViolations(
          at('core/x.ts'),
          "import { z } from 'zod';\nimport { countTokens } from 'gpt-tokenizer/encoding/o200k_base';\nimport { y } from './y';",
        ),
        [],
      );
    });

    it('refuses the editor in src/llm and src/app, and any import from a layer above', () => {
      assert.match(layerViolations(at('llm/x.ts'), "import * as vscode from 'vscode';")[0] ?? '', /src\/llm\) imports vscode/);
      assert.match(layerViolations(at('app/x.ts'), "const vscode = require('vscode');")[0] ?? '', /src\/app\) imports vscode/);
      assert.match(layerViolations(at('llm/x.ts'), "export { Conversation } from '../app/conversation';")[0] ?? '', /layer above it \(src\/app\)/);
      assert.match(layerViolations(at('app/x.ts'), "import type { Session } from '../vscode/session';")[0] ?? '', /layer above it \(src\/vscode\)/);
      assert.match(layerViolations(at('vscode/x.ts'), "import { activate } from '../extension';")[0] ?? '', /layer above it \(src\/extension\)/);
      assert.deepEqual(
        layerViolations(
          at('vscode/x.ts'),
          "import * as vscode from 'vscode';\nimport { Conversation } from '../app/conversation';\nimport { runAgentTurn } from '../llm/agent';",
        ),
        [],
      );
    });

    it('refuses a file outside the layers', () => {
      assert.equal(layerViolations(at('util.ts'), '').length, 1);
    });
  });
});

describe('the names VS Code knows Longrun by', () => {
  it('writes command ids only in src/app/contributions.ts: everything else names them from there', () => {
    const { COMMANDS } = contributions;
    assert.ok(COMMANDS.length >= 14, `${COMMANDS.length} command ids`);
    // Quoted, double-quoted or in backticks (a template or a comment): any of them is a second spelling.
    const literal = new RegExp(`(['"\`])(${COMMANDS.map((id) => id.replace('.', '\\.')).join('|')})\\1`);
    const offenders = sourceFiles(SRC)
      .filter((file) => !file.endsWith(join('app', 'contributions.ts')))
      .filter((file) => literal.test(readFileSync(file, 'utf8')))
      .map((file) => relative(SRC, file));
    assert.deepEqual(offenders, []);
  });

  it('registers exactly the command ids src/app/contributions.ts names', () => {
    const { COMMANDS } = contributions;
    const named = Object.values(contributions)
      .flatMap((value: unknown) => (typeof value === 'string' ? [value] : Object.values(value as object)))
      .filter((value): value is string => typeof value === 'string' && /^longrun\.[a-z][A-Za-z]+$/.test(value))
      .filter((value) => value !== contributions.PARTICIPANT_ID && value !== contributions.INDEX_KEY);
    assert.deepEqual([...new Set(named)].sort(), [...COMMANDS].sort());
  });
});

describe('the documented layout', () => {
  const root = resolve(__dirname, '..', '..');
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const contributing = readFileSync(join(root, 'CONTRIBUTING.md'), 'utf8');

  it('keeps src/app in rooms CONTRIBUTING.md names, with only the files every room shares at its root', () => {
    const app = join(SRC, 'app');
    const entries = readdirSync(app, { withFileTypes: true });
    assert.deepEqual(
      entries.filter((e) => e.isFile()).map((e) => e.name),
      [...APP_ROOT_FILES].sort(),
      'a file at the root of src/app: put it in the room of its feature',
    );
    const rooms = entries.filter((e) => e.isDirectory()).map((e) => `src/app/${e.name}/`);
    const table = contributing.slice(contributing.indexOf('### The rooms of `src/app`'), contributing.indexOf('## A chat turn'));
    const named = [...table.matchAll(/^\| `(src\/app\/[\w-]+\/)` \|/gm)].map((m) => m[1]!);
    assert.deepEqual(
      rooms.filter((room) => !named.includes(room)),
      [],
      "a room CONTRIBUTING.md's table of rooms does not name",
    );
    assert.deepEqual(
      named.filter((room) => !rooms.includes(room)),
      [],
      "a room CONTRIBUTING.md's table names that is gone",
    );
    for (const room of rooms) assert.ok(sourceFiles(join(root, room)).length > 0, `${room} is empty`);
  });

  it('names every layer in the README and in CONTRIBUTING.md', () => {
    for (const layer of ['src/core/', 'src/llm/', 'src/app/', 'src/vscode/', 'src/composition.ts', 'src/extension.ts']) {
      assert.ok(readme.includes(`| \`${layer}\` |`), `README layout table: ${layer}`);
      assert.ok(contributing.includes(`| \`${layer}\` |`), `CONTRIBUTING layers table: ${layer}`);
    }
  });

  it("lists every engine file in the README's engine table, and no file that is gone", () => {
    const files = readdirSync(join(SRC, 'core')).filter((name) => name.endsWith('.ts'));
    const table = readme.slice(readme.indexOf('## The engine'), readme.indexOf('### Defaults'));
    const listed = [...table.matchAll(/`([a-z-]+\.ts)`/g)].map((m) => m[1]!);
    assert.deepEqual(
      files.filter((name) => !listed.includes(name)),
      [],
      'in src/core but not in the table',
    );
    assert.deepEqual(
      listed.filter((name) => !files.includes(name)),
      [],
      'in the table but not in src/core',
    );
  });

  it('points CONTRIBUTING.md only at files that exist', () => {
    const paths = [...contributing.matchAll(/`((?:src|test|scripts|bench|eval)\/[\w./-]+\.ts)`/g)].map((m) => m[1]!);
    assert.ok(paths.length >= 10, `${paths.length} paths`);
    assert.deepEqual(
      paths.filter((path) => !existsSync(join(root, path))),
      [],
    );
  });
});
