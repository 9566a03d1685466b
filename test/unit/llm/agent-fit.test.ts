import assert from 'node:assert/strict';
import { APICallError } from 'ai';
import { convertArrayToReadableStream, MockLanguageModelV4 } from 'ai/test';
import { assessBudget } from '../../../src/core/budget';
import type { CompactionOutcome } from '../../../src/core/compaction';
import { CompactionGuard } from '../../../src/core/compaction-guard';
import { DEFAULT_CONFIG } from '../../../src/core/config';
import { text, type Message } from '../../../src/core/messages';
import { OverWindow, runAgentTurn, type AgentConversation, type AgentUi } from '../../../src/llm/agent';
import { errorMessage } from '../../../src/app/turn/error-text';

/**
 * A request is measured again after every compaction of a turn: while it would still not fit the
 * window, the conversation is compacted harder; a request known to be over the window is never sent.
 */

const LIMIT = 1_000;

/**
 * A conversation whose view holds `start` tokens, and after each compaction the next count of
 * `after` (a compaction with nothing left to do once they run out).
 */
function conversationOf(start: number, after: number[]) {
  let tokens = start;
  const reasons: string[] = [];
  const messages: Message[] = [{ id: 'u', role: 'user', content: [text('Write the module.')] }];
  let n = 0;
  const assess = () => assessBudget(tokens, { limit: LIMIT, source: 'model' }, DEFAULT_CONFIG.trigger);
  const conversation: AgentConversation = {
    view: () => messages,
    append: async (records) => {
      for (const record of records) if (record.type === 'message') messages.push(record.message);
    },
    assess,
    guard: new CompactionGuard(assess),
    compact: async (reason): Promise<CompactionOutcome> => {
      reasons.push(reason);
      const next = after.shift();
      if (next === undefined) return { status: 'noop', reason: 'Not compacting: nothing more to take out.' };
      const before = tokens;
      tokens = next;
      return {
        status: 'compacted',
        compaction: {
          records: [],
          basis: { messageIds: [], lastEntryId: null },
          view: [],
          repairs: [],
          compactedCount: 1,
          tokensBefore: before,
          tokensAfter: next,
          lowGain: false,
        },
      };
    },
    requestBasis: () => ({ basis: null, localTokens: tokens }),
    newId: () => `m${++n}`,
  };
  return { conversation, reasons, tokens: () => tokens };
}

/** A provider that refuses its first request (`refuseFirst`) and any over its window (`window`), and answers the others. */
function provider(tokens: () => number, refuseFirst: boolean, window = LIMIT) {
  const sent: number[] = [];
  const model = new MockLanguageModelV4({
    doStream: async () => {
      sent.push(tokens());
      if ((refuseFirst && sent.length === 1) || tokens() > window) {
        throw new APICallError({
          message: `This model's maximum context length is ${LIMIT} tokens. However, your messages resulted in ${tokens() + 200} tokens.`,
          url: 'http://127.0.0.1/v1/chat/completions',
          requestBodyValues: {},
          statusCode: 400,
          responseBody: JSON.stringify({ error: { code: 'context_length_exceeded', message: 'too long' } }),
          isRetryable: false,
        });
      }
      const parts = [
        { type: 'stream-start', warnings: [] },
        { type: 'text-start', id: 'a' },
        { type: 'text-delta', id: 'a', delta: 'Done.' },
        { type: 'text-end', id: 'a' },
        {
          type: 'finish',
          finishReason: { unified: 'stop', raw: 'stop' },
          usage: { inputTokens: { total: tokens(), noCache: tokens() }, outputTokens: { total: 2, text: 2 } },
        },
      ];
      return { stream: convertArrayToReadableStream(parts as never[]) };
    },
  });
  return { model, sent };
}

function ui() {
  const notices: string[] = [];
  const shown: AgentUi = {
    text: () => undefined,
    toolCall: () => undefined,
    compacting: () => undefined,
    compacted: () => undefined,
    notice: (message) => void notices.push(message),
  };
  return { shown, notices };
}

