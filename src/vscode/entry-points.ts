import * as vscode from 'vscode';
import { COMMANDS, CONTENT_SCHEMES, PARTICIPANT_ID, SUMMARY_SCHEME, VENDOR } from '../app/contributions';

/**
 * Longrun's entry points: everything VS Code can call on the extension (its commands, the chat
 * participant, the model provider, the providers of its documents). They are registered when the
 * extension activates, and each calls into the rest of the extension, which is loaded the first
 * time one of them is called (or sooner: see src/extension.ts). Activation thus loads this file
 * and a few constants instead of the whole extension, and still answers every call VS Code makes,
 * from the first one on.
 */

/** A command's implementation. */
export type CommandHandler = (...args: never[]) => unknown;

/** What the rest of the extension serves behind the entry points. */
export interface Served {
  /** A handler for each command of `COMMANDS`, and no other. */
  readonly commands: ReadonlyMap<string, CommandHandler>;
  readonly chat: vscode.ChatRequestHandler;
  readonly models: vscode.LanguageModelChatProvider;
  /** A provider for each scheme of `CONTENT_SCHEMES`. */
  readonly contents: ReadonlyMap<string, vscode.TextDocumentContentProvider>;
  readonly summaries: vscode.FileSystemProvider;
}

/**
 * Registers every entry point. `served` gives what serves them, loading it on first call; it is
 * called on every call and must give the same object each time. `attach` is told of it once it is
 * loaded, and forwards its providers' events to the providers VS Code holds.
 */
export class EntryPoints implements vscode.Disposable {
  private readonly disposables: vscode.Disposable[] = [];
  /** Forward the events of what is served, once it is loaded, to the events VS Code listens to. */
  private readonly relays: ((s: Served) => vscode.Disposable | undefined)[] = [];
  private attached = false;

  constructor(context: vscode.ExtensionContext, served: () => Served) {
    for (const id of COMMANDS) {
      this.disposables.push(
        vscode.commands.registerCommand(id, (...args: unknown[]) => {
          const handler = served().commands.get(id) as ((...args: unknown[]) => unknown) | undefined;
          if (!handler) throw new Error(`Longrun has no handler for the command ${id}.`);
          return handler(...args);
        }),
      );
    }

    const participant = vscode.chat.createChatParticipant(PARTICIPANT_ID, (request, chatContext, stream, token) =>
      served().chat(request, chatContext, stream, token),
    );
    participant.iconPath = vscode.Uri.joinPath(context.extensionUri, 'media', 'longrun.png');
    this.disposables.push(participant);

    // Longrun's own models are those of `longrun.endpoints`. VS Code asks for them whenever the chat's
    // model picker fills, used or not: while no endpoint is set, the answer is none, given here
    // without loading the rest, which takes over watching the setting once it is loaded.
    const modelsChanged = this.relay((s) => s.models.onDidChangeLanguageModelChatInformation);
    this.disposables.push(
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (!this.attached && e.affectsConfiguration('longrun.endpoints')) modelsChanged.fire();
      }),
    );
    const models: vscode.LanguageModelChatProvider = {
      onDidChangeLanguageModelChatInformation: modelsChanged.event,
      provideLanguageModelChatInformation: (options, token) =>
        this.attached || endpointsSet() ? served().models.provideLanguageModelChatInformation(options, token) : [],
      provideLanguageModelChatResponse: (model, messages, options, progress, token) =>
        served().models.provideLanguageModelChatResponse(model, messages, options, progress, token),
      provideTokenCount: (model, text, token) => served().models.provideTokenCount(model, text, token),
    };
    this.disposables.push(vscode.lm.registerLanguageModelChatProvider(VENDOR, models));
    // VS Code asks a provider for its models only when something needs them (often the first chat
    // request, which then has no model and fails). Told at once that there are models, it asks now,
    // and the chat's model picker selects one before the user sends anything.
    if (endpointsSet()) modelsChanged.fire();

    for (const scheme of CONTENT_SCHEMES) {
      const provider: vscode.TextDocumentContentProvider = {
        onDidChange: this.relay((s) => s.contents.get(scheme)?.onDidChange).event,
        provideTextDocumentContent: (uri, token) => content(served(), scheme).provideTextDocumentContent(uri, token),
      };
      this.disposables.push(vscode.workspace.registerTextDocumentContentProvider(scheme, provider));
    }

    const summaries: vscode.FileSystemProvider = {
      onDidChangeFile: this.relay((s) => s.summaries.onDidChangeFile).event,
      watch: (uri, options) => served().summaries.watch(uri, options),
      stat: (uri) => served().summaries.stat(uri),
      readDirectory: (uri) => served().summaries.readDirectory(uri),
      createDirectory: (uri) => served().summaries.createDirectory(uri),
      readFile: (uri) => served().summaries.readFile(uri),
      writeFile: (uri, bytes, options) => served().summaries.writeFile(uri, bytes, options),
      delete: (uri, options) => served().summaries.delete(uri, options),
      rename: (from, to, options) => served().summaries.rename(from, to, options),
    };
    this.disposables.push(vscode.workspace.registerFileSystemProvider(SUMMARY_SCHEME, summaries, { isCaseSensitive: true }));
  }

  /** Checks what is served and forwards its events; called once, when it is loaded. */
  attach(s: Served): void {
    checkServed(s);
    this.attached = true;
    for (const forward of this.relays) {
      const subscription = forward(s);
      if (subscription) this.disposables.push(subscription);
    }
  }

  /** An event VS Code listens to, fired by the event `pick` chooses once what is served is loaded. */
  private relay<T>(pick: (s: Served) => vscode.Event<T> | undefined): vscode.EventEmitter<T> {
    const emitter = new vscode.EventEmitter<T>();
    this.disposables.push(emitter);
    this.relays.push((s) => pick(s)?.((value) => emitter.fire(value)));
    return emitter;
  }

  dispose(): void {
    for (const disposable of this.disposables.splice(0)) disposable.dispose();
  }
}

function content(s: Served, scheme: string): vscode.TextDocumentContentProvider {
  const provider = s.contents.get(scheme);
  if (!provider) throw new Error(`Longrun has no provider for ${scheme}: documents.`);
  return provider;
}

/** Every entry point has something behind it, and nothing is served that VS Code cannot reach. */
function checkServed(s: Served): void {
  const missing = COMMANDS.filter((id) => !s.commands.has(id));
  const unknown = [...s.commands.keys()].filter((id) => !COMMANDS.includes(id));
  const schemes = CONTENT_SCHEMES.filter((scheme) => !s.contents.has(scheme));
  if (missing.length + unknown.length + schemes.length === 0) return;
  throw new Error(
    [
      missing.length ? `commands without a handler: ${missing.join(', ')}` : '',
      unknown.length ? `handlers of commands not in COMMANDS (src/app/contributions.ts): ${unknown.join(', ')}` : '',
      schemes.length ? `schemes without a provider: ${schemes.join(', ')}` : '',
    ]
      .filter(Boolean)
      .join('; '),
  );
}

/**
 * Whether `longrun.endpoints` holds anything but its default, the empty list. A value that is not a
 * list counts as set: the rest of the extension reads it, and says what is wrong with it.
 */
function endpointsSet(): boolean {
  const value = vscode.workspace.getConfiguration('longrun').get<unknown>('endpoints');
  return value !== undefined && !(Array.isArray(value) && value.length === 0);
}
