import type { ConversationLog, LogRecord } from '../../core/history';
import { latestPlan, NOTHING_WRITTEN, readPlanInput, samePlan, type PlanStep } from '../../core/plan';
import { checkPlan, commandsNeverRun, type CheckedPlan } from '../../core/plan-check';
import { code, planCounts, planLines } from '../../core/plan-text';
import type { PlanPort } from '../../llm/agent-tools';
import { ToolFailure } from '../../llm/workspace-port';
import { resolveInWorkspace, type WorkspaceRoot } from '../workspace/path-guard';

/**
 * The `plan` tool's port over a conversation: reads an update (`readPlanInput`), confines the files
 * it names to the workspace as every file tool does, refuses a done step naming a command never run
 * on the branch, writes the plan as a record of the branch, and answers with the plan checked
 * against the record. A refused update writes nothing: the plan stays as it was.
 */

/** What the keeper reads and writes. */
export interface PlanKeeperDeps {
  /** The branch's log, and how to append to it (on its leaf turn). */
  readonly conversation: { log(): ConversationLog; append(records: readonly LogRecord[]): Promise<void> };
  readonly roots: () => readonly WorkspaceRoot[];
  readonly newId: () => string;
  readonly now: () => number;
  /** The plan changed: the chat shows it. */
  readonly changed?: (plan: CheckedPlan) => void;
}

export class PlanKeeper implements PlanPort {
  constructor(private readonly deps: PlanKeeperDeps) {}

  async update(input: unknown, signal: AbortSignal): Promise<string> {
    const read = readPlanInput(input);
    if (!read.ok) throw new ToolFailure(read.error);
    const steps = await this.confined(read.steps);
    signal.throwIfAborted();
    const { conversation } = this.deps;
    const never = commandsNeverRun(conversation.log(), steps);
    if (never.length > 0) {
      const named = never.map(code).join(', ');
      throw new ToolFailure(
        `A done step names ${named} as evidence, but ${never.length === 1 ? 'it was' : 'they were'} never run with run_command in this conversation ` +
          `(a command run in the same step as this update has not finished when the plan is written: update the plan once you have its result). ${NOTHING_WRITTEN}`,
      );
    }
    const previous = latestPlan(conversation.log())?.update.steps;
    await conversation.append([{ type: 'plan', plan: { id: this.deps.newId(), steps, at: this.deps.now() } }]);
    const checked = checkPlan(conversation.log());
    if (!checked) throw new Error('the plan just written is not in the log');
    if (!previous || !samePlan(previous, steps)) this.deps.changed?.(checked);
    return planAnswer(checked, previous !== undefined && samePlan(previous, steps));
  }

  /** `steps` with their evidence files as workspace paths; a `ToolFailure` for one outside the workspace. */
  private async confined(steps: readonly PlanStep[]): Promise<PlanStep[]> {
    const out: PlanStep[] = [];
    for (const [index, step] of steps.entries()) {
      const files = step.evidence?.files;
      if (!files) {
        out.push(step);
        continue;
      }
      const paths: string[] = [];
      for (const file of files) {
        try {
          paths.push((await resolveInWorkspace(this.deps.roots(), file, { mustExist: false })).relative);
        } catch (error) {
          if (!(error instanceof ToolFailure)) throw error;
          throw new ToolFailure(`Step ${index + 1} names the file "${file}" as evidence: ${error.message} ${NOTHING_WRITTEN}`);
        }
      }
      out.push({ ...step, evidence: { ...step.evidence, files: [...new Set(paths)] } });
    }
    return out;
  }
}

/**
 * Characters the plan's lines take at most in the tool's answer (about 2,000 tokens, the work state's
 * bound): the latest answer stays in the view until a summary takes it (pruning never stubs it), so
 * a plan of 50 steps of 200 characters with all their evidence must not fill the window. A plan over
 * it keeps the step in progress, those to do, then the latest done ones, and says what it left out.
 */
export const PLAN_ANSWER_CHARS = 8_000;

/** What the model is told once the plan is written: the plan as checked, and what an unverified step asks of it. */
export function planAnswer(plan: CheckedPlan, unchanged: boolean): string {
  const lines = [
    `${unchanged ? 'The plan is unchanged' : 'Plan saved'}: ${planCounts(plan.steps)}.`,
    ...planLines(plan.steps, PLAN_ANSWER_CHARS, (value) => value.length),
  ];
  if (plan.steps.some((s) => s.unverified !== undefined)) {
    lines.push(
      'A step marked "done — unverified" does not stand on the record: do what it needs and update the plan, or set it back to in_progress.',
    );
  }
  return lines.join('\n');
}

/** A port for requests outside any conversation (counting the tools' definitions): it writes nothing. */
export const NO_PLAN: PlanPort = {
  update: () => Promise.reject(new ToolFailure(`There is no conversation to keep a plan in. ${NOTHING_WRITTEN}`)),
};
