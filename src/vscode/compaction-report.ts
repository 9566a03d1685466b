import * as vscode from 'vscode';
import type { CompactionOutcome } from '../core/compaction';
import type { CompactionReason } from '../core/history';
import { prunedCounts } from '../core/pruning';

/** What the compaction reporter is built from. */
export interface CompactionReporterDeps {
  readonly log: vscode.LogOutputChannel;
  /** Whether summaries go to the log too (`longrun.verboseLogging`). */
  readonly verbose: () => boolean;
  readonly now: () => number;
}

/**
 * Records every compaction in the "Longrun" log (reason, round, tokens before and after, duration,
 * messages compacted, fallback or not) and how often they happen. Never the
 * content of messages or summaries unless verbose logging is on.
 */
export class CompactionReporter {
  private readonly times: number[] = [];

  constructor(private readonly deps: CompactionReporterDeps) {}

  report(outcome: CompactionOutcome, reason: CompactionReason): void {
    switch (outcome.status) {
      case 'compacted': {
        const { entry: e, pruning: p } = outcome.compaction;
        const at = this.deps.now();
        this.times.push(at);
        const lastHour = this.times.filter((t) => at - t <= 3_600_000).length;
        const often = `${lastHour} compaction(s) in the last hour, ${this.times.length} this session.`;
        if (p) {
          const { superseded, old, truncated, written } = prunedCounts(p.outputs);
          this.deps.log.info(
            `Pruning (${p.reason}): ${p.tokensBefore} → ${p.tokensAfter} tokens, ${superseded} superseded and ${old} old large tool output(s) replaced by stubs, ${written} write call(s) whose content is on disk stubbed, ${truncated} cut to fit the window` +
              `${e ? '; a summary follows.' : `, no summary needed${outcome.compaction.lowGain ? ', low gain' : ''}; ${often}`}`,
          );
        }
        if (!e) break;
        this.deps.log.info(
          `Compaction round ${e.round} (${e.reason}): ${e.tokensBefore} → ${e.tokensAfter} tokens, ` +
            `${outcome.compaction.compactedCount} messages compacted in ${e.durationMs} ms, ${e.summarizerCalls} summarizer call(s), ` +
            `${e.fallback ? `extractive fallback (${e.failure ?? 'summarizer failed'})` : `summarizer ${e.model}`}` +
            `${e.lowGain ? ', low gain' : ''}${e.splitTurn ? ', split turn' : ''}; ${often}`,
        );
        if (outcome.compaction.repairs.length) this.deps.log.info(`Summary repaired: ${outcome.compaction.repairs.join(', ')} added.`);
        if (this.deps.verbose()) this.deps.log.debug(`Summary of round ${e.round}:\n${e.summary}`);
        break;
      }
      case 'noop':
        this.deps.log.info(`Compaction (${reason}) skipped: ${outcome.reason}`);
        break;
      case 'failed':
        this.deps.log.warn(`Compaction (${reason}) failed: ${outcome.reason}`);
        break;
      case 'cancelled':
        this.deps.log.info(`Compaction (${reason}) cancelled.`);
        break;
    }
  }
}
