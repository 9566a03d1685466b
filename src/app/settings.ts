import { DEFAULT_PROVIDER_KIND, PROVIDER_KINDS, type ProviderKind } from '../core/provider-kind';
import { z } from 'zod';
import type { CacheTtl } from '../core/log';
import { CACHE_TTLS } from '../core/log-values';
import { defaultApiRoot } from '../llm/providers/api-roots';
import { compactionConfigSchema, DEFAULT_CONFIG, resolveConfig, type CompactionConfig } from '../core/config';
import { parseAllowRule } from './commands/command-allowlist';

/**
 * The `longrun.*` settings, read through an injected getter so this file needs no `vscode`
 * (the extension passes `key => vscode.workspace.getConfiguration('longrun').get(key)`).
 *
 * Settings a repository could turn against its user (where data goes, what the summarizer is told,
 * what the agent may do unattended, what is logged) are `application`-scoped in `package.json`.
 * VS Code drops the workspace and folder values of `application` and `machine` settings when it
 * reads `.vscode/settings.json` and `.code-workspace` files (their parsers only accept the window,
 * resource and machine-overridable scopes), so `get` never returns one; reading through `inspect`
 * would need that filter here, which is why the extension reads through `get` only.
 * `test/unit/vscode/settings.test.ts` fails when one of those settings loses its scope.
 *
 * Every invalid value is replaced by its default and reported once, naming the full setting key
 * and the value used instead. The compaction settings are validated by the core's
 * `resolveConfig`; this file only maps setting keys onto the core's paths and back.
 * `package.json` declares the same keys and defaults; a unit test keeps the two in step.
 */

/** One model served by a configured endpoint. */
export interface EndpointModelSetting {
  /** The id the endpoint knows the model by, e.g. `llama3.1`. */
  readonly id: string;
  /** A display name; the id when absent. */
  readonly name?: string;
  readonly contextWindow?: number;
  readonly maxOutputTokens?: number;
  readonly toolCalling: boolean;
}

/**
 * An endpoint: an OpenAI-compatible server, or a provider's own API. Its API key is kept in
 * SecretStorage, never in settings.
 */
export interface EndpointSetting {
  /** Id-like name, the middle part of model references such as `longrun/<name>/<model>`. */
  readonly name: string;
  /** An http or https URL; for a native provider whose setting names none, its API's default root. */
  readonly baseUrl: string;
  /** The wire format the endpoint speaks; `openai-compatible` when absent. */
  readonly provider?: ProviderKind;
  /** The models to offer; empty when the setting names none: the server's list is offered (see `ListedModels`). */
  readonly models: readonly EndpointModelSetting[];
}

/**
 * What the user says of a model, over the model catalogue: its window, its answer's room, its prices
 * (US dollars per million tokens). Each field present replaces the catalogue's.
 */
export interface ModelOverride {
  readonly contextWindow?: number;
  readonly maxOutputTokens?: number;
  readonly input?: number;
  readonly output?: number;
  readonly cacheRead?: number;
  readonly cacheWrite?: number;
  readonly cacheWrite1h?: number;
}

