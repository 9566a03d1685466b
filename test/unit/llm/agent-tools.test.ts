import assert from 'node:assert/strict';
import { asSchema, generateText, isStepCount, type ToolSet } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import {
  createAgentTools,
  MAX_RECALL_TOKENS,
  type AgentFileEvent,
  type RecallPort,
  type RecallRequest,
  type SkillPort,
  type SkillRequest,
} from '../../../src/llm/agent-tools';
import { OWN_TOOL_NAMES } from '../../../src/core/tool-names';
import { ToolFailure, type LineRange, type ReadResult, type SearchMatch, type TextEdit, type WorkspacePort } from '../../../src/llm/workspace-port';

type Call = { method: string; args: unknown[]; signal: AbortSignal };

/** An in-memory workspace: enough behaviour to check what the tools make of the port's answers. */
class FakePort implements WorkspacePort {
  readonly files = new Map<string, string>();
  readonly calls: Call[] = [];
  /** When set, every method throws it. */
  failWith: Error | undefined;
  /** Overrides readFile's answer. */
  readAnswer: ReadResult | undefined;
  listAnswer: { files: string[]; truncated: boolean } | undefined;
  searchAnswer: { matches: SearchMatch[]; truncated: boolean } | undefined;
  /** When true, editFile reports that it edited the editor's unsaved text. */
  editUnsaved = false;

  private enter(method: string, signal: AbortSignal, ...args: unknown[]): void {
    this.calls.push({ method, args, signal });
    if (this.failWith) throw this.failWith;
  }

  async readFile(path: string, range: LineRange, signal: AbortSignal): Promise<ReadResult> {
    this.enter('readFile', signal, path, range);
    if (this.readAnswer) return this.readAnswer;
    const text = this.files.get(path);
    if (text === undefined) throw new ToolFailure(`File not found: ${path}`);
    const lines = text === '' ? [] : text.replace(/\n$/, '').split('\n');
    const start = range.start ?? 1;
    const end = Math.min(range.end ?? lines.length, lines.length);
    return {
      path,
      text: lines.slice(start - 1, end).join('\n'),
      startLine: start,
      endLine: end,
      totalLines: lines.length,
      truncated: false,
    };
  }

  async listFiles(glob: string, limit: number, signal: AbortSignal) {
    this.enter('listFiles', signal, glob, limit);
    if (this.listAnswer) return this.listAnswer;
    const files = [...this.files.keys()].sort();
    return { files: files.slice(0, limit), truncated: files.length > limit };
  }

  async searchText(query: string, options: { glob?: string; isRegex: boolean; caseSensitive: boolean; limit: number }, signal: AbortSignal) {
    this.enter('searchText', signal, query, options);
    return this.searchAnswer ?? { matches: [], truncated: false };
  }

  async createFile(path: string, content: string, signal: AbortSignal) {
    this.enter('createFile', signal, path, content);
    if (this.files.has(path)) throw new ToolFailure(`${path} already exists`);
    this.files.set(path, content);
    return { path };
  }

  async editFile(path: string, edits: readonly TextEdit[], signal: AbortSignal) {
    this.enter('editFile', signal, path, edits);
    let text = this.files.get(path);
    if (text === undefined) throw new ToolFailure(`File not found: ${path}`);
    for (const edit of edits) text = text.replace(edit.oldText, edit.newText);
    this.files.set(path, text);
    return { path, replacements: edits.length, ...(this.editUnsaved ? { unsaved: true } : {}) };
  }
}

async function call(tools: ToolSet, name: string, input: unknown, abortSignal?: AbortSignal): Promise<string> {
  const t = tools[name];
  assert.ok(t?.execute, `tool ${name} is offered and executable`);
  const output: unknown = await t.execute(input, { toolCallId: 'call-1', messages: [], abortSignal, context: {} });
  assert.equal(typeof output, 'string');
  return output as string;
}

function numberedFile(count: number): string {
  return Array.from({ length: count }, (_, i) => `line ${i + 1}`).join('\n') + '\n';
}

