/**
 * A real model behind a real server: llama.cpp's `llama-server` with SmolLM2-135M-Instruct, started
 * with a 4,096-token window, its own tokenizer and chat template, behind a loopback proxy that
 * records what it answered and can slow its stream down. Set up as a user sets up a local server:
 * an endpoint with the model's id and nothing else, so that the window comes from the server.
 */
import * as assert from 'assert';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as vscode from 'vscode';
import { SUMMARY_PREFIX } from '../../../src/core/history';
import { isSummaryRequest } from '../../../scripts/scripted-model/scenarios';
import type { ChatCompletionRequest } from '../../../scripts/scripted-model/wire';
import type { ProxiedRequest, StreamPace } from '../real-model-proxy';
import { api, entries, idle, newConversation, ui, waitFor } from './harness';

const WINDOW = 4_096;
const LOCAL = { vendor: 'longrun', id: 'llama/smollm2' };
/** The same server, its model declared with a larger window than the server runs it with. */
const DECLARED = { vendor: 'longrun', id: 'llama-declared/smollm2' };
/** A turn on two shared processors: the model reads at tens of tokens a second when the machine is busy. */
const TURN_MS = 600_000;

function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run the suites through "npm run test:e2e".`);
  return value;
}

const realModel = {
  url: (): string => env('LONGRUN_E2E_REAL_MODEL_URL'),
  control: (): string => env('LONGRUN_E2E_REAL_MODEL_URL').replace(/\/v1$/, ''),
  requests: async (): Promise<ProxiedRequest[]> => (await (await fetch(`${realModel.control()}/__control/requests`)).json()) as ProxiedRequest[],
  pace: async (pace: StreamPace): Promise<void> => {
    await fetch(`${realModel.control()}/__control/pace`, { method: 'POST', body: JSON.stringify(pace) });
  },
  /** The server's own tokenizer: how many tokens it makes of `text`. */
  tokens: async (text: string): Promise<number> => {
    const response = await fetch(`${realModel.control()}/tokenize`, { method: 'POST', body: JSON.stringify({ content: text }) });
    return ((await response.json()) as { tokens: unknown[] }).tokens.length;
  },
};

const chatText = async (): Promise<string> => (await ui<string[]>('chat-text')).join('\n');
const completions = async (since: number): Promise<ProxiedRequest[]> => (await realModel.requests()).filter((r) => r.receivedAt >= since);
const isSummary = (r: ProxiedRequest): boolean => isSummaryRequest(r.body as ChatCompletionRequest);

/** Sends a chat request and waits until the participant has finished it, as long as a slow machine needs. */
async function chat(prompt: string, selector: { vendor: string; id: string }): Promise<void> {
  const longrun = await api();
  await idle();
  const before = longrun.participant.turns().completed;
  await vscode.commands.executeCommand('workbench.action.chat.open', { query: `@longrun ${prompt}`, modelSelector: selector });
  await waitFor(
    'the participant to finish the request',
    () => longrun.participant.turns().completed > before && longrun.participant.turns().active === 0,
    TURN_MS,
  );
}

/** About `words` words that the tokenizer cannot merge much. */
function padding(turn: number, words: number): string {
  return Array.from({ length: words }, (_, j) => `w${turn}x${j}`).join(' ');
}

describe('real model: llama-server with a 4,096-token window', function () {
  this.timeout(40 * 60_000);
  const config = () => vscode.workspace.getConfiguration('longrun');
  let savedEndpoints: unknown;
  let savedIdle: unknown;

  before(async () => {
    savedEndpoints = config().inspect('endpoints')?.globalValue;
    savedIdle = config().inspect('timeouts.idleSeconds')?.globalValue;
    const endpoints = [
      { name: 'llama', baseUrl: realModel.url(), models: [{ id: 'smollm2', maxOutputTokens: 24 }] },
      { name: 'llama-declared', baseUrl: realModel.url(), models: [{ id: 'smollm2', contextWindow: 32_768, maxOutputTokens: 24 }] },
    ];
    await config().update('endpoints', [...((savedEndpoints as unknown[] | undefined) ?? []), ...endpoints], vscode.ConfigurationTarget.Global);
    await waitFor('the real model in the picker', async () => (await vscode.lm.selectChatModels(LOCAL))[0]);
  });

  after(async () => {
    await realModel.pace({});
    await config().update('endpoints', savedEndpoints, vscode.ConfigurationTarget.Global);
    await config().update('timeouts.idleSeconds', savedIdle, vscode.ConfigurationTarget.Global);
  });

  it("takes the 4,096-token window from the server, and the gauge agrees with the server's own prompt_tokens from the second request on", async () => {
    await newConversation();
    const longrun = await api();
    const errors: string[] = [];
    const overheads: number[] = [];
    for (let turn = 1; turn <= 4; turn++) {
      const message = `Turn ${turn}. Say hello in one short sentence. ${padding(turn, 40)}`;
      const gauge = (await longrun.registry.current())?.count().tokens;
      const since = Date.now();
      await chat(message, LOCAL);
      const sent = (await completions(since)).filter((r) => !isSummary(r));
      const first = sent[0];
      assert.ok(first?.status === 200 && first.usage, `turn ${turn} was answered with its usage: ${JSON.stringify(sent.map((r) => r.status))}`);
      if (turn === 1) {
        await waitFor('the window the server states', () => longrun.session.modelContext().whole?.limit === WINDOW || undefined);
        longrun.gauge.update();
        assert.match(longrun.gauge.current().tooltipMarkdown, /Window 4,096 tokens, from the server's model list/);
        overheads.push(first.usage.prompt_tokens - (await realModel.tokens(message)));
        continue;
      }
      assert.ok(gauge !== undefined, 'the gauge counted the conversation before the turn');
      // The gauge counted the view before the message was added: the message, as the server reads it
      // within its chat template (`<|im_start|>user\n…<|im_end|>\n`), is what the request adds.
      const expected = gauge + (await realModel.tokens(message)) + 5;
      const error = ((expected - first.usage.prompt_tokens) / first.usage.prompt_tokens) * 100;
      errors.push(`${error.toFixed(1)}%`);
      assert.ok(
        Math.abs(error) <= 5,
        `request ${turn}: the gauge's ${expected} against the server's ${first.usage.prompt_tokens} (${errors.join(', ')})`,
      );
    }
    writeFileSync(join(env('LONGRUN_E2E_ROOT'), 'test-results', 'real-model-gauge.txt'), `${errors.join(', ')}\n`);
    const room = longrun.session.modelContext().window?.limit ?? WINDOW;
    const [overhead] = overheads;
    assert.ok(
      overhead !== undefined && overhead < room / 2,
      `the server counts ${overhead} tokens of overhead, of the ${room} left for the conversation`,
    );
    const local = longrun.session.modelContext().requestOverhead;
    assert.ok(local <= room / 2, `Longrun's request overhead of ${local} tokens leaves the conversation at least half of ${room}`);
  });

  it('compacts with a summary the model itself wrote, and the next request carries it', async () => {
    // A 135M-parameter model samples its way into a loop now and then, which Longrun rightly turns
    // down; a conversation of its own is tried again, and one of three summaries must be used.
    const failures: string[] = [];
    for (let attempt = 1; attempt <= 3; attempt++) {
      await newConversation();
      for (let turn = 1; turn <= 3; turn++) {
        await chat(`Note ${turn}: the build script is scripts/build-${turn}.sh. Reply with one word. ${padding(turn, 120)}`, LOCAL);
      }
      const since = Date.now();
      assert.equal(await vscode.commands.executeCommand('longrun.compact'), 'compacted');
      const summaries = (await completions(since)).filter(isSummary);
      assert.ok(summaries.length >= 1, 'the summary was asked of the real model');
      assert.equal(summaries[0]!.status, 200, JSON.stringify(summaries[0]!.errorBody));
      const entry = (await entries()).at(-1)!;
      if (!entry.fallback) break;
      assert.match(entry.failure ?? '', /the summarizer's text was rejected/, 'the model answered; only its text was turned down');
      failures.push(entry.failure ?? '');
    }
    assert.ok(failures.length < 3, `a summary the model wrote was used in one of three conversations: ${failures.join('; ')}`);
    const next = Date.now();
    await chat('What is the build script of note 2? One line.', LOCAL);
    const request = (await completions(next)).find((r) => !isSummary(r));
    assert.ok(request?.status === 200, 'the next request was answered');
    assert.ok(JSON.stringify(request.body).includes(SUMMARY_PREFIX), 'the next request carries the summary');
  });

  it("recovers from the server's own overflow answer (HTTP 400, exceed_context_size_error) on a model declared larger than the server runs it", async () => {
    await newConversation();
    const longrun = await api();
    const since = Date.now();
    let refused: ProxiedRequest | undefined;
    for (let turn = 1; turn <= 3 && !refused; turn++) {
      await chat(`Part ${turn} of a long note; reply with one word. ${padding(turn, 350)}`, DECLARED);
      refused = (await completions(since)).find((r) => r.status === 400);
    }
    const statuses = (await completions(since)).map((r) => r.status);
    assert.deepEqual(
      statuses.filter((status) => status !== 200 && status !== 400),
      [],
      `the server answered every request, or refused it as over its window: ${JSON.stringify(statuses)}`,
    );
    if (refused) {
      const body = refused.errorBody as { error?: { type?: string; n_prompt_tokens?: number; n_ctx?: number } };
      assert.equal(body.error?.type, 'exceed_context_size_error', JSON.stringify(body));
      assert.equal(body.error?.n_ctx, WINDOW);
      assert.ok((body.error?.n_prompt_tokens ?? 0) > WINDOW, JSON.stringify(body));
    }
    assert.ok(refused, `the server refused a request over its window: ${JSON.stringify(statuses)}`);
    const after = (await completions(refused.receivedAt)).filter((r) => r.receivedAt > refused.receivedAt && !isSummary(r));
    assert.ok(
      after.some((r) => r.status === 200),
      `the request was sent again after compacting and answered: ${JSON.stringify(after.map((r) => r.status))}`,
    );
    assert.doesNotMatch(await chatText(), /The model request failed|no longer fits the model's context window/);
    assert.equal(longrun.session.modelContext().whole?.limit, WINDOW, 'the window the server stated is the one used from then on');
    // Whatever was learned on the way, the conversation goes on.
    const next = Date.now();
    await chat('Reply with one word: done.', DECLARED);
    const last = (await completions(next)).filter((r) => !isSummary(r)).at(-1);
    assert.equal(last?.status, 200, `the next request was answered: ${JSON.stringify((await completions(next)).map((r) => r.status))}`);
  });

  it('waits out a slow stream, and stops a stalled one after the idle limit without hanging the chat', async () => {
    await newConversation();
    const longrun = await api();
    await realModel.pace({ chunkDelayMs: 150 });
    let since = Date.now();
    await chat('Say hello slowly, in one sentence.', LOCAL);
    const slow = (await completions(since)).find((r) => !isSummary(r));
    assert.equal(slow?.outcome, 'answered', 'the slow stream was read to its end');
    assert.doesNotMatch(await chatText(), /went silent/);

    await config().update('timeouts.idleSeconds', 5, vscode.ConfigurationTarget.Global);
    await realModel.pace({ stallAfterChunks: 2, stallMs: 120_000 });
    since = Date.now();
    await chat('Say hello again, in one sentence.', LOCAL);
    const stalled = (await completions(since)).find((r) => !isSummary(r));
    assert.ok(Date.now() - since < 100_000, 'the turn ended before the stall did');
    assert.equal(stalled?.outcome, 'client-closed', 'Longrun gave up on the stalled stream');
    assert.match(await chatText(), /went silent for 5 s/);

    await realModel.pace({});
    since = Date.now();
    await chat('And once more: say hello.', LOCAL);
    const again = (await completions(since)).find((r) => !isSummary(r));
    assert.equal(again?.status, 200, 'the chat goes on');
    assert.equal(again?.outcome, 'answered');
    assert.equal(longrun.participant.turns().active, 0);
  });
});