export interface LongrunSettings {
  readonly compaction: CompactionConfig;
  /** At the critical level, ask before compacting. */
  readonly requireConfirmation: boolean;
  /** Notify once per conversation at the warning level. */
  readonly showWarnings: boolean;
  /** A model reference `vendor/id` for summaries; absent means the conversation's model. */
  readonly summarizerModel?: string;
  /**
   * When the conversation's own model writes the summaries: send the summary request as a
   * continuation of the conversation, which a provider's prompt cache still holds.
   */
  readonly summaryContinuesConversation: boolean;
  /** A context window forced by the user; absent means what the model reports. */
  readonly contextWindow?: number;
  readonly endpoints: readonly EndpointSetting[];
  readonly agent: {
    readonly autoApproveEdits: boolean;
    readonly maxSteps: number;
    /** Globs (relative to each workspace folder) of more files that always need approval before the agent writes them. */
    readonly protectedPaths: readonly string[];
    /** Commands `run_command` runs without asking: exact command lines, or prefixes written `npm run *` (see `command-allowlist.ts`). */
    readonly allowedCommands: readonly string[];
    /** Longest a command may run before it is stopped. */
    readonly commandTimeoutSeconds: number;
    /** Tools registered in VS Code (other extensions', MCP servers') the agent is offered: names, or "*" for all. */
    readonly editorTools: readonly string[];
  };
  /** The subagents the agent delegates tasks to (its `delegate` tool). */
  readonly subagent: {
    /** A model reference `vendor/id` for subagents; absent means the conversation's model. */
    readonly model?: string;
    /** Most steps (model calls) one subagent makes. */
    readonly maxSteps: number;
    /** Most tokens, input and output of all its steps, one subagent uses. */
    readonly maxTokens: number;
  };
  readonly telemetry: { readonly enabled: boolean; readonly otlpEndpoint?: string };
  /** How long a model call may send nothing: before its first chunk, and between chunks (ms). */
  readonly timeouts: { readonly firstChunkMs: number; readonly idleMs: number };
  /** Include message content in the log. */
  readonly verboseLogging: boolean;
  readonly cache: {
    /** How long Anthropic's breakpoints ask it to keep what they cache. */
    readonly ttl: CacheTtl;
    /** Ask OpenAI to keep cached prefixes for 24 hours. */
    readonly openaiRetention24h: boolean;
    /** Prune what the cache no longer holds once it has expired, before the next request. */
    readonly coldCompaction: boolean;
  };
  /** Windows and prices of models by model id, over the catalogue's (`longrun.models.overrides`). */
  readonly modelOverrides: Readonly<Record<string, ModelOverride>>;
  readonly skills: {
    /** Folders of the user's own skills, besides the workspace's: absolute paths, `~` for the home folder. */
    readonly userFolders: readonly string[];
  };
}

export interface SettingProblem {
  /** The full key, e.g. `longrun.compaction.warningThreshold`. */
  readonly setting: string;
  readonly value: unknown;
  /** Why the value is invalid, e.g. `must be at most 1`. */
  readonly message: string;
  /** The value used instead, in the setting's own terms; `undefined` when the value is ignored. */
  readonly usedInstead: unknown;
  /** Set when the setting was renamed: the new full key, under which `value` is used. */
  readonly renamedTo?: string;
}

const PREFIX = 'longrun.';

/** A compaction setting and the path of its value in the core's `CompactionConfig`. */
interface CompactionSetting {
  /** The key under `longrun.`. */
  readonly key: string;
  readonly path: readonly string[];
}

const COMPACTION_SETTINGS: readonly CompactionSetting[] = [
  { key: 'compaction.auto', path: ['autoCompact'] },
  { key: 'compaction.thresholdMode', path: ['trigger', 'mode'] },
  { key: 'compaction.warningThreshold', path: ['trigger', 'warningThreshold'] },
  { key: 'compaction.criticalThreshold', path: ['trigger', 'criticalThreshold'] },
  { key: 'compaction.reserveTokens', path: ['trigger', 'reserveTokens'] },
  { key: 'compaction.reserveShare', path: ['trigger', 'reserveShare'] },
  { key: 'compaction.systemReserve', path: ['trigger', 'systemReserve'] },
  { key: 'compaction.outputReserve', path: ['trigger', 'outputReserve'] },
  { key: 'compaction.safetyBuffer', path: ['trigger', 'safetyBuffer'] },
  { key: 'compaction.reservedThreshold', path: ['trigger', 'reservedThreshold'] },
  { key: 'compaction.windowThreshold', path: ['trigger', 'windowThreshold'] },
  { key: 'compaction.keepRecent.mode', path: ['keepRecent', 'mode'] },
  { key: 'compaction.keepRecent.tokens', path: ['keepRecent', 'tokens'] },
  { key: 'compaction.keepRecent.tokensShare', path: ['keepRecent', 'tokensShare'] },
  { key: 'compaction.keepRecent.messages', path: ['keepRecent', 'messages'] },
  { key: 'compaction.keepSystemMessages', path: ['keepSystemMessages'] },
  { key: 'compaction.minMessages', path: ['minMessages'] },
  { key: 'compaction.summary.depth', path: ['summary', 'depth'] },
  { key: 'compaction.summary.preserveCodeBlocks', path: ['summary', 'preserveCodeBlocks'] },
  { key: 'compaction.summary.preservePaths', path: ['summary', 'preserveFilePaths'] },
  { key: 'compaction.summary.targetTokens', path: ['summary', 'targetTokens'] },
  { key: 'compaction.summary.temperature', path: ['summary', 'temperature'] },
  { key: 'compaction.summary.customPrompt', path: ['summary', 'customPrompt'] },
  { key: 'compaction.summary.messageRole', path: ['summary', 'messageRole'] },
  { key: 'compaction.summary.progressSection', path: ['summary', 'progressSection'] },
  { key: 'compaction.summary.factsSections', path: ['summary', 'factsSections'] },
  // Every importance weight is a setting of the same name, so a new weight in the core shows up here.
  ...Object.keys(DEFAULT_CONFIG.importance).map((field) => ({ key: `compaction.importance.${field}`, path: ['importance', field] })),
  { key: 'compaction.targetThreshold', path: ['targetThreshold'] },
  { key: 'compaction.minGainShare', path: ['minGainShare'] },
  { key: 'compaction.onSummarizerFailure', path: ['onSummarizerFailure'] },
  { key: 'compaction.overflowRetries', path: ['overflowRetriesPerTurn'] },
  { key: 'compaction.truncation.resultChars', path: ['truncation', 'resultChars'] },
  { key: 'compaction.truncation.hugeResultChars', path: ['truncation', 'hugeResultChars'] },
  { key: 'compaction.truncation.messageChars', path: ['truncation', 'messageChars'] },
  { key: 'compaction.pruning.enabled', path: ['pruning', 'enabled'] },
  { key: 'compaction.pruning.largeOutputTokens', path: ['pruning', 'largeOutputTokens'] },
];

