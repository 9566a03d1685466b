import { lazily } from '../core/lazy';
import { asSchema, jsonSchema, tool, type JSONSchema7, type ToolSet } from 'ai';
import { z } from 'zod';
import {
  ToolFailure,
  type CommandPort,
  type CommandRun,
  type ReadResult,
  type SearchMatch,
  type WorkspacePort,
  type WrittenText,
} from './workspace-port';
import { formatCapturedOutput } from './command-output';
import { splitLines } from '../core/lines';
import { TOOL_NAMES } from '../core/tool-names';
import { PLAN_LIMITS } from '../core/plan';
import { PLAN_STATUSES } from '../core/log-values';

/**
 * The agent's AI SDK tools over a {@link WorkspacePort}. Every tool returns a compact string for the
 * model; a `ToolFailure` comes back as `Error: <message>` so the model can correct itself, while
 * any other error is a bug and is rethrown.
 */

/** What a tool did to a file, for the file ledger (`src/core/file-ledger.ts`). */
export interface AgentFileEvent {
  readonly kind: 'read' | 'created' | 'modified';
  /** Workspace-relative path, as the port reported it. */
  readonly path: string;
  /** For a write to disk: the file's text before and after it. */
  readonly written?: WrittenText;
}

export interface AgentToolOptions {
  /** Offer no write tools and no `run_command` (untrusted workspace). */
  readonly readOnly: boolean;
  /** The terminal for `run_command`; without it the tool is not offered. */
  readonly commands?: CommandPort;
  /** Longest tool result sent to the model; longer results are cut with a note. Default 20,000. */
  readonly maxResultChars?: number;
  /** Called after each successful read, create and edit. */
  readonly onFileEvent?: (event: AgentFileEvent) => void;
  /** The conversation's archive, for the `recall` tool; without it the tool is not offered. */
  readonly recall?: RecallPort;
  /** The skills listed in the system prompt, for the `skill` tool; without it the tool is not offered. */
  readonly skills?: SkillPort;
  /** Keeps the agent's plan, for the `plan` tool; without it the tool is not offered. */
  readonly plan?: PlanPort;
  /** Called after each command `run_command` ran, before the model gets its result. */
  readonly onCommandRun?: (run: CommandRun) => void | Promise<void>;
  /**
   * Commands that run without asking (the user's allow list), for a `run_command` that refuses any
   * other instead of asking: offered even when `readOnly` (a subagent's), never with `commands`.
   */
  readonly allowedCommandsOnly?: CommandPort;
  /** The subagents, for the `delegate` tool; without it the tool is not offered. */
  readonly delegate?: DelegatePort;
  /**
   * Short descriptions, for a small window: each tool said in a sentence, its parameters by name and
   * type alone (what a call cannot do without is in the tool's sentence). The tools do the same.
   */
  readonly brief?: boolean;
}

/** What the `skill` tool asks: a skill's instructions, or one file of its folder. */
export interface SkillRequest {
  readonly name: string;
  /** A path relative to the skill's folder; absent for the instructions (the `SKILL.md` body). */
  readonly file?: string;
}

/**
 * Loads the skills the system prompt lists, as text for the model: a skill's instructions once per
 * conversation, or a file of its folder (never one outside it). Throws `ToolFailure` for what the
 * model should be told (no such skill, a file outside the folder, too large).
 */
export interface SkillPort {
  load(request: SkillRequest, signal: AbortSignal): Promise<string>;
}

/**
 * Keeps the agent's plan (`src/core/plan.ts`): checks an update the `plan` tool was given, writes it
 * to the conversation, and answers with the plan as written and checked against the record; or
 * throws a `ToolFailure` saying why nothing was written.
 */
export interface PlanPort {
  update(input: unknown, signal: AbortSignal): Promise<string>;
}

/** What the `delegate` tool asks: a self-contained task, where to start, and budgets below the user's. */
export interface DelegateRequest {
  readonly task: string;
  /** Workspace paths (files or folders) to start from. */
  readonly scope?: readonly string[];
  /** Lower budgets than the user's settings, for a small task; higher ones are cut to the settings. */
  readonly budget?: { readonly steps?: number; readonly tokens?: number };
}

