// Runs one end-to-end suite inside the real extension host. The outer test process names the
// suite in `$LONGRUN_E2E_DIR/phase` before it opens (or reloads) the workbench, and waits for
// `$LONGRUN_E2E_DIR/results-<phase>.json`.
const fs = require('fs');
const path = require('path');

exports.activate = function activate() {
  const dir = process.env.LONGRUN_E2E_DIR;
  const root = process.env.LONGRUN_E2E_ROOT;
  if (!dir || !root) return;
  const phaseFile = path.join(dir, 'phase');
  if (!fs.existsSync(phaseFile)) return;
  const phase = fs.readFileSync(phaseFile, 'utf8').trim();
  const resultsFile = path.join(dir, `results-${phase}.json`);
  if (fs.existsSync(resultsFile)) return; // this phase already ran in an earlier window
  fs.writeFileSync(path.join(dir, `started-${phase}`), String(Date.now()));
  void run(root, path.join(dir, 'suites', `${phase}.js`), resultsFile);
};

async function run(root, suiteFile, resultsFile) {
  const tests = [];
  const write = (extra) => fs.writeFileSync(resultsFile, JSON.stringify({ tests, ...extra }, null, 2));
  try {
    const Mocha = require(path.join(root, 'node_modules', 'mocha'));
    const mocha = new Mocha({ ui: 'bdd', timeout: 180000, color: false, reporter: 'spec' });
    mocha.addFile(suiteFile);
    const runner = mocha.run();
    runner.on('pass', (test) => tests.push({ title: test.fullTitle(), state: 'passed', durationMs: test.duration }));
    runner.on('fail', (test, error) =>
      tests.push({ title: test.fullTitle(), state: 'failed', error: String((error && (error.stack || error.message)) || error) }),
    );
    runner.on('pending', (test) => tests.push({ title: test.fullTitle(), state: 'pending' }));
    await new Promise((resolve) => runner.on('end', resolve));
    write({ done: true });
  } catch (error) {
    tests.push({ title: 'runner', state: 'failed', error: String((error && error.stack) || error) });
    write({ done: true });
  }
}

exports.deactivate = function deactivate() {};
