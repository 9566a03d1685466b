import assert from 'node:assert/strict';
import { Tracing } from '../../../src/app/report/tracing';
import { NO_TELEMETRY, type LongrunTelemetry, type TelemetryConfig } from '../../../src/llm/telemetry';

/** Tracing follows the settings: started, moved to another endpoint, stopped; what it leaves is shut down. */

describe('tracing as the settings say', () => {
  function tracing() {
    const settings = { telemetry: { enabled: false, otlpEndpoint: undefined as string | undefined } };
    const made: Array<{ config: TelemetryConfig; shutdowns: number }> = [];
    const lines: string[] = [];
    const t = new Tracing(
      () => ({
        telemetry: {
          enabled: settings.telemetry.enabled,
          ...(settings.telemetry.otlpEndpoint ? { otlpEndpoint: settings.telemetry.otlpEndpoint } : {}),
        },
      }),
      { info: (m) => void lines.push(`info: ${m}`), warn: (m) => void lines.push(`warn: ${m}`) },
      (config): LongrunTelemetry => {
        if (config.endpoint === 'broken') throw new Error('not a URL');
        const record = { config, shutdowns: 0 };
        made.push(record);
        return {
          ...NO_TELEMETRY,
          shutdown: async () => {
            record.shutdowns++;
          },
        };
      },
      (text) => text.replaceAll('key-of-no-shape', '[redacted]'),
    );
    return { tracing: t, settings, made, lines };
  }

  it('hands the tracing it starts the redactor, which cleans its spans', () => {
    const { tracing: t, settings, made } = tracing();
    settings.telemetry = { enabled: true, otlpEndpoint: 'http://collector:4318' };
    t.configure();
    assert.equal(made[0]?.config.redact?.('401 for key-of-no-shape'), '401 for [redacted]');
  });

  it('is off until the settings turn it on with an endpoint', () => {
    const { tracing: t, settings, made } = tracing();
    t.configure();
    assert.equal(t.telemetry(), NO_TELEMETRY);
    settings.telemetry.enabled = true;
    t.configure();
    assert.equal(t.telemetry(), NO_TELEMETRY, 'enabled without an endpoint traces nothing');
    assert.equal(made.length, 0);
  });

  it('starts once for an endpoint, moves to another, and stops, shutting down what it leaves', () => {
    const { tracing: t, settings, made, lines } = tracing();
    settings.telemetry = { enabled: true, otlpEndpoint: 'http://127.0.0.1:4318' };
    t.configure();
    t.configure();
    assert.equal(made.length, 1, 'the same endpoint is not started twice');
    assert.equal(made[0]!.config.serviceName, 'longrun');
    const first = t.telemetry();
    assert.notEqual(first, NO_TELEMETRY);
    assert.deepEqual(lines, ['info: Tracing to http://127.0.0.1:4318 (OpenTelemetry, OTLP/HTTP).']);
    settings.telemetry.otlpEndpoint = 'http://127.0.0.1:4319';
    t.configure();
    assert.equal(made.length, 2);
    assert.equal(made[0]!.shutdowns, 1);
    assert.notEqual(t.telemetry(), first);
    settings.telemetry.enabled = false;
    t.configure();
    assert.equal(t.telemetry(), NO_TELEMETRY);
    assert.equal(made[1]!.shutdowns, 1);
  });

  it('stays off, saying why, when the endpoint cannot be traced to', () => {
    const { tracing: t, settings, lines } = tracing();
    settings.telemetry = { enabled: true, otlpEndpoint: 'broken' };
    t.configure();
    assert.equal(t.telemetry(), NO_TELEMETRY);
    assert.deepEqual(lines, ['warn: Tracing is off: not a URL']);
  });

  it('shuts down the tracing in use when disposed', () => {
    const { tracing: t, settings, made } = tracing();
    settings.telemetry = { enabled: true, otlpEndpoint: 'http://127.0.0.1:4318' };
    t.configure();
    t.dispose();
    assert.equal(made[0]!.shutdowns, 1);
  });
});
