import * as vscode from 'vscode';
import type { ApprovalRequest } from '../app/workspace/workspace-files';
import { PROPOSAL_SCHEME } from '../app/contributions';
import type { Event, Subscription } from '../app/emitter';
import { OpenQuestions, type OpenQuestion } from '../app/workspace/open-questions';

/**
 * The questions the agent asks before it writes a file or runs a command.
 *
 * A write opens VS Code's diff editor on the whole file as it is and as it will be (both sides
 * read-only documents of this provider, from the exact texts the write was computed from and will
 * write), with Apply / Reject in a notification and in the chat. The notification is not modal:
 * a modal dialog would keep the user from scrolling the diff. Either answer closes the diff.
 * A command is asked for in a modal dialog showing the whole command line: there is nothing
 * else to look at, and a modal cannot be missed.
 */

/** A question waiting for the user's answer, with the sides of the diff editor for an edit. */
export interface PendingApproval extends OpenQuestion {
  /** For an edit: the file as it is (left side of the diff editor). */
  readonly original?: vscode.Uri;
  /** For an edit: the file as it will be once applied (right side). */
  readonly proposed?: vscode.Uri;
}

const APPLY = 'Apply';
const REJECT = 'Reject';
const RUN = 'Run';

export class Approvals implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly texts = new Map<string, string>();
  private readonly questions = new OpenQuestions<PendingApproval>();
  private count = 0;
  /** Edits are asked for one at a time: one diff and one question on screen. */
  private editQueue: Promise<unknown> = Promise.resolve();

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? '';
  }

  /** Fires when an edit is asked for, as its diff opens, so the chat can show the question with its buttons. */
  readonly onDidAskEdit: Event<PendingApproval> = (listener): Subscription =>
    this.questions.onDidAsk((approval) => {
      if (approval.kind === 'edit') listener(approval);
    });

  /** The questions waiting for an answer, oldest first. */
  pending(): PendingApproval[] {
    return this.questions.pending();
  }

  /** Answers a question (the chat's buttons); false when it was answered already. */
  answer(id: unknown, allow: unknown): boolean {
    return this.questions.answer(id, allow);
  }

  /** Shows the whole change in the diff editor and waits for Apply or Reject; Stop counts as Reject. */
  askEdit(request: ApprovalRequest, signal: AbortSignal): Promise<boolean> {
    const next = this.editQueue.then(() => (signal.aborted ? false : this.showAndAsk(request, signal)));
    this.editQueue = next.catch(() => undefined);
    return next;
  }

  private async showAndAsk(request: ApprovalRequest, signal: AbortSignal): Promise<boolean> {
    const id = `edit-${++this.count}`;
    const original = proposalUri(request.path, id, 'current');
    const proposed = proposalUri(request.path, id, 'proposed');
    this.texts.set(original.toString(), request.before);
    this.texts.set(proposed.toString(), request.after);
    const approval: PendingApproval = { id, kind: 'edit', question: request.question, subject: request.path, original, proposed };
    try {
      const what = request.verb === 'create' ? 'new file' : 'edit';
      await vscode.commands.executeCommand('vscode.diff', original, proposed, `${request.path} (Longrun's proposed ${what})`, {
        preview: false,
        preserveFocus: true,
      });
      return await this.questions.ask(approval, signal, async () => {
        const answer = await vscode.window.showWarningMessage(`${request.question} The whole change is open in the diff editor.`, APPLY, REJECT);
        return answer === APPLY;
      });
    } finally {
      await closeDiff(proposed);
      this.texts.delete(original.toString());
      this.texts.delete(proposed.toString());
    }
  }

  /** Asks to run `command`, shown in full, in a modal dialog; Stop counts as Reject. */
  askCommand(command: string, signal: AbortSignal): Promise<boolean> {
    const id = `command-${++this.count}`;
    const question = 'Allow Longrun to run this command in the terminal?';
    return this.questions.ask({ id, kind: 'command', question, subject: command }, signal, async () => {
      const answer = await vscode.window.showWarningMessage(
        question,
        { modal: true, detail: command },
        { title: RUN },
        { title: REJECT, isCloseAffordance: true },
      );
      return answer?.title === RUN;
    });
  }

  /**
   * Closes diff editors of questions from an earlier window: VS Code restores open editors after a
   * reload or a crash, but the question they belonged to is gone, and so is their content.
   */
  async closeLeftovers(): Promise<void> {
    const asked = new Set(this.pending().map((a) => a.proposed?.toString()));
    const leftovers = vscode.window.tabGroups.all
      .flatMap((group) => group.tabs)
      .filter(
        (tab) =>
          tab.input instanceof vscode.TabInputTextDiff && tab.input.modified.scheme === PROPOSAL_SCHEME && !asked.has(tab.input.modified.toString()),
      );
    if (leftovers.length > 0) await vscode.window.tabGroups.close(leftovers);
  }

  dispose(): void {
    this.questions.refuseAll();
    this.texts.clear();
  }
}

/** A read-only document of one side of a proposed change; the file's own path keeps its language. */
function proposalUri(path: string, id: string, side: 'current' | 'proposed'): vscode.Uri {
  return vscode.Uri.from({ scheme: PROPOSAL_SCHEME, path: `/${path}`, query: `${id}&${side}` });
}

async function closeDiff(proposed: vscode.Uri): Promise<void> {
  const tabs = vscode.window.tabGroups.all
    .flatMap((group) => group.tabs)
    .filter((tab) => tab.input instanceof vscode.TabInputTextDiff && tab.input.modified.toString() === proposed.toString());
  if (tabs.length > 0) await vscode.window.tabGroups.close(tabs);
}
