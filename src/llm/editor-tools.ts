import { jsonSchema, tool, type ToolSet } from 'ai';
import { capText } from './result-cap';
import { ToolFailure } from './workspace-port';

/**
 * The editor's tools for the agent: tools other extensions and MCP servers register with VS Code
 * (`vscode.lm.tools`), offered to the model as AI SDK tools and run through the editor, which shows
 * them in the chat and asks the user first when the tool wants it. Nothing here imports `vscode`:
 * `src/vscode/editor-tools.ts` implements {@link EditorToolsPort} for one chat request.
 */

/** A tool registered with the editor by another extension or an MCP server. */
export interface EditorTool {
  /** Its unique name; the model calls it by this name. */
  readonly name: string;
  /** What it does, written for a model. */
  readonly description: string;
  /** The JSON schema of its input; absent when it takes none. */
  readonly inputSchema?: object;
}

/** The editor's tools as the agent loop uses them. */
export interface EditorToolsPort {
  /** The tools registered now. */
  list(): readonly EditorTool[];
  /**
   * Runs a tool through the editor and resolves to its result as text. Throws a `ToolFailure` when
   * the user declined or the tool failed (the model is told and can go on); rejects with the
   * signal's reason when the signal aborts.
   */
  invoke(name: string, input: unknown, signal: AbortSignal): Promise<string>;
}

/** What decides which editor tools a request offers. */
export interface EditorToolChoice {
  /** The `longrun.agent.editorTools` setting: tool names, or {@link ALL_EDITOR_TOOLS} for every tool. */
  readonly setting: readonly string[];
  /** Tools the user named in the request (`#name`): offered for it whatever the setting says. */
  readonly requested: readonly string[];
  /** Longrun's own tool names: an editor tool of the same name is never offered. */
  readonly reserved: ReadonlySet<string>;
}

/** The editor tools a request offers, and those asked for that it does not offer. */
export interface EditorToolSelection {
  readonly offered: readonly EditorTool[];
  /** Asked for by name (in the setting or the request) or present under "*", yet not offered; with the reason. */
  readonly skipped: readonly { readonly name: string; readonly reason: string }[];
}

/** The entry of `longrun.agent.editorTools` that stands for every tool, present and future. */
export const ALL_EDITOR_TOOLS = '*';

/** What model APIs accept as a function name (OpenAI's rule, the strictest common one). */
const CALLABLE_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * The tools offered: those the setting names (all of them for "*") and those the request names,
 * in that order, each once, leaving out a tool that is not registered, one named like one of
 * Longrun's own tools (Longrun's stays), and one whose name a model cannot call.
 */
export function selectEditorTools(available: readonly EditorTool[], choice: EditorToolChoice): EditorToolSelection {
  const byName = new Map(available.map((t) => [t.name, t]));
  const all = choice.setting.includes(ALL_EDITOR_TOOLS);
  const wanted = [...(all ? available.map((t) => t.name) : choice.setting), ...choice.requested];
  const offered: EditorTool[] = [];
  const skipped: Array<{ name: string; reason: string }> = [];
  const seen = new Set<string>();
  for (const name of wanted) {
    if (name === ALL_EDITOR_TOOLS || seen.has(name)) continue;
    seen.add(name);
    const found = byName.get(name);
    if (!found) skipped.push({ name, reason: 'no tool of this name is registered in VS Code' });
    else if (choice.reserved.has(name)) skipped.push({ name, reason: "it has the name of one of Longrun's own tools" });
    else if (!CALLABLE_NAME.test(name)) skipped.push({ name, reason: 'models cannot call a tool by this name' });
    else offered.push(found);
  }
  return { offered, skipped };
}

/** How the editor's tools are offered to the model. */
export interface EditorToolOptions {
  /** Longest result sent to the model; longer ones are cut with a note, as Longrun's own tools' are. */
  readonly maxResultChars: number;
}

/** The offered editor tools as AI SDK tools, each run through `port`. */
export function createEditorTools(port: EditorToolsPort, offered: readonly EditorTool[], options: EditorToolOptions): ToolSet {
  const tools: ToolSet = {};
  for (const editorTool of offered) {
    tools[editorTool.name] = tool({
      description: editorTool.description,
      inputSchema: jsonSchema(objectSchema(editorTool.inputSchema)),
      execute: async (input: unknown, { abortSignal }) => {
        try {
          const result = await port.invoke(editorTool.name, input, abortSignal ?? new AbortController().signal);
          return capText(result, options.maxResultChars, 'Call the tool with narrower input to get less.');
        } catch (error) {
          if (error instanceof ToolFailure) return `Error: ${error.message}`;
          throw error;
        }
      },
    });
  }
  return tools;
}

/** Model APIs want an object schema for a function's parameters, also when a tool declares none. */
function objectSchema(schema: object | undefined): Record<string, unknown> & { type: 'object' } {
  const declared = (schema ?? {}) as Record<string, unknown>;
  return { properties: {}, ...declared, type: 'object' };
}
