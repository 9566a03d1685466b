import * as vscode from 'vscode';
import { activeEntries } from '../core/history';
import type { ApiKeys } from './api-keys';
import type { CommandHandler } from './entry-points';
import type { CompactionReporter } from './compaction-report';
import { exportConversationToFile } from '../app/conversation/conversation-export';
import { usageLines } from '../app/usage/usage-text';
import { compactionIdOf, latestSummaries } from '../app/compaction/summary-edit';
import { compactionSentence, contextReport, summaryReport, undoSentence } from '../app/report/reports';
import type { Session } from './session';
import type { ConversationRegistry } from '../app/conversation/conversation-registry';
import type { ConversationStore } from '../app/store/conversation-store';
import type { LongrunSettings } from '../app/settings';
import { COMMAND, DOC_SCHEME } from '../app/contributions';
import { subagentRuns } from '../core/subagents';
import { transcriptMarkdown } from '../app/subagents/subagent-transcript';

/** The Command Palette commands (category "Longrun"). */

/** Read-only Markdown documents: summaries and the context report. */
export class ReportDocuments implements vscode.TextDocumentContentProvider {
  private readonly contents = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.contents.get(uri.path) ?? '';
  }

  async open(name: string, markdown: string): Promise<vscode.TextDocument> {
    const uri = vscode.Uri.from({ scheme: DOC_SCHEME, path: `/${name}.md` });
    this.contents.set(uri.path, markdown);
    this.changed.fire(uri);
    const document = await vscode.workspace.openTextDocument(uri);
    await vscode.languages.setTextDocumentLanguage(document, 'markdown');
    await vscode.window.showTextDocument(document, { preview: true });
    return document;
  }
}

export interface CommandDeps {
  /** The model in use. */
  readonly session: Session;
  /** The conversations, the current one first among them. */
  readonly registry: ConversationRegistry;
  /** Where conversations are stored (the export reads them from there). */
  readonly store: ConversationStore;
  readonly settings: () => LongrunSettings;
  readonly keys: ApiKeys;
  readonly documents: ReportDocuments;
  readonly reporter: CompactionReporter;
  readonly now: () => number;
  readonly onKeysChanged: () => void;
}

/** The Command Palette's commands but those of summary documents and the tool picker, by id. */
export function paletteCommands(deps: CommandDeps): Map<string, CommandHandler> {
  return new Map<string, CommandHandler>([
    [COMMAND.compact, (focus?: unknown) => compactNow(deps, focus)],
    [COMMAND.showSummary, (entryId?: unknown) => showSummary(deps, entryId)],
    [COMMAND.undoCompaction, () => undoCompaction(deps)],
    [COMMAND.newConversation, () => newConversation(deps)],
    [COMMAND.openConversation, (id?: unknown) => openConversation(deps, id)],
    [COMMAND.exportConversation, () => exportConversation(deps)],
    [COMMAND.showContextUsage, () => showContextUsage(deps)],
    [COMMAND.openChat, (modelId?: unknown) => openChat(deps, modelId)],
    [COMMAND.setApiKey, (endpointName?: unknown, key?: unknown) => setApiKey(deps, endpointName, key)],
  ]);
}

/** Compacts the current conversation now, with an optional focus for the summary. */
async function compactNow(deps: CommandDeps, focus?: unknown): Promise<unknown> {
  const { session } = deps;
  const conversation = await deps.registry.current();
  if (!conversation || conversation.isEmpty()) {
    void vscode.window.showInformationMessage('Longrun: there is no conversation to compact yet.');
    return undefined;
  }
  await session.useDefaultModel();
  const outcome = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: 'Longrun: compacting conversation…', cancellable: true },
    async (progress, token) => {
      const controller = new AbortController();
      token.onCancellationRequested(() => controller.abort());
      return conversation.compact('manual', {
        signal: controller.signal,
        ...(typeof focus === 'string' && focus.trim() ? { focus: focus.trim() } : {}),
        onProgress: (p) => progress.report({ message: p.calls > 1 ? `${p.phase} (${p.call} of ${p.calls})` : p.phase }),
      });
    },
  );
  deps.reporter.report(outcome, 'manual');
  if (outcome.status === 'compacted') {
    const e = outcome.compaction.entry;
    const fallback = e?.fallback ? ' (extractive fallback: the summarizer failed)' : '';
    const actions = e ? ['Open Summary', 'Undo'] : ['Undo'];
    void vscode.window.showInformationMessage(`${compactionSentence(outcome.compaction)}${fallback}.`, ...actions).then((choice) => {
      if (choice === 'Open Summary' && e) void vscode.commands.executeCommand(COMMAND.showSummary, e.id);
      if (choice === 'Undo') void vscode.commands.executeCommand(COMMAND.undoCompaction);
    });
  } else if (outcome.status === 'failed') {
    void vscode.window.showErrorMessage(`Longrun: ${outcome.reason}`);
  } else if (outcome.status === 'noop') {
    void vscode.window.showInformationMessage(`Longrun: ${outcome.reason}`);
  }
  return outcome.status;
}

