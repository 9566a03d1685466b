import { z } from 'zod';
import { isRecord } from './errors';
import { SUMMARY_ROLES } from './log-values';

/**
 * Every option of the compaction engine, with Longrun's defaults. The README's defaults table
 * says what each option does and why its default was chosen. Settings in VS Code (`longrun.compaction.*`) are read through
 * `resolveConfig`, so an invalid value is reported and replaced by its default, never fatal.
 */

const share = z.number().min(0).max(1);
const tokens = z.number().int().min(0);

export const DEFAULT_KEYWORDS = [
  'error',
  'fail',
  'bug',
  'fix',
  'todo',
  'must',
  'never',
  'always',
  'important',
  'decide',
  'decision',
  'requirement',
  'constraint',
];

export const triggerSchema = z
  .object({
    /**
     * Which rule decides when to compact:
     * - `levels`: warning and critical shares of the window; compact at critical.
     * - `reserve`: compact above `limit − reserve`, reserve = min(reserveTokens, reserveShare × limit).
     * - `reserved-percent`: compact above (limit − system − output − safety) × reservedThreshold.
     * - `percent`: compact above `windowThreshold × limit`.
     */
    mode: z.enum(['levels', 'reserve', 'reserved-percent', 'percent']).default('levels'),
    warningThreshold: share.default(0.75),
    criticalThreshold: share.default(0.9),
    reserveTokens: tokens.default(16_384),
    reserveShare: share.default(0.25),
    systemReserve: tokens.default(2_000),
    outputReserve: tokens.default(4_000),
    safetyBuffer: tokens.default(5_000),
    reservedThreshold: share.default(0.8),
    windowThreshold: share.default(0.8),
  })
  .prefault({});

export const keepRecentSchema = z
  .object({
    /**
     * Keep the recent part by tokens, by a count of messages, or keep the newer half of the
     * messages and summarize the oldest half.
     */
    mode: z.enum(['tokens', 'messages', 'half']).default('tokens'),
    /** 20,000 tokens, or `tokensShare` of the window when that is smaller. */
    tokens: tokens.default(20_000),
    tokensShare: share.default(0.35),
    messages: z.number().int().min(0).default(10),
  })
  .prefault({});

export const importanceSchema = z
  .object({
    roleSystem: z.number().default(10),
    roleUser: z.number().default(5),
    roleAssistant: z.number().default(3),
    /** Tool results, weighted on their own; the default equals the assistant's. */
    roleTool: z.number().default(3),
    /** Score multiplier per step back from the newest message (exponential recency decay). */
    recencyDecay: z.number().gt(0).max(1).default(0.95),
    /** Weight of the recency term. */
    recencyWeight: z.number().min(0).default(2),
    questionBonus: z.number().default(2),
    toolCallBonus: z.number().default(4),
    keywordBonus: z.number().default(1.5),
    keywords: z.array(z.string().min(1)).default(DEFAULT_KEYWORDS),
    lengthPer100Chars: z.number().default(1),
    lengthCap: z.number().min(0).default(3),
    codeBlockBonus: z.number().default(1.5),
    filePathBonus: z.number().default(1),
    decisionBonus: z.number().default(1),
    /**
     * Messages scoring at least this are marked to keep (high-importance messages are kept in
     * full): sent to the summarizer uncut and listed in the request's keep list, which asks for
     * them word for word. With the default weights a user message or a tool call needs a few
     * signals (a path, a code block, a decision, keywords) on top of its role to reach it; routine
     * tool calls and results stay below it.
     */
    keepThreshold: z.number().default(10),
    /** Most tokens the messages marked to keep may hold together; 0 turns the keep list off. */
    keepBudgetTokens: tokens.default(400),
    /** Tool calls and their results are marked to keep whatever their score. */
    keepToolResults: z.boolean().default(false),
  })
  .prefault({});

export const summarySchema = z
  .object({
    depth: z.enum(['brief', 'standard', 'detailed']).default('standard'),
    preserveCodeBlocks: z.boolean().default(true),
    preserveFilePaths: z.boolean().default(true),
    /** A summary of at most about this many tokens. */
    targetTokens: z.number().int().min(50).default(800),
    temperature: z.number().min(0).max(2).default(0.3),
    /** The summarizer's system prompt, used exactly as written, no persona added. Empty means the default. */
    customPrompt: z.string().default(''),
    /** Role of the summary message in the model's view: user (every provider accepts it first) or assistant. */
    messageRole: z.enum(SUMMARY_ROLES).default('user'),
    /** A Progress section (Done / In Progress / Blocked) in the summary template. */
    progressSection: z.boolean().default(false),
    /** Preferences, Facts and Previous Discussion sections in the summary template. */
    factsSections: z.boolean().default(false),
  })
  .prefault({});

export const truncationSchema = z
  .object({
    /** Tool results longer than this are truncated in the summary request. */
    resultChars: z.number().int().min(100).default(2_000),
    /** A single result longer than this is cut, keeping head and tail, with a marker saying how much was cut. */
    hugeResultChars: z.number().int().min(100).default(10_000),
    /** Any other message longer than this is truncated (user messages are kept verbatim below it). */
    messageChars: z.number().int().min(500).default(20_000),
  })
  .prefault({});

