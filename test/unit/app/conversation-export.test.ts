import assert from 'node:assert/strict';
import type { LogRecord } from '../../../src/core/history';
import { EMPTY_LEDGER } from '../../../src/core/file-ledger';
import { conversationMarkdown } from '../../../src/app/conversation-export';
import { conversationIdOf } from '../../../src/app/chat-history';
import { branchLog, sideTurns } from '../../../src/core/branches';

const entry = (id: string, round: number, compacted: string[]) => ({
  id,
  round,
  reason: 'manual' as const,
  summary: `## Session Summary (Compaction Round ${round})\nThe flashcard app is half done.`,
  firstKeptMessageId: null,
  compactedMessageIds: compacted,
  tokensBefore: 5_000,
  tokensAfter: 1_000,
  fileOperations: EMPTY_LEDGER,
  model: 'm',
  durationMs: 1,
  createdAt: 1,
  summaryRole: 'user' as const,
  fallback: false,
  lowGain: false,
  splitTurn: false,
  summarizerCalls: 1,
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
    const markdown = conversationMarkdown(branchLog(log, 't3'), 'Branches', sideTurns(log, 't3'));
    const [main, side] = markdown.split('# Side branches');
    assert.match(main!, /ALPHA-7[\s\S]*DELTA-4/);
    assert.doesNotMatch(main!, /BRAVO-9/);
    assert.match(side!, /Side turn t2, continuing turn t1[\s\S]*remember BRAVO-9[\s\S]*noted BRAVO-9/);
    assert.doesNotMatch(side!, /ALPHA-7|DELTA-4/);
  });

  it('has no side branches when the chat never went back', () => {
    assert.doesNotMatch(
      conversationMarkdown(
        branchLog(log, 't2'),
        'x',
        sideTurns(log, 't2').filter((s) => s.turn.id !== 't3'),
      ),
      /Side branches/,
    );
  });
});

describe('which conversation a chat continues', () => {
  const response = (participant: string, metadata: unknown) => ({ participant, result: { metadata } });
  it('takes the id of the latest Longrun response of that chat', () => {
    const history = [
      { prompt: 'hi', participant: 'longrun.agent' },
      response('longrun.agent', { conversationId: 'a' }),
      response('other.participant', { conversationId: 'x' }),
      response('longrun.agent', { conversationId: 'b' }),
    ];
    assert.equal(conversationIdOf(history, 'longrun.agent'), 'b');
  });
  it('finds none in a new chat, or one whose responses carry no id', () => {
    assert.equal(conversationIdOf([], 'longrun.agent'), undefined);
    assert.equal(
      conversationIdOf(
        [response('longrun.agent', {}), response('longrun.agent', undefined), response('longrun.agent', { conversationId: 7 })],
        'longrun.agent',
      ),
      undefined,
    );
  });
});
