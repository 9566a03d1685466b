import assert from 'node:assert/strict';
import { appendFileSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { APICallError } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import fc from 'fast-check';
import type * as vscode from 'vscode';
import { ConversationStore } from '../../../src/app/store/conversation-store';
import type { LogRecord } from '../../../src/core/history';
import { KnownSecrets, REDACTED, redactSecrets } from '../../../src/core/redact';
import { subagentRuns } from '../../../src/core/subagents';
import { redactingLog } from '../../../src/vscode/redacting-log';
import { turnFixture } from './turn-fixture';

/**
 * Whatever shape a configured key has, no file Longrun writes holds it: an error body that echoes it
 * (as it is, JSON-encoded in the body, URL-encoded in a URL), written as a conversation's records and
 * as lines of the output log, is read back from disk without it.
 */

/** Characters regular expressions, JSON and URLs give a meaning to. */
const SPECIAL = [...'.*+?^$()[]{}|\\/-"\'`&=%#:;, \t\n'];

/** A key of any shape: any characters, mostly special ones, or letters and digits as real keys have. */
const keys = fc
  .oneof(
    fc.string({ minLength: 8, maxLength: 48 }),
    fc.string({ unit: fc.constantFrom(...SPECIAL), minLength: 8, maxLength: 24 }),
    fc.string({ unit: fc.oneof(fc.constantFrom(...SPECIAL), fc.constantFrom(...'abcXYZ0189')), minLength: 8, maxLength: 32 }),
    fc.string({ unit: 'binary', minLength: 8, maxLength: 24 }),
  )
  .filter((key) => key.trim().length >= 8)
  // A key made of the marker's own letters may be formed again by a marker the key-shape rules put next to other text.
  .filter((key) => ![...REDACTED].some((_, i) => i < REDACTED.length - 1 && key.includes(REDACTED.slice(i, i + 2))));

const json = (text: string): string => JSON.stringify(text).slice(1, -1);

/** The forms a key would take in a file: as it is, and as a JSON line holds it, once or twice encoded. */
function formsIn(key: string): string[] {
  return [key, json(key), json(json(key)), encodeURIComponent(key)];
}

/** A provider's 401 body that echoes `key`, in the ways providers and proxies do. */
function errorBody(key: string): string {
  return `401 Unauthorized: ${JSON.stringify({ error: { message: `Invalid API key: ${key}`, request: `https://proxy.example/v1/chat?key=${encodeURIComponent(key)}` } })}`;
}

/** Records that carry the body: a tool's error result (text and JSON), the agent's text, a subagent's end. */
function recordsWith(body: string): LogRecord[] {
  return [
    { type: 'message', message: { id: 'u1', role: 'user', content: [{ type: 'text', text: 'check the server' }] } },
    {
      type: 'message',
      message: {
        id: 'a1',
        role: 'assistant',
        content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'run_command', input: { command: 'curl' } }],
      },
    },
    {
      type: 'message',
      message: {
        id: 't1',
        role: 'tool',
        content: [
          { type: 'tool-result', toolCallId: 'c1', toolName: 'run_command', output: `Error: ${body}`, isError: true },
          { type: 'tool-result', toolCallId: 'c2', toolName: 'run_command', output: { error: { body, nested: [body] } }, isError: true },
        ],
      },
    },
    { type: 'message', message: { id: 'a2', role: 'assistant', content: [{ type: 'text', text: `The server answered: ${body}` }] } },
    { type: 'subagent', subagent: { kind: 'start', id: 's1', task: 'look', model: 'm', budget: { steps: 3, tokens: 1000 }, at: 1 } },
    {
      type: 'subagent',
      subagent: { kind: 'end', id: 's1', ending: 'failed', at: 2, steps: 1, inputTokens: 10, outputTokens: 1, result: `Subagent failed: ${body}` },
    },
  ];
}

/** Every file under `dir`, read back whole. */
async function filesUnder(dir: string): Promise<string> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  const texts = await Promise.all(entries.filter((e) => e.isFile()).map((e) => readFile(join(e.parentPath, e.name), 'utf8')));
  return texts.join('\n');
}

