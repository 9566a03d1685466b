import assert from 'node:assert/strict';
import { MessageTokenCounter } from '../../../src/core/message-tokens';
import { charEstimator } from '../../../src/core/tokenizer';
import { guessServer, modelContextOf, truncationAdvice } from '../../../src/app/models/model-in-use';

describe('the model in use, as a conversation sees it', () => {
  const counter = new MessageTokenCounter(charEstimator);

  it('gives the conversation what it may fill, the answer’s room and the request overhead of a sized model', () => {
    const context = modelContextOf(
      {
        name: 'qwen3',
        key: 'longrun/qwen3',
        sized: { window: { limit: 32_768, origin: 'stated by the server (/v1/models)', assumed: false }, outputReserve: 4_096, inputLimit: 28_672 },
      },
      counter,
      1_800,
    );
    assert.deepEqual(context.window, { limit: 28_672, source: 'model' });
    assert.equal(context.outputReserve, 4_096);
    assert.equal(context.requestOverhead, 1_800);
    assert.equal(context.key, 'longrun/qwen3');
    assert.equal(context.whole?.limit, 32_768);
  });

  it('says a window is assumed when no one stated it', () => {
    const context = modelContextOf(
      { name: 'm', key: 'v/m', sized: { window: { limit: 8_192, origin: 'assumed', assumed: true }, outputReserve: 1_024, inputLimit: 7_168 } },
      counter,
      0,
    );
    assert.equal(context.window.source, 'assumed');
  });

  it('says why the window is unknown, with the setting that gives one, and when no model is selected', () => {
    const unknown = modelContextOf({ name: 'mystery', key: 'v/mystery', sized: undefined }, counter, 0);
    assert.equal(unknown.window.source, 'unknown');
    assert.equal(unknown.window.limit, 0);
    assert.match(unknown.window.reason ?? '', /"mystery" is unknown.*longrun\.contextWindow/);
    assert.equal(unknown.whole, undefined);
    const none = modelContextOf(undefined, counter, 0);
    assert.equal(none.name, 'no model');
    assert.match(none.window.reason ?? '', /no model is selected/);
    assert.equal(none.key, undefined);
  });
});

describe('how to give a model a larger context', () => {
  it('knows Ollama and LM Studio by their usual ports, and nothing else by its port', () => {
    assert.equal(guessServer('http://127.0.0.1:11434/v1'), 'ollama');
    assert.equal(guessServer('http://localhost:1234/v1'), 'lmstudio');
    assert.equal(guessServer('http://localhost:8000/v1'), undefined);
    assert.equal(guessServer('not a url'), undefined);
  });

  it('names each server’s own setting, with the model and the context it runs with', () => {
    assert.match(truncationAdvice('ollama', 'qwen3', 4_096), /Ollama runs qwen3 with a 4,096-token context.*OLLAMA_CONTEXT_LENGTH.*num_ctx/);
    assert.match(truncationAdvice('lmstudio', 'qwen3', 4_096), /LM Studio's load settings and reload qwen3/);
    assert.match(truncationAdvice('llamacpp', 'qwen3', 4_096), /--ctx-size/);
    assert.match(truncationAdvice(undefined, 'qwen3', 4_096), /set "contextWindow" for qwen3 in longrun\.endpoints/);
  });
});
