import type { LanguageModel, TelemetryOptions } from 'ai';
import type { CompactionConfig } from '../../core/config';
import { errorText } from '../../core/errors';
import type { LogRecord, ReportedUsage, SubagentEnding, SubagentEvent } from '../../core/log';
import type { Message } from '../../core/messages';
import { describeOverflow } from '../../core/overflow-error';
import { mayCutPrompts, type ProviderKind } from '../../core/provider-kind';
import type { Summarizer } from '../../core/ports';
import type { RecallQuery } from '../../core/recall';
import { stepLimit, type StepBudget } from '../../core/step-limit';
import { answerText, failureText, lastAnswer, reportText, workDone, WRAP_UP } from '../../core/subagents';
import type { CostBreakdown } from '../../core/usage-cost';
import { costOf } from '../../core/usage-report';
import { isModelTimeout, runAgentTurn, stepLimitReached, toolDefinitionsText, type AgentTurnResult, type AgentUi } from '../../llm/agent';
import { createAgentTools, SubagentFailure, type DelegatePort, type DelegateRequest } from '../../llm/agent-tools';
import type { CommandPort, WorkspacePort } from '../../llm/workspace-port';
import { Conversation } from '../conversation/conversation';
import type { ConversationFiles } from '../conversation/conversation-deps';
import type { ModelContext } from '../conversation/conversation-meter';
import type { LongrunSettings } from '../settings';
import { ConversationIndex } from '../store/conversation-index';
import { turnCacheHints } from '../usage/conversation-cache';
import { subagentPrompt, taskMessage } from './subagent-prompt';

/**
 * Runs the agent's subagents (its `delegate` tool): each a second agent loop (`runAgentTurn`) over
 * a conversation of its own, kept in memory and compacted by the same engine when its window fills,
 * with read-only tools, its own model and its own step and token budgets. Its requests carry the
 * cache hints the agent's do on the same provider, on a cache key of the subagents' own. Everything it
 * does is written to the parent conversation's log as it happens, on the parent's turn, its usage
 * among it (tagged as a subagent's, so that it is counted and priced but never calibrates the
 * agent's view); the parent gets back its report, bounded, or a failure that says why and what was
 * done, never an empty result.
 */

/** The model a subagent runs on, as the editor gives it: `longrun.subagent.model`, or the conversation's. */
export interface SubagentModel {
  /** Its vendor and id: recorded with the subagent. */
  readonly key: string;
  /** Its name, for the chat. */
  readonly name: string;
  languageModel(): Promise<LanguageModel>;
  /** What its conversation needs to know of it, given what every request carries besides the messages (system prompt, tools). */
  context(overheadText: string): ModelContext;
  /** The answer's longest length to send (`max_tokens`), when the model needs one. */
  maxOutputTokens(): number | undefined;
  /** The summarizer its conversation compacts with: `longrun.compaction.model`, or the subagent's model. */
  summarizer(): Promise<Summarizer | undefined>;
  /** A smaller window its server stated (an overflow error, a cut prompt): `context` gives it from now on. */
  learnWindow(limit: number, why: string, lowerBound?: boolean): void;
  /** Whether it runs on one of Longrun's own endpoints (its usage is the server's own count). */
  readonly servedByEndpoint: boolean;
  /** The wire format of its endpoint, which sets the cache hints its requests take; absent for a model of VS Code's. */
  readonly provider?: ProviderKind;
}

/** What the chat shows of a subagent: a line when it starts, and one when it ends. */
export interface SubagentUi {
  started(run: { readonly id: string; readonly task: string; readonly model: string }): void;
  ended(run: SubagentSummary): void;
}

/** A subagent that ended, as the chat shows it. */
export interface SubagentSummary {
  readonly id: string;
  readonly task: string;
  readonly model: string;
  readonly ending: SubagentEnding;
  readonly durationMs: number;
  readonly steps: number;
  readonly inputTokens: number;
  readonly outputTokens: number;
  /** What its calls cost, when a price is known. */
  readonly cost?: number;
}

