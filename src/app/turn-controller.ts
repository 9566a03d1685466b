import type { LanguageModel, ToolSet } from 'ai';
import type { CompactionOutcome } from '../core/compaction';
import { INITIAL_GUARD, mayAutoCompact, noteCompaction, type GuardState } from '../core/compaction-guard';
import { fileChange } from '../core/file-changes';
import { lastUsage, type CompactionEntry, type CompactionReason, type LogRecord } from '../core/history';
import { text } from '../core/messages';
import { NOTHING_ARCHIVED } from '../core/recall';
import { OWN_TOOL_NAMES, TOOL_NAMES } from '../core/tool-names';
import type { ReportedUsage } from '../core/usage-calibration';
import { runAgentTurn, toolDefinitionsText, type AgentUi } from '../llm/agent';
import { createAgentTools, type AgentFileEvent, type RecallPort } from '../llm/agent-tools';
import { createEditorTools, selectEditorTools, type EditorToolSelection, type EditorToolsPort } from '../llm/editor-tools';
import type { LongrunTelemetry } from '../llm/telemetry';
import type { CommandPort, WorkspacePort } from '../llm/workspace-port';
import { renderAttachments, resolveAttachments, type AttachedReference, type Attachment } from './attachments';
import { chatPosition, type TurnMetadata } from './chat-history';
import { ANSWER_COMMAND, EDIT_SUMMARY_COMMAND, PARTICIPANT_ID, REVERT_COMMAND } from './contributions';
import type { Conversation } from './conversation';
import type { ConversationRegistry } from './conversation-registry';
import { diffStats, fencedBlock } from './diff-preview';
import { errorMessage } from './error-text';
import { resolveInstructions, type Instruction, type InstructionSource } from './instructions';
import { compactionSentence, contextReport, summaryReport } from './reports';
import { revertOffer, textHash, type RevertOffer } from './revert-changes';
import type { LongrunSettings } from './settings';
import { systemPrompt } from './system-prompt';
import type { WorkspaceRoot } from './path-guard';

/**
 * What one chat request does, free of `vscode`: which conversation and which branch of it the
 * request continues (from the chat's history: VS Code owns the chat, and its Restore Checkpoint,
 * Retry, edited requests, Fork and Start Over decide what the conversation is), what the model sees
 * (exactly that branch, and the instruction files once, in the system prompt), the agent's turn
 * and when to compact, and what the chat is told. `src/vscode/chat-participant.ts` adapts VS Code's
 * request, history and response stream to it.
 */

/** A button in the chat that runs a command. */
export interface ChatButton {
  readonly command: string;
  readonly title: string;
  readonly arguments?: readonly unknown[];
}

/** The chat a turn writes to: VS Code's response stream, or a fake in tests. */
export interface ChatSurface {
  markdown(text: string): void;
  progress(text: string): void;
  button(button: ChatButton): void;
  /** A button that opens `diff` (the change of `path`) in an editor. */
  diffButton(path: string, diff: string, title: string): void;
}

/** A chat request, read into plain values. */
export interface TurnRequest {
  readonly prompt: string;
  /** The slash command (`compact`, `context`, `summary`, `new`), if any. */
  readonly command?: string;
  /** VS Code's history of the chat (`context.history`), read by shape. */
  readonly history: readonly unknown[];
  /** The chat the request came from (VS Code's chat session), when known. */
  readonly chat?: string;
  /** What the user attached (instruction files aside). */
  readonly attachments: readonly AttachedReference[];
  /** The instruction files VS Code attached. */
  readonly instructions: readonly InstructionSource[];
  /** Tools the user named with `#`. */
  readonly toolReferences: readonly string[];
  /** The editor's tools, run on behalf of this request. */
  readonly editorTools?: EditorToolsPort;
}

/** What VS Code is given back: the result's metadata names the conversation and the turn. */
export interface TurnResult {
  readonly metadata: TurnMetadata;
  readonly errorDetails?: { readonly message: string };
}

