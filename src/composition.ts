import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import * as vscode from 'vscode';
import { WorkerCompactionEngine } from './app/compaction/remote-compaction';
import { compactionWorkerOptions } from './app/compaction/worker-priority';
import {
  ANSWER_APPROVAL_COMMAND,
  ANSWER_COMMAND,
  CHANGE_SCHEME,
  DOC_SCHEME,
  PROPOSAL_SCHEME,
  REVERT_COMMAND,
  CARRY_ACCOUNT_COMMAND,
  COMPACT_HARDER_COMMAND,
  NEW_FROM_PLAN_COMMAND,
  SHOW_CHANGE_COMMAND,
  SHOW_TRANSCRIPT_COMMAND,
} from './app/contributions';
import { SkillCatalog } from './app/skills/skill-catalog';
import { RequestSetup } from './app/turn/request-setup';
import { TurnController, type TurnWorkspace } from './app/turn/turn-controller';
import { revertChanges } from './vscode/revert-command';
import { compactHarder, newFromPlan } from './vscode/loop-commands';
import type { FileEvent } from './core/file-ledger';
import { systemClock } from './core/ports';
import { ApiKeys } from './vscode/api-keys';
import { LongrunParticipant } from './vscode/chat-participant';
import { ChangeDocuments } from './vscode/change-view';
import { CommandRunner } from './app/commands/command-runner';
import { lockedPackages } from './app/commands/locked-packages';
import { Approvals } from './vscode/edit-approval';
import { paletteCommands, ReportDocuments, showSubagentTranscript } from './vscode/commands';
import { CompactionReporter } from './vscode/compaction-report';
import { EditTracker } from './vscode/edit-tracker';
import type { CommandHandler, Served } from './vscode/entry-points';
import { ContextGauge } from './vscode/gauge';
import type { GaugeItem } from './vscode/gauge-item';
import { discoverContextWindow } from './llm/window-discovery';
import { LIST_TIMEOUT_MS, listEndpointModels } from './llm/openai-endpoint';
import { ListedModels } from './app/models/listed-models';
import { DEFAULT_PROVIDER_KIND } from './core/provider-kind';
import { LongrunModelProvider } from './vscode/model-provider';
import { ModelCalibrations } from './app/models/model-calibrations';
import { IgnoredToolChoice } from './app/compaction/ignored-tool-choice';
import { ModelWindows } from './app/models/model-windows';
import { ModelCatalogue } from './app/models/model-catalogue';
import type { WorkspaceRoot } from './app/workspace/path-guard';
import { Session } from './vscode/session';
import { ConversationRegistry } from './app/conversation/conversation-registry';
import { ConversationIndex } from './app/store/conversation-index';
import { ConversationStore } from './app/store/conversation-store';
import { Redactor } from './app/report/redactor';
import { KnownSecrets, redactSecrets } from './core/redact';
import { redactingLog } from './vscode/redacting-log';
import { Tracing } from './app/report/tracing';
import type { LongrunSettings } from './app/settings';
import { lazily } from './core/lazy';
import { TerminalShell } from './vscode/terminal-tool';
import { chooseToolsCommand } from './vscode/tool-picker';
import { VsCodeWorkspace } from './vscode/workspace-tools';
import { editSummaryCommand, SummaryDocuments } from './vscode/summary-documents';

/**
 * The composition root: builds every adapter, hands them to the core, pushes every disposable into
 * the context's subscriptions, and gives the entry points (src/vscode/entry-points.ts) what serves
 * them. Loaded after activation, by src/extension.ts, the first time the extension is needed; the
 * tokenizer, the saved conversation and the models then load when first needed in turn.
 */

