import assert from 'node:assert/strict';
import fc from 'fast-check';
import { firstInSight, type ShownPart } from '../../../src/app/chat-folds';
import type { ChatButton, ChatSurface } from '../../../src/app/chat-surface';
import { InSightChat } from '../../../src/app/in-sight-chat';

/** What a response shows, in order, as VS Code receives it. */
class Shown implements ChatSurface {
  readonly parts: { kind: 'markdown' | 'progress' | 'button'; text: string }[] = [];
  markdown(text: string): void {
    this.parts.push({ kind: 'markdown', text });
  }
  progress(text: string): void {
    this.parts.push({ kind: 'progress', text });
  }
  button(button: ChatButton): void {
    this.parts.push({ kind: 'button', text: button.title });
  }
  diffButton(_path: string, _diff: string, title: string): void {
    this.parts.push({ kind: 'button', text: title });
  }
  /** The text and button titles VS Code leaves in sight once the response is finished. */
  inSight(): string[] {
    const folds: ShownPart[] = this.parts.map((p) => (p.kind === 'markdown' ? { kind: 'markdown', empty: p.text.length === 0 } : { kind: 'other' }));
    return this.parts.slice(firstInSight(folds)).map((p) => p.text);
  }
}

const revert: ChatButton = { command: 'revert', title: 'Revert…' };

describe('a chat that keeps in sight what the user must act on', () => {
  it('says an offer again after the answer when the answer would fold it away', () => {
    const shown = new Shown();
    const chat = new InSightChat(shown);
    chat.notice('\n\n> Two files changed.\n\n', [revert]);
    chat.progress('Reading a.txt…');
    chat.markdown('The answer.');
    chat.settle();
    assert.deepEqual(shown.inSight(), ['The answer.', '\n\n> Two files changed.\n\n', 'Revert…']);
  });

  it('says nothing again when the notice is already in sight', () => {
    const shown = new Shown();
    const chat = new InSightChat(shown);
    chat.progress('Reading a.txt…');
    chat.markdown('The answer.');
    chat.notice('\n\n> The answer was cut.\n\n');
    chat.settle();
    assert.equal(shown.parts.filter((p) => p.text.includes('cut')).length, 1);
    assert.ok(shown.inSight().some((t) => t.includes('The answer was cut.')));
  });

  it('puts the text of several notices before all of their buttons, so that no button of theirs folds another away', () => {
    const shown = new Shown();
    const chat = new InSightChat(shown);
    chat.notice('\n\n> First.\n\n', [revert]);
    chat.notice('\n\n> Second.\n\n', [{ command: 'open', title: 'Open summary' }]);
    chat.progress('Reading…');
    chat.markdown('Done.');
    chat.settle();
    assert.deepEqual(shown.inSight(), ['Done.', '\n\n> First.\n\n\n\n> Second.\n\n', 'Revert…', 'Open summary']);
  });

  it('leaves every notice and its buttons in sight at the end of any response', () => {
    type Step = { kind: 'markdown'; text: string } | { kind: 'progress' } | { kind: 'button' } | { kind: 'notice'; buttons: number };
    const step: fc.Arbitrary<Step> = fc.oneof(
      fc.record({ kind: fc.constant('markdown' as const), text: fc.constantFrom('', 'words', '\n\n') }),
      fc.constant({ kind: 'progress' as const }),
      fc.constant({ kind: 'button' as const }),
      fc.record({ kind: fc.constant('notice' as const), buttons: fc.nat({ max: 2 }) }),
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 25 }), (steps) => {
        const shown = new Shown();
        const chat = new InSightChat(shown);
        const notices: string[] = [];
        steps.forEach((s, i) => {
          if (s.kind === 'markdown') chat.markdown(s.text);
          else if (s.kind === 'progress') chat.progress(`step ${i}`);
          else if (s.kind === 'button') chat.button({ command: 'x', title: `plain ${i}` });
          else {
            const buttons = Array.from({ length: s.buttons }, (_, b) => ({ command: 'x', title: `notice ${i} button ${b}` }));
            notices.push(`notice ${i}`, ...buttons.map((b) => b.title));
            chat.notice(`\n\n> notice ${i}\n\n`, buttons);
          }
        });
        chat.settle();
        const seen = shown.inSight().join('\n');
        return notices.every((n) => seen.includes(n));
      }),
    );
  });
});