/**
 * Settings that were renamed (old key: new key, under `longrun.`). A value the user set under the
 * old key is still used while the new key has its default, and a notice names the new key.
 */
export const RENAMED_SETTINGS: Readonly<Record<string, string>> = {
  'compaction.thresholdPercent': 'compaction.reservedThreshold',
  'compaction.percent': 'compaction.windowThreshold',
};

/** Seconds in settings, milliseconds in the core; validated here so messages speak of seconds. */
const TIMEOUT_KEY = 'compaction.summarizerTimeoutSeconds';
const TIMEOUT_DEFAULT_SECONDS = DEFAULT_CONFIG.summarizerTimeoutMs / 1000;
const timeoutSecondsSchema = z.number().min(1).max(3600);

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}

const MODEL_REFERENCE = /^[^\s/]+\/\S+$/;

/** The settings outside the core's compaction config: schema and default, by key under `longrun.`. */
const OTHER_SETTINGS = {
  'compaction.requireConfirmation': { schema: z.boolean(), default: false },
  'compaction.showWarnings': { schema: z.boolean(), default: true },
  'compaction.model': {
    schema: z
      .string()
      .refine((s) => s.trim() === '' || MODEL_REFERENCE.test(s.trim()), 'must be empty or a model reference "vendor/id", e.g. "copilot/gpt-4o-mini"'),
    default: '',
  },
  'compaction.summary.continueConversation': { schema: z.boolean(), default: true },
  contextWindow: { schema: z.number().int().min(0), default: 0 },
  'agent.autoApproveEdits': { schema: z.boolean(), default: false },
  'agent.maxSteps': { schema: z.number().int().min(1).max(200), default: 25 },
  'agent.commandTimeoutSeconds': { schema: z.number().int().min(1).max(3600), default: 120 },
  'subagent.model': {
    schema: z
      .string()
      .refine((s) => s.trim() === '' || MODEL_REFERENCE.test(s.trim()), 'must be empty or a model reference "vendor/id", e.g. "longrun/local/qwen3"'),
    default: '',
  },
  'subagent.maxSteps': { schema: z.number().int().min(2).max(200), default: 15 },
  'subagent.maxTokens': { schema: z.number().int().min(5_000).max(100_000_000), default: 200_000 },
  'telemetry.enabled': { schema: z.boolean(), default: false },
  'telemetry.otlpEndpoint': {
    schema: z.string().refine((s) => s.trim() === '' || isHttpUrl(s.trim()), 'must be empty or an http or https URL'),
    default: '',
  },
  'logging.verbose': { schema: z.boolean(), default: false },
  // Generous for slow local models: a CPU reading a 30,000-token prompt can take minutes.
  'timeouts.firstChunkSeconds': { schema: z.number().int().min(5).max(3_600), default: 600 },
  'timeouts.idleSeconds': { schema: z.number().int().min(5).max(3_600), default: 120 },
  'cache.ttl': { schema: z.enum(CACHE_TTLS), default: '5m' as CacheTtl },
  'cache.openaiRetention': { schema: z.enum(['in-memory', '24h']), default: 'in-memory' as 'in-memory' | '24h' },
  'cache.coldCompaction': { schema: z.boolean(), default: true },
} satisfies Record<string, { schema: z.ZodType; default: unknown }>;

