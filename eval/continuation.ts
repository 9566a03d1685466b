/**
 * The continuation eval: does the agent keep its place through compactions? Scripted long tasks
 * (each step of a task's plan is: read a module's test file, read the module, write its notes, run
 * its tests, mark the step done)
 * are worked through by a deterministic agent stand-in that decides each call only from what its
 * view holds, as a model does: when the view does not show that a file was read, a note written, a
 * command run or a step done, it does it again. The tasks go through the real engine
 * (`computeCompaction` / `applyCompaction`), compacted inside their turns at fixed steps (threshold,
 * overflow and manual compactions in turn), and each is run twice:
 *
 * - with the plan and ledgers: the view as the engine makes it (the summary's work state, kept
 *   needles and file lists included);
 * - with summaries alone: the same engine, but the stand-in is shown each summary without the
 *   engine's blocks (only the summarizer's prose), as an agent without them would be.
 *
 * What is measured, without asking any model:
 *
 * - the redo rate after a compaction: of the (at most 10) calls after each compaction, the share
 *   that re-read a file unchanged since it was read, or repeated a call made before with nothing
 *   written since;
 * - work-state accuracy: after each compaction, the plan the view shows against the record: each
 *   step of the latest plan shown with its text and status, and a done step marked unverified
 *   exactly when the eval's world says its evidence does not hold (a test run that failed, a note
 *   the user changed afterwards);
 * - stalls: turns that ended before the work was done (waiting for "continue");
 * - compaction loops: turns stopped by the rule against two compactions without progress.
 */
import { applyCompaction, computeCompaction, type CompactionDeps } from '../src/core/compaction';
import { DEFAULT_CONFIG, type CompactionConfig } from '../src/core/config';
import type { ContextWindow } from '../src/core/context-window';
import { stopsForLoop } from '../src/core/compaction-guard';
import { EngineMemo } from '../src/core/engine-memo';
import { isSummaryMessage, ledgerOf, modelView, type CompactionReason, type ConversationLog, type LogRecord } from '../src/core/history';
import { stripKeptNeedles } from '../src/core/kept-needles';
import type { PlanStep } from '../src/core/log';
import { stringifyOutput, text, type Message } from '../src/core/messages';
import type { MessageTokenCounter } from '../src/core/message-tokens';
import { latestPlan } from '../src/core/plan';
import { checkPlan } from '../src/core/plan-check';
import { planAnswer } from '../src/app/plan/plan-keeper';
import type { Clock, Summarizer } from '../src/core/ports';
import { stripFileOperations } from '../src/core/summary-repair';
import { stripWorkState, workStateOf } from '../src/core/work-state';

/** One scripted task: the modules its plan works through, and what the world does along the way. */
export interface ContinuationTask {
  readonly name: string;
  /** Workspace-relative paths of the modules, one step of the plan each. */
  readonly modules: readonly string[];
  /** Modules whose tests fail (exit 1): the stand-in marks their step done all the same. */
  readonly failing?: readonly string[];
  /** After this many calls of the turn, the user edits the note of the first module. */
  readonly userEditsFirstNoteAt?: number;
  /**
   * When set, the first request lists only this many modules; once it is answered, the conversation
   * is compacted (`/compact`, between the turns) and a second request lists the rest.
   */
  readonly followUpAt?: number;
}

/** Where the view the stand-in is shown comes from. */
export type ContinuationMode = 'plan' | 'summaries';

/** One task run in one mode. */
export interface TaskOutcome {
  readonly name: string;
  readonly calls: number;
  readonly compactions: Readonly<Record<CompactionReason, number>>;
  /** Of those, the compactions made between two turns rather than inside one. */
  readonly betweenTurns: number;
  /** Calls counted in the windows after compactions, and how many of them were redone work. */
  readonly windowCalls: number;
  readonly redone: number;
  /** Steps of the plan compared after compactions, and how many the view showed right. */
  readonly stepsCompared: number;
  readonly stepsRight: number;
  readonly stalls: number;
  readonly loops: number;
  /** Whether every module ended with its note written and its tests run. */
  readonly finished: boolean;
}

