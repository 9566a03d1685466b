/**
 * A new user's first window, as `npm start` opens it: a workspace opened for the first time, no
 * Copilot, and the driver typing `@longrun …` as soon as the chat takes input. The chat appears
 * only once Longrun is there, so the message reaches Longrun, never VS Code's own chat setup (a
 * Copilot sign-in that cannot finish here, holding every later message).
 */
import * as assert from 'assert';
import { existsSync, readFileSync } from 'fs';
import { join } from 'path';
import { NEW_USER_MESSAGE } from '../phrases';
import { api, idle, model, ui, waitFor } from './harness';

interface Typed {
  readonly inputMs: number;
  readonly typingMs: number;
  readonly sentMs: number;
  readonly gaugeMs: number;
}

const userTexts = (body: { messages?: Array<{ role: string; content?: unknown }> } | undefined): string[] =>
  (body?.messages ?? []).filter((m) => m.role === 'user').map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content ?? '')));

describe("A new user's first window", function () {
  this.timeout(300_000);

  it('shows the chat once Longrun is there, and answers the message typed at once, with no sign-in asked', async () => {
    const typed = await waitFor(
      'the driver to type the message',
      () => {
        const file = join(process.env.LONGRUN_E2E_DIR!, 'first-message-new-user.json');
        return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Typed) : undefined;
      },
      240_000,
    );
    // The chat appeared with Longrun: its gauge shows in the status bar at most a moment apart.
    assert.ok(
      typed.gaugeMs >= 0 && typed.gaugeMs - typed.inputMs < 3_000,
      `the chat's input was drawn ${typed.inputMs} ms after the workbench, Longrun's gauge ${typed.gaugeMs} ms`,
    );
    const request = await waitFor(
      'the message to reach the model',
      async () => (await model.requests()).find((r) => !r.summary && userTexts(r.body).some((t) => t.includes(NEW_USER_MESSAGE))),
      90_000,
    );
    assert.ok(request);
    const shown = await waitFor('its answer in the chat', async () => {
      const text = (await ui<string[]>('chat-text')).join('\n');
      return text.includes('Offline scripted model') ? text : undefined;
    });
    await idle();
    assert.equal((await api()).participant.turns().completed, 1, 'Longrun answered the one message');
    assert.doesNotMatch(shown, /Language model unavailable|GitHub Copilot|Signing in|Getting chat ready|Chat setup/);
    const dialogs = (await ui<string[]>('dialog')).join('\n');
    assert.doesNotMatch(dialogs, /Copilot|GitHub|sign in/i, 'no sign-in was asked');
    // Typed as soon as a user could: how soon the chat is ready depends on the machine, not on the test.
    assert.ok(
      typed.typingMs - Math.max(1_500, typed.inputMs) < 1_000,
      `typing began ${typed.typingMs} ms, the input was drawn at ${typed.inputMs} ms`,
    );
  });
});