/**
 * Runs a subagent on a task and resolves with its report. A subagent that failed (an error, a
 * timeout, a spent budget, Stop, an empty answer) rejects with a {@link SubagentFailure} whose
 * message says why and what it did: the model is told so as an error, never given an empty result.
 */
export interface DelegatePort {
  delegate(request: DelegateRequest, signal: AbortSignal): Promise<string>;
}

/** A subagent's failure, its message the text the model is given (`Subagent failed: … Done so far: …`). */
export class SubagentFailure extends Error {
  override readonly name = 'SubagentFailure';

  /** The AI SDK gives the model `String(error)`: the failure's text is the whole of it, no class name before it. */
  override toString(): string {
    return this.message;
  }
}

/** What the `recall` tool asks: words, a file path, or both, and the longest answer in tokens. */
export interface RecallRequest {
  readonly query?: string;
  readonly path?: string;
  readonly maxTokens?: number;
}

/**
 * Searches what compaction and pruning took out of the model's view of the conversation, and
 * answers with the matching originals as text for the model (cut to the budget, saying what was cut).
 */
export interface RecallPort {
  recall(request: RecallRequest): string | Promise<string>;
}

/** Most tokens the model may ask `recall` for; the conversation may cap it lower for a small window. */
export const MAX_RECALL_TOKENS = 16_000;

export const DEFAULT_MAX_RESULT_CHARS = 20_000;

const DEFAULT_LIST_LIMIT = 200;
const MAX_LIST_LIMIT = 2_000;
const DEFAULT_SEARCH_LIMIT = 100;
const MAX_SEARCH_LIMIT = 1_000;
/** Longest line of a search match shown to the model (minified files have huge lines). */
const MAX_MATCH_CHARS = 300;
/** Room kept for the truncation note, so a cut result stays within `maxResultChars`. */
const NOTE_RESERVE = 200;

const pathField = lazily(() =>
  z
    .string()
    .describe(
      'Workspace-relative path with forward slashes, e.g. "src/app.ts". In a multi-root workspace start with the folder name, e.g. "web/src/app.ts".',
    ),
);

const readFileInput = lazily(() =>
  z.object({
    path: pathField(),
    startLine: z.number().int().min(1).optional().describe('First line to read, 1-based. Omit to start at line 1.'),
    endLine: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe('Last line to read, 1-based and inclusive. Omit to read to the end (or as far as the size limit allows).'),
  }),
);

const listFilesInput = lazily(() =>
  z.object({
    glob: z.string().describe('Glob pattern relative to the workspace, e.g. "**/*.ts", "src/**", "**/package.json".'),
    limit: z.number().int().min(1).max(MAX_LIST_LIMIT).optional().describe(`Maximum number of paths to return (default ${DEFAULT_LIST_LIMIT}).`),
  }),
);

const searchTextInput = lazily(() =>
  z.object({
    query: z.string().min(1).describe('Text to search for, or a JavaScript regular expression when isRegex is true.'),
    glob: z.string().optional().describe('Only search files matching this glob, e.g. "src/**/*.ts". Omit to search all files.'),
    isRegex: z.boolean().optional().describe('Treat query as a regular expression (default false: plain text).'),
    caseSensitive: z.boolean().optional().describe('Match case exactly (default false).'),
    limit: z
      .number()
      .int()
      .min(1)
      .max(MAX_SEARCH_LIMIT)
      .optional()
      .describe(`Maximum number of matching lines to return (default ${DEFAULT_SEARCH_LIMIT}).`),
  }),
);

const createFileInput = lazily(() =>
  z.object({
    path: pathField(),
    content: z.string().describe('The complete content of the new file.'),
  }),
);

