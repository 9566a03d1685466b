/**
 * `npm run eval`: the needle eval (see `run-eval.ts`) with the two scripted summarizers and, when
 * `OPENAI_BASE_URL` is set, with that endpoint's model through Longrun's summarizer; then the
 * continuation eval (see `continuation.ts`), with the plan and ledgers and with summaries alone.
 * Prints a table per summarizer and needle kind and the continuation figures, and writes
 * `eval/results.json` (numbers only).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MessageTokenCounter } from '../src/core/message-tokens';
import { loadTokenizer } from '../src/core/tokenizer';
import { figuresOf, REDO_WINDOW, runContinuation } from './continuation';
import { runEval, survival, type EvalReport } from './run-eval';
import { evalSessions, LEDGER_KINDS, NEEDLE_KINDS, type NeedleKind } from './sessions';
import { droppingSummarizer, endpointSummarizer, keepingSummarizer } from './summarizers';

const SUMMARIES = 5;

function pct(value: number): string {
  return `${Math.round(value * 100)}%`;
}

function round(value: number, digits = 3): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

function sum(report: EvalReport, field: 'summaryTokens' | 'freedTokens' | 'freedByPruning' | 'fallbacks' | 'pruningOnly'): number {
  return report.sessions.reduce((total, s) => total + s[field], 0);
}

function table(label: string, report: EvalReport): string[] {
  const lines = [
    `### ${label} (\`${report.summarizer}\`), after ${SUMMARIES} summaries`,
    '',
    '| needle | planted | summary alone | + ledgers | + ledgers + recall |',
    '|---|---:|---:|---:|---:|',
  ];
  for (const kind of NEEDLE_KINDS) {
    const only = new Set<NeedleKind>([kind]);
    const planted = report.sessions.flatMap((s) => s.needles).filter((n) => n.kind === kind).length;
    lines.push(
      `| ${kind}${LEDGER_KINDS.has(kind) ? '' : ' (no ledger)'} | ${planted} | ${pct(survival(report, 'summary', only))} | ${pct(survival(report, 'ledgers', only))} | ${pct(survival(report, 'recall', only))} |`,
    );
  }
  lines.push(
    `| **all** | ${report.sessions.length * NEEDLE_KINDS.length} | ${pct(survival(report, 'summary'))} | ${pct(survival(report, 'ledgers'))} | ${pct(survival(report, 'recall'))} |`,
  );
  lines.push('');
  for (const s of report.sessions) {
    const pruned = s.freedTokens > 0 ? pct(s.freedByPruning / s.freedTokens) : '0%';
    lines.push(
      `- ${s.name}: ${s.summaries} summaries (${s.fallbacks} fallback) and ${s.pruningOnly} pruning-only compactions over ${s.turns} turns; ` +
        `${s.summaryTokens.toLocaleString('en-US')} tokens spent on summaries in ${s.summarizerCalls} calls; ` +
        `${s.freedTokens.toLocaleString('en-US')} tokens freed, ${s.freedByPruning.toLocaleString('en-US')} (${pruned}) by pruning alone` +
        (s.injectedConstraint ? "; a file's instructions were taken for the user's" : '') +
        (s.failures.length > 0 ? `; failures: ${s.failures.join(' / ')}` : ''),
    );
  }
  return lines;
}

async function main(): Promise<void> {
  const started = Date.now();
  const counter = new MessageTokenCounter(await loadTokenizer('o200k_base'));
  const progress = (line: string): void => void process.stderr.write(`${line}\n`);
  const run = (summarizer: Parameters<typeof runEval>[0]['summarizer']) =>
    runEval({ sessions: evalSessions(), summarizer, counter: new MessageTokenCounter(counter.tokenizer), summaries: SUMMARIES, log: progress });

  progress('scripted summarizer that drops needles…');
  const dropping = await run(droppingSummarizer());
  progress('scripted summarizer that keeps needles…');
  const keeping = await run(keepingSummarizer());
  const endpoint = await endpointSummarizer(process.env);
  let model: EvalReport | undefined;
  if (endpoint) {
    progress(`${endpoint.name}…`);
    model = await run(endpoint);
  }

  progress('continuation tasks, with the plan and ledgers and with summaries alone…');
  const withPlan = figuresOf(await runContinuation('plan', { counter: new MessageTokenCounter(counter.tokenizer) }));
  const summariesOnly = figuresOf(await runContinuation('summaries', { counter: new MessageTokenCounter(counter.tokenizer) }));

  const sessions = dropping.sessions.length;
  const freed = sum(dropping, 'freedTokens');
  const results: Record<string, number> = {
    ledger_needle_survival: round(survival(dropping, 'ledgers', LEDGER_KINDS)),
    needle_survival_with_recall: round(survival(dropping, 'recall')),
    tokens_freed_by_pruning_share: round(freed > 0 ? sum(dropping, 'freedByPruning') / freed : 0),
    summaries_per_session: SUMMARIES,
    dropping_survival_summary_alone: round(survival(dropping, 'summary')),
    dropping_survival_with_ledgers: round(survival(dropping, 'ledgers')),
    keeping_survival_summary_alone: round(survival(keeping, 'summary')),
    keeping_survival_with_ledgers: round(survival(keeping, 'ledgers')),
    keeping_survival_with_recall: round(survival(keeping, 'recall')),
    summary_tokens_per_session_dropping: Math.round(sum(dropping, 'summaryTokens') / sessions),
    summary_tokens_per_session_keeping: Math.round(sum(keeping, 'summaryTokens') / sessions),
    freed_tokens_per_session: Math.round(freed / sessions),
    freed_by_pruning_per_session: Math.round(sum(dropping, 'freedByPruning') / sessions),
    injected_constraints_in_ledger: dropping.sessions.filter((s) => s.injectedConstraint).length,
    continuation_redo_rate: round(withPlan.redoRate),
    continuation_redo_rate_summaries_only: round(summariesOnly.redoRate),
    work_state_accuracy: round(withPlan.accuracy),
    continuation_stalls: withPlan.stalls,
    continuation_loops: withPlan.loops,
    continuation_stalls_summaries_only: summariesOnly.stalls,
    continuation_compactions: withPlan.compactions,
  };
  for (const kind of NEEDLE_KINDS) {
    const only = new Set<NeedleKind>([kind]);
    results[`dropping_${kind}_summary_alone`] = round(survival(dropping, 'summary', only));
    results[`dropping_${kind}_with_ledgers`] = round(survival(dropping, 'ledgers', only));
    results[`dropping_${kind}_with_recall`] = round(survival(dropping, 'recall', only));
  }
  if (model) {
    results.model_survival_summary_alone = round(survival(model, 'summary'));
    results.model_survival_with_ledgers = round(survival(model, 'ledgers'));
    results.model_survival_with_recall = round(survival(model, 'recall'));
    results.model_ledger_needle_survival = round(survival(model, 'ledgers', LEDGER_KINDS));
    results.model_summary_tokens_per_session = Math.round(sum(model, 'summaryTokens') / model.sessions.length);
    results.model_fallbacks = sum(model, 'fallbacks');
  }
  writeFileSync(join(__dirname, 'results.json'), `${JSON.stringify(results, null, 2)}\n`);

  const lines = [
    `Needle eval: ${sessions} scripted sessions, each summarized ${SUMMARIES} times through the engine (16,000-token window, o200k tokenizer). Whole run ${round((Date.now() - started) / 1000, 1)} s.`,
    '',
    ...table('Scripted summarizer that drops needles', dropping),
    '',
    ...table('Scripted summarizer that keeps needles', keeping),
    '',
    ...(model
      ? table('Model at OPENAI_BASE_URL', model)
      : ['(No model: set OPENAI_BASE_URL, and OPENAI_API_KEY and OPENAI_MODEL when needed, to score one too.)']),
    '',
    `ledger_needle_survival ${results.ledger_needle_survival}, needle_survival_with_recall ${results.needle_survival_with_recall}, ` +
      `tokens_freed_by_pruning_share ${results.tokens_freed_by_pruning_share} (what the pruning tier freed ÷ what all compactions freed).`,
  ];
  lines.push(
    '',
    `Continuation eval: 3 scripted tasks (${withPlan.minCallsPerTask}+ calls, ${withPlan.minCompactionsPerTask}+ compactions inside the turns of each, ${withPlan.betweenTurns} between turns), worked through by a stand-in that decides only from its view.`,
    '',
    '| | with the plan and ledgers | with summaries alone | target (with the plan) |',
    '|---|---:|---:|---:|',
    `| redo rate in the ${REDO_WINDOW} calls after a compaction | ${round(withPlan.redoRate)} | ${round(summariesOnly.redoRate)} | ≤ 0.05 |`,
    `| work-state accuracy (the plan shown against the record) | ${round(withPlan.accuracy)} | — | 1 |`,
    `| stalls (turns that ended before the work was done) | ${withPlan.stalls} | ${summariesOnly.stalls} | 0 |`,
    `| compaction loops | ${withPlan.loops} | ${summariesOnly.loops} | 0 |`,
    `| compactions | ${withPlan.compactions} | ${summariesOnly.compactions} | |`,
  );
  if (sum(dropping, 'freedByPruning') === 0) {
    lines.push(
      'Pruning freed nothing in these sessions: no compaction reported a pruning (the pruning tier was off or found no tool output worth a stub).',
    );
  }
  console.log(lines.join('\n'));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
