import * as vscode from 'vscode';
import type { CompactionOutcome } from '../core/compaction';
import { INITIAL_GUARD, mayAutoCompact, noteCompaction, type GuardState } from '../core/compaction-guard';
import { lastUsage, type CompactionEntry, type CompactionReason, type LogRecord } from '../core/history';
import { text } from '../core/messages';
import { runAgentTurn, toolDefinitionsText, type AgentUi } from '../llm/agent';
import { createAgentTools, type RecallPort } from '../llm/agent-tools';
import { NOTHING_ARCHIVED } from '../core/recall';
import { createEditorTools, selectEditorTools, type EditorToolSelection } from '../llm/editor-tools';
import type { CommandPort } from '../llm/workspace-port';
import { renderAttachments, resolveAttachments, type Attachment } from '../app/attachments';
import { attachedReferences } from './attachments';
import { VsCodeEditorTools } from './editor-tools';
import type { ChangeDocuments } from './change-view';
import { diffStats, fencedBlock } from '../app/diff-preview';
import type { PendingApproval } from './edit-approval';
import type { Session } from './session';
import type { LongrunSettings } from '../app/settings';
import type { CompactionReporter } from './compaction-report';
import { conversationIdOf } from '../app/chat-history';
import type { Conversation } from '../app/conversation';
import { errorMessage } from '../app/error-text';
import { compactionSentence, contextReport, summaryReport } from '../app/reports';
import type { VsCodeWorkspace, WorkspaceChange } from './workspace-tools';
import type { SummaryDocuments } from './summary-documents';
import { OWN_TOOL_NAMES, TOOL_NAMES } from '../core/tool-names';
import { ANSWER_APPROVAL_COMMAND, ANSWER_COMMAND, EDIT_SUMMARY_COMMAND, PARTICIPANT_ID } from '../app/contributions';

/**
 * `@longrun`: the coding agent in VS Code's chat. It streams its work, compacts the conversation
 * when the window fills (shown as progress, then one line with a button to the summary), and
 * answers `/compact`, `/context`, `/summary` and `/new`.
 */

export interface ParticipantDeps {
  readonly session: Session;
  readonly settings: () => LongrunSettings;
  readonly workspace: VsCodeWorkspace;
  /** The terminal of `run_command`; offered only in a trusted workspace. */
  readonly commands?: CommandPort;
  readonly reporter: CompactionReporter;
  readonly log: vscode.LogOutputChannel;
  readonly now: () => number;
  /** Records an agent file operation in the conversation's ledger. */
  readonly onAgentFile: (kind: 'read' | 'created' | 'modified', path: string) => void;
  /** Summaries as documents: the preview before a compaction is applied, and "Edit summary" after. */
  readonly summaries?: SummaryDocuments;
}

export interface LongrunChatResult extends vscode.ChatResult {
  readonly metadata: { readonly conversationId?: string; readonly compactions?: number; readonly command?: string };
}

export class LongrunParticipant {
  /** Anti-loop state, per conversation: two chats do not share it. */
  private readonly guards = new Map<string, GuardState>();
  private active = 0;
  private completed = 0;
  private readonly idleWaiters: Array<() => void> = [];
  /** The stream of the request under way, where the agent's edits are shown. */
  private activeStream: vscode.ChatResponseStream | undefined;

  constructor(private readonly deps: ParticipantDeps) {}

