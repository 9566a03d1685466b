import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MessageTokenCounter } from '../../../src/core/message-tokens';
import { charEstimator } from '../../../src/core/tokenizer';
import type { Conversation } from '../../../src/app/conversation/conversation';
import { ConversationStore } from '../../../src/app/store/conversation-store';
import { ModelCalibrations } from '../../../src/app/models/model-calibrations';
import { FakeClock } from '../core/fixtures';
import { newConversation } from '../fixtures/conversation-deps';

/** A memento as VS Code's global state is: values kept by key, as JSON. */
function memento() {
  const state = new Map<string, unknown>();
  return {
    state,
    get: <T>(key: string) => state.get(key) as T | undefined,
    update: async (key: string, value: unknown) => void state.set(key, JSON.parse(JSON.stringify(value)) as unknown),
  };
}

describe("a model's calibration, across conversations", () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'longrun-calibrations-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const KEY = 'longrun/qwen2.5-coder:14b';
  const OVERHEAD = 2_000;

  async function conversation(id: string, calibrations?: ModelCalibrations): Promise<Conversation> {
    const clock = new FakeClock();
    const counter = new MessageTokenCounter(charEstimator);
    const store = new ConversationStore(dir, () => clock.now());
    await store.create(id);
    return newConversation({
      id,
      store,
      clock,
      newId: () => `${id}-${Math.random().toString(36).slice(2)}`,
      model: { name: 'qwen', limit: 32_000, counter, requestOverhead: OVERHEAD, key: KEY },
      ...(calibrations ? { calibrations } : {}),
    });
  }

  /** A request of `tokens` tokens of messages, and the provider's report of it at `ratio`. */
  async function exchange(c: Conversation, n: number, tokens: number, ratio: number): Promise<void> {
    await c.append([{ type: 'message', message: { id: `${c.id}-u${n}`, role: 'user', content: [{ type: 'text', text: 'w'.repeat(tokens * 4) }] } }]);
    const basis = c.requestBasis();
    await c.append([
      { type: 'message', message: { id: `${c.id}-a${n}`, role: 'assistant', content: [{ type: 'text', text: 'ok' }] } },
      {
        type: 'usage',
        usage: {
          anchorMessageId: `${c.id}-a${n}`,
          inputTokens: Math.round(basis.localTokens * ratio),
          outputTokens: 1,
          basis: basis.basis,
          localTokens: basis.localTokens,
          ...(basis.localFixed !== undefined ? { localFixed: basis.localFixed } : {}),
          model: KEY,
        },
      },
    ]);
  }

  it("counts before the model's first report with its family's prior ratio", async () => {
    const c = await conversation('c1');
    await c.append([{ type: 'message', message: { id: 'u', role: 'user', content: [{ type: 'text', text: 'x'.repeat(40_000) }] } }]);
    const count = c.count();
    assert.equal(count.source, 'local');
    assert.equal(count.tokens, Math.round(count.localTokens * 1.127));
  });

  it('keeps what a conversation learned in global state, so the next conversation with the model starts calibrated', async () => {
    const state = memento();
    const calibrations = new ModelCalibrations({ memento: state, now: () => 5 });
    const first = await conversation('c1', calibrations);
    // This provider counts 1.3 tokens for each local one: more than the family's figure.
    for (let i = 0; i < 5; i++) await exchange(first, i, 6_000, 1.3);
    first.count();
    const kept = calibrations.prior(KEY)!;
    assert.ok(Math.abs(kept.ratio - 1.3) < 0.02, `kept ${kept.ratio}`);
    assert.ok(kept.tokens > 10_000);

    // A new window: the state is read back from what was stored.
    const second = await conversation('c2', new ModelCalibrations({ memento: state, now: () => 6 }));
    await second.append([{ type: 'message', message: { id: 'u', role: 'user', content: [{ type: 'text', text: 'x'.repeat(40_000) }] } }]);
    const count = second.count();
    assert.equal(count.tokens, Math.round(count.localTokens * kept.ratio));
  });

  it("does not let the second conversation's first report, mostly system prompt, undo what was learned", async () => {
    const state = memento();
    const calibrations = new ModelCalibrations({ memento: state, now: () => 5 });
    const first = await conversation('c1', calibrations);
    for (let i = 0; i < 5; i++) await exchange(first, i, 6_000, 1.3);
    first.count();
    const second = await conversation('c2', new ModelCalibrations({ memento: state, now: () => 6 }));
    // 100 tokens of messages beside 2,000 of system prompt and tools, which this provider counts low.
    await exchange(second, 0, 100, 0.9);
    await second.append([{ type: 'message', message: { id: 'big', role: 'user', content: [{ type: 'text', text: 'x'.repeat(40_000) }] } }]);
    const count = second.count();
    const usage = second.log().flatMap((r) => (r.type === 'usage' ? [r.usage] : []))[0]!;
    const ratio = (count.tokens - usage.inputTokens - usage.outputTokens) / count.sinceReport;
    assert.ok(ratio > 1.25, `what came after the report is counted at ${ratio.toFixed(3)}`);
  });

  it('ignores a stored entry it cannot read, and a state of another shape, falling back to the family figure', () => {
    const state = memento();
    state.state.set('longrun.calibrations', { version: 1, models: { [KEY]: { ratio: 'high' } } });
    assert.equal(new ModelCalibrations({ memento: state, now: () => 0 }).prior(KEY)?.ratio, 1.127);
    state.state.set('longrun.calibrations', [1, 2]);
    assert.equal(new ModelCalibrations({ memento: state, now: () => 0 }).prior(KEY)?.ratio, 1.127);
    assert.equal(new ModelCalibrations({ memento: state, now: () => 0 }).prior('copilot/gpt-4o'), undefined);
  });
});
