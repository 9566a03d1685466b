import * as vscode from 'vscode';
import { ToolFailure } from '../llm/workspace-port';
import type { Shell } from '../app/commands/command-runner';

/**
 * The {@link Shell} of `run_command`: a VS Code terminal named "Longrun", in the first workspace
 * folder, driven through shell integration. `executeCommand` runs the line, the execution's
 * `read()` stream gives its output and `onDidEndTerminalShellExecution` its exit code. The user
 * sees every command and its whole output in the terminal.
 *
 * Without shell integration Longrun could neither read the output nor know when the command ends,
 * so it does not run the command at all (it never types it blind with `sendText`). Shell
 * integration starts a moment after the shell does, so a new terminal is given
 * {@link INTEGRATION_TIMEOUT_MS} to report it. It works with bash, zsh, fish and PowerShell when
 * `terminal.integrated.shellIntegration.enabled` is on (the default).
 */

export const TERMINAL_NAME = 'Longrun';
/** How long a terminal may take to activate shell integration. */
export const INTEGRATION_TIMEOUT_MS = 10_000;
/** After Ctrl-C, how long the command may take to end before the terminal is closed. */
const INTERRUPT_GRACE_MS = 2_000;
/** After the end event, how long the output stream may take to deliver its last data. */
const DRAIN_GRACE_MS = 1_000;
/**
 * A terminal that has just activated shell integration may report one more spurious command end
 * (with no exit code) for what its start-up ran: a command is sent only after this quiet moment.
 */
const SETTLE_MS = 300;

export interface TerminalShellOptions {
  /** Where new terminals start: the first workspace folder. */
  readonly cwd: () => vscode.Uri | undefined;
  readonly log?: vscode.LogOutputChannel;
}

export class TerminalShell implements Shell, vscode.Disposable {
  readonly where = `the terminal "${TERMINAL_NAME}"`;
  private terminal: vscode.Terminal | undefined;
  private readonly subscriptions: vscode.Disposable[] = [];

  constructor(private readonly options: TerminalShellOptions) {
    this.subscriptions.push(
      vscode.window.onDidCloseTerminal((closed) => {
        if (closed === this.terminal) this.terminal = undefined;
      }),
    );
  }

  async run(command: string, onData: (data: string) => void, signal: AbortSignal): Promise<number | undefined> {
    signal.throwIfAborted();
    const terminal = this.ensureTerminal();
    terminal.show(true);
    const integration = await this.integration(terminal, signal);
    return this.execute(terminal, integration, command, onData, signal);
  }

  dispose(): void {
    for (const s of this.subscriptions.splice(0)) s.dispose();
    // The terminal stays: the user may still want to read it.
  }

  private ensureTerminal(): vscode.Terminal {
    if (this.terminal && this.terminal.exitStatus === undefined) return this.terminal;
    const cwd = this.options.cwd();
    this.terminal = vscode.window.createTerminal({
      name: TERMINAL_NAME,
      ...(cwd ? { cwd } : {}),
      // A pager would wait for a key press until the time limit.
      env: { PAGER: 'cat', GIT_PAGER: 'cat' },
      // Not brought back after a reload: its commands belonged to a request that is over.
      isTransient: true,
    });
    return this.terminal;
  }

  /** The terminal's shell integration, waiting for it to activate; a `ToolFailure` when it does not. */
  private async integration(terminal: vscode.Terminal, signal: AbortSignal): Promise<vscode.TerminalShellIntegration> {
    if (terminal.shellIntegration) return terminal.shellIntegration;
    const activated = await new Promise<vscode.TerminalShellIntegration | undefined>((resolve, reject) => {
      const cleanUp = (): void => {
        clearTimeout(timer);
        listener.dispose();
        signal.removeEventListener('abort', onAbort);
      };
      const listener = vscode.window.onDidChangeTerminalShellIntegration((e) => {
        if (e.terminal !== terminal) return;
        cleanUp();
        resolve(e.shellIntegration);
      });
      const timer = setTimeout(() => {
        cleanUp();
        resolve(terminal.shellIntegration);
      }, INTEGRATION_TIMEOUT_MS);
      const onAbort = (): void => {
        cleanUp();
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
    });
    if (!activated) {
      const shell = terminal.state.shell ?? 'its shell';
      this.options.log?.warn(
        `Shell integration did not activate in the terminal "${TERMINAL_NAME}" (${shell}) within ${INTEGRATION_TIMEOUT_MS / 1000} s.`,
      );
      throw new ToolFailure(
        `The command was not run: VS Code's shell integration did not start in the terminal "${TERMINAL_NAME}" (${shell}) within ${INTEGRATION_TIMEOUT_MS / 1000} s, so its output and exit code could not be read. It works with bash, zsh, fish and PowerShell when the setting terminal.integrated.shellIntegration.enabled is on. Ask the user to run the command and tell you the result.`,
      );
    }
    await delay(SETTLE_MS, signal);
    return activated;
  }

  private execute(
    terminal: vscode.Terminal,
    integration: vscode.TerminalShellIntegration,
    command: string,
    onData: (data: string) => void,
    signal: AbortSignal,
  ): Promise<number | undefined> {
    return new Promise<number | undefined>((resolve, reject) => {
      const subscriptions: vscode.Disposable[] = [];
      let ended: { exitCode: number | undefined } | undefined;
      let drained = false;
      let settled = false;
      const finish = (outcome: () => void): void => {
        if (settled) return;
        settled = true;
        clearTimeout(drainTimer);
        clearTimeout(killTimer);
        for (const s of subscriptions) s.dispose();
        signal.removeEventListener('abort', onAbort);
        outcome();
      };
      const resolveIfDone = (): void => {
        if (ended && drained) finish(() => resolve(ended?.exitCode));
      };
      let drainTimer: ReturnType<typeof setTimeout> | undefined;
      let killTimer: ReturnType<typeof setTimeout> | undefined;

      const execution = integration.executeCommand(command);
      subscriptions.push(
        vscode.window.onDidEndTerminalShellExecution((e) => {
          if (e.execution !== execution) return;
          ended = { exitCode: e.exitCode };
          if (signal.aborted) return finish(() => reject(signal.reason));
          resolveIfDone();
          // The stream normally ends with the execution; do not wait for it forever.
          drainTimer ??= setTimeout(() => {
            drained = true;
            resolveIfDone();
          }, DRAIN_GRACE_MS);
        }),
        vscode.window.onDidCloseTerminal((closed) => {
          if (closed !== terminal) return;
          if (signal.aborted) return finish(() => reject(signal.reason));
          finish(() => reject(new ToolFailure(`The terminal "${TERMINAL_NAME}" was closed while the command ran.`)));
        }),
      );
      // Read at once, or the first output is missed.
      void (async () => {
        try {
          for await (const data of execution.read()) if (!settled) onData(data);
        } catch (error) {
          this.options.log?.warn(`Reading the output of "${command}" failed: ${String(error)}`);
        }
        drained = true;
        resolveIfDone();
      })();

      const onAbort = (): void => {
        // Ctrl-C, as the user would press it; a command that ignores it loses its terminal.
        terminal.sendText('\u0003', false);
        killTimer = setTimeout(() => {
          this.options.log?.warn(`"${command}" did not end after Ctrl-C; closing the terminal "${TERMINAL_NAME}".`);
          terminal.dispose();
          if (this.terminal === terminal) this.terminal = undefined;
          finish(() => reject(signal.reason));
        }, INTERRUPT_GRACE_MS);
      };
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    });
  }
}

function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
