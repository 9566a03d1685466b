import { z } from 'zod';
import { lazily } from '../../core/lazy';
import { ACTORS, FILE_OP_KINDS, parseLedger } from '../../core/file-ledger';
import { parseNeedleLedger } from '../../core/needles';
import { COMPACTION_REASONS, FILE_CHANGE_KINDS, SUMMARY_ROLES, type LogRecord, type RecordType } from '../../core/history';
import { PLAN_STATUSES, SUBAGENT_ENDINGS } from '../../core/log-values';
import { ROLES, type PartType } from '../../core/messages';
import { PRUNE_KINDS } from '../../core/pruning';
import { LEGACY_BASIS } from '../../core/usage-calibration';
import { CACHE_TTLS, USAGE_PURPOSES } from '../../core/log-values';
import { PROVIDER_KINDS } from '../../core/provider-kind';

/** The format version this build writes and reads. */
export const CONVERSATION_FORMAT_VERSION = 1;

/**
 * The version of the line that closes a part. It is not 1 so that a Longrun from before parts refuses
 * the conversation as saved by a newer version rather than showing its first part as if it were all.
 */
export const PART_END_VERSION = 2;
export const PART_END_KIND = 'longrun-part-end';
/** The `kind` of the header line each part starts with. */
export const HEADER_KIND = 'longrun-conversation';

// ---------------------------------------------------------------------------------------------
// Schemas of what is stored: they mirror `LogRecord` and everything it holds.

// Added with provider metadata: a Longrun from before it drops the field and sends the part without
// it, as it always did; a part stored before it has none, and goes as it always went.
const providerMetadataSchema = lazily(() =>
  z.object({
    provider: z.string().min(1),
    model: z.string().min(1),
    data: z.record(z.string(), z.record(z.string(), z.unknown())),
  }),
);
const textPartSchema = lazily(() => z.object({ type: z.literal('text'), text: z.string(), providerMetadata: providerMetadataSchema().optional() }));
const reasoningPartSchema = lazily(() =>
  z.object({ type: z.literal('reasoning'), text: z.string(), providerMetadata: providerMetadataSchema().optional() }),
);
const toolCallPartSchema = lazily(() =>
  z.object({
    type: z.literal('tool-call'),
    toolCallId: z.string(),
    toolName: z.string(),
    input: z.unknown(),
    providerMetadata: providerMetadataSchema().optional(),
  }),
);
const toolResultPartSchema = lazily(() =>
  z.object({
    type: z.literal('tool-result'),
    toolCallId: z.string(),
    toolName: z.string(),
    output: z.unknown(),
    isError: z.boolean().optional(),
  }),
);
const filePartSchema = lazily(() =>
  z.object({
    type: z.literal('file'),
    mediaType: z.string(),
    name: z.string().optional(),
    size: z.number().min(0).optional(),
  }),
);

const messageSchema = lazily(() =>
  z.object({
    id: z.string().min(1),
    role: roleSchema(),
    content: z.array(
      withEveryType<PartType>()(
        z.discriminatedUnion('type', [textPartSchema(), reasoningPartSchema(), toolCallPartSchema(), toolResultPartSchema(), filePartSchema()]),
      ),
    ),
    summaryOf: z.string().optional(),
    incomplete: z.literal(true).optional(),
  }),
);

export const countSchema = lazily(() => z.number().min(0));
// Each enum is built from its list in src/core, so the values stored and the values of the type are
// the same by construction.
export const roleSchema = lazily(() => z.enum(ROLES));
export const reasonSchema = lazily(() => z.enum(COMPACTION_REASONS));
export const summaryRoleSchema = lazily(() => z.enum(SUMMARY_ROLES));
export const pruneKindSchema = lazily(() => z.enum(PRUNE_KINDS));
export const fileOpKindSchema = lazily(() => z.enum(FILE_OP_KINDS));
export const actorSchema = lazily(() => z.enum(ACTORS));
export const fileChangeKindSchema = lazily(() => z.enum(FILE_CHANGE_KINDS));
export const subagentEndingSchema = lazily(() => z.enum(SUBAGENT_ENDINGS));

