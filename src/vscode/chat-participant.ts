import * as vscode from 'vscode';
import { isInstructionReference, type InstructionSource } from '../app/turn/instructions';
import { escapeMarkdown } from '../app/turn/chat-text';
import type { ChatSurface, TurnRequest } from '../app/turn/chat-surface';
import type { TurnController } from '../app/turn/turn-controller';
import type { TurnMetadata } from '../app/turn/chat-history';
import { ANSWER_APPROVAL_COMMAND } from '../app/contributions';
import { attachedReferences } from './attachments';
import type { ChangeDocuments } from './change-view';
import type { PendingApproval } from './edit-approval';
import { VsCodeEditorTools } from './editor-tools';
import type { Session } from './session';

/**
 * `@longrun`: VS Code's chat request, history and response stream, adapted to the turn controller
 * (`src/app/turn/turn-controller.ts`), which decides what the request does.
 */

export interface LongrunChatResult extends vscode.ChatResult {
  readonly metadata: TurnMetadata;
}

/** What the chat participant is built from. */
export interface ParticipantDeps {
  readonly controller: TurnController;
  readonly session: Session;
  /** The documents of the changes the agent made, opened from the chat's buttons. */
  readonly changes: ChangeDocuments;
  readonly log: vscode.LogOutputChannel;
}

export class LongrunParticipant {
  private readonly controller: TurnController;
  private readonly session: Session;
  private readonly changes: ChangeDocuments;
  private readonly log: vscode.LogOutputChannel;

  constructor(deps: ParticipantDeps) {
    ({ controller: this.controller, session: this.session, changes: this.changes, log: this.log } = deps);
  }

  readonly handler: vscode.ChatRequestHandler = async (request, context, stream, token): Promise<LongrunChatResult> => {
    try {
      await this.session.useModel(request.model);
    } catch (error) {
      this.log.warn(`Could not use the chat's model: ${String(error)}`);
    }
    const controller = new AbortController();
    if (token.isCancellationRequested) controller.abort();
    const subscription = token.onCancellationRequested(() => controller.abort());
    try {
      return await this.controller.handle(turnRequest(request, context), surfaceOf(stream, this.changes), controller.signal);
    } finally {
      subscription.dispose();
    }
  };

  /** Shows in the chat that an edit waits for approval, with Apply / Reject buttons beside the diff editor's. */
  showApprovalRequest(approval: PendingApproval): void {
    const chat = this.controller.activeSurface();
    if (!chat) return;
    chat.markdown(`\n\n${escapeMarkdown(approval.question)} The change is open in the diff editor.\n\n`);
    chat.button({ command: ANSWER_APPROVAL_COMMAND, title: 'Apply', arguments: [approval.id, true] });
    chat.button({ command: ANSWER_APPROVAL_COMMAND, title: 'Reject', arguments: [approval.id, false] });
    chat.progress(`Waiting for your approval of ${approval.subject}…`);
  }

  /** The latest notices shown in the chat, newest last. */
  recentNotices(): readonly string[] {
    return this.controller.recentNotices();
  }

  /** Requests handled so far, and whether one is under way. */
  turns(): { readonly active: number; readonly completed: number } {
    return this.controller.turns();
  }

  /** Resolves when no request is under way. */
  idle(): Promise<void> {
    return this.controller.idle();
  }

  /** Questions waiting for an answer. */
  pendingQuestions(): string[] {
    return this.controller.pendingQuestions();
  }
}

/** The request as the turn controller takes it: plain values, instruction files apart from attachments. */
function turnRequest(request: vscode.ChatRequest, context: vscode.ChatContext): TurnRequest {
  const instructions = request.references.filter(isInstructionReference);
  const attached = request.references.filter((r) => !isInstructionReference(r));
  const chat = chatOf(request.toolInvocationToken);
  return {
    prompt: request.prompt,
    ...(request.command !== undefined ? { command: request.command } : {}),
    history: context.history,
    ...(chat !== undefined ? { chat } : {}),
    attachments: attachedReferences(attached),
    instructions: instructions.map(instructionSource),
    toolReferences: request.toolReferences.map((t) => t.name),
    editorTools: new VsCodeEditorTools(request.toolInvocationToken),
  };
}

/**
 * The chat a request came from: VS Code's chat session, which its tool invocation token names (a
 * fork is a new session). The token is opaque in the API; undefined where it does not say.
 */
function chatOf(token: vscode.ChatParticipantToolToken | undefined): string | undefined {
  const session = (token as { sessionResource?: unknown } | undefined)?.sessionResource;
  if (session instanceof vscode.Uri) return session.toString();
  return typeof session === 'string' && session.length > 0 ? session : undefined;
}

/** Longest instruction file read, in bytes. */
const MAX_INSTRUCTION_BYTES = 1024 * 1024;

/** An instruction file VS Code attached, read when the request is handled (its current text). */
function instructionSource(reference: vscode.ChatPromptReference): InstructionSource {
  const value = reference.value;
  const uri = value instanceof vscode.Uri ? value : value instanceof vscode.Location ? value.uri : undefined;
  if (!uri) {
    const text = typeof value === 'string' ? value : '';
    return { kind: 'text', key: reference.id, name: reference.modelDescription ?? reference.id, text };
  }
  return {
    kind: 'file',
    key: uri.toString(),
    name: vscode.workspace.asRelativePath(uri, true),
    read: async () => {
      // The editor's text when the file is open with unsaved changes: what the user sees.
      const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
      if (open) return open.getText();
      const stat = await vscode.workspace.fs.stat(uri);
      if (stat.size > MAX_INSTRUCTION_BYTES) return `(not shown: the file is larger than ${MAX_INSTRUCTION_BYTES / 1024 / 1024} MB)`;
      return new TextDecoder().decode(await vscode.workspace.fs.readFile(uri));
    },
  };
}

/** The response stream as the chat a turn writes to. */
function surfaceOf(stream: vscode.ChatResponseStream, changes: ChangeDocuments): ChatSurface {
  return {
    markdown: (text) => stream.markdown(text),
    progress: (text) => stream.progress(text),
    button: (button) => stream.button({ command: button.command, title: button.title, arguments: [...(button.arguments ?? [])] }),
    diffButton: (path, diff, title) => stream.button(changes.button({ kind: 'modified', path, diff }, title)),
  };
}
