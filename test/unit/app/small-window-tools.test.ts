import assert from 'node:assert/strict';
import { DELEGATE_WINDOW, PLAN_WINDOW } from '../../../src/app/turn/request-setup';
import { turnFixture, type TurnFixture } from './turn-fixture';

/**
 * A small window keeps its room for the conversation: the `plan` tool (and what the system prompt
 * says of the plan) and the `delegate` tool are offered only in a window they fit in.
 */
describe('the tools a window has room for', () => {
  let f: TurnFixture | undefined;
  afterEach(async () => f?.close());

  const sent = async (contextWindow: number | undefined): Promise<{ tools: string[]; system: string; overhead: string }> => {
    f = await turnFixture(contextWindow !== undefined ? { contextWindow } : {});
    await f.newChat().send('remember the weather');
    const call = f.model.doStreamCalls[0]!;
    const system = call.prompt.find((m) => m.role === 'system');
    return {
      tools: (call.tools ?? []).map((t) => t.name),
      system: typeof system?.content === 'string' ? system.content : '',
      // What the gauge counts: the session asks for it with the window of the model in use.
      overhead: f.setup.overheadText(contextWindow),
    };
  };

  it('leaves plan and delegate out of a 6,000-token window, in the request and in what the gauge counts', async () => {
    const small = await sent(6_000);
    assert.ok(!small.tools.includes('plan') && !small.tools.includes('delegate'), small.tools.join(', '));
    assert.ok(small.tools.includes('read_file') && small.tools.includes('recall'));
    assert.doesNotMatch(small.system, /plan tool/);
    assert.doesNotMatch(small.overhead, /"name":\s*"(plan|delegate)"|\bplan\b.*"steps"/);
  });

  it('offers the plan from an 8,192-token window on, without delegate', async () => {
    const plan = await sent(PLAN_WINDOW);
    assert.ok(plan.tools.includes('plan') && !plan.tools.includes('delegate'), plan.tools.join(', '));
    assert.match(plan.system, /keep a plan with the plan tool/);
  });

  it('offers both from a 16,384-token window on, and when the window is not known', async () => {
    for (const window of [DELEGATE_WINDOW, undefined]) {
      const roomy = await sent(window);
      assert.ok(roomy.tools.includes('plan') && roomy.tools.includes('delegate'), `${window}: ${roomy.tools.join(', ')}`);
      assert.match(roomy.system, /keep a plan with the plan tool/);
      await f?.close();
      f = undefined;
    }
  });

  it("counts what the turn's requests carried after a smaller window is learned in the middle of it, and what a request would carry after the tools change", async () => {
    const roomy = await sent(undefined);
    const setup = f!.setup;
    // The server states 4,000 tokens in an overflow error: the retried request carries the same tools.
    assert.equal(setup.overheadText(4_000), roomy.overhead);
    assert.match(setup.overheadText(4_000), /"name":\s*"delegate"|delegate/);
    setup.toolsChanged();
    const now = setup.overheadText(4_000);
    assert.ok(now.length < roomy.overhead.length, 'made again for the window: neither plan nor delegate');
    assert.doesNotMatch(now, /keep a plan with the plan tool/);
  });
});
