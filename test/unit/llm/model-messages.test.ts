import assert from 'node:assert/strict';
import { generateText, type AssistantModelMessage, type ToolModelMessage } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import type { Message } from '../../../src/core/messages';
import { fromResponseMessages, toModelMessages } from '../../../src/llm/model-messages';

const counter = (): (() => string) => {
  let n = 0;
  return () => `new-${++n}`;
};

/** Strips ids (fresh on the way back) so round trips compare content and roles. */
const withoutIds = (messages: readonly Message[]) => messages.map(({ id: _id, ...rest }) => rest);

describe('model messages', () => {
  describe('toModelMessages', () => {
    it('keeps order and roles, one model message per engine message', () => {
      const messages: Message[] = [
        { id: 's', role: 'system', content: [{ type: 'text', text: 'be brief' }] },
        { id: 'u', role: 'user', content: [{ type: 'text', text: 'hi' }] },
        { id: 'a', role: 'assistant', content: [{ type: 'text', text: 'hello' }] },
        { id: 'u2', role: 'user', content: [{ type: 'text', text: 'again' }] },
      ];
      const model = toModelMessages(messages);
      assert.deepEqual(
        model.map((m) => m.role),
        ['system', 'user', 'assistant', 'user'],
      );
      assert.deepEqual(model[0], { role: 'system', content: 'be brief' });
      assert.deepEqual(model[1], { role: 'user', content: [{ type: 'text', text: 'hi' }] });
    });

    it('gives a system message with non-text parts only its text', () => {
      const [system] = toModelMessages([
        {
          id: 's',
          role: 'system',
          content: [
            { type: 'text', text: 'one' },
            { type: 'file', mediaType: 'image/png', name: 'x.png' },
            { type: 'reasoning', text: 'hidden' },
            { type: 'text', text: 'two' },
          ],
        },
      ]);
      assert.deepEqual(system, { role: 'system', content: 'one\n\ntwo' });
    });

    it('renders a file as a short text placeholder naming it, its type and size', () => {
      const [user] = toModelMessages([
        {
          id: 'u',
          role: 'user',
          content: [
            { type: 'text', text: 'look' },
            { type: 'file', mediaType: 'image/png', name: 'shot.png', size: 2048 },
          ],
        },
      ]);
      assert.ok(user && user.role === 'user' && Array.isArray(user.content));
      const second = user.content[1];
      assert.equal(second?.type, 'text');
      assert.match((second as { text: string }).text, /shot\.png.*image\/png.*2048 bytes/);
    });

    it('maps tool outputs: string to text, other values to json, isError to the error variants', () => {
      const [tool] = toModelMessages([
        {
          id: 't',
          role: 'tool',
          content: [
            { type: 'tool-result', toolCallId: 'c1', toolName: 'read', output: 'file body' },
            { type: 'tool-result', toolCallId: 'c2', toolName: 'list', output: { files: ['a', 'b'] } },
            { type: 'tool-result', toolCallId: 'c3', toolName: 'read', output: 'ENOENT', isError: true },
            { type: 'tool-result', toolCallId: 'c4', toolName: 'run', output: { code: 1 }, isError: true },
          ],
        },
      ]);
      assert.ok(tool && tool.role === 'tool');
      assert.deepEqual(
        tool.content.map((p) => (p.type === 'tool-result' ? p.output : undefined)),
        [
          { type: 'text', value: 'file body' },
          { type: 'json', value: { files: ['a', 'b'] } },
          { type: 'error-text', value: 'ENOENT' },
          { type: 'error-json', value: { code: 1 } },
        ],
      );
    });

    it('treats a summary message as an ordinary text message', () => {
      const [summary] = toModelMessages([
        { id: 'sum', role: 'user', summaryOf: 'entry-1', content: [{ type: 'text', text: '## Session Summary\n…' }] },
      ]);
      assert.deepEqual(summary, { role: 'user', content: [{ type: 'text', text: '## Session Summary\n…' }] });
    });

    it('keeps reasoning and tool calls of an assistant message in order', () => {
      const [assistant] = toModelMessages([
        {
          id: 'a',
          role: 'assistant',
          content: [
            { type: 'reasoning', text: 'think' },
            { type: 'text', text: 'reading' },
            { type: 'tool-call', toolCallId: 'c1', toolName: 'read', input: { path: 'a.ts' } },
          ],
        },
      ]);
      assert.deepEqual(assistant, {
        role: 'assistant',
        content: [
          { type: 'reasoning', text: 'think' },
          { type: 'text', text: 'reading' },
          { type: 'tool-call', toolCallId: 'c1', toolName: 'read', input: { path: 'a.ts' } },
        ],
      });
    });

    it('produces a conversation the AI SDK accepts and passes to the model as is', async () => {
      const model = new MockLanguageModelV4({
        doGenerate: {
          content: [{ type: 'text', text: 'ok' }],
          finishReason: { unified: 'stop', raw: 'stop' },
          usage: {
            inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
            outputTokens: { total: 1, text: 1, reasoning: undefined },
          },
          warnings: [],
        },
      });
      const messages: Message[] = [
        { id: 's', role: 'system', content: [{ type: 'text', text: 'rules' }] },
        {
          id: 'u',
          role: 'user',
          content: [
            { type: 'text', text: 'fix it' },
            { type: 'file', mediaType: 'image/png' },
          ],
        },
        { id: 'a', role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'read', input: { path: 'a' } }] },
        { id: 't', role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 'read', output: { size: 3 } }] },
      ];
      await generateText({ model, messages: toModelMessages(messages), allowSystemInMessages: true });
      const prompt = model.doGenerateCalls[0]?.prompt;
      assert.deepEqual(
        prompt?.map((m) => m.role),
        ['system', 'user', 'assistant', 'tool'],
      );
      const result = prompt?.[3]?.content[0];
      assert.ok(result && typeof result === 'object' && result.type === 'tool-result');
      assert.equal(result.toolCallId, 'c1');
      assert.deepEqual(result.output, { type: 'json', value: { size: 3 } });
    });
  });

  describe('fromResponseMessages', () => {
    it('gives every message a fresh id and turns outputs back into values with isError', () => {
      const response: Array<AssistantModelMessage | ToolModelMessage> = [
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'checking' },
            { type: 'tool-call', toolCallId: 'c1', toolName: 'read', input: { path: 'a' } },
          ],
        },
        {
          role: 'tool',
          content: [
            { type: 'tool-result', toolCallId: 'c1', toolName: 'read', output: { type: 'error-text', value: 'missing' } },
            {
              type: 'tool-result',
              toolCallId: 'c2',
              toolName: 'edit',
              output: { type: 'execution-denied', reason: 'user said no' },
            },
          ],
        },
        { role: 'assistant', content: 'done' },
      ];
      const messages = fromResponseMessages(response, counter());
      assert.deepEqual(
        messages.map((m) => m.id),
        ['new-1', 'new-2', 'new-3'],
      );
      assert.deepEqual(messages[1]?.content, [
        { type: 'tool-result', toolCallId: 'c1', toolName: 'read', output: 'missing', isError: true },
        { type: 'tool-result', toolCallId: 'c2', toolName: 'edit', output: 'Tool execution denied: user said no', isError: true },
      ]);
      assert.deepEqual(messages[2]?.content, [{ type: 'text', text: 'done' }]);
    });

    it('keeps a generated file as a description with its size, never its bytes', () => {
      const [message] = fromResponseMessages(
        [{ role: 'assistant', content: [{ type: 'file', mediaType: 'image/png', filename: 'p.png', data: new Uint8Array(10) }] }],
        counter(),
      );
      assert.deepEqual(message?.content, [{ type: 'file', mediaType: 'image/png', name: 'p.png', size: 10 }]);
    });

    it('drops a message that has nothing the engine keeps', () => {
      const messages = fromResponseMessages(
        [
          { role: 'tool', content: [{ type: 'tool-approval-response', approvalId: 'x', approved: true }] },
          { role: 'assistant', content: '' },
        ],
        counter(),
      );
      assert.deepEqual(messages, []);
    });
  });

  describe('round trip engine → model → engine', () => {
    it('preserves roles, text, tool call ids/names/inputs, outputs and isError', () => {
      const original: Message[] = [
        {
          id: 'a1',
          role: 'assistant',
          content: [
            { type: 'reasoning', text: 'plan' },
            { type: 'text', text: 'Let me look.' },
            { type: 'tool-call', toolCallId: 'call-1', toolName: 'read_file', input: { path: 'src/a.ts', lines: [1, 20] } },
            { type: 'tool-call', toolCallId: 'call-2', toolName: 'search', input: { query: 'foo' } },
          ],
        },
        {
          id: 't1',
          role: 'tool',
          content: [
            { type: 'tool-result', toolCallId: 'call-1', toolName: 'read_file', output: 'export const a = 1;' },
            { type: 'tool-result', toolCallId: 'call-2', toolName: 'search', output: [{ path: 'b.ts', line: 3 }] },
          ],
        },
        {
          id: 'a2',
          role: 'assistant',
          content: [{ type: 'tool-call', toolCallId: 'call-3', toolName: 'run', input: { command: 'npm test' } }],
        },
        {
          id: 't2',
          role: 'tool',
          content: [{ type: 'tool-result', toolCallId: 'call-3', toolName: 'run', output: 'exit code 1', isError: true }],
        },
        {
          id: 't3',
          role: 'tool',
          content: [{ type: 'tool-result', toolCallId: 'call-4', toolName: 'run', output: { exitCode: 2 }, isError: true }],
        },
        { id: 'a3', role: 'assistant', content: [{ type: 'text', text: 'Tests fail.' }] },
      ];
      const model = toModelMessages(original);
      const back = fromResponseMessages(model as Array<AssistantModelMessage | ToolModelMessage>, counter());
      // `isError: false` is not written back; the engine reads an absent flag the same way.
      assert.deepEqual(withoutIds(back), withoutIds(original));
      assert.equal(new Set(back.map((m) => m.id)).size, back.length);
    });
  });
});
