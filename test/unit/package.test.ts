import assert from 'node:assert/strict';
import { Worker } from 'node:worker_threads';
import { WorkerCompactionEngine } from '../../src/app/remote-compaction';
import { EngineMemo } from '../../src/core/engine-memo';
import { DEFAULT_CONFIG } from '../../src/core/config';
import { MessageTokenCounter } from '../../src/core/message-tokens';
import { systemClock } from '../../src/core/ports';
import { loadTokenizer } from '../../src/core/tokenizer';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import type { Metafile } from 'esbuild';
import { EXTENSION_FILES } from '../../scripts/sandbox';
import { COMMANDS, PALETTE_COMMANDS, PARTICIPANT_ID, VENDOR } from '../../src/app/contributions';

const { buildAll, VOCABULARIES, LAZY_FILES } = require('../../esbuild.js') as {
  buildAll: (options: { production: boolean; outdir: string; metafile: true; logLevel: 'warning' }) => Promise<{ metafile: Metafile }>;
  VOCABULARIES: readonly string[];
  LAZY_FILES: Readonly<Record<string, readonly string[]>>;
};

/** The manifest is what VS Code reads: every contribution the product promises must be in it. */
const manifest = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8'));

describe('extension manifest', () => {
  it('identifies the extension and its entry point', () => {
    assert.equal(manifest.name, 'longrun');
    assert.equal(manifest.publisher, 'longrun');
    assert.equal(manifest.displayName, 'Longrun');
    assert.equal(manifest.engines.vscode, '^1.104.0');
    assert.equal(manifest.main, './dist/extension.js');
    const typesVersion = JSON.parse(readFileSync(join(__dirname, '..', '..', 'node_modules', '@types', 'vscode', 'package.json'), 'utf8')).version;
    assert.match(typesVersion, /^1\.104\./, '@types/vscode matches the engine minimum');
  });

  it('contributes the sticky @longrun participant with /compact, /context, /summary and /new', () => {
    const [participant] = manifest.contributes.chatParticipants;
    assert.equal(participant.id, 'longrun.agent');
    assert.equal(participant.name, 'longrun');
    assert.equal(participant.isSticky, true);
    assert.deepEqual(
      participant.commands.map((c: { name: string }) => c.name),
      ['compact', 'context', 'summary', 'new'],
    );
  });

  it('contributes every command in the "Longrun" category', () => {
    const commands = Object.fromEntries(
      manifest.contributes.commands.map((c: { command: string; title: string; category: string }) => [c.command, `${c.category}: ${c.title}`]),
    );
    assert.deepEqual(commands, {
      'longrun.compact': 'Longrun: Compact Conversation',
      'longrun.showSummary': 'Longrun: Show Compaction Summary',
      'longrun.editSummary': 'Longrun: Edit Compaction Summary',
      'longrun.undoCompaction': 'Longrun: Undo Last Compaction',
      'longrun.newConversation': 'Longrun: New Conversation',
      'longrun.openConversation': 'Longrun: Open Conversation…',
      'longrun.exportConversation': 'Longrun: Export Conversation as Markdown',
      'longrun.showContextUsage': 'Longrun: Show Context Usage',
      'longrun.setApiKey': 'Longrun: Set API Key',
      'longrun.openChat': 'Longrun: Open Chat with a Longrun Model',
      'longrun.chooseAgentTools': 'Longrun: Choose Agent Tools…',
    });
  });

  it('names the participant, the model vendor and the Command Palette commands as the entry points register them', () => {
    assert.equal(manifest.contributes.chatParticipants[0].id, PARTICIPANT_ID);
    assert.equal(manifest.contributes.languageModelChatProviders[0].vendor, VENDOR);
    assert.deepEqual(
      manifest.contributes.commands.map((c: { command: string }) => c.command),
      [...PALETTE_COMMANDS],
    );
    for (const command of PALETTE_COMMANDS) assert.ok(COMMANDS.includes(command));
    assert.equal(new Set(COMMANDS).size, COMMANDS.length, 'each command is registered once');
  });

  it('contributes the longrun model vendor', () => {
    assert.deepEqual(manifest.contributes.languageModelChatProviders, [{ vendor: 'longrun', displayName: 'Longrun' }]);
  });

  it('activates lazily, after startup', () => {
    assert.deepEqual(manifest.activationEvents, ['onStartupFinished']);
  });

  it('keeps sources, tests and maps out of the package, and ships the bundle with its vocabularies', () => {
    const ignore = readFileSync(join(__dirname, '..', '..', '.vscodeignore'), 'utf8').split('\n');
    assert.equal(ignore[0], '**');
    assert.ok(ignore.includes('!dist/extension.js'));
    assert.ok(ignore.includes('!dist/composition.js'));
    for (const name of VOCABULARIES) assert.ok(ignore.includes(`!dist/${name}.js`), `the package carries dist/${name}.js`);
    for (const file of Object.keys(LAZY_FILES)) assert.ok(ignore.includes(`!dist/${file}`), `the package carries dist/${file}`);
    // `npm start` installs the same files unpacked.
    const shipped = ignore.filter((line) => line.startsWith('!dist/')).map((line) => line.slice(1));
    assert.deepEqual(EXTENSION_FILES.filter((file) => file.startsWith('dist/')).sort(), shipped.sort());
    assert.ok(!ignore.some((line) => line.includes('.map') && line.startsWith('!')));
  });

  describe('the production bundle', () => {
    let outdir: string;
    let metafile: Metafile;
    before(async function () {
      this.timeout(60_000);
      outdir = await mkdtemp(join(tmpdir(), 'longrun-bundle-'));
      ({ metafile } = await buildAll({ production: true, outdir, metafile: true, logLevel: 'warning' }));
    });
    after(() => rm(outdir, { recursive: true, force: true }));

    const output = (name: string) => {
      const found = Object.entries(metafile.outputs).find(([file]) => file.endsWith(`/${name}.js`));
      assert.ok(found, `the build writes ${name}.js`);
      return found[1];
    };

    it('leaves the tokenizer and its vocabularies out of extension.js and composition.js', () => {
      for (const file of ['extension', 'composition']) {
        const inlined = Object.keys(output(file).inputs).filter((input) => input.includes('node_modules/gpt-tokenizer/'));
        assert.deepEqual(inlined, [], file);
      }
    });

    it('leaves the AI SDK, its OpenAI provider, tracing and zod out of extension.js and composition.js', () => {
      for (const file of ['extension', 'composition']) {
        const inlined = Object.keys(output(file).inputs).filter((input) => /node_modules\/(ai|@ai-sdk|@opentelemetry|zod)\//.test(input));
        assert.deepEqual(inlined, [], file);
      }
      assert.ok(Object.keys(output('models').inputs).some((input) => input.includes('node_modules/ai/')));
      assert.ok(Object.keys(output('tracing').inputs).some((input) => input.includes('node_modules/@ai-sdk/otel/')));
      assert.ok(Object.keys(output('schemas').inputs).some((input) => input.includes('node_modules/zod/')));
      // Tracing uses the AI SDK of models.js; a second copy would double its classes.
      assert.ok(!Object.keys(output('tracing').inputs).some((input) => input.includes('node_modules/ai/')));
    });

    it('keeps each native provider in a file of its own, on the SDK, the provider utilities and the zod of models.js', async () => {
      for (const [file, name] of [
        ['anthropic', '@ai-sdk/anthropic'],
        ['google', '@ai-sdk/google'],
        ['openrouter', '@openrouter/ai-sdk-provider'],
      ] as const) {
        const inputs = output(file).inputs;
        assert.ok(
          Object.keys(inputs).some((input) => input.includes(`node_modules/${name}/`)),
          `${file}.js holds ${name}`,
        );
        const copies = Object.keys(inputs).filter(
          (input) => /node_modules\/(ai|@ai-sdk\/openai)\//.test(input) || input.endsWith('node_modules/@ai-sdk/provider-utils/dist/index.js'),
        );
        assert.deepEqual(copies, [], `${file}.js has no copy of its own`);
        // A few helpers of zod's (its util, its English messages) come along; a copy of zod would be over 100 KB.
        const zodBytes = Object.entries(inputs)
          .filter(([input]) => input.includes('node_modules/zod/'))
          .reduce((sum, [, input]) => sum + input.bytesInOutput, 0);
        assert.ok(zodBytes < 10_000, `${file}.js holds ${zodBytes} bytes of zod`);
        for (const other of ['models', 'composition']) {
          assert.ok(!Object.keys(output(other).inputs).some((input) => input.includes(`node_modules/${name}/`)), `${other}.js leaves ${name} out`);
        }
      }
      const anthropic = require(join(outdir, 'anthropic.js')) as Record<string, Record<string, unknown>>;
      const create = anthropic['@ai-sdk/anthropic']?.['createAnthropic'] as (options: object) => (id: string) => { specificationVersion: string };
      assert.equal(create({ apiKey: 'k', baseURL: 'http://127.0.0.1:9/v1' })('claude-x').specificationVersion, 'v4', 'it makes a model on models.js');
    });

    it('gives each lazy file every export of its packages, and tracing the SDK of models.js', async () => {
      for (const [file, packages] of Object.entries(LAZY_FILES)) {
        const loaded = require(join(outdir, file)) as Record<string, Record<string, unknown>>;
        for (const name of packages) {
          const expected = Object.keys(await import(name)).filter((key) => key !== '__esModule');
          assert.deepEqual(Object.keys(loaded[name] ?? {}).sort(), expected.sort(), `${file} exports all of ${name}`);
        }
      }
      const tracing = require(join(outdir, 'tracing.js')) as Record<string, Record<string, unknown>>;
      assert.equal(typeof tracing['@ai-sdk/otel']?.['OpenTelemetry'], 'function');
    });

    /** Activates the built extension in a fresh process with a stub `vscode` (bench/activation-host.js). */
    const activateIn = (mode: '--check' | '--check-unused' | '--check-broken' | '--check-open-chat') => {
      const env = { ...process.env };
      delete env.NODE_OPTIONS;
      const run = spawnSync(process.execPath, [join(__dirname, '..', '..', 'bench', 'activation-host.js'), outdir, mode], {
        encoding: 'utf8',
        env,
        timeout: 60_000,
      });
      assert.equal(run.status, 0, run.stderr);
      const report = JSON.parse(run.stdout) as HostReport;
      assert.deepEqual(report.errors, []);
      assert.deepEqual(report.vocabularies.duringActivation, [], run.stderr);
      return report;
    };
    interface HostReport {
      readonly vocabularies: { duringActivation: string[]; afterActivation: string[] };
      readonly errors: string[];
      readonly commandErrors: string[];
      readonly shownErrors: string[];
      readonly offeredModels?: number;
      readonly loadedBeforeEndpoints?: string[];
      readonly modelsChangedEvents?: number;
      readonly modelsAfterEndpoint?: string[];
      readonly modelsChangedAtActivation: number;
      readonly chatOpens: unknown[];
      readonly chatOpensInNextWindow?: number;
    }

    it("activates with extension.js alone; where Longrun was used, loads the rest, zod and only the model's vocabulary right after", () => {
      // The rest of the extension to show the gauge, zod with the conversation list's first read,
      // the vocabulary when the model's overhead is counted.
      assert.deepEqual(activateIn('--check').vocabularies.afterActivation, ['composition', 'schemas', 'o200k_base']);
    });

    it('tells VS Code at activation to ask for its models when an endpoint is set, so that the chat has a model before the first request', () => {
      assert.equal(activateIn('--check').modelsChangedAtActivation, 1);
      assert.equal(activateIn('--check-unused').modelsChangedAtActivation, 0, 'no endpoint: nothing to offer, nothing loaded');
    });

    it('opens the chat at start as npm start asks, its input before its model, once per workspace', () => {
      const report = activateIn('--check-open-chat');
      // Given both at once, VS Code would put "@longrun " in only after selecting the model, over what the user began to type.
      assert.deepEqual(report.chatOpens, [{ query: '@longrun ', isPartialQuery: true }, { modelSelector: { vendor: 'copilot', id: 'gpt-4o' } }]);
      assert.equal(report.chatOpensInNextWindow, 0, "the workspace's next window keeps the layout the user left");
    });

    it('loads nothing but extension.js where Longrun was never used, although VS Code asks for its models, until something calls into it', () => {
      const report = activateIn('--check-unused');
      assert.deepEqual(report.loadedBeforeEndpoints, []);
      assert.equal(report.offeredModels, 0, 'no endpoint is set: no model of its own is offered');
    });

    it('offers the model of an endpoint added to the settings of a window that had none, telling VS Code to ask again', () => {
      const report = activateIn('--check-unused');
      assert.equal(report.modelsChangedEvents, 1);
      assert.deepEqual(report.modelsAfterEndpoint, ['Local/local-model']);
      assert.deepEqual(report.vocabularies.afterActivation.slice(0, 2), ['composition', 'schemas'], 'the rest of the extension loads to answer');
    });

    it('activates although the rest of the extension cannot load, and says so once, on every call, without a second message', () => {
      const report = activateIn('--check-broken');
      assert.equal(report.commandErrors.length, 2);
      for (const error of report.commandErrors) assert.match(error, /^Longrun could not start: Cannot find module '.*composition\.js'$/);
      assert.equal(report.shownErrors.length, 1, report.shownErrors.join(' / '));
      assert.match(report.shownErrors[0]!, /^Longrun could not start: .* The "Longrun" output has the details\.$/);
    });

    it('builds extension.js from the entry points alone: the composition is a file of its own', () => {
      const inputs = Object.keys(output('extension').inputs).filter((input) => input.startsWith('src/'));
      assert.ok(!inputs.includes('src/composition.ts'), 'extension.js does not hold the composition');
      assert.ok(Object.keys(output('composition').inputs).includes('src/composition.ts'));
      // Every module extension.js holds, a few constants aside, is one of the entry point's own.
      const own = ['src/extension.ts', 'src/app/contributions.ts', 'src/vscode/entry-points.ts', 'src/vscode/gauge-item.ts', 'src/app/gauge-text.ts'];
      const others = inputs.filter((input) => !own.includes(input) && (output('extension').inputs[input]?.bytesInOutput ?? 0) > 300);
      assert.deepEqual(others, []);
      assert.ok(output('extension').bytes < 16 * 1024, `extension.js is ${output('extension').bytes} bytes`);
    });

    it('builds the compaction worker into a file of its own that compacts with a vocabulary file beside it', async function () {
      this.timeout(60_000);
      assert.ok(
        !Object.keys(output('compaction-worker').inputs).some((input) => input.includes('gpt-tokenizer/esm/bpeRanks/')),
        'no vocabulary inlined',
      );
      const engine = new WorkerCompactionEngine(() => {
        const worker = new Worker(join(outdir, 'compaction-worker.js'), { execArgv: [] });
        return worker;
      });
      try {
        const log = Array.from({ length: 12 }, (_, i) => ({
          type: 'message' as const,
          message: {
            id: `m${i}`,
            role: (i % 2 ? 'assistant' : 'user') as 'user' | 'assistant',
            content: [{ type: 'text' as const, text: `turn ${i} ${'words '.repeat(200)}` }],
          },
        }));
        const counter = new MessageTokenCounter(await loadTokenizer('o200k_base'));
        const outcome = await engine.compute({
          conversationId: 'c1',
          all: log,
          leaf: null,
          snapshot: log,
          request: {
            reason: 'manual',
            config: { ...DEFAULT_CONFIG, keepRecent: { ...DEFAULT_CONFIG.keepRecent, mode: 'messages', messages: 2 } },
            window: { limit: 100_000, source: 'model' },
          },
          deps: {
            counter,
            summarizer: { name: 's', summarize: async () => ({ text: `## Session Summary\n### Completed Work\n${'done. '.repeat(80)}` }) },
            clock: systemClock,
            newId: () => 'e1',
            memo: new EngineMemo(),
          },
        });
        assert.equal(outcome.status, 'compacted', JSON.stringify(outcome));
      } finally {
        engine.dispose();
      }
    });

    it('builds each vocabulary into a file of its own that counts tokens', () => {
      for (const name of VOCABULARIES) {
        assert.ok(Object.keys(output(name).inputs).some((input) => input.includes(`gpt-tokenizer/esm/bpeRanks/${name}.js`)));
        const encoding = require(join(outdir, `${name}.js`)) as { countTokens(text: string): number };
        assert.ok(encoding.countTokens('hello world') > 0);
      }
    });
  });
});

describe('the README and the manifest speak of the same settings', () => {
  const readme = readFileSync(join(__dirname, '..', '..', 'README.md'), 'utf8');
  const keys = new Set(
    ([] as { properties: Record<string, unknown> }[]).concat(manifest.contributes.configuration).flatMap((c) => Object.keys(c.properties)),
  );

  it('names each setting of the defaults table by a key the manifest declares', () => {
    const start = readme.indexOf('### Defaults, and the choices each setting offers');
    assert.ok(start >= 0, 'the README has the defaults table');
    const rows = readme.slice(start).split('\n\n')[2]!.split('\n').slice(2);
    const named: string[] = [];
    for (const row of rows) {
      let parent = '';
      for (const [, name] of (row.split('|')[3] ?? '').matchAll(/`([A-Za-z.]+)`/g)) {
        const full = name!.startsWith('.') ? `${parent}${name}` : name!;
        if (!full.includes('.')) continue;
        parent = full.slice(0, full.lastIndexOf('.'));
        named.push(full);
      }
    }
    assert.ok(named.length >= 15, `found ${named.length} settings in the table`);
    assert.deepEqual(
      named.filter((name) => !keys.has(`longrun.compaction.${name}`)),
      [],
    );
  });

  it('keeps references to documents outside the repository out of the settings the user reads', () => {
    const descriptions = JSON.stringify(manifest.contributes);
    assert.doesNotMatch(descriptions, /\bseeds?\b/i);
  });
});