const editFileInput = lazily(() =>
  z.object({
    path: pathField(),
    edits: z
      .array(
        z.object({
          oldText: z
            .string()
            .min(1)
            .describe(
              'Exact text to replace, copied from the file with its whitespace and indentation, without the "12| " line-number prefixes of read_file. It must occur exactly once: include surrounding lines to make it unique.',
            ),
          newText: z.string().describe('Text that replaces oldText (empty to delete it).'),
        }),
      )
      .min(1)
      .describe('Replacements, all located in the current file text and applied together.'),
  }),
);

const recallInput = lazily(() =>
  z.object({
    query: z
      .string()
      .optional()
      .describe('Words the earlier message holds (all of them), e.g. a function name, an error text, or the id a pruned output names.'),
    path: z.string().optional().describe('A workspace-relative file path: earlier reads and edits of that file, and messages that mention it.'),
    maxTokens: z
      .number()
      .int()
      .min(100)
      .max(MAX_RECALL_TOKENS)
      .optional()
      .describe('Longest answer in tokens (default 4,000, less in a small context window).'),
  }),
);

const skillInput = lazily(() =>
  z.object({
    name: z.string().min(1).describe("The skill's name, as the system prompt lists it."),
    file: z
      .string()
      .optional()
      .describe(
        'A file of the skill\'s folder, relative to it, as its instructions name it (e.g. "references/FORMS.md"). Omit to load the instructions themselves.',
      ),
  }),
);

const delegateInput = lazily(() =>
  z.object({
    task: z
      .string()
      .min(1)
      .describe(
        'The whole task, self-contained: the subagent does not see this conversation. Say what to find or check, what you already know, and what the report should hold.',
      ),
    scope: z.array(z.string()).optional().describe('Workspace paths (files or folders) to start from, e.g. ["src/api", "test/api.test.ts"].'),
    budget: z
      .object({
        steps: z.number().int().min(1).max(200).optional().describe("Most model calls it may make (at most the user's setting)."),
        tokens: z.number().int().min(1_000).optional().describe("Most tokens, input and output, its calls may use (at most the user's setting)."),
      })
      .optional()
      .describe("Lower budgets for a small task; omit to use the user's settings."),
  }),
);

const runCommandInput = lazily(() =>
  z.object({
    command: z
      .string()
      .min(1)
      .describe('One shell command line, e.g. "npm test" or "git status --short". Join steps with && rather than writing several lines.'),
  }),
);

/**
 * Builds the tools: `read_file`, `list_files`, `search_text`, `recall`, `skill`, `plan` and
 * `delegate` when given their ports, and unless `readOnly`, `create_file` and `edit_file`, and
 * `run_command` when given a {@link CommandPort} (or the allowed commands alone, `allowedCommandsOnly`,
 * read-only or not). Each passes the AI SDK's abort signal (the `abortSignal` of its execute options,
 * which fires on the user's Stop) to the port, whose long operations stop when it fires.
 */
export function createAgentTools(port: WorkspacePort, options: AgentToolOptions): ToolSet {
  const maxChars = options.maxResultChars ?? DEFAULT_MAX_RESULT_CHARS;
  const emit: EmitFileEvent = (kind, path, written) => options.onFileEvent?.({ kind, path, ...(written ? { written } : {}) });

  const tools: ToolSet = {
    [TOOL_NAMES.readFile]: readFileTool(port, maxChars, emit),
    [TOOL_NAMES.listFiles]: listFilesTool(port, maxChars),
    [TOOL_NAMES.searchText]: searchTextTool(port, maxChars),
  };
  if (options.recall) tools[TOOL_NAMES.recall] = recallTool(options.recall);
  if (options.skills) tools[TOOL_NAMES.skill] = skillTool(options.skills, maxChars);
  // The plan changes no file: it is offered in an untrusted workspace too.
  if (options.plan) tools[TOOL_NAMES.plan] = planTool(options.plan);
  if (options.delegate) tools[TOOL_NAMES.delegate] = delegateTool(options.delegate);
  if (options.allowedCommandsOnly) tools[TOOL_NAMES.runCommand] = runAllowedCommandTool(options.allowedCommandsOnly, maxChars);
  if (options.readOnly) return tools;
  tools[TOOL_NAMES.createFile] = createFileTool(port, emit);
  tools[TOOL_NAMES.editFile] = editFileTool(port, emit);
  if (options.commands) tools[TOOL_NAMES.runCommand] = runCommandTool(options.commands, maxChars, options.onCommandRun);
  return options.brief ? briefly(tools) : tools;
}