/** What the extension exports: its state, for tests and for other extensions that build on it. */
export interface LongrunApi {
  /** The model in use. */
  readonly session: Session;
  /** The conversations this window has loaded; the current one is the chat's used last. */
  readonly registry: ConversationRegistry;
  /** What is known of each conversation of the workspace without reading it (its summaries among them). */
  readonly index: ConversationIndex;
  readonly gauge: ContextGauge;
  readonly participant: LongrunParticipant;
  readonly settings: () => LongrunSettings;
  /** The agent's questions (writes, commands) waiting for the user. */
  readonly approvals: Approvals;
}

/** What the entry point gave the composition: made at activation, before the composition loaded. */
export interface Activation {
  readonly log: vscode.LogOutputChannel;
  /** The gauge's status-bar item. */
  readonly gaugeItem: GaugeItem;
}

/** The extension, composed: its exports and what serves its entry points. */
export interface Longrun {
  readonly api: LongrunApi;
  readonly served: Served;
}

export function compose(context: vscode.ExtensionContext, { log, gaugeItem }: Activation): Longrun {
  // The exact API keys in use, known as each is read, set or handed over: no line of the log, of a
  // conversation's files or of a trace is written with one in it.
  const secrets = new KnownSecrets();
  const base = buildBase(
    context,
    redactingLog(log, (text) => redactSecrets(secrets.redact(text))),
  );
  const tools = buildTools(base);
  const requests = buildRequests(base, tools);
  const models = buildModels(base, requests, secrets);
  recordEdits(base, models, tools);
  const views = buildViews(base, models);
  const { controller, participant } = buildParticipant(base, models, views, tools, requests);
  const modelsChanged = modelsChangedHandler(models);
  const gauge = buildGauge(base, models, gaugeItem);
  const handlers = buildCommands(base, models, views, tools, controller, requests, modelsChanged);
  watchChanges(base, models, requests, gauge, modelsChanged);
  return {
    api: {
      session: models.session,
      registry: models.registry,
      index: models.index,
      gauge,
      participant,
      settings: base.settings,
      approvals: tools.approvals,
    },
    served: {
      commands: handlers,
      chat: participant.handler,
      models: models.provider,
      contents: new Map<string, vscode.TextDocumentContentProvider>([
        [DOC_SCHEME, views.documents],
        [PROPOSAL_SCHEME, tools.approvals],
        [CHANGE_SCHEME, tools.changes],
      ]),
      summaries: views.summaries,
    },
  };
}

/** What every builder uses: the context, the log, the clock and the settings, read on first use. */
interface Base {
  readonly context: vscode.ExtensionContext;
  readonly log: vscode.LogOutputChannel;
  readonly now: () => number;
  readonly settings: () => LongrunSettings;
  /** Reads the settings again (they changed). */
  readonly reloadSettings: () => void;
}

/** The storage and model side: keys, windows, the redactor, tracing, the model provider and the session. */
interface Models {
  readonly keys: ApiKeys;
  readonly windows: ModelWindows;
  /** Cleans provider text of the stored API keys. */
  readonly redactor: Redactor;
  readonly tracing: Tracing;
  readonly provider: LongrunModelProvider;
  readonly session: Session;
  /** The conversations this window has loaded, each on the branches its chats continue. */
  readonly registry: ConversationRegistry;
  readonly store: ConversationStore;
  readonly index: ConversationIndex;
  /** Fires when the current conversation or its content changes. */
  readonly conversationsChanged: vscode.Event<void>;
  /** Windows and prices of known models, under the user's longrun.models.overrides. */
  readonly catalogue: ModelCatalogue;
}

/** The documents the user opens: compaction reports and summaries, and the reporter that logs them. */
interface Views {
  readonly reporter: CompactionReporter;
  readonly documents: ReportDocuments;
  readonly summaries: SummaryDocuments;
}

/** The agent's tools on the workspace and the approvals they ask for. */
interface Tools {
  readonly roots: () => WorkspaceRoot[];
  /** What the user did to files in the editor (edits, saves, renames …), to record in the conversation. */
  readonly userEdits: vscode.Event<FileEvent>;
  readonly approvals: Approvals;
  readonly changes: ChangeDocuments;
  readonly workspace: VsCodeWorkspace;
  readonly commands: CommandRunner;
  /** Answers an approval from a chat button, saying so when the question is no longer open. */
  readonly answerApproval: (id: unknown, allow: unknown) => boolean;
}

