import assert from 'node:assert/strict';
import { asSchema, generateText, isStepCount } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { createEditorTools, selectEditorTools, type EditorTool, type EditorToolsPort } from '../../../src/llm/editor-tools';
import { ToolFailure } from '../../../src/llm/workspace-port';

const lookup: EditorTool = {
  name: 'ext_lookup',
  description: 'Looks a word up.',
  inputSchema: { type: 'object', properties: { word: { type: 'string' } }, required: ['word'] },
};
const fetchPage: EditorTool = { name: 'mcp_web_fetch', description: 'Fetches a page.' };
const ownName: EditorTool = { name: 'read_file', description: "Another extension's read_file." };
const badName: EditorTool = { name: 'has space', description: 'A name no model can call.' };
const available = [lookup, fetchPage, ownName, badName];
const reserved = new Set(['read_file', 'edit_file']);

/** The editor's tools in memory: records calls, answers with `answer`. */
class FakeEditorTools implements EditorToolsPort {
  readonly calls: Array<{ name: string; input: unknown; signal: AbortSignal }> = [];
  answer: () => Promise<string> = async () => 'looked up';

  list(): readonly EditorTool[] {
    return available;
  }

  invoke(name: string, input: unknown, signal: AbortSignal): Promise<string> {
    this.calls.push({ name, input, signal });
    return this.answer();
  }
}

async function run(port: FakeEditorTools, input: unknown, abortSignal?: AbortSignal): Promise<unknown> {
  const tools = createEditorTools(port, [lookup], { maxResultChars: 300 });
  const execute = tools['ext_lookup']?.execute;
  assert.ok(execute);
  return execute(input, { toolCallId: 'c1', messages: [], context: {}, ...(abortSignal ? { abortSignal } : {}) });
}

describe('editor tools: which are offered', () => {
  it('offers none by default', () => {
    assert.deepEqual(selectEditorTools(available, { setting: [], requested: [], reserved }), { offered: [], skipped: [] });
  });

  it('offers the tools the setting names, in its order, and says why one it names is not offered', () => {
    const { offered, skipped } = selectEditorTools(available, { setting: ['mcp_web_fetch', 'ext_lookup', 'gone_tool'], requested: [], reserved });
    assert.deepEqual(
      offered.map((t) => t.name),
      ['mcp_web_fetch', 'ext_lookup'],
    );
    assert.deepEqual(skipped, [{ name: 'gone_tool', reason: 'no tool of this name is registered in VS Code' }]);
  });

  it('offers every tool for "*", but never one named like a Longrun tool, nor one a model cannot call', () => {
    const { offered, skipped } = selectEditorTools(available, { setting: ['*'], requested: [], reserved });
    assert.deepEqual(
      offered.map((t) => t.name),
      ['ext_lookup', 'mcp_web_fetch'],
    );
    assert.deepEqual(
      skipped.map((s) => s.name),
      ['read_file', 'has space'],
    );
    assert.match(skipped[0]!.reason, /Longrun's own tools/);
  });

  it('offers a tool the user named in the request although the setting does not, once', () => {
    const { offered } = selectEditorTools(available, { setting: ['ext_lookup'], requested: ['mcp_web_fetch', 'ext_lookup'], reserved });
    assert.deepEqual(
      offered.map((t) => t.name),
      ['ext_lookup', 'mcp_web_fetch'],
    );
  });

  it('does not let a request replace a Longrun tool either', () => {
    const { offered, skipped } = selectEditorTools(available, { setting: [], requested: ['read_file'], reserved });
    assert.deepEqual(offered, []);
    assert.deepEqual(
      skipped.map((s) => s.name),
      ['read_file'],
    );
  });
});

describe('editor tools: as AI SDK tools', () => {
  it('describes each tool to the model with its own description and an object schema', async () => {
    const tools = createEditorTools(new FakeEditorTools(), [lookup, fetchPage], { maxResultChars: 300 });
    assert.equal(tools['ext_lookup']?.description, 'Looks a word up.');
    assert.deepEqual(await asSchema(tools['ext_lookup']!.inputSchema).jsonSchema, { ...lookup.inputSchema, type: 'object' });
    // A tool that declares no input still gets the object schema model APIs require.
    assert.deepEqual(await asSchema(tools['mcp_web_fetch']!.inputSchema).jsonSchema, { type: 'object', properties: {} });
  });

  it('runs the tool through the port with the input and the abort signal', async () => {
    const port = new FakeEditorTools();
    const controller = new AbortController();
    assert.equal(await run(port, { word: 'needle' }, controller.signal), 'looked up');
    assert.equal(port.calls.length, 1);
    assert.equal(port.calls[0]!.name, 'ext_lookup');
    assert.deepEqual(port.calls[0]!.input, { word: 'needle' });
    assert.equal(port.calls[0]!.signal, controller.signal);
  });

  it("cuts a long result to the cap of Longrun's own tool results, saying so", async () => {
    const port = new FakeEditorTools();
    port.answer = async () => Array.from({ length: 100 }, (_, i) => `line ${i} of the result`).join('\n');
    const result = String(await run(port, { word: 'x' }));
    assert.ok(result.length <= 300, `${result.length} characters`);
    assert.match(result, /^line 0 of the result\n/);
    assert.match(
      result,
      /\[Truncated at 300 characters: [\d,]+ more characters \(\d+ lines\) not shown\. Call the tool with narrower input to get less\.\]$/,
    );
  });

  it('tells the model when the user did not allow the tool or it failed, and lets the turn go on', async () => {
    const port = new FakeEditorTools();
    port.answer = () => Promise.reject(new ToolFailure('The user did not allow ext_lookup to run.'));
    assert.equal(await run(port, { word: 'x' }), 'Error: The user did not allow ext_lookup to run.');
  });

  it('lets an abort through', async () => {
    const port = new FakeEditorTools();
    const controller = new AbortController();
    controller.abort(new Error('stopped'));
    port.answer = () => Promise.reject(controller.signal.reason);
    await assert.rejects(run(port, { word: 'x' }, controller.signal), /stopped/);
  });

  it('is called by a model like any other tool, and its result goes to the next step', async () => {
    const port = new FakeEditorTools();
    const usage = {
      inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
      outputTokens: { total: 1, text: 1, reasoning: undefined },
    };
    const model = new MockLanguageModelV4({
      doGenerate: [
        {
          content: [{ type: 'tool-call', toolCallId: 't1', toolName: 'ext_lookup', input: JSON.stringify({ word: 'needle' }) }],
          finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
          usage,
          warnings: [],
        },
        { content: [{ type: 'text', text: 'done' }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] },
      ],
    });
    const result = await generateText({
      model,
      prompt: 'look it up',
      tools: createEditorTools(port, [lookup], { maxResultChars: 300 }),
      stopWhen: isStepCount(3),
    });
    assert.equal(result.text, 'done');
    assert.deepEqual(
      port.calls.map((c) => c.input),
      [{ word: 'needle' }],
    );
    const toolMessage = (model.doGenerateCalls[1]?.prompt ?? []).find((m) => m.role === 'tool');
    const part = toolMessage?.role === 'tool' ? toolMessage.content.find((p) => p.type === 'tool-result') : undefined;
    assert.deepEqual(part?.type === 'tool-result' ? part.output : undefined, { type: 'text', value: 'looked up' });
  });
});