/** The tasks: 9 to 12 modules each (five calls a module, and the first plan), so 46 to 61 calls, compacted inside their turn every 9. */
export function continuationTasks(): ContinuationTask[] {
  const modules = (area: string, names: readonly string[]): string[] => names.map((n) => `src/${area}/${n}.ts`);
  return [
    {
      name: 'billing-notes',
      modules: modules('billing', ['invoice', 'ledger', 'refund', 'tax', 'currency', 'discount', 'receipt', 'payout', 'dunning']),
      followUpAt: 5,
    },
    {
      name: 'auth-notes',
      modules: modules('auth', ['session', 'token', 'password', 'oauth', 'mfa', 'lockout', 'audit', 'scopes', 'keys', 'sso']),
      failing: ['src/auth/mfa.ts'],
    },
    {
      name: 'search-notes',
      modules: modules('search', [
        'index',
        'query',
        'ranking',
        'tokens',
        'stemmer',
        'facets',
        'cache',
        'shards',
        'replica',
        'suggest',
        'spell',
        'export',
      ]),
      userEditsFirstNoteAt: 12,
    },
  ];
}

/** Calls counted after each compaction. */
export const REDO_WINDOW = 10;
/** Calls a turn may make before it is counted as stalled (the agent would have run out of steps). */
const MAX_CALLS = 150;
/** Calls between the compactions forced inside a turn, and their reasons in turn. */
const COMPACT_EVERY = 9;
const FORCED: readonly CompactionReason[] = ['threshold', 'overflow', 'manual'];

const noteOf = (path: string): string => `notes/${path.replace(/^.*\//, '').replace(/\.ts$/, '')}.md`;
const testOf = (path: string): string => `npm test -- ${path.replace(/^.*\//, '').replace(/\.ts$/, '')}`;
const testFileOf = (path: string): string => `test/${path.replace(/^.*\//, '').replace(/\.ts$/, '')}.test.ts`;
const stepOf = (path: string): string => `Document ${path}`;
const firstLineOf = (path: string): string => `// ${path}: the ${path.replace(/^.*\//, '').replace(/\.ts$/, '')} module.`;

/** A module's text: its first line says what it is (what the note needs); the rest fills the window. */
function moduleText(path: string): string {
  const body = Array.from({ length: 110 }, (_, i) => `export const value${i} = compute('${path}', ${i}); // keeps the module's state in step`);
  return [firstLineOf(path), ...body].join('\n');
}

/**
 * The summarizer the tasks are compacted with: it writes a summary of the right shape that names
 * the notes written so far (from the messages it is given, the engine's blocks left out) and nothing
 * of the plan, the tests or the step under way, as a summary that paraphrases would.
 */
export function paraphrasingSummarizer(): Summarizer {
  return {
    name: 'scripted:paraphrases',
    async summarize(request) {
      const notes = new Set<string>();
      for (const message of request.messages.slice(0, -1)) {
        const prose = stripWorkState(stripKeptNeedles(stripFileOperations(message.content)));
        for (const match of prose.matchAll(/notes\/[\w-]+\.md/g)) notes.add(match[0]);
      }
      const written = [...notes].sort();
      const lines = [
        '## Session Summary',
        '### Completed Work',
        `- Documented modules one by one: ${written.length > 0 ? `notes written to ${written.join(', ')}` : 'no notes written yet'}.`,
        '- Each module was read before its notes were written, and its tests were run afterwards.',
        '### Key Technical Decisions',
        '- One notes file per module, named after the module, holding what its first line says it is.',
        '### Current State',
        '- Working through the modules the user listed, in the order given.',
        '### Pending Work',
        '- [ ] The modules not documented yet, and their tests.',
        '### Errors & Resolutions',
        '- None so far.',
        '### Next Steps',
        '1. Go on with the next module: read it, write its notes, run its tests.',
      ];
      return { text: lines.join('\n'), model: 'scripted-paraphrasing' };
    },
  };
}

/** What the stand-in finds in its view. */
interface Knowledge {
  readonly request: string;
  /** The plan it shows: its last `plan` call, else the last work state (none in `summaries` mode). */
  readonly plan?: readonly PlanStep[];
  /** All the text the view holds (calls, results, summaries). */
  readonly all: string;
}

/** A move of the stand-in: a tool call, or an answer that ends the turn. */
type Move = { readonly tool: string; readonly input: Record<string, unknown> } | { readonly answer: string };

