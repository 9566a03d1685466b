import type { CommandRun, ConversationLog, FileChange, PlanStep, PlanUpdate } from './log';
import { commandKey, latestPlan } from './plan';
import { normalizePath } from './text';

/**
 * The agent's plan checked against what the record says happened, without a model: a step marked
 * done stands only on evidence the branch's log holds and nothing later contradicts. Otherwise it
 * is shown to the model and the user as "done — unverified", with the reason:
 *
 * - a file named as evidence needs a write of it by the agent's tools on the branch, and it must not
 *   have been undone since: changed by the user (their editor's edits, saves, creations, and a revert
 *   of Longrun's changes, which is recorded as theirs), deleted, renamed away, or changed back by the
 *   agent to what it held before a write made before the step was marked done (the hashes of the
 *   change records say so);
 * - a command named as evidence needs a run on the branch (`command` records), and its latest run
 *   must have exited 0 (not non-zero, not stopped, not without an exit code);
 * - a step marked done that names no evidence has nothing to check, and says so.
 *
 * Steps are told apart by their text: a step is "marked done" from the first update of the latest
 * run of updates in which a step of that text is done.
 */

/** A step of the plan, with what the check found. */
export interface CheckedStep extends PlanStep {
  /** For a done step whose evidence does not hold: why. Absent for the others. */
  readonly unverified?: string;
}

/** The latest plan of a branch, checked against its log. */
export interface CheckedPlan {
  readonly update: PlanUpdate;
  /** Where the update is in the log. */
  readonly index: number;
  readonly steps: readonly CheckedStep[];
}

/** The latest plan of `log`, checked against `log`; undefined before the agent made one. */
export function checkPlan(log: ConversationLog): CheckedPlan | undefined {
  const latest = latestPlan(log);
  if (!latest) return undefined;
  return { ...latest, steps: checkSteps(log, latest.update.steps, latest.index) };
}

/**
 * `steps`, a plan written at position `at` of `log` (its length for a plan about to be written),
 * checked against the records before `at` and after it.
 */
export function checkSteps(log: ConversationLog, steps: readonly PlanStep[], at: number): CheckedStep[] {
  const facts = new RecordFacts(log);
  return steps.map((step) => {
    if (step.status !== 'done') return step;
    const reason = facts.contradiction(step, doneSince(log, step.step, at));
    return reason === undefined ? step : { ...step, unverified: reason };
  });
}

/** The commands of `steps`' done steps that were never run on the branch, each once, in order. */
export function commandsNeverRun(log: ConversationLog, steps: readonly PlanStep[]): string[] {
  const facts = new RecordFacts(log);
  const missing: string[] = [];
  for (const step of steps) {
    if (step.status !== 'done') continue;
    for (const command of step.evidence?.commands ?? []) {
      if (!facts.ran(command) && !missing.includes(command)) missing.push(command);
    }
  }
  return missing;
}

/**
 * Where step `text` was first marked done in the run of updates that ends with the plan at `at`:
 * the position of the earliest update of that run in which it is done.
 */
function doneSince(log: ConversationLog, text: string, at: number): number {
  let since = at;
  for (let i = Math.min(at, log.length) - 1; i >= 0; i--) {
    const record = log[i]!;
    if (record.type !== 'plan') continue;
    if (!record.plan.steps.some((s) => s.step === text && s.status === 'done')) break;
    since = i;
  }
  return since;
}

/** What happened to one file, in log order. */
type FileFact =
  { readonly kind: 'write'; readonly index: number; change?: FileChange } | { readonly kind: 'user'; readonly index: number; readonly what: string };

/** The facts of a log a check reads: what happened to each file, and each command's runs. */
class RecordFacts {
  private readonly files = new Map<string, FileFact[]>();
  private readonly runs = new Map<string, CommandRun[]>();

  constructor(log: ConversationLog) {
    log.forEach((record, index) => {
      if (record.type === 'command') push(this.runs, commandKey(record.run.command), record.run);
      else if (record.type === 'change') this.takeChange(record.change, index);
      else if (record.type === 'file') {
        const { kind, actor, from } = record.event;
        const path = normalizePath(record.event.path);
        if (kind === 'read') return;
        if (actor === 'agent' && (kind === 'created' || kind === 'modified')) push(this.files, path, { kind: 'write', index });
        else if (kind === 'deleted') push(this.files, path, { kind: 'user', index, what: 'deleted since' });
        else if (kind === 'renamed') {
          push(this.files, path, { kind: 'user', index, what: 'replaced by a rename since' });
          if (from !== undefined) push(this.files, normalizePath(from), { kind: 'user', index, what: `renamed to ${path} since` });
        } else push(this.files, path, { kind: 'user', index, what: 'changed by the user since the agent wrote it' });
      }
    });
  }

  /** A write's change record follows its file event: the two are one write. */
  private takeChange(change: FileChange, index: number): void {
    const path = normalizePath(change.path);
    const last = this.files.get(path)?.at(-1);
    if (last?.kind === 'write' && last.change === undefined) last.change = change;
    else push(this.files, path, { kind: 'write', index, change });
  }

  ran(command: string): boolean {
    return this.runs.has(commandKey(command));
  }

  /** Why `step`'s evidence does not hold, marked done at position `since`; undefined when it holds. */
  contradiction(step: PlanStep, since: number): string | undefined {
    const files = step.evidence?.files ?? [];
    const commands = step.evidence?.commands ?? [];
    if (files.length === 0 && commands.length === 0) return 'no evidence named';
    const reasons = [
      ...files.flatMap((file) => this.fileReason(normalizePath(file), since) ?? []),
      ...commands.flatMap((command) => this.commandReason(command) ?? []),
    ];
    if (reasons.length === 0) return undefined;
    return reasons.length > 2 ? `${reasons.slice(0, 2).join('; ')}; and ${reasons.length - 2} more` : reasons.join('; ');
  }

  private fileReason(path: string, since: number): string | undefined {
    const facts = this.files.get(path) ?? [];
    const writes = facts.filter((f): f is FileFact & { kind: 'write' } => f.kind === 'write');
    const last = writes.at(-1);
    if (!last) return `no change to ${path} by the agent is recorded`;
    const after = facts.filter((f) => f.index > last.index && f.kind === 'user').at(-1);
    if (after?.kind === 'user') return `${path} was ${after.what}`;
    // What the file holds now, by the record: the hash the latest write left, when it was written to disk.
    const now = last.change?.afterHash;
    if (now === undefined) return undefined;
    const back = writes.some((w) => w.index < since && w.change !== undefined && w.change.beforeHash === now);
    return back ? `${path} was changed back to what it held before` : undefined;
  }

  private commandReason(command: string): string | undefined {
    const last = this.runs.get(commandKey(command))?.at(-1);
    const shown = `\`${commandKey(command)}\``;
    if (!last) return `${shown} was never run`;
    if (last.stopped) return `${shown} was stopped before it ended, the last time it ran`;
    if (last.exitCode === undefined) return `${shown} last ended without an exit code`;
    return last.exitCode === 0 ? undefined : `${shown} last exited ${last.exitCode}`;
  }
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}
