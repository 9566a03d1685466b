/**
 * Pruning and recall in a real VS Code: a session that reads the same files again and again is
 * compacted by pruning alone (no summary request reaches the model) and the chat says so; the
 * `recall` tool gives the agent back a pruned output, and after a summary a summarized request.
 */
import * as assert from 'assert';
import * as vscode from 'vscode';
import {
  api,
  chat,
  entries,
  model,
  newConversation,
  orphanToolResults,
  requestText,
  SMALL_MODEL,
  ui,
  waitFor,
  type RecordedRequest,
} from './harness';

const chatText = async (): Promise<string> => (await ui<string[]>('chat-text')).join('\n');

/** The tool messages of a request, as the model received them. */
function toolMessages(request: RecordedRequest): string[] {
  return (request.body?.messages ?? [])
    .filter((m) => m.role === 'tool')
    .map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)));
}

describe('memory: pruning before summarizing, and recall', function () {
  this.timeout(600_000);

  before(async () => {
    await model.reset();
    await newConversation();
  });

  it('compacts a session of re-read files by pruning alone: no summary applied, and the chat says so', async () => {
    const longrun = await api();
    const before = (await model.requests()).length;
    // Each read is about 700 tokens of the 7,680 the small model leaves for the conversation: pruning
    // all but the latest read of the file brings the view under the compaction target (half the window).
    const reads = Array.from({ length: 10 }, () => ({ toolCalls: [{ name: 'read_file', arguments: { path: 'src/big-1.ts' } }] }));
    await model.script([...reads, { text: 'The file read, again and again.' }]);
    await chat('zebracorn: please read src/big-1.ts over and over', SMALL_MODEL);

    const requests = (await model.requests()).slice(before);
    // A summary may have been prepared ahead once the view passed the warning level (the growth still
    // to come counted against pruning alone); what the threshold applied is a pruning alone.
    const conversation = longrun.registry.currentIfLoaded()!;
    const step = conversation.lastStep();
    assert.ok(step?.pruning && !step.compaction, `the last compaction is a pruning alone: ${JSON.stringify(step && Object.keys(step))}`);
    assert.deepEqual(await entries(), [], 'no summary was made');
    assert.ok(
      step.pruning.outputs.every((o) => o.kind === 'duplicate'),
      'what was pruned had been read again since',
    );

    const pruned = requests.filter((r) => !r.summary && requestText(r).includes('[Pruned by Longrun'));
    assert.ok(pruned.length > 0, 'the requests after the pruning carry stubs');
    assert.match(
      requestText(pruned[0]!),
      /search them with the recall tool|recall gets the originals back/,
      'the system prompt tells the model about recall',
    );
    assert.deepEqual(orphanToolResults(pruned.at(-1)!), []);
    assert.ok(
      requests.every((r) => r.status === 200),
      'no request was refused',
    );
    let shown = '';
    await waitFor('the pruning line in the chat', async () => {
      shown = await chatText();
      return /Pruned \d+ superseded tool outputs? \(−[\d,]+ tokens\); no summary needed/.test(shown) && shown.includes('The file read, again')
        ? shown
        : undefined;
    }).catch((error: unknown) => {
      throw new Error(`${error instanceof Error ? error.message : String(error)}; the chat shows: ${shown}`);
    });
    await ui('screenshot', { name: 'memory-pruned', chat: true });
  });

  it('gives a pruned output back through the recall tool, by path', async () => {
    const before = (await model.requests()).length;
    await model.script([
      { toolCalls: [{ name: 'recall', arguments: { path: 'src/big-1.ts', maxTokens: 600 } }] },
      { text: 'Recalled the earlier read.' },
    ]);
    await chat('what did big-1 hold when you first read it?', SMALL_MODEL);
    const requests = (await model.requests()).slice(before).filter((r) => !r.summary);
    const recalled = requests.flatMap(toolMessages).find((m) => m.includes('archived message'));
    assert.ok(recalled, `the recall result reached the model: ${JSON.stringify(requests.flatMap(toolMessages).map((m) => m.slice(0, 80)))}`);
    assert.match(recalled, /archived messages? match(es)? the path "src\/big-1\.ts"/);
    assert.match(recalled, /\(tool, pruned\)/);
    assert.match(recalled, /item1_0 = 'alpha beta gamma delta 100'/, 'the original content of the file as it was read');
  });

  it('finds the first request again by its words once a summary replaced it', async () => {
    assert.equal(await vscode.commands.executeCommand('longrun.compact'), 'compacted');
    assert.equal((await entries()).length, 1, 'the conversation was summarized');
    const before = (await model.requests()).length;
    await model.script([{ toolCalls: [{ name: 'recall', arguments: { query: 'zebracorn' } }] }, { text: 'Found the first request.' }]);
    await chat('what exactly did I ask at the start?', SMALL_MODEL);
    const requests = (await model.requests()).slice(before).filter((r) => !r.summary);
    // The answer of the earlier recall may still be in the view: this one names its words.
    const recalled = requests.flatMap(toolMessages).find((m) => m.includes('the words "zebracorn"'));
    assert.ok(recalled, `the recall result reached the model: ${JSON.stringify(requests.flatMap(toolMessages).map((m) => m.slice(0, 80)))}`);
    assert.match(recalled, /^1 archived message matches the words "zebracorn"\./);
    assert.match(recalled, /\(user, summarized\)/);
    assert.match(recalled, /zebracorn: please read src\/big-1\.ts over and over/);
  });
});