/** Opens the summary of a compaction (the latest when none is named). */
async function showSummary(deps: CommandDeps, entryId?: unknown): Promise<unknown> {
  const conversation = await deps.registry.current();
  // One entry per compaction, its summary as last edited: a button made before an edit shows the edit.
  const entries = latestSummaries(conversation ? activeEntries(conversation.log()) : []);
  const entry = (typeof entryId === 'string' && entries.find((e) => compactionIdOf(e) === entryId)) || entries.at(-1);
  if (!entry) {
    void vscode.window.showInformationMessage('Longrun: this conversation has not been compacted, so there is no summary yet.');
    return undefined;
  }
  await deps.documents.open(`summary-round-${entry.round}`, summaryReport(entry));
  return entry.id;
}

/** Undoes the last compaction or pruning of the current conversation. */
async function undoCompaction(deps: CommandDeps): Promise<unknown> {
  const conversation = await deps.registry.current();
  if (!conversation) {
    void vscode.window.showInformationMessage('Longrun: there is no conversation.');
    return false;
  }
  const result = await conversation.undo();
  if (!result.ok) {
    void vscode.window.showInformationMessage(`Longrun: ${result.reason}`);
    return false;
  }
  void vscode.window.showInformationMessage(`Longrun: ${undoSentence(result.step)}`);
  return true;
}

/** Starts a new conversation in a new chat. */
async function newConversation(deps: CommandDeps): Promise<unknown> {
  const conversation = await deps.registry.startNew();
  // Each chat continues its own conversation: the new one goes with a new chat.
  deps.registry.continueInNextChat(conversation.id);
  await vscode.commands.executeCommand('workbench.action.chat.newChat').then(undefined, () => undefined);
  void vscode.window.showInformationMessage('Longrun: started a new conversation in a new chat. The previous one is kept on disk.');
  return conversation.id;
}

/** Opens a stored conversation, picked from the list or named by id. */
async function openConversation(deps: CommandDeps, id?: unknown): Promise<unknown> {
  const list = await deps.registry.conversations();
  if (list.length === 0) {
    void vscode.window.showInformationMessage('Longrun: this workspace has no conversations yet. Chat with @longrun to start one.');
    return undefined;
  }
  const now = deps.now();
  const picked =
    (typeof id === 'string' && list.find((c) => c.id === id)) ||
    (
      await vscode.window.showQuickPick(
        list.map((c) => ({
          label: c.title,
          description: `${ago(now - c.updatedAt)} · ${size(c.bytes)} · ${c.compactions === 1 ? '1 compaction' : `${c.compactions} compactions`}`,
          conversation: c,
        })),
        { title: 'Open which Longrun conversation?', matchOnDescription: true },
      )
    )?.conversation;
  if (!picked) return undefined;
  const conversation = await deps.registry.open(picked.id);
  if (!conversation) return undefined;
  // VS Code's chat cannot be pointed at an existing conversation: the next new chat continues it.
  deps.registry.continueInNextChat(picked.id);
  await vscode.commands.executeCommand('workbench.action.chat.open', { query: '@longrun ', isPartialQuery: true });
  void vscode.window.showInformationMessage(`Longrun: "${picked.title}" is open; the next new chat with @longrun continues it.`);
  return picked.id;
}

/** Exports the current conversation as Markdown. */
async function exportConversation(deps: CommandDeps): Promise<unknown> {
  const { session } = deps;
  const conversation = await deps.registry.current();
  if (!conversation || conversation.isEmpty()) {
    void vscode.window.showInformationMessage('Longrun: there is no conversation to export yet.');
    return undefined;
  }
  const title = (await deps.registry.conversations()).find((c) => c.id === conversation.id)?.title ?? 'Longrun conversation';
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
  const target = await vscode.window.showSaveDialog({
    title: 'Export Longrun conversation as Markdown',
    filters: { Markdown: ['md'] },
    ...(folder ? { defaultUri: vscode.Uri.joinPath(folder, exportFileName(title)) } : {}),
  });
  if (!target) return undefined;
  // Read from the conversation's files and written as it is read: any size exports in little memory.
  const bytes = await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `Longrun: exporting "${title}"…` }, () =>
    exportConversationToFile(
      (onRecord) => deps.store.readRecords(conversation.id, onRecord),
      title,
      target.fsPath,
      conversation.leaf(),
      usageLines({ report: session.usageReport(conversation) }),
    ),
  );
  if (bytes <= OPEN_EXPORT_BYTES) {
    await vscode.window.showTextDocument(target, { preview: false });
  } else {
    const choice = await vscode.window.showInformationMessage(
      `Longrun: exported "${title}" to ${target.fsPath} (${(bytes / 1024 / 1024).toFixed(0)} MB, too large to open here).`,
      'Reveal in File Explorer',
    );
    if (choice) await vscode.commands.executeCommand('revealFileInOS', target);
  }
  return bytes;
}

/** Exports up to this size open in the editor once written. */
const OPEN_EXPORT_BYTES = 16 * 1024 * 1024;

