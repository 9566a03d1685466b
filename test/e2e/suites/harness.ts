/**
 * Helpers for the suites that run inside the real extension host. The outer test process drives
 * the browser (status bar, chat input, Command Palette, screenshots) on request, over loopback
 * HTTP; the loopback scripted model is programmed the same way.
 */
import * as vscode from 'vscode';
import type { LongrunApi } from '../../../src/extension';
import type { CompactionEntry, ConversationLog } from '../../../src/core/history';
import { activeEntries } from '../../../src/core/history';

export const EXTENSION_ID = 'longrun.longrun';
export const VENDOR = 'longrun';
export const MODEL = { vendor: VENDOR, id: 'offline/scripted' };
export const SMALL_MODEL = { vendor: VENDOR, id: 'offline/scripted-small' };
export const OVERFLOW_MODEL = { vendor: VENDOR, id: 'offline/scripted-overflow' };
export const SIX_K_MODEL = { vendor: VENDOR, id: 'offline/scripted-6k' };
export const TRUNCATING_MODEL = { vendor: VENDOR, id: 'offline/scripted-trunc' };
/** A 6,000-token window on a server that does not read `tool_choice`. */
export const CARELESS_MODEL = { vendor: VENDOR, id: 'offline/scripted-6k-tools' };

function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run the suites through "npm run test:e2e".`);
  return value;
}

export async function api(): Promise<LongrunApi> {
  const extension = vscode.extensions.getExtension<LongrunApi>(EXTENSION_ID);
  if (!extension) throw new Error(`${EXTENSION_ID} is not installed`);
  return extension.isActive ? extension.exports : extension.activate();
}

async function post(base: string, path: string, body: unknown): Promise<unknown> {
  const response = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body ?? null),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${path} answered ${response.status}: ${text}`);
  return text ? JSON.parse(text) : undefined;
}

/** Asks the outer process to act on the workbench in the browser. */
export function ui<T = unknown>(action: string, args: Record<string, unknown> = {}): Promise<T> {
  return post(env('LONGRUN_E2E_UI'), '/ui', { action, ...args }) as Promise<T>;
}

export interface StatusItem {
  readonly id: string;
  readonly text: string;
  readonly ariaLabel: string;
  readonly className: string;
  readonly background: string;
}

export async function gaugeInDom(): Promise<StatusItem> {
  const items = await ui<StatusItem[]>('statusbar');
  const gauge = items.find((i) => i.id.includes('longrun.gauge'));
  if (!gauge) throw new Error(`no gauge in the status bar: ${JSON.stringify(items.map((i) => i.id))}`);
  return gauge;
}

/** Programs the loopback scripted model. */
export const model = {
  url: (): string => env('LONGRUN_E2E_MODEL_CONTROL'),
  script: (steps: unknown[]) => post(model.url(), '/__control/script', steps),
  failSummaries: (step: unknown) => post(model.url(), '/__control/fail-summaries', step),
  setWindow: (modelId: string, window: number) => post(model.url(), '/__control/window', { model: modelId, window }),
  reset: () => post(model.url(), '/__control/reset', {}),
  requests: async (): Promise<RecordedRequest[]> => {
    const response = await fetch(`${model.url()}/__control/requests`);
    return (await response.json()) as RecordedRequest[];
  },
};

/** The tokens a stand-in billed a request for, by kind. */
export interface BilledTokens {
  readonly input: number;
  readonly cacheRead: number;
  readonly cacheWrite5m: number;
  readonly cacheWrite1h: number;
  readonly output: number;
}

/** Programs the loopback stand-in of Anthropic's Messages API, as `model` the OpenAI one. */
export const anthropicStandIn = {
  /** The API root Longrun's endpoint is given, `http://127.0.0.1:PORT/v1`. */
  url: (): string => env('LONGRUN_E2E_ANTHROPIC_URL'),
  control: (): string => env('LONGRUN_E2E_ANTHROPIC_URL').replace(/\/v1$/, ''),
  script: (steps: unknown[]) => post(anthropicStandIn.control(), '/__control/script', steps),
  reset: () => post(anthropicStandIn.control(), '/__control/reset', {}),
  requests: async (): Promise<Array<RecordedRequest & { readonly billed?: BilledTokens }>> => {
    const response = await fetch(`${anthropicStandIn.control()}/__control/requests`);
    return (await response.json()) as Array<RecordedRequest & { readonly billed?: BilledTokens }>;
  },
};