/** The model in use and what goes with it: the editor's session implements it. */
export interface TurnModels {
  languageModel(): Promise<LanguageModel | undefined>;
  /** Makes the summarizer match the model and settings now. */
  prepareSummarizer(): Promise<void>;
  learnWindow(limit: number, why?: string, lowerBound?: boolean): void;
  maxOutputTokens(): number | undefined;
  telemetry(): LongrunTelemetry;
  truncationAdvice(): string | undefined;
  observeUsage(usage: ReportedUsage | undefined): void;
  redact(text: string): string;
  /** Whether the model runs on one of Longrun's own endpoints (its usage is the server's own count). */
  servedByEndpoint(): boolean;
  /** What every request carries besides the messages, for the gauge's count. */
  setRequestOverhead(text: string): void;
  modelName(): string | undefined;
  newId(): string;
}

/** The workspace as a turn sees it. */
export interface TurnWorkspace {
  readonly files: WorkspacePort;
  /** The terminal of `run_command`; offered only in a trusted workspace. */
  readonly commands?: CommandPort;
  trusted(): boolean;
  roots(): readonly WorkspaceRoot[];
}

/** Shows a compaction's summary before it is applied, in an editor (see `summary-documents.ts`). */
export interface SummaryPreviews {
  preview(conversation: Conversation, entry: CompactionEntry, signal: AbortSignal): Promise<string | undefined>;
  accept(conversationId: string, entryId: string): Promise<boolean>;
  discard(conversationId: string, entryId: string): Promise<boolean>;
  ended(conversationId: string, entryId: string): void;
}

export interface TurnControllerDeps {
  readonly registry: ConversationRegistry;
  readonly models: TurnModels;
  readonly workspace: TurnWorkspace;
  readonly settings: () => LongrunSettings;
  readonly reporter: { report(outcome: CompactionOutcome, reason: CompactionReason): void };
  readonly log: { info(message: string): void; warn(message: string): void; error(message: string): void };
  readonly now: () => number;
  readonly summaries?: SummaryPreviews;
}

/** An answer to the compaction question. */
type CompactionAnswer = 'compact' | 'preview' | 'not-now';

/** A compaction's summary shown to the user before it is applied, and what to do once it is over. */
interface SummaryPreview {
  readonly review: (entry: CompactionEntry) => Promise<string | undefined>;
  readonly ended: () => void;
}

/** Longest diff (in lines without its headers) shown in the chat itself. */
export const INLINE_DIFF_LINES = 30;
/** Longest tool result the model gets, Longrun's tools' and the editor's alike; also the cap of one attachment. */
export const MAX_RESULT_CHARS = 20_000;
/** Most text all attachments of one request carry together. */
const MAX_ATTACHMENT_CHARS = 3 * MAX_RESULT_CHARS;

export class TurnController {
  /** Anti-loop state, per conversation: two chats do not share it. */
  private readonly guards = new Map<string, GuardState>();
  private active = 0;
  private completed = 0;
  private readonly idleWaiters: Array<() => void> = [];
  /** The chat of the request under way, where the agent's edits and questions are shown. */
  private activeChat: ChatSurface | undefined;
  private readonly notices: string[] = [];
  private readonly questions = new Map<string, (answer: CompactionAnswer) => void>();
  private questionCount = 0;
  /** The instructions the last request carried: counted in the gauge until the next request. */
  private instructions: readonly Instruction[] = [];

  constructor(private readonly deps: TurnControllerDeps) {}

  /** Handles one request; never throws: a failure becomes the result's error, with the turn named. */
  async handle(request: TurnRequest, chat: ChatSurface, signal: AbortSignal): Promise<TurnResult> {
    this.active++;
    const where: { metadata: TurnMetadata } = { metadata: {} };
    try {
      return await this.route(request, chat, signal, where);
    } catch (error) {
      const redact = (value: string): string => this.deps.models.redact(value);
      this.deps.log.error(`Request failed: ${redact(error instanceof Error ? (error.stack ?? error.message) : String(error))}`);
      return { errorDetails: { message: errorMessage(error, this.deps.settings(), redact) }, metadata: where.metadata };
    } finally {
      this.active--;
      this.completed++;
      if (this.active === 0) for (const resolve of this.idleWaiters.splice(0)) resolve();
    }
  }

