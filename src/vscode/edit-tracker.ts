import * as vscode from 'vscode';
import type { FileEvent } from '../core/file-ledger';
import { toWorkspaceRelative, type WorkspaceRoot } from '../app/workspace/path-guard';

/** What the edit tracker is built from. */
export interface EditTrackerDeps {
  readonly roots: () => WorkspaceRoot[];
  /** Called with each file operation of the user's. */
  readonly record: (event: FileEvent) => void;
  readonly now: () => number;
}

/**
 * Feeds the file ledger from the editor's own events: the user's edits, saves, and file creation,
 * deletion and renaming. Only files inside the workspace count (not output, git or untitled
 * documents). The agent's own writes are recorded by its tools and are not counted twice here.
 */
export class EditTracker implements vscode.Disposable {
  private readonly disposables: vscode.Disposable[] = [];
  /** Documents with unsaved user edits already reported, so typing is one event, not hundreds. */
  private readonly editedSinceSave = new Set<string>();
  /** Paths the agent is writing right now: their change events are the agent's, not the user's. */
  private readonly agentWrites = new Map<string, number>();

  constructor(private readonly deps: EditTrackerDeps) {
    this.disposables.push(
      vscode.workspace.onDidChangeTextDocument((e) => {
        if (e.contentChanges.length === 0) return;
        const path = this.relative(e.document.uri);
        if (!path || this.isAgentWrite(path) || this.editedSinceSave.has(path)) return;
        this.editedSinceSave.add(path);
        this.emit('modified', path);
      }),
      vscode.workspace.onDidSaveTextDocument((document) => {
        const path = this.relative(document.uri);
        if (!path) return;
        const reported = this.editedSinceSave.delete(path);
        if (!reported && !this.isAgentWrite(path)) this.emit('modified', path);
      }),
      vscode.workspace.onDidCreateFiles((e) => {
        for (const uri of e.files) {
          const path = this.relative(uri);
          if (path && !this.isAgentWrite(path)) this.emit('created', path);
        }
      }),
      vscode.workspace.onDidDeleteFiles((e) => {
        for (const uri of e.files) {
          const path = this.relative(uri);
          if (path) this.emit('deleted', path);
        }
      }),
      vscode.workspace.onDidRenameFiles((e) => {
        for (const { oldUri, newUri } of e.files) {
          const from = this.relative(oldUri);
          const path = this.relative(newUri);
          if (from && path) this.deps.record({ kind: 'renamed', path, from, actor: 'user', at: this.deps.now() });
          else if (path) this.emit('created', path);
          else if (from) this.emit('deleted', from);
        }
      }),
    );
  }

  /** Marks a path as being written by the agent for the next few seconds. */
  agentWriting(path: string): void {
    this.agentWrites.set(path, this.deps.now() + 5_000);
  }

  private isAgentWrite(path: string): boolean {
    const until = this.agentWrites.get(path);
    if (until === undefined) return false;
    if (until < this.deps.now()) {
      this.agentWrites.delete(path);
      return false;
    }
    return true;
  }

  private emit(kind: FileEvent['kind'], path: string): void {
    this.deps.record({ kind, path, actor: 'user', at: this.deps.now() });
  }

  private relative(uri: vscode.Uri): string | undefined {
    if (uri.scheme !== 'file' && uri.scheme !== 'vscode-remote') return undefined;
    return toWorkspaceRelative(this.deps.roots(), uri.fsPath);
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}