export interface RecordedRequest {
  readonly path: string;
  readonly model?: string;
  readonly body?: { messages?: Array<{ role: string; content?: unknown; tool_calls?: Array<{ id: string }>; tool_call_id?: string }> } & Record<
    string,
    unknown
  >;
  readonly promptTokens?: number;
  readonly summary: boolean;
  readonly status: number | null;
  /** How the request ended so far: `answered`, `client-closed` (the client gave up), `pending`… */
  readonly outcome?: string;
  readonly truncated?: { readonly sentTokens: number; readonly droppedMessages: number };
  readonly receivedAt: number;
  readonly answeredAt?: number;
}

export async function waitFor<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value as T;
    } catch (error) {
      last = error;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out waiting for ${what}${last ? ` (${String(last)})` : ''}`);
}

/**
 * Waits until no request of the participant is running, so that a request still answering (one an
 * earlier test left, or one the driver typed) is not taken for the next one.
 */
export async function idle(): Promise<void> {
  const longrun = await api();
  await waitFor('the participant to finish what it was answering', () => longrun.participant.turns().active === 0, 120_000);
}

/**
 * Sends a chat request to @longrun with a Longrun model selected, through the chat panel, and
 * waits until the participant has finished it.
 */
export async function chat(prompt: string, selector = MODEL): Promise<void> {
  const longrun = await api();
  await idle();
  const before = longrun.participant.turns().completed;
  await vscode.commands.executeCommand('workbench.action.chat.open', { query: `@longrun ${prompt}`, modelSelector: selector });
  await waitFor(
    'the participant to finish the request',
    () => longrun.participant.turns().completed > before && longrun.participant.turns().active === 0,
    120_000,
  );
}

/**
 * Sends a request to @longrun with `selector`'s model and returns at once; `finished` settles when
 * the participant has finished it. `extra` goes to VS Code's chat.open as it is.
 */
export async function startChat(
  prompt: string,
  selector: { vendor: string; id: string } = MODEL,
  extra: Record<string, unknown> = {},
): Promise<{ finished: Promise<void> }> {
  const longrun = await api();
  await idle();
  const before = longrun.participant.turns().completed;
  await vscode.commands.executeCommand('workbench.action.chat.open', { query: `@longrun ${prompt}`, modelSelector: selector, ...extra });
  const finished = waitFor(
    'the participant to finish the request',
    () => longrun.participant.turns().completed > before && longrun.participant.turns().active === 0,
    180_000,
  ).then(() => undefined);
  finished.catch(() => undefined);
  return { finished };
}

/** The output of the last call of `toolName` in the conversation, as the model got it. */
export async function lastToolOutput(toolName: string): Promise<string> {
  for (const record of [...(await log())].reverse()) {
    if (record.type !== 'message') continue;
    for (const part of record.message.content) {
      if (part.type !== 'tool-result' || part.toolName !== toolName) continue;
      const output = part.output as unknown;
      if (typeof output === 'string') return output;
      if (typeof output === 'object' && output !== null && typeof (output as { value?: unknown }).value === 'string')
        return (output as { value: string }).value;
      return JSON.stringify(output);
    }
  }
  throw new Error(`no result of ${toolName} in the conversation`);
}

export async function log(): Promise<ConversationLog> {
  const conversation = await (await api()).registry.current();
  return conversation?.log() ?? [];
}

export async function entries(): Promise<CompactionEntry[]> {
  return activeEntries(await log());
}

export async function newConversation(): Promise<void> {
  await vscode.commands.executeCommand('longrun.newConversation');
}

/** Tool results in a chat-completions request that have no tool call before them. */
export function orphanToolResults(request: RecordedRequest): string[] {
  const calls = new Set<string>();
  const orphans: string[] = [];
  for (const m of request.body?.messages ?? []) {
    for (const call of m.tool_calls ?? []) calls.add(call.id);
    if (m.role === 'tool' && m.tool_call_id && !calls.has(m.tool_call_id)) orphans.push(m.tool_call_id);
  }
  return orphans;
}

export function requestText(request: RecordedRequest): string {
  return JSON.stringify(request.body?.messages ?? []);
}
