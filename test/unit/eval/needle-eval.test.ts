import assert from 'node:assert/strict';
import { MessageTokenCounter } from '../../../src/core/message-tokens';
import { loadTokenizer } from '../../../src/core/tokenizer';
import { runEval, survival, type EvalReport } from '../../../eval/run-eval';
import { evalSessions, LEDGER_KINDS } from '../../../eval/sessions';
import { droppingSummarizer, keepingSummarizer } from '../../../eval/summarizers';

/** The eval's first scripted session, five summaries through the engine with the real tokenizer. */
async function evaluate(summarizer: ReturnType<typeof droppingSummarizer>): Promise<EvalReport> {
  const counter = new MessageTokenCounter(await loadTokenizer('o200k_base'));
  return runEval({ sessions: evalSessions().slice(0, 1), summarizer, counter, summaries: 5 });
}

describe('needle eval: the scripted session', () => {
  let dropping: EvalReport;
  let keeping: EvalReport;
  before(async function () {
    this.timeout(60_000);
    dropping = await evaluate(droppingSummarizer());
    keeping = await evaluate(keepingSummarizer());
  });

  it('compacts the session five times with a summary, each one a model summary, not a fallback', () => {
    const [session] = dropping.sessions;
    assert.equal(session!.summaries, 5);
    assert.equal(session!.fallbacks, 0);
    assert.deepEqual(session!.failures, []);
  });

  it('keeps every ledger needle in the request after five summaries that all drop them', () => {
    assert.equal(survival(dropping, 'ledgers', LEDGER_KINDS), 1);
  });

  it('loses those needles without the ledgers, so the measure can fail', () => {
    assert.equal(survival(dropping, 'summary', LEDGER_KINDS), 0);
    // The decision has no ledger: only the archive of originals still holds it.
    const decision = dropping.sessions[0]!.needles.find((n) => n.kind === 'decision')!;
    assert.deepEqual({ ledgers: decision.ledgers, recall: decision.recall }, { ledgers: false, recall: true });
  });

  it('finds every needle with the summary alone when the summarizer keeps them', () => {
    assert.equal(survival(keeping, 'summary'), 1);
  });

  it("never takes the instructions in a file for the user's constraints", () => {
    assert.equal(dropping.sessions[0]!.injectedConstraint, false);
  });

  it('counts what summaries cost and what pruning freed', () => {
    const [session] = dropping.sessions;
    assert.ok(session!.summaryTokens > 0 && session!.summarizerCalls >= 5);
    assert.ok(session!.freedTokens > 0 && session!.freedByPruning >= 0 && session!.freedByPruning <= session!.freedTokens);
  });
});