/** The view as the stand-in is shown it: in `summaries` mode, each summary without the engine's blocks. */
export function shownView(view: readonly Message[], mode: ContinuationMode): Message[] {
  if (mode === 'plan') return [...view];
  return view.map((m) =>
    isSummaryMessage(m)
      ? {
          ...m,
          content: m.content.map((p) => (p.type === 'text' ? { ...p, text: stripWorkState(stripKeptNeedles(stripFileOperations(p.text))) } : p)),
        }
      : m,
  );
}

function partText(message: Message): string {
  return message.content
    .map((p) =>
      p.type === 'text' || p.type === 'reasoning'
        ? p.text
        : p.type === 'tool-call'
          ? `${p.toolName} ${stringifyOutput(p.input)}`
          : p.type === 'tool-result'
            ? stringifyOutput(p.output)
            : '',
    )
    .join('\n');
}

/** What a view shows the stand-in. */
export function knowledgeOf(view: readonly Message[]): Knowledge {
  const request = [...view].reverse().find((m) => m.role === 'user' && !isSummaryMessage(m));
  const plan = shownPlan(view);
  const all = view.map(partText).join('\n');
  return { request: request ? partText(request) : '', ...(plan ? { plan } : {}), all };
}

/**
 * The plan the view shows, as the latest of: the plan tool's answer (the plan as checked), or the
 * work state of a summary.
 */
export function shownPlan(view: readonly Message[]): PlanStep[] | undefined {
  for (let i = view.length - 1; i >= 0; i--) {
    const message = view[i]!;
    if (isSummaryMessage(message)) {
      const found = planLinesIn(workStateOf(partText(message)));
      if (found) return found;
      continue;
    }
    const answer = message.content.find((p) => p.type === 'tool-result' && p.toolName === 'plan');
    if (answer?.type === 'tool-result') {
      const found = planLinesIn(stringifyOutput(answer.output));
      if (found) return found;
    }
  }
  return undefined;
}

/** The plan a work-state block shows, read back from its lines (`3. [done — unverified: …] text · evidence: …`). */
export function planLinesIn(block: string): PlanStep[] | undefined {
  const steps: PlanStep[] = [];
  for (const line of block.split('\n')) {
    const match = /^\d+\. \[([^\]]+)\] (.+?)(?: · evidence: (.+))?$/.exec(line.trim());
    if (!match) continue;
    const mark = match[1]!;
    const status = mark.startsWith('done') ? 'done' : mark === 'in progress' ? 'in_progress' : (mark as PlanStep['status']);
    steps.push({ step: match[2]!, status, ...(mark.startsWith('done — unverified') ? { note: 'unverified' } : {}) });
  }
  return steps.length > 0 ? steps : undefined;
}

/** The modules the request lists: "Document each of these modules …: src/a.ts src/b.ts". */
function modulesOf(request: string): string[] {
  return /modules[^:]*: ((?:\S+\.ts ?)+)/.exec(request)?.[1]?.trim().split(/\s+/) ?? [];
}

/** The first line of `path`, when the view shows it: a read's result, or the first lines of the last call in a work state. */
function firstLineShown(all: string, path: string): boolean {
  return all.includes(firstLineOf(path));
}

/**
 * The stand-in's next move, from its view alone. It works the plan's step in progress: read the
 * module (unless the view shows its first line), write its note (unless the view names the note),
 * run its tests (unless the view names the command), then mark the step done with that evidence
 * and the next one in progress. Without a plan in view it writes one from the request, counting as
 * done the modules whose note and test run the view names.
 */
export function nextMove(known: Knowledge, mode: ContinuationMode): Move {
  const modules = modulesOf(known.request);
  if (modules.length === 0) return { answer: 'I have lost track of the task; say "continue" and I will look again.' };
  const seenDone = (path: string): boolean => known.all.includes(noteOf(path)) && known.all.includes(testOf(path));
  if (mode === 'summaries') {
    const path = modules.find((p) => !seenDone(p));
    return path === undefined
      ? { answer: `All ${modules.length} modules are documented.` }
      : (work(known, path) ?? { answer: 'Nothing left to do.' });
  }
  const evidence = (path: string) => ({ files: [noteOf(path)], commands: [testOf(path)] });
  // A plan for other modules (an earlier request's) is not this request's.
  const plan = known.plan && known.plan.map((s) => s.step).join('\n') === modules.map(stepOf).join('\n') ? known.plan : undefined;
  if (!plan) {
    const first = modules.findIndex((p) => !seenDone(p));
    const steps = modules.map((p, i) => ({
      step: stepOf(p),
      status: i === first ? 'in_progress' : seenDone(p) ? 'done' : 'pending',
      ...(seenDone(p) ? { evidence: evidence(p) } : {}),
    }));
    return { tool: 'plan', input: { steps } };
  }
  const current = plan.findIndex((s) => s.status === 'in_progress');
  if (current < 0) {
    const pending = plan.findIndex((s) => s.status === 'pending');
    if (pending < 0) return { answer: `All ${plan.length} modules are documented.` };
    return { tool: 'plan', input: { steps: rewrite(plan, modules, pending, 'in_progress') } };
  }
  const path = modules[current]!;
  const next = work(known, path);
  if (next) return next;
  const steps = rewrite(plan, modules, current, 'done');
  const following = steps.findIndex((s) => s.status === 'pending');
  return { tool: 'plan', input: { steps: following < 0 ? steps : rewrite(steps, modules, following, 'in_progress') } };
}

