import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { AssistantModelMessage, ModelMessage, ToolModelMessage } from 'ai';
import type { LogRecord } from '../../../src/core/history';
import type { Message, Part, Producer, ProviderMetadata } from '../../../src/core/messages';
import { recordLineSchema } from '../../../src/app/store/schemas';
import { hintedRequest } from '../../../src/llm/cache-hints';
import { fromResponseMessages, toModelMessages } from '../../../src/llm/model-messages';

const GEMINI: Producer = { provider: 'google.generative-ai', model: 'gemini-3-pro-preview' };
const CLAUDE: Producer = { provider: 'anthropic.messages', model: 'claude-sonnet-4-5' };
const GPT: Producer = { provider: 'openai.responses', model: 'gpt-5' };

const counter = (): (() => string) => {
  let n = 0;
  return () => `m${++n}`;
};

function assistant(content: ModelMessage['content'] & unknown[]): AssistantModelMessage {
  return { role: 'assistant', content } as AssistantModelMessage;
}

/** What a stored message reads back as: its line through the store's schema. */
function stored(message: Message): Message {
  const line = JSON.parse(JSON.stringify({ v: 1, record: { type: 'message', message } satisfies LogRecord })) as unknown;
  const record = recordLineSchema().parse(line).record;
  assert.ok(record.type === 'message');
  return record.message;
}

function partsOf(message: ModelMessage | undefined): Array<{ type: string; providerOptions?: unknown }> {
  assert.ok(message && Array.isArray(message.content));
  return message.content as Array<{ type: string; providerOptions?: unknown }>;
}

