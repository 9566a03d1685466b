/**
 * How close the gauge is to what the provider counts. A 60-turn session with code, prose and JSON
 * tool output runs against a provider that counts with a different tokenizer than Longrun's
 * (cl100k, plus OpenAI's per-message framing); before every request, the gauge's number is
 * compared with the provider's count of that request. Compactions happen as they would (32k window).
 * Also: the raw local count of a rendered request (system prompt and tool definitions included)
 * against a provider that counts with the same tokenizer.
 *
 * What the provider shares with Longrun: the tokenizer package (`gpt-tokenizer`), with another
 * vocabulary (cl100k, where Longrun counts with o200k), and nothing of its priors or its framing.
 *
 * Run alone with `npx tsx bench/gauge.ts`, or through `npm run bench`.
 */
import { applyCompaction, computeCompaction } from '../src/core/compaction';
import { assessBudget } from '../src/core/budget';
import { DEFAULT_CONFIG } from '../src/core/config';
import { EngineMemo } from '../src/core/engine-memo';
import { EMPTY_LEDGER } from '../src/core/file-ledger';
import { currentBasis, lastUsage, modelView, usageReports, type LogRecord } from '../src/core/history';
import { MessageTokenCounter } from '../src/core/message-tokens';
import { stringifyOutput, type Message } from '../src/core/messages';
import { systemClock, type Summarizer } from '../src/core/ports';
import { loadTokenizer, type TextTokenizer } from '../src/core/tokenizer';
import { countContext, effectiveRatio, learnedAddedRatio, learnedCalibration } from '../src/core/usage-calibration';

const SYSTEM = [
  "You are Longrun, a coding agent working in the user's VS Code workspace.",
  'Use the tools to read, list and search files before answering questions about the code; do not guess file contents.',
  'Answer in Markdown, concisely.',
].join('\n');
const TOOLS = JSON.stringify([
  {
    type: 'function',
    function: {
      name: 'read_file',
      description: 'Read a file of the workspace.',
      parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
    },
  },
  {
    type: 'function',
    function: {
      name: 'search_text',
      description: 'Search the workspace.',
      parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
    },
  },
]);

/** What a provider counts for a request: OpenAI's framing (3 per message, 3 to prime the reply). */
function providerCount(view: readonly Message[], tokenizer: TextTokenizer): number {
  let total = 3 + 3 + tokenizer.count(SYSTEM) + tokenizer.count(TOOLS);
  for (const m of view) {
    total += 3;
    for (const part of m.content) {
      if (part.type === 'text' || part.type === 'reasoning') total += tokenizer.count(part.text);
      else if (part.type === 'tool-call') total += tokenizer.count(part.toolName) + tokenizer.count(JSON.stringify(part.input)) + 3;
      else if (part.type === 'tool-result') total += tokenizer.count(stringifyOutput(part.output)) + 2;
    }
  }
  return total;
}

/** Deterministic pseudo-random numbers, so every run measures the same session. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1_664_525 + 1_013_904_223) >>> 0;
    return state / 2 ** 32;
  };
}

function toolOutput(kind: number, size: number, n: number): string {
  const lines: string[] = [];
  for (let i = 0; i < size; i++) {
    if (kind === 0)
      lines.push(`export function handler${n}_${i}(request: Request): Promise<Response> { return route(request, '/api/v${i % 3}/items'); }`);
    else if (kind === 1) lines.push(`The scheduler retries failed jobs ${i % 5} times before it gives up, and logs each attempt with its reason.`);
    else lines.push(JSON.stringify({ id: `${n}-${i}`, status: i % 2 ? 'ok' : 'failed', durationMs: (i * 37) % 1000, tags: ['a', 'b'] }));
  }
  return lines.join('\n');
}

export interface GaugeBench {
  /** Mean error of the gauge against the provider's count, after the first reported usage, in percent. */
  readonly gauge_error_mean_pct: number;
  readonly gauge_error_max_pct: number;
  /** The same, over the first request after each compaction only (local count times the learned ratio). */
  readonly gauge_error_after_compaction_max_pct: number;
  readonly requests: number;
  readonly compactions: number;
  /** The signed error (positive: reads high) of each of the first requests, in percent, the first one before any report. */
  readonly first_requests_pct: readonly number[];
  /** Raw local count of a rendered request against a provider with the same tokenizer: difference per message. */
  readonly local_vs_same_tokenizer_per_message: number;
}

/**
 * The gauge's count of a view, as the conversation's meter works it out (see `ConversationMeter`): the
 * ratio of whole requests for a view counted locally, that of added messages for what was added since a report.
 */
function gaugeOf(log: readonly LogRecord[], view: readonly Message[], counter: MessageTokenCounter, overhead: number): number {
  const usages = usageReports(log);
  const calibration = learnedCalibration(usages, 'bench');
  const framing = view.reduce((sum, m) => sum + counter.framing(m), 0);
  const ratio = calibration ? effectiveRatio(calibration, counter.countMessages(view) + overhead, framing) : 1;
  return countContext(view, counter, lastUsage(log), currentBasis(log), overhead, ratio, learnedAddedRatio(usages, 'bench') ?? ratio).tokens;
}

