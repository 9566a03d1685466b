import assert from 'node:assert/strict';
import { formatCapturedOutput, MAX_LINE_CHARS, OutputCapture, TerminalText, type CapturedOutput } from '../../../src/llm/command-output';

function lines(chunks: readonly string[]): string[] {
  const out: string[] = [];
  const text = new TerminalText((line) => out.push(line));
  for (const chunk of chunks) text.push(chunk);
  text.finish();
  return out;
}

function capture(output: string, budget = { headChars: 1_000, tailChars: 1_000 }): CapturedOutput {
  const c = new OutputCapture(budget);
  c.push(output);
  return c.finish();
}

const numbered = (count: number): string => Array.from({ length: count }, (_, i) => `line ${i + 1}`).join('\r\n') + '\r\n';

describe('command output: what the model reads of a terminal', () => {
  describe('TerminalText', () => {
    it('removes colours, cursor moves and shell integration marks', () => {
      const raw = '\u001b]633;C\u0007\u001b[1;31merror\u001b[0m: failed\r\n\u001b[2K\u001b[1Gdone\u001b]633;D;1\u001b\\\r\n';
      assert.deepEqual(lines([raw]), ['error: failed', 'done']);
    });

    it('keeps the last state of a progress bar redrawn with carriage returns', () => {
      assert.deepEqual(lines(['progress 10%\rprogress 50%\rprogress 100%\r\nnext\r\n']), ['progress 100%', 'next']);
    });

    it('reads an escape sequence or a CRLF split between two chunks', () => {
      assert.deepEqual(lines(['one\r', '\ntwo \u001b[3', '2mgreen\u001b', '[0m\r', '\nthree']), ['one', 'two green', 'three']);
    });

    it('applies backspaces and drops other control characters', () => {
      assert.deepEqual(lines(['abd\bc\u0007\u0000\tx\r\n']), ['abc\tx']);
    });

    it('cuts a line too long to keep and says how much is missing', () => {
      const [line] = lines(['x'.repeat(MAX_LINE_CHARS + 500)]);
      assert.equal(line, `${'x'.repeat(MAX_LINE_CHARS)}… [500 more characters]`);
    });
  });

  describe('OutputCapture', () => {
    it('keeps everything that fits', () => {
      assert.deepEqual(capture('a\r\nb\r\n'), { head: ['a', 'b'], tail: [], omittedLines: 0, omittedChars: 0 });
    });

    it('keeps the first and last lines of 50,000 lines within its budget and counts the rest', () => {
      const output = capture(numbered(50_000), { headChars: 100, tailChars: 100 });
      assert.deepEqual(output.head.slice(0, 2), ['line 1', 'line 2']);
      assert.equal(output.tail.at(-1), 'line 50000');
      const kept = [...output.head, ...output.tail].join('\n').length;
      assert.ok(kept <= 200, `kept ${kept} characters`);
      assert.equal(output.head.length + output.tail.length + output.omittedLines, 50_000);
    });
  });

  describe('formatCapturedOutput', () => {
    it('gives the whole output when it fits', () => {
      assert.equal(formatCapturedOutput(capture('one\ntwo\n'), 100, 'the terminal "Longrun"'), 'one\ntwo');
    });

    it('keeps the first and last lines of a long output within the limit, with a marker saying where the rest is', () => {
      const text = formatCapturedOutput(capture(numbered(50_000), { headChars: 64_000, tailChars: 64_000 }), 2_000, 'the terminal "Longrun"');
      assert.ok(text.length <= 2_000, `${text.length} characters`);
      const shown = text.split('\n');
      assert.equal(shown[0], 'line 1');
      assert.equal(shown.at(-1), 'line 50000');
      const marker = shown.find((l) => l.startsWith('[…'));
      assert.ok(marker, text);
      const omitted = Number(/\[… ([\d,]+) lines/.exec(marker)?.[1]?.replace(/,/g, ''));
      assert.equal(shown.length - 1 + omitted, 50_000, 'every line is shown or counted');
      assert.match(marker, /not shown here; the whole output is in the terminal "Longrun"\.\]$/);
      assert.ok(shown.indexOf(marker) > shown.length / 3, 'the end of the output, where errors are, gets more room than its start');
    });
  });
});
