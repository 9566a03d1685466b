import assert from 'node:assert/strict';
import { toolCallsInText } from '../../../src/llm/stray-tool-calls';

/** A tool call a model wrote as text where it was told to call none. */
describe('a tool call written as text', () => {
  const offered = ['read_file', 'create_file', 'run_command'];

  it('is read in the syntaxes models write calls in, by the offered tool it names', () => {
    const written: Array<[string, string[]]> = [
      ['<tool_call>\n{"name": "read_file", "arguments": {"path": "a.ts"}}\n</tool_call>', ['read_file']],
      ['[TOOL_CALLS][{"name": "create_file", "arguments": {"path": "b.md", "content": "x"}}]', ['create_file']],
      ['<function=run_command>{"command": "npm test"}</function>', ['run_command']],
      ['<|python_tag|>{"name": "read_file", "parameters": {"path": "a.ts"}}', ['read_file']],
      ['<think>I should look first.</think>\n<tool_call>{"name": "read_file"}</tool_call>', ['read_file']],
      ['{"name": "read_file", "parameters": {"path": "a.ts"}}', ['read_file']],
      ['[{"name": "read_file", "arguments": {}}, {"name": "read_file", "arguments": {}}]', ['read_file']],
      ['<tool_call>{"name": "mystery"}</tool_call>', ['(a tool)']],
    ];
    for (const [text, names] of written) assert.deepEqual(toolCallsInText(text, offered), names, text);
  });

  it('is not seen in a summary, in prose, or in JSON that calls no offered tool', () => {
    const notCalls = [
      '## Session Summary (Compaction Round 2)\n### Completed Work\n- read_file on a.ts: `<tool_call>` appears in the log',
      'I read src/a.ts with read_file and found the bug.',
      '{"name": "Ada", "role": "user"}',
      '',
    ];
    for (const text of notCalls) assert.deepEqual(toolCallsInText(text, offered), [], text);
  });
});
