import * as vscode from 'vscode';
import { COMMAND, INDEX_KEY, PROPOSAL_SCHEME } from './app/contributions';
import type { Longrun, LongrunApi } from './composition';
import { EntryPoints } from './vscode/entry-points';
import { GaugeItem } from './vscode/gauge-item';

export type { LongrunApi } from './composition';

/** The workspace-state key set once Longrun has opened the chat at start (`LONGRUN_OPEN_CHAT_MODEL`). */
const CHAT_OPENED_KEY = 'longrun.chatOpenedAtStart';

/**
 * The entry point VS Code loads. Activation registers what VS Code can call (src/vscode/entry-points.ts)
 * and shows the gauge, and loads nothing else: the rest of the extension (src/composition.ts, built
 * into dist/composition.js) is loaded the first time VS Code calls into it (a chat request, a
 * command, the model picker asking for Longrun's models, a summary document reopened), or right
 * after activation where Longrun has been used in this workspace, to show its conversation in the
 * gauge. A window that never uses Longrun never loads it (VS Code asking for Longrun's models, as
 * the chat's model picker does, is answered without it while no endpoint is set).
 */
export function activate(context: vscode.ExtensionContext): LongrunApi {
  const log = vscode.window.createOutputChannel('Longrun', { log: true });
  const gaugeItem = new GaugeItem();
  context.subscriptions.push(log, gaugeItem);

  let longrun: Longrun | undefined;
  let failure: Error | undefined;
  let loading = false;
  const load = (): Longrun => {
    if (longrun) return longrun;
    if (failure) throw failure;
    if (loading) throw new Error('Longrun was called into while it was loading.');
    loading = true;
    try {
      // Computed at run time, so that the bundler leaves the file out of this one.
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use, on purpose
      const { compose } = require(`${__dirname}/composition.js`) as typeof import('./composition');
      const composed = compose(context, { log, gaugeItem });
      entryPoints.attach(composed.served);
      longrun = composed;
      return composed;
    } catch (error) {
      failure = new Error(`Longrun could not start: ${error instanceof Error ? error.message : String(error)}`);
      log.error(failure.message, error);
      void vscode.window.showErrorMessage(`${failure.message} The "Longrun" output has the details.`);
      throw failure;
    } finally {
      loading = false;
    }
  };
  const entryPoints = new EntryPoints(context, () => load().served);
  context.subscriptions.push(entryPoints);

  if (usedInThisWorkspace(context)) {
    setImmediate(() => {
      try {
        load();
      } catch {
        // Said in the log and a message by load().
      }
    });
  }
  // `npm start` keeps the chat closed in a new workspace (workbench.secondarySideBar.defaultVisibility)
  // and Longrun opens it, on the model named, once it is ready: a message typed before Longrun is
  // known would go to VS Code's own chat, which waits for a Copilot sign-in. Once per workspace:
  // later windows keep the layout the user left.
  const openWith = process.env.LONGRUN_OPEN_CHAT_MODEL;
  if (openWith && context.workspaceState.get(CHAT_OPENED_KEY) === undefined) {
    Promise.resolve(vscode.commands.executeCommand(COMMAND.openChat, openWith)).then(
      (opened) => {
        if (opened === true) void context.workspaceState.update(CHAT_OPENED_KEY, true);
      },
      (error: unknown) => log.warn(`Could not open the chat: ${error instanceof Error ? error.message : String(error)}`),
    );
  }

  return {
    get session() {
      return load().api.session;
    },
    get registry() {
      return load().api.registry;
    },
    get index() {
      return load().api.index;
    },
    get gauge() {
      return load().api.gauge;
    },
    get participant() {
      return load().api.participant;
    },
    get settings() {
      return load().api.settings;
    },
    get approvals() {
      return load().api.approvals;
    },
  };
}

/**
 * Whether this workspace holds a Longrun conversation (its gauge is shown at once), or an editor of
 * an earlier window's question (closed at once: the question is gone).
 */
function usedInThisWorkspace(context: vscode.ExtensionContext): boolean {
  if (context.workspaceState.get(INDEX_KEY) !== undefined) return true;
  return vscode.window.tabGroups.all.some((group) =>
    group.tabs.some((tab) => tab.input instanceof vscode.TabInputTextDiff && tab.input.modified.scheme === PROPOSAL_SCHEME),
  );
}

export function deactivate(): void {
  // Everything is disposed through the context's subscriptions.
}