type OtherKey = keyof typeof OTHER_SETTINGS;

const ENDPOINTS_KEY = 'endpoints';
const PROTECTED_PATHS_KEY = 'agent.protectedPaths';
const protectedPathSchema = z.string().refine((s) => s.trim() !== '', 'must not be empty');
const ALLOWED_COMMANDS_KEY = 'agent.allowedCommands';
const allowedCommandSchema = z.string().superRefine((entry, context) => {
  const rule = parseAllowRule(entry);
  if ('problem' in rule) context.addIssue({ code: 'custom', message: rule.problem });
});
const EDITOR_TOOLS_KEY = 'agent.editorTools';
const SKILL_FOLDERS_KEY = 'skills.userFolders';
const skillFolderSchema = z.string().refine((s) => s.trim() !== '', 'must not be empty');
const MODEL_OVERRIDES_KEY = 'models.overrides';
const price = z.number().min(0);
const modelOverrideSchema = z.strictObject({
  contextWindow: z.number().int().min(1).optional(),
  maxOutputTokens: z.number().int().min(1).optional(),
  input: price.optional(),
  output: price.optional(),
  cacheRead: price.optional(),
  cacheWrite: price.optional(),
  cacheWrite1h: price.optional(),
});
const editorToolSchema = z.string().refine((s) => s.trim() !== '', 'must not be empty');

const endpointModelSchema = z.object({
  id: z.string().trim().min(1),
  name: z.string().trim().min(1).optional(),
  contextWindow: z.number().int().min(1).optional(),
  maxOutputTokens: z.number().int().min(1).optional(),
  toolCalling: z.boolean().default(true),
});

const ENDPOINT_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

/**
 * A native provider's endpoint may leave `baseUrl` out (its API's own root is used); an
 * OpenAI-compatible one is a server of the user's, whose URL nothing else can tell. An unknown
 * provider refuses the entry: sending the conversation (and the key) in another wire format than the
 * server speaks would fail at best.
 */
const endpointSchema = z
  .object({
    name: z.string().regex(ENDPOINT_NAME, 'must be an id: letters, digits, ".", "_" or "-", starting with a letter or digit'),
    provider: z.enum(PROVIDER_KINDS).optional(),
    baseUrl: z.string().refine(isHttpUrl, 'must be an http or https URL').optional(),
    models: z.array(endpointModelSchema).optional(),
  })
  .superRefine((endpoint, context) => {
    if (endpoint.baseUrl !== undefined || (endpoint.provider ?? DEFAULT_PROVIDER_KIND) !== 'openai-compatible') return;
    context.addIssue({
      code: 'custom',
      path: ['baseUrl'],
      message: `is missing: an OpenAI-compatible endpoint needs its server's URL (e.g. http://localhost:11434/v1), or a "provider" (${PROVIDER_KINDS.filter((k) => k !== 'openai-compatible').join(', ')})`,
    });
  });

/** Every key `readSettings` reads (under `longrun.`), with its default in the setting's own terms. */
export function settingDefaults(): Record<string, unknown> {
  const defaults: Record<string, unknown> = {};
  for (const s of COMPACTION_SETTINGS) defaults[PREFIX + s.key] = structuredClone(readPath(DEFAULT_CONFIG, s.path));
  defaults[PREFIX + TIMEOUT_KEY] = TIMEOUT_DEFAULT_SECONDS;
  for (const [key, spec] of Object.entries(OTHER_SETTINGS)) defaults[PREFIX + key] = spec.default;
  defaults[PREFIX + ENDPOINTS_KEY] = [];
  defaults[PREFIX + PROTECTED_PATHS_KEY] = [];
  defaults[PREFIX + ALLOWED_COMMANDS_KEY] = [];
  defaults[PREFIX + EDITOR_TOOLS_KEY] = [];
  defaults[PREFIX + SKILL_FOLDERS_KEY] = [];
  defaults[PREFIX + MODEL_OVERRIDES_KEY] = {};
  return defaults;
}

