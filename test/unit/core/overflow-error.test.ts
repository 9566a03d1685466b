import assert from 'node:assert/strict';
import { OVERFLOW_PATTERNS, describeOverflow, isContextOverflow } from '../../../src/core/overflow-error';

/** Mirrors the AI SDK's APICallError fields without importing the SDK. */
function apiCallError(fields: {
  message?: string;
  statusCode?: number;
  responseBody?: string;
  data?: unknown;
  cause?: unknown;
  requestBodyValues?: unknown;
}): Error {
  return Object.assign(new Error(fields.message ?? 'Bad Request'), { name: 'AI_APICallError', ...fields });
}

/** Real wordings, each with the table row that should claim it. */
const WORDINGS: ReadonlyArray<{ provider: string; text: string }> = [
  { provider: 'openai', text: 'Error code: context_length_exceeded' },
  {
    provider: 'openai',
    text: "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens. Please reduce the length of the messages.",
  },
  { provider: 'openai', text: 'Your input exceeds the context window of this model. Please adjust your input and try again.' },
  { provider: 'anthropic', text: 'prompt is too long: 210000 tokens > 200000 maximum' },
  {
    provider: 'anthropic',
    text: 'input length and `max_tokens` exceed context limit: 190000 + 20000 > 200000, decrease input length or `max_tokens` and try again',
  },
  {
    provider: 'gemini',
    text: 'The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).',
  },
  { provider: 'ollama', text: 'input length exceeds the context length' },
  { provider: 'ollama', text: 'prompt too long; exceeded max context length by 904 tokens' },
  {
    provider: 'vllm',
    text: "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.",
  },
  { provider: 'vllm', text: 'Prompt length of 9000 is too long and exceeds limit of 8192' },
  { provider: 'vllm', text: "The prompt (5000 tokens) is longer than the model's context length (4096 tokens)." },
  { provider: 'vllm', text: 'The decoder prompt (length 5000) is longer than the maximum model length of 4096.' },
  {
    provider: 'lmstudio',
    text: 'Trying to keep the first 5000 tokens when context the overflows. However, the model is loaded with context length of only 4096 tokens, which is not enough.',
  },
  {
    provider: 'lmstudio',
    text: 'The number of tokens to keep from the initial prompt is greater than the context length.',
  },
  {
    provider: 'openrouter',
    text: "This endpoint's maximum context length is 131072 tokens. However, you requested about 140000 tokens (130000 of text input, 10000 in the output).",
  },
  { provider: 'azure', text: 'Please reduce the length of the messages or completion.' },
  {
    provider: 'mistral',
    text: 'Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 maximum context length',
  },
  { provider: 'xai', text: "This model's maximum prompt length is 131072 but the request contains 140000 tokens." },
  { provider: 'llama.cpp', text: 'the request exceeds the available context size, try increasing it' },
  { provider: 'llama.cpp', text: 'input (9000 tokens) is larger than the max context size (8192 tokens). skipping' },
  { provider: 'llama.cpp', text: 'exceed_context_size_error' },
  { provider: 'bedrock', text: 'Input is too long for requested model.' },
  { provider: 'bedrock', text: 'Too many input tokens. Max input tokens: 8192, request input token count: 9000' },
  { provider: 'generic', text: 'context length exceeded' },
  { provider: 'generic', text: 'Context window exceeded for this request' },
  { provider: 'generic', text: 'Request failed: maximum context length reached' },
  { provider: 'generic', text: 'The conversation exceeds the model context limit' },
];

/** Errors that share words with an overflow but that compaction cannot fix. */
const LOOK_ALIKES: readonly string[] = [
  'rate limit exceeded',
  'Rate limit exceeded: maximum number of retries exceeded',
  'maximum number of retries exceeded',
  'invalid api key',
  'Incorrect API key provided: sk-...',
  'context canceled',
  'context deadline exceeded',
  'Request timed out.',
  'token expired',
  'Too many tokens, please wait before trying again.',
  'Too many input tokens per minute, please slow down',
  'Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000.',
  'This request would exceed the rate limit for your organization of 40,000 input tokens per minute.',
  'You exceeded your current quota, please check your plan and billing details.',
];