export async function benchGauge(turns = 60): Promise<GaugeBench> {
  const o200k = await loadTokenizer('o200k_base');
  const cl100k = await loadTokenizer('cl100k_base');
  const counter = new MessageTokenCounter(o200k);
  const memo = new EngineMemo();
  const overhead = counter.countText(`${SYSTEM}\n${TOOLS}`);
  const window = { limit: 32_000, source: 'model' as const };
  const summarizer: Summarizer = {
    name: 'bench',
    summarize: async (request) => ({
      text: [
        '## Session Summary (Compaction Round 1)',
        '### Completed Work',
        `- Work so far over ${request.messages.length} messages: the modules named in the requests changed, their handlers check input before retrying.`,
        '### Current State',
        '- Working on: the next module whose tests fail since the change to the retry policy.',
        '### Pending Work',
        '- [ ] Tests of the modules changed last; a test for each failing case.',
        '### Next Steps',
        '1. Read the next failing module, fix it, and run its tests.',
      ].join('\n'),
    }),
  };
  const next = random(7);
  let log: LogRecord[] = [];
  let n = 0;
  const id = (): string => `m${++n}`;
  const errors: number[] = [];
  const signed: number[] = [];
  const afterCompaction: number[] = [];
  let compactedSinceLastRequest = false;
  let compactions = 0;
  let localVsSame = 0;
  let sameSamples = 0;

  for (let turn = 0; turn < turns; turn++) {
    log.push({
      type: 'message',
      message: { id: id(), role: 'user', content: [{ type: 'text', text: `Turn ${turn}: please look at module ${turn % 7} and fix what fails.` }] },
    });
    const steps = 1 + Math.floor(next() * 3);
    for (let step = 0; step <= steps; step++) {
      const view = modelView(log, memo);
      const basis = currentBasis(log);
      const gauge = gaugeOf(log, view, counter, overhead);
      const truth = providerCount(view, cl100k);
      signed.push(((gauge - truth) / truth) * 100);
      if (lastUsage(log)) {
        const error = (Math.abs(gauge - truth) / truth) * 100;
        errors.push(error);
        if (compactedSinceLastRequest) afterCompaction.push(error);
      }
      compactedSinceLastRequest = false;
      const local = counter.countMessages(view) + overhead;
      const localFraming = view.reduce((sum, m) => sum + counter.framing(m), 0);
      localVsSame += (providerCount(view, o200k) - local) / Math.max(1, view.length);
      sameSamples++;

      const final = step === steps;
      const callId = `call_${turn}_${step}`;
      const answer: Message = final
        ? {
            id: id(),
            role: 'assistant',
            content: [{ type: 'text', text: `Module ${turn % 7} is fixed: the handler now checks its input. ${'Details follow. '.repeat(3)}` }],
          }
        : {
            id: id(),
            role: 'assistant',
            content: [{ type: 'tool-call', toolCallId: callId, toolName: 'read_file', input: { path: `src/module${turn % 7}/part${step}.ts` } }],
          };
      const output = answer.content.reduce(
        (sum, p) => sum + (p.type === 'text' ? cl100k.count(p.text) : p.type === 'tool-call' ? cl100k.count(JSON.stringify(p.input)) + 3 : 0),
        0,
      );
      log.push({ type: 'message', message: answer });
      log.push({
        type: 'usage',
        usage: {
          anchorMessageId: answer.id,
          inputTokens: truth,
          outputTokens: output,
          basis,
          localTokens: local,
          localFraming,
          localFixed: overhead,
          model: 'bench',
        },
      });
      if (!final) {
        const result = toolOutput(Math.floor(next() * 3), 10 + Math.floor(next() * 60), n);
        log.push({
          type: 'message',
          message: { id: id(), role: 'tool', content: [{ type: 'tool-result', toolCallId: callId, toolName: 'read_file', output: result }] },
        });
      }
      const nowView = modelView(log, memo);
      const now = gaugeOf(log, nowView, counter, overhead);
      if (assessBudget(now, window, DEFAULT_CONFIG.trigger).shouldCompact) {
        const outcome = await computeCompaction(
          { log, reason: 'threshold', config: DEFAULT_CONFIG, window, ledger: EMPTY_LEDGER },
          { counter, summarizer, clock: systemClock, newId: id, memo },
        );
        if (outcome.status === 'compacted') {
          const applied = applyCompaction(log, outcome.compaction, memo);
          if (applied.ok) {
            log = [...applied.log];
            compactions++;
            compactedSinceLastRequest = true;
          }
        }
      }
    }
  }
  const mean = errors.reduce((a, b) => a + b, 0) / Math.max(1, errors.length);
  return {
    gauge_error_mean_pct: round(mean),
    gauge_error_max_pct: round(Math.max(0, ...errors)),
    gauge_error_after_compaction_max_pct: round(Math.max(0, ...afterCompaction)),
    requests: errors.length,
    compactions,
    first_requests_pct: signed.slice(0, 5).map(round),
    local_vs_same_tokenizer_per_message: round(localVsSame / Math.max(1, sameSamples)),
  };
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}

if (require.main === module) {
  void benchGauge().then((result) => {
    for (const [key, value] of Object.entries(result)) console.log(`${key.padEnd(40)} ${value}`);
  });
}