/** The conversation that delegates: where the subagents' records go, and the archive their `recall` searches. */
export interface DelegatingConversation {
  /** Its id: the subagents' requests share a cache key made from it. */
  readonly id: string;
  append(records: readonly LogRecord[]): Promise<void>;
  recall(query: RecallQuery): Promise<string>;
}

export interface SubagentRunnerDeps {
  /** The model to run on; undefined when none is available. */
  readonly model: () => Promise<SubagentModel | undefined>;
  readonly settings: () => Pick<LongrunSettings, 'subagent' | 'compaction' | 'timeouts' | 'cache'>;
  readonly files: WorkspacePort;
  /** The commands the user's allow list runs without asking, and no other; absent: no `run_command`. */
  readonly commands?: CommandPort;
  readonly parent: DelegatingConversation;
  readonly folders: () => readonly string[];
  /** Milliseconds since the epoch. */
  readonly now: () => number;
  readonly newId: () => string;
  readonly ui: SubagentUi;
  /** Longest tool result the subagent gets. */
  readonly maxResultChars: number;
  /** The AI SDK's telemetry option for a subagent's calls. */
  readonly telemetry?: (id: string) => TelemetryOptions;
  /** What one recorded request cost at its model's prices, its cache reads and writes apart, when they are known; absent: costs are not shown. */
  readonly cost?: (usage: ReportedUsage) => CostBreakdown | undefined;
  /** Counts text as the agent's model does, to bound the report. */
  readonly countText: (text: string) => number;
  /** Cleans provider text (an error) of API keys. */
  readonly redact?: (text: string) => string;
  /** Told what could not be recorded (a full disk), so that it is not lost silently. */
  readonly warn?: (message: string) => void;
}

/** The longest report (or failure) the agent gets, in tokens. */
export const MAX_REPORT_TOKENS = 2_000;

/** What one step is expected to answer, in tokens, when the budget decides whether another step fits. */
const EXPECTED_ANSWER_TOKENS = 1_000;

/** An agent UI that shows nothing: a subagent's steps show in the chat as one line each, start and end. */
const QUIET_UI: AgentUi = {
  text: () => undefined,
  toolCall: () => undefined,
  compacting: () => undefined,
  compacted: () => undefined,
  notice: () => undefined,
};

export class SubagentRunner implements DelegatePort {
  /** The subagents at work. */
  private readonly running = new Set<Promise<Outcome>>();

  constructor(private readonly deps: SubagentRunnerDeps) {}

  /** Runs a subagent on `request`; resolves with its report, rejects with `SubagentFailure`. */
  async delegate(request: DelegateRequest, signal: AbortSignal): Promise<string> {
    const work = new SubagentWork(this.deps, request, signal).run();
    this.running.add(work);
    const outcome = await work.finally(() => this.running.delete(work));
    if (outcome.ok) return outcome.text;
    throw new SubagentFailure(outcome.text);
  }

  /**
   * Resolves once no subagent is at work, each end recorded. The AI SDK does not wait for a step's
   * tools when the turn is stopped: the turn waits here, so that it ends after its subagents.
   */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.all(this.running);
  }
}

/** How a subagent ended, and what the agent is given. */
type Outcome = { readonly ok: true; readonly text: string } | { readonly ok: false; readonly text: string; readonly ending: SubagentEnding };

/** One subagent, from its start record to its end record. */
class SubagentWork {
  private readonly id: string;
  private readonly budget: StepBudget;
  private readonly started: number;
  /** Every message of its conversation, as written (those it compacted away included). */
  private readonly messages: Message[] = [];
  private inputTokens = 0;
  private outputTokens = 0;
  private steps = 0;
  /** What its requests recorded so far cost, and whether one of them had no known price. */
  private spent = { cost: 0, requests: 0, unpriced: false };
  private model = 'no model';
  private startWritten = false;