describe('overflow-error', () => {
  describe('provider wordings', () => {
    for (const { provider, text } of WORDINGS) {
      it(`${provider}: "${text}"`, () => {
        assert.equal(describeOverflow(new Error(text))?.provider, provider);
      });
    }

    it('recognises every wording inside a JSON response body too', () => {
      for (const { provider, text } of WORDINGS) {
        const error = apiCallError({
          statusCode: 400,
          responseBody: JSON.stringify({ error: { message: text, type: 'invalid_request_error' } }),
        });
        assert.equal(describeOverflow(error)?.provider, provider, text);
      }
    });

    it('has a wording case for every table row', () => {
      for (const row of OVERFLOW_PATTERNS) {
        assert.ok(
          WORDINGS.some(({ text }) => row.pattern.test(text)),
          `no case covers ${row.provider} /${row.pattern.source}/`,
        );
      }
    });

    it('makes every table pattern case-insensitive', () => {
      for (const row of OVERFLOW_PATTERNS) assert.ok(row.pattern.flags.includes('i'), row.pattern.source);
      assert.equal(isContextOverflow('PROMPT IS TOO LONG: 210000 TOKENS > 200000 MAXIMUM'), true);
    });

    it('reports the matching pattern source', () => {
      const match = describeOverflow('prompt is too long: 210000 tokens > 200000 maximum');
      const row = OVERFLOW_PATTERNS.find((r) => r.pattern.test('prompt is too long'));
      assert.ok(row);
      assert.equal(match?.pattern, row.pattern.source);
    });
  });

  describe('HTTP status rules', () => {
    it('counts a 413 as overflow whatever the body says', () => {
      const match = describeOverflow(apiCallError({ statusCode: 413, responseBody: 'Payload Too Large' }));
      assert.deepEqual(match, { provider: 'http-413', pattern: 'HTTP 413', statusCode: 413 });
    });

    it('reads a 413 from .status as well as .statusCode', () => {
      assert.equal(describeOverflow({ status: 413, message: 'Request Entity Too Large' })?.provider, 'http-413');
    });

    it('reads a 413 from response.status and from AWS $metadata', () => {
      assert.equal(describeOverflow({ message: 'failed', response: { status: 413, data: 'too big' } })?.provider, 'http-413');
      assert.equal(describeOverflow({ message: 'failed', $metadata: { httpStatusCode: 413 } })?.provider, 'http-413');
    });

    it('counts a 400 with an empty body', () => {
      const match = describeOverflow(apiCallError({ message: 'Bad Request', statusCode: 400, responseBody: '' }));
      assert.deepEqual(match, { provider: 'http-empty-body', pattern: 'HTTP 400 with empty body', statusCode: 400 });
    });

    it('counts a 429 with a whitespace-only body', () => {
      const match = describeOverflow(apiCallError({ message: 'Too Many Requests', statusCode: 429, responseBody: ' \n\t ' }));
      assert.equal(match?.provider, 'http-empty-body');
      assert.equal(match?.statusCode, 429);
    });

    it('prefers the 413 rule for a 413 with an empty body', () => {
      assert.equal(describeOverflow(apiCallError({ statusCode: 413, responseBody: '' }))?.provider, 'http-413');
    });

    it('counts the SDKs\' "400 status code (no body)" message', () => {
      const match = describeOverflow(new Error('400 status code (no body)'));
      assert.equal(match?.provider, 'http-empty-body');
      assert.equal(match?.statusCode, 400);
    });

    it('does not count a 429 whose body is an ordinary rate-limit message', () => {
      const error = apiCallError({
        message: 'Rate limit reached for requests',
        statusCode: 429,
        responseBody: JSON.stringify({ error: { message: 'Rate limit reached for requests', code: 'rate_limit_exceeded' } }),
      });
      assert.equal(isContextOverflow(error), false);
    });

    it('does not count a 400 with an unrelated body', () => {
      const error = apiCallError({
        statusCode: 400,
        responseBody: JSON.stringify({ error: { message: 'Invalid value for temperature' } }),
      });
      assert.equal(isContextOverflow(error), false);
    });

    it('does not count a status without any body field', () => {
      assert.equal(isContextOverflow({ statusCode: 400, message: 'Bad Request' }), false);
    });

    it('does not count a 500, even with an empty body', () => {
      assert.equal(isContextOverflow(apiCallError({ message: 'Internal Server Error', statusCode: 500, responseBody: 'oops' })), false);
      assert.equal(isContextOverflow(apiCallError({ message: 'Internal Server Error', statusCode: 500, responseBody: '' })), false);
    });

    it('counts a 500 whose text matches a pattern, and keeps its status', () => {
      const match = describeOverflow(apiCallError({ message: 'upstream error', statusCode: 500, responseBody: 'prompt is too long' }));
      assert.equal(match?.provider, 'anthropic');
      assert.equal(match?.statusCode, 500);
    });
  });

  describe('look-alikes', () => {
    for (const text of LOOK_ALIKES) {
      it(`does not match "${text}"`, () => {
        assert.equal(describeOverflow(new Error(text)), undefined);
        assert.equal(isContextOverflow(apiCallError({ message: text, statusCode: 429, responseBody: text })), false);
      });
    }
  });

  describe('error shapes', () => {
    it('reads a plain string', () => {
      assert.equal(isContextOverflow('context_length_exceeded'), true);
    });

    it('reads an APICallError-like data.error.code behind a bland message', () => {
      const error = apiCallError({
        message: 'Bad Request',
        statusCode: 400,
        responseBody: '{"error":{"code":"invalid"}}',
        data: { error: { code: 'context_length_exceeded', message: 'Too long.' } },
      });
      assert.deepEqual(describeOverflow(error), {
        provider: 'openai',
        pattern: 'context_length_exceeded',
        statusCode: 400,
      });
    });

    it('reads an Anthropic-SDK-like error.error.message', () => {
      const error = Object.assign(new Error('400 invalid request'), {
        status: 400,
        error: { type: 'error', error: { type: 'invalid_request_error', message: 'prompt is too long: 201000 tokens > 200000 maximum' } },
      });
      assert.equal(describeOverflow(error)?.provider, 'anthropic');
    });

    it('reads an axios-like response.data', () => {
      const error = {
        message: 'Request failed with status code 400',
        response: { status: 400, data: { detail: 'exceeds the available context size' } },
      };
      assert.equal(describeOverflow(error)?.provider, 'llama.cpp');
    });

    it('reads a Gemini-style array body', () => {
      const error = apiCallError({
        statusCode: 400,
        data: [
          {
            error: {
              code: 400,
              status: 'INVALID_ARGUMENT',
              message: 'The input token count (2000000) exceeds the maximum number of tokens allowed (1048576).',
            },
          },
        ],
      });
      assert.equal(describeOverflow(error)?.provider, 'gemini');
    });

    it('unescapes JSON \\u escapes in a raw body', () => {
      const body = '{"error":{"message":"This endpoint\\u0027s maximum context length is 131072 tokens."}}';
      assert.equal(describeOverflow(apiCallError({ statusCode: 400, responseBody: body }))?.provider, 'openrouter');
    });

    it("reads the provider's error OpenRouter passes through in metadata.raw, and the window it states", () => {
      // As OpenRouter answers when the provider it routed to refuses the prompt.
      const raw = JSON.stringify({
        type: 'error',
        error: { type: 'invalid_request_error', message: 'prompt is too long: 201134 tokens > 200000 maximum' },
      });
      const body = JSON.stringify({ error: { message: 'Provider returned error', code: 400, metadata: { raw, provider_name: 'Anthropic' } } });
      const match = describeOverflow(apiCallError({ statusCode: 400, responseBody: body, data: JSON.parse(body) }));
      assert.equal(match?.provider, 'anthropic');
      assert.equal(match?.limit, 200000);
    });

    it('follows a nested cause chain', () => {
      const inner = new Error('Input is too long for requested model.');
      const middle = new Error('stream failed', { cause: inner });
      const outer = new Error('agent turn failed', { cause: middle });
      assert.equal(describeOverflow(outer)?.provider, 'bedrock');
    });

    it('follows causes to depth 5 and no further', () => {
      const chain = (depth: number): unknown => {
        let error: unknown = new Error('context window exceeded');
        for (let i = 0; i < depth; i += 1) error = { message: `wrapper ${i}`, cause: error };
        return error;
      };
      assert.equal(isContextOverflow(chain(5)), true);
      assert.equal(isContextOverflow(chain(6)), false);
    });

    it('survives a cause cycle', () => {
      const a: { message: string; cause?: unknown } = { message: 'a' };
      const b = { message: 'b', cause: a };
      a.cause = b;
      assert.equal(isContextOverflow(a), false);
      const c: { message: string; cause?: unknown } = { message: 'c', cause: { message: 'context length exceeded' } };
      (c.cause as { cause?: unknown }).cause = c;
      assert.equal(isContextOverflow(c), true);
    });

    it('does not let a self-reference hide an overflow later in errors[]', () => {
      // Re-walking the loop would spend the node budget before the last entry.
      const loop: { message: string; errors: unknown[] } = { message: 'socket hang up', errors: [] };
      loop.errors.push(loop, loop, loop, loop, loop, loop);
      const retry = { message: 'Failed after 2 attempts.', errors: [loop, { message: 'context window exceeded' }] };
      assert.equal(describeOverflow(retry)?.provider, 'generic');
    });

    it('reads a RetryError-like errors array and lastError', () => {
      const overflow = apiCallError({ statusCode: 400, responseBody: '{"error":{"code":"context_length_exceeded"}}' });
      const retry = Object.assign(new Error('Failed after 3 attempts.'), {
        name: 'AI_RetryError',
        reason: 'maxRetriesExceeded',
        errors: [new Error('socket hang up'), overflow],
        lastError: overflow,
      });
      assert.equal(describeOverflow(retry)?.provider, 'openai');
      const errorsOnly = { message: 'Failed after 2 attempts.', errors: [overflow, new Error('socket hang up')] };
      assert.equal(describeOverflow(errorsOnly)?.provider, 'openai');
    });

    it('applies the empty-body rule to an error inside a RetryError', () => {
      const retry = { message: 'Failed after 3 attempts.', lastError: apiCallError({ statusCode: 429, responseBody: '' }) };
      assert.equal(describeOverflow(retry)?.provider, 'http-empty-body');
    });

    it('does not search the request that was sent', () => {
      const error = apiCallError({
        message: 'Invalid value for temperature',
        statusCode: 400,
        responseBody: '{"error":{"message":"Invalid value for temperature"}}',
        requestBodyValues: { messages: [{ role: 'user', content: 'why does it say context length exceeded?' }] },
      });
      assert.equal(isContextOverflow(error), false);
    });
  });

  describe('odd inputs', () => {
    const odd: ReadonlyArray<[string, unknown]> = [
      ['null', null],
      ['undefined', undefined],
      ['a number', 413],
      ['a boolean', true],
      ['a symbol', Symbol('context length exceeded')],
      ['a bigint', 10n],
      ['a function', () => 'context length exceeded'],
      ['an empty object', {}],
      ['an empty array', []],
      ['an empty string', ''],
    ];
    for (const [name, value] of odd) {
      it(`returns false for ${name}`, () => {
        assert.equal(isContextOverflow(value), false);
        assert.equal(describeOverflow(value), undefined);
      });
    }

    it('survives a throwing getter and still reads the other fields', () => {
      const error = {
        get message(): string {
          throw new Error('boom');
        },
        responseBody: 'prompt is too long',
      };
      assert.equal(describeOverflow(error)?.provider, 'anthropic');
      const onlyThrows = {
        get message(): string {
          throw new Error('boom');
        },
        get statusCode(): number {
          throw new Error('boom');
        },
      };
      assert.equal(isContextOverflow(onlyThrows), false);
    });

    it('survives a proxy whose every trap throws, and a revoked proxy', () => {
      const hostile = new Proxy(
        {},
        {
          get: () => {
            throw new Error('get');
          },
          has: () => {
            throw new Error('has');
          },
          getPrototypeOf: () => {
            throw new Error('proto');
          },
        },
      );
      assert.equal(isContextOverflow(hostile), false);
      const { proxy, revoke } = Proxy.revocable({ message: 'context length exceeded' }, {});
      revoke();
      assert.equal(isContextOverflow(proxy), false);
      assert.equal(isContextOverflow({ message: 'x', cause: proxy }), false);
    });

    it('stops on a huge errors array without hanging', () => {
      const errors = Array.from({ length: 100_000 }, () => ({ message: 'socket hang up' }));
      assert.equal(isContextOverflow({ message: 'Failed', errors }), false);
    });
  });
});

describe('overflow-error: the window the provider states', () => {
  const cases: Array<[string, number]> = [
    ["This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.", 8192],
    ['prompt is too long: 210000 tokens > 200000 maximum', 200000],
    ['input length and `max_tokens` exceed context limit: 197032 + 21333 > 200000, decrease input length or `max_tokens` and try again', 200000],
    ['The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)', 1048576],
    ['Trying to keep the first 5000 tokens when context the overflows. However, the model is loaded with context length of only 4096 tokens', 4096],
    ["This endpoint's maximum context length is 131,072 tokens. However, you requested about 140000 tokens", 131072],
    ['Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 maximum context length', 32768],
    ['request (5012 tokens) exceeds the available context size (4096 tokens), try increasing it', 4096],
    ['input (9000 tokens) is larger than the max context size (8192 tokens). skipping', 8192],
  ];
  for (const [message, limit] of cases) {
    it(`reads ${limit} from "${message.slice(0, 50)}…"`, () => {
      assert.equal(describeOverflow(new Error(message))?.limit, limit);
    });
  }

  it('states no limit when the message gives none', () => {
    const match = describeOverflow(new Error('context length exceeded'));
    assert.ok(match);
    assert.equal(match.limit, undefined);
  });
});
