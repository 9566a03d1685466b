import assert from 'node:assert/strict';
import { copyFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build, type BuildOptions } from 'esbuild';
import { countTokens as packageCl100k } from 'gpt-tokenizer/encoding/cl100k_base';
import { countTokens as packageO200k } from 'gpt-tokenizer/encoding/o200k_base';
import { createTokenizerLoader, loadTokenizer } from '../../../src/core/tokenizer';
import { bundledOrPackage, VocabularyError, vocabularyFiles } from '../../../src/core/vocabularies';

const { buildOptions } = require('../../../esbuild.js') as {
  buildOptions: (options: { production: boolean; outdir: string }) => Promise<{ composition: BuildOptions }>;
};

const SAMPLES = [
  '',
  'hello world',
  'export function f(x: number): number { return x * 2; }',
  'text that spells <|endoftext|> and <|im_start|>',
  'Größe, 東京, emoji 🚀',
];
const plain = { disallowedSpecial: new Set<string>() };

describe('tokenizer loader: vocabularies as files of their own', () => {
  let dist: string;
  let empty: string;

  // The vocabulary files exactly as the production build makes them.
  before(async function () {
    this.timeout(60_000);
    dist = await mkdtemp(join(tmpdir(), 'longrun-vocabularies-'));
    empty = await mkdtemp(join(tmpdir(), 'longrun-no-vocabularies-'));
    const options = (await buildOptions({ production: true, outdir: dist })).composition;
    const entryPoints = (options.entryPoints as { in: string; out: string }[]).filter((entry) => entry.out !== 'composition');
    await build({ ...options, entryPoints, logLevel: 'warning' });
  });
  after(async () => {
    await rm(dist, { recursive: true, force: true });
    await rm(empty, { recursive: true, force: true });
  });

  /** Node's require, recording what was asked for. */
  function recordingRequire(): { files: string[]; requireFile: (file: string) => unknown } {
    const files: string[] = [];
    return { files, requireFile: (file) => (files.push(file), require(file)) };
  }

  it('loads the encoding the model needs from its file, and only that one', async () => {
    const { files, requireFile } = recordingRequire();
    const loader = createTokenizerLoader(vocabularyFiles(dist, requireFile));
    const cl100k = await loader.load('cl100k_base');
    assert.equal(cl100k.name, 'cl100k_base');
    assert.deepEqual(files, [`${dist}/cl100k_base.js`]);
    const o200k = await loader.load('o200k_base');
    assert.equal(o200k.name, 'o200k_base');
    assert.deepEqual(files, [`${dist}/cl100k_base.js`, `${dist}/o200k_base.js`]);
  });

  it('counts exactly as the package does, special tokens as plain text', async () => {
    const loader = createTokenizerLoader(vocabularyFiles(dist));
    const o200k = await loader.load('o200k_base');
    const cl100k = await loader.load('cl100k_base');
    for (const sample of SAMPLES) {
      assert.equal(o200k.count(sample), sample ? packageO200k(sample, plain) : 0, `o200k: ${sample}`);
      assert.equal(cl100k.count(sample), sample ? packageCl100k(sample, plain) : 0, `cl100k: ${sample}`);
    }
    // The two encodings differ on this text, so each file really is its own encoding.
    assert.notEqual(o200k.count('Größe, 東京'), cl100k.count('Größe, 東京'));
  });

  it('requires each file once, however many ask and whenever', async () => {
    const { files, requireFile } = recordingRequire();
    const loader = createTokenizerLoader(vocabularyFiles(dist, requireFile));
    const together = await Promise.all([loader.load('o200k_base'), loader.load('o200k_base'), loader.load()]);
    const later = await loader.load('o200k_base');
    assert.equal(files.length, 1);
    assert.ok(together.every((t) => t === later));
  });

  it('rejects a missing file with an error naming the encoding and the file, and tries again on the next call', async () => {
    const { files, requireFile } = recordingRequire();
    const loader = createTokenizerLoader(vocabularyFiles(empty, requireFile));
    const missing = `${empty}/o200k_base.js`;
    await assert.rejects(loader.load('o200k_base'), (error: unknown) => {
      assert.ok(error instanceof VocabularyError);
      assert.equal(error.encoding, 'o200k_base');
      assert.equal(error.file, missing);
      assert.equal(
        error.message,
        `The o200k_base vocabulary could not be loaded from ${missing} (the file is missing); reinstalling Longrun restores it.`,
      );
      return true;
    });
    // Restored (say, by a reinstall): the failure was not remembered.
    await copyFile(join(dist, 'o200k_base.js'), join(empty, 'o200k_base.js'));
    const restored = await loader.load('o200k_base');
    assert.equal(restored.count('hello world'), packageO200k('hello world'));
    assert.equal(files.length, 2);
    await rm(join(empty, 'o200k_base.js'));
  });

  it('falls back to the chars/4 estimator when a vocabulary is missing, saying why once', async () => {
    const loader = createTokenizerLoader(vocabularyFiles(empty));
    const errors: unknown[] = [];
    const first = await loader.loadOrEstimate('cl100k_base', (error) => errors.push(error));
    const second = await loader.loadOrEstimate('cl100k_base', (error) => errors.push(error));
    assert.equal(first.name, 'chars/4');
    assert.equal(first.count('x'.repeat(400)), 100);
    assert.equal(second, first);
    assert.equal(errors.length, 1);
    assert.ok(errors[0] instanceof VocabularyError);
    assert.match((errors[0] as Error).message, /cl100k_base vocabulary could not be loaded from .*cl100k_base\.js \(the file is missing\)/);
  });

  it('refuses a file that is not an encoding, and one that throws, with the reason', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'longrun-bad-vocabularies-'));
    try {
      await writeFile(join(dir, 'o200k_base.js'), 'module.exports = { ranks: [] };');
      await writeFile(join(dir, 'cl100k_base.js'), 'throw new Error("truncated download");');
      const loader = createTokenizerLoader(vocabularyFiles(dir));
      await assert.rejects(loader.load('o200k_base'), /o200k_base vocabulary could not be loaded from .* \(it is not a tokenizer encoding\)/);
      await assert.rejects(loader.load('cl100k_base'), /cl100k_base vocabulary could not be loaded from .* \(truncated download\)/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('run from source, takes the encodings from the package', async () => {
    const fromSource = createTokenizerLoader(bundledOrPackage());
    const o200k = await fromSource.load('o200k_base');
    assert.equal(o200k.count(SAMPLES[2]!), packageO200k(SAMPLES[2]!));
    assert.equal((await loadTokenizer('cl100k_base')).count(SAMPLES[2]!), packageCl100k(SAMPLES[2]!));
  });
});
