import { AsyncLocalStorage } from 'node:async_hooks';
import type { LanguageModel, ToolSet } from 'ai';
import type { CompactionOutcome } from '../../core/compaction';
import { errorText } from '../../core/errors';
import { fileChange } from '../../core/file-changes';
import { lastUsage, type CompactionReason, type LogRecord } from '../../core/history';
import { text } from '../../core/messages';
import { NOTHING_ARCHIVED } from '../../core/recall';
import { OWN_TOOL_NAMES } from '../../core/tool-names';
import { runAgentTurn, toolDefinitionsText, type AgentUi } from '../../llm/agent';
import { createAgentTools, SubagentFailure, type AgentFileEvent, type DelegatePort, type PlanPort, type RecallPort } from '../../llm/agent-tools';
import type { CommandRun as CommandRunResult } from '../../llm/workspace-port';
import { pendingAccounts } from '../../core/branch-account';
import { BranchOffers } from './branch-offers';
import { offerAfterLoop } from '../plan/loop-offer';
import { planMarkdown } from '../plan/plan-chat';
import { NO_PLAN, PlanKeeper } from '../plan/plan-keeper';
import { createEditorTools, selectEditorTools, type EditorToolSelection } from '../../llm/editor-tools';
import { renderAttachments, resolveAttachments, type Attachment } from './attachments';
import { chatPosition, type TurnMetadata } from './chat-history';
import type { ChatSurface, SummaryPreviews, TurnModels, TurnRequest, TurnResult, TurnWorkspace } from './chat-surface';
import { describeToolCall, escapeMarkdown, inlineCode } from './chat-text';
import { CompactionDialog, showOutcome, type SummaryPreview } from '../compaction/compaction-dialog';
import { PARTICIPANT_ID, SHOW_TRANSCRIPT_COMMAND } from '../contributions';
import type { Conversation } from '../conversation/conversation';
import type { ConversationRegistry } from '../conversation/conversation-registry';
import { diffStats, fencedBlock } from '../workspace/diff-preview';
import { errorMessage, READ_AGAIN } from './error-text';
import { InSightChat, type NoticeSurface } from './in-sight-chat';
import { Turn } from './turn';
import { resolveInstructions, type Instruction } from './instructions';
import { contextReport, summaryReport } from '../report/reports';
import { textHash } from './revert-changes';
import type { LongrunSettings } from '../settings';
import { ConversationChangedError } from '../store/errors';
import type { SkillCatalog } from '../skills/skill-catalog';
import { SkillLoader } from '../skills/skill-loader';
import { SubagentRunner, type SubagentRunnerDeps } from '../subagents/subagent-runner';
import { subagentLine } from '../subagents/subagent-transcript';
import { systemPrompt } from './system-prompt';
import type { CacheHints } from '../../llm/cache-hints';
import { coldCompactionOf, turnCacheHints } from '../usage/conversation-cache';

export type { ChatButton, ChatSurface, SummaryPreviews, TurnModels, TurnRequest, TurnResult, TurnWorkspace } from './chat-surface';

/**
 * What one chat request does, free of `vscode`: which conversation and which branch of it the
 * request continues (from the chat's history: VS Code owns the chat, and its Restore Checkpoint,
 * Retry, edited requests, Fork and Start Over decide what the conversation is), what the model sees
 * (exactly that branch, and the instruction files once, in the system prompt), the agent's turn
 * and when to compact, and what the chat is told. `src/vscode/chat-participant.ts` adapts VS Code's
 * request, history and response stream to it.
 */

export interface TurnControllerDeps {
  readonly registry: ConversationRegistry;
  readonly models: TurnModels;
  readonly workspace: TurnWorkspace;
  readonly settings: () => LongrunSettings;
  readonly reporter: { report(outcome: CompactionOutcome, reason: CompactionReason): void };
  readonly log: { info(message: string): void; warn(message: string): void; error(message: string): void };
  readonly now: () => number;
  readonly summaries?: SummaryPreviews;
  /** The skills the agent may load; none without it. */
  readonly skills?: SkillCatalog;
  /** What a subagent's model calls cost, when a price is known; absent: the chat shows its tokens alone. */
  readonly cost?: SubagentRunnerDeps['cost'];
}

/** The smallest window (whole, in tokens) the `plan` tool is offered in. */
export const PLAN_WINDOW = 8_192;
/** The smallest window (whole, in tokens) the `delegate` tool is offered in. */
export const DELEGATE_WINDOW = 16_384;

