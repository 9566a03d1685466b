import * as vscode from 'vscode';
import type { EditorTool, EditorToolsPort } from '../llm/editor-tools';
import { ToolFailure } from '../llm/workspace-port';

/**
 * The editor's tools (`vscode.lm.tools`: other extensions' and MCP servers' tools) for the agent,
 * run with `vscode.lm.invokeTool` and the chat request's `toolInvocationToken`, so that VS Code
 * shows each call in that chat and asks the user there when the tool wants confirmation.
 */

/** The tools registered in VS Code now. */
export function listEditorTools(): EditorTool[] {
  return vscode.lm.tools.map((t) => ({ name: t.name, description: t.description, ...(t.inputSchema ? { inputSchema: t.inputSchema } : {}) }));
}

/** The editor's tools for one chat request: each call shows in that request's chat. */
export class VsCodeEditorTools implements EditorToolsPort {
  /** @param toolInvocationToken the token of the chat request the tools run for; undefined outside one. */
  constructor(private readonly toolInvocationToken: vscode.ChatParticipantToolToken | undefined) {}

  list(): readonly EditorTool[] {
    return listEditorTools();
  }

  async invoke(name: string, input: unknown, signal: AbortSignal): Promise<string> {
    signal.throwIfAborted();
    const source = new vscode.CancellationTokenSource();
    const cancel = (): void => source.cancel();
    signal.addEventListener('abort', cancel, { once: true });
    try {
      const result = await vscode.lm.invokeTool(name, { input: inputObject(input), toolInvocationToken: this.toolInvocationToken }, source.token);
      return resultText(result.content);
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      // VS Code cancels the call when the user does not allow it.
      if (isCancellation(error)) throw new ToolFailure(`The user did not allow ${name} to run. Ask them how to go on instead of calling it again.`);
      throw new ToolFailure(`${name} failed: ${error instanceof Error ? error.message : String(error)}`);
    } finally {
      signal.removeEventListener('abort', cancel);
      source.dispose();
    }
  }
}

/** VS Code validates a tool's input against its schema and wants an object. */
function inputObject(input: unknown): object {
  return typeof input === 'object' && input !== null ? input : {};
}

function isCancellation(error: unknown): boolean {
  return error instanceof vscode.CancellationError || (error instanceof Error && error.name === 'Canceled');
}

/**
 * A tool result as text: text parts as they are, the text of prompt-tsx parts (which Copilot's
 * tools return), and a placeholder for anything else (images, data).
 */
export function resultText(content: readonly unknown[]): string {
  const pieces: string[] = [];
  for (const part of content) {
    if (part instanceof vscode.LanguageModelTextPart) pieces.push(part.value);
    else if (part instanceof vscode.LanguageModelPromptTsxPart) pieces.push(textOf(part.value));
    else pieces.push(`[${kindOf(part)} content not included]`);
  }
  return pieces.join('');
}

/** The text leaves (`text` fields) of a prompt-tsx element tree, in order; attributes are left out. */
function textOf(node: unknown): string {
  if (typeof node === 'string') return node;
  if (Array.isArray(node)) return node.map(textOf).join('');
  if (typeof node !== 'object' || node === null) return '';
  const record = node as Record<string, unknown>;
  if (typeof record.text === 'string') return record.text;
  return Object.values(record)
    .filter((value) => typeof value === 'object' && value !== null)
    .map(textOf)
    .join('');
}

function kindOf(part: unknown): string {
  if (typeof part === 'object' && part !== null && typeof (part as { mimeType?: unknown }).mimeType === 'string')
    return (part as { mimeType: string }).mimeType;
  return 'non-text';
}
