import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { MockLanguageModelV4 } from 'ai/test';
import { messageTexts, scriptedModel, turnFixture, type TurnFixture } from './turn-fixture';

/**
 * Two chats answering at once: what one request's agent does (a file it writes, the diff of it) is
 * shown in that request's chat, never in the other one, whichever started last or ends first.
 */

/** A gate a model call waits at until the test opens it. */
function gate(): { readonly wait: Promise<void>; open(): void } {
  let open!: () => void;
  const wait = new Promise<void>((resolve) => (open = resolve));
  return { wait, open };
}

/**
 * The scripted model, except that a call whose latest user text contains a key of `gates` waits at
 * that gate first; `arrived` tells when a call reached its gate.
 */
function gatedModel(gates: Map<string, ReturnType<typeof gate>>, arrived: (key: string) => void): MockLanguageModelV4 {
  const inner = scriptedModel();
  return new MockLanguageModelV4({
    doStream: async (options) => {
      const latest = messageTexts(options.prompt.findLast((m) => m.role === 'user')!);
      const last = options.prompt.at(-1)!;
      for (const [key, g] of gates) {
        // Only the first call of the request waits: the one that asks for the tool call.
        if (latest.includes(key) && last.role === 'user') {
          arrived(key);
          await g.wait;
        }
      }
      return inner.doStream(options);
    },
  });
}

describe('two chats answering at once', () => {
  let f: TurnFixture | undefined;
  afterEach(async () => f?.close());

  it("shows each agent's change in the chat of its own request, the other chat started after it and still under way", async () => {
    const gates = new Map([
      ['alpha', gate()],
      ['beta', gate()],
    ]);
    const reached = new Map<string, () => void>();
    const whenReached = (key: string): Promise<void> => new Promise((resolve) => reached.set(key, resolve));
    const alphaReached = whenReached('alpha');
    const betaReached = whenReached('beta');
    f = await turnFixture({ model: gatedModel(gates, (key) => reached.get(key)?.()) });
    const first = f.newChat('first');
    const second = f.newChat('second');

    // The first chat's request waits at the model; the second chat's request starts meanwhile.
    const alpha = first.send('create alpha.txt with from the first chat');
    await alphaReached;
    const beta = second.send('create beta.txt with from the second chat');
    await betaReached;
    // The first request's agent writes its file while the second request is under way.
    gates.get('alpha')!.open();
    const alphaDone = await alpha;
    gates.get('beta')!.open();
    const betaDone = await beta;

    assert.equal(await readFile(join(f.workspace, 'alpha.txt'), 'utf8'), 'from the first chat');
    assert.equal(await readFile(join(f.workspace, 'beta.txt'), 'utf8'), 'from the second chat');
    assert.match(alphaDone.surface.text(), /\*\*alpha\.txt\*\* created/, 'the first chat shows its own change');
    assert.doesNotMatch(alphaDone.surface.text(), /beta\.txt/, "the first chat shows nothing of the second's");
    assert.match(betaDone.surface.text(), /\*\*beta\.txt\*\* created/, 'the second chat shows its own change');
    assert.doesNotMatch(betaDone.surface.text(), /alpha\.txt/, "the second chat shows nothing of the first's");
  });

  it("shows a change in the chat of its request after the other chat's request has ended", async () => {
    const gates = new Map([['alpha', gate()]]);
    let arrived!: () => void;
    const alphaReached = new Promise<void>((resolve) => (arrived = resolve));
    f = await turnFixture({ model: gatedModel(gates, () => arrived()) });
    const first = f.newChat('first');
    const second = f.newChat('second');

    const alpha = first.send('create alpha.txt with written late');
    await alphaReached;
    // A whole request of another chat starts and ends while the first one waits.
    const other = await second.send('remember the weather');
    gates.get('alpha')!.open();
    const alphaDone = await alpha;

    assert.match(alphaDone.surface.text(), /\*\*alpha\.txt\*\* created/, 'the change is shown in the chat of its request');
    assert.doesNotMatch(other.surface.text(), /alpha\.txt/);
  });
});