/** Longest diff (in lines without its headers) shown in the chat itself. */
export const INLINE_DIFF_LINES = 30;
/** Longest tool result the model gets, Longrun's tools' and the editor's alike; also the cap of one attachment. */
export const MAX_RESULT_CHARS = 20_000;
/** Most text all attachments of one request carry together. */
const MAX_ATTACHMENT_CHARS = 3 * MAX_RESULT_CHARS;

export class TurnController {
  /** Anti-loop state, per conversation: two chats do not share it. */
  private active = 0;
  private completed = 0;
  private readonly idleWaiters: Array<() => void> = [];
  /**
   * The request under way, found from the work it started: a change the agent writes, or an
   * approval it asks for, is shown in the chat of the request whose tool call made it, whichever
   * other requests run at the same time.
   */
  private readonly requestOf = new AsyncLocalStorage<Turn>();
  private readonly notices: string[] = [];
  /** The instructions the last request carried: counted in the gauge until the next request. */
  private instructions: readonly Instruction[] = [];
  /** The conversations with a turn under way: a cold cache is not compacted in the middle of one. */
  private readonly turnsUnderWay = new Map<string, number>();

  private readonly dialog: CompactionDialog;
  private readonly branchOffers: BranchOffers;

  constructor(private readonly deps: TurnControllerDeps) {
    this.dialog = new CompactionDialog({
      ...(deps.summaries ? { summaries: deps.summaries } : {}),
      log: deps.log,
      fullness: () => deps.registry.currentIfLoaded()?.assess().fraction ?? 0,
    });
    this.branchOffers = new BranchOffers({
      registry: deps.registry,
      files: deps.workspace.files,
      newId: () => deps.models.newId(),
      now: deps.now,
      said: (message) => this.remember(message),
    });
  }

  /** Handles one request; never throws: a failure becomes the result's error, with the turn named. */
  async handle(request: TurnRequest, chat: ChatSurface, signal: AbortSignal): Promise<TurnResult> {
    this.active++;
    const shown = new InSightChat(chat);
    const turn = new Turn(request, shown, signal);
    try {
      return await this.requestOf.run(turn, () => this.route(turn));
    } catch (error) {
      const redact = (value: string): string => this.deps.models.redact(value);
      this.deps.log.error(`Request failed: ${redact(error instanceof Error ? (error.stack ?? error.message) : String(error))}`);
      return { errorDetails: { message: errorMessage(error, this.deps.settings(), redact) }, metadata: turn.metadata };
    } finally {
      // VS Code takes nothing more from a cancelled request.
      if (!signal.aborted) shown.settle();
      turn.end();
      this.active--;
      this.completed++;
      if (this.active === 0) for (const resolve of this.idleWaiters.splice(0)) resolve();
    }
  }

  private async route(turn: Turn): Promise<TurnResult> {
    const { request, chat } = turn;
    if (request.command === 'new') return this.newConversation(chat);
    const agentRequest = request.command === undefined;
    const conversation = await this.conversationOf(request, agentRequest, chat);
    if (conversation) turn.metadata = metadataOf(conversation);
    switch (request.command) {
      case 'compact':
        return this.compactCommand(conversation, turn);
      case 'context':
        chat.markdown(
          conversation
            ? contextReport(conversation, this.deps.models.modelName(), this.deps.now(), this.deps.models.usageView(conversation))
            : 'There is no conversation yet.',
        );
        return { metadata: { command: 'context', ...(conversation ? metadataOf(conversation) : {}) } };
      case 'summary':
        return this.summaryCommand(conversation, chat);
      default:
        return this.agentTurn(conversation ?? (await this.deps.registry.startNew()), turn);
    }
  }

  /**
   * The conversation, on the branch the chat's history names: the conversation its latest Longrun
   * response names, continued from the last turn the history still holds (a rewound, retried or
   * edited turn is not in it, so the new turn becomes its sibling; a forked chat holds copies of its
   * parent chat's responses, so it continues from the fork point on a branch of its own). A new chat
   * continues the conversation picked with "Open Conversation…", else starts a new one (agent
   * requests only); a chat Longrun answered before turns were kept continues the current one.
   */
  private async conversationOf(request: TurnRequest, agentRequest: boolean, chat: NoticeSurface): Promise<Conversation | undefined> {
    try {
      return await this.conversationIn(request, agentRequest, chat);
    } catch (error) {
      if (!ConversationChangedError.isInstance(error)) throw error;
      // The registry has dropped its out-of-date copy: found again, the conversation is read anew.
      const notice = `${error.message} ${READ_AGAIN}`;
      chat.notice(`\n\n> ${notice}\n\n`);
      this.remember(notice);
      return this.conversationIn(request, agentRequest, chat);
    }
  }

