/**
 * A native provider in a real VS Code: an endpoint of Anthropic's kind, added to the settings as a
 * user adds it, against the loopback stand-in of Anthropic's Messages API (its wire format, its
 * caching, its usage). A chat without a key, then with one; a tool loop; a compaction.
 */
import * as assert from 'assert';
import * as vscode from 'vscode';
import { anthropicStandIn, api, chat, entries, gaugeInDom, newConversation, ui, waitFor } from './harness';

const CLAUDE = { vendor: 'longrun', id: 'claude/claude-scripted' };

const chatText = async (): Promise<string> => (await ui<string[]>('chat-text')).join('\n');
const completions = async () => (await anthropicStandIn.requests()).filter((r) => r.path === '/v1/messages');

describe('providers: Claude through Anthropic’s own API', function () {
  this.timeout(600_000);
  const config = () => vscode.workspace.getConfiguration('longrun');
  let saved: unknown;

  before(async () => {
    await anthropicStandIn.reset();
    saved = config().inspect('endpoints')?.globalValue;
    const endpoint = {
      name: 'claude',
      provider: 'anthropic',
      baseUrl: anthropicStandIn.url(),
      models: [
        { id: 'claude-scripted', name: 'Claude stand-in', contextWindow: 128_000, maxOutputTokens: 500 },
        { id: 'claude-scripted-small', name: 'Claude stand-in (small)', contextWindow: 8_192, maxOutputTokens: 512 },
      ],
    };
    await config().update('endpoints', [...((saved as unknown[] | undefined) ?? []), endpoint], vscode.ConfigurationTarget.Global);
    await waitFor('the Anthropic endpoint’s models in the picker', async () => (await vscode.lm.selectChatModels(CLAUDE))[0]);
  });

  after(async () => {
    await config().update('endpoints', saved, vscode.ConfigurationTarget.Global);
    await vscode.commands.executeCommand('longrun.setApiKey', 'claude', '');
  });

  it('says the endpoint has no API key and how to store one, and sends nothing', async () => {
    await newConversation();
    await chat('hello claude', CLAUDE);
    await waitFor('the message in the chat', async () => (await chatText()).includes('has no API key'));
    assert.match(await chatText(), /"claude" \(anthropic\) has no API key\. Run "Longrun: Set API Key"/);
    assert.deepEqual(await completions(), []);
  });

  it('answers through the Messages API once the key is stored, and the gauge counts the turn', async () => {
    await vscode.commands.executeCommand('longrun.setApiKey', 'claude', 'e2e-test-key');
    await newConversation();
    await chat('hello claude, are you there', CLAUDE);
    await waitFor('the reply in the chat', async () => (await chatText()).includes('Offline scripted model: I received your message'));
    const [request] = await completions();
    assert.ok(request, 'the request reached the stand-in');
    assert.equal(request.model, 'claude-scripted');
    assert.equal(request.status, 200);
    assert.ok(JSON.stringify(request.body).includes('hello claude, are you there'));
    const gauge = await waitFor('the gauge to show the turn', async () => {
      const g = await gaugeInDom();
      return /\d+%/.test(g.text) ? g : undefined;
    });
    assert.match(gauge.ariaLabel, /^Longrun context/);
  });

  it('runs a tool loop whose second request carries the first call and its result, and reads its prefix from the cache when it marks one', async () => {
    await newConversation();
    await anthropicStandIn.reset();
    await anthropicStandIn.script([
      { toolCalls: [{ name: 'read_file', arguments: { path: 'src/big-1.ts' } }] },
      { toolCalls: [{ name: 'read_file', arguments: { path: 'src/big-2.ts' } }] },
      { text: 'Both files are read.' },
    ]);
    await chat('read two files one after the other', CLAUDE);
    const loop = (await completions()).filter((r) => !r.summary);
    assert.equal(loop.length, 3, 'three steps, each one request');
    const [first, second] = loop as [(typeof loop)[number], (typeof loop)[number]];
    const body = JSON.stringify(second.body);
    assert.match(body, /"type":"tool_use"[^}]*"name":"read_file"/, 'the call');
    assert.match(body, /"type":"tool_result"/, 'its result');
    assert.ok(body.includes('item1_0'), 'the file read in the first step');
    assert.ok(first.billed && second.billed, 'both were billed');
    if (body.includes('"cache_control"')) {
      // Longrun marks breakpoints: everything the first request sent is read from the cache.
      assert.ok(second.billed.cacheRead > 0, `the second request read from the cache: ${JSON.stringify(second.billed)}`);
    } else {
      // No breakpoint, so Anthropic caches nothing: every request is billed in full.
      assert.equal(second.billed.cacheRead + second.billed.cacheWrite5m + second.billed.cacheWrite1h, 0);
    }
    await waitFor('the answer after the loop', async () => (await chatText()).includes('Both files are read.'));
  });

  it('compacts with a summary the Messages API writes, and the next request carries it', async () => {
    await newConversation();
    await anthropicStandIn.reset();
    for (let i = 6; i <= 8; i++) await chat(`please read src/big-${i}.ts`, CLAUDE);
    assert.equal(await vscode.commands.executeCommand('longrun.compact'), 'compacted');
    const entry = (await entries()).at(-1)!;
    assert.equal(entry.fallback, false, 'the summary was written by the model');
    const summaries = (await completions()).filter((r) => r.summary);
    assert.equal(summaries.length, 1);
    assert.equal(summaries[0]!.status, 200);
    await chat('what did we do so far', CLAUDE);
    const next = (await completions()).filter((r) => !r.summary).at(-1)!;
    assert.ok(JSON.stringify(next.body).includes(`Session Summary (Compaction Round ${entry.round})`));
    const longrun = await api();
    assert.ok((await longrun.session.current())?.view().length, 'the conversation goes on');
  });
});
