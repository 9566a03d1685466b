import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import fc from 'fast-check';
import { ConversationStore } from '../../../src/app/store/conversation-store';
import { awayAt } from '../../../src/app/store/held-away';
import { parseLine, skimMessageLine } from '../../../src/app/store/lines';
import { CONVERSATION_FORMAT_VERSION } from '../../../src/app/store/schemas';
import type { LogRecord } from '../../../src/core/history';
import { ROLES, type Message, type Part } from '../../../src/core/messages';
import { compactionRecord } from '../fixtures/compaction-entry';

type MessageRecord = LogRecord & { type: 'message' };

/** Text that holds what could mislead a reader of a line's two ends: brackets, braces, quotes, backslashes, keys. */
const trickyText = fc.oneof(
  fc.string(),
  fc.constantFrom(']', '}]}', '"]},"turnId":"x"}}', '\\', '],"summaryOf":"e1"}', '{"v":1,"record":{"type":"message"', '\u2028', '😀'),
);

const partArb: fc.Arbitrary<Part> = fc.oneof(
  fc.record({ type: fc.constant('text' as const), text: trickyText }),
  fc.record({ type: fc.constant('reasoning' as const), text: trickyText }),
  fc.record({
    type: fc.constant('tool-call' as const),
    toolCallId: fc.string({ minLength: 1 }),
    toolName: fc.constantFrom('read_file', 'edit_file'),
    input: fc.dictionary(fc.string(), trickyText),
  }),
  fc.record({
    type: fc.constant('tool-result' as const),
    toolCallId: fc.string({ minLength: 1 }),
    toolName: fc.constantFrom('read_file', 'edit_file'),
    output: trickyText,
  }),
);

const idArb = fc.oneof(fc.stringMatching(/^[a-z0-9_-]{1,12}$/), fc.string({ minLength: 1, maxLength: 8 }));

const messageRecordArb: fc.Arbitrary<MessageRecord> = fc
  .record({
    id: idArb,
    role: fc.constantFrom(...ROLES),
    content: fc.array(partArb, { maxLength: 3 }),
    summaryOf: fc.option(idArb, { nil: undefined }),
    incomplete: fc.boolean(),
    turnId: fc.option(idArb, { nil: undefined }),
    tokens: fc.option(fc.dictionary(fc.constantFrom('o200k_base', 'claude', 'x]'), fc.nat()), { nil: undefined }),
    turnFirst: fc.boolean(),
  })
  .map(({ id, role, content, summaryOf, incomplete, turnId, tokens, turnFirst }) => {
    const message: Message = {
      id,
      role,
      content,
      ...(summaryOf !== undefined ? { summaryOf } : {}),
      ...(incomplete ? { incomplete: true as const } : {}),
    };
    const counts = tokens !== undefined ? { tokens } : {};
    const turn = turnId !== undefined ? { turnId } : {};
    // Records are made in either order of their fields after the message.
    return (turnFirst ? { type: 'message', message, ...turn, ...counts } : { type: 'message', message, ...counts, ...turn }) as MessageRecord;
  });

const lineOf = (record: LogRecord): string => JSON.stringify({ v: CONVERSATION_FORMAT_VERSION, record });

/** What a message record is without its content, as a line's two ends tell it. */
function withoutContent(record: MessageRecord): unknown {
  const { id, role, summaryOf, incomplete } = record.message;
  return {
    id,
    role,
    ...(record.turnId !== undefined ? { turnId: record.turnId } : {}),
    ...(summaryOf !== undefined ? { summaryOf } : {}),
    ...(incomplete === true ? { incomplete } : {}),
  };
}

describe('a message line read from its two ends', () => {
  it('gives what the whole line holds apart from its content, or nothing, whatever the content', () => {
    fc.assert(
      fc.property(messageRecordArb, (record) => {
        const skimmed = skimMessageLine(lineOf(record));
        if (skimmed !== undefined) assert.deepEqual(skimmed, withoutContent(record));
      }),
      { numRuns: 2_000 },
    );
  });

  it('reads every line Longrun writes of a message with plain ids', () => {
    fc.assert(
      fc.property(messageRecordArb, fc.stringMatching(/^[a-z0-9-]{1,12}$/), (record, plain) => {
        const { summaryOf: _summaryOf, ...message } = record.message;
        const { turnId: _turnId, tokens, ...rest } = record;
        const counts = tokens !== undefined ? { tokens: Object.fromEntries(Object.entries(tokens).filter(([name]) => !name.includes(']'))) } : {};
        const plainRecord = { ...rest, ...counts, message: { ...message, id: plain } } as MessageRecord;
        assert.deepEqual(skimMessageLine(lineOf(plainRecord)), withoutContent(plainRecord));
      }),
      { numRuns: 500 },
    );
  });

  it('never tells a changed line otherwise than its whole reading does', () => {
    const edit = fc.record({
      at: fc.nat(),
      drop: fc.nat({ max: 4 }),
      put: fc.constantFrom('', ']', '}', '"', ',', '\\', 'x', ',"turnId":"t"', '}}'),
    });
    fc.assert(
      fc.property(messageRecordArb, fc.array(edit, { minLength: 1, maxLength: 3 }), (record, edits) => {
        let text = lineOf(record);
        for (const { at, drop, put } of edits) {
          const where = at % (text.length + 1);
          text = text.slice(0, where) + put + text.slice(where + drop);
        }
        const skimmed = skimMessageLine(text);
        const whole = parseLine(text, false, 'c', 1);
        if (skimmed === undefined || whole.kind !== 'record') return;
        assert.equal(whole.record.type, 'message');
        assert.deepEqual(skimmed, withoutContent(whole.record as MessageRecord));
      }),
      { numRuns: 3_000 },
    );
  });
});