/** Where a setting's value comes from, for the settings a workspace may set but not to any value. */
export interface SettingOrigin {
  /** The value comes from the workspace's or a folder's settings (a repository's `.vscode/settings.json`). */
  readonly fromWorkspace: boolean;
  /** The user's own value, used instead of a workspace value that is refused. */
  readonly userValue?: unknown;
}

/** The smallest `longrun.contextWindow` a workspace may set: below it, every step would compact. */
export const MIN_WORKSPACE_CONTEXT_WINDOW = 1_024;

/**
 * Reads every `longrun.*` setting; invalid values become their defaults, each reported once.
 * `origin` tells where a value comes from (VS Code's `inspect`); without it every value is the user's.
 */
export function readSettings(
  get: (key: string) => unknown,
  origin: (key: string) => SettingOrigin = () => ({ fromWorkspace: false }),
): { settings: LongrunSettings; problems: SettingProblem[] } {
  const problems: SettingProblem[] = [];
  const compaction = readCompaction(get, problems);

  const other = <K extends OtherKey>(key: K): (typeof OTHER_SETTINGS)[K]['default'] => {
    const spec = OTHER_SETTINGS[key];
    const raw = get(key);
    if (raw === undefined || raw === null) return spec.default;
    const parsed = spec.schema.safeParse(raw, { error: friendlyIssue });
    if (parsed.success) return parsed.data as (typeof OTHER_SETTINGS)[K]['default'];
    problems.push({ setting: PREFIX + key, value: raw, message: firstMessage(parsed.error), usedInstead: spec.default });
    return spec.default;
  };

  const requireConfirmation = other('compaction.requireConfirmation');
  const showWarnings = other('compaction.showWarnings');
  const summarizerModel = other('compaction.model').trim();
  const summaryContinuesConversation = other('compaction.summary.continueConversation');
  const contextWindow = workspaceContextWindow(other('contextWindow'), origin('contextWindow'), problems);
  const autoApproveEdits = other('agent.autoApproveEdits');
  const maxSteps = other('agent.maxSteps');
  const commandTimeoutSeconds = other('agent.commandTimeoutSeconds');
  const subagentModel = other('subagent.model').trim();
  const subagent = {
    ...(subagentModel !== '' ? { model: subagentModel } : {}),
    maxSteps: other('subagent.maxSteps'),
    maxTokens: other('subagent.maxTokens'),
  };
  const telemetryEnabled = other('telemetry.enabled');
  const otlpEndpoint = other('telemetry.otlpEndpoint').trim();
  const verboseLogging = other('logging.verbose');
  const timeouts = { firstChunkMs: other('timeouts.firstChunkSeconds') * 1_000, idleMs: other('timeouts.idleSeconds') * 1_000 };
  const endpoints = readEndpoints(get(ENDPOINTS_KEY), problems);
  const protectedPaths = readStringList(
    PROTECTED_PATHS_KEY,
    'must be a list of glob patterns',
    protectedPathSchema,
    get(PROTECTED_PATHS_KEY),
    problems,
  );
  const allowedCommands = readStringList(
    ALLOWED_COMMANDS_KEY,
    'must be a list of commands',
    allowedCommandSchema,
    get(ALLOWED_COMMANDS_KEY),
    problems,
  );
  const editorTools = readStringList(EDITOR_TOOLS_KEY, 'must be a list of tool names', editorToolSchema, get(EDITOR_TOOLS_KEY), problems);
  const cache = {
    ttl: other('cache.ttl'),
    openaiRetention24h: other('cache.openaiRetention') === '24h',
    coldCompaction: other('cache.coldCompaction'),
  };
  const modelOverrides = readModelOverrides(get(MODEL_OVERRIDES_KEY), problems);
  const userFolders = readStringList(SKILL_FOLDERS_KEY, 'must be a list of folders', skillFolderSchema, get(SKILL_FOLDERS_KEY), problems);

  return {
    settings: {
      compaction,
      requireConfirmation,
      showWarnings,
      ...(summarizerModel !== '' ? { summarizerModel } : {}),
      summaryContinuesConversation,
      ...(contextWindow > 0 ? { contextWindow } : {}),
      endpoints,
      agent: { autoApproveEdits, maxSteps, protectedPaths, allowedCommands, commandTimeoutSeconds, editorTools },
      subagent,
      telemetry: { enabled: telemetryEnabled, ...(otlpEndpoint !== '' ? { otlpEndpoint } : {}) },
      timeouts,
      verboseLogging,
      cache,
      modelOverrides,
      skills: { userFolders },
    },
    problems,
  };
}

