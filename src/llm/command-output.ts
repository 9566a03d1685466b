/**
 * A shell command's output as the model gets it. Pure (no `vscode`, no Node).
 *
 * A terminal sends raw data: colours and cursor moves as escape sequences, progress bars redrawn
 * with carriage returns. {@link TerminalText} turns that into plain lines. A command may print
 * millions of lines, so {@link OutputCapture} keeps only the first and the last ones, each up to a
 * budget, and counts what lies between; {@link formatCapturedOutput} fits the kept lines into a
 * tool result with a marker saying what was left out and where the whole output is.
 */

/** What was kept of a command's output. */
export interface CapturedOutput {
  /** The first lines, in order. */
  readonly head: readonly string[];
  /** The last lines, in order, after the head (never overlapping it). */
  readonly tail: readonly string[];
  /** Lines between head and tail that were not kept. */
  readonly omittedLines: number;
  /** Characters of those lines, line breaks included. */
  readonly omittedChars: number;
}

/** Longest line kept; the rest of a longer one is counted and replaced by a note. */
export const MAX_LINE_CHARS = 2_000;

const ESC = '\u001b';
const BEL = '\u0007';
/** After ESC: the sequences that run until BEL or ESC \ (OSC, DCS, SOS, PM, APC). */
const STRING_INTRODUCERS = ']PX^_';
/** After ESC: character set selections, which take one more character. */
const CHARSET_INTRODUCERS = '()*+-./';

type EscapeState = 'text' | 'escape' | 'csi' | 'string' | 'string-escape' | 'charset';

/**
 * Turns raw terminal data, given in chunks split anywhere (inside an escape sequence or between a
 * carriage return and its line feed), into lines of plain text: escape sequences (CSI, OSC, DCS,
 * charset selections) are removed, CRLF ends a line, a lone CR starts the line again (a progress
 * bar keeps its last state), backspace removes a character, other control characters are dropped.
 */
export class TerminalText {
  private state: EscapeState = 'text';
  private line = '';
  private extra = 0;
  private carriageReturn = false;

  constructor(private readonly onLine: (line: string) => void) {}

  push(data: string): void {
    for (const char of data) this.take(char);
  }

  /** Ends the last line, if it has anything. */
  finish(): void {
    if (this.line !== '' || this.extra > 0) this.commit();
    this.carriageReturn = false;
  }

  private take(char: string): void {
    switch (this.state) {
      case 'escape':
        // ESC [ control sequence; ESC ] OSC, ESC P DCS, ESC X SOS, ESC ^ PM, ESC _ APC: strings ended by BEL or ESC \.
        this.state = char === '[' ? 'csi' : STRING_INTRODUCERS.includes(char) ? 'string' : CHARSET_INTRODUCERS.includes(char) ? 'charset' : 'text';
        return;
      case 'csi':
        // Parameters and intermediates are 0x20–0x3f; the final byte ends it.
        if (char >= '@' && char <= '~') this.state = 'text';
        return;
      case 'string':
        if (char === BEL) this.state = 'text';
        else if (char === ESC) this.state = 'string-escape';
        return;
      case 'string-escape':
        this.state = char === '\\' ? 'text' : 'string';
        return;
      case 'charset':
        this.state = 'text';
        return;
      case 'text':
        this.text(char);
    }
  }

  private text(char: string): void {
    if (char === '\n') {
      this.carriageReturn = false;
      this.commit();
      return;
    }
    if (this.carriageReturn) {
      // A CR not followed by LF: the cursor went back to the start of the line.
      this.carriageReturn = false;
      this.line = '';
      this.extra = 0;
    }
    if (char === ESC) this.state = 'escape';
    else if (char === '\r') this.carriageReturn = true;
    else if (char === '\b') this.line = this.line.slice(0, -1);
    else if (char === '\t' || (char >= ' ' && char !== '\u007f' && !(char >= '\u0080' && char <= '\u009f'))) this.append(char);
  }

