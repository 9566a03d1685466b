import assert from 'node:assert/strict';
import fc from 'fast-check';
import { REDACTED, redactSecrets } from '../../../src/core/redact';

// Fake keys of each provider's shape; none of them is real.
const KEYS = {
  openai: 'sk-Zx81kPq0aa7LmNo3RsTuVwXy12345678abcdEFGH',
  openaiProject: 'sk-proj-4fG7hJ2kL9mN1pQ3rS5tU7vW9xY0zA2bC4dE6fG8hJ0kL2mN4pQ6rS8tU0vW2xY4zA6bC8dE0',
  openrouter: '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',
  anthropic: 'sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789_-AbCdEfGhIjKlMnOpQrStUvWxYz012345-AbCdEfAA',
  xai: 'xai-q8W3e5R7t9Y1u2I4o6P8a0S2d4F6g8H0j2K4l6Z8x0C2v4B6n8M0q2W4e6R8t0Y2u4I6',
  groq: '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',
  huggingFace: 'hf_aBcDeFgHiJkLmNoPqRsTuVwXyZaBcDeFgH',
  google: 'AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q',
  github: 'ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8',
};

describe('redaction of secrets in provider errors', () => {
  it('takes the bearer token out of a 401 body that echoes the request', () => {
    const body = `401 Unauthorized: {"error":{"message":"Invalid header Authorization: Bearer abc123def456ghi789","type":"invalid_request_error"}}`;
    const out = redactSecrets(body);
    assert.equal(out, `401 Unauthorized: {"error":{"message":"Invalid header Authorization: Bearer ${REDACTED}","type":"invalid_request_error"}}`);
  });

  it('recognises bearer tokens in any case', () => {
    assert.equal(redactSecrets('authorization: BEARER tok_98765432'), `authorization: BEARER ${REDACTED}`);
    assert.equal(redactSecrets('bearer  0123456789abcdef'), `bearer  ${REDACTED}`);
  });

  for (const [provider, key] of Object.entries(KEYS)) {
    it(`takes out a key of the ${provider} shape found in error text`, () => {
      const out = redactSecrets(`Incorrect API key provided: ${key}. You can find your API key at the dashboard.`);
      assert.equal(out, `Incorrect API key provided: ${REDACTED}. You can find your API key at the dashboard.`);
    });
  }

  it('takes the value out of api_key assignments in query strings, headers and JSON', () => {
    const secret = 'Q2xlYXJseU5vdEFLZXk';
    assert.equal(redactSecrets(`GET /v1/models?api_key=${secret}&limit=5`), `GET /v1/models?api_key=${REDACTED}&limit=5`);
    assert.equal(redactSecrets(`apikey: ${secret}`), `apikey: ${REDACTED}`);
    assert.equal(redactSecrets(`x-api-key: ${secret}`), `x-api-key: ${REDACTED}`);
    assert.equal(redactSecrets(`{"api_key": "${secret}", "model": "gpt-4o"}`), `{"api_key": "${REDACTED}", "model": "gpt-4o"}`);
    assert.equal(redactSecrets(`{\\"apiKey\\":\\"${secret}\\"}`), `{\\"apiKey\\":\\"${REDACTED}\\"}`);
    assert.equal(redactSecrets(`ACCESS_TOKEN=${secret}`), `ACCESS_TOKEN=${REDACTED}`);
    assert.equal(
      redactSecrets(`https://generativelanguage.googleapis.com/v1beta/models/gemini:generate?key=${secret}`),
      `https://generativelanguage.googleapis.com/v1beta/models/gemini:generate?key=${REDACTED}`,
    );
  });

  it('leaves placeholders and empty keys readable, so a missing key can still be diagnosed', () => {
    for (const text of [
      'api_key=null',
      'apikey: ""',
      '"api_key": "***"',
      'api_key is missing',
      'apiKey: undefined',
      'access_token=xxxxxxxxxx',
      'api_key: not_set',
    ]) {
      assert.equal(redactSecrets(text), text);
    }
  });

  it('replaces a known key wherever it appears, also JSON-escaped or URL-encoded', () => {
    const key = 'my/own+key=with"odd\\chars';
    const text = `raw ${key} json ${JSON.stringify({ key })} url https://x.test/?k=${encodeURIComponent(key)}`;
    const out = redactSecrets(text, [key]);
    assert.equal(out, `raw ${REDACTED} json {"key":"${REDACTED}"} url https://x.test/?k=${REDACTED}`);
  });

  it('does not replace known secrets too short to be keys', () => {
    assert.equal(redactSecrets('the test failed', ['test']), 'the test failed');
  });

  it('leaves ordinary words, identifiers and ids alone', () => {
    const text = [
      'The bearer of this note uses sk-learn and a task-oriented desk-top setup.',
      'hf_transfer is on; gsk_small; xai-grok; r8_x.',
      'Request id 123e4567-e89b-12d3-a456-426614174000, commit 9e07f65a1b2c3d4e5f60718293a4b5c6d7e8f90a.',
      'See https://api.openai.com/v1/chat/completions?stream=true&limit=10 and src/core/redact.ts:42.',
      'max_tokens=4096, temperature: 0.3, "model": "gpt-4o-mini", token count 123456789.',
      'Error 401: Incorrect API key provided. Rate limit reached for requests.',
    ].join('\n');
    assert.equal(redactSecrets(text), text);
  });
});

