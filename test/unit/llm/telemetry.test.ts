import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { generateText, registerTelemetry, type Telemetry } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { z } from 'zod';
import { createTelemetry, NO_TELEMETRY, type LongrunTelemetry } from '../../../src/llm/telemetry';
import type { Conversation } from '../../../src/app/conversation/conversation';
import { templateSummary } from '../core/fixtures';
import { twelveTurns } from '../fixtures/conversation-deps';

type GenerateResult = Awaited<ReturnType<MockLanguageModelV4['doGenerate']>>;

const answer = (text: string): GenerateResult => ({
  content: [{ type: 'text', text }],
  finishReason: { unified: 'stop', raw: 'stop' },
  usage: {
    inputTokens: { total: 120, noCache: 120, cacheRead: undefined, cacheWrite: undefined },
    outputTokens: { total: 30, text: 30, reasoning: undefined },
  },
  warnings: [],
});

interface ReceivedRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** A stand-in OTLP/HTTP collector on loopback that records every request and answers `status`. */
async function startCollector(status = 200): Promise<{ base: string; requests: ReceivedRequest[]; close(): Promise<void> }> {
  const requests: ReceivedRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const body = req.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw;
      requests.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: body.toString('utf8') });
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    base: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        // The exporter keeps its connection alive; close would wait for it otherwise.
        server.closeAllConnections();
      }),
  };
}

const otlpValue = z.object({
  stringValue: z.string().optional(),
  boolValue: z.boolean().optional(),
  intValue: z.union([z.number(), z.string()]).optional(),
  doubleValue: z.number().optional(),
});
const otlpAttributes = z.array(z.object({ key: z.string(), value: otlpValue })).optional();
const otlpTraces = z.object({
  resourceSpans: z.array(
    z.object({
      resource: z.object({ attributes: otlpAttributes }).optional(),
      scopeSpans: z.array(
        z.object({
          spans: z.array(
            z.object({
              traceId: z.string(),
              spanId: z.string(),
              parentSpanId: z.string().optional(),
              name: z.string(),
              attributes: otlpAttributes,
              status: z.object({ code: z.number().optional() }).optional(),
            }),
          ),
        }),
      ),
    }),
  ),
});

interface ExportedSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string | undefined;
  readonly name: string;
  readonly attributes: Record<string, string | number | boolean | undefined>;
  readonly resource: Record<string, string | number | boolean | undefined>;
  readonly statusCode: number | undefined;
}

function flatten(attributes: z.infer<typeof otlpAttributes>): Record<string, string | number | boolean | undefined> {
  return Object.fromEntries(
    (attributes ?? []).map(({ key, value }) => [
      key,
      value.stringValue ?? value.boolValue ?? (value.intValue !== undefined ? Number(value.intValue) : value.doubleValue),
    ]),
  );
}

function spansOf(requests: readonly ReceivedRequest[]): ExportedSpan[] {
  return requests.flatMap((request) =>
    otlpTraces.parse(JSON.parse(request.body)).resourceSpans.flatMap((resourceSpans) =>
      resourceSpans.scopeSpans.flatMap((scope) =>
        scope.spans.map((span) => ({
          traceId: span.traceId,
          spanId: span.spanId,
          parentSpanId: span.parentSpanId || undefined,
          name: span.name,
          attributes: flatten(span.attributes),
          resource: flatten(resourceSpans.resource?.attributes),
          statusCode: span.status?.code,
        })),
      ),
    ),
  );
}

function spanNamed(spans: readonly ExportedSpan[], name: string): ExportedSpan {
  const span = spans.find((s) => s.name === name);
  assert.ok(span, `no span named ${name}; got ${spans.map((s) => s.name).join(', ')}`);
  return span;
}

/** A conversation of twelve turns, traced by `telemetry`, whose summarizer always answers. */
function compactableConversation(dir: string, telemetry: LongrunTelemetry): Promise<Conversation> {
  return twelveTurns(dir, { summarizerName: 's', summary: templateSummary('Twelve turns of notes.'), telemetry: () => telemetry });
}