  private append(char: string): void {
    if (this.line.length < MAX_LINE_CHARS) this.line += char;
    else this.extra += char.length;
  }

  private commit(): void {
    const note = this.extra > 0 ? `… [${this.extra.toLocaleString('en-US')} more characters]` : '';
    this.onLine(this.line + note);
    this.line = '';
    this.extra = 0;
  }
}

/** How much of the output to keep in memory while the command runs. */
export interface CaptureBudget {
  /** Characters of the first lines kept. */
  readonly headChars: number;
  /** Characters of the last lines kept. */
  readonly tailChars: number;
}

/** Keeps the first and last lines of a command's output within a {@link CaptureBudget}, whatever its length. */
export class OutputCapture {
  private readonly head: string[] = [];
  private readonly tail: string[] = [];
  private headUsed = 0;
  private tailUsed = 0;
  private headFull = false;
  private omittedLines = 0;
  private omittedChars = 0;
  private readonly text = new TerminalText((line) => this.add(line));

  constructor(private readonly budget: CaptureBudget) {}

  /** Raw terminal data, as it arrives. */
  push(data: string): void {
    this.text.push(data);
  }

  /** What was kept; ends the last line. */
  finish(): CapturedOutput {
    this.text.finish();
    return { head: [...this.head], tail: [...this.tail], omittedLines: this.omittedLines, omittedChars: this.omittedChars };
  }

  private add(line: string): void {
    const size = line.length + 1;
    if (!this.headFull && this.headUsed + size <= this.budget.headChars) {
      this.head.push(line);
      this.headUsed += size;
      return;
    }
    this.headFull = true;
    this.tail.push(line);
    this.tailUsed += size;
    while (this.tailUsed > this.budget.tailChars && this.tail.length > 1) {
      const dropped = this.tail.shift() as string;
      this.tailUsed -= dropped.length + 1;
      this.omittedLines++;
      this.omittedChars += dropped.length + 1;
    }
  }
}

/** Share of the room given to the first lines; the last lines, where errors and summaries are, get the rest. */
const HEAD_SHARE = 0.4;
/** Room kept for the marker line. */
const MARKER_RESERVE = 200;

/**
 * The output as text of at most `maxChars` characters: all of it when it fits, else its first
 * and last lines with a marker between them saying how many lines were left out and `where` the
 * whole output can be read.
 */
export function formatCapturedOutput(output: CapturedOutput, maxChars: number, where: string): string {
  const lines = [...output.head, ...output.tail];
  const total = lines.reduce((sum, line) => sum + line.length + 1, 0);
  if (output.omittedLines === 0 && total - 1 <= maxChars) return lines.join('\n');

  const room = Math.max(0, maxChars - MARKER_RESERVE);
  const headRoom = Math.floor(room * HEAD_SHARE);
  const first: string[] = [];
  let used = 0;
  for (const line of output.head) {
    if (used + line.length + 1 > headRoom) break;
    first.push(line);
    used += line.length + 1;
  }
  const last: string[] = [];
  const tailRoom = room - used;
  used = 0;
  for (let i = lines.length - 1; i >= first.length; i--) {
    const line = lines[i] as string;
    if (used + line.length + 1 > tailRoom) break;
    last.unshift(line);
    used += line.length + 1;
  }
  const cut = lines.slice(first.length, lines.length - last.length);
  const omittedLines = output.omittedLines + cut.length;
  const omittedChars = output.omittedChars + cut.reduce((sum, line) => sum + line.length + 1, 0);
  const marker = `[… ${plural(omittedLines, 'line')} (${omittedChars.toLocaleString('en-US')} characters) not shown here; the whole output is in ${where}.]`;
  return [...first, marker, ...last].join('\n');
}

function plural(count: number, word: string): string {
  return `${count.toLocaleString('en-US')} ${word}${count === 1 ? '' : 's'}`;
}
