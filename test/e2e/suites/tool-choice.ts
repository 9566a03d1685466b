/**
 * A small local model on a server that does not read `tool_choice` (Ollama's OpenAI layer): asked
 * for a summary as a continuation of the conversation, with its tools and `tool_choice: "none"`, the
 * model calls a tool instead. Longrun asks again without tools, remembers that this model needs it,
 * and the conversation compacts on its own with summaries the model wrote. Summaries that keep failing
 * are not asked for at every compaction, and the chat says so once.
 */
import * as assert from 'assert';
import * as vscode from 'vscode';
import { api, CARELESS_MODEL, chat, entries, gaugeInDom, model, newConversation, SIX_K_MODEL, ui, type RecordedRequest } from './harness';

const chatText = async (): Promise<string> => (await ui<string[]>('chat-text')).join('\n');

const offersTools = (r: RecordedRequest): boolean => Array.isArray(r.body?.tools) && r.body.tools.length > 0;

describe('Longrun against a server that ignores tool_choice', function () {
  this.timeout(900_000);

  // The turns are plain text, so pruning has nothing to take: only summaries compact them.
  before(async () => {
    await model.reset();
  });

  // About 150 tokens of words that no tokenizer compresses much.
  const padding = (i: number): string => Array.from({ length: 60 }, (_, j) => `note${i}x${j}`).join(' ');

  it('compacts on its own at a 6,000-token window with summaries the model wrote, sending the tools with a summary request once', async () => {
    await newConversation();
    const before = (await model.requests()).length;
    for (let i = 1; i <= 24; i++) await chat(`turn ${i}: ${padding(i)}`, CARELESS_MODEL);

    const requests = (await model.requests()).slice(before).filter((r) => r.model === 'scripted-6k-tools');
    const summaries = requests.filter((r) => r.summary);
    const automatic = (await entries()).filter((e) => e.reason === 'threshold');
    assert.ok(automatic.length >= 2, `${automatic.length} automatic compactions in 24 turns`);
    for (const entry of automatic) {
      assert.equal(entry.fallback, false, `round ${entry.round} was written by the model, not the extractive fallback (${entry.failure ?? ''})`);
      assert.match(entry.summary, /## Session Summary \(Compaction Round \d+\)/);
    }
    // The first summary request continued the conversation and got a tool call; every one after it
    // was the plain request, which the model answered with a summary.
    const withTools = summaries.filter(offersTools);
    assert.equal(withTools.length, 1, `summary requests that offered tools: ${withTools.map((r) => r.body?.tool_choice).join(', ')}`);
    assert.equal(summaries[0], withTools[0], 'the one that offered tools came first');
    assert.equal(withTools[0]!.body?.tool_choice, 'none');
    assert.ok(summaries.length >= automatic.length + 1, `${summaries.length} summary requests for ${automatic.length} compactions`);
    assert.deepEqual(
      requests.filter((r) => r.status !== 200).map((r) => r.status),
      [],
      'no request was refused',
    );
    const gauge = await gaugeInDom();
    assert.doesNotMatch(gauge.ariaLabel, /, (critical|over)$/, `the gauge came down: ${gauge.text}`);
    await vscode.commands.executeCommand('workbench.action.chat.newChat');
  });

  it('stops asking for summaries that keep failing, says so once in the chat, and still compacts', async () => {
    await newConversation();
    const longrun = await api();
    await model.failSummaries({ error: { status: 500 } });
    try {
      const told = (): string[] => longrun.participant.recentNotices().filter((n) => n.includes('failed 2 times in a row'));
      let seenInChat = false;
      const rested = async () => (await entries()).filter((e) => /was not asked, since its last 2 summaries failed/.test(e.failure ?? ''));
      for (let i = 1; i <= 30 && (await rested()).length === 0; i++) {
        await chat(`step ${i}: ${padding(i)} ${padding(i + 100)}`, SIX_K_MODEL);
        if (!seenInChat && told().length > 0) seenInChat = (await chatText()).includes('failed 2 times in a row');
      }
      await chat('one more step after the rest began', SIX_K_MODEL);
      const all = await entries();
      assert.ok((await rested()).length >= 1, `a compaction did not ask the summarizer: ${all.map((e) => e.failure).join(' | ')}`);
      assert.ok(
        all.every((e) => e.fallback),
        'every summary is the extractive one',
      );
      assert.equal(told().length, 1, `said once: ${told().join(' | ')}`);
      assert.match(told()[0]!, /Summaries by longrun\/offline\/scripted-6k failed 2 times in a row .*The next 4 automatic compactions do not ask it/);
      assert.ok(seenInChat, 'shown in the chat');
      const gauge = await gaugeInDom();
      assert.doesNotMatch(gauge.ariaLabel, /, over$/, `the conversation still fits: ${gauge.text}`);
    } finally {
      await model.failSummaries(null);
    }
  });
});