/** What a request carries besides the conversation, and the workspace as a turn sees it. */
interface Requests {
  readonly workspace: TurnWorkspace;
  /** The workspace's and the user's Agent Skills, read again at the start of every turn. */
  readonly skills: SkillCatalog;
  readonly setup: RequestSetup;
}

/** Makes the base every builder uses: settings are read on first use and their problems reported once. */
function buildBase(context: vscode.ExtensionContext, log: vscode.LogOutputChannel): Base {
  // Each settings problem is shown once per session, and logged whenever settings are read.
  // Read on first use: validating them builds the configuration's schemas, which activation need not wait for.
  const reported = new Set<string>();
  let read: LongrunSettings | undefined;
  return {
    context,
    log,
    now: () => systemClock.now(),
    settings: () => (read ??= loadSettings(log, reported)),
    reloadSettings: () => {
      read = loadSettings(log, reported);
    },
  };
}

/** Builds the keys, the model windows, the redactor, tracing, the model provider, the compaction engine and the session. */
function buildModels({ context, log, now, settings }: Base, { setup }: Requests, secrets: KnownSecrets): Models {
  // Every key read, set or deleted is told to the redactor as it happens.
  const keys = new ApiKeys(context.secrets, {
    stored: (endpoint, value) => redactor.stored(endpoint, value),
    deleted: (endpoint) => redactor.deleted(endpoint),
  });
  // Windows and prices of known models, under the user's longrun.models.overrides.
  const catalogue = new ModelCatalogue(() => settings().modelOverrides);
  // Windows servers state for their models: cached across sessions, asked again once per session.
  const windows = new ModelWindows({
    memento: context.globalState,
    discover: async (target) => {
      const apiKey = target.endpoint ? await keys.get(target.endpoint) : undefined;
      return discoverContextWindow({
        baseUrl: target.baseUrl,
        modelId: target.modelId,
        ...(target.provider ? { provider: target.provider } : {}),
        ...(apiKey ? { apiKey } : {}),
      });
    },
    now,
    log: (message) => log.info(message),
    catalogue,
  });
  // Cleans provider error text of the stored keys, once read.
  const redactor = new Redactor(() => settings().endpoints, keys, secrets);
  redactor.fromEnvironment(process.env);
  const tracing = new Tracing(settings, log, undefined, (text) => redactor.redact(text));
  context.subscriptions.push(tracing);
  // The models of endpoints that name none, as their servers list them.
  const listed = new ListedModels({
    list: async (endpoint, signal) =>
      listEndpointModels(endpoint.baseUrl, await keys.get(endpoint.name), fetch, signal, LIST_TIMEOUT_MS, endpoint.provider ?? DEFAULT_PROVIDER_KIND),
    warn: (message) => log.warn(message),
  });
  const provider = new LongrunModelProvider({
    endpoints: () => settings().endpoints,
    keys,
    log,
    windows,
    timeouts: () => settings().timeouts,
    redact: (text) => redactor.redact(text),
    listed,
  });

  const storageDir = (context.storageUri ?? context.globalStorageUri).fsPath;
  // Compactions are computed in a worker thread, started on the first one; on this thread if it cannot run.
  const engine = new WorkerCompactionEngine(
    (priority) => {
      const worker = new Worker(join(__dirname, 'compaction-worker.js'), compactionWorkerOptions(priority));
      worker.unref();
      return worker;
    },
    (message) => log.warn(message),
  );
  context.subscriptions.push({ dispose: () => engine.dispose() });
  // What each model's provider counts against the local count, learned across conversations.
  const calibrations = new ModelCalibrations({ memento: context.globalState, now, log: (message) => log.warn(message) });
  // Servers that let a model call tools when told not to: kept across windows, like what they state of their models.
  const ignoredToolChoice = new IgnoredToolChoice({ memento: context.globalState, now, log: (message) => log.info(message) });
  const session = new Session({
    workspaceState: context.workspaceState,
    settings,
    provider,
    keys,
    clock: systemClock,
    log,
    windows,
    redactor,
    tracing,
    engine,
    calibrations,
    ignoredToolChoice,
    catalogue,
    requestOverhead: (window) => setup.overheadText(window),
  });
  context.subscriptions.push(session);
  const changed = new vscode.EventEmitter<void>();
  context.subscriptions.push(changed);
  const store = new ConversationStore(storageDir, () => systemClock.now(), { secrets });
  // What the index keeps of each conversation (its title, its summaries) is written cleaned too.
  const state = context.workspaceState;
  const index = new ConversationIndex({ get: (key) => state.get(key), update: (key, value) => state.update(key, secrets.redactDeep(value)) });
  const registry = new ConversationRegistry({
    store,
    index,
    clock: systemClock,
    newId: () => session.newId(),
    conversationDeps: () => ({ ...session.conversationDeps(), store, index }),
    warn: (message, show) => {
      log.warn(message);
      if (show) void vscode.window.showWarningMessage(`Longrun: ${message}`);
    },
    error: (message) => {
      log.error(message);
      void vscode.window.showErrorMessage(message);
    },
    info: (message) => log.info(message),
    changed: () => changed.fire(),
  });
  context.subscriptions.push(registry);
  return { keys, windows, redactor, tracing, provider, session, registry, store, index, conversationsChanged: changed.event, catalogue };
}

