import assert from 'node:assert/strict';
import { chatPosition } from '../../../src/app/turn/chat-history';
import { isInstructionReference, MAX_INSTRUCTIONS_CHARS, resolveInstructions } from '../../../src/app/turn/instructions';
import { systemPrompt } from '../../../src/app/turn/system-prompt';

describe('instruction files VS Code attaches', () => {
  it('tells instructions from attachments by how VS Code marks them', () => {
    const instructions = [
      { id: 'vscode.instructions.file.root__file:///ws/AGENTS.md', modelDescription: 'Prompt instructions file' },
      { id: 'vscode.instructions.file.reference__file:///ws/.github/style.instructions.md' },
      { id: 'vscode.prompt.instructions.root__file:///ws/.github/copilot-instructions.md' },
      { id: 'vscode.prompt.instructions__file:///ws/a.instructions.md' },
      { id: 'vscode.prompt.instructions.text' },
      { id: 'vscode.customizations.index', modelDescription: 'Chat customizations index' },
      { id: 'something-new', modelDescription: 'Prompt instructions file' },
    ];
    const attachments = [{ id: 'vscode.file' }, { id: 'file:///ws/src/a.ts' }, { id: 'vscode.implicit.selection' }, { id: 'copilot.selection' }];
    assert.deepEqual(
      instructions.filter((r) => !isInstructionReference(r)),
      [],
    );
    assert.deepEqual(attachments.filter(isInstructionReference), []);
  });

  it('reads each file once, as it is now, and says why one could not be shown', async () => {
    let reads = 0;
    const resolved = await resolveInstructions([
      { kind: 'file', key: 'a', name: 'AGENTS.md', read: async () => (reads++, 'Use tabs.') },
      { kind: 'file', key: 'a', name: 'AGENTS.md', read: async () => (reads++, 'Use tabs.') },
      { kind: 'file', key: 'b', name: 'gone.md', read: () => Promise.reject(new Error('ENOENT: no such file')) },
      { kind: 'file', key: 'c', name: 'blob.md', read: async () => 'a\u0000b' },
      { kind: 'text', key: 'd', name: 'settings', text: 'Prefer small functions.' },
    ]);
    assert.equal(reads, 1);
    assert.deepEqual(
      resolved.map((i) => i.name),
      ['AGENTS.md', 'gone.md', 'blob.md', 'settings'],
    );
    assert.match(resolved[1]!.text, /could not read.*ENOENT/);
    assert.match(resolved[2]!.text, /binary/);
  });

  it('keeps all instructions of a request within their cap', async () => {
    const big = 'rule\n'.repeat(10_000);
    const resolved = await resolveInstructions(
      ['a', 'b', 'c'].map((key) => ({ kind: 'file' as const, key, name: `${key}.md`, read: async () => big })),
    );
    assert.ok(resolved.reduce((n, i) => n + i.text.length, 0) <= MAX_INSTRUCTIONS_CHARS + 200);
    assert.match(resolved[0]!.text, /Truncated/);
    assert.match(resolved[2]!.text, /not shown/);
  });

  it('puts them at the end of the system prompt, named by their file', () => {
    const prompt = systemPrompt({ trusted: true, folders: ['ws'], instructions: [{ name: 'AGENTS.md', text: 'Use tabs.' }] });
    assert.match(prompt, /<instructions source="AGENTS\.md">\nUse tabs\.\n<\/instructions>$/);
    assert.doesNotMatch(systemPrompt({ trusted: true, folders: ['ws'] }), /<instructions/);
  });
});

describe("where a chat stands, by VS Code's history", () => {
  const request = (prompt: string) => ({ prompt, participant: 'longrun.agent', references: [], toolReferences: [] });
  const response = (metadata: unknown, participant = 'longrun.agent') => ({ participant, response: [], result: { metadata } });

  it('names the conversation and the turns its responses answered, in order', () => {
    const history = [
      request('a'),
      response({ conversationId: 'c1', turnId: 't1' }),
      request('b'),
      response({ conversationId: 'c1', turnId: 't2' }),
      request('/context'),
      response({ conversationId: 'c1', turnId: 't2', command: 'context' }),
    ];
    assert.deepEqual(chatPosition(history, 'longrun.agent'), { empty: false, answered: true, conversationId: 'c1', turns: ['t1', 't2'] });
  });

  it('follows the conversation of the latest response after /new, and ignores other participants', () => {
    const history = [
      request('a'),
      response({ conversationId: 'c1', turnId: 't1' }),
      response({ conversationId: 'x', turnId: 'y' }, 'someone.else'),
      request('/new'),
      response({ conversationId: 'c2', command: 'new' }),
    ];
    assert.deepEqual(chatPosition(history, 'longrun.agent'), { empty: false, answered: true, conversationId: 'c2', turns: [] });
  });

  it('reads a chat of an older Longrun (no turns) and a chat Longrun never answered', () => {
    assert.deepEqual(chatPosition([request('a'), response({ conversationId: 'c1' })], 'longrun.agent').turns, []);
    assert.deepEqual(chatPosition([response({}, 'other')], 'longrun.agent'), { empty: false, answered: false, turns: [] });
    assert.deepEqual(chatPosition([], 'longrun.agent'), { empty: true, answered: false, turns: [] });
    assert.equal(chatPosition([null, 3, response('not an object')], 'longrun.agent').conversationId, undefined);
  });
});
