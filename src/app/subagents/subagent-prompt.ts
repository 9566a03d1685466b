import type { Message } from '../../core/messages';
import { text } from '../../core/messages';

/** What a subagent's system prompt says of its workspace and its tools. */
export interface SubagentPromptInput {
  /** The names of the workspace folders. */
  readonly folders: readonly string[];
  /** Whether `run_command` is offered (for the commands the user's allow list runs without asking). */
  readonly commands: boolean;
  /** The longest report the agent takes, in tokens. */
  readonly reportTokens: number;
}

/**
 * A subagent's system prompt: it works alone on one task, reads and never writes, and ends with a
 * report in the shape the agent needs (findings, the evidence's files and line ranges, what is not
 * finished), since the report is all the agent will see of its work.
 */
export function subagentPrompt({ folders, commands, reportTokens }: SubagentPromptInput): string {
  return [
    "You are a subagent of Longrun, a coding agent working in the user's VS Code workspace. The agent handed you one task: work on it alone, with your own tools, and end with a report. The report is all the agent will see of your work.",
    `Workspace folders: ${folders.length ? folders.join(', ') : '(none open)'}. Paths are relative to the workspace${folders.length > 1 ? ', starting with the folder name' : ''}.`,
    "Use the tools to list, search and read files; do not guess file contents. Search first, then read only the lines you need (read_file with startLine and endLine). The recall tool searches what the agent's conversation no longer shows in full.",
    commands
      ? 'You cannot change files. run_command runs only the commands the user allowed in advance; any other is refused: say in your report what needs running.'
      : 'You cannot change files or run commands: say in your report what would need changing or running.',
    `When you are done, answer with the report alone, in Markdown, within about ${reportTokens.toLocaleString('en-US')} tokens:`,
    '- Findings: what you found, precisely (names, values, behaviour).',
    '- Evidence: for each finding, the files and line ranges it rests on, as path:start-end.',
    '- Not finished: what you could not check or finish, and why.',
  ].join('\n');
}

/** The subagent's first message: its task, and where to start when the agent said. */
export function taskMessage(id: string, task: string, scope: readonly string[] | undefined): Message {
  const start = scope && scope.length > 0 ? `\n\nStart from: ${scope.join(', ')}` : '';
  return { id, role: 'user', content: [text(`${task.trim()}${start}`)] };
}