describe('provider metadata', () => {
  it('keeps a Gemini thought signature on its tool call, marked with the model that made it, and sends it back to that model', () => {
    const response = assistant([
      {
        type: 'tool-call',
        toolCallId: 'c1',
        toolName: 'read_file',
        input: { path: 'a' },
        providerOptions: { google: { thoughtSignature: 'SIG-1' } },
      },
    ]);
    const [message] = fromResponseMessages([response], counter(), GEMINI);
    const call = message!.content[0]!;
    assert.deepEqual(call.type === 'tool-call' && call.providerMetadata, { ...GEMINI, data: { google: { thoughtSignature: 'SIG-1' } } });
    const [sent] = toModelMessages([stored(message!)], GEMINI);
    assert.deepEqual(partsOf(sent)[0]!.providerOptions, { google: { thoughtSignature: 'SIG-1' } });
  });

  it('sends none of it to another model of the same provider, nor to another provider', () => {
    const [message] = fromResponseMessages(
      [assistant([{ type: 'tool-call', toolCallId: 'c1', toolName: 'x', input: {}, providerOptions: { google: { thoughtSignature: 'SIG-1' } } }])],
      counter(),
      GEMINI,
    );
    for (const to of [{ ...GEMINI, model: 'gemini-3-flash' }, CLAUDE, undefined]) {
      const [sent] = toModelMessages([message!], to);
      assert.equal(partsOf(sent)[0]!.providerOptions, undefined, `sent to ${to?.model ?? 'nobody'}`);
    }
  });

  it("keeps a Claude thinking block's signature and its redacted thinking, before the tool use, in order", () => {
    const response = assistant([
      { type: 'reasoning', text: 'let me look', providerOptions: { anthropic: { signature: 'ANT-SIG' } } },
      { type: 'reasoning', text: '', providerOptions: { anthropic: { redactedData: 'REDACTED' } } },
      { type: 'tool-call', toolCallId: 't1', toolName: 'read_file', input: { path: 'a' } },
    ]);
    const [message] = fromResponseMessages([response], counter(), CLAUDE);
    const sent = partsOf(toModelMessages([stored(message!)], CLAUDE)[0]);
    assert.deepEqual(
      sent.map((p) => [p.type, p.providerOptions]),
      [
        ['reasoning', { anthropic: { signature: 'ANT-SIG' } }],
        ['reasoning', { anthropic: { redactedData: 'REDACTED' } }],
        ['tool-call', undefined],
      ],
    );
  });

  it('leaves reasoning out for Anthropic and OpenAI when it is not theirs, and sends its text elsewhere', () => {
    const [message] = fromResponseMessages(
      [
        assistant([
          { type: 'reasoning', text: 'thinking aloud', providerOptions: { google: { thoughtSignature: 'G' } } },
          { type: 'reasoning', text: '', providerOptions: { google: { thoughtSignature: 'H' } } },
          { type: 'text', text: 'done' },
        ]),
      ],
      counter(),
      GEMINI,
    );
    assert.deepEqual(partsOf(toModelMessages([message!], CLAUDE)[0]), [{ type: 'text', text: 'done' }]);
    assert.deepEqual(partsOf(toModelMessages([message!], GPT)[0]), [{ type: 'text', text: 'done' }]);
    assert.deepEqual(partsOf(toModelMessages([message!], { provider: 'openai-compatible.chat', model: 'qwen' })[0]), [
      { type: 'reasoning', text: 'thinking aloud' },
      { type: 'text', text: 'done' },
    ]);
  });

  it("keeps an OpenAI reasoning item's id and encrypted content for the same model", () => {
    const options = { openai: { itemId: 'rs_1', reasoningEncryptedContent: 'ENC' } };
    const [message] = fromResponseMessages([assistant([{ type: 'reasoning', text: '', providerOptions: options }])], counter(), GPT);
    assert.deepEqual(partsOf(toModelMessages([stored(message!)], GPT)[0]), [{ type: 'reasoning', text: '', providerOptions: options }]);
    assert.deepEqual(partsOf(toModelMessages([message!], { ...GPT, model: 'gpt-5-mini' })[0]), []);
  });

  it('keeps no metadata when the model that answered is not known, and none the provider left empty', () => {
    const response = assistant([
      { type: 'text', text: 'hi', providerOptions: { google: { thoughtSignature: 'S' } } },
      { type: 'text', text: 'there', providerOptions: { openai: { itemId: null } as unknown as Record<string, string> } },
    ]);
    assert.deepEqual(fromResponseMessages([response], counter())[0]!.content, [
      { type: 'text', text: 'hi' },
      { type: 'text', text: 'there' },
    ]);
    assert.deepEqual(fromResponseMessages([response], counter(), GEMINI)[0]!.content[1], { type: 'text', text: 'there' });
  });

  it("keeps a part's metadata beside the cache breakpoint Anthropic's request puts on it", () => {
    const message: Message = {
      id: 'a',
      role: 'assistant',
      content: [
        { type: 'reasoning', text: 'r', providerMetadata: { ...CLAUDE, data: { anthropic: { signature: 'S' } } } },
        { type: 'tool-call', toolCallId: 't', toolName: 'x', input: {}, providerMetadata: { ...CLAUDE, data: { anthropic: { caller: 'direct' } } } },
        { type: 'text', text: '' },
      ],
    };
    const request = hintedRequest(
      'system',
      [{ id: 'u', role: 'user', content: [{ type: 'text', text: 'go' }] }, message],
      { provider: 'anthropic', ttl: '5m' },
      { to: CLAUDE },
    );
    const parts = partsOf(request.messages[1]);
    assert.deepEqual(parts[0]!.providerOptions, { anthropic: { signature: 'S' } });
    assert.deepEqual(parts[1]!.providerOptions, { anthropic: { caller: 'direct', cacheControl: { type: 'ephemeral' } } });
  });

  it('puts the breakpoint on the part it is planned for when reasoning before it is left out', () => {
    const message: Message = {
      id: 'a',
      role: 'assistant',
      content: [
        { type: 'reasoning', text: 'foreign', providerMetadata: { ...GEMINI, data: { google: { thoughtSignature: 'G' } } } },
        { type: 'tool-call', toolCallId: 't', toolName: 'x', input: {} },
        { type: 'text', text: '' },
      ],
    };
    const request = hintedRequest(
      'system',
      [{ id: 'u', role: 'user', content: [{ type: 'text', text: 'go' }] }, message],
      { provider: 'anthropic', ttl: '5m' },
      { to: CLAUDE },
    );
    assert.deepEqual(
      partsOf(request.messages[1]).map((p) => [p.type, p.providerOptions]),
      [
        ['tool-call', { anthropic: { cacheControl: { type: 'ephemeral' } } }],
        ['text', undefined],
      ],
    );
  });

  it('reads a part stored before metadata was kept, and refuses metadata of no known maker', () => {
    assert.deepEqual(stored({ id: 'a', role: 'assistant', content: [{ type: 'reasoning', text: 'old' }] }).content, [
      { type: 'reasoning', text: 'old' },
    ]);
    const bad = {
      v: 1,
      record: { type: 'message', message: { id: 'a', role: 'assistant', content: [{ type: 'text', text: 'x', providerMetadata: { data: {} } }] } },
    };
    assert.equal(recordLineSchema().safeParse(bad).success, false);
  });

  describe('property', () => {
    const producer = fc.constantFrom<Producer>(
      GEMINI,
      CLAUDE,
      GPT,
      { ...GEMINI, model: 'gemini-3-flash' },
      { provider: 'openrouter', model: 'anthropic/claude-sonnet-4.5' },
    );
    const data = fc.dictionary(
      fc.constantFrom('google', 'anthropic', 'openai', 'openrouter'),
      fc.dictionary(
        fc.string({ minLength: 1, maxLength: 8 }),
        fc.oneof(fc.string({ minLength: 1 }), fc.integer(), fc.array(fc.string(), { maxLength: 2 })),
        { minKeys: 1, maxKeys: 3 },
      ),
      { minKeys: 1, maxKeys: 2 },
    );
    const metadata = fc.option(
      fc.tuple(producer, data).map(([p, d]): ProviderMetadata => ({ ...p, data: d })),
      { nil: undefined },
    );
    const with_ = <P extends Part>(part: P, meta: ProviderMetadata | undefined): P => (meta ? { ...part, providerMetadata: meta } : part);
    const part: fc.Arbitrary<Part> = fc.oneof(
      fc.tuple(fc.string(), metadata).map(([text, m]) => with_({ type: 'text', text }, m)),
      fc.tuple(fc.string(), metadata).map(([text, m]) => with_({ type: 'reasoning', text }, m)),
      fc
        .tuple(fc.string({ minLength: 1, maxLength: 6 }), metadata)
        .map(([id, m]) => with_({ type: 'tool-call', toolCallId: id, toolName: 'read_file', input: { path: id } }, m)),
    );
    const log = fc.array(fc.array(part, { minLength: 1, maxLength: 5 }), { minLength: 1, maxLength: 6 });

    it('any log sends each part its metadata back to the model that made it, after a reload too, and none to another', () => {
      fc.assert(
        fc.property(log, producer, (contents, to) => {
          const messages = contents.map((content, i): Message => stored({ id: `a${i}`, role: 'assistant', content }));
          const sent = toModelMessages(messages, to);
          sent.forEach((model, i) => {
            const kept = messages[i]!.content.filter((p) => !(p.type === 'reasoning' && !sentReasoning(p, to)));
            const parts = partsOf(model);
            assert.equal(parts.length, kept.length);
            parts.forEach((p, j) => {
              const original = kept[j]!;
              const meta = 'providerMetadata' in original ? original.providerMetadata : undefined;
              const ours = meta !== undefined && meta.provider === to.provider && meta.model === to.model;
              assert.deepEqual(p.providerOptions, ours ? meta.data : undefined);
            });
          });
          // What went back comes back as it was, with the metadata that went.
          const back = fromResponseMessages(sent as Array<AssistantModelMessage | ToolModelMessage>, counter(), to);
          back.forEach((message, i) => {
            for (const p of message.content) {
              const meta = 'providerMetadata' in p ? p.providerMetadata : undefined;
              if (meta) assert.deepEqual({ provider: meta.provider, model: meta.model }, to);
            }
            assert.ok(i < messages.length);
          });
        }),
      );
    });
  });
});

/** Whether a reasoning part is sent to `to`: its own, or text where plain reasoning is taken. */
function sentReasoning(part: Extract<Part, { type: 'reasoning' }>, to: Producer): boolean {
  const meta = part.providerMetadata;
  if (meta && meta.provider === to.provider && meta.model === to.model) return true;
  return part.text.length > 0 && !/^(anthropic|openai\.responses)/.test(to.provider);
}
