import type { LanguageModel, ToolSet } from 'ai';
import type { CompactionOutcome } from '../../core/compaction';
import { errorText } from '../../core/errors';
import { fileChange } from '../../core/file-changes';
import { lastUsage, type CompactionReason, type LogRecord } from '../../core/history';
import { text } from '../../core/messages';
import { pendingAccounts } from '../../core/branch-account';
import { mayCutPrompts } from '../../core/provider-kind';
import { runAgentTurn, type AgentUi } from '../../llm/agent';
import type { AgentFileEvent } from '../../llm/agent-tools';
import type { CacheHints } from '../../llm/cache-hints';
import type { EditorToolSelection } from '../../llm/editor-tools';
import type { CommandRun as CommandRunResult } from '../../llm/workspace-port';
import type { CompactionDialog, SummaryPreview } from '../compaction/compaction-dialog';
import { SHOW_TRANSCRIPT_COMMAND } from '../contributions';
import type { Conversation } from '../conversation/conversation';
import { offerAfterLoop } from '../plan/loop-offer';
import { planMarkdown } from '../plan/plan-chat';
import { PlanKeeper } from '../plan/plan-keeper';
import type { LongrunSettings } from '../settings';
import type { SkillCatalog } from '../skills/skill-catalog';
import { SubagentRunner, type SubagentRunnerDeps } from '../subagents/subagent-runner';
import { subagentLine } from '../subagents/subagent-transcript';
import { coldCompactionOf, turnCacheHints } from '../usage/conversation-cache';
import { renderAttachments, type Attachment } from './attachments';
import type { BranchOffers } from './branch-offers';
import type { ChatNotices } from './chat-notices';
import type { ChatSurface, TurnModels, TurnRequest, TurnResult, TurnWorkspace } from './chat-surface';
import { describeToolCall, inlineCode } from './chat-text';
import { errorMessage } from './error-text';
import type { NoticeSurface } from './in-sight-chat';
import { resolveInstructions } from './instructions';
import { MAX_RESULT_CHARS, type RequestSetup } from './request-setup';
import { textHash } from './revert-changes';
import { metadataOf, type Turn } from './turn';

export interface AgentTurnsDeps {
  readonly models: TurnModels;
  readonly workspace: TurnWorkspace;
  readonly settings: () => LongrunSettings;
  readonly reporter: { report(outcome: CompactionOutcome, reason: CompactionReason): void };
  readonly log: { info(message: string): void; warn(message: string): void };
  readonly now: () => number;
  readonly setup: RequestSetup;
  readonly notices: ChatNotices;
  readonly offers: BranchOffers;
  /** The compaction question asked in the chat, and the preview it may open. */
  readonly dialog: CompactionDialog;
  /** The skills the agent may load, read again at the start of every turn. */
  readonly skills?: SkillCatalog;
  /** What a subagent's model calls cost, when a price is known; absent: the chat shows its tokens alone. */
  readonly cost?: SubagentRunnerDeps['cost'];
}

/**
 * The agent's turn of a chat request: its setup (instructions, skills, attachments, the revert
 * offers of a rewound chat, a cold cache's compaction), the agent loop with the tools the request
 * offers, what the tools did recorded in the conversation, and what the chat is told when it ends,
 * with the compaction it may leave for the background.
 */
export class AgentTurns {
  /** The conversations with a turn under way: a cold cache is not compacted in the middle of one. */
  private readonly turnsUnderWay = new Map<string, number>();

  constructor(private readonly deps: AgentTurnsDeps) {}

  /** Runs the agent's turn for the request `turn` on `conversation`. */
  async run(conversation: Conversation, turn: Turn): Promise<TurnResult> {
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
    // This request's own: another chat's request may make its own meanwhile.
    const instructions = await resolveInstructions(request.instructions);
    await this.refreshSkills(signal);
    const attachments = await this.deps.setup.attachmentsOf(request, signal).catch((error: unknown) => {
      if (signal.aborted) return undefined;
      throw error;
    });
    if (!attachments) return { metadata: turn.metadata };
    this.deps.offers.offerRevert(conversation, chat, request.chat);
    const left = await this.deps.offers.leftBehind(conversation, signal);
    const midTurn = (this.turnsUnderWay.get(conversation.id) ?? 0) > 0;
    this.turnsUnderWay.set(conversation.id, (this.turnsUnderWay.get(conversation.id) ?? 0) + 1);
    try {
      await conversation.beginTurn(models.newId(), request.chat);
      turn.metadata = metadataOf(conversation);
      this.deps.offers.show(left, conversation, chat);
      // What a compaction in the background has to say is said in the next chat.
      this.deps.notices.tell(conversation, chat);
      await this.compactIfCacheExpired(conversation, chat, midTurn);
      const subagents = this.subagentsFor(conversation, chat);
      const { system, tools, editorTools } = this.deps.setup.build(
        models.contextWindow(),
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
    this.deps.notices.reportOutcome(outcome, 'cache-expired', chat, conversation.id);
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
          const review = state.preview && reason === 'threshold' ? this.deps.dialog.previewIn(conversation, chat, compactSignal) : undefined;
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
      // A server's usage is its own count of what it read (VS Code's models report a local estimate),
      // and only a server that may cut a prompt silently is suspected of it.
      detectTruncation: models.servedByEndpoint() && mayCutPrompts(models.providerKind()),
      statedWindow: () => models.statedWindow?.(),
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
        this.deps.notices.reportOutcome(outcome, reason, chat, conversation.id);
        this.deps.notices.tell(conversation, chat);
      },
      notice: (message) => this.deps.notices.say(chat, message),
      ...(this.deps.settings().requireConfirmation
        ? {
            confirmCompaction: async (signal: AbortSignal) => {
              const answer = await this.deps.dialog.ask(chat, signal);
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
    this.deps.dialog.settleAll();
    this.compactInBackgroundIfNeeded(conversation);
    const metadata = { ...metadataOf(conversation), compactions: result.compactions };
    if (result.cancelled) return { metadata };
    if (result.error !== undefined) {
      const message = errorMessage(result.error, settings(), (value) => models.redact(value));
      this.deps.log.warn(`Request failed: ${message}`);
      return { errorDetails: { message }, metadata };
    }
    if (result.compactionLoop) {
      this.deps.notices.remember(offerAfterLoop(conversation.id, chat));
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

  /** A tool the user named with `#` that is not offered is said in the chat; any other, in the log. */
  private reportSkippedTools(selection: EditorToolSelection, request: TurnRequest, chat: NoticeSurface): void {
    const named = new Set(request.toolReferences);
    for (const { name, reason } of selection.skipped) {
      if (named.has(name)) {
        chat.notice(`\n\n> The tool ${inlineCode(name)} is not offered to the agent: ${reason}.\n\n`);
        this.deps.notices.remember(`The tool ${name} is not offered to the agent: ${reason}.`);
      } else {
        this.deps.log.info(`longrun.agent.editorTools names ${name}, which is not offered: ${reason}.`);
      }
    }
    if (!this.deps.workspace.trusted() && (named.size > 0 || this.deps.settings().agent.editorTools.length > 0)) {
      this.deps.log.info('The workspace is not trusted, so no tools of other extensions are offered to the agent.');
    }
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
