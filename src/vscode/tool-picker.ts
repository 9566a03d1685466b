import * as vscode from 'vscode';
import { ALL_EDITOR_TOOLS } from '../llm/editor-tools';
import type { LongrunSettings } from '../app/settings';
import { listEditorTools } from './editor-tools';
import { COMMAND } from '../app/contributions';
import type { CommandHandler } from './entry-points';

/**
 * "Longrun: Choose Agent Tools…": a quick pick with a checkbox per tool registered in VS Code
 * (other extensions' and MCP servers' tools), and one for all of them, that writes
 * `longrun.agent.editorTools` in the user settings (the setting is application-scoped: a
 * workspace cannot give the agent tools).
 */

interface ToolItem extends vscode.QuickPickItem {
  /** The setting entry the item stands for; absent on separators. */
  readonly entry?: string;
}

/**
 * @param ownToolNames Longrun's own tool names: a tool of the same name is never offered, so it is
 * not listed either.
 */
export function chooseToolsCommand(settings: () => LongrunSettings, ownToolNames: () => ReadonlySet<string>): [string, CommandHandler] {
  return [
    COMMAND.chooseAgentTools,
    async (names?: unknown) => {
      const chosen = isStringList(names) ? names : await pick(settings().agent.editorTools, ownToolNames());
      if (chosen === undefined) return undefined;
      await vscode.workspace
        .getConfiguration('longrun')
        .update('agent.editorTools', chosen.length > 0 ? chosen : undefined, vscode.ConfigurationTarget.Global);
      return chosen;
    },
  ];
}

/** The entries the user checked; undefined when they dismissed the picker. */
async function pick(current: readonly string[], own: ReadonlySet<string>): Promise<string[] | undefined> {
  const all = current.includes(ALL_EDITOR_TOOLS);
  const registered = listEditorTools()
    .filter((t) => !own.has(t.name))
    .sort((a, b) => a.name.localeCompare(b.name));
  const known = new Set(registered.map((t) => t.name));
  const items: ToolItem[] = [
    {
      label: 'All tools',
      description: 'every tool registered in VS Code, also those added later',
      entry: ALL_EDITOR_TOOLS,
      picked: all,
      alwaysShow: true,
    },
    { label: 'Tools registered in VS Code', kind: vscode.QuickPickItemKind.Separator },
    ...registered.map((t) => ({ label: t.name, detail: firstLine(t.description), entry: t.name, picked: all || current.includes(t.name) })),
    // Kept on offer, so that a tool of an extension that is off now is not dropped from the setting unseen.
    ...current
      .filter((name) => name !== ALL_EDITOR_TOOLS && !known.has(name))
      .map((name) => ({ label: name, description: 'not registered in VS Code now', entry: name, picked: true })),
  ];
  const picked = await vscode.window.showQuickPick(items, {
    canPickMany: true,
    title: 'Which tools of VS Code may the Longrun agent use?',
    placeHolder: 'Besides its own. VS Code asks you before a tool that wants confirmation runs.',
    matchOnDetail: true,
  });
  if (!picked) return undefined;
  const entries = picked.flatMap((item) => (item.entry !== undefined ? [item.entry] : []));
  return entries.includes(ALL_EDITOR_TOOLS) ? [ALL_EDITOR_TOOLS] : entries;
}

function firstLine(text: string): string {
  const line = text.split('\n', 1)[0] ?? '';
  return line.length > 120 ? `${line.slice(0, 117)}…` : line;
}

function isStringList(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((v) => typeof v === 'string');
}