  /** `conversationOf`, its view read back whole; rejects with `ConversationChangedError` when the files changed under it. */
  private async conversationIn(request: TurnRequest, agentRequest: boolean, chat: NoticeSurface): Promise<Conversation | undefined> {
    const found = await this.findConversation(request, agentRequest, chat);
    await found?.loadView();
    return found;
  }

  private async findConversation(request: TurnRequest, agentRequest: boolean, chat: NoticeSurface): Promise<Conversation | undefined> {
    const { registry } = this.deps;
    const position = chatPosition(request.history, PARTICIPANT_ID);
    // A conversation picked for "the next new chat" is for a new chat only; a request elsewhere drops it.
    if (agentRequest && !position.empty) registry.takePendingOpen();
    if (position.conversationId !== undefined) {
      const id = position.conversationId;
      const found = await registry.branch(id, await this.parentIn(id, position.turns));
      if (found) return found;
      this.deps.log.warn(`The chat's conversation ${id} is not in this workspace's storage; starting a new one.`);
      return agentRequest ? registry.startNew() : undefined;
    }
    if (position.empty) {
      if (agentRequest) this.branchOffers.offerRevertOfStartOver(chat, request.chat);
      const picked = registry.takePendingOpen();
      const opened = picked
        ? await registry.open(picked).catch((error: unknown) => {
            // Still the one to continue when it is read again.
            registry.continueInNextChat(picked);
            throw error;
          })
        : undefined;
      if (opened) return opened;
      return agentRequest ? registry.startNew() : registry.current();
    }
    return position.answered || !agentRequest ? registry.current() : registry.startNew();
  }

  /**
   * The turn the next one continues: the last of the chat's turns the conversation holds (null when
   * the chat names none: a conversation from before turns, whose trunk it continues). Turns the
   * records lack (a damaged line) are skipped, said in the log.
   */
  private async parentIn(id: string, turns: readonly string[]): Promise<string | null> {
    for (let i = turns.length - 1; i >= 0; i--) {
      const turn = turns[i]!;
      if (await this.deps.registry.hasTurn(id, turn)) {
        if (i < turns.length - 1) this.deps.log.warn(`Conversation ${id} lacks the chat's latest turns; continuing from turn ${turn}.`);
        return turn;
      }
    }
    if (turns.length > 0) this.deps.log.warn(`Conversation ${id} holds none of the chat's turns; continuing from its start.`);
    return null;
  }

  private async newConversation(chat: ChatSurface): Promise<TurnResult> {
    const conversation = await this.deps.registry.startNew();
    chat.markdown('Started a new conversation. The previous one is kept on disk.');
    return { metadata: { conversationId: conversation.id, command: 'new' } };
  }

  private async compactCommand(conversation: Conversation | undefined, turn: Turn): Promise<TurnResult> {
    const { request, chat, signal } = turn;
    if (!conversation || conversation.isEmpty()) {
      chat.markdown('There is no conversation to compact yet.');
      return { metadata: { command: 'compact', ...(conversation ? metadataOf(conversation) : {}) } };
    }
    // A turn of its own: rewinding the chat past this request takes its compaction back too.
    await conversation.beginTurn(this.deps.models.newId(), request.chat);
    turn.metadata = metadataOf(conversation);
    chat.progress('Compacting conversation…');
    const focus = request.prompt.trim();
    const outcome = await conversation.compact('manual', { ...(focus ? { focus } : {}), signal });
    this.reportOutcome(outcome, 'manual', chat, conversation.id);
    this.tellNotice(conversation, chat);
    return { metadata: { ...metadataOf(conversation), command: 'compact', compactions: outcome.status === 'compacted' ? 1 : 0 } };
  }

  private summaryCommand(conversation: Conversation | undefined, chat: ChatSurface): TurnResult {
    const entry = conversation?.lastCompaction();
    if (!conversation || !entry) {
      chat.markdown('This conversation has not been compacted, so there is no summary yet.');
      return { metadata: { command: 'summary', ...(conversation ? metadataOf(conversation) : {}) } };
    }
    chat.markdown(summaryReport(entry));
    return { metadata: { command: 'summary', ...metadataOf(conversation) } };
  }