/**
 * The next call of a module's work the view does not show done: read its test file (unless the view
 * names it), read the module (unless the view shows its first line, which the note needs), write its
 * note, run its tests.
 */
function work(known: Knowledge, path: string): Move | undefined {
  if (!known.all.includes(noteOf(path))) {
    if (!known.all.includes(testFileOf(path))) return { tool: 'read_file', input: { path: testFileOf(path) } };
    if (!firstLineShown(known.all, path)) return { tool: 'read_file', input: { path } };
    return { tool: 'create_file', input: { path: noteOf(path), content: `Notes on ${firstLineOf(path)}\n` } };
  }
  if (!known.all.includes(testOf(path))) return { tool: 'run_command', input: { command: testOf(path) } };
  return undefined;
}

/** `plan` written anew (as the tool takes it), step `at` given `status`; done steps keep their evidence. */
function rewrite(plan: readonly PlanStep[], modules: readonly string[], at: number, status: PlanStep['status']): PlanStep[] {
  return plan.map((s, i) => {
    const next = i === at ? status : s.status;
    const path = modules[i]!;
    return { step: s.step, status: next, ...(next === 'done' ? { evidence: { files: [noteOf(path)], commands: [testOf(path)] } } : {}) };
  });
}

/** The eval's clock: time stands still and timers never fire. */
const evalClock: Clock = { now: () => 1_700_000_000_000, setTimer: () => () => undefined };

/** The options a continuation run takes. */
export interface ContinuationOptions {
  readonly counter: MessageTokenCounter;
  readonly summarizer?: Summarizer;
  readonly tasks?: readonly ContinuationTask[];
  /** The chat model's window (12,000 tokens: a step's two reads fill a third of it). */
  readonly window?: number;
  readonly config?: CompactionConfig;
}

/** Runs every task in `mode`. */
export async function runContinuation(mode: ContinuationMode, options: ContinuationOptions): Promise<TaskOutcome[]> {
  const outcomes: TaskOutcome[] = [];
  for (const task of options.tasks ?? continuationTasks()) outcomes.push(await runTask(task, mode, options));
  return outcomes;
}

/** A call as it is compared with the calls before it. */
interface CallSeen {
  readonly key: string;
  readonly name: string;
  readonly path?: string;
}