/** Builds the compaction reporter, the report documents and the summary documents. */
function buildViews({ context, log, now, settings }: Base, { session, registry }: Models): Views {
  const reporter = new CompactionReporter({ log, verbose: () => settings().verboseLogging, now });
  const documents = new ReportDocuments();
  // Summaries to preview and edit: what the user saves is what the model gets.
  const summaries = new SummaryDocuments({
    conversation: (id) => registry.find(id),
    current: () => registry.current(),
    newId: () => session.newId(),
    counter: () => session.modelContext().counter,
    now,
    log,
  });
  context.subscriptions.push(summaries);
  return { reporter, documents, summaries };
}

/** Builds the edit tracker, the approvals, the change documents, the workspace tools, the shell and the command runner. */
function buildTools({ context, log, now, settings }: Base): Tools {
  const roots = (): WorkspaceRoot[] => (vscode.workspace.workspaceFolders ?? []).map((f) => ({ name: f.name, fsPath: f.uri.fsPath }));
  const userEdits = new vscode.EventEmitter<FileEvent>();
  const tracker = new EditTracker({ roots, record: (event) => userEdits.fire(event), now });
  context.subscriptions.push(userEdits, tracker);

  const approvals = new Approvals();
  context.subscriptions.push(approvals);
  void approvals.closeLeftovers().catch((error: unknown) => log.warn(`Could not close the diff editors of an earlier window: ${String(error)}`));
  const answerApproval = (id: unknown, allow: unknown): boolean => {
    // The chat keeps its buttons after the question is answered elsewhere, or the request ended.
    const answered = approvals.answer(id, allow);
    if (!answered)
      void vscode.window.showInformationMessage('Longrun: this question is no longer open; it was answered already, or its request ended.');
    return answered;
  };
  const changes = new ChangeDocuments();
  const workspace = new VsCodeWorkspace({
    roots,
    autoApprove: () => settings().agent.autoApproveEdits,
    protectedPaths: () => settings().agent.protectedPaths,
    commandsRunUnasked: () => settings().agent.allowedCommands.length > 0,
    confirm: (request, signal) => approvals.askEdit(request, signal),
    beforeWrite: (path) => tracker.agentWriting(path),
  });
  const shell = new TerminalShell({ cwd: () => vscode.workspace.workspaceFolders?.[0]?.uri, log });
  context.subscriptions.push(shell);
  const commands = new CommandRunner({
    shell,
    allowedCommands: () => settings().agent.allowedCommands,
    lockedPackages: () => lockedPackages(vscode.workspace.workspaceFolders?.[0]?.uri.fsPath),
    timeoutSeconds: () => settings().agent.commandTimeoutSeconds,
    confirm: (command, signal) => approvals.askCommand(command, signal),
    // The command itself is conversation content, logged only when verbose logging is on.
    onAllowed: (command, entry) =>
      log.info(`Ran ${settings().verboseLogging ? `"${command}"` : 'a command'} without asking: longrun.agent.allowedCommands has "${entry}".`),
  });
  return { roots, userEdits: userEdits.event, approvals, changes, workspace, commands, answerApproval };
}