  /**
   * The system prompt and the tools of a request, as the workspace is now (trust, folders): Longrun's
   * own tools, and the editor's tools that `longrun.agent.editorTools` or the request (`#name`)
   * names. An untrusted workspace gets no editor tools.
   */
  requestSetup(
    request?: Pick<TurnRequest, 'toolReferences' | 'editorTools'>,
    conversation?: Conversation,
    hooks: RequestHooks = {},
    instructions: readonly Instruction[] = this.instructions,
  ): { system: string; tools: ToolSet; editorTools: EditorToolSelection } {
    const { workspace } = this.deps;
    const trusted = workspace.trusted();
    const window = this.deps.models.contextWindow() ?? Infinity;
    const plan = window >= PLAN_WINDOW;
    const own = createAgentTools(workspace.files, {
      readOnly: !trusted,
      ...(trusted && workspace.commands ? { commands: workspace.commands } : {}),
      maxResultChars: MAX_RESULT_CHARS,
      ...(hooks.onFileEvent ? { onFileEvent: hooks.onFileEvent } : {}),
      ...(hooks.onCommandRun ? { onCommandRun: hooks.onCommandRun } : {}),
      // Offered in every request, so that the tool definitions (and their count) do not change when
      // a compaction comes; the system prompt points at it once there is something to recall.
      recall: conversation ?? NO_ARCHIVE,
      // Offered when there are skills to load: it comes and goes with the system prompt's list of them.
      ...(this.deps.skills?.skills().length ? { skills: new SkillLoader(this.deps.skills, conversation) } : {}),
      // Offered in every request of a window they fit in (an untrusted workspace included: the plan
      // changes no file, subagents only read). Their definitions take about 480 and 390 tokens: a
      // small local model's window keeps that room for the conversation, the plan's first since it is
      // what a turn goes on from after a summary.
      ...(plan ? { plan: hooks.plan ?? NO_PLAN } : {}),
      ...(window >= DELEGATE_WINDOW ? { delegate: hooks.delegate ?? NO_SUBAGENTS } : {}),
    });
    const port = request?.editorTools;
    const editorTools =
      trusted && port
        ? selectEditorTools(port.list(), {
            setting: this.deps.settings().agent.editorTools,
            requested: [...(request?.toolReferences ?? [])],
            reserved: OWN_TOOL_NAMES,
          })
        : { offered: [], skipped: [] };
    const tools = { ...own, ...(port ? createEditorTools(port, editorTools.offered, { maxResultChars: MAX_RESULT_CHARS }) : {}) };
    return { system: this.systemPromptNow(instructions, plan), tools, editorTools };
  }

  private systemPromptNow(instructions: readonly Instruction[], plan: boolean): string {
    const { workspace } = this.deps;
    return systemPrompt({
      trusted: workspace.trusted(),
      folders: workspace.roots().map((r) => r.name),
      instructions,
      skills: this.deps.skills?.skills() ?? [],
      plan,
    });
  }

  /** The names of Longrun's own tools, all of them whatever the workspace's trust. */
  ownToolNames(): ReadonlySet<string> {
    return OWN_TOOL_NAMES;
  }

  /** What every request carries besides the messages, as text, for the token count. */
  requestOverheadText(): string {
    const { system, tools } = this.requestSetup();
    // Same text as each request sets, so the gauge reads the same before and after a reload.
    return `${system}\n${toolDefinitionsText(tools)}`;
  }

  private async agentTurn(conversation: Conversation, turn: Turn): Promise<TurnResult> {
    const { request, chat, signal } = turn;
    const { models } = this.deps;
    const model = await models.languageModel();
    if (!model) {
      return {
        errorDetails: {
          message: 'No language model is selected. Pick one in the chat, or configure longrun.endpoints and run "Longrun: Set API Key".',
        },
        metadata: turn.metadata,
      };
    }
    // This request's own: another chat's request may set the controller's meanwhile.
    const instructions = await resolveInstructions(request.instructions);
    this.instructions = instructions;
    await this.refreshSkills(signal);
    const attachments = await this.attachmentsOf(request, signal).catch((error: unknown) => {
      if (signal.aborted) return undefined;
      throw error;
    });
    if (!attachments) return { metadata: turn.metadata };
    this.branchOffers.offerRevert(conversation, chat, request.chat);
    const left = await this.branchOffers.leftBehind(conversation, signal);
    const midTurn = (this.turnsUnderWay.get(conversation.id) ?? 0) > 0;
    this.turnsUnderWay.set(conversation.id, (this.turnsUnderWay.get(conversation.id) ?? 0) + 1);
    try {
      await conversation.beginTurn(models.newId(), request.chat);
      turn.metadata = metadataOf(conversation);
      this.branchOffers.show(left, conversation, chat);
      // What a compaction in the background has to say is said in the next chat.
      this.tellNotice(conversation, chat);
      await this.compactIfCacheExpired(conversation, chat, midTurn);
      const subagents = this.subagentsFor(conversation, chat);
      const { system, tools, editorTools } = this.requestSetup(
        request,
        conversation,
        {
          onFileEvent: (event) => this.recordAgentFile(conversation, event),
          onCommandRun: (run) => this.recordCommand(conversation, run),
          plan: new PlanKeeper({
            conversation,
            roots: () => this.deps.workspace.roots(),
            newId: () => models.newId(),
            now: this.deps.now,
            changed: (plan) => chat.markdown(planMarkdown(plan)),
          }),
          delegate: subagents,
        },
        instructions,
      );
      const hints = turnCacheHints(
        () => models.providerKind(),
        () => this.deps.settings().cache,
        { conversationId: conversation.id, ...(request.chat !== undefined ? { chat: request.chat } : {}), records: () => conversation.log() },
      );
      models.setRequestOverhead(`${system}\n${toolDefinitionsText(tools)}`);
      models.setAgentPrefix({ system, tools, cache: { hints, stableEnd: () => conversation.stableEnd() } });
      this.reportSkippedTools(editorTools, request, chat);
      const carried = pendingAccounts(conversation.log());
      if (carried.length > 0) chat.markdown('\n\n> What the turns left behind had done goes to the model with this request, as you asked.\n\n');
      await conversation.append(userTurn(request.prompt, attachments, models.newId(), this.deps.now(), carried));
      const result = await this.runAgent(conversation, model, system, tools, chat, signal, hints).finally(() => subagents.idle());
      return this.ended(conversation, result, chat);
    } finally {
      const left = (this.turnsUnderWay.get(conversation.id) ?? 1) - 1;
      if (left > 0) this.turnsUnderWay.set(conversation.id, left);
      else this.turnsUnderWay.delete(conversation.id);
    }
  }