  constructor(
    private readonly deps: SubagentRunnerDeps,
    private readonly request: DelegateRequest,
    private readonly signal: AbortSignal,
  ) {
    this.id = deps.newId();
    const settings = deps.settings().subagent;
    this.budget = {
      steps: Math.min(settings.maxSteps, Math.max(1, request.budget?.steps ?? settings.maxSteps)),
      tokens: Math.min(settings.maxTokens, Math.max(1, request.budget?.tokens ?? settings.maxTokens)),
    };
    this.started = deps.now();
  }

  /** Runs it; never rejects: whatever happens comes back as a report or a failure, recorded and shown. */
  async run(): Promise<Outcome> {
    let outcome: Outcome;
    try {
      outcome = await this.work();
    } catch (error) {
      outcome = this.failed(this.signal.aborted ? 'it was stopped (Stop in the chat)' : `it crashed: ${this.clean(errorText(error))}`);
    }
    await this.finish(outcome);
    return outcome;
  }

  private async work(): Promise<Outcome> {
    const chosen = await this.deps.model();
    this.model = chosen?.key ?? 'no model';
    await this.recordStart();
    this.deps.ui.started({ id: this.id, task: this.request.task, model: chosen?.name ?? this.model });
    if (!chosen) return this.failed('no model is available to run it (pick a model in the chat, or set longrun.subagent.model)');
    if (this.signal.aborted) return this.failed('it was stopped (Stop in the chat)', 'cancelled');
    const result = await this.loop(chosen);
    return this.outcomeOf(result);
  }

  /** The agent loop over the subagent's own conversation. */
  private async loop(chosen: SubagentModel): Promise<AgentTurnResult> {
    const { deps } = this;
    const settings = deps.settings();
    const tools = createAgentTools(deps.files, {
      readOnly: true,
      maxResultChars: deps.maxResultChars,
      recall: deps.parent,
      ...(deps.commands ? { allowedCommandsOnly: deps.commands } : {}),
    });
    const system = subagentPrompt({ folders: deps.folders(), commands: deps.commands !== undefined, reportTokens: MAX_REPORT_TOKENS });
    const overheadText = `${system}\n${toolDefinitionsText(tools)}`;
    // Made again only when its server states a smaller window: the meter asks for it at every count.
    let context = chosen.context(overheadText);
    const conversation = this.conversation(() => context, settings.compaction, chosen);
    await conversation.append([{ type: 'message', message: taskMessage(deps.newId(), this.request.task, this.request.scope) }]);
    const model = await chosen.languageModel();
    const maxOutputTokens = chosen.maxOutputTokens();
    // One key for every subagent of the conversation: their requests begin with the same system prompt and tools.
    const cacheHints = turnCacheHints(
      () => chosen.provider,
      () => deps.settings().cache,
      { conversationId: `${deps.parent.id}-subagents`, records: () => conversation.log() },
    );
    return runAgentTurn({
      model,
      system,
      tools,
      maxSteps: this.budget.steps,
      signal: this.signal,
      conversation: {
        view: () => conversation.view(),
        append: (records) => conversation.append(records),
        assess: () => conversation.assess(),
        compact: (reason, signal, stated) => {
          if (stated) {
            chosen.learnWindow(stated.limit, stated.why, stated.lowerBound);
            context = chosen.context(overheadText);
          }
          return conversation.compact(reason, { signal });
        },
        requestBasis: () => conversation.requestBasis(),
        newId: deps.newId,
        stableEnd: () => conversation.stableEnd(),
        guard: conversation.guard(),
      },
      cacheHints,
      now: deps.now,
      ui: QUIET_UI,
      overflowRetriesPerTurn: settings.compaction.overflowRetriesPerTurn,
      ...(deps.telemetry ? { telemetry: deps.telemetry(this.id) } : {}),
      ...(maxOutputTokens !== undefined ? { maxOutputTokens: () => maxOutputTokens } : {}),
      timeouts: settings.timeouts,
      detectTruncation: chosen.servedByEndpoint && mayCutPrompts(chosen.provider),
      limit: (spent) => stepLimit(spent, this.budget, conversation.count().tokens + EXPECTED_ANSWER_TOKENS, WRAP_UP),
    });
  }

