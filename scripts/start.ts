/**
 * `npm start`: VS Code (code-server) with Longrun installed, served at http://127.0.0.1:8080
 * (`LONGRUN_PORT`), opening `LONGRUN_WORKSPACE` or a small demo workspace. The model:
 * `OPENAI_BASE_URL` / `OPENAI_API_KEY` / `LONGRUN_MODEL` when set; else a local Ollama or LM Studio
 * when one answers; else the offline scripted model (a test double, labelled as such).
 */
import { cpSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { startScriptedModelServer, type ScriptedModelServer } from './scripted-model/server';
import { EXTENSION_FILES, installUnpacked, QUIET_SETTINGS, ROOT, SANDBOX, startCodeServer, writeUserSettings } from './sandbox';

interface ModelChoice {
  readonly label: string;
  readonly endpoint: { name: string; baseUrl: string; models: Array<Record<string, unknown>> };
  readonly apiKey?: string;
  readonly server?: ScriptedModelServer;
}

async function listModels(baseUrl: string): Promise<string[] | undefined> {
  try {
    const response = await fetch(`${baseUrl}/models`, { signal: AbortSignal.timeout(1_500) });
    if (!response.ok) return undefined;
    const body = (await response.json()) as { data?: Array<{ id?: unknown }> };
    return (body.data ?? []).map((m) => m.id).filter((id): id is string => typeof id === 'string');
  } catch {
    return undefined;
  }
}

async function chooseModel(): Promise<ModelChoice> {
  const baseUrl = process.env.OPENAI_BASE_URL?.replace(/\/+$/, '');
  if (baseUrl) {
    const id = process.env.LONGRUN_MODEL ?? 'gpt-4o-mini';
    return {
      label: `${id} at ${baseUrl} (OPENAI_BASE_URL)`,
      endpoint: { name: 'openai', baseUrl, models: [{ id }] },
      ...(process.env.OPENAI_API_KEY ? { apiKey: process.env.OPENAI_API_KEY } : {}),
    };
  }
  for (const [name, url, product] of [
    ['ollama', 'http://127.0.0.1:11434/v1', 'Ollama'],
    ['lmstudio', 'http://127.0.0.1:1234/v1', 'LM Studio'],
  ] as const) {
    const ids = await listModels(url);
    if (ids && ids.length > 0) {
      const wanted = process.env.LONGRUN_MODEL;
      const chosen = wanted && ids.includes(wanted) ? [wanted, ...ids.filter((i) => i !== wanted)] : ids;
      return { label: `${chosen[0]} on ${product} at ${url}`, endpoint: { name, baseUrl: url, models: chosen.slice(0, 12).map((id) => ({ id })) } };
    }
  }
  const server = await startScriptedModelServer({ port: 0 });
  return {
    label: `the offline scripted model at ${server.url} (a stand-in that follows a script; set OPENAI_BASE_URL or run Ollama for a real model)`,
    endpoint: {
      name: 'offline',
      baseUrl: server.url,
      models: [
        { id: 'scripted', name: 'Offline scripted model', contextWindow: 128_000, maxOutputTokens: 1_000 },
        { id: 'scripted-small', name: 'Offline scripted model (8k window)', contextWindow: 8_192, maxOutputTokens: 512 },
      ],
    },
    server,
  };
}

function demoWorkspace(): string {
  const given = process.env.LONGRUN_WORKSPACE;
  if (given) {
    const path = resolve(given);
    if (!existsSync(path)) throw new Error(`LONGRUN_WORKSPACE does not exist: ${path}`);
    return path;
  }
  const target = join(SANDBOX, 'demo-workspace');
  if (!existsSync(target)) cpSync(join(ROOT, 'demo', 'workspace'), target, { recursive: true });
  return target;
}

async function main(): Promise<void> {
  const port = Number(process.env.LONGRUN_PORT ?? 8080);
  if (!Number.isInteger(port) || port <= 0 || port > 65_535) throw new Error(`LONGRUN_PORT must be a port number, not "${process.env.LONGRUN_PORT}"`);
  const home = join(SANDBOX, 'start');
  const userDataDir = join(home, 'user-data');
  const extensionsDir = join(home, 'extensions');
  mkdirSync(home, { recursive: true });
  installUnpacked(extensionsDir, ROOT, EXTENSION_FILES);

  const model = await chooseModel();
  const settingsFile = join(userDataDir, 'User', 'settings.json');
  let existing: Record<string, unknown> = {};
  try {
    existing = JSON.parse(readFileSync(settingsFile, 'utf8')) as Record<string, unknown>;
  } catch {
    existing = {};
  }
  writeUserSettings(userDataDir, { ...QUIET_SETTINGS, ...existing, 'longrun.endpoints': [model.endpoint] });

  const workspace = demoWorkspace();
  const firstModel = String(model.endpoint.models[0]?.id ?? '');
  const codeServer = await startCodeServer({
    port,
    userDataDir,
    extensionsDir,
    workspace,
    logFile: join(home, 'code-server.log'),
    env: {
      // Longrun opens the chat on this model once it is ready (the sandbox shows no chat until then):
      // what is typed before Longrun is known goes to VS Code's own chat setup, a Copilot sign-in.
      LONGRUN_OPEN_CHAT_MODEL: `${model.endpoint.name}/${firstModel}`,
      // Moved into VS Code's secret storage when the extension starts; never written to settings.
      ...(model.apiKey ? { LONGRUN_API_KEY: model.apiKey, LONGRUN_API_KEY_ENDPOINT: model.endpoint.name } : {}),
    },
  });
  process.stdout.write(
    [
      '',
      `Longrun is running in VS Code at http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`,
      `Workspace: ${workspace}`,
      `Model: ${model.label}`,
      'Chat with @longrun in the chat panel. Press Ctrl-C to stop.',
      '',
    ].join('\n'),
  );

  let stopping = false;
  const stop = async (): Promise<void> => {
    if (stopping) return;
    stopping = true;
    process.stdout.write('\nStopping…\n');
    await codeServer.stop();
    await model.server?.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());
  codeServer.process.once('exit', (code) => {
    if (stopping) return;
    process.stderr.write(`code-server exited (${code ?? 'signal'}); see ${join(home, 'code-server.log')}\n`);
    void model.server?.close().finally(() => process.exit(1));
  });
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
