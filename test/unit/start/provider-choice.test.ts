import assert from 'node:assert/strict';
import { providerFromEnvironment } from '../../../scripts/provider-choice';

describe('npm start: the provider the environment names', () => {
  it("picks a native provider from its key, as that provider's own tools read it, with Anthropic's base URL", () => {
    assert.deepEqual(providerFromEnvironment({ ANTHROPIC_API_KEY: 'sk-ant', ANTHROPIC_BASE_URL: 'http://127.0.0.1:4000/' }), {
      kind: 'anthropic',
      apiKey: 'sk-ant',
      baseUrl: 'http://127.0.0.1:4000',
      model: 'claude-sonnet-4-5',
      because: 'ANTHROPIC_API_KEY',
    });
    assert.equal((providerFromEnvironment({ GEMINI_API_KEY: 'g' }) as { kind: string }).kind, 'google');
    assert.equal((providerFromEnvironment({ OPENROUTER_API_KEY: 'o', LONGRUN_MODEL: 'openai/gpt-5' }) as { model: string }).model, 'openai/gpt-5');
    assert.equal((providerFromEnvironment({ OPENAI_API_KEY: 'sk' }) as { kind: string }).kind, 'openai');
  });

  it('keeps an OpenAI-compatible server named by OPENAI_BASE_URL first, as before', () => {
    const chosen = providerFromEnvironment({ OPENAI_BASE_URL: 'http://127.0.0.1:8000/v1', OPENAI_API_KEY: 'k', ANTHROPIC_API_KEY: 'a' });
    assert.deepEqual(chosen, {
      kind: 'openai-compatible',
      apiKey: 'k',
      baseUrl: 'http://127.0.0.1:8000/v1',
      model: 'gpt-4o-mini',
      because: 'OPENAI_BASE_URL',
    });
  });

  it('names a provider with LONGRUN_PROVIDER, without a key for its stand-in, and nothing when nothing is set', () => {
    assert.deepEqual(providerFromEnvironment({ LONGRUN_PROVIDER: 'anthropic' }), {
      kind: 'anthropic',
      model: 'claude-sonnet-4-5',
      because: 'LONGRUN_PROVIDER=anthropic',
    });
    assert.equal(providerFromEnvironment({}), undefined);
    assert.equal(providerFromEnvironment({ ANTHROPIC_BASE_URL: 'http://127.0.0.1:4000' }), undefined, 'a base URL without a key picks nothing');
  });

  it('refuses a provider it does not know, naming the ones it does', () => {
    assert.deepEqual(providerFromEnvironment({ LONGRUN_PROVIDER: 'claude' }), {
      problem: 'LONGRUN_PROVIDER must be one of openai-compatible, openai, anthropic, google, openrouter, not "claude".',
    });
  });
});