const ledgerSchema = lazily(() =>
  z.unknown().transform((value, ctx) => {
    const ledger = parseLedger(value);
    if (ledger === undefined) {
      ctx.addIssue({ code: 'custom', message: 'is not a valid file ledger' });
      return z.NEVER;
    }
    return ledger;
  }),
);

const needleLedgerSchema = lazily(() =>
  z.unknown().transform((value, ctx) => {
    const ledger = parseNeedleLedger(value);
    if (ledger === undefined) {
      ctx.addIssue({ code: 'custom', message: 'is not a valid needle ledger' });
      return z.NEVER;
    }
    return ledger;
  }),
);

const compactionEntrySchema = lazily(() =>
  z.object({
    id: z.string().min(1),
    round: z.number().int().min(1),
    reason: reasonSchema(),
    summary: z.string(),
    firstKeptMessageId: z.string().nullable(),
    compactedMessageIds: z.array(compactedIdSchema()),
    tokensBefore: countSchema(),
    tokensAfter: countSchema(),
    fileOperations: ledgerSchema(),
    model: z.string(),
    durationMs: countSchema(),
    createdAt: z.number(),
    summaryRole: summaryRoleSchema(),
    fallback: z.boolean(),
    lowGain: z.boolean(),
    splitTurn: z.boolean(),
    summarizerCalls: z.number().int().min(0),
    focus: z.string().optional(),
    failure: z.string().optional(),
    // Added with pruning: a Longrun from before it drops the link and reads the summary as before.
    pruningId: z.string().min(1).optional(),
    // Added with the needle ledger: an entry from before it has none, and the next compaction scans the whole log.
    needles: needleLedgerSchema().optional(),
    // Added with summary editing: a Longrun from before it drops the field and reads the edit as a
    // compaction of its own, which shows the same view with the edited summary.
    editOf: z.string().min(1).optional(),
    // Added with skills: a Longrun from before them drops the field and shows the summary without
    // the skills it carried (they stay in the log, for recall and an export).
    skills: z.array(z.object({ name: z.string().min(1), text: z.string() })).optional(),
  }),
);

// Added with pruning. A Longrun from before it keeps such a line aside as an unknown kind of record
// and shows the pruned outputs in full, which is what undoing the pruning would do.
/** One output a pruning replaced by its stub. */
export const prunedOutputSchema = lazily(() =>
  z.object({
    messageId: z.string().min(1),
    toolCallId: z.string(),
    toolName: z.string(),
    // 'truncated' came later: a Longrun from before it keeps such a line aside and shows the outputs whole.
    kind: pruneKindSchema(),
    stub: z.string(),
    tokens: countSchema(),
  }),
);

/** The id of a message a compaction took out of the view. */
export const compactedIdSchema = lazily(() => z.string());

/**
 * Checks of a long array's items (`prunedOutputSchema`, `compactedIdSchema`) that make nothing: a
 * compaction writes thousands of them, and their schema's check makes objects for each item, which
 * the collector then stops the editor's thread to clear. Each accepts only what its schema accepts
 * (a plain object with the schema's fields, its strings and counts as the schema takes them); an item
 * one refuses is checked by the schema, which gives the reason.
 */
export function plainPrunedOutput(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const prototype: unknown = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return false;
  const output = value as Record<string, unknown>;
  return (
    typeof output.messageId === 'string' &&
    output.messageId.length > 0 &&
    typeof output.toolCallId === 'string' &&
    typeof output.toolName === 'string' &&
    PRUNE_KIND_SET.has(output.kind) &&
    typeof output.stub === 'string' &&
    typeof output.tokens === 'number' &&
    Number.isFinite(output.tokens) &&
    output.tokens >= 0
  );
}

export function plainCompactedId(value: unknown): boolean {
  return typeof value === 'string';
}

const PRUNE_KIND_SET: ReadonlySet<unknown> = new Set(PRUNE_KINDS);

const pruningEntrySchema = lazily(() =>
  z.object({
    id: z.string().min(1),
    reason: reasonSchema(),
    outputs: z.array(prunedOutputSchema()).min(1),
    tokensBefore: countSchema(),
    tokensAfter: countSchema(),
    createdAt: z.number(),
  }),
);