/**
 * One sentence for the user, e.g. `Longrun: "longrun.compaction.warningThreshold" is 7, which is
 * not valid (must be at most 1); using 0.75 instead.`
 */
/**
 * A context window a repository's settings make tiny would force a compaction at every step (and a
 * summary sent at every step): below {@link MIN_WORKSPACE_CONTEXT_WINDOW} it is refused there, and
 * the user's own value, or the model's window, used instead.
 */
function workspaceContextWindow(value: number, origin: SettingOrigin, problems: SettingProblem[]): number {
  if (!origin.fromWorkspace || value === 0 || value >= MIN_WORKSPACE_CONTEXT_WINDOW) return value;
  const user = OTHER_SETTINGS.contextWindow.schema.safeParse(origin.userValue);
  const usedInstead = user.success ? user.data : 0;
  problems.push({
    setting: `${PREFIX}contextWindow`,
    value,
    message: `below ${MIN_WORKSPACE_CONTEXT_WINDOW.toLocaleString('en-US')} tokens in the settings of this workspace, where a repository could set it to force a compaction at every step; set it in your user settings if you mean it`,
    usedInstead,
  });
  return usedInstead;
}

export function formatProblem(p: SettingProblem): string {
  if (p.renamedTo !== undefined) {
    return `Longrun: "${p.setting}" is now "${p.renamedTo}"; your ${show(p.value)} is used until you rename it in your settings.`;
  }
  if (p.usedInstead === undefined) {
    return `Longrun: "${p.setting}" contains ${show(p.value)}, which is not valid (${p.message}); it is ignored.`;
  }
  return `Longrun: "${p.setting}" is ${show(p.value)}, which is not valid (${p.message}); using ${show(p.usedInstead)} instead.`;
}

function readCompaction(get: (key: string) => unknown, problems: SettingProblem[]): CompactionConfig {
  const input: Record<string, unknown> = {};
  const raw = new Map<string, unknown>();
  for (const s of COMPACTION_SETTINGS) {
    let value = get(s.key);
    const formerKey = Object.keys(RENAMED_SETTINGS).find((old) => RENAMED_SETTINGS[old] === s.key);
    const former = formerKey === undefined ? undefined : get(formerKey);
    // VS Code gives a registered key its default when the user did not set it; an old key has none.
    if (formerKey !== undefined && former !== undefined && former !== null && isDefault(value, s.path)) {
      value = former;
      problems.push({ setting: PREFIX + formerKey, value: former, message: 'renamed', usedInstead: former, renamedTo: PREFIX + s.key });
    }
    raw.set(s.key, value);
    if (value !== undefined && value !== null) writePath(input, s.path, value);
  }

  const seconds = get(TIMEOUT_KEY);
  if (seconds !== undefined && seconds !== null) {
    const parsed = timeoutSecondsSchema.safeParse(seconds, { error: friendlyIssue });
    if (parsed.success) input.summarizerTimeoutMs = Math.round(parsed.data * 1000);
    else problems.push({ setting: PREFIX + TIMEOUT_KEY, value: seconds, message: firstMessage(parsed.error), usedInstead: TIMEOUT_DEFAULT_SECONDS });
  }

  const resolved = resolveConfig(input);
  const reported = new Set<string>();
  for (const problem of resolved.problems) {
    const corePath = problem.setting.split('.');
    const setting = COMPACTION_SETTINGS.find((s) => startsWith(corePath, s.path));
    if (!setting) {
      // Not expected (only mapped values are passed in), but never hidden.
      problems.push({ ...problem, setting: `${PREFIX}compaction.${problem.setting}`, message: renameCorePaths(problem.message) });
      continue;
    }
    // A value can fail twice (its own check, then warning above critical): report it once.
    if (reported.has(setting.key)) continue;
    reported.add(setting.key);
    const value = raw.get(setting.key);
    problems.push({
      setting: PREFIX + setting.key,
      value,
      message: explain(setting.path, value) ?? renameCorePaths(problem.message),
      // What the resolved configuration holds: the default, or for a warning above critical the critical level.
      usedInstead: structuredClone(readPath(resolved.config, setting.path)),
    });
  }
  return resolved.config;
}

