import assert from 'node:assert/strict';
import { APICallError } from 'ai';
import { errorMessage } from '../../../src/app/turn/error-text';
import { redactSecrets } from '../../../src/core/redact';
import { createEndpointModel } from '../../../src/llm/openai-endpoint';

const settings = { timeouts: { firstChunkMs: 600_000, idleMs: 120_000 } };
const KEY = 'sk-proj-abcdefghijklmnopqrstuvwx1234567890';

describe('the message a failed request shows in the chat', () => {
  it('never shows an API key a server echoed, and says how to get out', () => {
    const error = new APICallError({
      message: `Incorrect API key provided: Bearer ${KEY}`,
      url: 'http://127.0.0.1/v1/chat/completions',
      requestBodyValues: {},
      statusCode: 401,
      responseBody: JSON.stringify({ error: { message: `Incorrect API key provided: ${KEY}` } }),
    });
    const text = errorMessage(error, settings, (t) => redactSecrets(t, [KEY]));
    assert.ok(!text.includes(KEY), text);
    assert.ok(!text.includes('abcdefghijklmnop'), text);
    assert.match(text, /\/compact/);
    assert.match(text, /\/new/);
  });

  it("says a native provider's endpoint has no key, and how to store one, and nothing about compacting", () => {
    let thrown: unknown;
    try {
      createEndpointModel({ endpoint: 'claude', provider: 'anthropic', baseUrl: 'https://api.anthropic.com/v1', id: 'claude-sonnet-4-5' }, undefined);
    } catch (error) {
      thrown = error;
    }
    assert.equal(
      errorMessage(thrown, settings, (t) => t),
      'The endpoint "claude" (anthropic) has no API key. Run "Longrun: Set API Key" to store it; nothing else is needed.',
    );
  });

  it('names the timeout that stopped a silent model and the setting that sets it', () => {
    const first = errorMessage(new DOMException('First chunk timeout of 600000ms exceeded', 'TimeoutError'), settings, (t) => t);
    assert.match(first, /sent nothing for 600 s.*longrun\.timeouts\.firstChunkSeconds/);
    const idle = errorMessage(new DOMException('Chunk timeout of 120000ms exceeded', 'TimeoutError'), settings, (t) => t);
    assert.match(idle, /silent for 120 s.*longrun\.timeouts\.idleSeconds/);
  });

  it('tells an overflow that compaction could not fix from other failures', () => {
    const text = errorMessage(
      new Error("This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens."),
      settings,
      (t) => t,
    );
    assert.match(text, /no longer fits/);
  });
});
