import { Emitter, type Event } from '../emitter';

/**
 * The agent's questions waiting for the user (a write, a command): each settled by its first answer,
 * from the dialog, a chat button, or Stop, which refuses.
 */

/** A question waiting for the user's answer. */
export interface OpenQuestion {
  readonly id: string;
  readonly kind: 'edit' | 'command';
  /** The question as shown. */
  readonly question: string;
  /** The file's workspace-relative path, or the command line. */
  readonly subject: string;
}

export class OpenQuestions<Q extends OpenQuestion> {
  private readonly waiting = new Map<string, { readonly question: Q; readonly settle: (allow: boolean) => void }>();
  private readonly asked = new Emitter<Q>();
  /** Fires when a question is asked, before its dialog shows, so the chat can offer the answers too. */
  readonly onDidAsk: Event<Q> = this.asked.event;

  /** The questions waiting for an answer, oldest first. */
  pending(): Q[] {
    return [...this.waiting.values()].map((w) => w.question);
  }

  /** Answers a question (the chat's buttons); false when it was answered already. */
  answer(id: unknown, allow: unknown): boolean {
    const waiting = typeof id === 'string' ? this.waiting.get(id) : undefined;
    if (!waiting) return false;
    waiting.settle(allow === true);
    return true;
  }

  /** Asks `question` with `dialog`; resolves with the first answer: the dialog's, a chat button's, or Stop's (false). */
  ask(question: Q, signal: AbortSignal, dialog: () => Promise<boolean>): Promise<boolean> {
    return new Promise<boolean>((resolve) => {
      const settle = (allow: boolean): void => {
        if (!this.waiting.has(question.id)) return;
        this.waiting.delete(question.id);
        signal.removeEventListener('abort', onAbort);
        resolve(allow);
      };
      const onAbort = (): void => settle(false);
      this.waiting.set(question.id, { question, settle });
      if (signal.aborted) return settle(false);
      signal.addEventListener('abort', onAbort, { once: true });
      this.asked.fire(question);
      dialog().then(settle, () => settle(false));
    });
  }

  /** Refuses every question still waiting (the window closes). */
  refuseAll(): void {
    for (const { settle } of [...this.waiting.values()]) settle(false);
  }
}
