import * as vscode from 'vscode';
import type { FileEvent } from './core/file-ledger';
import { systemClock } from './core/ports';
import { ApiKeys } from './vscode/api-keys';
import { ANSWER_COMMAND, LongrunParticipant, PARTICIPANT_ID } from './vscode/chat-participant';
import { ChangeDocuments, CHANGE_SCHEME, SHOW_CHANGE_COMMAND } from './vscode/change-view';
import { CommandRunner } from './app/command-runner';
import { ANSWER_APPROVAL_COMMAND, Approvals, PROPOSAL_SCHEME } from './vscode/edit-approval';
import { registerCommands, ReportDocuments, DOC_SCHEME } from './vscode/commands';
import { CompactionReporter } from './vscode/compaction-report';
import { EditTracker } from './vscode/edit-tracker';
import { ContextGauge } from './vscode/gauge';
import { discoverContextWindow } from './llm/window-discovery';
import { LongrunModelProvider, VENDOR } from './vscode/model-provider';
import { ModelWindows } from './app/model-windows';
import type { WorkspaceRoot } from './app/path-guard';
import { Session } from './vscode/session';
import type { LongrunSettings } from './app/settings';
import { lazily } from './core/lazy';
import { TerminalShell } from './vscode/terminal-tool';
import { registerToolPicker } from './vscode/tool-picker';
import { VsCodeWorkspace } from './vscode/workspace-tools';
import { registerSummaryDocuments, SummaryDocuments } from './vscode/summary-documents';

/**
 * The composition root: builds every adapter, hands them to the core and pushes every disposable
 * into the context's subscriptions. Activation does no heavy work: the tokenizer, the saved
 * conversation and the models load when first needed.
 */

/** What the extension exports: its state, for tests and for other extensions that build on it. */
export interface LongrunApi {
  readonly session: Session;
  readonly gauge: ContextGauge;
  readonly participant: LongrunParticipant;
  readonly settings: () => LongrunSettings;
  /** The agent's questions (writes, commands) waiting for the user. */
  readonly approvals: Approvals;
}

