import assert from 'node:assert/strict';
import { cacheLifetimeMs, cacheState } from '../../../src/core/cache-lifetime';
import { EngineMemo } from '../../../src/core/engine-memo';
import { computeColdPruning } from '../../../src/core/compaction';
import { modelView, stablePartEnd, type LogRecord } from '../../../src/core/history';
import type { Message } from '../../../src/core/messages';
import { asLog, assistant, config, estimatingCounter, FakeClock, idGenerator, toolResult, user } from './fixtures';

const MINUTE = 60_000;
const settings = { ttl: '5m' as const, openaiRetention24h: false };

describe('cache lifetime: how long each provider keeps the conversation', () => {
  it('takes Anthropic’s from the TTL asked for, OpenAI’s from its retention, and knows none for the others', () => {
    assert.equal(cacheLifetimeMs('anthropic', 'claude-sonnet-4-20250514', settings), 5 * MINUTE);
    assert.equal(cacheLifetimeMs('anthropic', 'claude-sonnet-4-20250514', { ...settings, ttl: '1h' }), 60 * MINUTE);
    assert.equal(cacheLifetimeMs('openrouter', 'anthropic/claude-sonnet-4', settings), 5 * MINUTE);
    assert.equal(cacheLifetimeMs('openai', 'gpt-4.1', settings), 10 * MINUTE);
    assert.equal(cacheLifetimeMs('openai', 'gpt-4.1', { ...settings, openaiRetention24h: true }), 24 * 60 * MINUTE);
    assert.equal(cacheLifetimeMs('google', 'gemini-2.5-pro', settings), undefined, 'implicit caching: no lifetime documented');
    assert.equal(cacheLifetimeMs('openai-compatible', 'llama3.1', settings), undefined);
    assert.equal(cacheLifetimeMs(undefined, 'gpt-4o', settings), undefined, "VS Code's models");
  });

  it('says the cache is warm until the lifetime has lapsed from the last request, then expired', () => {
    assert.deepEqual(cacheState(1_000, 5 * MINUTE, 1_000 + 5 * MINUTE - 1), { kind: 'warm', expiresAt: 1_000 + 5 * MINUTE });
    assert.deepEqual(cacheState(1_000, 5 * MINUTE, 1_000 + 5 * MINUTE), { kind: 'expired', since: 1_000 + 5 * MINUTE });
    assert.deepEqual(cacheState(undefined, 5 * MINUTE, 1), { kind: 'unknown' });
    assert.deepEqual(cacheState(1_000, undefined, 10 * MINUTE), { kind: 'unknown' });
  });
});

function read(id: string, path: string, output: string): Message[] {
  return [assistant(`${id}-a`, '', { callId: `${id}-c`, tool: 'read_file', input: { path } }), toolResult(id, `${id}-c`, 'read_file', output)];
}

describe('the pruning of a cold cache', () => {
  const deps = () => ({ counter: estimatingCounter(), clock: new FakeClock(), newId: idGenerator('p'), memo: new EngineMemo() });

  it('prunes every output no longer needed, whatever the view’s size, and asks no summarizer', () => {
    const log: LogRecord[] = asLog([
      user('u', 'look'),
      ...read('r1', 'a.ts', 'a'.repeat(4_000)),
      ...read('r2', 'a.ts', 'b'.repeat(4_000)),
      assistant('d', 'done'),
    ]);
    const outcome = computeColdPruning({ log, reason: 'cache-expired', config: config(), window: { limit: 200_000, source: 'model' } }, deps());
    assert.equal(outcome.status, 'compacted');
    if (outcome.status !== 'compacted') return;
    assert.deepEqual(
      outcome.compaction.pruning?.outputs.map((o) => `${o.messageId}:${o.kind}`),
      ['r1:duplicate'],
    );
    assert.equal(outcome.compaction.entry, undefined, 'no summary');
    assert.ok(outcome.compaction.tokensAfter < outcome.compaction.tokensBefore);
  });

  it('does nothing when nothing is worth pruning, or pruning is off', () => {
    const log = asLog([user('u', 'look'), ...read('r1', 'a.ts', 'a'.repeat(4_000)), assistant('d', 'done')]);
    const window = { limit: 200_000, source: 'model' as const };
    assert.equal(computeColdPruning({ log, reason: 'cache-expired', config: config(), window }, deps()).status, 'noop');
    const twice = asLog([user('u', 'look'), ...read('r1', 'a.ts', 'a'.repeat(4_000)), ...read('r2', 'a.ts', 'b'.repeat(4_000))]);
    const off = config((c) => ({ ...c, pruning: { ...c.pruning, enabled: false } }));
    assert.equal(computeColdPruning({ log: twice, reason: 'cache-expired', config: off, window }, deps()).status, 'noop');
  });
});

describe('the stable part after a compaction', () => {
  it('ends at the last message the view held when the latest compaction or pruning was applied', () => {
    const memo = new EngineMemo();
    const records: LogRecord[] = [
      ...asLog([user('u1', 'one'), assistant('a1', 'ok'), user('u2', 'two'), assistant('a2', 'ok')]),
      {
        type: 'pruning',
        entry: {
          id: 'p1',
          reason: 'threshold',
          outputs: [{ messageId: 'x', toolCallId: 'y', toolName: 'read_file', kind: 'old', stub: 's', tokens: 1 }],
          tokensBefore: 1,
          tokensAfter: 0,
          createdAt: 1,
        },
      },
      ...asLog([user('u3', 'three'), assistant('a3', 'ok')]),
    ];
    assert.equal(stablePartEnd(records, modelView(records, memo), 'p1'), 'a2');
    assert.equal(stablePartEnd(records, modelView(records, memo), null), undefined, 'before any compaction');
  });
});