  /**
   * Reads the skills folders again, once per turn, so the system prompt lists the skills on disk now;
   * a failure keeps the list the last turn had, said in the log.
   */
  private async refreshSkills(signal: AbortSignal): Promise<void> {
    try {
      await this.deps.skills?.refresh(signal);
    } catch (error) {
      // Stopped: the turn's next step sees the signal and ends it.
      if (!signal.aborted) this.deps.log.warn(`The skills folders could not be read: ${errorText(error)}`);
    }
  }

  /**
   * At the start of a turn, when the provider's cache has expired since the conversation's last request:
   * the pruning that would otherwise wait, and past the warning level the summary prepared ahead, now,
   * since the next request re-sends everything anyway (see `decideColdCompaction`).
   */
  private async compactIfCacheExpired(conversation: Conversation, chat: NoticeSurface, midTurn: boolean): Promise<void> {
    const { settings, now } = this.deps;
    const cold = coldCompactionOf(conversation, settings().cache, now(), midTurn);
    if (!cold) return;
    if (cold.decision.kind !== 'prune') {
      this.deps.log.info(`The provider's cache has expired; not compacting for it: ${cold.decision.reason}.`);
      return;
    }
    const outcome = await conversation.compact('cache-expired', { applyAhead: cold.decision.applyAhead });
    if (outcome.status === 'compacted') {
      const minutes = Math.round((now() - cold.since) / 60_000);
      chat.notice(
        `\n\n> The provider's prompt cache expired${minutes > 0 ? ` ${minutes} min ago` : ''}, so this request is read at full price whatever it holds: Longrun compacted first what it had left in place to keep the cache.\n\n`,
      );
    }
    this.reportOutcome(outcome, 'cache-expired', chat, conversation.id);
  }

  private async runAgent(
    conversation: Conversation,
    model: LanguageModel,
    system: string,
    tools: ToolSet,
    chat: NoticeSurface,
    signal: AbortSignal,
    cacheHints: () => CacheHints | undefined,
  ): ReturnType<typeof runAgentTurn> {
    const { models, settings } = this.deps;
    // "Preview" on the compaction question: the compaction it allows shows its summary first.
    const state = { preview: false };
    const advice = models.truncationAdvice();
    return runAgentTurn({
      model,
      system,
      tools,
      maxSteps: settings().agent.maxSteps,
      signal,
      conversation: {
        view: () => conversation.view(),
        append: (records) => conversation.append(records),
        assess: () => conversation.assess(),
        compact: async (reason, compactSignal, stated) => {
          // A stated window binds the summary request too: the summarizer a compaction asks for is made for the window learned.
          if (stated !== undefined) models.learnWindow(stated.limit, stated.why, stated.lowerBound);
          // Only the compaction the question allowed is previewed; an overflow cannot wait for the user.
          const review = state.preview && reason === 'threshold' ? this.dialog.previewIn(conversation, chat, compactSignal) : undefined;
          state.preview = false;
          return this.compactForAgent(conversation, reason, compactSignal, review);
        },
        requestBasis: () => conversation.requestBasis(),
        newId: () => models.newId(),
        stableEnd: () => conversation.stableEnd(),
        log: () => conversation.log(),
        guard: conversation.guard(),
      },
      cacheHints,
      now: this.deps.now,
      ui: this.agentUi(conversation, chat, state),
      overflowRetriesPerTurn: settings().compaction.overflowRetriesPerTurn,
      // Always explicit: with tracing off this also keeps integrations other extensions register away from Longrun's calls.
      telemetry: models.telemetry().settings('longrun.agent', { 'longrun.conversation': conversation.id }),
      maxOutputTokens: () => models.maxOutputTokens(),
      timeouts: settings().timeouts,
      // A server's usage is its own count of what it read; VS Code's models report a local estimate.
      detectTruncation: models.servedByEndpoint(),
      ...(advice ? { truncationAdvice: advice } : {}),
      windowIsLowerBound: () => models.windowIsLowerBound(),
    });
  }

