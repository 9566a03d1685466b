import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { LogRecord } from '../../../src/core/history';
import { conversationMarkdown, exportConversationToFile, writeConversationMarkdown } from '../../../src/app/conversation/conversation-export';
import { usageLines } from '../../../src/app/usage/usage-text';
import { callCost } from '../../../src/core/usage-cost';
import { usageReport } from '../../../src/core/usage-report';
import { ConversationStore } from '../../../src/app/store/conversation-store';
import { compactionEntry } from '../fixtures/compaction-entry';

const entry = (id: string, round: number, compacted: string[]) =>
  compactionEntry({
    id,
    round,
    summary: `## Session Summary (Compaction Round ${round})\nThe flashcard app is half done.`,
    compactedMessageIds: compacted,
    tokensBefore: 5_000,
    tokensAfter: 1_000,
    model: 'm',
    durationMs: 1,
    createdAt: 1,
  });

describe('exporting a conversation as Markdown', () => {
  const log: LogRecord[] = [
    { type: 'message', message: { id: 'u1', role: 'user', content: [{ type: 'text', text: 'Build a flashcard app' }] } },
    {
      type: 'message',
      message: {
        id: 'a1',
        role: 'assistant',
        content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'read_file', input: { path: 'src/app.ts' } }],
      },
    },
    {
      type: 'message',
      message: {
        id: 't1',
        role: 'tool',
        content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 'read_file', output: 'const fence = "```";' }],
      },
    },
    { type: 'compaction', entry: entry('e1', 1, ['u1', 'a1', 't1']) },
    { type: 'message', message: { id: 'u2', role: 'user', content: [{ type: 'text', text: 'Now add tests' }] } },
    { type: 'compaction', entry: entry('e2', 2, ['u2']) },
    { type: 'undo', entryId: 'e2', at: 2 },
  ];
  const markdown = conversationMarkdown(log, 'Build a flashcard app');

  it("shows a model's reasoning, and neither the metadata given with it nor reasoning given only in encrypted form", () => {
    const providerMetadata = {
      provider: 'openai.responses',
      model: 'gpt-5',
      data: { openai: { itemId: 'rs_1', reasoningEncryptedContent: 'ENCRYPTED-BLOB' } },
    };
    const shown = conversationMarkdown(
      [
        {
          type: 'message',
          message: {
            id: 'a1',
            role: 'assistant',
            content: [
              { type: 'reasoning', text: '', providerMetadata },
              { type: 'reasoning', text: 'weighing the options', providerMetadata },
              { type: 'text', text: 'Done.' },
            ],
          },
        },
      ],
      'T',
    );
    assert.equal(shown.split('*Reasoning:*').length - 1, 1, shown);
    assert.match(shown, /weighing the options/);
    assert.ok(!shown.includes('ENCRYPTED-BLOB') && !shown.includes('rs_1'), shown);
  });

  it('keeps every message, the compacted originals included, in order', () => {
    const order = ['Build a flashcard app\n', '**Tool call** `read_file`', '**Tool result** `read_file`', 'Now add tests'].map((s) =>
      markdown.indexOf(s),
    );
    assert.ok(
      order.every((i) => i >= 0),
      markdown,
    );
    assert.deepEqual(
      [...order].sort((a, b) => a - b),
      order,
    );
  });

  it('shows each summary where it applied, and marks an undone one', () => {
    assert.match(markdown, /\*\*Compaction round 1\*\* \(manual\): 3 messages above were replaced/);
    assert.match(markdown, /> The flashcard app is half done\./);
    assert.match(markdown, /\*\*Compaction round 2\*\* \(manual, later undone\)/);
    assert.ok(markdown.indexOf('Compaction round 1') > markdown.indexOf('**Tool result**'));
  });

  it("says what a pruning replaced in the model's view: tool outputs, and the content of file writes", () => {
    const output = (kind: 'duplicate' | 'written', id: string) => ({
      messageId: id,
      toolCallId: `c-${id}`,
      toolName: 'x',
      kind,
      stub: 's',
      tokens: 9,
    });
    const pruned = conversationMarkdown(
      [
        ...log.slice(0, 3),
        {
          type: 'pruning',
          entry: {
            id: 'p1',
            reason: 'threshold',
            outputs: [output('duplicate', 't1'), output('written', 'a1')],
            tokensBefore: 900,
            tokensAfter: 400,
            createdAt: 1,
          },
        },
      ],
      'Build a flashcard app',
    );
    assert.match(pruned, /\*\*Pruning\*\* \(threshold\): 1 tool output and the content of 1 file write above were replaced by a stub/);
  });

  it('marks an answer that was cut', () => {
    const cut = conversationMarkdown(
      [{ type: 'message', message: { id: 'a', role: 'assistant', content: [{ type: 'text', text: 'Half an' }], incomplete: true } }],
      't',
    );
    assert.match(cut, /^## Assistant \(incomplete: the stream ended without a finish reason\)\n\nHalf an\n$/m);
  });

  it('fences output that holds backticks so that it cannot break out', () => {
    assert.match(markdown, /````\nconst fence = "```";\n````/);
  });
});

