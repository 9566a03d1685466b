/** Entry point `@vscode/test-electron` loads in the extension host: runs the suite it is given. */
import { join } from 'node:path';

export function run(): Promise<void> {
  const Mocha = require(join(process.env.LONGRUN_E2E_ROOT!, 'node_modules', 'mocha')) as typeof import('mocha');
  const mocha = new Mocha({ ui: 'bdd', timeout: 180_000, color: true });
  mocha.addFile(process.env.LONGRUN_E2E_SUITE!);
  return new Promise((resolve, reject) => {
    mocha.run((failures) => (failures > 0 ? reject(new Error(`${failures} test(s) failed`)) : resolve()));
  });
}