/** The tools' descriptions in a sentence each (see `AgentToolOptions.brief`). */
const BRIEF_DESCRIPTIONS: Readonly<Record<string, string>> = {
  [TOOL_NAMES.readFile]: 'Read a workspace text file as numbered lines ("12| code"); a long file is cut: continue with startLine.',
  [TOOL_NAMES.listFiles]: 'List the workspace files matching a glob, one path a line.',
  [TOOL_NAMES.searchText]: 'Search workspace files for text (a regular expression with isRegex); one "path:line: text" a match.',
  [TOOL_NAMES.recall]: 'Get back earlier messages a summary or a "[Pruned by Longrun: …]" stub replaced, by words (query) or file path.',
  [TOOL_NAMES.skill]: "Load a listed skill's instructions by name, or a file of its folder.",
  [TOOL_NAMES.plan]:
    `Keep a plan for work of several steps: send the whole plan (at most ${PLAN_LIMITS.steps} steps) each time it changes, one step in_progress at a time; ` +
    'a done step names its evidence (files you changed, commands you ran that passed), which Longrun checks.',
  [TOOL_NAMES.createFile]: 'Create a new text file (fails if it exists).',
  [TOOL_NAMES.editFile]: 'Edit a file: each oldText, copied exactly without the "12| " prefixes, must occur once; newText replaces it.',
  [TOOL_NAMES.runCommand]: 'Run one shell command line in the workspace folder; returns its exit code and output.',
};

/** `tools` with the brief descriptions and input schemas without descriptions; the same validation and execution. */
function briefly(tools: ToolSet): ToolSet {
  const brief: ToolSet = {};
  for (const [name, full] of Object.entries(tools)) {
    const description = BRIEF_DESCRIPTIONS[name];
    // The same tool but for what the model is told of it: its input is still validated by its own schema.
    brief[name] = description ? ({ ...full, description, inputSchema: undescribed(full.inputSchema) } as AgentTool) : full;
  }
  return brief;
}

/** A schema that validates as `schema` does, sent without its descriptions (nor the draft it names, nor bounds no one set). */
function undescribed(schema: AgentTool['inputSchema']): AgentTool['inputSchema'] {
  const full = asSchema(schema);
  const strip = (value: JSONSchema7): JSONSchema7 => withoutDescriptions(value) as JSONSchema7;
  return jsonSchema<unknown>(
    () => {
      const made = full.jsonSchema;
      return 'then' in made && typeof made.then === 'function' ? Promise.resolve(made).then(strip) : strip(made as JSONSchema7);
    },
    full.validate ? { validate: full.validate } : {},
  );
}

function withoutDescriptions(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutDescriptions);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    if (key === 'description' || key === '$schema') continue;
    // The bounds a whole number gets when none was set say nothing to the model.
    if ((key === 'maximum' && inner === Number.MAX_SAFE_INTEGER) || (key === 'minimum' && inner === Number.MIN_SAFE_INTEGER)) continue;
    // Property names are keys of `properties`, not schema keywords: one named "description" stays.
    out[key] = key === 'properties' && inner && typeof inner === 'object' ? mapValues(inner, withoutDescriptions) : withoutDescriptions(inner);
  }
  return out;
}

function mapValues(record: object, map: (value: unknown) => unknown): Record<string, unknown> {
  return Object.fromEntries(Object.entries(record).map(([key, value]) => [key, map(value)]));
}

/** One of the agent's tools, as the AI SDK takes it. */
type AgentTool = ToolSet[string];

/** Reports what a tool did to a file to the `onFileEvent` of the options, if any. */
type EmitFileEvent = (kind: AgentFileEvent['kind'], path: string, written?: WrittenText) => void;

