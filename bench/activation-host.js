// A stand-in extension host for the activation benchmark (bench/bundle.ts): in a fresh Node
// process, requires a built extension.js with a stub `vscode` module and calls `activate`, then
// reads the extension's exports, which loads the rest of it (composition.js) as its first use does,
// and prints what each took as JSON. Plain JavaScript run by plain Node, so that no TypeScript
// loader sits between the bundle and `require`.
//
//   node bench/activation-host.js <bundle folder> [--check | --check-unused | --check-broken]
//
// --check and --check-unused wait for what activation starts in the background instead, and say
// which of the files loaded on first use (composition.js, the vocabularies, models.js, schemas.js,
// tracing.js) were required during activation (none should be) and after it, and what the extension
// logged as warnings. With --check the workspace is one where Longrun has been used (its state holds
// the list of conversations): the rest of the extension loads right after activation to show the
// gauge, a model is offered (a GPT-4o), and the gauge's tokenizer loads. With --check-unused it is
// one where Longrun was never used: nothing is loaded until something calls into the extension, and
// VS Code asking for Longrun's models (no endpoint set) is answered without loading anything; then an
// endpoint is added to the settings, and VS Code is told to ask again and offered its model.
// --check-broken is an installation whose composition.js cannot be loaded: a command is run twice,
// and the output says what each run threw and which error messages the user was shown.
// --check-open-chat starts as `npm start` does (LONGRUN_OPEN_CHAT_MODEL set): the output says how
// the chat was opened at activation, and how often again when the workspace's next window activates.
'use strict';
const fs = require('node:fs');
const Module = require('node:module');
const os = require('node:os');
const path = require('node:path');

const [bundleDir, mode] = process.argv.slice(2);
const checking = mode === '--check' || mode === '--check-unused' || mode === '--check-broken' || mode === '--check-open-chat';
if (mode === '--check-open-chat') process.env.LONGRUN_OPEN_CHAT_MODEL = 'gpt-4o';
if (!bundleDir) {
  console.error('usage: node bench/activation-host.js <bundle folder> [--check | --check-unused | --check-broken]');
  process.exit(2);
}
const storage = fs.mkdtempSync(path.join(os.tmpdir(), 'longrun-activation-'));

// --- The stub `vscode` module: what activation and the session's first steps touch, and a harmless
// stand-in (a function returning a disposable) for anything else, so that activation code added
// later does not break the benchmark.

class Disposable {
  constructor(dispose = () => undefined) {
    this.disposeFn = dispose;
  }
  static from(...items) {
    return new Disposable(() => items.forEach((item) => item.dispose()));
  }
  dispose() {
    this.disposeFn();
  }
}

class EventEmitter {
  constructor() {
    this.listeners = new Set();
    this.event = (listener) => {
      this.listeners.add(listener);
      return new Disposable(() => this.listeners.delete(listener));
    };
  }
  fire(value) {
    for (const listener of [...this.listeners]) listener(value);
  }
  dispose() {
    this.listeners.clear();
  }
}

class Uri {
  constructor(scheme, filePath) {
    this.scheme = scheme;
    this.path = filePath;
  }
  static file(filePath) {
    return new Uri('file', filePath);
  }
  static parse(value) {
    const match = /^([a-z][\w+.-]*):(.*)$/i.exec(value);
    return match ? new Uri(match[1], match[2]) : new Uri('file', value);
  }
  static from(components) {
    return new Uri(components.scheme, components.path ?? '');
  }
  static joinPath(base, ...parts) {
    return new Uri(base.scheme, path.posix.join(base.path, ...parts));
  }
  get fsPath() {
    return this.path;
  }
  with(change) {
    return new Uri(change.scheme ?? this.scheme, change.path ?? this.path);
  }
  toString() {
    return `${this.scheme}://${this.path}`;
  }
}

class Memento {
  constructor() {
    this.values = new Map();
  }
  get(key, fallback) {
    return this.values.has(key) ? this.values.get(key) : fallback;
  }
  async update(key, value) {
    this.values.set(key, value);
  }
  keys() {
    return [...this.values.keys()];
  }
  setKeysForSync() {}
}

const disposable = () => new Disposable();
const event = () => disposable();

/** The handlers of the commands the extension registered, its model provider, and the error messages it showed. */
const commands = new Map();
let modelProvider;
/** How often the extension told VS Code, while activating, to ask for its models. */
let modelsChangedAtActivation = 0;

/** Settings by full key (`longrun.endpoints`), and who listens for their changes. */
const settings = new Map();
const configurationListeners = new Set();
function changeSetting(key, value) {
  settings.set(key, value);
  const change = { affectsConfiguration: (section) => key === section || key.startsWith(`${section}.`) };
  for (const listener of [...configurationListeners]) listener(change);
}
const shownErrors = [];
/** What `workbench.action.chat.open` was given, with --check-open-chat. */
const chatOpens = [];

/**
 * Anything not stubbed explicitly: callable, constructible, every member again such a thing; an
 * empty list when iterated, an empty string when converted, and not a promise.
 */