  private agentUi(conversation: Conversation, chat: NoticeSurface, state: { preview: boolean }): AgentUi {
    return {
      text: (delta) => chat.markdown(delta),
      toolCall: (toolName, input) => chat.progress(describeToolCall(toolName, input)),
      compacting: () => chat.progress('Compacting conversation…'),
      compacted: (outcome, reason) => {
        this.reportOutcome(outcome, reason, chat, conversation.id);
        this.tellNotice(conversation, chat);
      },
      notice: (message) => {
        chat.notice(`\n\n> ${message}\n\n`);
        this.remember(message);
      },
      ...(this.deps.settings().requireConfirmation
        ? {
            confirmCompaction: async (signal: AbortSignal) => {
              const answer = await this.dialog.ask(chat, signal);
              state.preview = answer === 'preview';
              return answer !== 'not-now';
            },
          }
        : {}),
    };
  }

  /** What the chat is told once the agent's turn is over, and the compaction it may leave for the background. */
  private ended(conversation: Conversation, result: Awaited<ReturnType<typeof runAgentTurn>>, chat: NoticeSurface): TurnResult {
    const { models, settings } = this.deps;
    models.observeUsage(lastUsage(conversation.log()));
    this.dialog.settleAll();
    this.compactInBackgroundIfNeeded(conversation);
    const metadata = { ...metadataOf(conversation), compactions: result.compactions };
    if (result.cancelled) return { metadata };
    if (result.error !== undefined) {
      const message = errorMessage(result.error, settings(), (value) => models.redact(value));
      this.deps.log.warn(`Request failed: ${message}`);
      return { errorDetails: { message }, metadata };
    }
    if (result.compactionLoop) {
      this.remember(offerAfterLoop(conversation.id, chat));
    } else if (result.finishReason === 'tool-calls') {
      chat.markdown(`\n\n> Stopped after ${result.steps} steps (longrun.agent.maxSteps). Say "continue" to go on.`);
    }
    return { metadata };
  }

  /**
   * The subagents of a turn: they write to `conversation` (on its turn), read the workspace, run
   * only the commands the user's allow list runs unasked (in a trusted workspace), and show in `chat`
   * as a line when they end, with a button that opens their transcript.
   */
  private subagentsFor(conversation: Conversation, chat: ChatSurface): SubagentRunner {
    const { models, workspace, settings } = this.deps;
    const commands = workspace.trusted() && settings().agent.allowedCommands.length > 0 ? workspace.allowedCommands : undefined;
    return new SubagentRunner({
      model: () => models.subagentModel(),
      settings,
      files: workspace.files,
      ...(commands ? { commands } : {}),
      parent: conversation,
      folders: () => workspace.roots().map((r) => r.name),
      now: this.deps.now,
      newId: () => models.newId(),
      ui: {
        started: (run) => chat.progress(`Subagent at work (${run.model}): ${run.task.replace(/\s+/g, ' ').slice(0, 100)}…`),
        ended: (run) => {
          chat.markdown(`\n\n${subagentLine(run)}\n\n`);
          chat.button({ command: SHOW_TRANSCRIPT_COMMAND, title: 'Show transcript', arguments: [conversation.id, run.id] });
        },
      },
      maxResultChars: MAX_RESULT_CHARS,
      telemetry: (id) => models.telemetry().settings('longrun.subagent', { 'longrun.conversation': conversation.id, 'longrun.subagent': id }),
      ...(this.deps.cost ? { cost: this.deps.cost } : {}),
      countText: (text) => conversation.countText(text),
      redact: (text) => models.redact(text),
      warn: (message) => this.deps.log.warn(message),
    });
  }