describe('opening a conversation with its archive held on disk', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'longrun-skimmed-open-'));
  });
  afterEach(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  /** The log as opened: each record's JSON, and where the line of one held without its content is. */
  const seen = (log: readonly LogRecord[]) => log.map((record) => ({ json: JSON.stringify(record), at: awayAt(record) }));

  it('gives the same records as reading every line whole, held or not', async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(messageRecordArb, { minLength: 1, maxLength: 12 }),
        fc.array(fc.tuple(fc.nat(), fc.array(fc.nat(), { maxLength: 6 })), { maxLength: 3 }),
        async (messages, compactions) => {
          // Ids repeat as they do after a rewind: the message noted last is the one a compaction takes out.
          const records: LogRecord[] = [...messages];
          for (const [k, [where, picks]] of compactions.entries()) {
            const at = where % (records.length + 1);
            const before = records.slice(0, at).filter((r): r is MessageRecord => r.type === 'message');
            const ids = [...new Set(picks.filter(() => before.length > 0).map((p) => before[p % before.length]!.message.id))];
            records.splice(at, 0, compactionRecord({ id: `e${k}`, compactedMessageIds: ids }));
          }
          const id = `c${n++}`;
          const store = new ConversationStore(dir, () => 0, { locateOverBytes: 400 });
          await store.appendAll(id, records);
          const skimmed = await new ConversationStore(dir, () => 0, { locateOverBytes: 400 }).open(id, { holdAway: true });
          const whole = await new ConversationStore(dir, () => 0, { locateOverBytes: 400 }).open(id, { holdAway: true, checkAll: true });
          assert.deepEqual(skimmed.problems, []);
          assert.deepEqual(seen(skimmed.log), seen(whole.log));
        },
      ),
      { numRuns: 150 },
    );
  });

  /** A message whose content is no longer valid, its line's two ends as Longrun writes them. */
  const damaged = (text: string): string => text.replace('"type":"text"', '"type":"texture"');

  it('reports a damaged message still in the view, in line order with the others, and keeps the rest', async () => {
    const store = new ConversationStore(dir, () => 0);
    const say = (id: string): LogRecord => ({ type: 'message', message: { id, role: 'user', content: [{ type: 'text', text: `say ${id}` }] } });
    await store.appendAll('c', [say('m1'), say('m2'), say('m3'), compactionRecord({ compactedMessageIds: ['m1'] }), say('m4')]);
    const file = store.partFile('c', 1);
    const lines = (await fs.readFile(file, 'utf8')).split('\n');
    lines[2] = damaged(lines[2]!); // m2, in the view
    lines[3] = '{"v":1,"record":'; // m3, not JSON
    lines[1] = damaged(lines[1]!); // m1, compacted: checked when read back
    await fs.writeFile(file, lines.join('\n'));

    const opened = await new ConversationStore(dir, () => 0).open('c', { holdAway: true });

    const ids = opened.log.flatMap((r) => (r.type === 'message' ? [r.message.id] : []));
    assert.deepEqual(ids, ['m1', 'm4']);
    assert.deepEqual(
      opened.problems.map((p) => /^Line (\d+) /.exec(p)?.[1]),
      ['3', '4'],
      opened.problems.join('\n'),
    );
    assert.ok(awayAt(opened.log[0]!), 'the compacted message is held on disk');

    const whole = await new ConversationStore(dir, () => 0).open('c', { holdAway: true, checkAll: true });
    assert.deepEqual(
      whole.log.flatMap((r) => (r.type === 'message' ? [r.message.id] : [])),
      ['m4'],
      'read whole, the damaged compacted message is set aside too',
    );
  });
});