async function runTask(task: ContinuationTask, mode: ContinuationMode, options: ContinuationOptions): Promise<TaskOutcome> {
  const config = options.config ?? DEFAULT_CONFIG;
  const window: ContextWindow = { limit: options.window ?? 12_000, source: 'model' };
  let ids = 0;
  const newId = (what: string): string => `${task.name}-${what}-${++ids}`;
  const deps: CompactionDeps = {
    counter: options.counter,
    summarizer: options.summarizer ?? paraphrasingSummarizer(),
    clock: evalClock,
    newId: () => newId('entry'),
    memo: new EngineMemo(),
  };
  const at = evalClock.now();
  const batches = task.followUpAt ? [task.modules.slice(0, task.followUpAt), task.modules.slice(task.followUpAt)] : [task.modules];
  const requestFor = (batch: readonly string[], n: number): string =>
    `${n === 0 ? 'Document each of these modules' : 'Now document these modules too'} (read it, write notes/<name>.md, run its tests): ${batch.join(' ')}`;
  let log: ConversationLog = [];

  // The world: notes on disk (and whether the user changed one), each command's latest exit.
  const notes = new Map<string, 'agent' | 'user'>();
  const lastExit = new Map<string, number>();
  const seen: CallSeen[] = [];
  const compactions: Record<CompactionReason, number> = { threshold: 0, overflow: 0, manual: 0, 'cache-expired': 0 };
  let windowLeft = 0;
  let windowCalls = 0;
  let redone = 0;
  let stepsCompared = 0;
  let stepsRight = 0;
  let stalls = 0;
  let loops = 0;
  let earlier: string | undefined;
  let forced = 0;
  let betweenTurns = 0;

  const compact = async (reason: CompactionReason): Promise<boolean> => {
    const stalled = stopsForLoop(log, earlier);
    const outcome = await computeCompaction({ log, reason, config, window, ledger: ledgerOf(log) }, deps);
    if (outcome.status !== 'compacted') return false;
    const applied = applyCompaction(log, outcome.compaction, deps.memo);
    if (!applied.ok) return false;
    log = applied.log;
    compactions[reason]++;
    earlier = outcome.compaction.entry?.id ?? outcome.compaction.pruning?.id ?? earlier;
    windowLeft = REDO_WINDOW;
    const compared = compareWithRecord(log, shownView(modelView(log, deps.memo), mode), notes, lastExit);
    stepsCompared += compared.total;
    stepsRight += compared.right;
    if (stalled) loops++;
    return stalled;
  };

  let calls = 0;
  /** One turn on `batch`, until the stand-in answers; false when it stopped for a compaction loop. */
  const runTurn = async (batch: readonly string[]): Promise<boolean> => {
    for (;;) {
      if (calls >= MAX_CALLS) {
        stalls++;
        return true;
      }
      const move = nextMove(knowledgeOf(shownView(modelView(log, deps.memo), mode)), mode);
      if ('answer' in move) {
        log = [...log, { type: 'message', message: { id: newId('answer'), role: 'assistant', content: [text(move.answer)] } }];
        if (!finished(batch, notes, lastExit)) stalls++;
        return true;
      }
      calls++;
      const key = `${move.tool} ${JSON.stringify(move.input)}`;
      const path = typeof move.input.path === 'string' ? move.input.path : undefined;
      const redo = isRedo({ key, name: move.tool, ...(path ? { path } : {}) }, seen);
      if (windowLeft > 0) {
        windowLeft--;
        windowCalls++;
        if (redo) redone++;
      }
      seen.push({ key, name: move.tool, ...(path ? { path } : {}) });
      const callId = newId('call');
      const records: LogRecord[] = [
        {
          type: 'message',
          message: {
            id: newId('assistant'),
            role: 'assistant',
            content: [{ type: 'tool-call', toolCallId: callId, toolName: move.tool, input: move.input }],
          },
        },
      ];
      let output: string;
      switch (move.tool) {
        case 'read_file':
          output = moduleText(String(move.input.path));
          records.push({ type: 'file', event: { kind: 'read', path: String(move.input.path), actor: 'agent', at } });
          break;
        case 'create_file': {
          const note = String(move.input.path);
          records.push({ type: 'file', event: { kind: notes.has(note) ? 'modified' : 'created', path: note, actor: 'agent', at } });
          notes.set(note, 'agent');
          output = `Created ${note} (1 line).`;
          break;
        }
        case 'run_command': {
          const command = String(move.input.command);
          const module = task.modules.find((m) => testOf(m) === command);
          const exitCode = module && task.failing?.includes(module) ? 1 : 0;
          lastExit.set(command, exitCode);
          records.push({ type: 'command', run: { command, exitCode, at } });
          output = `$ ${command}\n${exitCode === 0 ? 'All tests passed.' : 'FAIL: 1 test failed.'}\nExit code: ${exitCode}`;
          break;
        }
        case 'plan': {
          records.push({ type: 'plan', plan: { id: newId('plan'), steps: (move.input as { steps: PlanStep[] }).steps, at } });
          // What the plan tool answers: the plan as checked against the record.
          const checked = checkPlan([...log, ...records]);
          output = checked ? planAnswer(checked, false) : '';
          break;
        }
        default:
          throw new Error(`the stand-in called an unknown tool: ${move.tool}`);
      }
      records.push({
        type: 'message',
        message: { id: newId('tool'), role: 'tool', content: [{ type: 'tool-result', toolCallId: callId, toolName: move.tool, output }] },
      });
      log = [...log, ...records];
      if (task.userEditsFirstNoteAt === calls) {
        const note = noteOf(task.modules[0]!);
        if (notes.has(note)) {
          notes.set(note, 'user');
          log = [...log, { type: 'file', event: { kind: 'modified', path: note, actor: 'user', at } }];
        }
      }
      if (calls % COMPACT_EVERY === 0 && (await compact(FORCED[forced++ % FORCED.length]!))) return false;
    }
  };

  for (const [n, batch] of batches.entries()) {
    // A compaction between two turns belongs to neither: the rule against loops counts within a turn.
    earlier = undefined;
    if (n > 0) {
      const before = compactions.manual;
      await compact('manual');
      betweenTurns += compactions.manual - before;
    }
    log = [...log, { type: 'message', message: { id: newId('user'), role: 'user', content: [text(requestFor(batch, n))] } }];
    earlier = undefined;
    if (!(await runTurn(batch))) break;
  }
  return {
    name: task.name,
    calls,
    compactions,
    betweenTurns,
    windowCalls,
    redone,
    stepsCompared,
    stepsRight,
    stalls,
    loops,
    finished: finished(task.modules, notes, lastExit),
  };
}

