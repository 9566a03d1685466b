/**
 * The names of Longrun's own agent tools, as the model calls them. One set, used by the tools'
 * definitions, the chat's progress lines, pruning and the check that an editor tool never takes one
 * of these names.
 */
export const TOOL_NAMES = {
  readFile: 'read_file',
  listFiles: 'list_files',
  searchText: 'search_text',
  createFile: 'create_file',
  editFile: 'edit_file',
  runCommand: 'run_command',
  recall: 'recall',
  skill: 'skill',
} as const;

/** One of Longrun's own tool names. */
export type ToolName = (typeof TOOL_NAMES)[keyof typeof TOOL_NAMES];

/** Every name of Longrun's own tools, whether or not a request offers the tool. */
export const OWN_TOOL_NAMES: ReadonlySet<string> = new Set(Object.values(TOOL_NAMES));
