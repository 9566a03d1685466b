import { lazily } from '../core/lazy';
import * as vscode from 'vscode';
import { z } from 'zod';
import type { WorkspaceChange } from '../app/workspace/workspace-files';
import { CHANGE_SCHEME, SHOW_CHANGE_COMMAND } from '../app/contributions';

/**
 * The "Show diff" button under a change the agent made: the whole unified diff of the change as a
 * read-only document (language `diff`). The chat has no collapsible block (its Markdown drops
 * `<details>`) and shows a code block at its full height, so a long diff is kept behind this
 * button instead of pushing the conversation out of sight.
 *
 * The button carries the diff itself, so it still works after a window reload (VS Code keeps a
 * chat's buttons with their arguments); a diff too long to store in the chat is kept in memory
 * for this window only.
 */

/** Longest diff carried in the button's arguments (and so stored with the chat). */
const MAX_CARRIED_CHARS = 256 * 1024;
/** Diffs kept in memory, newest last. */
const MAX_KEPT = 50;

const showChangeArgument = lazily(() => z.object({ id: z.string(), path: z.string(), diff: z.string().optional() }));
type ShowChangeArgument = z.infer<ReturnType<typeof showChangeArgument>>;

export class ChangeDocuments implements vscode.TextDocumentContentProvider {
  private readonly kept = new Map<string, string>();
  private readonly documents = new Map<string, string>();
  private count = 0;

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.documents.get(uri.toString()) ?? '';
  }

  /** Keeps the change's diff and returns the button that shows it. */
  button(change: WorkspaceChange, title: string): vscode.Command {
    const id = `${Date.now().toString(36)}-${++this.count}`;
    keepAtMost(this.kept, id, change.diff);
    const argument: ShowChangeArgument = { id, path: change.path, ...(change.diff.length <= MAX_CARRIED_CHARS ? { diff: change.diff } : {}) };
    return { command: SHOW_CHANGE_COMMAND, title, arguments: [argument] };
  }

  /** Opens `diff` (of `path`) as a read-only document; resolves with its URI. */
  async open(path: string, diff: string): Promise<vscode.Uri> {
    const id = `${Date.now().toString(36)}-${++this.count}`;
    const uri = vscode.Uri.from({ scheme: CHANGE_SCHEME, path: `/${path}.diff`, query: id });
    keepAtMost(this.documents, uri.toString(), diff);
    const document = await vscode.workspace.openTextDocument(uri);
    await vscode.languages.setTextDocumentLanguage(document, 'diff');
    await vscode.window.showTextDocument(document, { preview: true });
    return uri;
  }

  /** Closes the editors showing `uri`. */
  async close(uri: vscode.Uri): Promise<void> {
    const tabs = vscode.window.tabGroups.all.flatMap((group) =>
      group.tabs.filter((tab) => tab.input instanceof vscode.TabInputText && tab.input.uri.toString() === uri.toString()),
    );
    if (tabs.length > 0) await vscode.window.tabGroups.close(tabs);
  }

  /** Opens the diff a button carries; false (with a message) when it is no longer kept. */
  async show(argument: unknown): Promise<boolean> {
    const parsed = showChangeArgument().safeParse(argument).data;
    const diff = parsed ? (parsed.diff ?? this.kept.get(parsed.id)) : undefined;
    if (!parsed || diff === undefined) {
      void vscode.window.showInformationMessage(
        "This diff was too long to keep in the chat and is gone since the window was reloaded. The file's Timeline view shows its history.",
      );
      return false;
    }
    await this.open(parsed.path, diff);
    return true;
  }
}

/** Adds an entry, dropping the oldest beyond {@link MAX_KEPT}. */
function keepAtMost(map: Map<string, string>, key: string, value: string): void {
  map.set(key, value);
  for (const old of map.keys()) {
    if (map.size <= MAX_KEPT) break;
    map.delete(old);
  }
}