/** The user's edits in the editor, recorded in the current conversation (its ledger of file operations). */
function recordEdits({ context, log }: Base, { registry }: Models, tools: Tools): void {
  context.subscriptions.push(
    tools.userEdits((event) => {
      const conversation = registry.currentIfLoaded();
      if (!conversation || conversation.isEmpty()) return;
      void conversation.append([{ type: 'file', event }]).catch((error: unknown) => log.warn(`Could not record a file operation: ${String(error)}`));
    }),
  );
}

/** Builds the workspace as a turn sees it, the skills catalogue and what a request carries besides the conversation. */
function buildRequests({ log, settings }: Base, tools: Tools): Requests {
  const workspace: TurnWorkspace = {
    files: tools.workspace,
    commands: tools.commands,
    allowedCommands: tools.commands.allowedOnly(),
    trusted: () => vscode.workspace.isTrusted,
    roots: tools.roots,
  };
  const skills = new SkillCatalog({
    roots: tools.roots,
    trusted: () => vscode.workspace.isTrusted,
    userFolders: () => settings().skills.userFolders,
    log,
  });
  return { workspace, skills, setup: new RequestSetup({ workspace, settings, skills }) };
}

/**
 * Builds the turn controller and the chat participant over the tools, then subscribes them to what
 * the tools report (the agent's writes, its questions about edits).
 */
function buildParticipant(
  { context, log, now, settings }: Base,
  { session, registry, catalogue }: Models,
  { reporter, summaries }: Views,
  tools: Tools,
  { workspace, skills, setup }: Requests,
): { controller: TurnController; participant: LongrunParticipant } {
  const controller = new TurnController({
    registry,
    models: session,
    workspace,
    settings,
    reporter,
    log,
    now,
    setup,
    summaries,
    skills,
    cost: (usage) => catalogue.cost(usage),
  });
  const participant = new LongrunParticipant({ controller, session, changes: tools.changes, log });
  // Shown in the chat of the request under way.
  context.subscriptions.push(
    tools.workspace.onDidWrite((change) => controller.showChange(change)),
    tools.approvals.onDidAskEdit((approval) => participant.showApprovalRequest(approval)),
  );
  return { controller, participant };
}

/**
 * What to do when an endpoint or a stored key changed: the models offered, the session's models
 * and the keys kept out of error text are taken again.
 */
function modelsChangedHandler({ provider, session, redactor }: Models): () => void {
  return () => {
    provider.refresh();
    session.invalidateModels();
    void redactor.refresh();
  };
}

/** Builds the context gauge and keeps it updated as the session, the windows and open documents change. */
function buildGauge(
  { context, now, settings }: Base,
  { session, registry, conversationsChanged, windows }: Models,
  gaugeItem: GaugeItem,
): ContextGauge {
  const gauge = new ContextGauge({ item: gaugeItem, session, registry, settings, now, setTimer: systemClock.setTimer });
  context.subscriptions.push(gauge);
  context.subscriptions.push(session.onDidChange(() => gauge.update()));
  context.subscriptions.push(conversationsChanged(() => gauge.update()));
  context.subscriptions.push(windows.onDidChange(() => gauge.update()));
  // Edits to files the conversation holds change what the model would re-read: refresh the gauge.
  context.subscriptions.push(vscode.workspace.onDidChangeTextDocument(() => gauge.update()));
  return gauge;
}

