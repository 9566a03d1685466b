import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

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
    assert.deepEqual(participant.commands.map((c: { name: string }) => c.name), ['compact', 'context', 'summary', 'new']);
  });

  it('contributes every command in the "Longrun" category', () => {
    const commands = Object.fromEntries(manifest.contributes.commands.map((c: { command: string; title: string; category: string }) => [c.command, `${c.category}: ${c.title}`]));
    assert.deepEqual(commands, {
      'longrun.compact': 'Longrun: Compact Conversation',
      'longrun.showSummary': 'Longrun: Show Compaction Summary',
      'longrun.undoCompaction': 'Longrun: Undo Last Compaction',
      'longrun.newConversation': 'Longrun: New Conversation',
      'longrun.showContextUsage': 'Longrun: Show Context Usage',
      'longrun.setApiKey': 'Longrun: Set API Key',
      'longrun.openChat': 'Longrun: Open Chat with a Longrun Model',
    });
  });

  it('contributes the longrun model vendor', () => {
    assert.deepEqual(manifest.contributes.languageModelChatProviders, [{ vendor: 'longrun', displayName: 'Longrun' }]);
  });

  it('activates lazily, after startup', () => {
    assert.deepEqual(manifest.activationEvents, ['onStartupFinished']);
  });

  it('keeps sources, tests and maps out of the package', () => {
    const ignore = readFileSync(join(__dirname, '..', '..', '.vscodeignore'), 'utf8').split('\n');
    assert.equal(ignore[0], '**');
    assert.ok(ignore.includes('!dist/extension.js'));
    assert.ok(!ignore.some((line) => line.includes('.map') && line.startsWith('!')));
  });
});
