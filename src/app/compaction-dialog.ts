import type { CompactionOutcome } from '../core/compaction';
import type { CompactionEntry, CompactionReason } from '../core/history';
import type { ChatSurface, SummaryPreviews } from './chat-surface';
import { ANSWER_COMMAND, COMMAND } from './contributions';
import type { Conversation } from './conversation';
import type { NoticeSurface } from './in-sight-chat';
import { compactionSentence } from './reports';

/**
 * What the chat says and asks about compaction: the question "Compact the conversation now?"
 * (Compact, Preview, Not now), the preview of a summary before it is applied (Apply summary,
 * Discard), and the line that reports a compaction with its buttons. The buttons run
 * `ANSWER_COMMAND`, which the answers come back through.
 */

/** An answer to the compaction question. */
export type CompactionAnswer = 'compact' | 'preview' | 'not-now';

/** A compaction's summary shown to the user before it is applied, and what to do once it is over. */
export interface SummaryPreview {
  readonly review: (entry: CompactionEntry) => Promise<string | undefined>;
  readonly ended: () => void;
}

export interface CompactionDialogDeps {
  /** Summaries as documents, to preview before a compaction applies; without them there is no "Preview". */
  readonly summaries?: SummaryPreviews;
  readonly log: { info(message: string): void };
  /** How full the window of the chat's conversation is, 0 to 1, for the question. */
  readonly fullness: () => number;
}

export class CompactionDialog {
  private readonly questions = new Map<string, (answer: CompactionAnswer) => void>();
  private count = 0;

  constructor(private readonly deps: CompactionDialogDeps) {}

  /**
   * Asks in the chat, with buttons, whether to compact now, or to see the summary first ("Preview",
   * with summary documents). Resolves with the answer; Stop, or the end of the request, counts as
   * "Not now".
   */
  ask(chat: ChatSurface, signal: AbortSignal): Promise<CompactionAnswer> {
    const id = `q${++this.count}`;
    const percent = Math.round(this.deps.fullness() * 100);
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
   * The preview of the summary of the compaction about to be applied ("Preview"): it opens in an
   * editor, and the chat says how to apply it (save it, or "Apply summary") or leave it (close it
   * unsaved, or "Discard"). Undefined without summary documents.
   */
  previewIn(conversation: Conversation, chat: ChatSurface, signal: AbortSignal): SummaryPreview | undefined {
    const summaries = this.deps.summaries;
    if (!summaries) return undefined;
    let shown: string | undefined;
    return {
      review: async (entry) => {
        shown = entry.id;
        const id = `p${++this.count}`;
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
   * The answer to a question asked in the chat (the buttons run `ANSWER_COMMAND`): true
   * for "Compact" (or "Apply summary"), `'preview'` for "Preview", anything else for "Not now".
   */
  answer(id: unknown, compact: unknown): boolean {
    const settle = typeof id === 'string' ? this.questions.get(id) : undefined;
    if (!settle) return false;
    settle(compact === true ? 'compact' : compact === 'preview' ? 'preview' : 'not-now');
    return true;
  }

  /** Questions of a request that ended count as "Not now". */
  settleAll(): void {
    for (const settle of [...this.questions.values()]) settle('not-now');
  }

  /** Questions waiting for an answer. */
  pending(): string[] {
    return [...this.questions.keys()];
  }
}

/**
 * A compaction's outcome in the chat: the line that says what it did (with "Open summary" and,
 * when summaries can be edited, "Edit summary"), why it failed, or, for `/compact`, why nothing was done.
 * A failure, and a summary made without the model, are warnings: they stay in sight.
 */
export function showOutcome(
  outcome: CompactionOutcome,
  reason: CompactionReason,
  chat: NoticeSurface,
  conversationId: string,
  editable: boolean,
): void {
  switch (outcome.status) {
    case 'compacted': {
      const e = outcome.compaction.entry;
      const fallback = e?.fallback ? ` — ${e.failure ?? 'the summarizer failed'}, so an extractive summary was used` : '';
      const low = outcome.compaction.lowGain ? ' — this freed little; automatic compaction waits a turn' : '';
      const line = `\n\n*${compactionSentence(outcome.compaction)}${fallback}${low}.*\n\n`;
      const buttons = [
        ...(e ? [{ command: COMMAND.showSummary, title: 'Open summary', arguments: [e.id] }] : []),
        ...(e && editable ? [{ command: COMMAND.editSummary, title: 'Edit summary', arguments: [conversationId, e.id] }] : []),
      ];
      if (e?.fallback) {
        chat.notice(line, buttons);
      } else {
        chat.markdown(line);
        for (const button of buttons) chat.button(button);
      }
      break;
    }
    case 'noop':
      if (reason === 'manual') chat.markdown(outcome.reason);
      break;
    case 'failed':
      chat.notice(`\n\n> ${outcome.reason}\n\n`);
      break;
    case 'cancelled':
      break;
  }
}