/** `read_file`: numbered lines of a file, cut to `maxChars`, with where to continue. */
function readFileTool(port: WorkspacePort, maxChars: number, emit: EmitFileEvent): AgentTool {
  return tool({
    description:
      'Read a text file from the workspace. Returns a header line (path, line range, total lines) and the lines prefixed with their numbers ("12| code"). Large files are cut; read further with startLine/endLine.',
    inputSchema: readFileInput(),
    execute: (input, { abortSignal }) =>
      run(async () => {
        if (input.startLine !== undefined && input.endLine !== undefined && input.endLine < input.startLine) {
          throw new ToolFailure(`endLine (${input.endLine}) is before startLine (${input.startLine}).`);
        }
        const result = await port.readFile(input.path, { start: input.startLine, end: input.endLine }, abortSignal ?? neverAborted());
        emit('read', result.path);
        return formatRead(result, maxChars);
      }),
  });
}

/** `list_files`: the workspace paths matching a glob, one a line. */
function listFilesTool(port: WorkspacePort, maxChars: number): AgentTool {
  return tool({
    description:
      'List workspace files matching a glob pattern (node_modules and .git are skipped). Returns one workspace-relative path per line, sorted.',
    inputSchema: listFilesInput(),
    execute: (input, { abortSignal }) =>
      run(async () => {
        const limit = input.limit ?? DEFAULT_LIST_LIMIT;
        const { files, truncated } = await port.listFiles(input.glob, limit, abortSignal ?? neverAborted());
        if (files.length === 0) return `No files match "${input.glob}".`;
        const lines = [...files];
        if (truncated) {
          lines.push(`[More files match; showing the first ${files.length}. Use a narrower glob or a higher limit.]`);
        }
        return cut(lines.join('\n'), maxChars, 'Use a narrower glob or a lower limit.');
      }),
  });
}

/** `search_text`: the matching lines of workspace files, one a line as "path:line: text". */
function searchTextTool(port: WorkspacePort, maxChars: number): AgentTool {
  return tool({
    description:
      'Search the text of workspace files for a string or regular expression. Returns one match per line as "path:line: text". Use read_file around a match to see more. A search that takes more than a few seconds is stopped: keep regular expressions simple.',
    inputSchema: searchTextInput(),
    execute: (input, { abortSignal }) =>
      run(async () => {
        const limit = input.limit ?? DEFAULT_SEARCH_LIMIT;
        const { matches, truncated } = await port.searchText(
          input.query,
          {
            ...(input.glob !== undefined ? { glob: input.glob } : {}),
            isRegex: input.isRegex ?? false,
            caseSensitive: input.caseSensitive ?? false,
            limit,
          },
          abortSignal ?? neverAborted(),
        );
        if (matches.length === 0) {
          return `No matches for "${input.query}"${input.glob !== undefined ? ` in files matching "${input.glob}"` : ''}.`;
        }
        const lines = matches.map(formatMatch);
        if (truncated) {
          lines.push(`[Stopped after ${matches.length} matches. Narrow the query or glob, or raise limit.]`);
        }
        return cut(lines.join('\n'), maxChars, 'Narrow the query or glob, or lower limit.');
      }),
  });
}

/** `recall`: the originals of what compaction and pruning took out of the model's view. */
function recallTool(archive: RecallPort): AgentTool {
  return tool({
    description:
      'Search the earlier parts of this conversation that were summarized or pruned to save room (stubs say "[Pruned by Longrun: …]"), and get the original messages back: tool outputs, file contents as they were read, earlier answers. Give words, a file path, or both. The answer is cut to a token budget and says what it left out.',
    inputSchema: recallInput(),
    execute: (input) =>
      run(async () => {
        const query = input.query?.trim();
        const path = input.path?.trim();
        if (!query && !path) throw new ToolFailure('Give query (words to look for) or path (a file), or both.');
        return archive.recall({
          ...(query ? { query } : {}),
          ...(path ? { path } : {}),
          ...(input.maxTokens !== undefined ? { maxTokens: input.maxTokens } : {}),
        });
      }),
  });
}