function turn(conversation: AgentConversation, model: MockLanguageModelV4, shown: AgentUi, lowerBound = false) {
  return runAgentTurn({
    windowIsLowerBound: () => lowerBound,
    model,
    system: 'You are a test agent.',
    tools: {},
    maxSteps: 5,
    signal: new AbortController().signal,
    conversation,
    ui: shown,
    overflowRetriesPerTurn: 1,
  });
}

const settings = { timeouts: { firstChunkMs: 60_000, idleMs: 60_000 } };

describe('agent turn: a request measured again after each compaction', () => {
  it('with a window known only as a lower bound (from a prompt the server cut), sends the request compacted as hard as it can be', async () => {
    const c = conversationOf(1_100, [1_080]);
    const p = provider(c.tokens, false, 3_000);
    const u = ui();
    const result = await turn(c.conversation, p.model, u.shown, true);
    assert.equal(result.error, undefined, String(result.error));
    assert.deepEqual(p.sent, [1_080], 'the request over the lower bound is sent once, after compacting');
    assert.ok(!u.notices.some((n) => /would still not fit/.test(n)));
  });

  it('with a window known only as a lower bound, retries an overflow with the request compacted as hard as it can be', async () => {
    const c = conversationOf(800, [1_200, 1_150]);
    const p = provider(c.tokens, true, 3_000);
    const result = await turn(c.conversation, p.model, ui().shown, true);
    assert.equal(result.error, undefined, String(result.error));
    assert.deepEqual(p.sent, [800, 1_150]);
  });

  it('after an overflow compaction that leaves the request over the window, compacts harder and sends it only once it fits', async () => {
    const c = conversationOf(800, [1_200, 700]);
    const p = provider(c.tokens, true);
    const u = ui();
    const result = await turn(c.conversation, p.model, u.shown);
    assert.equal(result.error, undefined);
    assert.deepEqual(c.reasons, ['overflow', 'overflow']);
    assert.deepEqual(p.sent, [800, 700], 'the retried request was sent once, under the window');
  });

  it('does not send the retried request when no compaction gets it under the window', async () => {
    const c = conversationOf(800, [1_200, 1_150]);
    const p = provider(c.tokens, true);
    const u = ui();
    const result = await turn(c.conversation, p.model, u.shown);
    assert.ok(result.error, 'the turn ends on the error');
    assert.deepEqual(p.sent, [800], 'nothing sent knowing it is over');
    assert.ok(c.reasons.length <= 3, `compacted ${c.reasons.length} times`);
    assert.ok(u.notices.some((n) => /would still not fit the model's context window after compacting \(about 1,150 of 1,000 tokens\)/.test(n)));
  });

  it('after a compaction before a step that leaves the request over the window, compacts harder before sending', async () => {
    const c = conversationOf(1_100, [1_050, 700]);
    const p = provider(c.tokens, false);
    const result = await turn(c.conversation, p.model, ui().shown);
    assert.equal(result.error, undefined);
    assert.deepEqual(c.reasons, ['threshold', 'overflow']);
    assert.deepEqual(p.sent, [700]);
  });

  it('ends the turn before a step with a clear message when nothing gets the request under the window, and sends nothing', async () => {
    const c = conversationOf(1_100, [1_080]);
    const p = provider(c.tokens, false);
    const result = await turn(c.conversation, p.model, ui().shown);
    assert.deepEqual(p.sent, [], 'nothing sent');
    assert.ok(OverWindow.isInstance(result.error), String(result.error));
    assert.equal(result.compactions, 1);
    assert.match(
      errorMessage(result.error, settings, (t) => t),
      /^The next request would still not fit the model's context window after compacting \(about 1,080 of 1,000 tokens\), so Longrun did not send it\. Run \/compact with a focus, or \/new to start over\.$/,
    );
  });
});
