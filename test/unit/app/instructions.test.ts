import assert from 'node:assert/strict';
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