export function activate(context: vscode.ExtensionContext): LongrunApi {
  const log = vscode.window.createOutputChannel('Longrun', { log: true });
  context.subscriptions.push(log);
  const now = () => systemClock.now();

  // Each settings problem is shown once per session, and logged whenever settings are read.
  // Read on first use: validating them builds the configuration's schemas, which activation need not wait for.
  const reported = new Set<string>();
  let read: LongrunSettings | undefined;
  const currentSettings = (): LongrunSettings => (read ??= loadSettings(log, reported));

  const keys = new ApiKeys(context.secrets);
  // Windows servers state for their models: cached across sessions, asked again once per session.
  const windows = new ModelWindows(
    context.globalState,
    async (target) => {
      const apiKey = target.endpoint ? await keys.get(target.endpoint) : undefined;
      return discoverContextWindow({ baseUrl: target.baseUrl, modelId: target.modelId, ...(apiKey ? { apiKey } : {}) });
    },
    now,
    (message) => log.info(message),
  );
  // Cleans provider error text of the stored keys; the session holds them once read.
  let redact = (text: string): string => text;
  const provider = new LongrunModelProvider(
    () => currentSettings().endpoints,
    keys,
    log,
    windows,
    () => currentSettings().timeouts,
    (text) => redact(text),
  );
  context.subscriptions.push(vscode.lm.registerLanguageModelChatProvider(VENDOR, provider));

  const storageDir = (context.storageUri ?? context.globalStorageUri).fsPath;
  const session = new Session(storageDir, context.workspaceState, currentSettings, provider, keys, systemClock, log, windows);
  context.subscriptions.push(session);
  redact = (text) => session.redact(text);
  // Right after activation, with the first settings read: the stored keys (to keep them out of error
  // text) and tracing, when the settings ask for it.
  setImmediate(() => {
    void session.refreshSecrets();
    session.configureTelemetry();
  });

  const reporter = new CompactionReporter(log, () => currentSettings().verboseLogging, now);
  const documents = new ReportDocuments();
  context.subscriptions.push(vscode.workspace.registerTextDocumentContentProvider(DOC_SCHEME, documents));
  // Summaries to preview and edit: what the user saves is what the model gets.
  const summaries = new SummaryDocuments({
    conversation: (id) => session.find(id),
    current: () => session.current(),
    newId: () => session.newId(),
    counter: () => session.modelContext().counter,
    now,
    log,
  });
  context.subscriptions.push(...registerSummaryDocuments(summaries));

  const roots = (): WorkspaceRoot[] => (vscode.workspace.workspaceFolders ?? []).map((f) => ({ name: f.name, fsPath: f.uri.fsPath }));
  const recordFile = (event: FileEvent): void => {
    const conversation = session.currentIfLoaded();
    if (!conversation || conversation.isEmpty()) return;
    void conversation.append([{ type: 'file', event }]).catch((error: unknown) => log.warn(`Could not record a file operation: ${String(error)}`));
  };
  const tracker = new EditTracker(roots, recordFile, now);
  context.subscriptions.push(tracker);

  const approvals = new Approvals();
  context.subscriptions.push(approvals, vscode.workspace.registerTextDocumentContentProvider(PROPOSAL_SCHEME, approvals));
  void approvals.closeLeftovers().catch((error: unknown) => log.warn(`Could not close the diff editors of an earlier window: ${String(error)}`));
  context.subscriptions.push(
    vscode.commands.registerCommand(ANSWER_APPROVAL_COMMAND, (id: unknown, allow: unknown) => {
      // The chat keeps its buttons after the question is answered elsewhere, or the request ended.
      const answered = approvals.answer(id, allow);
      if (!answered)
        void vscode.window.showInformationMessage('Longrun: this question is no longer open; it was answered already, or its request ended.');
      return answered;
    }),
  );
  const changes = new ChangeDocuments();
  context.subscriptions.push(vscode.workspace.registerTextDocumentContentProvider(CHANGE_SCHEME, changes));
  context.subscriptions.push(vscode.commands.registerCommand(SHOW_CHANGE_COMMAND, (argument: unknown) => changes.show(argument)));

  let shown: LongrunParticipant | undefined;
  const workspace = new VsCodeWorkspace({
    roots,
    autoApprove: () => currentSettings().agent.autoApproveEdits,
    protectedPaths: () => currentSettings().agent.protectedPaths,
    confirm: (request, signal) => approvals.askEdit(request, signal),
    beforeWrite: (path) => tracker.agentWriting(path),
    onChanged: (change) => shown?.showChange(change, changes),
  });
  const shell = new TerminalShell({ cwd: () => vscode.workspace.workspaceFolders?.[0]?.uri, log });
  context.subscriptions.push(shell);
  const commands = new CommandRunner({
    shell,
    allowedCommands: () => currentSettings().agent.allowedCommands,
    timeoutSeconds: () => currentSettings().agent.commandTimeoutSeconds,
    confirm: (command, signal) => approvals.askCommand(command, signal),
    // The command itself is conversation content, logged only when verbose logging is on.
    onAllowed: (command, entry) =>
      log.info(
        `Ran ${currentSettings().verboseLogging ? `"${command}"` : 'a command'} without asking: longrun.agent.allowedCommands has "${entry}".`,
      ),
  });

  const participant = new LongrunParticipant({
    session,
    settings: currentSettings,
    workspace,
    commands,
    reporter,
    log,
    now,
    onAgentFile: (kind, path) => recordFile({ kind, path, actor: 'agent', at: now() }),
    summaries,
  });
  shown = participant;
  approvals.onAskEdit = (approval) => participant.showApprovalRequest(approval);
  session.setRequestOverhead(() => participant.requestOverheadText());
  context.subscriptions.push(
    vscode.commands.registerCommand(ANSWER_COMMAND, (id: unknown, compact: unknown) => participant.answerCompaction(id, compact)),
  );
  context.subscriptions.push(registerToolPicker(currentSettings, () => participant.ownToolNames()));
  const chat = vscode.chat.createChatParticipant(PARTICIPANT_ID, participant.handler);
  chat.iconPath = vscode.Uri.joinPath(context.extensionUri, 'media', 'longrun.png');
  context.subscriptions.push(chat);

  const gauge = new ContextGauge(session, currentSettings, now);
  context.subscriptions.push(gauge);
  context.subscriptions.push(session.onDidChange(() => gauge.update()));
  context.subscriptions.push(windows.onDidChange(() => gauge.update()));
  // Edits to files the conversation holds change what the model would re-read: refresh the gauge.
  context.subscriptions.push(vscode.workspace.onDidChangeTextDocument(() => gauge.update()));

  context.subscriptions.push(
    ...registerCommands({
      session,
      settings: currentSettings,
      keys,
      documents,
      reporter,
      now,
      onKeysChanged: () => {
        provider.refresh();
        session.invalidateModels();
        void session.refreshSecrets();
      },
    }),
  );
  context.subscriptions.push(
    keys.onDidChange(() => {
      provider.refresh();
      session.invalidateModels();
      void session.refreshSecrets();
    }),
  );

  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (!e.affectsConfiguration('longrun')) return;
      read = loadSettings(log, reported);
      session.configureTelemetry();
      // The tools offered are part of what every request carries.
      if (e.affectsConfiguration('longrun.agent.editorTools')) session.setRequestOverhead(() => participant.requestOverheadText());
      if (e.affectsConfiguration('longrun.endpoints')) {
        provider.refresh();
        session.invalidateModels();
        void session.refreshSecrets();
      }
      gauge.update();
    }),
  );

  void adoptKeyFromEnvironment(keys, log).then((adopted) => {
    if (!adopted) return;
    provider.refresh();
    void session.refreshSecrets();
  });
  const openWith = process.env.LONGRUN_OPEN_CHAT_MODEL;
  if (openWith) void vscode.commands.executeCommand('longrun.openChat', openWith);

  // Show the saved conversation in the gauge, right after activation.
  setImmediate(() => {
    void session
      .current()
      .then(() => session.useDefaultModel())
      .catch((error: unknown) => log.warn(`Could not restore the last model: ${String(error)}`))
      .then(() => gauge.update());
  });
  return { session, gauge, participant, settings: currentSettings, approvals };
}

