import { firstInSight, type ShownPart } from './chat-folds';
import type { ChatButton, ChatSurface } from './chat-surface';

/** A chat that keeps in sight what the user must read or act on. */
export interface NoticeSurface extends ChatSurface {
  /** Shows `markdown`, then its buttons; see `InSightChat`. */
  notice(markdown: string, buttons?: readonly ChatButton[]): void;
}

/**
 * The chat of one request, keeping in sight what the user must read or act on (an offer to revert
 * files, a warning). A notice is shown where it happens; when the response goes on past it, VS Code
 * folds it away with the other steps once the response is finished (`chat-folds.ts`), so `settle`,
 * at the end of the response, says again every notice that would be folded: their text first and
 * their buttons after it, which VS Code leaves in sight as the response's final text and what
 * follows it.
 */
export class InSightChat implements NoticeSurface {
  private readonly parts: ShownPart[] = [];
  private readonly notices: { readonly at: number; readonly markdown: string; readonly buttons: readonly ChatButton[] }[] = [];

  constructor(private readonly chat: ChatSurface) {}

  markdown(text: string): void {
    this.chat.markdown(text);
    this.parts.push({ kind: 'markdown', empty: text.length === 0 });
  }

  progress(text: string): void {
    this.chat.progress(text);
    this.parts.push({ kind: 'other' });
  }

  button(button: ChatButton): void {
    this.chat.button(button);
    this.parts.push({ kind: 'other' });
  }

  diffButton(path: string, diff: string, title: string): void {
    this.chat.diffButton(path, diff, title);
    this.parts.push({ kind: 'other' });
  }

  notice(markdown: string, buttons: readonly ChatButton[] = []): void {
    this.notices.push({ at: this.parts.length, markdown, buttons });
    this.markdown(markdown);
    for (const button of buttons) this.button(button);
  }

  /**
   * The end of the response: the notices VS Code would fold away are said again after everything
   * else. Nothing may be written after it (what would come after could fold them again).
   */
  settle(): void {
    const notices = this.notices.splice(0);
    const inSight = firstInSight(this.parts);
    if (!notices.some((n) => n.at < inSight)) return;
    // What is written now becomes the final text: only a notice in the Markdown the response ends
    // with (nothing but text after it) stays in sight without being said again.
    let tail = this.parts.length;
    while (tail > 0 && this.parts[tail - 1]!.kind === 'markdown') tail--;
    const again = notices.filter((n) => n.at < tail);
    this.markdown(again.map((n) => n.markdown).join(''));
    for (const notice of again) for (const button of notice.buttons) this.button(button);
  }
}
