import type * as vscode from 'vscode';

/**
 * The output channel with every line cleaned by `redact` before it is written: whatever a message
 * quotes (a provider's error body, a failed request's stack), no API key reaches the log's file.
 */

/** The channel's methods that write text, and where their text is. */
const WRITERS = new Set<string | symbol>(['trace', 'debug', 'info', 'warn', 'error', 'append', 'appendLine', 'replace']);

export function redactingLog(channel: vscode.LogOutputChannel, redact: (text: string) => string): vscode.LogOutputChannel {
  const clean = (value: unknown): unknown => {
    if (typeof value === 'string') return redact(value);
    if (value instanceof Error) return redact(value.stack ?? `${value.name}: ${value.message}`);
    return value;
  };
  return new Proxy(channel, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property);
      if (typeof value !== 'function') return value;
      const method = value as (...args: unknown[]) => unknown;
      if (!WRITERS.has(property)) return method.bind(target);
      return (...args: unknown[]) => method.apply(target, args.map(clean));
    },
  });
}