  /**
   * The system prompt and the tools of a request, as the workspace is now (trust, folders): Longrun's
   * own tools, and the editor's tools that `longrun.agent.editorTools` or the request (`#name`)
   * names, run with the request's `toolInvocationToken`. An untrusted workspace gets no editor tools.
   */
  requestSetup(
    request?: Pick<vscode.ChatRequest, 'toolReferences' | 'toolInvocationToken'>,
    conversation?: Conversation,
  ): {
    system: string;
    tools: ReturnType<typeof createAgentTools>;
    editorTools: EditorToolSelection;
  } {
    const trusted = vscode.workspace.isTrusted;
    const own = createAgentTools(this.deps.workspace, {
      readOnly: !trusted,
      ...(trusted && this.deps.commands ? { commands: this.deps.commands } : {}),
      maxResultChars: MAX_RESULT_CHARS,
      onFileEvent: (e) => this.deps.onAgentFile(e.kind, e.path),
      // Offered in every request, so that the tool definitions (and their count) do not change when
      // a compaction comes; the system prompt points at it once there is something to recall.
      recall: conversation ?? NO_ARCHIVE,
    });
    const port = new VsCodeEditorTools(request?.toolInvocationToken);
    const editorTools = trusted
      ? selectEditorTools(port.list(), {
          setting: this.deps.settings().agent.editorTools,
          requested: (request?.toolReferences ?? []).map((t) => t.name),
          reserved: OWN_TOOL_NAMES,
        })
      : { offered: [], skipped: [] };
    const tools = { ...own, ...createEditorTools(port, editorTools.offered, { maxResultChars: MAX_RESULT_CHARS }) };
    return { system: systemPrompt(trusted, conversation?.hasArchive() ?? false), tools, editorTools };
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

  /** What the user attached to the request, read and capped like a tool result. */
  private attachmentsOf(request: vscode.ChatRequest, signal: AbortSignal): Promise<Attachment[]> {
    if (request.references.length === 0) return Promise.resolve([]);
    return resolveAttachments(attachedReferences(request.references), {
      roots: (vscode.workspace.workspaceFolders ?? []).map((f) => ({ name: f.name, fsPath: f.uri.fsPath })),
      files: this.deps.workspace,
      maxChars: MAX_RESULT_CHARS,
      maxTotalChars: MAX_ATTACHMENT_CHARS,
      signal,
    });
  }

  /** A tool the user named with `#` that is not offered is said in the chat; any other, in the log. */
  private reportSkippedTools(selection: EditorToolSelection, request: vscode.ChatRequest, stream: vscode.ChatResponseStream): void {
    const named = new Set(request.toolReferences.map((t) => t.name));
    for (const { name, reason } of selection.skipped) {
      if (named.has(name)) {
        stream.markdown(`\n\n> The tool ${inlineCode(name)} is not offered to the agent: ${reason}.\n\n`);
        this.remember(`The tool ${name} is not offered to the agent: ${reason}.`);
      } else {
        this.deps.log.info(`longrun.agent.editorTools names ${name}, which is not offered: ${reason}.`);
      }
    }
    if (!vscode.workspace.isTrusted && (named.size > 0 || this.deps.settings().agent.editorTools.length > 0)) {
      this.deps.log.info('The workspace is not trusted, so no tools of other extensions are offered to the agent.');
    }
  }

  /**
   * Shows a change the agent made in the chat of the request under way: the file and its counts,
   * then the whole diff. A short diff is shown in place; a longer one behind a "Show diff" button
   * that opens all of it, since the chat has no collapsible block and shows code at full height.
   */
  showChange(change: WorkspaceChange, changes: ChangeDocuments): void {
    const stream = this.activeStream;
    if (!stream) return;
    const { added, removed, bodyLines } = diffStats(change.diff);
    stream.markdown(`\n\n**${escape(change.path)}** ${change.kind} (+${added} −${removed})\n\n`);
    if (bodyLines <= INLINE_DIFF_LINES) stream.markdown(`${fencedBlock(change.diff, 'diff')}\n`);
    else stream.button(changes.button(change, `Show diff (${bodyLines} lines)`));
  }

  /** Shows in the chat that an edit waits for approval, with Apply / Reject buttons beside the diff editor's. */
  showApprovalRequest(approval: PendingApproval): void {
    const stream = this.activeStream;
    if (!stream) return;
    stream.markdown(`\n\n${escape(approval.question)} The change is open in the diff editor.\n\n`);
    stream.button({ command: ANSWER_APPROVAL_COMMAND, title: 'Apply', arguments: [approval.id, true] });
    stream.button({ command: ANSWER_APPROVAL_COMMAND, title: 'Reject', arguments: [approval.id, false] });
    stream.progress(`Waiting for your approval of ${approval.subject}…`);
  }

  private readonly notices: string[] = [];

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

  readonly handler: vscode.ChatRequestHandler = async (request, context, stream, token): Promise<LongrunChatResult> => {
    this.active++;
    try {
      return await this.handle(request, context, stream, token);
    } catch (error) {
      const redact = (text: string): string => this.deps.session.redact(text);
      this.deps.log.error(`Request failed: ${redact(error instanceof Error ? (error.stack ?? error.message) : String(error))}`);
      return { errorDetails: { message: errorMessage(error, this.deps.settings(), redact) }, metadata: {} };
    } finally {
      this.active--;
      this.completed++;
      if (this.active === 0) for (const resolve of this.idleWaiters.splice(0)) resolve();
    }
  };

  private async handle(
    request: vscode.ChatRequest,
    context: vscode.ChatContext,
    stream: vscode.ChatResponseStream,
    token: vscode.CancellationToken,
  ): Promise<LongrunChatResult> {
    const { session } = this.deps;
    try {
      await session.useModel(request.model);
    } catch (error) {
      this.deps.log.warn(`Could not use the chat's model: ${String(error)}`);
    }
    if (request.command === 'new') return this.newConversation(stream);
    const conversation = await this.conversationOf(context, request.command === undefined);
    switch (request.command) {
      case 'compact':
        return this.compactCommand(conversation, request.prompt, stream, token);
      case 'context':
        return this.contextCommand(conversation, stream);
      case 'summary':
        return this.summaryCommand(conversation, stream);
      default:
        return this.agentTurn(conversation ?? (await session.startNew()), request, stream, token);
    }
  }

  /**
   * The conversation of the chat a request comes from: the one its history names; for a new chat,
   * the one picked with "Open Conversation…", else a new one (agent requests only); for a chat
   * with history but no id (from an older version), the current one.
   */
  private async conversationOf(context: vscode.ChatContext, agentRequest: boolean): Promise<Conversation | undefined> {
    const { session } = this.deps;
    const id = conversationIdOf(context.history, PARTICIPANT_ID);
    // A conversation picked for "the next new chat" is for a new chat only; a request elsewhere drops it.
    if (agentRequest && context.history.length > 0) session.takePendingOpen();
    if (id) {
      const found = await session.open(id);
      if (found) return found;
      this.deps.log.warn(`The chat's conversation ${id} is not in this workspace's storage; starting a new one.`);
      return agentRequest ? session.startNew() : undefined;
    }
    if (context.history.length === 0) {
      const picked = session.takePendingOpen();
      const opened = picked ? await session.open(picked) : undefined;
      if (opened) return opened;
      return agentRequest ? session.startNew() : session.current();
    }
    return session.current();
  }

  private guardOf(conversation: Conversation): GuardState {
    return this.guards.get(conversation.id) ?? INITIAL_GUARD;
  }

  private async newConversation(stream: vscode.ChatResponseStream): Promise<LongrunChatResult> {
    const conversation = await this.deps.session.startNew();
    stream.markdown('Started a new conversation. The previous one is kept on disk.');
    return { metadata: { conversationId: conversation.id, command: 'new' } };
  }

  private async compactCommand(
    conversation: Conversation | undefined,
    focus: string,
    stream: vscode.ChatResponseStream,
    token: vscode.CancellationToken,
  ): Promise<LongrunChatResult> {
    if (!conversation || conversation.isEmpty()) {
      stream.markdown('There is no conversation to compact yet.');
      return { metadata: { command: 'compact', ...(conversation ? { conversationId: conversation.id } : {}) } };
    }
    await this.deps.session.prepareSummarizer();
    stream.progress('Compacting conversation…');
    const controller = abortOn(token);
    const outcome = await conversation.compact('manual', { ...(focus.trim() ? { focus: focus.trim() } : {}), signal: controller.signal });
    this.reportOutcome(outcome, 'manual', stream, conversation.id);
    return { metadata: { conversationId: conversation.id, command: 'compact', compactions: outcome.status === 'compacted' ? 1 : 0 } };
  }

  private async contextCommand(conversation: Conversation | undefined, stream: vscode.ChatResponseStream): Promise<LongrunChatResult> {
    stream.markdown(conversation ? contextReport(conversation, this.deps.session.modelName(), this.deps.now()) : 'There is no conversation yet.');
    return { metadata: { command: 'context', ...(conversation ? { conversationId: conversation.id } : {}) } };
  }

  private async summaryCommand(conversation: Conversation | undefined, stream: vscode.ChatResponseStream): Promise<LongrunChatResult> {
    const entry = conversation?.lastCompaction();
    if (!conversation || !entry) {
      stream.markdown('This conversation has not been compacted, so there is no summary yet.');
      return { metadata: { command: 'summary', ...(conversation ? { conversationId: conversation.id } : {}) } };
    }
    stream.markdown(summaryReport(entry));
    return { metadata: { command: 'summary', conversationId: conversation.id } };
  }

  private async agentTurn(
    conversation: Conversation,
    request: vscode.ChatRequest,
    stream: vscode.ChatResponseStream,
    token: vscode.CancellationToken,
  ): Promise<LongrunChatResult> {
    const { session, settings } = this.deps;
    const model = await session.languageModel();
    if (!model) {
      return {
        errorDetails: {
          message: 'No language model is selected. Pick one in the chat, or configure longrun.endpoints and run "Longrun: Set API Key".',
        },
        metadata: {},
      };
    }
    await session.prepareSummarizer();
    const { system, tools, editorTools } = this.requestSetup(request, conversation);
    session.setRequestOverhead(`${system}\n${toolDefinitionsText(tools)}`);
    this.reportSkippedTools(editorTools, request, stream);

    const controller = abortOn(token);
    const attachments = await this.attachmentsOf(request, controller.signal).catch((error: unknown) => {
      if (controller.signal.aborted) return undefined;
      throw error;
    });
    if (!attachments) return { metadata: { conversationId: conversation.id } };
    await conversation.append(userTurn(request.prompt, attachments, session.newId(), this.deps.now()));
    this.activeStream = stream;
    // "Preview" on the compaction question: the compaction it allows shows its summary first.
    let preview = false;
    const ui: AgentUi = {
      text: (delta) => stream.markdown(delta),
      toolCall: (toolName, input) => stream.progress(describeToolCall(toolName, input)),
      toolResult: () => undefined,
      compacting: () => stream.progress('Compacting conversation…'),
      compacted: (outcome, reason) => this.reportOutcome(outcome, reason, stream, conversation.id),
      notice: (message) => {
        stream.markdown(`\n\n> ${message}\n\n`);
        this.remember(message);
      },
      ...(settings().requireConfirmation
        ? {
            confirmCompaction: async (signal: AbortSignal) => {
              const answer = await this.askToCompact(stream, signal);
              preview = answer === 'preview';
              return answer !== 'not-now';
            },
          }
        : {}),
    };
    const advice = session.truncationAdvice();
    try {
      const result = await runAgentTurn({
        model,
        system,
        systemNow: () => systemPrompt(vscode.workspace.isTrusted, conversation.hasArchive()),
        tools,
        maxSteps: settings().agent.maxSteps,
        signal: controller.signal,
        conversation: {
          log: () => conversation.log(),
          view: () => conversation.view(),
          append: (records) => conversation.append(records),
          assess: () => conversation.assess(),
          compact: async (reason, signal, stated) => {
            if (stated !== undefined) {
              session.learnWindow(stated.limit, stated.why, stated.lowerBound);
              // The summary request must fit the stated window too.
              await session.prepareSummarizer();
            }
            // Only the compaction the question allowed is previewed; an overflow cannot wait for the user.
            const review = preview && reason === 'threshold' ? this.previewIn(conversation, stream, signal) : undefined;
            preview = false;
            return this.compactForAgent(conversation, reason, signal, review);
          },
          requestBasis: () => conversation.requestBasis(),
          newId: () => session.newId(),
        },
        ui,
        guard: this.guardOf(conversation),
        overflowRetriesPerTurn: settings().compaction.overflowRetriesPerTurn,
        // Always explicit: with tracing off this also keeps integrations other extensions register away from Longrun's calls.
        telemetry: session.telemetry().settings('longrun.agent', { 'longrun.conversation': conversation.id }),
        maxOutputTokens: () => session.maxOutputTokens(),
        timeouts: settings().timeouts,
        // A server's usage is its own count of what it read; VS Code's models report a local estimate.
        detectTruncation: session.model()?.kind === 'endpoint',
        ...(advice ? { truncationAdvice: advice } : {}),
      });
      this.guards.set(conversation.id, result.guard);
      session.observeUsage(lastUsage(conversation.log()));
      this.settleQuestions();
      this.compactInBackgroundIfNeeded(conversation);
      const metadata = { conversationId: conversation.id, compactions: result.compactions };
      if (result.cancelled) return { metadata };
      if (result.error !== undefined) {
        const message = errorMessage(result.error, settings(), (text) => session.redact(text));
        this.deps.log.warn(`Request failed: ${message}`);
        return { errorDetails: { message }, metadata };
      }
      if (result.finishReason === 'tool-calls') {
        stream.markdown(`\n\n> Stopped after ${result.steps} steps (longrun.agent.maxSteps). Say "continue" to go on.`);
      }
      return { metadata };
    } finally {
      this.activeStream = undefined;
    }
  }

  /**
   * A turn that ends at the critical level is compacted right away, in the background, so the
   * next request does not wait for it (the conversation may go on meanwhile: the result is
   * applied to whatever has been appended since).
   */
  private compactInBackgroundIfNeeded(conversation: Conversation): void {
    const budget = conversation.assess();
    if (conversation.isCompacting() || !budget.shouldCompact) return;
    // With confirmation on, the next turn asks in the chat; nothing compacts behind the user's back.
    if (this.deps.settings().requireConfirmation || !mayAutoCompact(this.guardOf(conversation), budget).allowed) return;
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
  private previewIn(conversation: Conversation, stream: vscode.ChatResponseStream, signal: AbortSignal): SummaryPreview | undefined {
    const summaries = this.deps.summaries;
    if (!summaries) return undefined;
    let shown: string | undefined;
    return {
      review: async (entry) => {
        shown = entry.id;
        const id = `p${++this.questionCount}`;
        stream.markdown(
          '\n\nThe summary is open in an editor. Edit it and save it to compact with your text, or close it without saving to leave the conversation as it is.\n\n',
        );
        stream.button({ command: ANSWER_COMMAND, title: 'Apply summary', arguments: [id, true] });
        stream.button({ command: ANSWER_COMMAND, title: 'Discard', arguments: [id, false] });
        stream.progress('Waiting for you to save or close the summary…');
        this.questions.set(id, (answer) => {
          this.questions.delete(id);
          void (answer === 'not-now' ? summaries.discard(conversation.id, entry.id) : summaries.accept(conversation.id, entry.id));
        });
        try {
          const summary = await summaries.preview(conversation, entry, signal);
          if (summary === undefined && !signal.aborted) stream.markdown('\n\n> The summary was not applied: the conversation is as it was.\n\n');
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

  private readonly questions = new Map<string, (answer: CompactionAnswer) => void>();
  private questionCount = 0;

  /**
   * Asks in the chat, with buttons, whether to compact now (seed 004's confirmation), or to see
   * the summary first ("Preview", with summary documents). The turn waits for the answer; Stop, or
   * the end of the request, counts as "Not now".
   */
  private askToCompact(stream: vscode.ChatResponseStream, signal: AbortSignal): Promise<CompactionAnswer> {
    const id = `q${++this.questionCount}`;
    const percent = Math.round((this.deps.session.currentIfLoaded()?.assess().fraction ?? 0) * 100);
    const previewed = this.deps.summaries !== undefined;
    stream.markdown(
      `\n\n**The context window is ${percent ? `${percent}% ` : ''}full.** Compact the conversation now?${previewed ? ' "Preview" shows the summary, to edit, before it is applied.' : ''} "Not now" holds for the rest of this request.\n\n`,
    );
    stream.button({ command: ANSWER_COMMAND, title: 'Compact', arguments: [id, true] });
    if (previewed) stream.button({ command: ANSWER_COMMAND, title: 'Preview', arguments: [id, 'preview'] });
    stream.button({ command: ANSWER_COMMAND, title: 'Not now', arguments: [id, false] });
    stream.progress('Waiting for your answer…');
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
    stream: vscode.ChatResponseStream,
    conversationId?: string,
  ): void {
    // A compaction joined while it ran elsewhere was logged where it started.
    if (!outcome.joined) this.deps.reporter.report(outcome, reason);
    switch (outcome.status) {
      case 'compacted': {
        const e = outcome.compaction.entry;
        const fallback = e?.fallback ? ` — the summarizer failed (${e.failure ?? 'unknown error'}), so an extractive summary was used` : '';
        const low = outcome.compaction.lowGain ? ' — this freed little; automatic compaction waits a turn' : '';
        stream.markdown(`\n\n*${compactionSentence(outcome.compaction)}${fallback}${low}.*\n\n`);
        if (e) stream.button({ command: 'longrun.showSummary', title: 'Open summary', arguments: [e.id] });
        if (e && conversationId !== undefined && this.deps.summaries)
          stream.button({ command: EDIT_SUMMARY_COMMAND, title: 'Edit summary', arguments: [conversationId, e.id] });
        break;
      }
      case 'noop':
        if (reason === 'manual') stream.markdown(outcome.reason);
        break;
      case 'failed':
        stream.markdown(`\n\n> ${outcome.reason}\n\n`);
        break;
      case 'cancelled':
        break;
    }
  }
}

/** An answer to the compaction question. */
type CompactionAnswer = 'compact' | 'preview' | 'not-now';

/** A compaction's summary shown to the user before it is applied, and what to do once it is over. */
interface SummaryPreview {
  readonly review: (entry: CompactionEntry) => Promise<string | undefined>;
  readonly ended: () => void;
}

/** Longest diff (in lines without its headers) shown in the chat itself. */
const INLINE_DIFF_LINES = 30;

/** Longest tool result the model gets, Longrun's tools' and the editor's alike; also the cap of one attachment. */
const MAX_RESULT_CHARS = 20_000;
/** Most text all attachments of one request carry together. */
const MAX_ATTACHMENT_CHARS = 3 * MAX_RESULT_CHARS;

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

function abortOn(token: vscode.CancellationToken): AbortController {
  const controller = new AbortController();
  if (token.isCancellationRequested) controller.abort();
  token.onCancellationRequested(() => controller.abort());
  return controller;
}

/** What `recall` answers in a request made outside any conversation (the count of the tools' definitions). */
const NO_ARCHIVE: RecallPort = { recall: () => NOTHING_ARCHIVED };

function systemPrompt(trusted: boolean, archived: boolean): string {
  const folders = (vscode.workspace.workspaceFolders ?? []).map((f) => f.name);
  return [
    "You are Longrun, a coding agent working in the user's VS Code workspace.",
    `Workspace folders: ${folders.length ? folders.join(', ') : '(none open)'}. Paths are relative to the workspace${folders.length > 1 ? ', starting with the folder name' : ''}.`,
    'Use the tools to read, list and search files before answering questions about the code; do not guess file contents.',
    trusted
      ? 'Change files with create_file and edit_file; each edit replaces an exact, unique piece of text. Keep changes minimal and explain them briefly. Run builds, tests and other shell commands with run_command (one line each; the user approves them).'
      : 'The workspace is not trusted, so you can only read: do not try to change files or run commands; describe the changes instead.',
    'Earlier parts of a long conversation may be replaced by a summary; trust it, and re-read files when you need their exact content.',
    ...(archived
      ? [
          'Parts of this conversation were summarized or pruned (a pruned tool output reads "[Pruned by Longrun: …]"). The originals are kept: when you need exact earlier content (a tool output, an error, a decision), search them with the recall tool by words or file path.',
        ]
      : []),
    'Answer in Markdown, concisely.',
  ].join('\n');
}

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
function inlineCode(text: string): string {
  const line = text.replace(/\s+/g, ' ');
  const fence = '`'.repeat(Math.max(0, ...(line.match(/`+/g) ?? []).map((run) => run.length)) + 1);
  return fence.length > 1 ? `${fence} ${line} ${fence}` : `\`${line}\``;
}

function escape(value: string): string {
  return value.replace(/[\\`*_[\]]/g, '\\$&');
}
