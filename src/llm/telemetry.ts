import { AsyncLocalStorage } from 'node:async_hooks';
import { OpenTelemetry } from '@ai-sdk/otel';
import {
  ROOT_CONTEXT,
  SpanStatusCode,
  context as otelContext,
  trace,
  type Context,
  type Span,
  type SpanOptions,
  type Tracer,
} from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, TracerProvider, type ReadableSpan, type SpanExporter } from '@opentelemetry/sdk-trace';
import type { TelemetryOptions } from 'ai';

/** Span attribute values: counts, flags, short labels. Never message content or secrets. */
export type SpanAttributes = Readonly<Record<string, string | number | boolean>>;

/** Lets the code inside `LongrunTelemetry.span` record what it learns while it runs. */
export interface SpanRecorder {
  /** Adds attributes to the running span, e.g. tokens after a compaction. */
  setAttributes(attributes: SpanAttributes): void;
}

/** Tracing for model calls and Longrun's own operations (compaction), or nothing at all. */
export interface LongrunTelemetry {
  /**
   * The AI SDK's `telemetry` option for one call: `generateText({ ..., telemetry })`. The
   * metadata becomes attributes on every span of that call.
   */
  settings(functionId: string, metadata?: SpanAttributes): TelemetryOptions;
  /**
   * Runs `fn` inside a span named `name`. Model calls made while `fn` runs become its children.
   * A failure marks the span as an error (by error name only) and is rethrown.
   */
  span<T>(name: string, attributes: SpanAttributes, fn: (span: SpanRecorder) => Promise<T>): Promise<T>;
  /** Sends the spans that have ended so far; rejects when the endpoint cannot be reached. */
  flush(): Promise<void>;
  /** Sends what is left and stops; later spans are dropped. */
  shutdown(): Promise<void>;
}

export interface TelemetryConfig {
  /** OTLP/HTTP endpoint: a base URL (`/v1/traces` is appended) or a full `.../v1/traces` URL. */
  readonly endpoint: string;
  /** Sent with every export only, e.g. a Langfuse `Authorization` header; never recorded in spans. */
  readonly headers?: Record<string, string>;
  /** The `service.name` resource attribute; `longrun` by default. */
  readonly serviceName?: string;
  /** Cleans every text a span carries (attributes, events, status) of API keys before it is sent. */
  readonly redact?: (text: string) => string;
}

const NO_RECORDER: SpanRecorder = { setAttributes: () => undefined };

/**
 * Telemetry that is off. Its settings opt out explicitly rather than being absent: integrations
 * that another extension registered globally in the shared extension host would otherwise
 * receive Longrun's calls.
 */
export const NO_TELEMETRY: LongrunTelemetry = {
  settings: () => ({ isEnabled: false }),
  span: (_name, _attributes, fn) => fn(NO_RECORDER),
  flush: async () => undefined,
  shutdown: async () => undefined,
};

/**
 * Exports traces of AI SDK calls and Longrun spans over OTLP/HTTP (JSON). The tracer provider is
 * private: registering a global one would capture, or be replaced by, other extensions in the
 * same extension host. Prompts and responses are not recorded.
 */
export function createTelemetry(config: TelemetryConfig): LongrunTelemetry {
  const url = tracesUrl(config.endpoint);
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': config.serviceName ?? 'longrun' }),
    spanProcessors: [
      new BatchSpanProcessor({
        exporter: redactingExporter(new OTLPTraceExporter({ url, ...(config.headers ? { headers: { ...config.headers } } : {}) }), config.redact),
      }),
    ],
  });
  const current = new AsyncLocalStorage<Span>();
  const tracer = new ParentedTracer(provider.getTracer('longrun'), current);

  return {
    settings(functionId, metadata) {
      const attributes = metadata ? { ...metadata } : undefined;
      return {
        isEnabled: true,
        functionId,
        recordInputs: false,
        recordOutputs: false,
        // Per-call integrations replace the global ones, so only this tracer sees the call.
        integrations: new OpenTelemetry({
          tracer,
          agentSpanName: 'functionId',
          usage: true,
          ...(attributes ? { enrichSpan: () => attributes } : {}),
        }),
      };
    },

    async span(name, attributes, fn) {
      const span = tracer.startSpan(name, { attributes: { ...attributes } });
      try {
        return await current.run(span, () => fn({ setAttributes: (more) => span.setAttributes({ ...more }) }));
      } catch (error) {
        // The error's name only: messages can quote the conversation or a provider's reply.
        span.setAttribute('error.type', error instanceof Error ? error.name : typeof error);
        span.setStatus({ code: SpanStatusCode.ERROR });
        throw error;
      } finally {
        span.end();
      }
    },

    async flush() {
      try {
        await provider.forceFlush();
      } catch (cause) {
        throw new Error(`Longrun could not send traces to ${url}.`, { cause });
      }
    },

    shutdown: () => provider.shutdown(),
  };
}