/** `skill`: a skill's instructions, once per conversation, or a file of its folder. */
function skillTool(skills: SkillPort, maxChars: number): AgentTool {
  return tool({
    description:
      "Load a skill the system prompt lists: its instructions (give its name), or a file of the skill's folder that they name (give name and file). Load a skill's instructions once: they stay in force for the rest of the conversation.",
    inputSchema: skillInput(),
    execute: (input, { abortSignal }) =>
      run(async () => {
        const file = input.file?.trim();
        const loaded = await skills.load({ name: input.name.trim(), ...(file ? { file } : {}) }, abortSignal ?? neverAborted());
        return cut(loaded, maxChars, 'Load less at a time.');
      }),
  });
}

/**
 * `delegate`: a task handed to a subagent with its own context; only its report comes back. Several
 * calls in one step run at the same time (the AI SDK runs a step's tool calls together). A failure
 * is thrown, so that the model gets it as an error result with what was done.
 */
function delegateTool(port: DelegatePort): AgentTool {
  return tool({
    description:
      'Hand a self-contained task (find where something is decided and list the call sites, read logs and say which tests fail and why, check how a module is used) to a subagent: a second model with its own context and read-only tools (read_file, list_files, search_text, recall). You get back only its report (findings, the files and line ranges they rest on, what it did not finish), so what it reads stays out of your context. It does not see this conversation: put everything it needs in the task. Call it several times in one step for independent tasks: they run at the same time. It cannot change files. A subagent that fails comes back as an error saying what it did.',
    inputSchema: delegateInput(),
    execute: (input, { abortSignal }) =>
      port.delegate(
        {
          task: input.task,
          ...(input.scope && input.scope.length > 0 ? { scope: input.scope } : {}),
          ...(input.budget ? { budget: input.budget } : {}),
        },
        abortSignal ?? neverAborted(),
      ),
  });
}

/** `create_file`: a new file with the given content. */
function createFileTool(port: WorkspacePort, emit: EmitFileEvent): AgentTool {
  return tool({
    description:
      'Create a new text file with the given content (parent folders are created). Fails if the file already exists: use edit_file to change existing files. The user may be asked to approve; files that can make tools run programs (.git, .vscode, CI workflows, git hooks) always need approval.',
    inputSchema: createFileInput(),
    execute: (input, { abortSignal }) =>
      run(async () => {
        const result = await port.createFile(input.path, input.content, abortSignal ?? neverAborted());
        emit('created', result.path, result.written);
        return `Created ${result.path} (${plural(countLines(input.content), 'line')}).`;
      }),
  });
}

/** `edit_file`: exact text replacements in an existing file, applied together or not at all. */
function editFileTool(port: WorkspacePort, emit: EmitFileEvent): AgentTool {
  return tool({
    description:
      'Edit an existing text file by exact text replacement. Each oldText must occur exactly once in the current file; all edits are applied together or not at all, and nothing else in the file changes. Read the file first. The user may be asked to approve; files that can make tools run programs (.git, .vscode, CI workflows, git hooks) always need approval.',
    inputSchema: editFileInput(),
    execute: (input, { abortSignal }) =>
      run(async () => {
        const result = await port.editFile(input.path, input.edits, abortSignal ?? neverAborted());
        emit('modified', result.path, result.written);
        const applied = `${plural(result.replacements, 'replacement')} applied`;
        if (result.unsaved) {
          return `Edited ${result.path} in the editor: ${applied}. The file has unsaved changes of the user's, so it was not saved; tools that read the disk see the old content until the user saves.`;
        }
        return `Edited ${result.path}: ${applied}.`;
      }),
  });
}

/** `run_command`: one command line in the user's terminal, with its exit code and output. */
function runCommandTool(commands: CommandPort, maxChars: number, onRun?: AgentToolOptions['onCommandRun']): AgentTool {
  return tool({
    description:
      "Run one shell command line in the user's VS Code terminal, in the workspace folder, and get its exit code and output (long output keeps its first and last lines). The user approves each command unless it is on their allow list. Use it to build, test, lint or inspect the repository; not for interactive programs (they wait for input until the time limit) or long-running servers. Prefer read_file, list_files and search_text for reading files.",
    inputSchema: runCommandInput(),
    execute: (input, { abortSignal }) =>
      run(async () => {
        const result = await commands.runCommand(input.command, abortSignal ?? neverAborted());
        // Recorded before the model sees the result: a plan written next names it as evidence.
        await onRun?.(result);
        return formatRun(result, maxChars);
      }),
  });
}