describe('exporting a conversation that branched', () => {
  const say = (id: string, role: 'user' | 'assistant', text: string, turnId: string): LogRecord => ({
    type: 'message',
    message: { id, role, content: [{ type: 'text', text }] },
    turnId,
  });
  const log: LogRecord[] = [
    { type: 'turn', turn: { id: 't1', parent: null, at: 1 } },
    say('u1', 'user', 'remember ALPHA-7', 't1'),
    say('a1', 'assistant', 'noted ALPHA-7', 't1'),
    { type: 'turn', turn: { id: 't2', parent: 't1', at: 2 } },
    say('u2', 'user', 'remember BRAVO-9', 't2'),
    say('a2', 'assistant', 'noted BRAVO-9', 't2'),
    { type: 'turn', turn: { id: 't3', parent: 't1', at: 3 } },
    say('u3', 'user', 'remember DELTA-4', 't3'),
  ];

  it('shows the branch in use in order, then each turn left off it as a side branch', () => {
    const markdown = conversationMarkdown(log, 'Branches', 't3');
    const [main, side] = markdown.split('# Side branches');
    assert.match(main!, /ALPHA-7[\s\S]*DELTA-4/);
    assert.doesNotMatch(main!, /BRAVO-9/);
    assert.match(side!, /Side turn t2, continuing turn t1[\s\S]*remember BRAVO-9[\s\S]*noted BRAVO-9/);
    assert.doesNotMatch(side!, /ALPHA-7|DELTA-4/);
  });

  it('ends with the usage and cost table it is given, after the side branches', async () => {
    const closing = usageLines({
      report: usageReport(
        [
          {
            anchorMessageId: 'a1',
            inputTokens: 10_000,
            outputTokens: 500,
            basis: null,
            provider: 'anthropic',
            cacheReadTokens: 8_000,
            cacheWriteTokens: 1_500,
          },
        ],
        (u) =>
          callCost(
            { input: u.inputTokens, cacheRead: u.cacheReadTokens ?? 0, cacheWrite: u.cacheWriteTokens ?? 0, output: u.outputTokens },
            { input: 3, output: 15 },
            'anthropic',
          ),
      ),
    });
    const markdown = conversationMarkdown(log, 'Branches', 't3', closing);
    const [, usage] = markdown.split('# Usage and cost');
    assert.ok(markdown.indexOf('# Side branches') < markdown.indexOf('# Usage and cost'));
    assert.match(usage!, /^\| Cost \| \$0\.017 \| \$0\.017 \|$/m);
    const pieces: string[] = [];
    await writeConversationMarkdown(
      (onRecord) => log.reduce((p, r) => p.then(() => onRecord(r)), Promise.resolve()),
      'Branches',
      (t) => void pieces.push(t),
      't3',
      closing,
    );
    assert.equal(pieces.join(''), markdown);
  });

  it('has no side branches when the chat never went back', () => {
    const straight = log.slice(0, 6);
    assert.doesNotMatch(conversationMarkdown(straight, 'x', 't2'), /Side branches/);
  });

  it('streams the same Markdown as it writes in memory', async () => {
    const pieces: string[] = [];
    await writeConversationMarkdown(
      async (onRecord) => {
        for (const record of log) await onRecord(record);
      },
      'Branches',
      (text) => void pieces.push(text),
      't3',
    );
    assert.equal(pieces.join(''), conversationMarkdown(log, 'Branches', 't3'));
  });
});