/**
 * `npm start` hands an API key over in the environment; it goes straight into secret storage
 * (never into settings or logs), and is not replaced if one is stored already.
 */
async function adoptKeyFromEnvironment(keys: ApiKeys, log: vscode.LogOutputChannel): Promise<boolean> {
  const key = process.env.LONGRUN_API_KEY;
  const endpoint = process.env.LONGRUN_API_KEY_ENDPOINT;
  if (!key || !endpoint) return false;
  if (await keys.get(endpoint)) return false;
  await keys.set(endpoint, key);
  log.info(`Stored the API key for ${endpoint} from the environment in secret storage.`);
  return true;
}

/**
 * The settings module, loaded the first time settings are read rather than with the extension: it
 * and the configuration schemas it builds are the largest part of what loading would otherwise run.
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports -- a require the bundler makes lazy, on purpose
const settingsModule = lazily(() => require('./app/settings') as typeof import('./app/settings'));

function loadSettings(log: vscode.LogOutputChannel, reported: Set<string>): LongrunSettings {
  const { readSettings, formatProblem } = settingsModule();
  const configuration = vscode.workspace.getConfiguration('longrun');
  const { settings, problems } = readSettings((key) => configuration.get(key));
  for (const problem of problems) {
    const message = formatProblem(problem);
    log.warn(message);
    if (!reported.has(message)) {
      reported.add(message);
      void vscode.window.showWarningMessage(message);
    }
  }
  return settings;
}

export function deactivate(): void {
  // Everything is disposed through the context's subscriptions.
}