/**
 * What the model is told of the `plan` tool's input. Its bounds are checked by the port, which
 * names the one broken, so that a refusal never repeats a plan of hundreds of steps back into the
 * conversation (the AI SDK's own validation error quotes the whole input).
 */
const planInput = lazily(() =>
  jsonSchema<unknown>(
    {
      type: 'object',
      properties: {
        steps: {
          type: 'array',
          maxItems: PLAN_LIMITS.steps,
          description: `The whole plan, in order (at most ${PLAN_LIMITS.steps} steps). Send every step each time, not only those that changed.`,
          items: {
            type: 'object',
            properties: {
              step: {
                type: 'string',
                maxLength: PLAN_LIMITS.stepChars,
                description: `What the step does, in a short sentence (at most ${PLAN_LIMITS.stepChars} characters).`,
              },
              status: {
                type: 'string',
                enum: [...PLAN_STATUSES],
                description: 'At most one step is in_progress at a time.',
              },
              evidence: {
                type: 'object',
                description: `For a done step: what it rests on (at most ${PLAN_LIMITS.evidenceItems} files and commands together).`,
                properties: {
                  files: { type: 'array', items: { type: 'string' }, description: 'Workspace-relative paths of files you changed for this step.' },
                  commands: {
                    type: 'array',
                    items: { type: 'string' },
                    description: 'Command lines you ran with run_command for this step, exactly as you ran them, whose last run passed.',
                  },
                },
                additionalProperties: false,
              },
              note: { type: 'string', maxLength: PLAN_LIMITS.noteChars, description: 'Optional: why a step is blocked, or what is left of it.' },
            },
            required: ['step', 'status'],
            additionalProperties: false,
          },
        },
      },
      required: ['steps'],
      additionalProperties: false,
    },
    { validate: (value) => ({ success: true, value }) },
  ),
);

/** `plan`: the agent's plan, written whole, checked against the record and kept through compaction. */
function planTool(port: PlanPort): AgentTool {
  return tool({
    description:
      `Keep a plan for work of several steps: send the whole plan each time it changes (a step started, finished, blocked, added), every step with its status. ` +
      `Mark a step done with its evidence: the files you changed and the commands you ran with run_command that passed. ` +
      `Longrun checks the evidence against what happened and marks a step "done — unverified" when the record does not show it or contradicts it (the command last failed, the file was changed back or changed by the user since), or when it names none. ` +
      `The plan, where you are, and the files you changed since the step began are kept whole when the conversation is compacted. ` +
      `Bounds: at most ${PLAN_LIMITS.steps} steps of ${PLAN_LIMITS.stepChars} characters, each naming at most ${PLAN_LIMITS.evidenceItems} files and commands; at most one step in progress; evidence files inside the workspace; a command named for a done step must have been run (in an earlier step than this update).`,
    inputSchema: planInput(),
    execute: (input, { abortSignal }) => run(() => port.update(input, abortSignal ?? neverAborted())),
  });
}

/** `run_command` for a subagent: only the commands the user's allow list lets run without asking; any other is refused. */
function runAllowedCommandTool(commands: CommandPort, maxChars: number): AgentTool {
  return tool({
    description:
      "Run one shell command line in the user's VS Code terminal, in the workspace folder, and get its exit code and output (long output keeps its first and last lines). Only commands on the user's allow list run; any other is refused, and nobody is asked. Use it to run tests or inspect the repository; prefer read_file, list_files and search_text for reading files.",
    inputSchema: runCommandInput(),
    execute: (input, { abortSignal }) =>
      run(async () => formatRun(await commands.runCommand(input.command, abortSignal ?? neverAborted()), maxChars)),
  });
}

