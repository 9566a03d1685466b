/**
 * `npm run test:e2e`: Longrun in a real VS Code. Builds the extension, starts the loopback scripted
 * model, code-server with Longrun and a test-runner extension installed, and headless Chromium on
 * the workbench. The suites run inside the extension host; this process drives the browser for
 * them when they ask (status bar, chat input, Command Palette, screenshots), reloads the window
 * between phases, and reports. A failure leaves a screenshot and the extension host's logs in
 * `test-results/`.
 */
import { spawnSync } from 'node:child_process';
import { appendFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { startScriptedModelServer } from '../../scripts/scripted-model/server';
import { FIRST_MESSAGE, NEW_USER_MESSAGE } from './phrases';
import { ANTHROPIC_MODELS, bundleForExtensionHost, makeWorkspace, offlineEndpoints, SERVED_MODELS } from './workspace';
import { ensureDebianPackages, installUnpacked, installVsix, QUIET_SETTINGS, ROOT, startCodeServer, writeUserSettings } from '../../scripts/sandbox';
import { ensureRealModel } from '../../scripts/real-model/install';
import { startLlamaServer, type LlamaServer } from '../../scripts/real-model/server';
import { startRealModelProxy, type RealModelProxy } from './real-model-proxy';

const ALL_PHASES = [
  'new-user',
  'main',
  'after-reload',
  'branches',
  'plan',
  'api',
  'safety',
  'editor-models',
  'summary-edit',
  'memory',
  'skills',
  'tool-choice',
  'providers',
  'subagents',
  'real-model',
  'crash',
  'after-crash',
] as const;
/** `LONGRUN_E2E_PHASES=api` runs a subset (while developing); every phase runs by default. */
const PHASES = (process.env.LONGRUN_E2E_PHASES?.split(',') ?? [...ALL_PHASES]).filter((p): p is (typeof ALL_PHASES)[number] =>
  (ALL_PHASES as readonly string[]).includes(p),
);
const PHASE_TIMEOUT_MS = 25 * 60_000;
const RESULTS = join(ROOT, 'test-results');
const DOCS = join(ROOT, 'docs');

interface TestResult {
  readonly title: string;
  readonly state: 'passed' | 'failed' | 'pending';
  readonly error?: string;
}

const say = (message: string): void => {
  process.stdout.write(`${message}\n`);
};

async function main(): Promise<number> {
  ensureDebianPackages(['chromium', 'libkrb5-dev']);
  rmSync(RESULTS, { recursive: true, force: true });
  mkdirSync(RESULTS, { recursive: true });

  say('Packaging the extension…');
  run('npm', ['run', 'package', '--silent']);

  const work = mkdtempSync(join(tmpdir(), 'longrun-e2e-'));
  const e2eDir = join(work, 'e2e');
  const suitesDir = join(e2eDir, 'suites');
  mkdirSync(suitesDir, { recursive: true });
  await bundleForExtensionHost(
    ALL_PHASES.map((phase) => join(ROOT, 'test', 'e2e', 'suites', `${phase}.ts`)),
    suitesDir,
  );

  const workspace = join(work, 'workspace');
  makeWorkspace(workspace, 15);
  // The new-user phase opens a workspace of its own, for the first time, as `npm start` does.
  const newUserWorkspace = join(work, 'new-user');
  makeWorkspace(newUserWorkspace, 0);
  const extensionsDir = join(work, 'extensions');
  const userDataDir = join(work, 'user-data');
  // The .vsix a user would install, installed the way a user would.
  installVsix(extensionsDir, userDataDir, join(ROOT, 'longrun.vsix'));
  installUnpacked(extensionsDir, join(ROOT, 'test', 'e2e', 'runner-extension'), ['package.json', 'extension.js']);
  // Another extension's chat model and tool, as a user may have them (the editor-models phase).
  installUnpacked(extensionsDir, join(ROOT, 'test', 'e2e', 'models-extension'), ['package.json', 'extension.js']);

  const server = await startScriptedModelServer({ port: 0, models: SERVED_MODELS });
  // The stand-in of Anthropic's Messages API, which the providers phase adds an endpoint for.
  const anthropic = await startScriptedModelServer({ port: 0, format: 'anthropic', models: ANTHROPIC_MODELS });
  // The real-model phase's llama-server, installed (built once per machine) when missing.
  const real = PHASES.includes('real-model') ? await startRealModel() : undefined;
  const uiAgent = await startUiAgent();
  writeUserSettings(userDataDir, {
    ...QUIET_SETTINGS,
    'longrun.endpoints': offlineEndpoints(server.url, [
      'scripted',
      'scripted-small',
      'scripted-overflow',
      'scripted-6k',
      'scripted-trunc',
      'scripted-6k-tools',
    ]),
    'longrun.agent.autoApproveEdits': true,
    // The safety phase's terminal must not be revived into the server restarted after the crash phase.
    'terminal.integrated.enablePersistentSessions': false,
    'longrun.compaction.showWarnings': false,
  });

  const port = await freePort();
  const serverOptions = {
    port,
    userDataDir,
    extensionsDir,
    workspace,
    logFile: join(RESULTS, 'code-server.log'),
    env: {
      LONGRUN_E2E_DIR: e2eDir,
      LONGRUN_E2E_ROOT: ROOT,
      LONGRUN_E2E_UI: uiAgent.url,
      LONGRUN_E2E_MODEL_CONTROL: server.url.replace(/\/v1$/, ''),
      LONGRUN_E2E_ANTHROPIC_URL: anthropic.url,
      ...(real ? { LONGRUN_E2E_REAL_MODEL_URL: real.proxy.url } : {}),
      // As `npm start` sets it: Longrun opens the chat on this model, once per workspace.
      LONGRUN_OPEN_CHAT_MODEL: 'offline/scripted',
    },
  };
  let codeServer = await startCodeServer(serverOptions);

  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  // What the workbench reports as errors in the page goes beside the extension host logs.
  mkdirSync(RESULTS, { recursive: true });
  const pageLog = join(RESULTS, 'workbench-errors.log');
  writeFileSync(pageLog, '');
  page.on('pageerror', (error) => appendFileSync(pageLog, `${new Date().toISOString()} uncaught: ${error.stack ?? error.message}\n`));
  page.on('console', (message) => {
    if (message.type() === 'error') appendFileSync(pageLog, `${new Date().toISOString()} console.error: ${message.text()}\n`);
  });
  uiAgent.attach(page);
  const results: TestResult[] = [];
  try {
    for (const [index, phase] of PHASES.entries()) {
      writeFileSync(join(e2eDir, 'phase'), phase);
      say(`Phase "${phase}"…`);
      const url = phase === 'new-user' ? folderUrl(codeServer.url, newUserWorkspace) : codeServer.url;
      if (index === 0) await page.goto(url);
      else await openAgain(page, url);
      await page.waitForSelector('.monaco-workbench', { timeout: 120_000 });
      // A new user's first window, and a user who reloads the window, each typing at once: the
      // new-user and branches phases check that what they typed was answered.
      if (phase === 'new-user') {
        writeFileSync(join(e2eDir, 'first-message-new-user.json'), JSON.stringify(await typeSoonAfterOpening(page, NEW_USER_MESSAGE, true)));
      }
      if (phase === 'branches')
        writeFileSync(join(e2eDir, 'first-message.json'), JSON.stringify(await typeSoonAfterOpening(page, FIRST_MESSAGE, false)));
      const finished = waitForResults(join(e2eDir, `results-${phase}.json`), join(e2eDir, `started-${phase}`), page);
      // The crash phase asks to be killed in the middle of a turn; the next phase runs on a new server.
      const phaseResults = await Promise.race([
        finished,
        uiAgent.crashRequested().then(async () => {
          await codeServer.kill();
          const killed: TestResult[] = [
            { title: 'Longrun killed in the middle of a tool call: the VS Code server was killed and started again', state: 'passed' },
          ];
          // Written before the restart, so that a window reconnecting early does not run this phase again.
          writeFileSync(join(e2eDir, `results-${phase}.json`), JSON.stringify({ tests: killed, done: true }));
          codeServer = await startCodeServer(serverOptions);
          const restarted = codeServer.process;
          restarted.once('exit', (code, signal) => say(`  (the restarted code-server exited: ${code ?? signal})`));
          return killed;
        }),
      ]);
      for (const result of phaseResults) {
        results.push(result);
        say(`  ${result.state === 'passed' ? '✔' : result.state === 'failed' ? '✘' : '-'} ${result.title}`);
        if (result.error) say(indent(result.error));
      }
      if (phaseResults.some((r) => r.state === 'failed'))
        await page.screenshot({ path: join(RESULTS, `failure-${phase}.png`) }).catch(() => undefined);
      if (phase === 'main') {
        const timing = await activationTiming(page);
        results.push(timing);
        say(`  ${timing.state === 'passed' ? '✔' : '✘'} ${timing.title}`);
        if (timing.error) say(indent(timing.error));
      }
    }
  } catch (error) {
    results.push({ title: 'end-to-end run', state: 'failed', error: String(error instanceof Error ? error.stack : error) });
    say(`  ✘ ${String(error)}`);
    await page.screenshot({ path: join(RESULTS, 'failure.png') }).catch(() => undefined);
  } finally {
    await closeQuietly(browser);
    await codeServer.stop();
    await server.close();
    await anthropic.close();
    await real?.proxy.close();
    await real?.server.close();
    await uiAgent.close();
  }

  const failed = results.filter((r) => r.state === 'failed').length;
  const passed = results.filter((r) => r.state === 'passed').length;
  if (failed > 0) {
    collectLogs(userDataDir);
    say(`Screenshots and extension host logs are in ${RESULTS}.`);
  } else {
    rmSync(work, { recursive: true, force: true });
  }
  say(`e2e: ${passed} passed, ${failed} failed`);
  return failed > 0 || passed === 0 ? 1 : 0;
}

/** llama-server with the installed model and a 4,096-token window, behind the proxy that records its answers. */
async function startRealModel(): Promise<{ server: LlamaServer; proxy: RealModelProxy }> {
  const started = Date.now();
  const installed = ensureRealModel({ log: (message) => say(`  ${message}`) });
  const server = await startLlamaServer(installed, { contextSize: 4096, logFile: join(RESULTS, 'llama-server.log') });
  say(`llama-server ${installed.build} answers (${Math.round((Date.now() - started) / 1000)} s with its install check).`);
  return { server, proxy: await startRealModelProxy(server.root) };
}

/** What the driver did when it typed a first message, in milliseconds after the workbench appeared. */
interface TypedMessage {
  /** When the chat's input was drawn. */
  readonly inputMs: number;
  readonly typingMs: number;
  readonly sentMs: number;
  /** When Longrun's gauge was first seen in the status bar, from the moment the input was drawn on (-1: not within 30 s). */
  readonly gaugeMs: number;
}

/**
 * Types `@longrun <message>` into the chat 1.5 s after the workbench appeared (or as soon as the
 * chat's input is drawn, when later), as a user who opens or reloads the window and types at once.
 * A workspace's first window shows the chat only once Longrun opens it, which takes a while on a
 * busy machine. `newUser` names the case in the record.
 */
async function typeSoonAfterOpening(page: Page, message: string, newUser: boolean): Promise<TypedMessage> {
  const shown = Date.now();
  const input = page.locator('.interactive-input-part .monaco-editor').first();
  await input.waitFor({ state: 'visible', timeout: 180_000 });
  const inputMs = Date.now() - shown;
  // Watched beside the typing: Longrun's gauge, in the status bar once Longrun is there.
  const gaugeSeen = page
    .locator('.statusbar-item[id*="longrun.gauge"]')
    .first()
    .waitFor({ state: 'attached', timeout: 30_000 })
    .then(
      () => Date.now() - shown,
      () => -1,
    );
  await page.waitForTimeout(Math.max(0, 1_500 - (Date.now() - shown)));
  const typingMs = Date.now() - shown;
  await input.click();
  await page.keyboard.press('Control+A');
  await page.keyboard.type(`@longrun ${message}`);
  await page.keyboard.press('Enter');
  const sentMs = Date.now() - shown;
  const gaugeMs = await gaugeSeen;
  appendFileSync(
    join(RESULTS, 'first-message.txt'),
    `${newUser ? 'new user' : 'after a reload'}: input drawn ${inputMs} ms, Longrun's gauge seen ${gaugeMs} ms, typing began ${typingMs} ms, sent ${sentMs} ms after the workbench appeared\n`,
  );
  return { inputMs, typingMs, sentMs, gaugeMs };
}

/** The workbench's address with another folder open. */
function folderUrl(url: string, folder: string): string {
  const address = new URL(url);
  address.searchParams.set('folder', folder);
  return address.toString();
}

/**
 * Opens the workbench again for the next phase. After a server restart the page may sit on an error
 * page, or the server may take a moment to accept connections: go to the URL, a few times if need be.
 */
async function openAgain(page: Page, url: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await page.goto(url);
      return;
    } catch (error) {
      if (attempt >= 5) throw error;
      await page.waitForTimeout(2_000);
    }
  }
}

