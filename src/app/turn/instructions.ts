import { capText } from '../../llm/result-cap';

/**
 * Instruction files VS Code attaches to chat requests (`AGENTS.md`, `.github/copilot-instructions.md`,
 * `*.instructions.md`, and its index of the workspace's customizations): they say how the agent
 * should work, for the whole conversation. They go into the system prompt, once, in the text they
 * have when the request is sent, instead of into every user message: counted once in the window,
 * never summarized or pruned, and the same bytes at the start of every request while they do not
 * change. Free of `vscode`: the participant turns VS Code's references into {@link InstructionSource}s.
 *
 * VS Code marks them by the reference's id: `vscode.instructions.file.root__<uri>` for an
 * instruction file it applies (automatically, or attached by the user from the instructions picker)
 * and `vscode.instructions.file.reference__<uri>` for one such a file links to (VS Code 1.139);
 * `vscode.prompt.instructions.root__<uri>`, `vscode.prompt.instructions__<uri>` and
 * `vscode.prompt.instructions.text…` (a text from settings) in earlier versions; and
 * `vscode.customizations.index` for its list of the workspace's instructions, prompts and agents.
 * All of them carry the model description "Prompt instructions file" or "Chat customizations index".
 */

/** Which references of a request are instructions rather than attachments. */
export function isInstructionReference(reference: { readonly id: string; readonly modelDescription?: string | undefined }): boolean {
  const { id, modelDescription } = reference;
  return (
    id.startsWith('vscode.instructions.') ||
    id.startsWith('vscode.prompt.instructions') ||
    id === 'vscode.customizations.index' ||
    modelDescription === 'Prompt instructions file' ||
    modelDescription === 'Chat customizations index'
  );
}

/** An instruction as VS Code attached it. */
export type InstructionSource =
  /** A file; `name` is what the model is shown (workspace-relative when inside the workspace). */
  | { readonly kind: 'file'; readonly key: string; readonly name: string; readonly read: () => Promise<string> }
  /** Text VS Code gave as it is (from settings, or its index of customizations). */
  | { readonly kind: 'text'; readonly key: string; readonly name: string; readonly text: string };

/** An instruction as the model gets it. */
export interface Instruction {
  readonly name: string;
  readonly text: string;
}

/** Longest text of one instruction, and of all of a request's together. */
export const MAX_INSTRUCTION_CHARS = 20_000;
export const MAX_INSTRUCTIONS_CHARS = 40_000;
const MIN_ROOM = 500;

/**
 * The instructions of a request, each once, read now, in the order VS Code gave them. One that cannot
 * be read, or does not fit, is named with a note saying so, so that the model knows it exists.
 */
export async function resolveInstructions(sources: readonly InstructionSource[]): Promise<Instruction[]> {
  const out: Instruction[] = [];
  const seen = new Set<string>();
  let total = 0;
  for (const source of sources) {
    if (seen.has(source.key)) continue;
    seen.add(source.key);
    let text: string;
    try {
      text = source.kind === 'text' ? source.text : await source.read();
    } catch (error) {
      out.push({ name: source.name, text: `(Longrun could not read this file: ${error instanceof Error ? error.message : String(error)})` });
      continue;
    }
    if (text.includes('\u0000')) {
      out.push({ name: source.name, text: '(not shown: this is a binary file, not text)' });
      continue;
    }
    const room = Math.min(MAX_INSTRUCTION_CHARS, MAX_INSTRUCTIONS_CHARS - total);
    // A sliver of a file would tell the model less than its name does.
    if (room < MIN_ROOM) {
      out.push({
        name: source.name,
        text: `(not shown: the instructions before it fill the ${MAX_INSTRUCTIONS_CHARS.toLocaleString('en-US')} characters a request carries)`,
      });
      continue;
    }
    const capped = capText(text.trim(), room, 'Read the rest of the file with read_file if it matters.');
    total += capped.length;
    out.push({ name: source.name, text: capped });
  }
  return out;
}

/** The instructions as the system prompt carries them; empty when there are none. */
export function instructionsSection(instructions: readonly Instruction[]): string {
  if (instructions.length === 0) return '';
  const blocks = instructions.map((i) => `<instructions source="${escapeAttribute(i.name)}">\n${i.text}\n</instructions>`);
  return [
    "The user's instructions for this workspace follow (VS Code attaches them to every request). Follow them unless the user says otherwise in the conversation.",
    ...blocks,
  ].join('\n');
}

function escapeAttribute(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/\n/g, ' ');
}