/** An output channel that appends each line to `file`, as VS Code's log does to its own. */
function fileChannel(file: string): vscode.LogOutputChannel {
  const write = (level: string) => (message: unknown) => appendFileSync(file, `[${level}] ${String(message)}\n`);
  return { info: write('info'), warn: write('warning'), error: write('error'), appendLine: write('line') } as unknown as vscode.LogOutputChannel;
}

describe('keys never on disk, whatever their shape', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'longrun-keys-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it("writes no configured key to a conversation's files or the log, in any form a body echoes it", async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(keys, async (key) => {
        // What is written without the key must not hold it already (its structure, its words).
        const plain = JSON.stringify(recordsWith(errorBody(''))) + errorBody('');
        fc.pre(formsIn(key).every((form) => !plain.includes(form) && !REDACTED.includes(form)));
        const secrets = new KnownSecrets();
        secrets.set('endpoint:local', key);
        const here = join(dir, `run-${++run}`);
        const store = new ConversationStore(join(here, 'storage'), () => 1, { secrets });
        await store.create('c1');
        const stored = await store.appendAll('c1', recordsWith(errorBody(key)));
        const log = redactingLog(fileChannel(join(here, 'longrun.log')), (text) => redactSecrets(secrets.redact(text)));
        log.error(`Request failed: ${errorBody(key)}`);
        log.warn(`Could not record subagent s1's end: ${json(errorBody(key))}`);
        log.error(new Error(errorBody(key)) as unknown as string);

        const written = await filesUnder(here);
        for (const form of formsIn(key)) assert.ok(!written.includes(form), `${JSON.stringify(form)} is on disk`);
        assert.ok(written.includes(REDACTED));
        // The records read back whole, and are those held in memory.
        const { log: reread, problems } = await store.open('c1');
        assert.deepEqual(problems, []);
        assert.deepEqual(reread, stored);
        assert.equal(reread.length, recordsWith('').length);
      }),
      { numRuns: 60 },
    );
  });

  it('writes a record without a key, or when no key is known, as it was given', async () => {
    const secrets = new KnownSecrets();
    const store = new ConversationStore(join(dir, 'storage'), () => 1, { secrets });
    await store.create('c1');
    const records = recordsWith(errorBody('local-secret-0042'));
    assert.deepEqual(await store.appendAll('c1', records), records, 'no key known: nothing is changed');
    secrets.set('endpoint:local', 'another-secret-0077');
    assert.deepEqual(await store.appendAll('c1', records), records, 'a record that holds no known key is stored as it is');
    const [first] = await store.appendAll('c1', records.slice(3, 4));
    assert.equal(first, records[3], 'the very record, not a copy');
  });
});

describe('keys never on disk: through a chat turn', () => {
  it("keeps a key of no known shape, echoed in a subagent's provider's 401 body, out of the conversation's files", async () => {
    const key = 'zq.local+KEY(7)|0042';
    const secrets = new KnownSecrets();
    secrets.set('endpoint:local', key);
    const model = new MockLanguageModelV4({
      doStream: async () => {
        throw new APICallError({
          message: `Unauthorized: ${key} is not a valid key`,
          url: 'http://localhost:1/v1/chat/completions',
          requestBodyValues: {},
          statusCode: 401,
          responseBody: JSON.stringify({ error: { message: `invalid api key ${key}` } }),
          isRetryable: false,
        });
      },
    });
    const f = await turnFixture({ subagent: { model }, secrets });
    try {
      await f.newChat().send('delegate read a.txt');
      const conversation = f.registry.currentIfLoaded()!;
      const [run] = subagentRuns(conversation.log());
      assert.match(run!.end!.result, /^Subagent failed: .*\[redacted\] is not a valid key/, run!.end!.result);
      const written = await filesUnder(join(f.dir, 'storage'));
      assert.ok(written.includes('Subagent failed'), 'the failure was written');
      for (const form of formsIn(key)) assert.ok(!written.includes(form), `${JSON.stringify(form)} is on disk`);
    } finally {
      await f.close();
    }
  });
});