function isDefault(value: unknown, path: readonly string[]): boolean {
  return value === undefined || value === null || JSON.stringify(value) === JSON.stringify(readPath(DEFAULT_CONFIG, path));
}

function readEndpoints(raw: unknown, problems: SettingProblem[]): EndpointSetting[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) {
    problems.push({ setting: PREFIX + ENDPOINTS_KEY, value: raw, message: 'must be a list of endpoints', usedInstead: [] });
    return [];
  }
  const endpoints: EndpointSetting[] = [];
  const names = new Map<string, number>();
  raw.forEach((item: unknown, index) => {
    const label = `entry ${index + 1}${describeName(item)}`;
    const reject = (message: string) =>
      problems.push({ setting: PREFIX + ENDPOINTS_KEY, value: item, message: `${label}: ${message}`, usedInstead: undefined });
    const parsed = endpointSchema.safeParse(item, { error: friendlyIssue });
    if (!parsed.success) return reject(firstMessage(parsed.error));
    const key = parsed.data.name.toLowerCase();
    const first = names.get(key);
    if (first !== undefined) return reject(`the name "${parsed.data.name}" is already used by entry ${first + 1}`);
    names.set(key, index);
    const { provider } = parsed.data;
    endpoints.push({
      name: parsed.data.name,
      baseUrl: parsed.data.baseUrl ?? defaultApiRoot(provider ?? DEFAULT_PROVIDER_KIND) ?? '',
      ...(provider !== undefined ? { provider } : {}),
      models: (parsed.data.models ?? []).map((m) => ({
        id: m.id,
        ...(m.name !== undefined ? { name: m.name } : {}),
        ...(m.contextWindow !== undefined ? { contextWindow: m.contextWindow } : {}),
        ...(m.maxOutputTokens !== undefined ? { maxOutputTokens: m.maxOutputTokens } : {}),
        toolCalling: m.toolCalling,
      })),
    });
  });
  return endpoints;
}

/**
 * `longrun.models.overrides`: each model's entry is checked on its own, so that a typo in one leaves
 * the others in force; an invalid entry is reported (naming the model and the field) and ignored.
 */
function readModelOverrides(raw: unknown, problems: SettingProblem[]): Record<string, ModelOverride> {
  if (raw === undefined || raw === null) return {};
  if (typeof raw !== 'object' || Array.isArray(raw)) {
    problems.push({
      setting: PREFIX + MODEL_OVERRIDES_KEY,
      value: raw,
      message: 'must be an object of models by id, e.g. { "my-model": { "input": 0.5, "output": 1.5 } }',
      usedInstead: {},
    });
    return {};
  }
  const overrides: Record<string, ModelOverride> = {};
  for (const [model, entry] of Object.entries(raw as Record<string, unknown>)) {
    const parsed = modelOverrideSchema.safeParse(entry, { error: friendlyIssue });
    if (parsed.success && model.trim() !== '') overrides[model.trim()] = stripUndefined(parsed.data);
    else
      problems.push({
        setting: PREFIX + MODEL_OVERRIDES_KEY,
        value: { [model]: entry },
        message: `the entry of "${model}": ${parsed.success ? 'the model id must not be empty' : firstMessage(parsed.error)}`,
        usedInstead: undefined,
      });
  }
  return overrides;
}

function stripUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

/**
 * A list setting (`agent.protectedPaths`, `agent.allowedCommands`, `agent.editorTools`, `skills.userFolders`): each valid entry is kept,
 * trimmed, and each invalid one reported on its own: a typo in one entry must not lift the
 * protection of the others, nor drop the user's other allowed commands.
 */
function readStringList(key: string, notAList: string, schema: z.ZodType<string>, raw: unknown, problems: SettingProblem[]): string[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) {
    problems.push({ setting: PREFIX + key, value: raw, message: notAList, usedInstead: [] });
    return [];
  }
  const entries: string[] = [];
  raw.forEach((item: unknown, index) => {
    const parsed = schema.safeParse(item, { error: friendlyIssue });
    if (parsed.success) entries.push(parsed.data.trim());
    else problems.push({ setting: PREFIX + key, value: item, message: `item ${index + 1} ${firstMessage(parsed.error)}`, usedInstead: undefined });
  });
  return entries;
}

function describeName(item: unknown): string {
  if (typeof item === 'object' && item !== null && 'name' in item && typeof item.name === 'string') return ` ("${item.name}")`;
  return '';
}