  /**
   * A file the agent read or wrote, recorded in the conversation of the turn that did it: the
   * ledger's event, and for a write to disk the change itself, so that it can be reverted when the
   * chat is rewound past this turn.
   */
  private recordAgentFile(conversation: Conversation, event: AgentFileEvent): void {
    const records: LogRecord[] = [{ type: 'file', event: { kind: event.kind, path: event.path, actor: 'agent', at: this.deps.now() } }];
    if (event.written && event.kind !== 'read') {
      const change = fileChange(this.deps.models.newId(), event.path, event.kind, event.written.before, event.written.after, textHash);
      records.push({ type: 'change', change });
    }
    void conversation.append(records).catch((error: unknown) => this.deps.log.warn(`Could not record a file operation: ${String(error)}`));
  }

  /** A command the agent ran and how it ended, recorded in the conversation of the turn that ran it, before the model reads its result. */
  private async recordCommand(conversation: Conversation, run: CommandRunResult): Promise<void> {
    const record: LogRecord = {
      type: 'command',
      run: {
        command: run.command,
        ...(run.exitCode !== undefined && run.timedOutAfterSeconds === undefined ? { exitCode: run.exitCode } : {}),
        ...(run.timedOutAfterSeconds !== undefined ? { stopped: true } : {}),
        at: this.deps.now(),
      },
    };
    await conversation.append([record]).catch((error: unknown) => this.deps.log.warn(`Could not record a command run: ${String(error)}`));
  }

  /** What the user attached to the request, read and capped like a tool result. */
  private attachmentsOf(request: TurnRequest, signal: AbortSignal): Promise<Attachment[]> {
    if (request.attachments.length === 0) return Promise.resolve([]);
    return resolveAttachments(request.attachments, {
      roots: this.deps.workspace.roots(),
      files: this.deps.workspace.files,
      maxChars: MAX_RESULT_CHARS,
      maxTotalChars: MAX_ATTACHMENT_CHARS,
      signal,
    });
  }

  /** A tool the user named with `#` that is not offered is said in the chat; any other, in the log. */
  private reportSkippedTools(selection: EditorToolSelection, request: TurnRequest, chat: NoticeSurface): void {
    const named = new Set(request.toolReferences);
    for (const { name, reason } of selection.skipped) {
      if (named.has(name)) {
        chat.notice(`\n\n> The tool ${inlineCode(name)} is not offered to the agent: ${reason}.\n\n`);
        this.remember(`The tool ${name} is not offered to the agent: ${reason}.`);
      } else {
        this.deps.log.info(`longrun.agent.editorTools names ${name}, which is not offered: ${reason}.`);
      }
    }
    if (!this.deps.workspace.trusted() && (named.size > 0 || this.deps.settings().agent.editorTools.length > 0)) {
      this.deps.log.info('The workspace is not trusted, so no tools of other extensions are offered to the agent.');
    }
  }

  /** The chat of the request under way (the agent's edits and questions are shown there). */
  activeSurface(): ChatSurface | undefined {
    return this.requestOf.getStore()?.shownIn();
  }

  /**
   * Shows a change the agent made in the chat of the request under way: the file and its counts,
   * then the whole diff. A short diff is shown in place; a longer one behind a "Show diff" button
   * that opens all of it, since the chat has no collapsible block and shows code at full height.
   */
  showChange(change: { readonly kind: string; readonly path: string; readonly diff: string }): void {
    const chat = this.activeSurface();
    if (!chat) return;
    const { added, removed, bodyLines } = diffStats(change.diff);
    chat.markdown(`\n\n**${escapeMarkdown(change.path)}** ${change.kind} (+${added} −${removed})\n\n`);
    if (bodyLines <= INLINE_DIFF_LINES) chat.markdown(`${fencedBlock(change.diff, 'diff')}\n`);
    else chat.diffButton(change.path, change.diff, `Show diff (${bodyLines} lines)`);
  }

  /** Says in the chat what the conversation's compactions have to say and have not said yet. */
  private tellNotice(conversation: Conversation, chat: NoticeSurface): void {
    const notice = conversation.takeNotice();
    if (!notice) return;
    chat.notice(`\n\n> ${notice}\n\n`);
    this.remember(notice);
  }

  /** Notices shown in the chat (why a compaction ran, a cut prompt, …) also go to the log. */
  private remember(message: string): void {
    this.deps.log.info(`Said in the chat: ${message}`);
    this.notices.push(message);
    if (this.notices.length > 20) this.notices.shift();
  }

  /** The latest notices shown in the chat, newest last. */
  recentNotices(): readonly string[] {
    return this.notices;
  }