/**
 * Whether `call` redoes work: the same call again, or a re-read of a file unchanged since it was
 * read (the modules are never changed in these tasks, so any re-read of one).
 */
function isRedo(call: CallSeen, before: readonly CallSeen[]): boolean {
  return before.some((c) => c.key === call.key || (call.name === 'read_file' && c.name === 'read_file' && c.path === call.path));
}

/** Whether every module of `modules` has its note and a test run. */
function finished(modules: readonly string[], notes: ReadonlyMap<string, unknown>, lastExit: ReadonlyMap<string, number>): boolean {
  return modules.every((m) => notes.has(noteOf(m)) && lastExit.has(testOf(m)));
}

/**
 * The plan the view shows against the record: each step of the log's latest plan is right when the
 * view shows it with the same text and status, and, for a done step, marked unverified exactly when
 * the world says its evidence fails (its test last exited non-zero, or the user changed its note).
 */
function compareWithRecord(
  log: ConversationLog,
  view: readonly Message[],
  notes: ReadonlyMap<string, 'agent' | 'user'>,
  lastExit: ReadonlyMap<string, number>,
): { total: number; right: number } {
  const truth = latestPlan(log)?.update.steps;
  if (!truth) return { total: 0, right: 0 };
  const shown = shownPlan(view) ?? [];
  let right = 0;
  truth.forEach((step, i) => {
    const s = shown[i];
    if (!s || s.step !== step.step || s.status !== step.status) return;
    if (step.status === 'done') {
      const failed =
        (step.evidence?.commands ?? []).some((c) => lastExit.get(c) !== 0) || (step.evidence?.files ?? []).some((f) => notes.get(f) !== 'agent');
      if (failed !== (s.note === 'unverified')) return;
    }
    right++;
  });
  return { total: truth.length, right };
}

/** The figures of a run in one mode, over its tasks. */
export interface ContinuationFigures {
  readonly redoRate: number;
  readonly accuracy: number;
  readonly stalls: number;
  readonly loops: number;
  readonly compactions: number;
  /** Compactions between two turns, over the tasks; the fewest compactions inside the turns of one task. */
  readonly betweenTurns: number;
  readonly minCompactionsPerTask: number;
  readonly minCallsPerTask: number;
}

export function figuresOf(outcomes: readonly TaskOutcome[]): ContinuationFigures {
  const total = (f: (o: TaskOutcome) => number): number => outcomes.reduce((sum, o) => sum + f(o), 0);
  const compactionsOf = (o: TaskOutcome): number => o.compactions.threshold + o.compactions.overflow + o.compactions.manual;
  const windowCalls = total((o) => o.windowCalls);
  const compared = total((o) => o.stepsCompared);
  return {
    redoRate: windowCalls === 0 ? 0 : total((o) => o.redone) / windowCalls,
    accuracy: compared === 0 ? 0 : total((o) => o.stepsRight) / compared,
    stalls: total((o) => o.stalls),
    loops: total((o) => o.loops),
    compactions: total(compactionsOf),
    betweenTurns: total((o) => o.betweenTurns),
    minCompactionsPerTask: Math.min(...outcomes.map((o) => compactionsOf(o) - o.betweenTurns)),
    minCallsPerTask: Math.min(...outcomes.map((o) => o.calls)),
  };
}
