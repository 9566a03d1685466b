import { TOOL_NAMES } from '../core/tool-names';

/** How the chat shows what the agent does: one line per tool call, inline code, escaped Markdown. */

/** The progress line shown while a tool runs. */
export function describeToolCall(toolName: string, input: unknown): string {
  const i = (input ?? {}) as Record<string, unknown>;
  const path = typeof i.path === 'string' ? i.path : undefined;
  switch (toolName) {
    case TOOL_NAMES.readFile:
      return `Reading ${path ?? 'a file'}…`;
    case TOOL_NAMES.listFiles:
      return `Listing ${typeof i.glob === 'string' ? i.glob : 'files'}…`;
    case TOOL_NAMES.searchText:
      return `Searching for ${typeof i.query === 'string' ? JSON.stringify(i.query) : 'text'}…`;
    case TOOL_NAMES.createFile:
      return `Creating ${path ?? 'a file'}…`;
    case TOOL_NAMES.editFile:
      return `Editing ${path ?? 'a file'}…`;
    case TOOL_NAMES.recall:
      return `Searching the conversation's earlier parts${typeof i.query === 'string' ? ` for ${JSON.stringify(i.query)}` : path ? ` for ${path}` : ''}…`;
    case TOOL_NAMES.skill: {
      const name = typeof i.name === 'string' ? inlineCode(i.name) : 'a skill';
      return typeof i.file === 'string' ? `Reading ${inlineCode(i.file)} of the skill ${name}…` : `Loading the skill ${name}…`;
    }
    case TOOL_NAMES.runCommand:
      return typeof i.command === 'string'
        ? `Running ${inlineCode(i.command.length > 80 ? `${i.command.slice(0, 80)}…` : i.command)}…`
        : 'Running a command…';
    default:
      return `Running ${toolName}…`;
  }
}

/** `text` as inline code, on one line, whatever backticks it holds. */
export function inlineCode(value: string): string {
  const line = value.replace(/\s+/g, ' ');
  let longest = 0;
  for (const run of line.match(/`+/g) ?? []) longest = Math.max(longest, run.length);
  const fence = '`'.repeat(longest + 1);
  return fence.length > 1 ? `${fence} ${line} ${fence}` : `\`${line}\``;
}

/** `value` with the characters Markdown would read as formatting escaped. */
export function escapeMarkdown(value: string): string {
  return value.replace(/[\\`*_[\]]/g, '\\$&');
}
