import assert from 'node:assert/strict';
import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { renderAttachments, resolveAttachments, type AttachedReference, type AttachmentOptions } from '../../../src/app/turn/attachments';
import type { WorkspaceRoot } from '../../../src/app/workspace/path-guard';
import { WorkspaceFiles } from '../../../src/app/workspace/workspace-files';
import { FakeEditor } from './fake-editor';

describe('attachments: what the user attaches, as the model receives it', () => {
  let base: string;
  let project: string;
  let outside: string;
  let roots: WorkspaceRoot[];
  let editor: FakeEditor;
  let options: AttachmentOptions;

  const at = (...parts: string[]) => path.join(project, ...parts);
  const lines = (count: number, prefix = 'line') => Array.from({ length: count }, (_, i) => `${prefix} ${i + 1}`).join('\n') + '\n';
  const resolve = (references: AttachedReference[], overrides: Partial<AttachmentOptions> = {}) =>
    resolveAttachments(references, { ...options, ...overrides });

  beforeEach(async () => {
    base = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'longrun-attach-')));
    project = path.join(base, 'project');
    outside = path.join(base, 'outside');
    await fs.mkdir(path.join(project, 'src'), { recursive: true });
    await fs.mkdir(outside);
    roots = [{ name: 'project', fsPath: project }];
    editor = new FakeEditor(() => roots);
    const files = new WorkspaceFiles({ roots: () => roots, autoApprove: () => false, confirm: async () => false, editor });
    options = { roots, files, maxChars: 2_000, maxTotalChars: 6_000, signal: new AbortController().signal };
  });

  afterEach(() => fs.rm(base, { recursive: true, force: true }));

  it('gives a whole file with its path and numbered lines, and records it as read', async () => {
    await fs.writeFile(at('src', 'a.ts'), 'export const a = 1;\nexport const b = 2;\n');
    const [attachment] = await resolve([{ kind: 'file', path: at('src', 'a.ts') }]);
    assert.equal(attachment?.block, '<attachment path="src/a.ts" lines="1-2">\n1| export const a = 1;\n2| export const b = 2;\n</attachment>');
    assert.equal(attachment?.readPath, 'src/a.ts');
  });

  it('gives the lines of a range with their own numbers', async () => {
    await fs.writeFile(at('src', 'b.ts'), lines(20));
    const [attachment] = await resolve([{ kind: 'file', path: at('src', 'b.ts'), lines: { start: 3, end: 9 } }]);
    assert.equal(
      attachment?.block,
      `<attachment path="src/b.ts" lines="3-9">\n${[3, 4, 5, 6, 7, 8, 9].map((n) => `${n}| line ${n}`).join('\n')}\n</attachment>`,
    );
  });

  it('gives what the editor shows for a file with unsaved changes', async () => {
    await fs.writeFile(at('src', 'c.ts'), 'on disk\n');
    editor.unsaved.set(at('src', 'c.ts'), 'in the editor\n');
    const [attachment] = await resolve([{ kind: 'file', path: at('src', 'c.ts') }]);
    assert.match(attachment?.block ?? '', /\n1\| in the editor\n/);
  });

  it('cuts a file to the cap of a tool result and says where to read on', async () => {
    await fs.writeFile(at('src', 'big.ts'), lines(500, 'a fairly long line of code that takes room'));
    const [attachment] = await resolve([{ kind: 'file', path: at('src', 'big.ts') }]);
    const content = /\n([\s\S]*)\n<\/attachment>$/.exec(attachment?.block ?? '')?.[1] ?? '';
    assert.ok(content.length <= options.maxChars, `${content.length} characters`);
    const last = Number(/lines="1-(\d+)"/.exec(attachment?.block ?? '')?.[1]);
    assert.ok(last > 10 && last < 500, `lines 1-${last}`);
    assert.match(
      content,
      new RegExp(`\\[Truncated at the size limit: lines 1-${last} of 500 shown\\. read_file can read on from line ${last + 1}\\.\\]$`),
    );
    assert.equal(attachment?.readPath, 'src/big.ts', 'what was shown was read');
  });

  it('says why a binary file, a folder, a missing file or a file outside the workspace is not included, and records none as read', async () => {
    await fs.writeFile(at('logo.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 0, 1, 2, 3]));
    await fs.writeFile(path.join(outside, 'secret.txt'), 'not for the model\n');
    await fs.symlink(path.join(outside, 'secret.txt'), at('link.txt'));
    const attachments = await resolve([
      { kind: 'file', path: at('logo.png') },
      { kind: 'file', path: at('src') },
      { kind: 'file', path: at('gone.ts') },
      { kind: 'file', path: path.join(outside, 'secret.txt') },
      { kind: 'file', path: at('link.txt') },
    ]);
    const blocks = attachments.map((a) => a.block);
    assert.match(
      blocks[0]!,
      /^<attachment path="logo\.png">\n\[Not included: logo\.png is a binary file; only text files can be read\.\]\n<\/attachment>$/,
    );
    assert.match(blocks[1]!, /^<attachment path="src">\n\[Not included: src is a directory/);
    assert.match(blocks[2]!, /^<attachment path="gone\.ts">\n\[Not included: File not found: gone\.ts\.\]/);
    assert.equal(
      blocks[3],
      `<attachment path="${path.join(outside, 'secret.txt')}">\n[Not included: the file is outside the workspace folders, which Longrun does not read.]\n</attachment>`,
    );
    assert.match(blocks[4]!, /^<attachment path="link\.txt">\n\[Not included: .*symbolic link that points outside the workspace folder/);
    assert.ok(!renderAttachments(attachments).includes('not for the model'));
    assert.deepEqual(
      attachments.map((a) => a.readPath),
      [undefined, undefined, undefined, undefined, undefined],
    );
  });

  it('gives an open document that is no file, a value, and a note for what cannot be read', async () => {
    const attachments = await resolve([
      { kind: 'document', name: 'untitled:Untitled-1', text: 'one\ntwo\nthree\n', lines: { start: 2, end: 3 } },
      { kind: 'value', name: 'the selected terminal output', text: 'npm ERR! missing script' },
      { kind: 'unreadable', name: 'vscode.image', why: 'Longrun cannot read this kind of attachment' },
    ]);
    assert.deepEqual(
      attachments.map((a) => a.block),
      [
        '<attachment name="untitled:Untitled-1" lines="2-3">\n2| two\n3| three\n</attachment>',
        '<attachment name="the selected terminal output">\nnpm ERR! missing script\n</attachment>',
        '<attachment name="vscode.image">\n[Not included: Longrun cannot read this kind of attachment.]\n</attachment>',
      ],
    );
    assert.ok(attachments.every((a) => a.readPath === undefined));
  });

  it('gives each attachment once, and stops at the total a message may carry', async () => {
    for (const name of ['a', 'b', 'c', 'd']) await fs.writeFile(at('src', `${name}.ts`), lines(200, `content of ${name} that fills the room`));
    const file = (name: string): AttachedReference => ({ kind: 'file', path: at('src', `${name}.ts`) });
    const attachments = await resolve([file('a'), file('a'), file('b'), file('c'), file('d')], { maxTotalChars: 4_500 });
    assert.equal(attachments.length, 4, 'the repeated file is given once');
    assert.deepEqual(
      attachments.map((a) => a.readPath),
      ['src/a.ts', 'src/b.ts', 'src/c.ts', undefined],
    );
    assert.match(attachments[2]!.block, /\[Truncated at the size limit/, 'the third takes what room is left');
    assert.match(
      attachments[3]!.block,
      /^<attachment path="src\/d\.ts">\n\[Not included: the attachments before it fill the 4,500 characters one message may carry\.\]/,
    );
  });

  it('escapes what would break the attributes', async () => {
    const [attachment] = await resolve([{ kind: 'value', name: 'say "hi" <now>', text: 'x' }]);
    assert.equal(attachment?.block, '<attachment name="say &quot;hi&quot; &lt;now&gt;">\nx\n</attachment>');
  });

  it('says an empty file is empty', async () => {
    await fs.writeFile(at('empty.ts'), '');
    const [attachment] = await resolve([{ kind: 'file', path: at('empty.ts') }]);
    assert.equal(attachment?.block, '<attachment path="empty.ts" lines="0">\n(empty file)\n</attachment>');
    assert.equal(attachment?.readPath, 'empty.ts');
  });

  it('stops when the request is stopped', async () => {
    await fs.writeFile(at('a.ts'), 'x\n');
    const controller = new AbortController();
    controller.abort(new Error('stopped'));
    await assert.rejects(resolve([{ kind: 'file', path: at('a.ts') }], { signal: controller.signal }), /stopped/);
  });

  it('joins the blocks of a request with blank lines', () => {
    assert.equal(
      renderAttachments([{ block: '<attachment name="a">\n1\n</attachment>' }, { block: '<attachment name="b">\n2\n</attachment>' }]),
      '<attachment name="a">\n1\n</attachment>\n\n<attachment name="b">\n2\n</attachment>',
    );
  });
});