function anything() {
  const special = {
    then: undefined,
    dispose: () => undefined,
    [Symbol.iterator]: function* () {},
    [Symbol.toPrimitive]: () => '',
  };
  return new Proxy(function stub() {}, {
    get: (target, key) => (key in special ? special[key] : typeof key === 'symbol' ? undefined : anything()),
    apply: () => anything(),
    construct: () => anything(),
    set: () => true,
  });
}

/** A namespace: its stubbed members, and `anything()` for the rest. */
function namespace(members) {
  return new Proxy(members, { get: (target, key) => (key in target ? target[key] : typeof key === 'symbol' ? undefined : anything()) });
}

/** What the extension logged as warnings and errors, reported with --check. */
const logged = [];
const logChannel = namespace({
  name: 'Longrun',
  logLevel: 2,
  onDidChangeLogLevel: event,
  trace() {},
  debug() {},
  info() {},
  warn: (message) => logged.push(String(message)),
  error: (message) => logged.push(String(message)),
  append() {},
  appendLine() {},
  replace() {},
  clear() {},
  show() {},
  hide() {},
  dispose() {},
});

const model = {
  id: 'gpt-4o',
  vendor: 'copilot',
  family: 'gpt-4o',
  name: 'GPT-4o',
  version: 'gpt-4o-2024-11-20',
  maxInputTokens: 128_000,
  countTokens: async (text) => Math.ceil(String(text).length / 4),
  sendRequest: async () => {
    throw new Error('the activation benchmark sends no requests');
  },
};

const vscode = namespace({
  Disposable,
  EventEmitter,
  Uri,
  ThemeColor: class ThemeColor {
    constructor(id) {
      this.id = id;
    }
  },
  MarkdownString: class MarkdownString {
    constructor(value = '') {
      this.value = value;
    }
    appendMarkdown(value) {
      this.value += value;
      return this;
    }
    appendText(value) {
      this.value += value;
      return this;
    }
  },
  StatusBarAlignment: { Left: 1, Right: 2 },
  ProgressLocation: { SourceControl: 1, Window: 10, Notification: 15 },
  LanguageModelChatToolMode: { Auto: 1, Required: 2 },
  LanguageModelChatMessageRole: { User: 1, Assistant: 2 },
  window: namespace({
    createOutputChannel: () => logChannel,
    createStatusBarItem: () => namespace({ show() {}, hide() {}, dispose() {} }),
    tabGroups: namespace({ all: [], close: async () => true, onDidChangeTabs: event, onDidChangeTabGroups: event }),
    showInformationMessage: async () => undefined,
    showWarningMessage: async () => undefined,
    showErrorMessage: async (message) => {
      shownErrors.push(String(message));
      return undefined;
    },
  }),
  workspace: namespace({
    workspaceFolders: undefined,
    textDocuments: [],
    isTrusted: true,
    getConfiguration: (section) => {
      const full = (key) => (section ? `${section}.${key}` : key);
      return {
        get: (key, fallback) => (settings.has(full(key)) ? settings.get(full(key)) : fallback),
        has: (key) => settings.has(full(key)),
        inspect: () => undefined,
        update: async (key, value) => changeSetting(full(key), value),
      };
    },
    registerTextDocumentContentProvider: disposable,
    onDidChangeConfiguration: (listener) => {
      configurationListeners.add(listener);
      return new Disposable(() => configurationListeners.delete(listener));
    },
    onDidChangeTextDocument: event,
    onDidSaveTextDocument: event,
    onDidCreateFiles: event,
    onDidDeleteFiles: event,
    onDidRenameFiles: event,
    onDidGrantWorkspaceTrust: event,
  }),
  commands: namespace({
    registerCommand: (id, handler) => {
      commands.set(id, handler);
      return new Disposable(() => commands.delete(id));
    },
    executeCommand: (id, ...args) => {
      if (mode !== '--check-open-chat') return Promise.resolve(undefined);
      if (id === 'workbench.action.chat.open') chatOpens.push(args[0]);
      // As VS Code does, later: never inside the caller's own turn.
      return new Promise((resolve, reject) => setImmediate(() => Promise.resolve(commands.get(id)?.(...args)).then(resolve, reject)));
    },
  }),
  lm: namespace({
    registerLanguageModelChatProvider: (vendor, provider) => {
      modelProvider = provider;
      // VS Code listens from the moment a provider is registered.
      provider.onDidChangeLanguageModelChatInformation(() => {
        if (activating) modelsChangedAtActivation++;
      });
      return disposable();
    },
    selectChatModels: async () => [model],
    onDidChangeChatModels: event,
  }),
  chat: namespace({ createChatParticipant: () => namespace({ dispose() {}, onDidReceiveFeedback: event }) }),
});

/** The workspace's state: with --check, that of a workspace where Longrun was used (no conversation open). */
function workspaceState() {
  const state = new Memento();
  if (mode === '--check') {
    state.values.set('longrun.conversations', { version: 1, conversations: [] });
    settings.set('longrun.endpoints', [{ name: 'Local', baseUrl: 'http://127.0.0.1:9/v1', models: [{ id: 'local-model', contextWindow: 8192 }] }]);
  }
  return state;
}

