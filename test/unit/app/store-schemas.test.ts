import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ACTORS, FILE_OP_KINDS } from '../../../src/core/file-ledger';
import { PLAN_STATUSES } from '../../../src/core/log-values';
import { COMPACTION_REASONS, FILE_CHANGE_KINDS, RECORD_TYPES, SUMMARY_ROLES, type LogRecord, type RecordType } from '../../../src/core/history';
import { PART_TYPES, ROLES, type Part, type PartType } from '../../../src/core/messages';
import { NEEDLE_KINDS, parseNeedleLedger } from '../../../src/core/needles';
import { PRUNE_KINDS } from '../../../src/core/pruning';
import {
  actorSchema,
  fileChangeKindSchema,
  fileOpKindSchema,
  compactedIdSchema,
  logRecordSchema,
  plainCompactedId,
  plainPrunedOutput,
  planStatusSchema,
  prunedOutputSchema,
  pruneKindSchema,
  reasonSchema,
  roleSchema,
  summaryRoleSchema,
} from '../../../src/app/store/schemas';
import { compactionRecord } from '../fixtures/compaction-entry';

/** One record of each type; the mapped type makes a type added to `RECORD_TYPES` need a sample here. */
const SAMPLES: { readonly [K in RecordType]: Extract<LogRecord, { type: K }> } = {
  message: { type: 'message', message: { id: 'm1', role: 'user', content: [{ type: 'text', text: 'hi' }] } },
  compaction: compactionRecord({
    id: 'c1',
    summary: 's',
    compactedMessageIds: ['m1'],
    tokensBefore: 10,
    tokensAfter: 5,
    model: 'model',
    durationMs: 1,
    createdAt: 1,
  }),
  pruning: {
    type: 'pruning',
    entry: {
      id: 'p1',
      reason: 'threshold',
      outputs: [{ messageId: 'm2', toolCallId: 't1', toolName: 'read', kind: 'old', stub: '[pruned]', tokens: 3 }],
      tokensBefore: 10,
      tokensAfter: 7,
      createdAt: 1,
    },
  },
  undo: { type: 'undo', entryId: 'c1', at: 2 },
  usage: { type: 'usage', usage: { anchorMessageId: 'm1', inputTokens: 5, outputTokens: 1, basis: null } },
  file: { type: 'file', event: { kind: 'read', path: 'a.ts', actor: 'agent', at: 1 } },
  change: {
    type: 'change',
    change: { id: 'x1', path: 'a.ts', kind: 'modified', beforeHash: 'h0', afterHash: 'h1', at: 0, removed: 'a', inserted: 'b' },
  },
  turn: { type: 'turn', turn: { id: 'turn1', parent: null, at: 1 } },
  command: { type: 'command', run: { command: 'npm test', exitCode: 0, at: 1 } },
  plan: {
    type: 'plan',
    plan: {
      id: 'plan1',
      steps: [
        { step: 'Fix the parser', status: 'done', evidence: { files: ['src/parser.ts'], commands: ['npm test'] } },
        { step: 'Document it', status: 'pending', note: 'after review' },
      ],
      at: 1,
    },
  },
  account: { type: 'account', account: { id: 'a1', text: '<earlier-branch>…</earlier-branch>', turns: ['turn2'], at: 1 } },
  subagent: {
    type: 'subagent',
    subagent: { kind: 'message', id: 's1', message: { id: 'm9', role: 'assistant', content: [{ type: 'text', text: 'found it' }] } },
  },
};

/** One message part of each type. */
const PARTS: { readonly [K in PartType]: Extract<Part, { type: K }> } = {
  text: { type: 'text', text: 'hi' },
  reasoning: { type: 'reasoning', text: 'thinking' },
  'tool-call': { type: 'tool-call', toolCallId: 't1', toolName: 'read', input: { path: 'a.ts' } },
  'tool-result': { type: 'tool-result', toolCallId: 't1', toolName: 'read', output: 'text' },
  file: { type: 'file', mediaType: 'image/png', name: 'a.png', size: 3 },
};

