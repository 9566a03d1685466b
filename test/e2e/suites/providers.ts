/**
 * A native provider in a real VS Code: an endpoint of Anthropic's kind, added to the settings as a
 * user adds it, against the loopback stand-in of Anthropic's Messages API (its wire format, its
 * caching, its usage). A chat without a key, then with one; a tool loop; a compaction.
 */
import * as assert from 'assert';
import * as vscode from 'vscode';
import { anthropicStandIn, api, chat, entries, gaugeInDom, log, model, newConversation, ui, waitFor } from './harness';

const CLAUDE = { vendor: 'longrun', id: 'claude/claude-scripted' };
/** Claude Sonnet's prices, given to the stand-in's model through `longrun.models.overrides`: US dollars per million tokens. */
const PRICES = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75, cacheWrite1h: 6 };

const chatText = async (): Promise<string> => (await ui<string[]>('chat-text')).join('\n');
const completions = async () => (await anthropicStandIn.requests()).filter((r) => r.path === '/v1/messages');

describe('providers: Claude through Anthropic’s own API', function () {
  this.timeout(600_000);
  const config = () => vscode.workspace.getConfiguration('longrun');
  let saved: unknown;
  let savedOverrides: unknown;

  before(async () => {
    await anthropicStandIn.reset();
    saved = config().inspect('endpoints')?.globalValue;
    savedOverrides = config().inspect('models.overrides')?.globalValue;
    await config().update('models.overrides', { 'claude-scripted': PRICES }, vscode.ConfigurationTarget.Global);
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
    await config().update('models.overrides', savedOverrides, vscode.ConfigurationTarget.Global);
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

  it('runs a tool loop whose second request carries the first call and its result and reads its prefix from the cache; the tooltip shows the cost and the hit share', async () => {
    await newConversation();
    await anthropicStandIn.reset();
    await anthropicStandIn.script([
      { toolCalls: [{ name: 'read_file', arguments: { path: 'src/big-1.ts' } }] },
      { toolCalls: [{ name: 'read_file', arguments: { path: 'src/big-2.ts' } }] },
      { text: 'Both files are read.' },
    ]);
    await chat('read two files one after the other', CLAUDE);
    const requests = await completions();
    const loop = requests.filter((r) => !r.summary);
    assert.equal(loop.length, 3, 'three steps, each one request');
    const [first, second] = loop as [(typeof loop)[number], (typeof loop)[number]];
    const body = JSON.stringify(second.body);
    assert.match(body, /"type":"tool_use"[^}]*"name":"read_file"/, 'the call');
    assert.match(body, /"type":"tool_result"/, 'its result');
    assert.ok(body.includes('item1_0'), 'the file read in the first step');
    assert.ok(body.includes('"cache_control"'), 'the request marks what the provider should cache');
    assert.ok(first.billed && second.billed, 'both were billed');
    assert.ok(first.billed.cacheWrite5m > 0, `the first request wrote the cache: ${JSON.stringify(first.billed)}`);
    // What the first request wrote, the second reads: all of the first's input, no more written again.
    assert.ok(
      second.billed.cacheRead >= first.billed.cacheRead + first.billed.cacheWrite5m,
      `the second request read the first one's prefix from the cache: ${JSON.stringify({ first: first.billed, second: second.billed })}`,
    );
    await waitFor('the answer after the loop', async () => (await chatText()).includes('Both files are read.'));

    // The gauge's tooltip: the share of the input read from the cache and the cost, as the stand-in billed them.
    const billed = requests.map((r) => r.billed!);
    const sum = (pick: (b: (typeof billed)[number]) => number): number => billed.reduce((total, b) => total + pick(b), 0);
    const input = sum((b) => b.input + b.cacheRead + b.cacheWrite5m + b.cacheWrite1h);
    const expectedShare = (sum((b) => b.cacheRead) / input) * 100;
    const expectedCost =
      (sum((b) => b.input) * PRICES.input +
        sum((b) => b.cacheRead) * PRICES.cacheRead +
        sum((b) => b.cacheWrite5m) * PRICES.cacheWrite +
        sum((b) => b.cacheWrite1h) * PRICES.cacheWrite1h +
        sum((b) => b.output) * PRICES.output) /
      1_000_000;
    const longrun = await api();
    const tooltip = await waitFor('the usage table in the tooltip', () => {
      longrun.gauge.update();
      const text = longrun.gauge.current().tooltipMarkdown;
      return text.includes('| Cache hit share |') ? text : undefined;
    });
    const share = /\| Cache hit share \| ([\d.]+)% \| ([\d.]+)% \|/.exec(tooltip);
    assert.ok(share, `the hit share in the tooltip: ${tooltip}`);
    assert.ok(Math.abs(Number(share[2]) - expectedShare) <= 0.1, `conversation hit share ${share[2]}% against ${expectedShare}% billed`);
    assert.ok(Number(share[1]) > 0, 'the last request read from the cache');
    const cost = /\| Cost(?: \(catalogue of \d{4}-\d{2}-\d{2}\))? \| \$([\d.]+) \| \$([\d.]+) \|/.exec(tooltip);
    assert.ok(cost, `the cost in the tooltip: ${tooltip}`);
    assert.ok(
      // Shown to its last digit: off by half of it at most, besides the 1% Longrun may be off the bill.
      Math.abs(Number(cost[2]) - expectedCost) <= 0.5 * 10 ** -(cost[2]!.split('.')[1]?.length ?? 0) + expectedCost * 0.01,
      `conversation cost $${cost[2]} against $${expectedCost} billed`,
    );
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
    assert.ok((await longrun.registry.current())?.view().length, 'the conversation goes on');
  });
});

describe('providers: an endpoint that names no models', function () {
  this.timeout(300_000);
  const config = () => vscode.workspace.getConfiguration('longrun');
  const LISTED = { vendor: 'longrun', id: 'listed/scripted' };
  let saved: unknown;

  before(() => {
    saved = config().inspect('endpoints')?.globalValue;
  });

  after(async () => {
    await config().update('endpoints', saved, vscode.ConfigurationTarget.Global);
  });

  it('offers in the model picker every model its server lists, and answers through one', async () => {
    const endpoint = { name: 'listed', baseUrl: `${model.url()}/v1` };
    await config().update('endpoints', [...((saved as unknown[] | undefined) ?? []), endpoint], vscode.ConfigurationTarget.Global);
    const listed = await waitFor('the listed models in the picker', async () => {
      const models = await vscode.lm.selectChatModels({ vendor: 'longrun' });
      const mine = models.filter((m) => m.id.startsWith('listed/'));
      return mine.length > 1 ? mine : undefined;
    });
    assert.ok(
      listed.some((m) => m.id === LISTED.id),
      listed.map((m) => m.id).join(', '),
    );
    await model.reset();
    await newConversation();
    await chat('hello listed model', LISTED);
    await waitFor('the reply in the chat', async () => (await chatText()).includes('Offline scripted model: I received your message'));
    const requests = (await model.requests()).filter((r) => r.path === '/v1/chat/completions');
    assert.equal(requests.at(-1)?.model, 'scripted');
  });
});

describe('providers: Claude Sonnet 4.5 by its alias, its window stated by the Models API', function () {
  this.timeout(900_000);
  const config = () => vscode.workspace.getConfiguration('longrun');
  const SONNET = { vendor: 'longrun', id: 'sonnet/claude-sonnet-4-5' };
  let saved: unknown;

  before(async () => {
    await anthropicStandIn.reset();
    saved = config().inspect('endpoints')?.globalValue;
    // As a new user sets it up: the alias alone, no window and no prices; the server lists the dated snapshot.
    const endpoint = { name: 'sonnet', provider: 'anthropic', baseUrl: anthropicStandIn.url(), models: [{ id: 'claude-sonnet-4-5' }] };
    await config().update('endpoints', [...((saved as unknown[] | undefined) ?? []), endpoint], vscode.ConfigurationTarget.Global);
    await vscode.commands.executeCommand('longrun.setApiKey', 'sonnet', 'e2e-sonnet-key');
    await waitFor('the Sonnet endpoint’s model in the picker', async () => (await vscode.lm.selectChatModels(SONNET))[0]);
  });

  after(async () => {
    await config().update('endpoints', saved, vscode.ConfigurationTarget.Global);
    await vscode.commands.executeCommand('longrun.setApiKey', 'sonnet', '');
  });

  it('keeps the stated window over 25 messages, counts every billed request and shows a cost from the catalogue', async () => {
    await newConversation();
    for (let i = 1; i <= 25; i++) await chat(`please read src/big-${((i - 1) % 15) + 1}.ts`, SONNET);
    const requests = (await completions()).filter((r) => r.status === 200);
    assert.ok(requests.length >= 25, `every message reached the stand-in: ${requests.length}`);
    assert.ok(
      requests.every((r) => r.model === 'claude-sonnet-4-5'),
      'Longrun sends the alias it was given',
    );

    const longrun = await api();
    longrun.gauge.update();
    const tooltip = longrun.gauge.current().tooltipMarkdown;
    assert.match(tooltip, /Window 20,000 tokens/, `the window the Models API states: ${tooltip}`);
    assert.doesNotMatch(tooltip, /server cut/, 'no prompt taken for one the server cut');
    const cost = /\| Cost[^|]*\| \$([\d.]+) \| \$([\d.]+) \|/.exec(tooltip);
    assert.ok(cost, `a cost from the catalogue's prices for claude-sonnet-4-5: ${tooltip}`);
    assert.ok(Number(cost[2]) > 0, `the conversation cost more than nothing: ${cost[2]}`);
    assert.doesNotMatch(tooltip, /no price known/);

    const records = await log();
    const compactions = records.filter((r) => r.type === 'compaction');
    assert.ok(
      compactions.every((r) => r.type === 'compaction' && r.entry.reason !== 'overflow'),
      'no request overflowed the window',
    );
    // About 25 reads of 600 tokens: a 20,000-token window fills once or twice, not at every message.
    const compacted = records.filter((r) => r.type === 'compaction' || r.type === 'pruning').length;
    assert.ok(compacted <= 5, `compacted ${compacted} times in 25 messages`);
    const shown = records.reduce((sum, r) => sum + (r.type === 'usage' ? r.usage.inputTokens : 0), 0);
    const billed = (await completions()).reduce(
      (sum, r) => sum + (r.billed ? r.billed.input + r.billed.cacheRead + r.billed.cacheWrite5m + r.billed.cacheWrite1h : 0),
      0,
    );
    assert.equal(shown, billed, 'every billed input token is in the conversation’s totals');
  });
});