describe('exporting a conversation of any size', () => {
  let dir: string;

  beforeEach(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'longrun-export-'));
  });

  afterEach(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('fences a 1.6 MB tool input made of a million backtick runs', () => {
    const input = { content: `${'`a'.repeat(800_000)}\`\`\`\`\`!` };
    const markdown = conversationMarkdown(
      [{ type: 'message', message: { id: 'a1', role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'c', toolName: 'write', input }] } }],
      't',
    );
    assert.ok(markdown.includes(`\n\`\`\`\`\`\`json\n${JSON.stringify(input)}\n\`\`\`\`\`\`\n`), 'a fence of six, one more than the longest run');
  });

  it('writes to the file through a temporary one, and leaves nothing behind when it fails', async () => {
    const file = path.join(dir, 'out.md');
    const log: LogRecord[] = [{ type: 'message', message: { id: 'u1', role: 'user', content: [{ type: 'text', text: 'hello' }] } }];
    const bytes = await exportConversationToFile(
      async (onRecord) => {
        for (const record of log) await onRecord(record);
      },
      'T',
      file,
    );
    assert.equal(await fs.readFile(file, 'utf8'), conversationMarkdown(log, 'T'));
    assert.equal(bytes, (await fs.stat(file)).size);
    await assert.rejects(
      exportConversationToFile(
        async () => {
          throw new Error('the disk went away');
        },
        'T',
        path.join(dir, 'failed.md'),
      ),
      /the disk went away/,
    );
    assert.deepEqual((await fs.readdir(dir)).sort(), ['out.md']);
  });

  it('exports a 600 MiB conversation in a process whose heap holds 64 MB', async function () {
    this.timeout(300_000);
    const store = new ConversationStore(dir, () => 0);
    const text = `${'Longrun keeps going. '.repeat(47_000)}\`\`\`\n`;
    const records: LogRecord[] = [];
    let stored = 0;
    for (let i = 0; stored < 600 * 1024 * 1024; i++) {
      records.push(
        i % 2 === 0
          ? { type: 'message', message: { id: `u${i}`, role: 'user', content: [{ type: 'text', text }] } }
          : {
              type: 'message',
              message: { id: `a${i}`, role: 'assistant', content: [{ type: 'tool-call', toolCallId: `c${i}`, toolName: 'write', input: { text } }] },
            },
      );
      stored += text.length;
      if (records.length === 32) await store.appendAll('big', records.splice(0));
    }
    await store.appendAll('big', records);
    const onDisk = await store.size('big');
    const file = path.join(dir, 'big.md');

    const child = path.join(__dirname, 'export-child.ts');
    const { stdout } = await new Promise<{ stdout: string }>((resolve, reject) =>
      execFile(
        process.execPath,
        ['--max-old-space-size=64', '--import', 'tsx', child, dir, 'big', file],
        { maxBuffer: 1024 * 1024 },
        (error, out, err) => (error ? reject(new Error(`${error.message}\n${err}`)) : resolve({ stdout: out })),
      ),
    );
    const measured = JSON.parse(stdout) as { bytes: number; peakRss: number; ms: number };
    assert.ok(onDisk > 600 * 1024 * 1024, `${onDisk} bytes stored`);
    assert.equal(measured.bytes, (await fs.stat(file)).size);
    assert.ok(measured.bytes > 600 * 1024 * 1024, `${measured.bytes} bytes exported`);
    assert.ok(measured.peakRss < 256 * 1024 * 1024, `peak RSS ${Math.round(measured.peakRss / 1024 / 1024)} MB`);
    const tail = Buffer.alloc(200);
    const handle = await fs.open(file, 'r');
    await handle.read(tail, 0, 200, measured.bytes - 200);
    await handle.close();
    assert.match(tail.toString('utf8'), /\n\`\`\`\`\n$/, 'the export ends with the last fenced block');
    console.log(
      `      exported ${Math.round(measured.bytes / 1024 / 1024)} MiB in ${measured.ms} ms, peak RSS ${Math.round(measured.peakRss / 1024 / 1024)} MB`,
    );
  });
});