describe('store schemas', () => {
  it('reads every value of each enum list of src/core', () => {
    const lists: ReadonlyArray<readonly [string, readonly string[], { safeParse(value: unknown): { success: boolean } }]> = [
      ['ROLES', ROLES, roleSchema()],
      ['COMPACTION_REASONS', COMPACTION_REASONS, reasonSchema()],
      ['SUMMARY_ROLES', SUMMARY_ROLES, summaryRoleSchema()],
      ['PRUNE_KINDS', PRUNE_KINDS, pruneKindSchema()],
      ['FILE_OP_KINDS', FILE_OP_KINDS, fileOpKindSchema()],
      ['ACTORS', ACTORS, actorSchema()],
      ['FILE_CHANGE_KINDS', FILE_CHANGE_KINDS, fileChangeKindSchema()],
      ['PLAN_STATUSES', PLAN_STATUSES, planStatusSchema()],
    ];
    for (const [name, values, schema] of lists) {
      assert.ok(values.length > 0, name);
      for (const value of values) assert.equal(schema.safeParse(value).success, true, `${name}: ${value}`);
      assert.equal(schema.safeParse('not-a-value').success, false, name);
    }
  });

  it('reads a needle of every kind of NEEDLE_KINDS in a stored needle ledger', () => {
    for (const kind of NEEDLE_KINDS) {
      const ledger = { version: 1, through: 'm1', needles: [{ kind, text: 'never push to main', messageId: 'm1' }], openCalls: {} };
      assert.equal(parseNeedleLedger(ledger)?.needles[0]?.kind, kind, kind);
    }
    const unknown = { version: 1, through: 'm1', needles: [{ kind: 'not-a-kind', text: 'x', messageId: 'm1' }], openCalls: {} };
    assert.equal(parseNeedleLedger(unknown), undefined);
  });

  it('reads a record of every type of RECORD_TYPES', () => {
    for (const type of RECORD_TYPES) {
      const parsed = logRecordSchema().safeParse(JSON.parse(JSON.stringify(SAMPLES[type])));
      assert.equal(parsed.success, true, `${type}: ${parsed.success ? '' : parsed.error.message}`);
      assert.equal(parsed.data?.type, type);
    }
  });

  it('reads a usage record with the tokens by kind, its time and provider, and one written before them as it was', () => {
    const full: LogRecord = {
      type: 'usage',
      usage: {
        anchorMessageId: 'm1',
        inputTokens: 12_000,
        outputTokens: 300,
        basis: 'c1',
        cacheReadTokens: 9_000,
        cacheWriteTokens: 2_500,
        cacheTtl: '1h',
        at: 1_700_000_000_000,
        provider: 'openrouter',
        modelId: 'anthropic/claude-sonnet-4',
        servedBy: 'Anthropic',
        cost: 0.0123,
      },
    };
    assert.deepEqual(logRecordSchema().parse(JSON.parse(JSON.stringify(full))), full);
    const summary: LogRecord = {
      type: 'usage',
      usage: { anchorMessageId: 'm1', inputTokens: 1, outputTokens: 1, basis: '(summary request)', purpose: 'summary', estimated: true },
    };
    assert.deepEqual(logRecordSchema().parse(JSON.parse(JSON.stringify(summary))), summary);
    // A line written before the tokens were kept by kind: no cache figures, and nothing else lost.
    const old = { type: 'usage', usage: { anchorMessageId: 'm1', inputTokens: 5, outputTokens: 1, basis: 'c1', localTokens: 4, model: 'longrun/x' } };
    assert.deepEqual(logRecordSchema().parse(old), old);
    // A provider kind of a later Longrun is dropped, not the report.
    const later = logRecordSchema().parse({ type: 'usage', usage: { ...old.usage, provider: 'a-provider-of-later' } });
    assert.equal(later.type === 'usage' && later.usage.provider, undefined);
    assert.equal(later.type === 'usage' && later.usage.inputTokens, 5);
  });

  it("keeps the mark of a file event that reverted Longrun's changes", () => {
    const record: LogRecord = { type: 'file', event: { kind: 'modified', path: 'a.ts', actor: 'user', at: 1, revert: true } };
    const parsed = logRecordSchema().safeParse(JSON.parse(JSON.stringify(record)));
    assert.deepEqual(parsed.data, record);
  });

  it('reads a message part of every type of PART_TYPES', () => {
    for (const type of PART_TYPES) {
      const record: LogRecord = { type: 'message', message: { id: 'm1', role: 'assistant', content: [PARTS[type]] } };
      const parsed = logRecordSchema().safeParse(JSON.parse(JSON.stringify(record)));
      assert.equal(parsed.success, true, `${type}: ${parsed.success ? '' : parsed.error.message}`);
      assert.deepEqual(parsed.data, record);
    }
  });

  describe("a long array's items, checked without their schema", () => {
    /** Pruned outputs as a pruning writes them. */
    const written = fc
      .record({
        messageId: fc.string({ minLength: 1 }),
        toolCallId: fc.string(),
        toolName: fc.string(),
        kind: fc.constantFrom(...PRUNE_KINDS),
        stub: fc.string(),
        tokens: fc.nat(),
      })
      .map((output) => ({ ...output }));
    /** A pruned output with one field changed to a value of any kind (the edges of its own among them), or taken out. */
    const nearOutput = fc
      .tuple(
        written,
        fc.constantFrom('messageId', 'toolCallId', 'toolName', 'kind', 'stub', 'tokens'),
        fc.oneof(fc.anything(), fc.constantFrom(-1, NaN, Infinity, -Infinity, 1.5, '', 'other', null, undefined)),
        fc.boolean(),
      )
      .map(([output, field, value, remove]) => {
        const changed: Record<string, unknown> = { ...output };
        if (remove) delete changed[field];
        else changed[field] = value;
        return changed;
      });
    const anyOutput = fc.oneof(
      nearOutput,
      fc.anything(),
      nearOutput.map((output) => Object.assign(Object.create(null), output) as unknown),
    );

    it('takes no pruned output its schema refuses, and takes the ones a pruning writes', () => {
      fc.assert(
        fc.property(anyOutput, (value) => {
          if (plainPrunedOutput(value)) assert.ok(prunedOutputSchema().safeParse(value).success, JSON.stringify(value));
        }),
        { numRuns: 5_000 },
      );
      fc.assert(fc.property(written, (output) => assert.ok(plainPrunedOutput(output))));
    });

    it('takes no compacted id its schema refuses, and every string', () => {
      fc.assert(
        fc.property(fc.anything(), (value) => {
          if (plainCompactedId(value)) assert.ok(compactedIdSchema().safeParse(value).success);
        }),
      );
      fc.assert(fc.property(fc.string(), (id) => assert.ok(plainCompactedId(id))));
    });
  });
});
