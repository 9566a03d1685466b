import { OutputCapture, type CaptureBudget } from '../../llm/command-output';
import { ToolFailure, type CommandPort, type CommandRun } from '../../llm/workspace-port';
import { allowRules, findAllowRule } from './command-allowlist';
import { abortable } from '../workspace/confined-files';

/**
 * `run_command` without the terminal: consent, one command at a time, the time limit, Stop, and
 * the output kept within bounds. Free of `vscode`: the terminal is a {@link Shell}
 * (`terminal-tool.ts` supplies VS Code's, tests a fake one).
 */

/** Runs command lines and reports what they print. */
export interface Shell {
  /** Where the user sees the commands run and their whole output, e.g. `the terminal "Longrun"`. */
  readonly where: string;
  /**
   * Runs `command`, passing the raw terminal data it prints to `onData`, and resolves with the exit
   * code the shell reports (`undefined` when it reports none). When `signal` aborts, interrupts the
   * command and rejects with the signal's reason. Throws `ToolFailure` when the command cannot be run
   * with its output and exit code read back: it is then not run at all.
   */
  run(command: string, onData: (data: string) => void, signal: AbortSignal): Promise<number | undefined>;
}

export interface CommandRunnerDeps {
  readonly shell: Shell;
  /** `longrun.agent.allowedCommands`: what runs without asking (see `command-allowlist.ts`). */
  readonly allowedCommands: () => readonly string[];
  /**
   * The packages the lock files of the folder commands run in pin (`locked-packages.ts`): `npx` of
   * one of them may match a prefix rule. Without it, `npx` and the like always ask.
   */
  readonly lockedPackages?: () => Promise<ReadonlySet<string>>;
  /** `longrun.agent.commandTimeoutSeconds`. */
  readonly timeoutSeconds: () => number;
  /** Asks the user to run `command`, shown in full; true to run it. */
  readonly confirm: (command: string, signal: AbortSignal) => Promise<boolean>;
  /** Called when a command runs without asking, with the setting's entry that allowed it. */
  readonly onAllowed?: (command: string, entry: string) => void;
  /** Output kept in memory per command; the default keeps 64 KB of the first and of the last lines. */
  readonly captureBudget?: CaptureBudget;
}

const DEFAULT_CAPTURE: CaptureBudget = { headChars: 64 * 1024, tailChars: 64 * 1024 };

/** Marks the time limit as the reason a command was stopped. */
class TimeLimitReached extends Error {
  override readonly name = 'TimeLimitReached';
}

export class CommandRunner implements CommandPort {
  /** Commands run one after the other, asked for one after the other. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly deps: CommandRunnerDeps) {}

  runCommand(command: string, signal: AbortSignal): Promise<CommandRun> {
    return this.enqueue(command, signal, true);
  }

  /**
   * The same terminal for a caller that may not ask the user (a subagent): only the commands the
   * allow list lets run without asking run, in the same queue; any other is refused with the reason.
   */
  allowedOnly(): CommandPort {
    return { runCommand: (command, signal) => this.enqueue(command, signal, false) };
  }

  private enqueue(command: string, signal: AbortSignal, mayAsk: boolean): Promise<CommandRun> {
    const next = this.queue.then(() => this.runNow(command, signal, mayAsk));
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async runNow(command: string, signal: AbortSignal, mayAsk: boolean): Promise<CommandRun> {
    signal.throwIfAborted();
    const line = command.trim();
    if (line === '') throw new ToolFailure('The command is empty.');
    if (/[\r\n]/.test(line)) {
      throw new ToolFailure('Give one command line: join the steps with && (or write a script file and run it).');
    }
    await this.consent(line, signal, mayAsk);

    const seconds = this.deps.timeoutSeconds();
    const stop = new AbortController();
    const onAbort = (): void => stop.abort(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    const timer = setTimeout(() => stop.abort(new TimeLimitReached()), seconds * 1000);
    const capture = new OutputCapture(this.deps.captureBudget ?? DEFAULT_CAPTURE);
    const timedOut = (): boolean => stop.signal.reason instanceof TimeLimitReached;
    let exitCode: number | undefined;
    try {
      exitCode = await this.deps.shell.run(line, (data) => capture.push(data), stop.signal);
    } catch (error) {
      signal.throwIfAborted();
      if (!timedOut()) throw error;
    } finally {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
    }
    signal.throwIfAborted();
    const ran = { command: line, output: capture.finish(), where: this.deps.shell.where };
    // A shell may report the interrupted command's exit code (130): it still ran out of time.
    return timedOut() ? { ...ran, exitCode: undefined, timedOutAfterSeconds: seconds } : { ...ran, exitCode };
  }

  /** Returns when the command may run: allowed by the setting, or approved by the user when it may be asked. */
  private async consent(line: string, signal: AbortSignal, mayAsk: boolean): Promise<void> {
    const rules = allowRules(this.deps.allowedCommands());
    const lockedPackages = rules.some((r) => r.kind === 'prefix') ? await this.lockedPackages(signal) : new Set<string>();
    const rule = findAllowRule(line, rules, { lockedPackages });
    if (rule) {
      this.deps.onAllowed?.(line, rule.entry);
      return;
    }
    if (!mayAsk) {
      throw new ToolFailure(
        "This command is not on the user's allow list (longrun.agent.allowedCommands), and a subagent never asks: it was not run. Say in your report that it needs running.",
      );
    }
    // The question cannot be closed from here, but Stop must not wait for it.
    const approved = await abortable(signal, () => this.deps.confirm(line, signal));
    signal.throwIfAborted();
    if (!approved) throw new ToolFailure('The user declined to run this command. Ask them how to proceed instead of retrying.');
  }

  private async lockedPackages(signal: AbortSignal): Promise<ReadonlySet<string>> {
    const read = this.deps.lockedPackages;
    return read ? await abortable(signal, () => read()) : new Set<string>();
  }
}