function run(command: string, args: string[]): void {
  const result = spawnSync(command, args, { cwd: ROOT, stdio: 'inherit' });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed`);
}

async function waitForResults(file: string, started: string, page: Page): Promise<TestResult[]> {
  const deadline = Date.now() + PHASE_TIMEOUT_MS;
  let startSeen = false;
  while (Date.now() < deadline) {
    if (existsSync(file)) {
      try {
        const parsed = JSON.parse(readFileSync(file, 'utf8')) as { tests: TestResult[]; done?: boolean };
        if (parsed.done) return parsed.tests;
      } catch {
        // written while we read it: try again
      }
    }
    if (!startSeen && existsSync(started)) startSeen = true;
    if (!startSeen && Date.now() > deadline - PHASE_TIMEOUT_MS + 180_000) {
      await page.screenshot({ path: join(RESULTS, 'no-start.png') }).catch(() => undefined);
      throw new Error('the test-runner extension did not start within 3 minutes');
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`the suite did not finish within ${PHASE_TIMEOUT_MS / 60_000} minutes`);
}

/** Loopback HTTP server through which the suites ask this process to act on the browser. */
async function startUiAgent(): Promise<{ url: string; attach(page: Page): void; crashRequested(): Promise<void>; close(): Promise<void> }> {
  let page: Page | undefined;
  // Each phase waits on a fresh promise: a crash asked for in one phase ends that phase only.
  let requestCrash: () => void = () => undefined;
  const server = createServer((request, response) => {
    void handle(request, response);
  });
  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    try {
      const chunks: Buffer[] = [];
      for await (const chunk of request) chunks.push(chunk as Buffer);
      const body = JSON.parse(Buffer.concat(chunks).toString() || '{}') as Record<string, unknown>;
      if (!page) throw new Error('no browser page yet');
      if (body.action === 'crash-server') {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end('true');
        requestCrash();
        return;
      }
      const result = await act(page, body);
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify(result ?? null));
    } catch (error) {
      response.writeHead(500, { 'content-type': 'text/plain' });
      response.end(String(error instanceof Error ? error.message : error));
    }
  }
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    attach: (p) => {
      page = p;
    },
    crashRequested: () =>
      new Promise<void>((resolve) => {
        requestCrash = resolve;
      }),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/**
 * Longrun's activation time as VS Code itself measured it (loading the code + calling `activate`),
 * read from "Developer: Show Running Extensions" and kept in test-results/activation-vscode.txt.
 * Reported, not asserted: the benchmark holds the target; a shared machine's timing is no verdict.
 */
async function activationTiming(page: Page): Promise<TestResult> {
  const title = "VS Code's own activation timing of Longrun is read from Developer: Show Running Extensions";
  try {
    await runCommand(page, 'Developer: Show Running Extensions');
    const timeOf = async (name: RegExp): Promise<string> => {
      const row = page.locator('.monaco-list-row', { has: page.locator('div.name', { hasText: name }) }).first();
      // The list draws only the rows in view: scroll until the extension's row is drawn.
      const list = page.locator('.runtime-extensions-editor .monaco-list').first();
      for (let scrolls = 0; scrolls < 20 && (await row.count()) === 0; scrolls++) {
        await list.hover().catch(() => undefined);
        await page.mouse.wheel(0, 400);
        await page.waitForTimeout(150);
      }
      const cell = row.locator('div.activation-time');
      await cell.filter({ hasText: /\d+ms/ }).waitFor({ timeout: 20_000 });
      return ((await cell.textContent()) ?? '').trim();
    };
    const text = await timeOf(/^Longrun$/);
    const ms = Number(/(\d+)ms/.exec(text)?.[1]);
    // For scale: the test models extension (one small file that registers a model and a tool),
    // activated at the same moment on the same machine.
    const baseline = await timeOf(/^Longrun end-to-end test models and tools$/).catch(() => 'unknown');
    const parts = activationParts();
    writeFileSync(join(RESULTS, 'activation-vscode.txt'), `${ms}\nthe test models extension beside it: ${baseline}\n${parts}\n`);
    // Closed again, so that the next phase's window does not restore it over the chat.
    await runCommand(page, 'View: Close Editor');
    return { title: `${title}: ${text} (the test models extension beside it: ${baseline}); ${parts}`, state: 'passed' };
  } catch (error) {
    await page.screenshot({ path: join(RESULTS, 'failure-activation-timing.png') }).catch(() => undefined);
    return { title, state: 'failed', error: String(error instanceof Error ? error.message : error) };
  }
}

/**
 * What the main phase read of VS Code's timing in parts (test/e2e/suites/main.ts): Load Code, Call
 * Activate, and the `require` of the code alone between the extension host's own marks.
 */
function activationParts(): string {
  const file = join(RESULTS, 'activation-vscode.json');
  if (!existsSync(file)) return 'its parts were not read';
  type Timing = { loadCodeMs: number; callActivateMs: number; requireMs: number };
  const { longrun, beside } = JSON.parse(readFileSync(file, 'utf8')) as { longrun: Timing; beside: Timing };
  const describe = (t: Timing) => `load code ${t.loadCodeMs} ms (its require ${t.requireMs} ms) + call activate ${t.callActivateMs} ms`;
  return `Longrun: ${describe(longrun)}; the test models extension: ${describe(beside)}`;
}

/**
 * Runs a command from the Command Palette. The window may have the focus somewhere F1 does not reach
 * (a dialog, a notification, the end of a test), so it is asked again after clicking the editor area.
 */
async function runCommand(page: Page, command: string): Promise<void> {
  const input = '.quick-input-widget .quick-input-box input';
  for (let attempt = 0; ; attempt++) {
    await page.keyboard.press('Escape');
    await page.keyboard.press('F1');
    const opened = await page.waitForSelector(input, { state: 'visible', timeout: 5_000 }).then(
      () => true,
      () => false,
    );
    if (opened) break;
    if (attempt === 2) throw new Error(`the Command Palette did not open to run "${command}"`);
    await page
      .locator('.monaco-workbench .part.editor')
      .first()
      .click({ position: { x: 20, y: 20 } })
      .catch(() => undefined);
  }
  await page.keyboard.type(command);
  await page.waitForTimeout(800);
  await page.keyboard.press('Enter');
}

async function act(page: Page, body: Record<string, unknown>): Promise<unknown> {
  switch (body.action) {
    case 'statusbar':
      return page.$$eval('.statusbar-item', (items) =>
        items.map((item) => {
          const anchor = item.querySelector('a, .statusbar-item-label') ?? item;
          const color = (globalThis as unknown as { getComputedStyle(e: unknown): { backgroundColor: string } }).getComputedStyle(
            item,
          ).backgroundColor;
          const classes = `${item.className} ${anchor.className}`;
          return {
            id: item.id,
            text: (item.textContent ?? '').trim(),
            ariaLabel: anchor.getAttribute('aria-label') ?? item.getAttribute('aria-label') ?? '',
            className: classes,
            background: /error-kind/.test(classes)
              ? 'error'
              : /warning-kind/.test(classes)
                ? 'warning'
                : color === 'rgba(0, 0, 0, 0)'
                  ? 'none'
                  : color,
          };
        }),
      );
    case 'click-statusbar': {
      const id = String(body.idContains);
      await page.locator(`.statusbar-item[id*="${id}"]`).first().click();
      return true;
    }
    case 'command-palette': {
      await page.keyboard.press('F1');
      await page.waitForSelector('.quick-input-widget .quick-input-box input', { timeout: 10_000 });
      await page.keyboard.type(String(body.text));
      await page.waitForTimeout(800);
      await page.keyboard.press('Enter');
      return true;
    }
    case 'quick-pick': {
      // Picks from a quick pick another command opened: types the filter, then takes the first row that
      // holds the filter's text (and not `not`, when given), or the one `skip` such rows after it. The
      // rows are read as they are drawn, which may be before the filter has taken effect: a row that
      // does not hold the text is never picked.
      const items = page.locator('.quick-input-widget .quick-input-list .monaco-list-row');
      await page.waitForSelector('.quick-input-widget .quick-input-box input', { timeout: 10_000 });
      await page.keyboard.type(String(body.text));
      // The list may fill in after the filter is typed (chat sessions load lazily).
      await items
        .first()
        .waitFor({ state: 'visible', timeout: 15_000 })
        .catch(() => undefined);
      await page.waitForTimeout(500);
      const labels = await items.allInnerTexts();
      const wanted = String(body.text).toLowerCase();
      const matching = labels.flatMap((label, i) =>
        label.toLowerCase().includes(wanted) && (body.not === undefined || !label.includes(String(body.not))) ? [i] : [],
      );
      const pick = matching[Number(body.skip ?? 0)] ?? -1;
      // Nothing to pick: close the picker, so that the caller can open it again.
      if (pick < 0) await page.keyboard.press('Escape');
      else if (pick === 0) await page.keyboard.press('Enter');
      else await items.nth(pick).click({ timeout: 10_000 });
      return labels;
    }
    case 'chat-type': {
      const input = page.locator('.interactive-input-part .monaco-editor').first();
      await input.click();
      await page.keyboard.type(String(body.text));
      await page.keyboard.press('Enter');
      return true;
    }
    case 'chat-request-action': {
      // Clicks one of the buttons VS Code shows over a request of the chat (Restore Checkpoint, Fork,
      // Start Over), by its label, on the request whose text contains `text`.
      const row = await requestRow(page, String(body.text));
      const button = row.locator(`a.action-label[aria-label="${String(body.label)}"]`).first();
      await row.locator('.checkpoint-container, .value').first().hover({ timeout: 10_000 });
      // The toolbar shows on hover; a row taller than the view may leave it just outside.
      await button.click({ timeout: 5_000 }).catch(() => button.dispatchEvent('click'));
      return true;
    }
    case 'chat-retry': {
      // "Retry" on the last answer.
      await page.locator('.interactive-session .monaco-list-row.response').last().hover({ timeout: 10_000 });
      await page.locator('.interactive-session a.action-label[aria-label="Retry"]').last().click({ timeout: 10_000 });
      return true;
    }
    case 'chat-edit-request': {
      // Edits the request whose text contains `text` in place and sends `replacement`: VS Code drops
      // the request and what came after it.
      const row = await requestRow(page, String(body.text));
      await row.locator('.value .chat-markdown-part').first().click({ timeout: 10_000 });
      await row.locator('.monaco-editor').first().waitFor({ state: 'visible', timeout: 10_000 });
      await page.keyboard.press('Control+A');
      await page.keyboard.type(String(body.replacement));
      await page.keyboard.press('Enter');
      return true;
    }
    case 'chat-text': {
      // The chat's list draws only the rows in sight: when it was left scrolled up, its "scroll
      // down" button brings the end into sight first, as a user reading the latest answer would
      // (clicked by event, since notifications may cover it).
      const down = page.locator('.interactive-session.show-scroll-down .chat-scroll-down').first();
      if (await down.isVisible().catch(() => false)) {
        await down.dispatchEvent('click').catch(() => undefined);
        await page.waitForTimeout(300);
      }
      // Each item's text as shown, then the text of its closed folds (a finished answer folds what it
      // said between tool calls under "Completed N steps"), as a user who opens them reads it.
      return page.$$eval('.interactive-item-container', (items) =>
        items.map((item) => {
          type Element = {
            innerText: string;
            textContent: string | null;
            tagName: string;
            children: Iterable<Element>;
            querySelectorAll(selector: string): Iterable<Element>;
          };
          const element = item as unknown as Element;
          const folded = [...element.querySelectorAll('details:not([open])')].flatMap((details) =>
            [...details.children].filter((child) => child.tagName !== 'SUMMARY').map((child) => child.textContent ?? ''),
          );
          return [element.innerText, ...folded].join('\n');
        }),
      );
    }
    case 'notifications':
      return page.$$eval('.notification-list-item-message', (items) => items.map((item) => (item as unknown as { innerText: string }).innerText));
    case 'notification-button': {
      // Clicks a button of the notification whose message contains the text.
      const item = page.locator('.notification-list-item', { hasText: String(body.contains) }).last();
      await item.getByRole('button', { name: String(body.button), exact: true }).click({ timeout: 10_000 });
      return true;
    }
    case 'dialog':
      return page.$$eval('.monaco-dialog-box', (boxes) => boxes.map((box) => (box as unknown as { innerText: string }).innerText));
    case 'dialog-button': {
      await page
        .locator('.monaco-dialog-box')
        .last()
        .getByRole('button', { name: String(body.button), exact: true })
        .click({ timeout: 10_000 });
      return true;
    }
    case 'chat-button': {
      // Clicks a button a participant added to its answer (stream.button), in the latest answer that
      // has one, and returns that answer's text. A moment after an answer ends, what it showed before
      // its final text folds into a closed <details> titled "Completed N steps": with `inSight`, the
      // button must be shown without opening that fold (and the text returned is what is shown);
      // otherwise the fold is opened when the button is in it (and the text is all of the answer's).
      // `pending`: the answer is still under way (it waits for the click), so nothing folds yet.
      const name = new RegExp(`^${String(body.text).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`);
      const answer = page.locator('.interactive-item-container', { has: page.getByRole('button', { name, includeHidden: true }) }).last();
      const steps = answer.getByText(/Completed \d+ steps/);
      if (!body.pending) await foldClosed(answer);
      // The chat may render the answer again (closed) meanwhile: try again.
      for (let attempt = 1; ; attempt++) {
        try {
          const buttons = answer.getByRole('button', { name, includeHidden: true });
          const folded = await buttons.evaluateAll((all) => all.map((button) => button.closest('details:not([open])') !== null));
          let index = folded.lastIndexOf(false);
          if (index < 0) {
            if (body.inSight) throw new Error(`"${String(body.text)}" is folded out of sight; the answer shows: ${await shownText(answer)}`);
            await steps.click({ timeout: 2_000 });
            index = folded.length - 1;
          }
          const text = body.inSight ? await shownText(answer) : ((await answer.textContent({ timeout: 2_000 })) ?? '');
          await buttons.nth(index).click({ timeout: 2_000 });
          return text;
        } catch (error) {
          if (attempt >= 5) throw error;
          await page.waitForTimeout(1_000);
        }
      }
    }
    case 'chat-shown': {
      // What the latest answer that says `contains` (folded parts included) shows without opening a
      // fold, once VS Code has folded it (a finished answer folds what it showed before its final text).
      const answer = page.locator('.interactive-item-container', { hasText: String(body.contains) }).last();
      await answer.waitFor({ timeout: 10_000 });
      await foldClosed(answer);
      return shownText(answer);
    }
    case 'chat-confirm': {
      // Answers a confirmation VS Code shows in the chat before another extension's tool runs. Its
      // buttons are named by their tooltips: the primary one allows the tool for the session; "More
      // Actions..." opens the other answers ("Allow Once" …), of which `menuItem` is clicked when
      // given, else the first button whose name starts with `button`; in the last confirmation that
      // says `containing`. Returns what the confirmation said and the names of its buttons.
      const escaped = String(body.button ?? 'More Actions').replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      const name = new RegExp(`^${escaped}`);
      // The confirmation that says `containing` (earlier ones stay in the chat), once it has its buttons.
      const widget = page
        .locator('.interactive-session .chat-confirmation-widget-container', { hasText: String(body.containing ?? '') })
        .filter({ has: page.getByRole('button', { name }) })
        .last();
      await widget.waitFor({ state: 'visible', timeout: 60_000 });
      const said = (await widget.textContent()) ?? '';
      const buttons = await widget
        .getByRole('button')
        .evaluateAll((all) => all.map((b) => (b.getAttribute('aria-label') ?? b.textContent ?? '').trim()));
      await widget.getByRole('button', { name }).first().click({ timeout: 10_000 });
      if (body.menuItem !== undefined) {
        const item = page
          .locator('.monaco-menu')
          .getByRole('menuitem', { name: String(body.menuItem) })
          .first();
        try {
          await item.click({ timeout: 10_000 });
          // In this headless browser the click on the item sometimes does not take: the menu stays
          // open with the item highlighted and the tool waits. Enter on the hovered item answers then.
          const menu = page.locator('.monaco-menu').first();
          if (
            !(await menu.waitFor({ state: 'hidden', timeout: 3_000 }).then(
              () => true,
              () => false,
            ))
          ) {
            await item.hover({ timeout: 5_000 });
            await page.keyboard.press('Enter');
            await menu.waitFor({ state: 'hidden', timeout: 5_000 });
          }
        } catch (error) {
          const items = await page
            .locator('.monaco-menu')
            .getByRole('menuitem')
            .allInnerTexts()
            .catch(() => []);
          throw new Error(`no menu item "${String(body.menuItem)}" after ${name}; the menu holds ${JSON.stringify(items)} (${String(error)})`);
        }
      }
      return { said, buttons };
    }
    case 'quick-pick-check': {
      // In a quick pick with checkboxes another command opened: checks the rows with these labels, then accepts.
      const rows = page.locator('.quick-input-widget .quick-input-list .monaco-list-row');
      await rows.first().waitFor({ state: 'visible', timeout: 15_000 });
      for (const label of body.labels as string[]) {
        const row = rows.filter({ hasText: label }).first();
        await row.locator('.quick-input-list-checkbox, input[type="checkbox"], [role="checkbox"]').first().click({ timeout: 10_000 });
      }
      await page.locator('.quick-input-widget').getByRole('button', { name: 'OK' }).click({ timeout: 10_000 });
      return true;
    }
    case 'screenshot': {
      const name = String(body.name);
      const dir = body.docs ? DOCS : RESULTS;
      mkdirSync(dir, { recursive: true });
      const path = join(dir, `${name}.png`);
      if (body.gauge) {
        await page.locator('.statusbar-item[id*="longrun.gauge"]').first().hover();
        await page.waitForTimeout(1_200);
        await page.screenshot({ path, clip: { x: 700, y: 450, width: 700, height: 450 } });
      } else if (body.chat) {
        // Open the folded steps of the last answer, where the compaction line is.
        await page
          .getByText(/Completed \d+ steps/)
          .last()
          .click({ timeout: 5_000 })
          .catch(() => undefined);
        await page.waitForTimeout(500);
        const panel = page.locator('.interactive-session').first();
        await panel.screenshot({ path });
      } else {
        await page.screenshot({ path });
      }
      await page.mouse.move(10, 10);
      return path;
    }
    default:
      throw new Error(`unknown action ${String(body.action)}`);
  }
}

/** An item's text without what its closed folds hold (their titles stay): what is shown without opening one. */
async function shownText(item: ReturnType<Page['locator']>): Promise<string> {
  return item.evaluate((element) => {
    const copy = element.cloneNode(true) as typeof element;
    for (const fold of copy.querySelectorAll('details:not([open])')) {
      for (const child of [...fold.children]) if (child.tagName !== 'SUMMARY') child.remove();
    }
    return copy.textContent ?? '';
  });
}

/**
 * Waits until VS Code has folded a finished answer: its fold is made open and closed on the next
 * frame. An answer with nothing to fold has none, and the wait ends after 10 s.
 */
async function foldClosed(answer: ReturnType<Page['locator']>): Promise<void> {
  await answer
    .locator('details.completed-response-disclosure:not([open])')
    .waitFor({ state: 'attached', timeout: 10_000 })
    .catch(() => undefined);
}

/**
 * The row of the chat's request whose text contains `text`, scrolled into view. The chat draws only
 * the rows in view: it is scrolled up until the row is drawn.
 */
async function requestRow(page: Page, text: string): Promise<ReturnType<Page['locator']>> {
  const row = page.locator('.interactive-session .monaco-list-row.request').filter({ has: page.locator('.value', { hasText: text }) });
  const list = page.locator('.interactive-session .interactive-list').first();
  for (let scrolls = 0; scrolls < 30 && (await row.count()) === 0; scrolls++) {
    await list.hover().catch(() => undefined);
    await page.mouse.wheel(0, -600);
    await page.waitForTimeout(150);
  }
  await row.first().scrollIntoViewIfNeeded({ timeout: 10_000 });
  return row.first();
}

function collectLogs(userDataDir: string): void {
  const logs = join(userDataDir, 'logs');
  if (!existsSync(logs)) return;
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (/exthost|Longrun|renderer|remoteagent/i.test(path) && name.endsWith('.log')) {
        cpSync(path, join(RESULTS, 'logs', path.slice(logs.length + 1).replace(/[\\/]/g, '__')));
      }
    }
  };
  mkdirSync(join(RESULTS, 'logs'), { recursive: true });
  walk(logs);
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

async function closeQuietly(browser: Browser): Promise<void> {
  await browser.close().catch(() => undefined);
}

function indent(text: string): string {
  return text
    .split('\n')
    .slice(0, 12)
    .map((line) => `      ${line}`)
    .join('\n');
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    say(String(error instanceof Error ? error.stack : error));
    say('e2e: 0 passed, 1 failed');
    process.exit(1);
  },
);