  /** Requests handled so far, and whether one is under way (for the status of tests and tools). */
  turns(): { readonly active: number; readonly completed: number } {
    return { active: this.active, completed: this.completed };
  }

  /** Resolves when no request is under way. */
  idle(): Promise<void> {
    if (this.active === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * A turn that ends at the critical level is compacted right away, in the background, so the
   * next request does not wait for it (the conversation may go on meanwhile: the result is
   * applied to whatever has been appended since).
   */
  private compactInBackgroundIfNeeded(conversation: Conversation): void {
    if (conversation.isCompacting()) return;
    // With confirmation on, the next turn asks in the chat: only a compaction that needs no question runs here.
    const decision = conversation.guard().decide({ at: 'end-of-turn', confirm: this.deps.settings().requireConfirmation });
    if (decision.kind !== 'compact') return;
    void this.compactForAgent(conversation, 'threshold', new AbortController().signal).then(
      (outcome) => this.deps.reporter.report(outcome, 'threshold'),
      (error: unknown) => this.deps.log.warn(`The compaction in the background failed: ${errorText(error)}`),
    );
  }

  /** Compaction asked for by the agent loop (the loop has asked the user first when they want that). */
  private async compactForAgent(
    conversation: Conversation,
    reason: CompactionReason,
    signal: AbortSignal,
    preview?: SummaryPreview,
  ): Promise<CompactionOutcome & { joined?: boolean }> {
    if (!preview) return conversation.compact(reason, { signal });
    try {
      return await conversation.compact(reason, { signal, review: preview.review });
    } finally {
      preview.ended();
    }
  }

  /**
   * "Carry over what they learned" (see `BranchOffers`): the account joins the branch that holds
   * `turn`, for its next request. False when the conversation or the turn is gone.
   */
  carryAccount(conversationId: unknown, turn: unknown, text: unknown, turns: unknown): Promise<boolean> {
    return this.branchOffers.carry(conversationId, turn, text, turns);
  }

  /** The answer to a question the chat asked (see `CompactionDialog.answer`). */
  answerCompaction(id: unknown, compact: unknown): boolean {
    return this.dialog.answer(id, compact);
  }

  /** Questions waiting for an answer (for tests). */
  pendingQuestions(): string[] {
    return this.dialog.pending();
  }

  private reportOutcome(
    outcome: CompactionOutcome & { joined?: boolean },
    reason: CompactionReason,
    chat: NoticeSurface,
    conversationId: string,
  ): void {
    // A compaction joined while it ran elsewhere was logged where it started.
    if (!outcome.joined) this.deps.reporter.report(outcome, reason);
    showOutcome(outcome, reason, chat, conversationId, this.deps.summaries !== undefined);
  }
}

/** The result's metadata for a request on `conversation`: its id and its branch's leaf turn. */
function metadataOf(conversation: Conversation): TurnMetadata {
  const turnId = conversation.leaf();
  return { conversationId: conversation.id, ...(turnId !== null ? { turnId } : {}) };
}

/**
 * The user's request as it is appended: the prompt, then what they attached, in one message; the
 * attached files recorded as read by the user, in the same write.
 */
function userTurn(prompt: string, attachments: readonly Attachment[], id: string, at: number, carried: readonly string[] = []): LogRecord[] {
  // One text part: models that join parts without a separator must not run the prompt into the first block.
  const blocks = [prompt, ...(attachments.length > 0 ? [renderAttachments(attachments)] : []), ...carried];
  const content = [text(blocks.join('\n\n'))];
  const reads: LogRecord[] = attachments.flatMap((a) =>
    a.readPath !== undefined ? [{ type: 'file' as const, event: { kind: 'read' as const, path: a.readPath, actor: 'user' as const, at } }] : [],
  );
  return [{ type: 'message', message: { id, role: 'user', content } }, ...reads];
}

/** What a request's own tools report to the turn: files the agent touched, commands it ran, and its plan. */
interface RequestHooks {
  readonly onFileEvent?: (event: AgentFileEvent) => void;
  readonly onCommandRun?: (run: CommandRunResult) => Promise<void>;
  readonly plan?: PlanPort;
  readonly delegate?: DelegatePort;
}

/** What `recall` answers in a request made outside any conversation (the count of the tools' definitions). */
const NO_ARCHIVE: RecallPort = { recall: () => NOTHING_ARCHIVED };

/** What `delegate` does outside any conversation (the count of the tools' definitions): no subagent runs there. */
const NO_SUBAGENTS: DelegatePort = {
  delegate: () => Promise.reject(new SubagentFailure('Subagent failed: no conversation is open, so no subagent can run. Done so far: nothing.')),
};