const extensionRoot = path.dirname(path.resolve(bundleDir));
const context = namespace({
  subscriptions: [],
  secrets: namespace({
    get: async () => undefined,
    store: async () => undefined,
    delete: async () => undefined,
    keys: async () => [],
    onDidChange: event,
  }),
  globalState: new Memento(),
  workspaceState: workspaceState(),
  storageUri: Uri.file(path.join(storage, 'workspace')),
  globalStorageUri: Uri.file(path.join(storage, 'global')),
  logUri: Uri.file(path.join(storage, 'log')),
  extensionUri: Uri.file(extensionRoot),
  extensionPath: extensionRoot,
  extensionMode: 1,
  asAbsolutePath: (relative) => path.join(extensionRoot, relative),
});

// --- Loading: `vscode` is answered by the stub; the files loaded on first use (composition.js, the
// vocabularies, models.js, schemas.js, catalogue.js, tracing.js) are noted as they are required.

const vocabularies = { duringActivation: [], afterActivation: [] };
let activating = true;
const load = Module._load;
Module._load = function (request, ...rest) {
  if (request === 'vscode') return vscode;
  const file = /(composition|o200k_base|cl100k_base|models|schemas|catalogue|tracing)\.js$/.exec(request);
  if (file) {
    if (file[1] === 'composition' && mode === '--check-broken') throw new Error(`Cannot find module '${request}'`);
    (activating ? vocabularies.duringActivation : vocabularies.afterActivation).push(file[1]);
    // What made activation load it, for whoever has to move that off the activation path.
    if (activating && checking) console.error(`${file[1]}.js required during activation:${new Error().stack.split('\n').slice(2, 14).join('\n')}`);
  }
  return load.call(this, request, ...rest);
};

const errors = [];
process.on('unhandledRejection', (error) => errors.push(String(error)));

async function main() {
  const start = performance.now();
  const extension = require(path.resolve(bundleDir, 'extension.js'));
  const required = performance.now();
  const exports = await extension.activate(context);
  const activated = performance.now();
  activating = false;
  let firstUseMs;
  const commandErrors = [];
  let offeredModels;
  let loadedBeforeEndpoints;
  let modelsChangedEvents;
  let modelsAfterEndpoint;
  let chatOpensInNextWindow;
  if (mode === '--check-open-chat') {
    const deadline = Date.now() + 10_000;
    while (chatOpens.length < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    await new Promise((resolve) => setTimeout(resolve, 200));
    // The workspace's next window: the same workspace state, a new activation.
    const opened = chatOpens.length;
    extension.activate(context);
    await new Promise((resolve) => setTimeout(resolve, 500));
    chatOpensInNextWindow = chatOpens.length - opened;
  } else if (mode === '--check') {
    // The rest of the extension, the saved conversation, the default model and its tokenizer load in the background.
    const deadline = Date.now() + 10_000;
    while (!vocabularies.afterActivation.some((f) => f.endsWith('_base')) && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 20));
    await new Promise((resolve) => setTimeout(resolve, 200));
  } else if (mode === '--check-broken') {
    for (let run = 0; run < 2; run++) {
      try {
        await commands.get('longrun.compact')();
        commandErrors.push('(no error)');
      } catch (error) {
        commandErrors.push(error instanceof Error ? error.message : String(error));
      }
    }
  } else if (mode === '--check-unused') {
    // Nothing should load by itself, nor when VS Code asks for Longrun's models while no endpoint is set.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    offeredModels = (await modelProvider.provideLanguageModelChatInformation({ silent: true }, anything())).length;
    loadedBeforeEndpoints = [...vocabularies.afterActivation];
    // Then the user adds an endpoint: VS Code is told to ask again, and the answer has its model.
    let told = 0;
    modelProvider.onDidChangeLanguageModelChatInformation(() => told++);
    changeSetting('longrun.endpoints', [{ name: 'Local', baseUrl: 'http://127.0.0.1:9/v1', models: [{ id: 'local-model', contextWindow: 8192 }] }]);
    modelsChangedEvents = told;
    const offered = await modelProvider.provideLanguageModelChatInformation({ silent: true }, anything());
    modelsAfterEndpoint = offered.map((m) => m.id);
  } else {
    // The first use: reading the exports loads the rest of the extension.
    const used = performance.now();
    if (!exports.session) throw new Error('the extension exports no session');
    firstUseMs = performance.now() - used;
  }
  const result = {
    requireMs: required - start,
    activateMs: activated - required,
    totalMs: activated - start,
    firstUseMs,
    vocabularies,
    errors,
    logged,
    commandErrors,
    shownErrors,
    offeredModels,
    loadedBeforeEndpoints,
    modelsChangedEvents,
    modelsAfterEndpoint,
    modelsChangedAtActivation,
    chatOpens,
    chatOpensInNextWindow,
  };
  fs.writeSync(1, JSON.stringify(result));
  fs.rmSync(storage, { recursive: true, force: true });
  process.exit(0);
}

main().catch((error) => {
  fs.rmSync(storage, { recursive: true, force: true });
  console.error(error);
  process.exit(1);
});