// Records written before usage carried its basis have a round number instead: they never calibrate.
const usageSchema = lazily(() =>
  z
    .object({
      anchorMessageId: z.string(),
      inputTokens: countSchema(),
      outputTokens: countSchema(),
      basis: z.string().nullable().optional(),
      round: z.number().int().min(0).optional(),
      localTokens: countSchema().optional(),
      localFraming: countSchema().optional(),
      // Added with the weighing of reports by their messages: a Longrun from before it drops it.
      localFixed: countSchema().optional(),
      model: z.string().optional(),
      truncated: z.boolean().optional(),
      // Added with the cost and the caches: a Longrun from before them drops them, and a summary's
      // usage then never calibrates there either, since its basis names no compaction.
      cacheReadTokens: countSchema().optional(),
      cacheWriteTokens: countSchema().optional(),
      cacheTtl: z.enum(CACHE_TTLS).optional().catch(undefined),
      at: z.number().optional(),
      // A provider kind of a later Longrun is dropped, not the report.
      provider: z.enum(PROVIDER_KINDS).optional().catch(undefined),
      modelId: z.string().optional(),
      servedBy: z.string().optional(),
      cost: z.number().min(0).optional(),
      estimated: z.boolean().optional(),
      // A purpose never falls back to none: a request that is not the agent's must never calibrate the view's count.
      purpose: z.enum(USAGE_PURPOSES).optional(),
      subagent: z.string().optional(),
    })
    .transform(({ round: _round, basis, ...rest }) => ({ ...rest, basis: basis === undefined ? LEGACY_BASIS : basis })),
);

const fileEventSchema = lazily(() =>
  z
    .object({
      kind: fileOpKindSchema(),
      path: z.string().min(1),
      actor: actorSchema(),
      at: z.number(),
      from: z.string().min(1).optional(),
      // Added with the stubs of written content: a Longrun from before it drops the mark.
      revert: z.literal(true).optional(),
    })
    .refine((event) => event.kind !== 'renamed' || event.from !== undefined, {
      message: 'a rename must say where the file came from',
      path: ['from'],
    }),
);

/** One object per type of `RECORD_TYPES`; `_everyRecordType` below checks that none is missing. */
const recordUnionSchema = lazily(() =>
  z.discriminatedUnion('type', [
    // Token counts by tokenizer name, added later: a line without them reads as before, and a Longrun
    // from before them drops them when it reads the line.
    // `turnId` names the turn a record was made on (see src/core/branches.ts); records from before
    // turns have none and form the trunk every branch starts with.
    z.object({
      type: z.literal('message'),
      message: messageSchema(),
      tokens: z.record(z.string(), z.number().int().min(0)).optional(),
      turnId: turnIdSchema(),
    }),
    z.object({ type: z.literal('compaction'), entry: compactionEntrySchema(), turnId: turnIdSchema() }),
    z.object({ type: z.literal('pruning'), entry: pruningEntrySchema(), turnId: turnIdSchema() }),
    z.object({ type: z.literal('undo'), entryId: z.string().min(1), at: z.number(), turnId: turnIdSchema() }),
    z.object({ type: z.literal('usage'), usage: usageSchema(), turnId: turnIdSchema() }),
    z.object({ type: z.literal('file'), event: fileEventSchema(), turnId: turnIdSchema() }),
    z.object({ type: z.literal('change'), change: fileChangeSchema(), turnId: turnIdSchema() }),
    z.object({ type: z.literal('turn'), turn: turnSchema(), turnId: turnIdSchema() }),
    // Added with the agent's plan, the runs its evidence is checked against, and the account of
    // abandoned turns: a Longrun from before them keeps such lines aside as records of an unknown
    // kind, and reads the conversation as it did.
    z.object({ type: z.literal('command'), run: commandRunSchema(), turnId: turnIdSchema() }),
    z.object({ type: z.literal('plan'), plan: planUpdateSchema(), turnId: turnIdSchema() }),
    z.object({ type: z.literal('account'), account: accountSchema(), turnId: turnIdSchema() }),
    z.object({ type: z.literal('subagent'), subagent: subagentEventSchema(), turnId: turnIdSchema() }),
  ]),
);