/** `exporter` sending each span with its texts cleaned by `redact`; `exporter` itself without one. */
function redactingExporter(exporter: SpanExporter, redact: ((text: string) => string) | undefined): SpanExporter {
  if (!redact) return exporter;
  return {
    export: (spans, done) =>
      exporter.export(
        spans.map((span) => redactedSpan(span, redact)),
        done,
      ),
    shutdown: () => exporter.shutdown(),
    forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
  };
}

/**
 * `span` with its attributes, its events' attributes and its status message cleaned: the span
 * itself underneath (its context, times and resource), so the exporter reads it as it would.
 */
function redactedSpan(span: ReadableSpan, redact: (text: string) => string): ReadableSpan {
  const clean = <T extends Readonly<Record<string, unknown>> | undefined>(attributes: T): T => {
    if (!attributes) return attributes;
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(attributes)) {
      out[key] =
        typeof value === 'string' ? redact(value) : Array.isArray(value) ? value.map((v: unknown) => (typeof v === 'string' ? redact(v) : v)) : value;
    }
    return out as T;
  };
  return Object.create(span, {
    attributes: { value: clean(span.attributes) },
    events: { value: span.events.map((event) => ({ ...event, ...(event.attributes ? { attributes: clean(event.attributes) } : {}) })) },
    status: { value: span.status.message !== undefined ? { ...span.status, message: redact(span.status.message) } : span.status },
  }) as ReadableSpan;
}

/** The OTLP traces URL for an endpoint setting; throws a clear Error for anything but http(s). */
function tracesUrl(endpoint: string): string {
  const trimmed = endpoint.trim();
  let parsed: URL;
  try {
    parsed = new URL(trimmed);
  } catch {
    throw new Error(`The OTLP endpoint "${endpoint}" is not a URL; use an http or https URL.`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new Error(`The OTLP endpoint "${endpoint}" must be an http or https URL, not ${parsed.protocol}.`);
  }
  const path = parsed.pathname.replace(/\/+$/, '');
  if (!path.endsWith('/v1/traces')) parsed.pathname = `${path}/v1/traces`;
  return parsed.toString();
}

/**
 * Parents root spans on the Longrun span running in the current async context. This stands in
 * for a global context manager, which would be shared with every other extension. A context
 * that already names a parent is left alone; an absent one starts from the root rather than
 * from whatever another extension made active.
 */
class ParentedTracer implements Tracer {
  constructor(
    private readonly inner: Tracer,
    private readonly current: AsyncLocalStorage<Span>,
  ) {}

  startSpan(name: string, options?: SpanOptions, context?: Context): Span {
    return this.inner.startSpan(name, options, this.parentContext(context));
  }

  startActiveSpan<F extends (span: Span) => unknown>(name: string, fn: F): ReturnType<F>;
  startActiveSpan<F extends (span: Span) => unknown>(name: string, options: SpanOptions, fn: F): ReturnType<F>;
  startActiveSpan<F extends (span: Span) => unknown>(name: string, options: SpanOptions, context: Context, fn: F): ReturnType<F>;
  startActiveSpan<F extends (span: Span) => unknown>(name: string, ...rest: [F] | [SpanOptions, F] | [SpanOptions, Context, F]): ReturnType<F> {
    const fn = rest[rest.length - 1] as F;
    const options = rest.length > 1 ? (rest[0] as SpanOptions) : undefined;
    const parent = this.parentContext(rest.length > 2 ? (rest[1] as Context) : undefined);
    const span = this.inner.startSpan(name, options, parent);
    return this.current.run(span, () => otelContext.with(trace.setSpan(parent, span), () => fn(span))) as ReturnType<F>;
  }

  private parentContext(context: Context | undefined): Context {
    if (context !== undefined && trace.getSpan(context) !== undefined) return context;
    const parent = this.current.getStore();
    const base = context ?? ROOT_CONTEXT;
    return parent ? trace.setSpan(base, parent) : base;
  }
}
