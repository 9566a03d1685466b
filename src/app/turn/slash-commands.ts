import type { Conversation } from '../conversation/conversation';
import type { ConversationRegistry } from '../conversation/conversation-registry';
import { contextReport, summaryReport } from '../report/reports';
import type { TurnModels, TurnResult } from './chat-surface';
import type { ChatNotices } from './chat-notices';
import { metadataOf, type Turn } from './turn';

export interface SlashCommandsDeps {
  readonly registry: ConversationRegistry;
  readonly models: Pick<TurnModels, 'newId' | 'modelName' | 'usageView'>;
  readonly now: () => number;
  readonly notices: ChatNotices;
}

/** The chat's slash commands: `/new`, `/compact`, `/context` and `/summary`. */
export class SlashCommands {
  constructor(private readonly deps: SlashCommandsDeps) {}

  /** `/new`: a new conversation; the previous one is kept. */
  async newConversation(turn: Turn): Promise<TurnResult> {
    const conversation = await this.deps.registry.startNew();
    turn.chat.markdown('Started a new conversation. The previous one is kept on disk.');
    return { metadata: { conversationId: conversation.id, command: 'new' } };
  }

  /** `/compact [focus]`: compacts now, in a turn of its own, so rewinding the chat past it takes the compaction back too. */
  async compact(conversation: Conversation | undefined, turn: Turn): Promise<TurnResult> {
    const { request, chat, signal } = turn;
    if (!conversation || conversation.isEmpty()) {
      chat.markdown('There is no conversation to compact yet.');
      return { metadata: { command: 'compact', ...(conversation ? metadataOf(conversation) : {}) } };
    }
    await conversation.beginTurn(this.deps.models.newId(), request.chat);
    turn.metadata = metadataOf(conversation);
    chat.progress('Compacting conversation…');
    const focus = request.prompt.trim();
    const outcome = await conversation.compact('manual', { ...(focus ? { focus } : {}), signal });
    this.deps.notices.reportOutcome(outcome, 'manual', chat, conversation.id);
    this.deps.notices.tell(conversation, chat);
    return { metadata: { ...metadataOf(conversation), command: 'compact', compactions: outcome.status === 'compacted' ? 1 : 0 } };
  }

  /** `/context`: what the window holds and what the conversation cost. */
  context(conversation: Conversation | undefined, turn: Turn): TurnResult {
    const { models, now } = this.deps;
    turn.chat.markdown(
      conversation ? contextReport(conversation, models.modelName(), now(), models.usageView(conversation)) : 'There is no conversation yet.',
    );
    return { metadata: { command: 'context', ...(conversation ? metadataOf(conversation) : {}) } };
  }

  /** `/summary`: the last summary in force. */
  summary(conversation: Conversation | undefined, turn: Turn): TurnResult {
    const entry = conversation?.lastCompaction();
    if (!conversation || !entry) {
      turn.chat.markdown('This conversation has not been compacted, so there is no summary yet.');
      return { metadata: { command: 'summary', ...(conversation ? metadataOf(conversation) : {}) } };
    }
    turn.chat.markdown(summaryReport(entry));
    return { metadata: { command: 'summary', ...metadataOf(conversation) } };
  }
}
