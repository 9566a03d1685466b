import assert from 'node:assert/strict';
import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { lockedPackages } from '../../../src/app/commands/locked-packages';

describe('lockedPackages: what the lock files pin, for npx under an allow rule', () => {
  let folder: string;

  beforeEach(async () => {
    folder = await fs.mkdtemp(path.join(os.tmpdir(), 'longrun-locks-'));
  });

  afterEach(async () => {
    await fs.rm(folder, { recursive: true, force: true });
  });

  it('reads package names and the programs they install from package-lock.json', async () => {
    const lock = {
      lockfileVersion: 3,
      packages: {
        '': { name: 'app' },
        'node_modules/typescript': { version: '5.9.3', bin: { tsc: 'bin/tsc', tsserver: 'bin/tsserver' } },
        'node_modules/@scope/tool': { version: '1.0.0' },
        'node_modules/a/node_modules/nested': { version: '1.0.0' },
      },
    };
    await fs.writeFile(path.join(folder, 'package-lock.json'), JSON.stringify(lock));
    assert.deepEqual([...(await lockedPackages(folder))].sort(), ['@scope/tool', 'nested', 'tsc', 'tsserver', 'typescript']);
  });

  it('reads the entries of yarn.lock and pnpm-lock.yaml', async () => {
    await fs.writeFile(
      path.join(folder, 'yarn.lock'),
      '# yarn lockfile v1\n\n"@babel/core@^7.0.0", "@babel/core@^7.1.0":\n  version "7.1.0"\n\neslint@^9.0.0:\n  version "9.0.0"\n\n__metadata:\n  version: 8\n',
    );
    await fs.writeFile(
      path.join(folder, 'pnpm-lock.yaml'),
      "lockfileVersion: '9.0'\n\nimporters:\n  .:\n    dependencies:\n      notpinned:\n\npackages:\n\n  prettier@3.0.0:\n    resolution: {}\n\n  '@types/node@20.0.0':\n    resolution: {}\n",
    );
    assert.deepEqual([...(await lockedPackages(folder))].sort(), ['@babel/core', '@types/node', 'eslint', 'prettier']);
  });

  it('pins nothing without a folder, a lock file, or with one that cannot be read', async () => {
    assert.equal((await lockedPackages(undefined)).size, 0);
    assert.equal((await lockedPackages(folder)).size, 0);
    await fs.writeFile(path.join(folder, 'package-lock.json'), '{ not json');
    assert.equal((await lockedPackages(folder)).size, 0);
  });
});