  private async route(request: TurnRequest, chat: ChatSurface, signal: AbortSignal, where: { metadata: TurnMetadata }): Promise<TurnResult> {
    if (request.command === 'new') return this.newConversation(chat);
    const agentRequest = request.command === undefined;
    const conversation = await this.conversationOf(request, agentRequest, chat);
    if (conversation) where.metadata = metadataOf(conversation);
    switch (request.command) {
      case 'compact':
        return this.compactCommand(conversation, request, chat, signal, where);
      case 'context':
        chat.markdown(conversation ? contextReport(conversation, this.deps.models.modelName(), this.deps.now()) : 'There is no conversation yet.');
        return { metadata: { command: 'context', ...(conversation ? metadataOf(conversation) : {}) } };
      case 'summary':
        return this.summaryCommand(conversation, chat);
      default:
        return this.agentTurn(conversation ?? (await this.deps.registry.startNew()), request, chat, signal, where);
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
  private async conversationOf(request: TurnRequest, agentRequest: boolean, chat: ChatSurface): Promise<Conversation | undefined> {
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
      if (agentRequest) this.offerRevertOfStartOver(request, chat);
      const picked = registry.takePendingOpen();
      const opened = picked ? await registry.open(picked) : undefined;
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

  private async compactCommand(
    conversation: Conversation | undefined,
    request: TurnRequest,
    chat: ChatSurface,
    signal: AbortSignal,
    where: { metadata: TurnMetadata },
  ): Promise<TurnResult> {
    if (!conversation || conversation.isEmpty()) {
      chat.markdown('There is no conversation to compact yet.');
      return { metadata: { command: 'compact', ...(conversation ? metadataOf(conversation) : {}) } };
    }
    // A turn of its own: rewinding the chat past this request takes its compaction back too.
    await conversation.beginTurn(this.deps.models.newId(), request.chat);
    where.metadata = metadataOf(conversation);
    await this.deps.models.prepareSummarizer();
    chat.progress('Compacting conversation…');
    const focus = request.prompt.trim();
    const outcome = await conversation.compact('manual', { ...(focus ? { focus } : {}), signal });
    this.reportOutcome(outcome, 'manual', chat, conversation.id);
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
    onFileEvent?: (event: AgentFileEvent) => void,
  ): { system: string; tools: ToolSet; editorTools: EditorToolSelection } {
    const { workspace } = this.deps;
    const trusted = workspace.trusted();
    const own = createAgentTools(workspace.files, {
      readOnly: !trusted,
      ...(trusted && workspace.commands ? { commands: workspace.commands } : {}),
      maxResultChars: MAX_RESULT_CHARS,
      ...(onFileEvent ? { onFileEvent } : {}),
      // Offered in every request, so that the tool definitions (and their count) do not change when
      // a compaction comes; the system prompt points at it once there is something to recall.
      recall: conversation ?? NO_ARCHIVE,
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
    return { system: this.systemPromptNow(conversation?.hasArchive() ?? false), tools, editorTools };
  }

  private systemPromptNow(archived: boolean): string {
    const { workspace } = this.deps;
    return systemPrompt({ trusted: workspace.trusted(), folders: workspace.roots().map((r) => r.name), archived, instructions: this.instructions });
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

  private async agentTurn(
    conversation: Conversation,
    request: TurnRequest,
    chat: ChatSurface,
    signal: AbortSignal,
    where: { metadata: TurnMetadata },
  ): Promise<TurnResult> {
    const { models } = this.deps;
    const model = await models.languageModel();
    if (!model) {
      return {
        errorDetails: {
          message: 'No language model is selected. Pick one in the chat, or configure longrun.endpoints and run "Longrun: Set API Key".',
        },
        metadata: where.metadata,
      };
    }
    await models.prepareSummarizer();
    this.instructions = await resolveInstructions(request.instructions);
    const attachments = await this.attachmentsOf(request, signal).catch((error: unknown) => {
      if (signal.aborted) return undefined;
      throw error;
    });
    if (!attachments) return { metadata: where.metadata };
    this.offerRevert(conversation, request, chat);
    await conversation.beginTurn(models.newId(), request.chat);
    where.metadata = metadataOf(conversation);
    const { system, tools, editorTools } = this.requestSetup(request, conversation, (event) => this.recordAgentFile(conversation, event));
    models.setRequestOverhead(`${system}\n${toolDefinitionsText(tools)}`);
    this.reportSkippedTools(editorTools, request, chat);
    await conversation.append(userTurn(request.prompt, attachments, models.newId(), this.deps.now()));
    this.activeChat = chat;
    try {
      const result = await this.runAgent(conversation, model, system, tools, chat, signal);
      return this.ended(conversation, result, chat);
    } finally {
      this.activeChat = undefined;
    }
  }

  private async runAgent(
    conversation: Conversation,
    model: LanguageModel,
    system: string,
    tools: ToolSet,
    chat: ChatSurface,
    signal: AbortSignal,
  ): ReturnType<typeof runAgentTurn> {
    const { models, settings } = this.deps;
    // "Preview" on the compaction question: the compaction it allows shows its summary first.
    const state = { preview: false };
    const advice = models.truncationAdvice();
    return runAgentTurn({
      model,
      system,
      systemNow: () => this.systemPromptNow(conversation.hasArchive()),
      tools,
      maxSteps: settings().agent.maxSteps,
      signal,
      conversation: {
        log: () => conversation.log(),
        view: () => conversation.view(),
        append: (records) => conversation.append(records),
        assess: () => conversation.assess(),
        compact: async (reason, compactSignal, stated) => {
          if (stated !== undefined) {
            models.learnWindow(stated.limit, stated.why, stated.lowerBound);
            // The summary request must fit the stated window too.
            await models.prepareSummarizer();
          }
          // Only the compaction the question allowed is previewed; an overflow cannot wait for the user.
          const review = state.preview && reason === 'threshold' ? this.previewIn(conversation, chat, compactSignal) : undefined;
          state.preview = false;
          return this.compactForAgent(conversation, reason, compactSignal, review);
        },
        requestBasis: () => conversation.requestBasis(),
        newId: () => models.newId(),
      },
      ui: this.agentUi(conversation, chat, state),
      guard: this.guardOf(conversation),
      overflowRetriesPerTurn: settings().compaction.overflowRetriesPerTurn,
      // Always explicit: with tracing off this also keeps integrations other extensions register away from Longrun's calls.
      telemetry: models.telemetry().settings('longrun.agent', { 'longrun.conversation': conversation.id }),
      maxOutputTokens: () => models.maxOutputTokens(),
      timeouts: settings().timeouts,
      // A server's usage is its own count of what it read; VS Code's models report a local estimate.
      detectTruncation: models.servedByEndpoint(),
      ...(advice ? { truncationAdvice: advice } : {}),
    });
  }

  private agentUi(conversation: Conversation, chat: ChatSurface, state: { preview: boolean }): AgentUi {
    return {
      text: (delta) => chat.markdown(delta),
      toolCall: (toolName, input) => chat.progress(describeToolCall(toolName, input)),
      toolResult: () => undefined,
      compacting: () => chat.progress('Compacting conversation…'),
      compacted: (outcome, reason) => this.reportOutcome(outcome, reason, chat, conversation.id),
      notice: (message) => {
        chat.markdown(`\n\n> ${message}\n\n`);
        this.remember(message);
      },
      ...(this.deps.settings().requireConfirmation
        ? {
            confirmCompaction: async (signal: AbortSignal) => {
              const answer = await this.askToCompact(chat, signal);
              state.preview = answer === 'preview';
              return answer !== 'not-now';
            },
          }
        : {}),
    };
  }

  /** What the chat is told once the agent's turn is over, and the compaction it may leave for the background. */
  private ended(conversation: Conversation, result: Awaited<ReturnType<typeof runAgentTurn>>, chat: ChatSurface): TurnResult {
    const { models, settings } = this.deps;
    this.guards.set(conversation.id, result.guard);
    models.observeUsage(lastUsage(conversation.log()));
    this.settleQuestions();
    this.compactInBackgroundIfNeeded(conversation);
    const metadata = { ...metadataOf(conversation), compactions: result.compactions };
    if (result.cancelled) return { metadata };
    if (result.error !== undefined) {
      const message = errorMessage(result.error, settings(), (value) => models.redact(value));
      this.deps.log.warn(`Request failed: ${message}`);
      return { errorDetails: { message }, metadata };
    }
    if (result.finishReason === 'tool-calls') {
      chat.markdown(`\n\n> Stopped after ${result.steps} steps (longrun.agent.maxSteps). Say "continue" to go on.`);
    }
    return { metadata };
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

  /**
   * When the request continues from an earlier turn than the chat went on from last, and the turns
   * it leaves behind changed files, the chat says so and offers to revert exactly those changes.
   */
  private offerRevert(conversation: Conversation, request: TurnRequest, chat: ChatSurface): void {
    const shared = conversation.sharedRecords();
    const offer = revertOffer(shared.all, shared.turns(), conversation.leaf(), request.chat);
    if (offer) this.showRevertOffer(conversation.id, offer, chat);
  }

  /** "Start Over" (or a retry of a chat's first request) leaves the chat's whole conversation behind. */
  private offerRevertOfStartOver(request: TurnRequest, chat: ChatSurface): void {
    const previous = this.deps.registry.currentIfLoaded();
    if (!previous || request.chat === undefined) return;
    const shared = previous.sharedRecords();
    const turns = shared.turns();
    const latest = turns.latest();
    if (latest === null || turns.info(latest)?.chat !== request.chat) return;
    const offer = revertOffer(shared.all, turns, null, request.chat);
    if (offer) this.showRevertOffer(previous.id, offer, chat);
  }

  private showRevertOffer(conversationId: string, offer: RevertOffer, chat: ChatSurface): void {
    const files = [...new Map(offer.changes.map((c) => [c.path, c])).values()];
    const list = files.map((c) => `${inlineCode(c.path)}${c.kind === 'created' ? ' (created)' : ''}`).join(', ');
    const turns = offer.turns === 1 ? 'The turn this chat no longer holds' : `The ${offer.turns} turns this chat no longer holds`;
    const message = `${turns} changed ${files.length === 1 ? 'a file' : `${files.length} files`}: ${list}. Those changes are still in the workspace.`;
    chat.markdown(`\n\n> ${message} "Revert Longrun's changes" shows exactly what it would write back, and asks first.\n\n`);
    chat.button({ command: REVERT_COMMAND, title: "Revert Longrun's changes…", arguments: [conversationId, offer.changes.map((c) => c.id)] });
    this.remember(message);
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
  private reportSkippedTools(selection: EditorToolSelection, request: TurnRequest, chat: ChatSurface): void {
    const named = new Set(request.toolReferences);
    for (const { name, reason } of selection.skipped) {
      if (named.has(name)) {
        chat.markdown(`\n\n> The tool ${inlineCode(name)} is not offered to the agent: ${reason}.\n\n`);
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
    return this.activeChat;
  }

  /**
   * Shows a change the agent made in the chat of the request under way: the file and its counts,
   * then the whole diff. A short diff is shown in place; a longer one behind a "Show diff" button
   * that opens all of it, since the chat has no collapsible block and shows code at full height.
   */
  showChange(change: { readonly kind: string; readonly path: string; readonly diff: string }): void {
    const chat = this.activeChat;
    if (!chat) return;
    const { added, removed, bodyLines } = diffStats(change.diff);
    chat.markdown(`\n\n**${escape(change.path)}** ${change.kind} (+${added} −${removed})\n\n`);
    if (bodyLines <= INLINE_DIFF_LINES) chat.markdown(`${fencedBlock(change.diff, 'diff')}\n`);
    else chat.diffButton(change.path, change.diff, `Show diff (${bodyLines} lines)`);
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

  private guardOf(conversation: Conversation): GuardState {
    return this.guards.get(conversation.id) ?? INITIAL_GUARD;
  }

  /**
   * A turn that ends at the critical level is compacted right away, in the background, so the
   * next request does not wait for it (the conversation may go on meanwhile: the result is
   * applied to whatever has been appended since).
   */
  private compactInBackgroundIfNeeded(conversation: Conversation): void {
    if (conversation.isCompacting() || !conversation.assess().shouldCompact) return;
    // With confirmation on, the next turn asks in the chat; nothing compacts behind the user's back.
    if (this.deps.settings().requireConfirmation || !mayAutoCompact(this.guardOf(conversation)).allowed) return;
    void this.compactForAgent(conversation, 'threshold', new AbortController().signal).then((outcome) => {
      this.deps.reporter.report(outcome, 'threshold');
      if (outcome.status === 'compacted') this.guards.set(conversation.id, noteCompaction(this.guardOf(conversation), outcome.compaction.lowGain));
    });
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
   * The preview of the summary of the compaction about to be applied ("Preview"): it opens in an
   * editor, and the chat says how to apply it (save it, or "Apply summary") or leave it (close it
   * unsaved, or "Discard"). Undefined without summary documents.
   */
  private previewIn(conversation: Conversation, chat: ChatSurface, signal: AbortSignal): SummaryPreview | undefined {
    const summaries = this.deps.summaries;
    if (!summaries) return undefined;
    let shown: string | undefined;
    return {
      review: async (entry) => {
        shown = entry.id;
        const id = `p${++this.questionCount}`;
        chat.markdown(
          '\n\nThe summary is open in an editor. Edit it and save it to compact with your text, or close it without saving to leave the conversation as it is.\n\n',
        );
        chat.button({ command: ANSWER_COMMAND, title: 'Apply summary', arguments: [id, true] });
        chat.button({ command: ANSWER_COMMAND, title: 'Discard', arguments: [id, false] });
        chat.progress('Waiting for you to save or close the summary…');
        this.questions.set(id, (answer) => {
          this.questions.delete(id);
          void (answer === 'not-now' ? summaries.discard(conversation.id, entry.id) : summaries.accept(conversation.id, entry.id));
        });
        try {
          const summary = await summaries.preview(conversation, entry, signal);
          if (summary === undefined && !signal.aborted) chat.markdown('\n\n> The summary was not applied: the conversation is as it was.\n\n');
          return summary;
        } finally {
          this.questions.delete(id);
        }
      },
      ended: () => {
        if (shown !== undefined) summaries.ended(conversation.id, shown);
      },
    };
  }

  /**
   * Asks in the chat, with buttons, whether to compact now, or to see the summary first ("Preview",
   * with summary documents). The turn waits for the answer; Stop, or the end of the request, counts
   * as "Not now".
   */
  private askToCompact(chat: ChatSurface, signal: AbortSignal): Promise<CompactionAnswer> {
    const id = `q${++this.questionCount}`;
    const percent = Math.round((this.deps.registry.currentIfLoaded()?.assess().fraction ?? 0) * 100);
    const previewed = this.deps.summaries !== undefined;
    chat.markdown(
      `\n\n**The context window is ${percent ? `${percent}% ` : ''}full.** Compact the conversation now?${previewed ? ' "Preview" shows the summary, to edit, before it is applied.' : ''} "Not now" holds for the rest of this request.\n\n`,
    );
    chat.button({ command: ANSWER_COMMAND, title: 'Compact', arguments: [id, true] });
    if (previewed) chat.button({ command: ANSWER_COMMAND, title: 'Preview', arguments: [id, 'preview'] });
    chat.button({ command: ANSWER_COMMAND, title: 'Not now', arguments: [id, false] });
    chat.progress('Waiting for your answer…');
    return new Promise<CompactionAnswer>((resolve) => {
      const settle = (answer: CompactionAnswer): void => {
        this.questions.delete(id);
        signal.removeEventListener('abort', onAbort);
        this.deps.log.info(`Compaction question ${id}: ${answer}.`);
        resolve(answer);
      };
      const onAbort = (): void => settle('not-now');
      if (signal.aborted) return settle('not-now');
      signal.addEventListener('abort', onAbort, { once: true });
      this.questions.set(id, settle);
    });
  }

  /**
   * The answer to a question asked in the chat (the buttons run `longrun.answerCompaction`): true
   * for "Compact" (or "Apply summary"), `'preview'` for "Preview", anything else for "Not now".
   */
  answerCompaction(id: unknown, compact: unknown): boolean {
    const settle = typeof id === 'string' ? this.questions.get(id) : undefined;
    if (!settle) return false;
    settle(compact === true ? 'compact' : compact === 'preview' ? 'preview' : 'not-now');
    return true;
  }

  /** Questions of a request that ended count as "Not now". */
  private settleQuestions(): void {
    for (const settle of [...this.questions.values()]) settle('not-now');
  }

  /** Questions waiting for an answer (for tests). */
  pendingQuestions(): string[] {
    return [...this.questions.keys()];
  }

  private reportOutcome(
    outcome: CompactionOutcome & { joined?: boolean },
    reason: CompactionReason,
    chat: ChatSurface,
    conversationId?: string,
  ): void {
    // A compaction joined while it ran elsewhere was logged where it started.
    if (!outcome.joined) this.deps.reporter.report(outcome, reason);
    switch (outcome.status) {
      case 'compacted': {
        const e = outcome.compaction.entry;
        const fallback = e?.fallback ? ` — the summarizer failed (${e.failure ?? 'unknown error'}), so an extractive summary was used` : '';
        const low = outcome.compaction.lowGain ? ' — this freed little; automatic compaction waits a turn' : '';
        chat.markdown(`\n\n*${compactionSentence(outcome.compaction)}${fallback}${low}.*\n\n`);
        if (e) chat.button({ command: 'longrun.showSummary', title: 'Open summary', arguments: [e.id] });
        if (e && conversationId !== undefined && this.deps.summaries)
          chat.button({ command: EDIT_SUMMARY_COMMAND, title: 'Edit summary', arguments: [conversationId, e.id] });
        break;
      }
      case 'noop':
        if (reason === 'manual') chat.markdown(outcome.reason);
        break;
      case 'failed':
        chat.markdown(`\n\n> ${outcome.reason}\n\n`);
        break;
      case 'cancelled':
        break;
    }
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
function userTurn(prompt: string, attachments: readonly Attachment[], id: string, at: number): LogRecord[] {
  // One text part: models that join parts without a separator must not run the prompt into the first block.
  const content = [text(attachments.length > 0 ? `${prompt}\n\n${renderAttachments(attachments)}` : prompt)];
  const reads: LogRecord[] = attachments.flatMap((a) =>
    a.readPath !== undefined ? [{ type: 'file' as const, event: { kind: 'read' as const, path: a.readPath, actor: 'user' as const, at } }] : [],
  );
  return [{ type: 'message', message: { id, role: 'user', content } }, ...reads];
}

/** What `recall` answers in a request made outside any conversation (the count of the tools' definitions). */
const NO_ARCHIVE: RecallPort = { recall: () => NOTHING_ARCHIVED };

function describeToolCall(toolName: string, input: unknown): string {
  const i = (input ?? {}) as Record<string, unknown>;
  const path = typeof i.path === 'string' ? i.path : undefined;
  switch (toolName) {
    case TOOL_NAMES.readFile:
      return `Reading ${path ?? 'a file'}…`;
    case TOOL_NAMES.listFiles:
      return `Listing ${typeof i.glob === 'string' ? i.glob : 'files'}…`;
    case TOOL_NAMES.searchText:
      return `Searching for ${typeof i.query === 'string' ? JSON.stringify(i.query) : 'text'}…`;
    case TOOL_NAMES.createFile:
      return `Creating ${path ?? 'a file'}…`;
    case TOOL_NAMES.editFile:
      return `Editing ${path ?? 'a file'}…`;
    case TOOL_NAMES.recall:
      return `Searching the conversation's earlier parts${typeof i.query === 'string' ? ` for ${JSON.stringify(i.query)}` : path ? ` for ${path}` : ''}…`;
    case TOOL_NAMES.runCommand:
      return typeof i.command === 'string'
        ? `Running ${inlineCode(i.command.length > 80 ? `${i.command.slice(0, 80)}…` : i.command)}…`
        : 'Running a command…';
    default:
      return `Running ${toolName}…`;
  }
}

/** `text` as inline code, on one line, whatever backticks it holds. */
export function inlineCode(value: string): string {
  const line = value.replace(/\s+/g, ' ');
  let longest = 0;
  for (const run of line.match(/`+/g) ?? []) longest = Math.max(longest, run.length);
  const fence = '`'.repeat(longest + 1);
  return fence.length > 1 ? `${fence} ${line} ${fence}` : `\`${line}\``;
}

function escape(value: string): string {
  return value.replace(/[\\`*_[\]]/g, '\\$&');
}
