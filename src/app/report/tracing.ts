import { createTelemetry, NO_TELEMETRY, type LongrunTelemetry, type TelemetryConfig } from '../../llm/telemetry';
import { errorText } from '../../core/errors';
import type { LongrunSettings } from '../settings';

/**
 * Tracing to the OTLP endpoint the settings name, or none: started, moved or stopped when the
 * settings change. Models and compactions read the tracing in use each time they start.
 */
export class Tracing {
  private current: LongrunTelemetry = NO_TELEMETRY;
  private endpoint = '';

  constructor(
    private readonly settings: () => Pick<LongrunSettings, 'telemetry'>,
    private readonly log: { info(message: string): void; warn(message: string): void },
    private readonly create: (config: TelemetryConfig) => LongrunTelemetry = createTelemetry,
    /** Cleans what the spans carry of API keys before they are sent. */
    private readonly redact?: (text: string) => string,
  ) {}

  /** The tracing in use: `NO_TELEMETRY` while it is off. */
  telemetry(): LongrunTelemetry {
    return this.current;
  }

  /** Starts, changes or stops tracing as the settings say; the tracing left sends what it holds and stops. */
  configure(): void {
    const { enabled, otlpEndpoint } = this.settings().telemetry;
    const endpoint = enabled && otlpEndpoint ? otlpEndpoint : '';
    if (endpoint === this.endpoint) return;
    void this.current.shutdown().catch(() => undefined);
    this.current = NO_TELEMETRY;
    this.endpoint = endpoint;
    if (!endpoint) return;
    try {
      this.current = this.create({ endpoint, serviceName: 'longrun', ...(this.redact ? { redact: this.redact } : {}) });
      this.log.info(`Tracing to ${endpoint} (OpenTelemetry, OTLP/HTTP).`);
    } catch (error) {
      this.log.warn(`Tracing is off: ${errorText(error)}`);
    }
  }

  dispose(): void {
    void this.current.shutdown().catch(() => undefined);
  }
}