/** Builds the handlers of every command: the palette's and those the chat's buttons call. */
function buildCommands(
  { log, now, settings }: Base,
  { session, registry, store, keys }: Models,
  { documents, reporter, summaries }: Views,
  { workspace, changes, answerApproval }: Tools,
  controller: TurnController,
  requests: Requests,
  modelsChanged: () => void,
): Map<string, CommandHandler> {
  return new Map<string, CommandHandler>([
    ...paletteCommands({
      session,
      registry,
      store,
      settings,
      keys,
      documents,
      reporter,
      now,
      onKeysChanged: modelsChanged,
    }),
    editSummaryCommand(summaries),
    chooseToolsCommand(settings, () => requests.setup.ownToolNames()),
    [ANSWER_COMMAND, (id: unknown, compact: unknown) => controller.answerCompaction(id, compact)],
    [
      REVERT_COMMAND,
      (conversationId: unknown, changeIds: unknown) => revertChanges({ registry, workspace, changes, log, now }, conversationId, changeIds),
    ],
    [ANSWER_APPROVAL_COMMAND, answerApproval],
    [
      CARRY_ACCOUNT_COMMAND,
      (conversationId: unknown, turn: unknown, text: unknown, turns: unknown) => controller.carryAccount(conversationId, turn, text, turns),
    ],
    [COMPACT_HARDER_COMMAND, (conversationId: unknown) => compactHarder({ registry, reporter }, conversationId)],
    [NEW_FROM_PLAN_COMMAND, (conversationId: unknown) => newFromPlan({ registry, reporter }, conversationId)],
    [SHOW_CHANGE_COMMAND, (argument: unknown) => changes.show(argument)],
    [
      SHOW_TRANSCRIPT_COMMAND,
      (conversationId: unknown, subagentId: unknown) => showSubagentTranscript({ registry, documents }, conversationId, subagentId),
    ],
  ]);
}

/**
 * Follows changes to the keys and the settings, adopts a key handed over in the environment, and
 * schedules the first settings read, the stored keys, tracing and the saved conversation.
 */
function watchChanges(
  { context, log, reloadSettings }: Base,
  { keys, provider, session, registry, redactor, tracing }: Models,
  { setup }: Requests,
  gauge: ContextGauge,
  modelsChanged: () => void,
): void {
  context.subscriptions.push(keys.onDidChange(modelsChanged));

  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (!e.affectsConfiguration('longrun')) return;
      reloadSettings();
      tracing.configure();
      // The tools offered are part of what every request carries.
      if (e.affectsConfiguration('longrun.agent.editorTools')) setup.toolsChanged();
      if (e.affectsConfiguration('longrun.endpoints')) modelsChanged();
      gauge.update();
    }),
  );

  void adoptKeyFromEnvironment(keys, log).then((adopted) => {
    if (!adopted) return;
    provider.refresh();
    void redactor.refresh();
  });

  // Next, once the call that loaded the composition has been served: with the first settings read,
  // the stored keys (to keep them out of error text) and tracing, when the settings ask for it; and
  // the saved conversation, shown in the gauge.
  setImmediate(() => {
    void redactor.refresh();
    tracing.configure();
    void registry
      .current()
      .then(() => session.useDefaultModel())
      .catch((error: unknown) => log.warn(`Could not restore the last model: ${String(error)}`))
      .then(() => gauge.update());
  });
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
  const { settings, problems } = readSettings(
    (key) => configuration.get(key),
    (key) => {
      const where = configuration.inspect(key);
      const fromWorkspace = where?.workspaceFolderValue !== undefined || where?.workspaceValue !== undefined;
      return { fromWorkspace, userValue: where?.globalValue };
    },
  );
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