describe('createTelemetry', () => {
  let collector: Awaited<ReturnType<typeof startCollector>>;
  const opened: LongrunTelemetry[] = [];
  const open = (config: Parameters<typeof createTelemetry>[0]): LongrunTelemetry => {
    const telemetry = createTelemetry(config);
    opened.push(telemetry);
    return telemetry;
  };

  beforeEach(async () => {
    collector = await startCollector();
  });

  afterEach(async () => {
    await Promise.all(opened.splice(0).map((telemetry) => telemetry.shutdown()));
    await collector.close();
  });

  it('exports a traced model call to /v1/traces as OTLP JSON with its metadata and service name', async () => {
    const telemetry = open({ endpoint: collector.base, serviceName: 'longrun-test' });
    await generateText({
      model: new MockLanguageModelV4({ doGenerate: answer('done') }),
      prompt: 'hello',
      telemetry: telemetry.settings('longrun.test', { 'longrun.round': 3 }),
    });
    await telemetry.flush();

    assert.ok(collector.requests.length > 0, 'the collector received nothing');
    for (const request of collector.requests) {
      assert.equal(request.method, 'POST');
      assert.equal(request.path, '/v1/traces');
      assert.match(String(request.headers['content-type']), /application\/json/);
    }
    const call = spanNamed(spansOf(collector.requests), 'invoke_agent longrun.test');
    assert.equal(call.attributes['gen_ai.agent.name'], 'longrun.test');
    assert.equal(call.attributes['longrun.round'], 3);
    assert.equal(call.resource['service.name'], 'longrun-test');
  });

  it('exports a conversation’s compaction as a span with its reason, round and tokens before and after', async () => {
    const telemetry = open({ endpoint: collector.base });
    const dir = await mkdtemp(join(tmpdir(), 'longrun-telemetry-'));
    try {
      const conversation = await compactableConversation(dir, telemetry);
      const outcome = await conversation.compact('manual');
      await telemetry.flush();

      assert.equal(outcome.status, 'compacted', 'reason' in outcome ? outcome.reason : '');
      if (outcome.status !== 'compacted') return;
      const { tokensBefore, tokensAfter } = outcome.compaction;
      assert.ok(tokensBefore > tokensAfter && tokensAfter > 0, `${tokensBefore} → ${tokensAfter}`);
      const span = spanNamed(spansOf(collector.requests), 'longrun.compaction');
      assert.deepEqual(
        {
          reason: span.attributes['longrun.reason'],
          conversation: span.attributes['longrun.conversation'],
          status: span.attributes['longrun.status'],
          before: span.attributes['longrun.tokens_before'],
          after: span.attributes['longrun.tokens_after'],
          round: span.attributes['longrun.round'],
          fallback: span.attributes['longrun.fallback'],
        },
        { reason: 'manual', conversation: 'c1', status: 'compacted', before: tokensBefore, after: tokensAfter, round: 1, fallback: false },
      );
      assert.equal(span.attributes['longrun.messages_compacted'], outcome.compaction.compactedCount);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('keeps prompts, responses and export headers out of the exported spans', async () => {
    const telemetry = open({ endpoint: collector.base, headers: { Authorization: 'Basic c2VjcmV0LWtleQ==' } });
    await generateText({
      model: new MockLanguageModelV4({ doGenerate: answer('RESPONSE-TEXT-7f3a') }),
      instructions: 'SYSTEM-TEXT-5c1d',
      prompt: 'PROMPT-TEXT-9b2e',
      telemetry: telemetry.settings('longrun.agent'),
    });
    await telemetry.flush();

    assert.ok(collector.requests.length > 0, 'the collector received nothing');
    assert.equal(collector.requests[0]?.headers.authorization, 'Basic c2VjcmV0LWtleQ==');
    const bodies = collector.requests.map((request) => request.body).join('\n');
    assert.ok(bodies.includes('longrun.agent'), 'the call was not exported');
    for (const secret of ['PROMPT-TEXT-9b2e', 'RESPONSE-TEXT-7f3a', 'SYSTEM-TEXT-5c1d', 'c2VjcmV0LWtleQ==']) {
      assert.ok(!bodies.includes(secret), `${secret} was exported`);
    }
  });

  it('cleans every exported span of the keys it is told of, in the attributes given at its start and later', async () => {
    const key = 'no-shape.key(42)';
    const telemetry = open({ endpoint: collector.base, redact: (text) => text.split(key).join('[redacted]') });
    await telemetry.span('longrun.compaction', { 'longrun.note': `given ${key}` }, async (span) => {
      span.setAttributes({ 'longrun.failure': `401 for ${key}` });
    });
    await telemetry.flush();

    const bodies = collector.requests.map((request) => request.body).join('\n');
    assert.ok(bodies.includes('given [redacted]') && bodies.includes('401 for [redacted]'), bodies);
    assert.ok(!bodies.includes(key), 'the key was exported');
  });

  it('makes a model call inside a span a child of that span', async () => {
    const telemetry = open({ endpoint: collector.base });
    await telemetry.span('longrun.compaction', { 'longrun.compaction.reason': 'manual' }, () =>
      generateText({
        model: new MockLanguageModelV4({ doGenerate: answer('summary') }),
        prompt: 'summarize',
        telemetry: telemetry.settings('longrun.compaction.summarize'),
      }),
    );
    await telemetry.flush();

    const spans = spansOf(collector.requests);
    const compaction = spanNamed(spans, 'longrun.compaction');
    const call = spanNamed(spans, 'invoke_agent longrun.compaction.summarize');
    assert.equal(compaction.parentSpanId, undefined);
    assert.equal(call.traceId, compaction.traceId);
    assert.equal(call.parentSpanId, compaction.spanId);
  });

  it('marks a failed span as an error by error name and rethrows', async () => {
    const telemetry = open({ endpoint: collector.base });
    await assert.rejects(
      telemetry.span('longrun.compaction', {}, async () => {
        throw new RangeError('the summary quoted MESSAGE-TEXT-1e8f');
      }),
      /MESSAGE-TEXT-1e8f/,
    );
    await telemetry.flush();

    const span = spanNamed(spansOf(collector.requests), 'longrun.compaction');
    assert.equal(span.statusCode, 2);
    assert.equal(span.attributes['error.type'], 'RangeError');
    assert.ok(!collector.requests.some((request) => request.body.includes('MESSAGE-TEXT-1e8f')));
  });

  it('appends /v1/traces to a base endpoint and keeps a full traces URL as given', async () => {
    const base = open({ endpoint: `${collector.base}/api/public/otel/` });
    await base.span('longrun.compaction', {}, async () => undefined);
    await base.flush();
    const full = open({ endpoint: `${collector.base}/collector/v1/traces` });
    await full.span('longrun.compaction', {}, async () => undefined);
    await full.flush();

    assert.deepEqual(
      collector.requests.map((request) => request.path),
      ['/api/public/otel/v1/traces', '/collector/v1/traces'],
    );
  });

  it('rejects a flush with a clear error when the endpoint refuses the traces', async () => {
    await collector.close();
    // 400 is not retried, so the failure shows at once.
    collector = await startCollector(400);
    const telemetry = open({ endpoint: collector.base });
    await telemetry.span('longrun.compaction', {}, async () => undefined);
    await assert.rejects(telemetry.flush(), /Longrun could not send traces to http:\/\/127\.0\.0\.1:\d+\/v1\/traces/);
    assert.equal(collector.requests.length, 1);
  });

  it('throws a clear error for an endpoint that is not an http or https URL', () => {
    assert.throws(() => createTelemetry({ endpoint: 'localhost:4318' }), /"localhost:4318" must be an http or https URL/);
    assert.throws(() => createTelemetry({ endpoint: 'ftp://collector.example/v1/traces' }), /must be an http or https URL/);
    assert.throws(() => createTelemetry({ endpoint: 'not a url' }), /"not a url" is not a URL/);
    assert.throws(() => createTelemetry({ endpoint: '' }), /is not a URL/);
  });
});

describe('NO_TELEMETRY', () => {
  it('sends nothing, even when another extension registered a global integration', async () => {
    const collector = await startCollector();
    const global = createTelemetry({ endpoint: collector.base });
    const previous = globalThis.AI_SDK_TELEMETRY_INTEGRATIONS;
    const calls: string[] = [];
    const recorder: Telemetry = { onStart: () => void calls.push('start') };
    try {
      globalThis.AI_SDK_TELEMETRY_INTEGRATIONS = [];
      const otel = global.settings('another.extension').integrations;
      registerTelemetry(recorder, ...(Array.isArray(otel) ? otel : otel ? [otel] : []));

      await generateText({
        model: new MockLanguageModelV4({ doGenerate: answer('done') }),
        prompt: 'hello',
        telemetry: NO_TELEMETRY.settings('longrun.test', { 'longrun.round': 1 }),
      });
      const value = await NO_TELEMETRY.span('longrun.compaction', { 'longrun.compaction.reason': 'manual' }, async (span) => {
        span.setAttributes({ 'longrun.compaction.tokens_after': 10 });
        return 42;
      });
      await NO_TELEMETRY.flush();
      await global.flush();

      assert.equal(value, 42);
      assert.deepEqual(calls, []);
      assert.deepEqual(collector.requests, []);
    } finally {
      globalThis.AI_SDK_TELEMETRY_INTEGRATIONS = previous;
      await global.shutdown();
      await NO_TELEMETRY.shutdown();
      await collector.close();
    }
  });
});