/**
 * Typed as `ZodType<LogRecord>` so the compiler checks that the schema and the type agree, and
 * passed through `withEveryType` so it also checks that no type of `RECORD_TYPES` lacks a schema.
 */
export const logRecordSchema = lazily((): z.ZodType<LogRecord> => withEveryType<RecordType>()(recordUnionSchema()));

/**
 * `schema`, accepted only when it reads every `type` in `T`: with a tagged union typed by its type
 * (`ZodType<LogRecord>`), a member the schema leaves out would otherwise go unnoticed.
 */
function withEveryType<T extends string>(): <S extends z.ZodType<{ readonly type: string }>>(
  schema: S & ([T] extends [z.output<S>['type']] ? unknown : never),
) => S {
  return (schema) => schema;
}

const turnIdSchema = lazily(() => z.string().min(1).optional());

const turnSchema = lazily(() =>
  z.object({ id: z.string().min(1), parent: z.string().min(1).nullable(), at: z.number(), chat: z.string().optional() }),
);

// Added with subagents: a Longrun from before them keeps such lines aside as an unknown kind of record,
// which loses nothing the model saw (a subagent's records never enter the agent's view).
const subagentEventSchema = lazily(() =>
  z.discriminatedUnion('kind', [
    z.object({
      kind: z.literal('start'),
      id: z.string().min(1),
      task: z.string(),
      scope: z.array(z.string()).optional(),
      model: z.string(),
      budget: z.object({ steps: z.number().int().min(1), tokens: countSchema() }),
      at: z.number(),
    }),
    z.object({ kind: z.literal('message'), id: z.string().min(1), message: messageSchema() }),
    z.object({
      kind: z.literal('compacted'),
      id: z.string().min(1),
      tokensBefore: countSchema(),
      tokensAfter: countSchema(),
      summary: z.string().optional(),
      pruned: z.number().int().min(0),
    }),
    z.object({
      kind: z.literal('end'),
      id: z.string().min(1),
      ending: subagentEndingSchema(),
      at: z.number(),
      steps: z.number().int().min(0),
      inputTokens: countSchema(),
      outputTokens: countSchema(),
      result: z.string(),
      cost: countSchema().optional(),
    }),
  ]),
);

const fileChangeSchema = lazily(() =>
  z.object({
    id: z.string().min(1),
    path: z.string().min(1),
    kind: fileChangeKindSchema(),
    beforeHash: z.string(),
    afterHash: z.string(),
    at: z.number().int().min(0),
    removed: z.string(),
    inserted: z.string(),
  }),
);

export const planStatusSchema = lazily(() => z.enum(PLAN_STATUSES));

const planUpdateSchema = lazily(() =>
  z.object({
    id: z.string().min(1),
    steps: z.array(
      z.object({
        step: z.string(),
        status: planStatusSchema(),
        evidence: z.object({ files: z.array(z.string()).optional(), commands: z.array(z.string()).optional() }).optional(),
        note: z.string().optional(),
      }),
    ),
    at: z.number(),
  }),
);

const commandRunSchema = lazily(() =>
  z.object({ command: z.string(), exitCode: z.number().int().optional(), stopped: z.literal(true).optional(), at: z.number() }),
);

const accountSchema = lazily(() => z.object({ id: z.string().min(1), text: z.string(), turns: z.array(z.string().min(1)), at: z.number() }));

export const headerSchema = lazily(() =>
  z.object({
    v: z.literal(CONVERSATION_FORMAT_VERSION),
    kind: z.literal(HEADER_KIND),
    id: z.string(),
    createdAt: z.number(),
    /** Absent in the first part, which is also how conversations from before parts begin. */
    part: z.number().int().min(2).optional(),
  }),
);

export const recordLineSchema = lazily(() => z.object({ v: z.literal(CONVERSATION_FORMAT_VERSION), record: logRecordSchema() }));

/** The first problem zod found, with where it is, and how many more there are. */
export function describeIssues(error: Pick<z.ZodError, 'issues'>): string {
  const [first, ...rest] = error.issues;
  if (!first) return 'invalid';
  const where = first.path.length > 0 ? `${first.path.map(String).join('.')}: ` : '';
  return `${where}${first.message}${rest.length > 0 ? ` (and ${rest.length} more)` : ''}`;
}