  /**
   * The subagent's conversation: in memory, compacted like any conversation, each record it writes
   * taken to the parent's log as a subagent record (its usage counted for the budget and the chat).
   */
  private conversation(context: () => ModelContext, config: CompactionConfig, chosen: SubagentModel): Conversation {
    const { deps } = this;
    const files: ConversationFiles = {
      appendAll: async (_id, records) => {
        await this.take(records);
        return [...records];
      },
      readAt: () => Promise.reject(new Error("A subagent's conversation is held in memory whole; nothing is read back.")),
    };
    const listing = new Map<string, unknown>();
    return new Conversation(this.id, [], {
      store: files,
      index: new ConversationIndex({ get: (key) => listing.get(key) as never, update: async (key, value) => void listing.set(key, value) }),
      clock: { now: deps.now, setTimer: (ms, fn) => clearer(setTimeout(fn, ms)) },
      newId: deps.newId,
      config: () => config,
      model: context,
      summarizer: () => chosen.summarizer(),
      ...(deps.redact ? { redact: deps.redact } : {}),
    });
  }

  /**
   * Takes what the subagent's conversation writes: its messages and compactions to the parent's log,
   * its usage too, tagged as this subagent's, counted (what a run that crashes has spent; the loop's
   * own total replaces it otherwise) and priced.
   */
  private async take(records: readonly LogRecord[]): Promise<void> {
    const events: SubagentEvent[] = [];
    const usages: LogRecord[] = [];
    let compacted: { tokensBefore: number; tokensAfter: number; summary?: string; pruned: number } | undefined;
    for (const record of records) {
      if (record.type === 'message') {
        this.messages.push(record.message);
        events.push({ kind: 'message', id: this.id, message: record.message });
      } else if (record.type === 'usage') {
        const usage: ReportedUsage = { ...record.usage, purpose: 'subagent', subagent: this.id };
        usages.push({ type: 'usage', usage });
        this.price(usage);
        // Its own summaries' requests are billed but are no step of its loop.
        if (record.usage.purpose !== undefined) continue;
        this.steps++;
        this.inputTokens += record.usage.inputTokens;
        this.outputTokens += record.usage.outputTokens;
      } else if (record.type === 'pruning') {
        compacted = { tokensBefore: record.entry.tokensBefore, tokensAfter: record.entry.tokensAfter, pruned: record.entry.outputs.length };
      } else if (record.type === 'compaction') {
        const e = record.entry;
        compacted = {
          tokensBefore: compacted?.tokensBefore ?? e.tokensBefore,
          tokensAfter: e.tokensAfter,
          summary: e.summary,
          pruned: compacted?.pruned ?? 0,
        };
      }
    }
    if (compacted) events.push({ kind: 'compacted', id: this.id, ...compacted });
    const out: LogRecord[] = [...events.map((subagent): LogRecord => ({ type: 'subagent', subagent })), ...usages];
    if (out.length > 0) await this.deps.parent.append(out);
  }

  /** Adds what `usage` cost to what the subagent spent, as the conversation's usage report prices it. */
  private price(usage: ReportedUsage): void {
    if (!this.deps.cost) return;
    const cost = costOf(usage, usage.estimated ? undefined : this.deps.cost(usage));
    this.spent = {
      cost: this.spent.cost + (cost ?? 0),
      requests: this.spent.requests + 1,
      unpriced: this.spent.unpriced || cost === undefined,
    };
  }

