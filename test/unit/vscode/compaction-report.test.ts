import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CompactionOutcome } from '../../../src/core/compaction';
import { CompactionReporter } from '../../../src/vscode/compaction-report';
import { templateSummary } from '../core/fixtures';
import { twelveTurns } from '../fixtures/conversation-deps';

type Log = ConstructorParameters<typeof CompactionReporter>[0]['log'];

/** The log channel's three levels, as lines prefixed by their level. */
function recordingLog(): { log: Log; lines: string[] } {
  const lines: string[] = [];
  const log = {
    info: (text: string) => void lines.push(`info: ${text}`),
    warn: (text: string) => void lines.push(`warn: ${text}`),
    debug: (text: string) => void lines.push(`debug: ${text}`),
  };
  return { log: log as unknown as Log, lines };
}

describe('the compaction reporter', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'longrun-report-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** Twelve turns compacted by hand, with a summarizer named "notes-model". */
  async function compacted(): Promise<CompactionOutcome & { status: 'compacted' }> {
    const conversation = await twelveTurns(dir, { summarizerName: 'notes-model', summary: templateSummary('SUMMARY-TEXT-4d2a of twelve turns.') });
    const outcome = await conversation.compact('manual');
    assert.equal(outcome.status, 'compacted', 'reason' in outcome ? outcome.reason : '');
    return outcome as CompactionOutcome & { status: 'compacted' };
  }

  it('logs a compaction’s round, reason, tokens, messages, duration, summarizer, frequency and repairs, without the summary', async () => {
    const outcome = await compacted();
    const { log, lines } = recordingLog();
    new CompactionReporter({ log, verbose: () => false, now: () => 5_000 }).report(outcome, 'manual');

    const e = outcome.compaction.entry!;
    assert.deepEqual(lines, [
      `info: Compaction round 1 (manual): ${e.tokensBefore} → ${e.tokensAfter} tokens, ${outcome.compaction.compactedCount} messages compacted in ${e.durationMs} ms, 1 summarizer call(s), summarizer notes-model; 1 compaction(s) in the last hour, 1 this session.`,
      'info: Summary repaired: heading, original task added.',
    ]);
    assert.ok(e.tokensBefore > e.tokensAfter && outcome.compaction.compactedCount > 0);
  });

  it('counts only the last hour’s compactions as recent, and every one of the session', async () => {
    const outcome = await compacted();
    const { log, lines } = recordingLog();
    let now = 0;
    const reporter = new CompactionReporter({ log, verbose: () => false, now: () => now });
    for (const at of [0, 1_800_000, 3_700_000]) {
      now = at;
      reporter.report(outcome, 'threshold');
    }
    assert.deepEqual(
      lines.filter((line) => line.startsWith('info: Compaction round')).map((line) => line.slice(line.indexOf('; ') + 2)),
      [
        '1 compaction(s) in the last hour, 1 this session.',
        '2 compaction(s) in the last hour, 2 this session.',
        '2 compaction(s) in the last hour, 3 this session.',
      ],
    );
  });

  it('writes the summary to the log only when verbose logging is on', async () => {
    const outcome = await compacted();
    const quiet = recordingLog();
    new CompactionReporter({ log: quiet.log, verbose: () => false, now: () => 0 }).report(outcome, 'manual');
    const verbose = recordingLog();
    new CompactionReporter({ log: verbose.log, verbose: () => true, now: () => 0 }).report(outcome, 'manual');

    assert.ok(!quiet.lines.join('\n').includes('SUMMARY-TEXT-4d2a'));
    assert.deepEqual(verbose.lines.slice(0, -1), quiet.lines);
    assert.match(verbose.lines.at(-1)!, /^debug: Summary of round 1:\n[^]*SUMMARY-TEXT-4d2a/);
  });

  it('logs a skipped or cancelled compaction as information and a failed one as a warning, with its reason', () => {
    const { log, lines } = recordingLog();
    const reporter = new CompactionReporter({ log, verbose: () => false, now: () => 0 });
    reporter.report({ status: 'noop', reason: 'Nothing to compact.' }, 'manual');
    reporter.report({ status: 'failed', reason: 'The summarizer timed out.' }, 'threshold');
    reporter.report({ status: 'cancelled', reason: 'Closed.' }, 'overflow');
    assert.deepEqual(lines, [
      'info: Compaction (manual) skipped: Nothing to compact.',
      'warn: Compaction (threshold) failed: The summarizer timed out.',
      'info: Compaction (overflow) cancelled.',
    ]);
  });
});
