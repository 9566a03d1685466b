import { AsyncLocalStorage } from 'node:async_hooks';
import type { CompactionOutcome } from '../../core/compaction';
import type { CompactionReason } from '../../core/history';
import { CompactionDialog } from '../compaction/compaction-dialog';
import type { ConversationRegistry } from '../conversation/conversation-registry';
import type { LongrunSettings } from '../settings';
import type { SkillCatalog } from '../skills/skill-catalog';
import type { SubagentRunnerDeps } from '../subagents/subagent-runner';
import { diffStats, fencedBlock } from '../workspace/diff-preview';
import { AgentTurns } from './agent-turn';
import { BranchOffers } from './branch-offers';
import { BranchRouting } from './branch-routing';
import { ChatNotices } from './chat-notices';
import type { ChatSurface, SummaryPreviews, TurnModels, TurnRequest, TurnResult, TurnWorkspace } from './chat-surface';
import { escapeMarkdown } from './chat-text';
import { errorMessage } from './error-text';
import { InSightChat } from './in-sight-chat';
import type { RequestSetup } from './request-setup';
import { SlashCommands } from './slash-commands';
import { metadataOf, Turn } from './turn';

export type { ChatButton, ChatSurface, SummaryPreviews, TurnModels, TurnRequest, TurnResult, TurnWorkspace } from './chat-surface';

/**
 * What one chat request does, free of `vscode`, each job in its own part: which conversation and
 * which branch of it the request continues (`BranchRouting`: VS Code owns the chat, and its Restore
 * Checkpoint, Retry, edited requests, Fork and Start Over decide what the conversation is), the slash
 * commands (`SlashCommands`), what a request carries besides the conversation (`RequestSetup`), the
 * agent's turn and when to compact (`AgentTurns`), the offers of a rewound chat (`BranchOffers`), and
 * what the chat is told (`ChatNotices`). `src/vscode/chat-participant.ts` adapts VS Code's request,
 * history and response stream to it.
 */

export interface TurnControllerDeps {
  readonly registry: ConversationRegistry;
  readonly models: TurnModels;
  readonly workspace: TurnWorkspace;
  readonly settings: () => LongrunSettings;
  readonly reporter: { report(outcome: CompactionOutcome, reason: CompactionReason): void };
  readonly log: { info(message: string): void; warn(message: string): void; error(message: string): void };
  readonly now: () => number;
  /** What a request carries besides the conversation: its system prompt, tools and attachments. */
  readonly setup: RequestSetup;
  readonly summaries?: SummaryPreviews;
  /** The skills the agent may load; none without it. */
  readonly skills?: SkillCatalog;
  /** What a subagent's model calls cost, when a price is known; absent: the chat shows its tokens alone. */
  readonly cost?: SubagentRunnerDeps['cost'];
}

/** Longest diff (in lines without its headers) shown in the chat itself. */
export const INLINE_DIFF_LINES = 30;

export class TurnController {
  private active = 0;
  private completed = 0;
  private readonly idleWaiters: Array<() => void> = [];
  /**
   * The request under way, found from the work it started: a change the agent writes, or an
   * approval it asks for, is shown in the chat of the request whose tool call made it, whichever
   * other requests run at the same time.
   */
  private readonly requestOf = new AsyncLocalStorage<Turn>();
  private readonly notices: ChatNotices;
  private readonly dialog: CompactionDialog;
  private readonly offers: BranchOffers;
  private readonly routing: BranchRouting;
  private readonly commands: SlashCommands;
  private readonly agent: AgentTurns;

  constructor(private readonly deps: TurnControllerDeps) {
    const { registry, models, log, now } = deps;
    this.notices = new ChatNotices({ reporter: deps.reporter, log, summariesShown: deps.summaries !== undefined });
    this.dialog = new CompactionDialog({
      ...(deps.summaries ? { summaries: deps.summaries } : {}),
      log,
      fullness: () => registry.currentIfLoaded()?.assess().fraction ?? 0,
    });
    this.offers = new BranchOffers({
      registry,
      files: deps.workspace.files,
      newId: () => models.newId(),
      now,
      said: (message) => this.notices.remember(message),
    });
    this.routing = new BranchRouting({ registry, log, notices: this.notices, offers: this.offers });
    this.commands = new SlashCommands({ registry, models, now, notices: this.notices });
    this.agent = new AgentTurns({
      models,
      workspace: deps.workspace,
      settings: deps.settings,
      reporter: deps.reporter,
      log,
      now,
      setup: deps.setup,
      notices: this.notices,
      offers: this.offers,
      dialog: this.dialog,
      ...(deps.skills ? { skills: deps.skills } : {}),
      ...(deps.cost ? { cost: deps.cost } : {}),
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

  /** Sends the request to its job: a slash command, or the agent's turn on the branch the chat continues. */
  private async route(turn: Turn): Promise<TurnResult> {
    const { request, chat } = turn;
    if (request.command === 'new') return this.commands.newConversation(turn);
    const agentRequest = request.command === undefined;
    const conversation = await this.routing.conversationOf(request, agentRequest, chat);
    if (conversation) turn.metadata = metadataOf(conversation);
    switch (request.command) {
      case 'compact':
        return this.commands.compact(conversation, turn);
      case 'context':
        return this.commands.context(conversation, turn);
      case 'summary':
        return this.commands.summary(conversation, turn);
      default:
        return this.agent.run(conversation ?? (await this.deps.registry.startNew()), turn);
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

  /** The latest notices shown in the chat, newest last. */
  recentNotices(): readonly string[] {
    return this.notices.recent();
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
   * "Carry over what they learned" (see `BranchOffers`): the account joins the branch that holds
   * `turn`, for its next request. False when the conversation or the turn is gone.
   */
  carryAccount(conversationId: unknown, turn: unknown, text: unknown, turns: unknown): Promise<boolean> {
    return this.offers.carry(conversationId, turn, text, turns);
  }

  /** The answer to a question the chat asked (see `CompactionDialog.answer`). */
  answerCompaction(id: unknown, compact: unknown): boolean {
    return this.dialog.answer(id, compact);
  }

  /** Questions waiting for an answer (for tests). */
  pendingQuestions(): string[] {
    return this.dialog.pending();
  }
}
