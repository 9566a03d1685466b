/**
 * Speed and memory of the compaction engine on large histories. Run with `npm run bench`.
 * Prints one line per measurement; nothing here is asserted (timings belong in benchmarks, not tests).
 */
import { computeCompaction } from '../src/core/compaction';
import { selectForCompaction } from '../src/core/cut-point';
import { DEFAULT_CONFIG } from '../src/core/config';
import { EMPTY_LEDGER } from '../src/core/file-ledger';
import { modelView, type LogRecord } from '../src/core/history';
import { MessageTokenCounter } from '../src/core/message-tokens';
import type { Message } from '../src/core/messages';
import { systemClock, type Summarizer } from '../src/core/ports';
import { charEstimator, loadTokenizer } from '../src/core/tokenizer';
import { benchGauge } from './gauge';

function history(turns: number, stepsPerTurn: number): Message[] {
  const out: Message[] = [];
  let n = 0;
  const code = 'export function f(x: number): number {\n  return x * 2; // doubled\n}\n'.repeat(40);
  for (let t = 0; t < turns; t++) {
    out.push({ id: `m${n++}`, role: 'user', content: [{ type: 'text', text: `Please change module ${t} so that it handles edge case ${t}.` }] });
    for (let s = 0; s < stepsPerTurn; s++) {
      const callId = `c${t}-${s}`;
      out.push({ id: `m${n++}`, role: 'assistant', content: [{ type: 'text', text: 'Reading the file.' }, { type: 'tool-call', toolCallId: callId, toolName: 'read_file', input: { path: `src/m${t}/f${s}.ts` } }] });
      out.push({ id: `m${n++}`, role: 'tool', content: [{ type: 'tool-result', toolCallId: callId, toolName: 'read_file', output: code }] });
    }
    out.push({ id: `m${n++}`, role: 'assistant', content: [{ type: 'text', text: `Done with module ${t}.` }] });
  }
  return out;
}

function time<T>(label: string, fn: () => T): T {
  const start = process.hrtime.bigint();
  const result = fn();
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  console.log(`${label}: ${ms.toFixed(1)} ms`);
  return result;
}

async function main(): Promise<void> {
  const messages = history(200, 10); // 4,200 messages
  const o200k = await loadTokenizer('o200k_base');
  const counter = new MessageTokenCounter(o200k);
  const total = time(`first count of ${messages.length} messages (o200k)`, () => counter.countMessages(messages));
  console.log(`  ${total.toLocaleString('en-US')} tokens`);
  const grown = [...messages, { id: 'new', role: 'user' as const, content: [{ type: 'text' as const, text: 'one more' }] }];
  time('count after one new message (cached)', () => counter.countMessages(grown));
  time(`same history with the chars/4 estimator`, () => new MessageTokenCounter(charEstimator).countMessages(messages));

  time('select the cut point', () =>
    selectForCompaction(messages, {
      keepRecent: DEFAULT_CONFIG.keepRecent,
      limit: 1_000_000,
      countMessage: (m) => counter.countMessage(m),
      keepSystemMessages: true,
      maxKeptTokens: 500_000,
    }),
  );

  const log: LogRecord[] = messages.map((message) => ({ type: 'message', message }));
  time('derive the model view from the log', () => modelView(log));

  const summarizer: Summarizer = {
    name: 'bench',
    contextWindow: 128_000,
    summarize: async (request) => ({ text: `## Session Summary\nA ${request.purpose} summary of ${request.messages.length} messages, standing in for a model.` }),
  };
  const before = process.memoryUsage().heapUsed;
  const start = process.hrtime.bigint();
  const outcome = await computeCompaction(
    { log, reason: 'manual', config: DEFAULT_CONFIG, window: { limit: 1_000_000, source: 'model' }, ledger: EMPTY_LEDGER },
    { counter, summarizer, clock: systemClock, newId: () => 'bench' },
  );
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (outcome.status !== 'compacted') throw new Error(`compaction did not run: ${outcome.status} ${'reason' in outcome ? outcome.reason : ''}`);
  const calls = outcome.compaction.entry.summarizerCalls;
  console.log(`full compaction with batching (${calls} summarizer calls, instant model): ${ms.toFixed(1)} ms`);
  console.log(`heap growth during compaction: ${((process.memoryUsage().heapUsed - before) / 1e6).toFixed(1)} MB`);

  const gauge = await benchGauge();
  console.log(
    `gauge against a provider counting with cl100k, ${gauge.requests} requests of a 60-turn session, ${gauge.compactions} compactions: ` +
      `mean error ${gauge.gauge_error_mean_pct}% (target ≤ 1%), max ${gauge.gauge_error_max_pct}% (target ≤ 3%), ` +
      `first request after a compaction at most ${gauge.gauge_error_after_compaction_max_pct}%`,
  );
  console.log(
    `raw local count of a rendered request against the same tokenizer with OpenAI's framing: ${gauge.local_vs_same_tokenizer_per_message} tokens per message ` +
      '(Longrun counts 4 per message, 8 per tool call and 6 per tool result; OpenAI 3, and 3 to prime the reply)',
  );
}

void main();