/** A file name for the export from the conversation's title. */
function exportFileName(title: string): string {
  const name = title
    .replace(/[^\p{L}\p{N}]+/gu, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 60);
  return `${name || 'longrun-conversation'}.md`;
}

/** Shows how the context window is used. */
async function showContextUsage(deps: CommandDeps): Promise<unknown> {
  const { session } = deps;
  const conversation = await deps.registry.current();
  const markdown = conversation
    ? contextReport(conversation, session.modelName(), deps.now(), session.usageView(conversation))
    : 'Longrun: there is no conversation yet.';
  await deps.documents.open('context-usage', markdown);
  return markdown;
}

/**
 * Opens a subagent's transcript (the chat's "Show transcript" button), read from its conversation's
 * log as it is now: a read-only Markdown document. Returns the subagent's status, or false.
 */
export async function showSubagentTranscript(
  deps: Pick<CommandDeps, 'registry' | 'documents'>,
  conversationId: unknown,
  subagentId: unknown,
): Promise<unknown> {
  const conversation = typeof conversationId === 'string' ? await deps.registry.find(conversationId) : undefined;
  const run = conversation && subagentRuns(conversation.allRecords()).find((r) => r.start.id === subagentId);
  if (!run) {
    void vscode.window.showInformationMessage("Longrun: this subagent's transcript is not in this workspace's conversations.");
    return false;
  }
  await deps.documents.open(`subagent-${run.start.id}`, transcriptMarkdown(run));
  return run.status;
}

/** Opens a chat with a Longrun model. */
async function openChat(deps: CommandDeps, modelId?: unknown): Promise<unknown> {
  // VS Code builds without Copilot select no model by themselves: open the chat with one of Longrun's.
  const models = await vscode.lm.selectChatModels({ vendor: 'longrun' });
  if (models.length === 0) {
    const choice = await vscode.window.showWarningMessage(
      'Longrun: no models are configured. Add an endpoint in the longrun.endpoints setting.',
      'Open Settings',
    );
    if (choice === 'Open Settings') void vscode.commands.executeCommand('workbench.action.openSettings', 'longrun.endpoints');
    return false;
  }
  const chosen =
    (typeof modelId === 'string' && models.find((m) => m.id === modelId)) ||
    (models.length === 1
      ? models[0]
      : (
          await vscode.window.showQuickPick(
            models.map((m) => ({ label: m.name, description: m.id, model: m })),
            { title: 'Chat with which model?' },
          )
        )?.model);
  if (!chosen) return false;
  // The input first, then the model: given both, VS Code shows the chat, selects the model, and only
  // then puts "@longrun " in, over what the user may have begun to type meanwhile.
  await vscode.commands.executeCommand('workbench.action.chat.open', { query: '@longrun ', isPartialQuery: true });
  await vscode.commands.executeCommand('workbench.action.chat.open', { modelSelector: { vendor: chosen.vendor, id: chosen.id } });
  return true;
}

/** Stores an endpoint's API key in VS Code's secret storage. */
async function setApiKey(deps: CommandDeps, endpointName?: unknown, key?: unknown): Promise<unknown> {
  const endpoints = deps.settings().endpoints;
  if (endpoints.length === 0) {
    const choice = await vscode.window.showWarningMessage(
      'Longrun: no endpoints are configured. Add one in the longrun.endpoints setting first.',
      'Open Settings',
    );
    if (choice === 'Open Settings') void vscode.commands.executeCommand('workbench.action.openSettings', 'longrun.endpoints');
    return false;
  }
  const name =
    typeof endpointName === 'string'
      ? endpointName
      : endpoints.length === 1
        ? endpoints[0]!.name
        : (
            await vscode.window.showQuickPick(
              endpoints.map((e) => ({ label: e.name, description: e.baseUrl })),
              { title: 'Set the API key of which endpoint?' },
            )
          )?.label;
  if (!name || !endpoints.some((e) => e.name === name)) return false;
  const value =
    typeof key === 'string'
      ? key
      : await vscode.window.showInputBox({
          title: `API key for ${name}`,
          prompt: "Stored in VS Code's secret storage, never in settings. Leave empty to remove it.",
          password: true,
          ignoreFocusOut: true,
        });
  if (value === undefined) return false;
  if (value.trim() === '') await deps.keys.delete(name);
  else await deps.keys.set(name, value.trim());
  deps.onKeysChanged();
  void vscode.window.showInformationMessage(
    value.trim() ? `Longrun: the API key for ${name} is stored.` : `Longrun: the API key for ${name} is removed.`,
  );
  return true;
}

function ago(ms: number): string {
  const minutes = Math.round(Math.max(0, ms) / 60_000);
  if (minutes < 1) return 'just now';
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.round(minutes / 60);
  return hours < 48 ? `${hours} h ago` : `${Math.round(hours / 24)} days ago`;
}

function size(bytes: number): string {
  return bytes < 1_024 ? `${bytes} B` : bytes < 1_048_576 ? `${Math.round(bytes / 1_024)} KB` : `${(bytes / 1_048_576).toFixed(1)} MB`;
}
