/**
 * What the agent's tools may do to the workspace. The AI SDK tools (`agent-tools.ts`) are defined
 * over this interface; `src/vscode/workspace-tools.ts` implements it with VS Code's editor and the
 * workspace folders on disk, confined to those folders. Paths are workspace-relative
 * (`src/a.ts`, or `folder-name/src/a.ts` in a multi-root workspace).
 *
 * Every method throws `ToolFailure` for a problem the model should be told about (file missing,
 * path outside the workspace, binary file or not a regular file, edit text not found, user declined,
 * a search that ran out of time); anything else is a bug. Every method stops when its signal aborts
 * (the user's Stop) and rejects with the signal's reason.
 */

import type { CapturedOutput } from './command-output';

export class ToolFailure extends Error {
  override readonly name = 'ToolFailure';
}

export interface LineRange {
  /** First line, 1-based, inclusive. */
  readonly start?: number;
  /** Last line, 1-based, inclusive. */
  readonly end?: number;
}

export interface ReadResult {
  readonly path: string;
  readonly text: string;
  readonly startLine: number;
  readonly endLine: number;
  readonly totalLines: number;
  /** True when the text was cut to the size limit. */
  readonly truncated: boolean;
}

export interface SearchMatch {
  readonly path: string;
  /** 1-based. */
  readonly line: number;
  /** The matching line; a very long one may be cut. */
  readonly text: string;
}

export interface TextEdit {
  /** Exact text to find; it must occur exactly once in the file. */
  readonly oldText: string;
  readonly newText: string;
}

export interface WorkspacePort {
  readFile(path: string, range: LineRange, signal: AbortSignal): Promise<ReadResult>;
  listFiles(glob: string, limit: number, signal: AbortSignal): Promise<{ readonly files: readonly string[]; readonly truncated: boolean }>;
  searchText(
    query: string,
    options: { readonly glob?: string; readonly isRegex: boolean; readonly caseSensitive: boolean; readonly limit: number },
    signal: AbortSignal,
  ): Promise<{ readonly matches: readonly SearchMatch[]; readonly truncated: boolean }>;
  /** Fails when the file exists. Asks the user first unless edits are auto-approved (protected files always). */
  createFile(path: string, content: string, signal: AbortSignal): Promise<{ readonly path: string; readonly written?: WrittenText }>;
  /**
   * Applies all edits or none, changing nothing but the replaced text. Asks the user first unless
   * edits are auto-approved; files that can make tools run programs (`.git`, `.vscode`, CI
   * workflows …) are always asked for. `unsaved` is true when the file had unsaved changes in the
   * editor: the edit was made there and not saved.
   */
  editFile(
    path: string,
    edits: readonly TextEdit[],
    signal: AbortSignal,
  ): Promise<{ readonly path: string; readonly replacements: number; readonly unsaved?: boolean; readonly written?: WrittenText }>;
}

/** A file's whole text before and after a write to disk, so that the write can be taken back. */
export interface WrittenText {
  readonly before: string;
  readonly after: string;
}

/** A shell command that ran, as `run_command` reports it. */
export interface CommandRun {
  /** The command line as it was run. */
  readonly command: string;
  /** As the shell reported it; `undefined` when it did not (or the command was stopped). */
  readonly exitCode: number | undefined;
  /** The output, first and last lines kept (see `command-output.ts`). */
  readonly output: CapturedOutput;
  /** Where the user can read the whole output, e.g. `the terminal "Longrun"`. */
  readonly where: string;
  /** Set when the time limit stopped the command: the limit, in seconds. */
  readonly timedOutAfterSeconds?: number;
}

/**
 * What the agent's `run_command` tool may do: run one command line in the user's terminal. The
 * user approves every command first unless it matches their allow list. Throws `ToolFailure` when
 * the user declines, the line is not a single line, or the terminal cannot report the output and
 * exit code (no shell integration: the command is then not run at all). Stop interrupts the
 * command and rejects with the signal's reason.
 */
export interface CommandPort {
  runCommand(command: string, signal: AbortSignal): Promise<CommandRun>;
}
