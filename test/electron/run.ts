/**
 * `npm run test:electron`: the browser-free extension-host suite (`test/e2e/suites/api.ts`) in a
 * desktop VS Code that `@vscode/test-electron` downloads. For machines that can reach VS Code's
 * download servers; here `npm run test:e2e` runs the same suite in code-server instead.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runTests } from '@vscode/test-electron';
import { startScriptedModelServer } from '../../scripts/scripted-model/server';
import { QUIET_SETTINGS, ROOT, writeUserSettings } from '../../scripts/sandbox';
import { bundleForExtensionHost, makeWorkspace, offlineEndpoints } from '../e2e/workspace';

async function main(): Promise<number> {
  const work = mkdtempSync(join(tmpdir(), 'longrun-electron-'));
  const out = join(work, 'out');
  await bundleForExtensionHost([join(ROOT, 'test', 'electron', 'index.ts'), join(ROOT, 'test', 'e2e', 'suites', 'api.ts')], out);
  const workspace = join(work, 'workspace');
  makeWorkspace(workspace, 3);
  const server = await startScriptedModelServer({ port: 0 });
  const userDataDir = join(work, 'user-data');
  writeUserSettings(userDataDir, {
    ...QUIET_SETTINGS,
    'longrun.endpoints': offlineEndpoints(server.url, ['scripted', 'scripted-small']),
  });
  try {
    await runTests({
      extensionDevelopmentPath: ROOT,
      extensionTestsPath: join(out, 'test', 'electron', 'index.js'),
      launchArgs: [workspace, '--user-data-dir', userDataDir, '--disable-workspace-trust'],
      extensionTestsEnv: {
        LONGRUN_E2E_ROOT: ROOT,
        LONGRUN_E2E_SUITE: join(out, 'test', 'e2e', 'suites', 'api.js'),
        LONGRUN_E2E_MODEL_CONTROL: server.url.replace(/\/v1$/, ''),
      },
    });
    return 0;
  } catch (error) {
    process.stderr.write(`${String(error)}\n`);
    return 1;
  } finally {
    await server.close();
  }
}

void main().then((code) => process.exit(code));