describe('redaction properties', () => {
  const keyChar = fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.+/='.split(''));
  const secretArb = fc.string({ unit: keyChar, minLength: 8, maxLength: 80 });
  /** How a provider's error might carry the key. */
  const wrapArb = fc.constantFrom<(secret: string) => string>(
    (s) => s,
    (s) => `"${s}"`,
    (s) => `'${s}'`,
    (s) => JSON.stringify({ error: { message: `Incorrect API key provided: ${s}`, code: 'invalid_api_key' } }),
    (s) => JSON.stringify(JSON.stringify({ headers: { authorization: `Bearer ${s}` } })),
    (s) => `https://api.example.test/v1/chat?key=${encodeURIComponent(s)}&x=1`,
    (s) => `https://user:${encodeURIComponent(s)}@proxy.example.test/`,
    (s) => `Authorization: Bearer ${s}`,
    (s) => `<pre>${s}</pre>`,
  );

  it('never lets a known secret through, wherever it is embedded', () => {
    fc.assert(
      fc.property(fc.string(), secretArb, wrapArb, fc.string(), (before, secret, wrap, after) => {
        const out = redactSecrets(before + wrap(secret) + after, [secret]);
        assert.ok(!out.includes(secret), `the secret survived in ${JSON.stringify(out)}`);
        assert.ok(!out.includes(encodeURIComponent(secret)), `the URL-encoded secret survived in ${JSON.stringify(out)}`);
      }),
      { numRuns: 2_000 },
    );
  });

  it('gives back text without secrets or key-like tokens unchanged', () => {
    const word = fc.string({
      unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZéüß'.split('')),
      minLength: 1,
      maxLength: 12,
    });
    const number = fc.integer({ min: 0, max: 999_999 }).map(String);
    const token = fc.oneof(
      { weight: 5, arbitrary: word },
      { weight: 1, arbitrary: number },
      {
        weight: 1,
        arbitrary: fc.constantFrom('Bearer', 'bearer', 'sk', 'hf', 'xai', 'api', 'key', 'token', '{', '}', '"', "'", '(', ')', '/', ':', '?'),
      },
    );
    const separator = fc.constantFrom(' ', '\n', ', ', '. ', ': ', ' - ', '\t');
    const textArb = fc.array(fc.tuple(token, separator), { maxLength: 60 }).map((parts) => parts.map(([t, s]) => t + s).join(''));
    fc.assert(
      fc.property(textArb, fc.array(secretArb, { maxLength: 3 }), (text, secrets) => {
        // Known secrets that do not occur in the text must not change it either.
        const absent = secrets.filter((s) => !text.includes(s) && !text.includes(encodeURIComponent(s)));
        assert.equal(redactSecrets(text, absent), text);
      }),
      { numRuns: 2_000 },
    );
  });
});