export const pruningSchema = z
  .object({
    /**
     * Replace superseded tool outputs (a file read again or edited since, a listing or search run
     * again) and old large ones with stubs before summarizing, and instead of a summary when that
     * is enough.
     */
    enabled: z.boolean().default(true),
    /** An output in the part a summary would replace is pruned from this many tokens on. */
    largeOutputTokens: z.number().int().min(100).default(1_000),
  })
  .prefault({});

export const compactionConfigSchema = z
  .object({
    autoCompact: z.boolean().default(true),
    trigger: triggerSchema,
    keepRecent: keepRecentSchema,
    keepSystemMessages: z.boolean().default(true),
    /** No automatic compaction of a conversation with fewer conversational messages than this. */
    minMessages: z.number().int().min(0).default(6),
    summary: summarySchema,
    truncation: truncationSchema,
    pruning: pruningSchema,
    importance: importanceSchema,
    /**
     * The share of the window an automatic compaction brings the view down to (below the warning
     * level): pruning alone is enough only when it gets there. Each compaction makes the provider
     * read the whole prompt again, its prompt cache no longer matching, so each buys room for many turns.
     */
    targetThreshold: share.default(0.5),
    /** A compaction that frees less than this share of the view is reported as low-gain (anti-loop). */
    minGainShare: share.default(0.1),
    /** Compactions retried on a context-overflow error, per turn (once by default). */
    overflowRetriesPerTurn: z.number().int().min(0).max(3).default(1),
    /** What to do when the summarizer fails: an extractive summary made without a model, or nothing. */
    onSummarizerFailure: z.enum(['fallback', 'keep-history']).default('fallback'),
    /** Longest wait for one summarizer call. */
    summarizerTimeoutMs: z.number().int().min(1_000).default(120_000),
  })
  .prefault({});

export type CompactionConfig = z.infer<typeof compactionConfigSchema>;
export type TriggerConfig = CompactionConfig['trigger'];
export type KeepRecentConfig = CompactionConfig['keepRecent'];
export type ImportanceConfig = CompactionConfig['importance'];
export type SummaryConfig = CompactionConfig['summary'];
export type TruncationConfig = CompactionConfig['truncation'];
export type PruningConfig = CompactionConfig['pruning'];

export const DEFAULT_CONFIG: CompactionConfig = compactionConfigSchema.parse({});

export interface ConfigProblem {
  /** Dotted path of the setting, e.g. `trigger.warningThreshold`. */
  readonly setting: string;
  readonly value: unknown;
  readonly message: string;
  /** The value used instead. */
  readonly usedInstead: unknown;
}

/**
 * Validates a (partial) configuration. Each invalid value is replaced by its default and
 * reported once; the rest of the configuration is kept.
 */
export function resolveConfig(input: unknown): { config: CompactionConfig; problems: ConfigProblem[] } {
  const problems: ConfigProblem[] = [];
  let candidate: unknown = isRecord(input) ? structuredClone(input) : {};
  if (input !== undefined && input !== null && !isRecord(input)) {
    problems.push({ setting: '(compaction settings)', value: input, message: 'expected an object', usedInstead: '(defaults)' });
  }
  // Each pass removes the offending values; a schema of finite depth converges quickly.
  for (let pass = 0; pass < 50; pass++) {
    const parsed = compactionConfigSchema.safeParse(candidate);
    if (parsed.success) return { config: crossCheck(parsed.data, problems), problems };
    for (const issue of parsed.error.issues) {
      const path = issue.path.map(String);
      const value = readPath(candidate, path);
      deletePath(candidate, path);
      problems.push({
        setting: path.join('.'),
        value,
        message: issue.message,
        usedInstead: readPath(DEFAULT_CONFIG, path),
      });
    }
    if (!isRecord(candidate)) candidate = {};
  }
  return { config: DEFAULT_CONFIG, problems };
}

function crossCheck(config: CompactionConfig, problems: ConfigProblem[]): CompactionConfig {
  const t = config.trigger;
  if (t.warningThreshold > t.criticalThreshold) {
    problems.push({
      setting: 'trigger.warningThreshold',
      value: t.warningThreshold,
      message: `must not be above trigger.criticalThreshold (${t.criticalThreshold})`,
      usedInstead: t.criticalThreshold,
    });
    return { ...config, trigger: { ...t, warningThreshold: t.criticalThreshold } };
  }
  return config;
}

function readPath(root: unknown, path: readonly string[]): unknown {
  let node: unknown = root;
  for (const key of path) {
    if (!isRecord(node) && !Array.isArray(node)) return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}

function deletePath(root: unknown, path: readonly string[]): void {
  if (path.length === 0) return;
  // An invalid array element invalidates the whole array: the default replaces it.
  let cut = path.length;
  for (let i = 0; i < path.length; i++) {
    if (Array.isArray(readPath(root, path.slice(0, i)))) {
      cut = i;
      break;
    }
  }
  const parentPath = path.slice(0, cut - 1);
  const parent = readPath(root, parentPath);
  const key = path[cut - 1];
  if (key !== undefined && isRecord(parent)) delete parent[key];
}
