import { instructionsSection, type Instruction } from './instructions';
import { skillsSection, type ListedSkill } from '../skills/skill-listing';

/** What the system prompt says of the workspace and the conversation. */
export interface SystemPromptInput {
  readonly trusted: boolean;
  /** The names of the workspace folders. */
  readonly folders: readonly string[];
  /** The user's instruction files, as VS Code attached them to the request. */
  readonly instructions?: readonly Instruction[];
  /** The skills the agent may load, by name (see `skill-catalog.ts`). */
  readonly skills?: readonly ListedSkill[];
  /** Whether the `plan` tool is offered (not in a small window, see `PLAN_WINDOW`). */
  readonly plan?: boolean;
  /** The compact prompt, for a small window (see `COMPACT_REQUEST_WINDOW`): the same rules, said in fewer words. */
  readonly compact?: boolean;
}

/**
 * The agent's system prompt. It says nothing that changes during a conversation (only the workspace,
 * its trust, the instruction files and the skills on disk decide it), so that every request begins
 * with the same bytes and a provider's prompt cache keeps serving them: the `recall` tool is
 * described from the start.
 */
export function systemPrompt(input: SystemPromptInput): string {
  const { trusted, folders, instructions = [], skills = [], plan = true } = input;
  const lines = input.compact
    ? compactLines(trusted, folders, plan)
    : [
        "You are Longrun, a coding agent working in the user's VS Code workspace.",
        `Workspace folders: ${folders.length ? folders.join(', ') : '(none open)'}. Paths are relative to the workspace${folders.length > 1 ? ', starting with the folder name' : ''}.`,
        'Use the tools to read, list and search files before answering questions about the code; do not guess file contents.',
        trusted
          ? 'Change files with create_file and edit_file; each edit replaces an exact, unique piece of text. Keep changes minimal and explain them briefly. Run builds, tests and other shell commands with run_command (one line each; the user approves them).'
          : 'The workspace is not trusted, so you can only read: do not try to change files or run commands; describe the changes instead.',
        ...(plan
          ? [
              'For work of several steps, keep a plan with the plan tool: send the whole plan when it changes, one step in progress at a time, and mark a step done with its evidence (the files you changed, the commands that passed); Longrun checks it against what happened.',
            ]
          : []),
        `Earlier parts of a long conversation may be replaced by a summary, and old tool outputs by a one-line stub that reads "[Pruned by Longrun: …]"; trust the summary, and re-read files when you need their exact content. After a summary, its <work-state> block holds ${plan ? 'your plan and ' : ''}where you were: go on from there, without waiting to be told to continue. The originals are kept: when you need exact earlier content (a tool output, an error, a decision), search them with the recall tool by words or file path.`,
        'Answer in Markdown, concisely.',
      ];
  return [lines.join('\n'), skillsSection(skills), instructionsSection(instructions)].filter(Boolean).join('\n\n');
}

/** The rules of the prompt in a sentence each, for a window where every line costs the conversation room. */
function compactLines(trusted: boolean, folders: readonly string[], plan: boolean): string[] {
  return [
    `You are Longrun, a coding agent in the user's VS Code workspace (folders: ${folders.length ? folders.join(', ') : 'none open'}; paths are relative to it${folders.length > 1 ? ', starting with the folder name' : ''}).`,
    'Read files with the tools before answering about the code; do not guess.',
    trusted
      ? 'Change files with create_file and edit_file, minimally; run builds and tests with run_command (the user approves).'
      : 'The workspace is not trusted: only read, and describe changes instead of making them.',
    ...(plan ? ['For work of several steps, keep a plan with the plan tool and mark a step done with its evidence.'] : []),
    'Earlier messages may be replaced by a summary (go on from its <work-state>) or a "[Pruned by Longrun: …]" stub; recall gets the originals back.',
    'Answer in Markdown, concisely.',
  ];
}