/** The command, how it ended, and its output within `maxChars`. */
function formatRun(result: CommandRun, maxChars: number): string {
  const ending =
    result.timedOutAfterSeconds !== undefined
      ? `Stopped: still running after ${result.timedOutAfterSeconds} s (the time limit, longrun.agent.commandTimeoutSeconds).`
      : result.exitCode === undefined
        ? 'Exit code: unknown (the shell did not report one).'
        : `Exit code: ${result.exitCode}`;
  const shown = result.command.length > MAX_MATCH_CHARS ? `${result.command.slice(0, MAX_MATCH_CHARS)}…` : result.command;
  const header = `$ ${shown}\n${ending}`;
  const output = formatCapturedOutput(result.output, Math.max(0, maxChars - header.length - 20), result.where);
  return output === '' ? `${header}\n(no output)` : `${header}\nOutput:\n${output}`;
}

/** A signal for callers that gave none: the port always receives one. */
function neverAborted(): AbortSignal {
  return new AbortController().signal;
}

/** Turns a `ToolFailure` into text for the model; lets every other error through. */
async function run(action: () => Promise<string>): Promise<string> {
  try {
    return await action();
  } catch (error) {
    if (error instanceof ToolFailure) return `Error: ${error.message}`;
    throw error;
  }
}

function plural(count: number, word: string): string {
  return `${count} ${word}${count === 1 ? '' : 's'}`;
}

function countLines(text: string): number {
  return splitLines(text).length;
}

function formatMatch(match: SearchMatch): string {
  const text = match.text.trim();
  const shown = text.length > MAX_MATCH_CHARS ? `${text.slice(0, MAX_MATCH_CHARS)}…` : text;
  return `${match.path}:${match.line}: ${shown}`;
}

/**
 * Numbers the lines and fits them in `maxChars`, cutting at a line boundary (or inside the first
 * line when even that does not fit) and telling the model where to continue.
 */
function formatRead(result: ReadResult, maxChars: number): string {
  const lines = splitLines(result.text);
  if (lines.length === 0) {
    return result.totalLines === 0
      ? `${result.path}: empty file (0 lines)`
      : `${result.path}: no lines in that range (file has ${result.totalLines} lines)`;
  }
  const budget = Math.max(0, maxChars - NOTE_RESERVE);
  const shown: string[] = [];
  let used = 0;
  let lineCut = false;
  for (const [index, line] of lines.entries()) {
    const numbered = `${result.startLine + index}| ${line}`;
    if (used + numbered.length + 1 > budget) {
      if (shown.length === 0) {
        shown.push(`${numbered.slice(0, Math.max(0, budget - 1))}…`);
        lineCut = true;
      }
      break;
    }
    shown.push(numbered);
    used += numbered.length + 1;
  }
  const first = result.startLine;
  const last = first + shown.length - 1;
  const header = `${result.path} (lines ${first}-${last} of ${result.totalLines})`;
  const notes: string[] = [];
  if (lineCut) notes.push(`[Line ${last} is too long and was cut.]`);
  if (shown.length < lines.length || result.truncated) {
    notes.push(`[Truncated at the size limit. Call read_file with startLine=${last + 1} to read more.]`);
  } else if (last < result.totalLines) {
    notes.push(`[${plural(result.totalLines - last, 'more line')}. Call read_file with startLine=${last + 1} to continue.]`);
  }
  return [header, ...shown, ...notes].join('\n');
}

/** Cuts `text` at a line boundary so that it and the note fit in `maxChars`. */
function cut(text: string, maxChars: number, hint: string): string {
  if (text.length <= maxChars) return text;
  const budget = Math.max(0, maxChars - NOTE_RESERVE);
  const boundary = text.lastIndexOf('\n', budget);
  const kept = boundary > 0 ? text.slice(0, boundary) : text.slice(0, budget);
  const omitted = text
    .slice(kept.length)
    .split('\n')
    .filter((l) => l !== '').length;
  return `${kept}\n[Output truncated at ${maxChars} characters; ${plural(omitted, 'more line')} not shown. ${hint}]`;
}
