import assert from 'node:assert/strict';
import { MAX_MATCH_TEXT, SearchTimedOut, TextSearch } from '../../../src/app/workspace/text-search';

describe('TextSearch: regular expressions off the extension host thread', () => {
  const never = new AbortController().signal;

  it('finds matching lines in order, at most as many as wanted, with CRLF and LF lines alike', async () => {
    const search = new TextSearch(/needle/i, 5_000, never);
    try {
      const matches = await search.search(
        [
          { path: 'a.txt', text: 'x\r\nNeedle one\r\ny\n' },
          { path: 'b.txt', text: 'needle two\nneedle three\n' },
        ],
        2,
      );
      assert.deepEqual(matches, [
        { path: 'a.txt', line: 2, text: 'Needle one' },
        { path: 'b.txt', line: 1, text: 'needle two' },
      ]);
    } finally {
      search.dispose();
    }
  });

  it('cuts the text of a huge matching line', async () => {
    const search = new TextSearch(/y/, 5_000, never);
    try {
      const [match] = await search.search([{ path: 'min.js', text: 'y'.repeat(100_000) }], 1);
      assert.equal(match?.text.length, MAX_MATCH_TEXT);
    } finally {
      search.dispose();
    }
  });

  it('stops a catastrophic pattern at its deadline while the main thread keeps ticking', async () => {
    const search = new TextSearch(/^(a+)+$/, 400, never);
    let ticks = 0;
    const timer = setInterval(() => ticks++, 10);
    const started = Date.now();
    try {
      await assert.rejects(search.search([{ path: 'x', text: `${'a'.repeat(32)}!` }], 10), SearchTimedOut);
    } finally {
      clearInterval(timer);
      search.dispose();
    }
    const elapsed = Date.now() - started;
    assert.ok(elapsed >= 350 && elapsed < 1_500, `took ${elapsed} ms`);
    assert.ok(ticks >= 15, `the main thread ticked ${ticks} times`);
    await assert.rejects(search.search([{ path: 'y', text: 'a' }], 1), SearchTimedOut, 'a stopped search stays stopped');
  });

  it('stops when the signal aborts, with its reason', async () => {
    const controller = new AbortController();
    const search = new TextSearch(/^(a+)+$/, 30_000, controller.signal);
    setTimeout(() => controller.abort(), 100);
    const started = Date.now();
    await assert.rejects(search.search([{ path: 'x', text: `${'a'.repeat(32)}!` }], 10), { name: 'AbortError' });
    assert.ok(Date.now() - started < 1_500);
    search.dispose();
  });
});
