import * as vscode from 'vscode';
import type { Replacement } from '../app/workspace/exact-edits';
import type { WorkspaceRoot } from '../app/workspace/path-guard';
import { WorkspaceFiles, type EditorPort, type WorkspaceFilesDeps } from '../app/workspace/workspace-files';

export type { WorkspaceChange } from '../app/workspace/workspace-files';

/**
 * The agent's `WorkspacePort` in VS Code: `workspace-files.ts` over VS Code's `findFiles` and
 * its open documents. Files are read and written on disk through handles checked to be inside the
 * workspace, not through `workspace.fs` or a document save, which go by path and so can be
 * redirected by a folder swapped for a link between the check and the use (see
 * `confined-files.ts`); unsaved editor text is read, and edited, in the editor.
 */

/** Everything of {@link WorkspaceFilesDeps} but the editor, which is VS Code's. */
export type VsCodeWorkspaceDeps = Omit<WorkspaceFilesDeps, 'editor'>;

const EXCLUDE = '**/{node_modules,.git}/**';

export class VsCodeWorkspace extends WorkspaceFiles {
  constructor(deps: VsCodeWorkspaceDeps) {
    super({ ...deps, editor: vscodeEditor });
  }
}

const vscodeEditor: EditorPort = {
  async findFiles(root: WorkspaceRoot | undefined, pattern: string, maxResults: number, signal: AbortSignal): Promise<string[]> {
    signal.throwIfAborted();
    const source = new vscode.CancellationTokenSource();
    const cancel = (): void => source.cancel();
    signal.addEventListener('abort', cancel, { once: true });
    try {
      const include = root ? new vscode.RelativePattern(vscode.Uri.file(root.fsPath), pattern) : pattern;
      const uris = await vscode.workspace.findFiles(include, EXCLUDE, maxResults, source.token);
      signal.throwIfAborted();
      return uris.filter((uri) => uri.scheme === 'file').map((uri) => uri.fsPath);
    } finally {
      signal.removeEventListener('abort', cancel);
      source.dispose();
    }
  },

  unsavedText(absolute: string): string | undefined {
    const document = openDocument(absolute);
    return document?.isDirty ? document.getText() : undefined;
  },

  async editUnsaved(absolute: string, expected: string, replacements: readonly Replacement[]): Promise<boolean> {
    const document = openDocument(absolute);
    // The user may have typed, saved or closed it while the confirmation was open: the offsets would then be wrong.
    if (!document?.isDirty || document.getText() !== expected) return false;
    const edit = new vscode.WorkspaceEdit();
    for (const r of replacements) {
      edit.replace(document.uri, new vscode.Range(document.positionAt(r.start), document.positionAt(r.end)), r.newText);
    }
    return vscode.workspace.applyEdit(edit);
  },
};

function openDocument(absolute: string): vscode.TextDocument | undefined {
  return vscode.workspace.textDocuments.find((d) => d.uri.scheme === 'file' && d.uri.fsPath === absolute);
}
