import { lazily } from '../core/lazy';
import { tool, type ToolSet } from 'ai';
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

const runCommandInput = lazily(() =>
  z.object({
    command: z
      .string()
      .min(1)
      .describe('One shell command line, e.g. "npm test" or "git status --short". Join steps with && rather than writing several lines.'),
  }),
);

/**
 * Builds the tools: `read_file`, `list_files`, `search_text`, `recall` and `skill` when given their
 * ports, and unless `readOnly`, `create_file`
 * and `edit_file`, and `run_command` when given a {@link CommandPort}. Each passes the AI SDK's abort signal (the `abortSignal` of its execute options,
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
  if (options.readOnly) return tools;
  tools[TOOL_NAMES.createFile] = createFileTool(port, emit);
  tools[TOOL_NAMES.editFile] = editFileTool(port, emit);
  if (options.commands) tools[TOOL_NAMES.runCommand] = runCommandTool(options.commands, maxChars);
  return tools;
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
function runCommandTool(commands: CommandPort, maxChars: number): AgentTool {
  return tool({
    description:
      "Run one shell command line in the user's VS Code terminal, in the workspace folder, and get its exit code and output (long output keeps its first and last lines). The user approves each command unless it is on their allow list. Use it to build, test, lint or inspect the repository; not for interactive programs (they wait for input until the time limit) or long-running servers. Prefer read_file, list_files and search_text for reading files.",
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
