/**
 * `npm start`: VS Code (code-server) with Longrun installed, served at http://127.0.0.1:8080
 * (`LONGRUN_PORT`), opening `LONGRUN_WORKSPACE` or a small demo workspace. The model: the provider
 * the environment names (`provider-choice.ts`: `LONGRUN_PROVIDER`, `OPENAI_BASE_URL`,
 * `ANTHROPIC_API_KEY` with `ANTHROPIC_BASE_URL`, `GEMINI_API_KEY`, `OPENROUTER_API_KEY`,
 * `OPENAI_API_KEY`; `LONGRUN_MODEL`), or its offline stand-in when it has no key; else a local Ollama
 * or LM Studio when one answers; else the offline scripted model (a test double, labelled as such).
 */
import { cpSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { ProviderKind } from '../src/core/provider-kind';
import { errorText } from '../src/core/errors';
import { findModelId } from '../src/core/model-id';
import { listEndpointModels } from '../src/llm/openai-endpoint';
import { defaultApiRoot } from '../src/llm/providers/api-roots';
import { KEY_VARIABLES, providerFromEnvironment, type ProviderChoice } from './provider-choice';
import type { FormatName } from './scripted-model/formats/format';
import { startScriptedModelServer, type ScriptedModelServer } from './scripted-model/server';
import { EXTENSION_FILES, installUnpacked, QUIET_SETTINGS, ROOT, SANDBOX, startCodeServer, writeUserSettings } from './sandbox';

interface ModelChoice {
  readonly label: string;
  readonly endpoint: { name: string; provider?: ProviderKind; baseUrl?: string; models: Array<Record<string, unknown>> };
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
  const chosen = providerFromEnvironment(process.env);
  if (chosen && 'problem' in chosen) throw new Error(chosen.problem);
  if (chosen && (chosen.apiKey !== undefined || (chosen.kind === 'openai-compatible' && chosen.baseUrl !== undefined))) return providerModel(chosen);
  if (chosen) return offlineModel(chosen.kind);
  for (const [name, url, product] of [
    ['ollama', 'http://127.0.0.1:11434/v1', 'Ollama'],
    ['lmstudio', 'http://127.0.0.1:1234/v1', 'LM Studio'],
  ] as const) {
    const ids = await listModels(url);
    if (ids && ids.length > 0) {
      const wanted = process.env.LONGRUN_MODEL;
      const chosenIds = wanted && ids.includes(wanted) ? [wanted, ...ids.filter((i) => i !== wanted)] : ids;
      return {
        label: `${chosenIds[0]} on ${product} at ${url}`,
        endpoint: { name, baseUrl: url, models: chosenIds.slice(0, 12).map((id) => ({ id })) },
      };
    }
  }
  return offlineModel('openai-compatible');
}

/** A real provider, its key handed to the editor's secret storage. Its model list is asked, to say early when the model or the key is wrong. */
async function providerModel(chosen: ProviderChoice): Promise<ModelChoice> {
  const { kind, model, apiKey } = chosen;
  const baseUrl = chosen.baseUrl ?? defaultApiRoot(kind);
  if (baseUrl === undefined) throw new Error('OPENAI_BASE_URL is needed for an OpenAI-compatible server.');
  try {
    const ids = await listEndpointModels(baseUrl, apiKey, fetch, undefined, 10_000, kind);
    if (findModelId(ids, model) === undefined) {
      process.stderr.write(
        `Note: ${model} is not among the models ${baseUrl} lists (${ids.slice(0, 8).join(', ')}${ids.length > 8 ? ', …' : ''}); set LONGRUN_MODEL to one of them if requests fail.\n`,
      );
    }
  } catch (error) {
    process.stderr.write(`Note: could not list the models at ${baseUrl} (${errorText(error)}); starting with ${model} anyway.\n`);
  }
  const name = kind === 'openai-compatible' ? 'openai' : kind;
  return {
    label: `${model} through ${kind === 'openai-compatible' ? 'an OpenAI-compatible server' : `the ${kind} provider`} at ${baseUrl} (${chosen.because})`,
    endpoint: {
      name,
      ...(kind !== 'openai-compatible' ? { provider: kind } : {}),
      ...(chosen.baseUrl !== undefined || kind === 'openai-compatible' ? { baseUrl } : {}),
      models: [{ id: model }],
    },
    ...(apiKey ? { apiKey } : {}),
  };
}

/** The stand-in's models for each provider, named so that Longrun treats them as that provider's family. */
const OFFLINE_MODELS: Readonly<Record<ProviderKind, { format: FormatName; api: string; ids: [string, string] }>> = {
  'openai-compatible': { format: 'openai', api: "OpenAI's Chat Completions", ids: ['scripted', 'scripted-small'] },
  openai: { format: 'openai', api: "OpenAI's Responses API", ids: ['gpt-5-scripted', 'gpt-5-scripted-small'] },
  anthropic: { format: 'anthropic', api: "Anthropic's Messages API", ids: ['claude-scripted', 'claude-scripted-small'] },
  google: { format: 'google', api: 'the Gemini API', ids: ['gemini-2.5-scripted', 'gemini-2.5-scripted-small'] },
  openrouter: { format: 'openrouter', api: "OpenRouter's API", ids: ['anthropic/claude-scripted', 'anthropic/claude-scripted-small'] },
};

/** The offline scripted model, speaking the API of `kind`; a native provider's endpoint gets a placeholder key, which the stand-in accepts. */
async function offlineModel(kind: ProviderKind): Promise<ModelChoice> {
  const { format, api, ids } = OFFLINE_MODELS[kind];
  const [big, small] = ids;
  const server = await startScriptedModelServer({
    port: 0,
    format,
    models: [
      { id: big, window: 128_000, name: 'Offline scripted model', maxOutputTokens: 1_000 },
      { id: small, window: 8_192, name: 'Offline scripted model (small window)', maxOutputTokens: 512 },
    ],
  });
  const native = kind !== 'openai-compatible';
  const advice = native ? `set ${KEY_VARIABLES[kind]} for the real one` : 'set OPENAI_BASE_URL or run Ollama for a real model';
  return {
    label: `the offline scripted model speaking ${api} at ${server.url} (a stand-in that follows a script; ${advice})`,
    endpoint: {
      name: 'offline',
      ...(native ? { provider: kind } : {}),
      baseUrl: server.url,
      models: [
        { id: big, name: 'Offline scripted model', contextWindow: 128_000, maxOutputTokens: 1_000 },
        { id: small, name: 'Offline scripted model (8k window)', contextWindow: 8_192, maxOutputTokens: 512 },
      ],
    },
    ...(native ? { apiKey: 'offline-scripted-model' } : {}),
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
  // The model first: a wrong environment is said before anything is installed or started.
  const model = await chooseModel();
  const home = join(SANDBOX, 'start');
  const userDataDir = join(home, 'user-data');
  const extensionsDir = join(home, 'extensions');
  mkdirSync(home, { recursive: true });
  installUnpacked(extensionsDir, ROOT, EXTENSION_FILES);

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