describe('createAgentTools', () => {
  let port: FakePort;
  let events: AgentFileEvent[];
  let tools: ToolSet;

  beforeEach(() => {
    port = new FakePort();
    events = [];
    tools = createAgentTools(port, { readOnly: false, maxResultChars: 20_000, onFileEvent: (e) => events.push(e) });
  });

  describe('tool set', () => {
    it('offers all five tools when writes are allowed', () => {
      assert.deepEqual(Object.keys(tools).sort(), ['create_file', 'edit_file', 'list_files', 'read_file', 'search_text']);
    });

    it('names every tool it can offer from the one set of tool names, and nothing else', () => {
      const recall: RecallPort = { recall: () => ({ text: '', matches: 0 }) } as unknown as RecallPort;
      const commands = { run: async () => ({ exitCode: 0, output: '' }) } as unknown as Parameters<typeof createAgentTools>[1]['commands'];
      const skills: SkillPort = { load: async () => '' };
      const all = createAgentTools(port, { readOnly: false, commands, recall, skills });
      assert.deepEqual(Object.keys(all).sort(), [...OWN_TOOL_NAMES].sort());
    });

    it('hides create_file and edit_file in read-only mode', () => {
      const readOnly = createAgentTools(port, { readOnly: true });
      assert.deepEqual(Object.keys(readOnly).sort(), ['list_files', 'read_file', 'search_text']);
    });

    it('describes every tool and every input field for the model', async () => {
      for (const [name, t] of Object.entries(tools)) {
        assert.ok(typeof t.description === 'string' && t.description.length > 40, `${name} has a description`);
        const schema = (await asSchema(t.inputSchema).jsonSchema) as Record<string, unknown>;
        const undescribed = fieldsWithoutDescription(schema, name);
        assert.deepEqual(undescribed, [], `${name}: fields without description`);
      }
    });
  });

  describe('read_file', () => {
    it('returns a header and numbered lines, and records the read', async () => {
      port.files.set('src/a.ts', 'const a = 1;\nconst b = 2;\n');
      const output = await call(tools, 'read_file', { path: 'src/a.ts' });
      assert.equal(output, 'src/a.ts (lines 1-2 of 2)\n1| const a = 1;\n2| const b = 2;');
      assert.deepEqual(events, [{ kind: 'read', path: 'src/a.ts' }]);
    });

    it('passes the line range and says how to continue when lines remain', async () => {
      port.files.set('a.ts', numberedFile(50));
      const output = await call(tools, 'read_file', { path: 'a.ts', startLine: 10, endLine: 12 });
      assert.deepEqual(port.calls[0]?.args, ['a.ts', { start: 10, end: 12 }]);
      assert.equal(
        output,
        'a.ts (lines 10-12 of 50)\n10| line 10\n11| line 11\n12| line 12\n[38 more lines. Call read_file with startLine=13 to continue.]',
      );
    });

    it('reports an empty file', async () => {
      port.files.set('empty.txt', '');
      assert.equal(await call(tools, 'read_file', { path: 'empty.txt' }), 'empty.txt: empty file (0 lines)');
    });

    it('notes a text the port cut at its size limit', async () => {
      port.readAnswer = { path: 'big.ts', text: 'a\nb', startLine: 1, endLine: 2, totalLines: 9000, truncated: true };
      const output = await call(tools, 'read_file', { path: 'big.ts' });
      assert.match(output, /^big\.ts \(lines 1-2 of 9000\)\n1\| a\n2\| b\n/);
      assert.match(output, /Truncated at the size limit\. Call read_file with startLine=3/);
    });

    it('cuts a result longer than maxResultChars at a line boundary and says where to continue', async () => {
      port.files.set('long.ts', numberedFile(5000));
      const small = createAgentTools(port, { readOnly: false, maxResultChars: 1_000 });
      const output = await call(small, 'read_file', { path: 'long.ts' });
      assert.ok(output.length <= 1_000, `length ${output.length}`);
      const lines = output.split('\n');
      const lastNumbered = lines.filter((l) => /^\d+\| /.test(l)).pop();
      assert.ok(lastNumbered);
      const last = Number(lastNumbered.split('|')[0]);
      assert.equal(lastNumbered, `${last}| line ${last}`);
      assert.equal(lines[0], `long.ts (lines 1-${last} of 5000)`);
      assert.match(output, new RegExp(`startLine=${last + 1} to read more`));
    });

    it('cuts a single line that alone exceeds the limit', async () => {
      port.files.set('min.js', 'x'.repeat(5_000));
      const small = createAgentTools(port, { readOnly: false, maxResultChars: 500 });
      const output = await call(small, 'read_file', { path: 'min.js' });
      assert.ok(output.length <= 500, `length ${output.length}`);
      assert.match(output, /^min\.js \(lines 1-1 of 1\)\n1\| x+…\n\[Line 1 is too long and was cut\.\]/);
    });

    it('refuses an endLine before startLine without calling the port', async () => {
      const output = await call(tools, 'read_file', { path: 'a.ts', startLine: 5, endLine: 2 });
      assert.equal(output, 'Error: endLine (2) is before startLine (5).');
      assert.equal(port.calls.length, 0);
    });
  });

  describe('list_files', () => {
    it('returns one path per line', async () => {
      port.files.set('b.ts', '').set('a.ts', '');
      assert.equal(await call(tools, 'list_files', { glob: '**/*.ts' }), 'a.ts\nb.ts');
      assert.deepEqual(port.calls[0]?.args, ['**/*.ts', 200]);
    });

    it('passes the limit and notes when more files match', async () => {
      port.files.set('a.ts', '').set('b.ts', '').set('c.ts', '');
      const output = await call(tools, 'list_files', { glob: '**', limit: 2 });
      assert.equal(output, 'a.ts\nb.ts\n[More files match; showing the first 2. Use a narrower glob or a higher limit.]');
    });

    it('says so when nothing matches', async () => {
      assert.equal(await call(tools, 'list_files', { glob: '**/*.rs' }), 'No files match "**/*.rs".');
    });

    it('cuts a huge listing at maxResultChars with a marker', async () => {
      port.listAnswer = { files: Array.from({ length: 2000 }, (_, i) => `src/file-${i}.ts`), truncated: false };
      const small = createAgentTools(port, { readOnly: true, maxResultChars: 2_000 });
      const output = await call(small, 'list_files', { glob: '**' });
      assert.ok(output.length <= 2_000, `length ${output.length}`);
      const shown = output.split('\n').filter((l) => l.startsWith('src/'));
      assert.ok(
        shown.every((l) => /^src\/file-\d+\.ts$/.test(l)),
        'no path is cut in half',
      );
      assert.match(output, new RegExp(`\\[Output truncated at 2000 characters; ${2000 - shown.length} more lines not shown\\.`));
    });
  });

  describe('search_text', () => {
    it('formats matches as path:line: text and passes the defaults', async () => {
      port.searchAnswer = {
        matches: [
          { path: 'src/a.ts', line: 3, text: '    const needle = 1;' },
          { path: 'src/b.ts', line: 10, text: 'needle()' },
        ],
        truncated: false,
      };
      const output = await call(tools, 'search_text', { query: 'needle' });
      assert.equal(output, 'src/a.ts:3: const needle = 1;\nsrc/b.ts:10: needle()');
      assert.deepEqual(port.calls[0]?.args, ['needle', { isRegex: false, caseSensitive: false, limit: 100 }]);
    });

    it('passes glob, regex, case and limit options and notes a truncated search', async () => {
      port.searchAnswer = { matches: [{ path: 'a.ts', line: 1, text: 'x' }], truncated: true };
      const output = await call(tools, 'search_text', {
        query: 'x+',
        glob: 'src/**',
        isRegex: true,
        caseSensitive: true,
        limit: 1,
      });
      assert.deepEqual(port.calls[0]?.args, ['x+', { glob: 'src/**', isRegex: true, caseSensitive: true, limit: 1 }]);
      assert.match(output, /^a\.ts:1: x\n\[Stopped after 1 matches\./);
    });

    it('shortens very long matching lines', async () => {
      port.searchAnswer = { matches: [{ path: 'min.js', line: 1, text: 'y'.repeat(10_000) }], truncated: false };
      const output = await call(tools, 'search_text', { query: 'y' });
      assert.equal(output, `min.js:1: ${'y'.repeat(300)}…`);
    });

    it('says so when nothing matches', async () => {
      assert.equal(await call(tools, 'search_text', { query: 'zzz', glob: '*.md' }), 'No matches for "zzz" in files matching "*.md".');
    });
  });

  describe('create_file and edit_file', () => {
    it('creates a file, confirms in one line and records the creation', async () => {
      const output = await call(tools, 'create_file', { path: 'src/new.ts', content: 'a\nb\n' });
      assert.equal(output, 'Created src/new.ts (2 lines).');
      assert.equal(port.files.get('src/new.ts'), 'a\nb\n');
      assert.deepEqual(events, [{ kind: 'created', path: 'src/new.ts' }]);
    });

    it('edits a file, confirms in one line and records the modification', async () => {
      port.files.set('src/a.ts', 'let x = 1;\nlet y = 2;\n');
      const edits = [
        { oldText: 'x = 1', newText: 'x = 10' },
        { oldText: 'y = 2', newText: 'y = 20' },
      ];
      const output = await call(tools, 'edit_file', { path: 'src/a.ts', edits });
      assert.equal(output, 'Edited src/a.ts: 2 replacements applied.');
      assert.deepEqual(port.calls[0]?.args, ['src/a.ts', edits]);
      assert.equal(port.files.get('src/a.ts'), 'let x = 10;\nlet y = 20;\n');
      assert.deepEqual(events, [{ kind: 'modified', path: 'src/a.ts' }]);
    });
  });

  describe('edit_file on a file with unsaved changes', () => {
    it('tells the model the edit is in the editor and not saved yet', async () => {
      port.files.set('src/a.ts', 'let x = 1;\n');
      port.editUnsaved = true;
      const output = await call(tools, 'edit_file', { path: 'src/a.ts', edits: [{ oldText: 'x = 1', newText: 'x = 2' }] });
      assert.equal(
        output,
        "Edited src/a.ts in the editor: 1 replacement applied. The file has unsaved changes of the user's, so it was not saved; tools that read the disk see the old content until the user saves.",
      );
      assert.deepEqual(events, [{ kind: 'modified', path: 'src/a.ts' }]);
    });
  });

  describe('errors', () => {
    it('returns a ToolFailure as error text for the model and records nothing', async () => {
      port.failWith = new ToolFailure('src/x.ts is outside the workspace');
      for (const [name, input] of [
        ['read_file', { path: 'src/x.ts' }],
        ['list_files', { glob: '**' }],
        ['search_text', { query: 'q' }],
        ['create_file', { path: 'src/x.ts', content: '' }],
        ['edit_file', { path: 'src/x.ts', edits: [{ oldText: 'a', newText: 'b' }] }],
      ] as const) {
        assert.equal(await call(tools, name, input), 'Error: src/x.ts is outside the workspace', name);
      }
      assert.deepEqual(events, []);
    });

    it('rethrows errors that are not ToolFailure', async () => {
      const bug = new TypeError('boom');
      port.failWith = bug;
      for (const name of ['read_file', 'list_files', 'search_text', 'create_file', 'edit_file']) {
        await assert.rejects(call(tools, name, { path: 'a', glob: '**', query: 'q', content: '', edits: [] }), (e) => e === bug);
      }
    });
  });

  describe('abort signal', () => {
    it('hands the AI SDK abort signal to the port', async () => {
      port.files.set('a.ts', 'x');
      const controller = new AbortController();
      await call(tools, 'read_file', { path: 'a.ts' }, controller.signal);
      await call(tools, 'list_files', { glob: '**' }, controller.signal);
      await call(tools, 'search_text', { query: 'x' }, controller.signal);
      await call(tools, 'create_file', { path: 'b.ts', content: '' }, controller.signal);
      await call(tools, 'edit_file', { path: 'a.ts', edits: [{ oldText: 'x', newText: 'y' }] }, controller.signal);
      assert.equal(port.calls.length, 5);
      for (const c of port.calls) assert.equal(c.signal, controller.signal, c.method);
    });

    it('passes a live, never-aborted signal when the SDK gives none', async () => {
      port.files.set('a.ts', 'x');
      await call(tools, 'read_file', { path: 'a.ts' });
      const signal = port.calls[0]?.signal;
      assert.ok(signal instanceof AbortSignal);
      assert.equal(signal.aborted, false);
    });
  });

  describe('with the AI SDK', () => {
    it('runs a tool call from the model and sends the result to the next step', async () => {
      port.files.set('src/a.ts', 'export const answer = 42;\n');
      const model = new MockLanguageModelV4({
        doGenerate: [
          {
            content: [{ type: 'tool-call', toolCallId: 'call-1', toolName: 'read_file', input: JSON.stringify({ path: 'src/a.ts' }) }],
            finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
            usage: usage(),
            warnings: [],
          },
          {
            content: [{ type: 'text', text: 'The answer is 42.' }],
            finishReason: { unified: 'stop', raw: 'stop' },
            usage: usage(),
            warnings: [],
          },
        ],
      });
      const result = await generateText({ model, tools, prompt: 'What is the answer?', stopWhen: isStepCount(5) });
      assert.equal(result.text, 'The answer is 42.');
      assert.equal(model.doGenerateCalls.length, 2);
      const secondPrompt = model.doGenerateCalls[1]?.prompt ?? [];
      const toolMessage = secondPrompt.find((m) => m.role === 'tool');
      assert.ok(toolMessage && toolMessage.role === 'tool', 'the second step carries a tool message');
      const part = toolMessage.content.find((p) => p.type === 'tool-result');
      assert.ok(part && part.type === 'tool-result');
      assert.equal(part.toolCallId, 'call-1');
      assert.deepEqual(part.output, { type: 'text', value: 'src/a.ts (lines 1-1 of 1)\n1| export const answer = 42;' });
      assert.deepEqual(events, [{ kind: 'read', path: 'src/a.ts' }]);
    });
  });
});

function usage() {
  return {
    inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
    outputTokens: { total: 5, text: 5, reasoning: undefined },
  };
}

/** Paths of object properties in a JSON schema that carry no `description`. */
function fieldsWithoutDescription(schema: Record<string, unknown>, at: string): string[] {
  const missing: string[] = [];
  const properties = schema['properties'];
  if (properties && typeof properties === 'object') {
    for (const [key, value] of Object.entries(properties as Record<string, Record<string, unknown>>)) {
      if (typeof value['description'] !== 'string' || value['description'] === '') missing.push(`${at}.${key}`);
      missing.push(...fieldsWithoutDescription(value, `${at}.${key}`));
    }
  }
  const items = schema['items'];
  if (items && typeof items === 'object') missing.push(...fieldsWithoutDescription(items as Record<string, unknown>, `${at}[]`));
  return missing;
}

describe('recall', () => {
  const asked: RecallRequest[] = [];
  const archive: RecallPort = {
    recall: (request) => {
      asked.push(request);
      return `found for ${JSON.stringify(request)}`;
    },
  };
  beforeEach(() => {
    asked.length = 0;
  });

  it('is offered when the conversation gives its archive, in a read-only workspace too', () => {
    assert.ok(createAgentTools(new FakePort(), { readOnly: true, recall: archive })['recall']);
    assert.equal(createAgentTools(new FakePort(), { readOnly: false })['recall'], undefined);
  });

  it("passes the words, the path and the budget on, trimmed, and gives the archive's answer back", async () => {
    const tools = createAgentTools(new FakePort(), { readOnly: true, recall: archive });
    const output = await call(tools, 'recall', { query: '  nextReview ', path: 'src/deck.ts', maxTokens: 2_000 });
    assert.deepEqual(asked, [{ query: 'nextReview', path: 'src/deck.ts', maxTokens: 2_000 }]);
    assert.equal(output, 'found for {"query":"nextReview","path":"src/deck.ts","maxTokens":2000}');
  });

  it('asks for words or a path when given neither, without searching', async () => {
    const tools = createAgentTools(new FakePort(), { readOnly: true, recall: archive });
    assert.equal(await call(tools, 'recall', { query: '  ' }), 'Error: Give query (words to look for) or path (a file), or both.');
    assert.deepEqual(asked, []);
  });

  it('describes itself and its fields for the model, and caps the budget it may ask for', async () => {
    const tool = createAgentTools(new FakePort(), { readOnly: true, recall: archive })['recall']!;
    assert.match(String(tool.description), /summarized or pruned/);
    const schema = (await asSchema(tool.inputSchema).jsonSchema) as { properties: Record<string, { maximum?: number }> };
    assert.deepEqual(fieldsWithoutDescription(schema as unknown as Record<string, unknown>, 'recall'), []);
    assert.equal(schema.properties['maxTokens']?.maximum, MAX_RECALL_TOKENS);
  });
});

describe('the skill tool', () => {
  const asked: SkillRequest[] = [];
  const skills: SkillPort = {
    load: async (request) => {
      asked.push(request);
      if (request.name === 'missing') throw new ToolFailure('There is no skill named "missing".');
      return `loaded ${JSON.stringify(request)}`;
    },
  };

  beforeEach(() => {
    asked.length = 0;
  });

  it('is offered when skills are given, in a read-only workspace too', () => {
    assert.ok(createAgentTools(new FakePort(), { readOnly: true, skills })['skill']);
    assert.equal(createAgentTools(new FakePort(), { readOnly: false })['skill'], undefined);
  });

  it('passes the name and the file on, trimmed, and a refusal back as an error the model reads', async () => {
    const tools = createAgentTools(new FakePort(), { readOnly: true, skills });
    assert.equal(await call(tools, 'skill', { name: ' demo ' }), 'loaded {"name":"demo"}');
    assert.equal(await call(tools, 'skill', { name: 'demo', file: ' references/A.md ' }), 'loaded {"name":"demo","file":"references/A.md"}');
    assert.equal(await call(tools, 'skill', { name: 'demo', file: '  ' }), 'loaded {"name":"demo"}');
    assert.equal(await call(tools, 'skill', { name: 'missing' }), 'Error: There is no skill named "missing".');
    assert.equal(asked.length, 4);
  });

  it('describes itself and its fields for the model', async () => {
    const tool = createAgentTools(new FakePort(), { readOnly: true, skills })['skill']!;
    assert.match(String(tool.description), /system prompt lists/);
    const schema = (await asSchema(tool.inputSchema).jsonSchema) as Record<string, unknown>;
    assert.deepEqual(fieldsWithoutDescription(schema, 'skill'), []);
  });
});