  /** What the loop's result means for the agent: the report, or why there is none. */
  private outcomeOf(result: AgentTurnResult): Outcome {
    // What the provider reported for every step, those whose messages never reached the log (a step cut by an error) too.
    this.steps = result.steps;
    this.inputTokens = result.usage.inputTokens;
    this.outputTokens = result.usage.outputTokens;
    if (result.cancelled || this.signal.aborted) return this.failed('it was stopped (Stop in the chat)', 'cancelled');
    if (result.error !== undefined) return this.failed(this.reasonOf(result.error));
    if (result.finishReason === 'tool-calls') return this.failed(`it used its ${this.budget.steps} steps without writing a report`);
    const answer = answerText(this.messages.findLast((m) => m.role === 'assistant'));
    if (answer === '') return this.failed('its model answered nothing');
    return { ok: true, text: reportText(answer, this.reportInput()) };
  }

  /** Why the loop ended on `error`, in words for the agent. */
  private reasonOf(error: unknown): string {
    const limit = stepLimitReached(error);
    if (limit) return limit.message;
    const { timeouts } = this.deps.settings();
    if (isModelTimeout(error)) {
      const first = /first chunk/i.test(error instanceof Error ? error.message : '');
      return first
        ? `its model sent nothing for ${Math.round(timeouts.firstChunkMs / 1000)} s (longrun.timeouts.firstChunkSeconds)`
        : `its model went silent for ${Math.round(timeouts.idleMs / 1000)} s in the middle of an answer (longrun.timeouts.idleSeconds)`;
    }
    if (describeOverflow(error)) return "its conversation no longer fit its model's context window, even after compacting";
    if (error instanceof Error && error.name === 'AI_ToolChoiceViolationError') return 'its last step called a tool instead of writing its report';
    return `its model request failed: ${this.clean(errorText(error))}`;
  }

  private failed(reason: string, ending: SubagentEnding = 'failed'): Outcome {
    return { ok: false, ending, text: failureText(reason, lastAnswer(this.messages), this.reportInput()) };
  }

  private reportInput() {
    return {
      task: this.request.task,
      work: workDone(this.messages),
      steps: this.steps,
      tokens: this.inputTokens + this.outputTokens,
      maxTokens: MAX_REPORT_TOKENS,
      countText: this.deps.countText,
    };
  }

  /** Its start record, once, whatever happens first. */
  private async recordStart(): Promise<void> {
    if (this.startWritten) return;
    this.startWritten = true;
    await this.record({
      kind: 'start',
      id: this.id,
      task: this.request.task,
      ...(this.request.scope ? { scope: this.request.scope } : {}),
      model: this.model,
      budget: this.budget,
      at: this.started,
    });
  }

  /** Writes the end record and tells the chat; a record that cannot be written is said, the outcome still returned. */
  private async finish(outcome: Outcome): Promise<void> {
    await this.recordStart();
    const ending: SubagentEnding = outcome.ok ? 'reported' : outcome.ending;
    const usage = { inputTokens: this.inputTokens, outputTokens: this.outputTokens };
    const cost = this.spent.requests > 0 && !this.spent.unpriced ? this.spent.cost : undefined;
    const at = this.deps.now();
    await this.record({
      kind: 'end',
      id: this.id,
      ending,
      at,
      steps: this.steps,
      ...usage,
      result: outcome.text,
      ...(cost !== undefined ? { cost } : {}),
    });
    this.deps.ui.ended({
      id: this.id,
      task: this.request.task,
      model: this.model,
      ending,
      durationMs: at - this.started,
      steps: this.steps,
      ...usage,
      ...(cost !== undefined ? { cost } : {}),
    });
  }

  /** Appends one of its records to the parent's log; a failure to write is said, not thrown (the agent still gets its text). */
  private async record(event: SubagentEvent): Promise<void> {
    await this.deps.parent.append([{ type: 'subagent', subagent: event }]).catch((error: unknown) => {
      this.deps.warn?.(`Could not record subagent ${this.id}'s ${event.kind}: ${this.clean(errorText(error))}`);
    });
  }

  private clean(text: string): string {
    return this.deps.redact ? this.deps.redact(text) : text;
  }
}

/** Cancels `timer`. */
function clearer(timer: ReturnType<typeof setTimeout>): () => void {
  return () => clearTimeout(timer);
}
