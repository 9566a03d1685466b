/**
 * Runs the offline scripted model on its own, for `npm start` and for end-to-end tests that
 * program it over its control API:
 *
 *   tsx scripts/scripted-model/cli.ts --port 0 --host 127.0.0.1 [--format openai] [--latency MS] [--model ID=WINDOW]… [--ignore-tool-choice]
 *
 * Once listening it prints one JSON line, `{"url":"http://127.0.0.1:PORT/v1","port":PORT}`, on
 * stdout (nothing else goes there), and it stops cleanly on SIGINT or SIGTERM.
 */
import { parseArgs } from 'node:util';
import { FORMAT_NAMES, type FormatName } from './formats/format';
import { DEFAULT_MODELS, startScriptedModelServer, type ScriptedModelConfig } from './server';

const USAGE = `Usage: tsx scripts/scripted-model/cli.ts [--port N] [--host 127.0.0.1] [--format F] [--latency MS] [--model ID=WINDOW]... [--ignore-tool-choice]

Serves the offline scripted model (a test double of a provider's API, not a real model) on 127.0.0.1.
  --port N            port to listen on; 0 (the default) picks a free one
  --host 127.0.0.1    the only host it binds
  --format F          the API it speaks: ${FORMAT_NAMES.join(', ')} (default openai: Chat
                      Completions and Responses, as OpenAI-compatible servers speak the first)
  --latency MS        delay before every completion answer (default 0)
  --model ID=WINDOW   offer this model with this context window instead of the defaults
                      (scripted=128000, scripted-small=8192); repeatable
  --ignore-tool-choice  answer as servers that do not read tool_choice do: a summary
                      request that offers tools gets a tool call, "none" or not
`;

class UsageError extends Error {}

function integer(name: string, value: string, min: number, max: number): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < min || n > max) {
    throw new UsageError(`--${name} must be an integer from ${min} to ${max}, not "${value}".`);
  }
  return n;
}

function parseModel(spec: string): ScriptedModelConfig {
  const match = /^([^=\s]+)=(\d+)$/.exec(spec);
  if (!match?.[1] || !match[2]) throw new UsageError(`--model takes ID=WINDOW, e.g. scripted-tiny=2048, not "${spec}".`);
  return { id: match[1], window: integer('model window', match[2], 1, Number.MAX_SAFE_INTEGER), name: `Offline scripted model ${match[1]}` };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      port: { type: 'string', default: '0' },
      host: { type: 'string', default: '127.0.0.1' },
      latency: { type: 'string', default: '0' },
      format: { type: 'string', default: 'openai' },
      model: { type: 'string', multiple: true },
      'ignore-tool-choice': { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
    strict: true,
    allowPositionals: false,
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return;
  }
  if (values.host !== '127.0.0.1') {
    throw new UsageError(`The offline scripted model binds 127.0.0.1 only, not "${values.host}".`);
  }
  const port = integer('port', values.port, 0, 65_535);
  const latencyMs = integer('latency', values.latency, 0, 600_000);
  const configured = values.model?.map(parseModel);
  const models = values['ignore-tool-choice'] ? (configured ?? DEFAULT_MODELS).map((model) => ({ ...model, ignoresToolChoice: true })) : configured;
  if (!(FORMAT_NAMES as readonly string[]).includes(values.format)) {
    throw new UsageError(`--format must be one of ${FORMAT_NAMES.join(', ')}, not "${values.format}".`);
  }
  const format = values.format as FormatName;

  const server = await startScriptedModelServer({ port, latencyMs, format, ...(models ? { models } : {}) });
  const stop = (): void => {
    // Closing ends every connection; with nothing left to wait for, the process exits with 0.
    void server.close();
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  process.stdout.write(`${JSON.stringify({ url: server.url, port: server.port, format })}\n`);
  process.stderr.write(`Offline scripted model (a test double of the ${format} API, not a real model) listening on ${server.url}\n`);
}

main().catch((error: unknown) => {
  const usage = error instanceof UsageError || (error instanceof TypeError && 'code' in error && String(error.code).startsWith('ERR_PARSE_ARGS'));
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n${usage ? `\n${USAGE}` : ''}`);
  process.exitCode = usage ? 2 : 1;
});