/** Re-checks a value against the core's own schema for it, to say in plain words what is wrong. */
function explain(path: readonly string[], value: unknown): string | undefined {
  const schema = leafSchema(path);
  if (!schema) return undefined;
  const parsed = schema.safeParse(value, { error: friendlyIssue });
  return parsed.success ? undefined : firstMessage(parsed.error);
}

function leafSchema(path: readonly string[]): z.ZodType | undefined {
  let schema: z.ZodType = compactionConfigSchema;
  for (const key of path) {
    const object = unwrap(schema);
    if (!(object instanceof z.ZodObject)) return undefined;
    const next = (object.shape as Record<string, z.ZodType | undefined>)[key];
    if (!next) return undefined;
    schema = next;
  }
  return schema;
}

function unwrap(schema: z.ZodType): z.ZodType {
  let s: z.ZodType = schema;
  while (s instanceof z.ZodPrefault || s instanceof z.ZodDefault || s instanceof z.ZodOptional) s = s.unwrap() as z.ZodType;
  return s;
}

/** The core names its paths (`trigger.criticalThreshold`); the user knows the setting keys. */
function renameCorePaths(message: string): string {
  let out = message;
  const byLength = [...COMPACTION_SETTINGS].sort((a, b) => b.path.join('.').length - a.path.join('.').length);
  for (const s of byLength) out = out.split(s.path.join('.')).join(`"${PREFIX}${s.key}"`);
  return out;
}

const TYPE_WORDS: Record<string, string> = {
  number: 'a number',
  int: 'a whole number',
  boolean: 'true or false',
  string: 'a string',
  array: 'a list',
  object: 'an object',
};

/** Plain words for each kind of zod issue, without the path (see `firstMessage`); `undefined` keeps zod's own. */
function friendlyIssue(issue: z.core.$ZodRawIssue): string | undefined {
  switch (issue.code) {
    case 'invalid_type':
      if (issue.input === undefined) return 'is missing';
      return `must be ${TYPE_WORDS[issue.expected] ?? issue.expected}`;
    case 'too_small': {
      const min = Number(issue.minimum);
      if (issue.origin === 'string') return min <= 1 ? 'must not be empty' : `must have at least ${min} characters`;
      if (issue.origin === 'array') return `must have at least ${min} item${min === 1 ? '' : 's'}`;
      return issue.inclusive ? `must be at least ${min}` : `must be above ${min}`;
    }
    case 'too_big': {
      const max = Number(issue.maximum);
      if (issue.origin === 'string') return `must have at most ${max} characters`;
      if (issue.origin === 'array') return `must have at most ${max} items`;
      return issue.inclusive ? `must be at most ${max}` : `must be below ${max}`;
    }
    case 'invalid_value':
      return `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
    case 'invalid_format':
      return issue.format === 'regex' ? 'has the wrong form' : `must be a valid ${issue.format}`;
    default:
      // Refinements carry their own message, which zod prefers to this one.
      return undefined;
  }
}

/** Where an issue is inside a value, in words: `item 2`, `baseUrl`, `models item 1`. */
function pathText(path: readonly PropertyKey[]): string {
  return path.map((segment) => (typeof segment === 'number' ? `item ${segment + 1}` : String(segment))).join(' ');
}

/**
 * The first issue, with where it is inside the value: `item 2 must be a string`,
 * `in models item 1, contextWindow must be a number`.
 */
function firstMessage(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return 'invalid';
  const last = issue.path.at(-1);
  if (issue.path.length > 1 && typeof last === 'string') return `in ${pathText(issue.path.slice(0, -1))}, ${last} ${issue.message}`;
  const where = pathText(issue.path);
  return where ? `${where} ${issue.message}` : issue.message;
}

function show(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}

function startsWith(path: readonly string[], prefix: readonly string[]): boolean {
  return prefix.length <= path.length && prefix.every((key, i) => path[i] === key);
}

function readPath(root: unknown, path: readonly string[]): unknown {
  let node = root;
  for (const key of path) {
    if (typeof node !== 'object' || node === null) return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}

function writePath(root: Record<string, unknown>, path: readonly string[], value: unknown): void {
  let node = root;
  path.forEach((key, i) => {
    if (i === path.length - 1) node[key] = value;
    else {
      const next = node[key];
      node = typeof next === 'object' && next !== null ? (next as Record<string, unknown>) : (node[key] = {});
    }
  });
}
