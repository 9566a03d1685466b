import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { onPath, turnOf, TurnIndex, type TurnPath } from '../../core/branches';
import type { ConversationLog, LogRecord } from '../../core/history';
import { stringifyOutput, type Message } from '../../core/messages';
import { stepLine } from '../../core/plan-text';
import type { SubagentEvent } from '../../core/log';

/**
 * A whole conversation as Markdown, for "Longrun: Export Conversation as Markdown": every message
 * in the order it was written, the compacted originals included, and each compaction's summary
 * where it applied (undone ones marked so), where tool outputs were pruned, each update of the
 * agent's plan, an account of abandoned turns the user carried over, and what each subagent did, its
 * messages named after it. Code fences grow to hold any backticks in the content.
 *
 * Written record by record to the file, never gathered into one string: a conversation of any size
 * exports in the memory one record takes. It ends with `closing` when given: the usage and cost table.
 */

/** Calls `onRecord` for each record in order, waiting for each call; called several times by an export. */
export type RecordSource = (onRecord: (record: LogRecord) => Promise<void> | void) => Promise<void>;

/** Takes the Markdown piece by piece. */
export type MarkdownSink = (text: string) => Promise<void> | void;

/**
 * Writes the Markdown of the records `source` gives to `sink`. With `leaf` (the branch in use, null
 * for the trunk), the records of that branch come first, in order, then the turns left off it (a
 * rewind, a retry, an edited request, or another chat forked from this one) as side branches;
 * without it, every record in the order it was written.
 */
export async function writeConversationMarkdown(
  source: RecordSource,
  title: string,
  sink: MarkdownSink,
  leaf?: string | null,
  closing: readonly string[] = [],
): Promise<void> {
  const passes = new ExportPasses(leaf);
  let index = 0;
  await source((record) => passes.scan(record, index++));
  await sink(passes.start(title));
  index = 0;
  await source((record) => {
    const text = passes.main(record, index++);
    return text === '' ? undefined : sink(text);
  });
  if (passes.hasSides()) {
    await sink(passes.sidesStart());
    index = 0;
    await source((record) => {
      const text = passes.side(record, index++);
      return text === '' ? undefined : sink(text);
    });
  }
  if (closing.length > 0) await sink(passes.closing(closing));
  await sink(passes.end());
}

/** A conversation held in memory as Markdown (see `writeConversationMarkdown`); for small logs (tests, previews). */
export function conversationMarkdown(log: ConversationLog, title: string, leaf?: string | null, closing: readonly string[] = []): string {
  const passes = new ExportPasses(leaf);
  log.forEach((record, index) => passes.scan(record, index));
  const pieces = [passes.start(title)];
  log.forEach((record, index) => pieces.push(passes.main(record, index)));
  if (passes.hasSides()) {
    pieces.push(passes.sidesStart());
    log.forEach((record, index) => pieces.push(passes.side(record, index)));
  }
  if (closing.length > 0) pieces.push(passes.closing(closing));
  pieces.push(passes.end());
  return pieces.join('');
}

/**
 * The passes of an export over the records: the first finds what later records say of earlier ones
 * (undo marks, turns), the second writes the branch in use, the third the side branches.
 */
class ExportPasses {
  private readonly undone = new Set<string>();
  /** Subagents whose end was written: one without is said to have been cut short. */
  private readonly ended = new Set<string>();
  private readonly turns = new TurnIndex();
  private path: TurnPath | undefined;
  private sides = 0;
  private current: string | undefined;
  private readonly out = new TrimmedEnd();

  constructor(private readonly leaf?: string | null) {}

  scan(record: LogRecord, index: number): void {
    if (record.type === 'undo') this.undone.add(record.entryId);
    if (record.type === 'turn') this.turns.note(record.turn, index);
    if (record.type === 'subagent' && record.subagent.kind === 'end') this.ended.add(record.subagent.id);
  }

  start(title: string): string {
    this.path = this.leaf === undefined ? undefined : this.turns.path(this.leaf);
    return this.out.lines(titleLines(title));
  }

  main(record: LogRecord, index: number): string {
    if (this.path && !onPath(record, index, this.path)) {
      this.sides++;
      return '';
    }
    return this.out.lines(renderRecord(record, this.undone, this.ended));
  }

  hasSides(): boolean {
    return this.sides > 0;
  }

  sidesStart(): string {
    return this.out.lines([
      '# Side branches',
      '',
      'Turns the chat no longer holds (rewound, retried, or an edited request), or that another chat forked from this one went on with. They are kept, and were not sent to the model on the branch above.',
      '',
    ]);
  }

  side(record: LogRecord, index: number): string {
    if (!this.path || onPath(record, index, this.path)) return '';
    const turn = turnOf(record);
    const heading = turn !== this.current ? this.sideHeading(turn) : [];
    this.current = turn;
    return this.out.lines([...heading, ...renderRecord(record, this.undone, this.ended)]);
  }

  /** The closing section: what the conversation's requests used and cost. */
  closing(lines: readonly string[]): string {
    return this.out.lines(['', '# Usage and cost', '', ...lines, '']);
  }

  end(): string {
    return this.out.end();
  }

  private sideHeading(turn: string | undefined): string[] {
    if (turn === undefined) return ['### Before the first turn', ''];
    const parent = this.turns.info(turn)?.parent;
    return [`### Side turn ${turn}${parent ? `, continuing turn ${parent}` : ', at the start'}`, ''];
  }
}

function titleLines(title: string): string[] {
  return [`# ${title.replace(/\n/g, ' ')}`, ''];
}

/** Bytes gathered before a write to the file. */
const WRITE_BYTES = 1024 * 1024;

/**
 * Exports to `file`: written to a temporary file beside it, renamed over it when complete, so a
 * failed export never leaves half a file under the chosen name. Returns the bytes written.
 */
export async function exportConversationToFile(
  source: RecordSource,
  title: string,
  file: string,
  leaf?: string | null,
  closing: readonly string[] = [],
): Promise<number> {
  const temporary = path.join(path.dirname(file), `.${path.basename(file)}.${randomBytes(4).toString('hex')}.partial`);
  const handle = await fs.open(temporary, 'wx');
  let written = 0;
  let pending: string[] = [];
  let pendingBytes = 0;
  const flush = async (): Promise<void> => {
    const data = Buffer.from(pending.join(''), 'utf8');
    pending = [];
    pendingBytes = 0;
    await handle.write(data, 0, data.length);
    written += data.length;
  };
  try {
    await writeConversationMarkdown(
      source,
      title,
      async (text) => {
        pending.push(text);
        pendingBytes += text.length;
        if (pendingBytes >= WRITE_BYTES) await flush();
      },
      leaf,
      closing,
    );
    await flush();
    await handle.close();
    await fs.rename(temporary, file);
    return written;
  } catch (error) {
    await handle.close().catch(() => undefined);
    await fs.rm(temporary, { force: true });
    throw error;
  }
}

/**
 * Joins lines with newlines as they come, and ends the text with exactly one newline after its last
 * non-blank character: whitespace is held back until more text follows it.
 */
class TrimmedEnd {
  private first = true;
  private heldBack = '';

  /** The text to write now for `lines`. */
  lines(lines: readonly string[]): string {
    const ready: string[] = [];
    for (const line of lines) {
      const piece = this.first ? line : `\n${line}`;
      this.first = false;
      const body = piece.length - trailingWhitespace(piece);
      if (body === 0) {
        this.heldBack += piece;
        continue;
      }
      ready.push(this.heldBack, piece.slice(0, body));
      this.heldBack = piece.slice(body);
    }
    return ready.join('');
  }

  /** The text that ends the document. */
  end(): string {
    return '\n';
  }
}

/** How many whitespace characters `text` ends with. */
function trailingWhitespace(text: string): number {
  let i = text.length;
  while (i > 0 && /\s/.test(text.charAt(i - 1))) i--;
  return text.length - i;
}

function renderRecord(record: LogRecord, undone: ReadonlySet<string>, ended: ReadonlySet<string>): string[] {
  switch (record.type) {
    case 'message':
      return [...renderMessage(record.message), ''];
    case 'subagent':
      return renderSubagentEvent(record.subagent, ended);
    case 'compaction': {
      const e = record.entry;
      const state = undone.has(e.id) ? ', later undone' : '';
      if (e.editOf) {
        return [
          '---',
          '',
          `> **Summary of compaction round ${e.round} edited by the user**${state ? ` (${state.slice(2)})` : ''}: from here on the model got this text instead.`,
          '',
          ...quote(e.summary),
          '',
          '---',
          '',
        ];
      }
      return [
        `---`,
        '',
        `> **Compaction round ${e.round}** (${e.reason}${e.fallback ? ', extractive fallback' : ''}${state}): ${e.compactedMessageIds.length} messages above were replaced by this summary, ${e.tokensBefore.toLocaleString('en-US')} → ${e.tokensAfter.toLocaleString('en-US')} tokens.`,
        '',
        ...quote(e.summary),
        '',
        `---`,
        '',
      ];
    }
    case 'pruning': {
      const e = record.entry;
      const state = undone.has(e.id) ? ', later undone' : '';
      const written = e.outputs.filter((o) => o.kind === 'written').length;
      const n = e.outputs.length - written;
      const what = [
        n > 0 ? `${n} tool output${n === 1 ? '' : 's'}` : '',
        written > 0 ? `the content of ${written} file write${written === 1 ? '' : 's'}` : '',
      ].filter((w) => w !== '');
      const were = n + written === 1 ? 'was' : 'were';
      return [
        `> **Pruning** (${e.reason}${state}): ${what.join(' and ')} above ${were} replaced by a stub in the model's view (kept here in full), ${e.tokensBefore.toLocaleString('en-US')} → ${e.tokensAfter.toLocaleString('en-US')} tokens.`,
        '',
      ];
    }
    case 'plan': {
      const steps = record.plan.steps;
      return [
        `> **Plan** (${steps.length} step${steps.length === 1 ? '' : 's'}, as the agent wrote it):`,
        '>',
        ...steps.map((step, i) => `> ${stepLine(step, i + 1)}`),
        '',
      ];
    }
    case 'account':
      return [
        '> **Carried over from the turns left behind** (the user asked for it; it went with the next request):',
        '>',
        ...quote(record.account.text),
        '',
      ];
    default:
      return [];
  }
}

/**
 * One record of a subagent's work: its start (and whether it was cut short), each message of its
 * own conversation under a heading naming it, its compactions, and what the agent got back.
 */
export function renderSubagentEvent(event: SubagentEvent, ended: ReadonlySet<string>): string[] {
  switch (event.kind) {
    case 'start': {
      const cut = ended.has(event.id) ? '' : ' It has no end: it was cut short (a crash, or the window closed while it ran).';
      return [`> **Subagent ${event.id} started** on ${event.model}:${cut}`, '', ...quote(event.task), ''];
    }
    case 'message':
      return [...renderMessage(event.message, `Subagent ${event.id} · `), ''];
    case 'compacted':
      return [
        `> Subagent ${event.id} compacted its own conversation${event.pruned > 0 ? ` (${event.pruned} tool outputs pruned)` : ''}, ${event.tokensBefore.toLocaleString('en-US')} → ${event.tokensAfter.toLocaleString('en-US')} tokens.`,
        '',
      ];
    case 'end':
      return [
        `> **Subagent ${event.id} ${event.ending}** after ${event.steps} step${event.steps === 1 ? '' : 's'}, ${(event.inputTokens + event.outputTokens).toLocaleString('en-US')} tokens. What the agent got back:`,
        '',
        ...quote(event.result),
        '',
      ];
  }
}

/** A message as Markdown: a heading with its role (after `who`, when it is not the agent's), then its parts. */
export function renderMessage(message: Message, who = ''): string[] {
  const cut = message.incomplete ? ' (incomplete: the stream ended without a finish reason)' : '';
  const lines: string[] = [`## ${who}${heading(message.role)}${cut}`, ''];
  for (const part of message.content) {
    switch (part.type) {
      case 'text':
        lines.push(part.text, '');
        break;
      case 'reasoning':
        // Reasoning given only encrypted or redacted has no text to show.
        if (part.text.length > 0) lines.push('*Reasoning:*', '', ...quote(part.text), '');
        break;
      case 'tool-call':
        lines.push(`**Tool call** \`${part.toolName}\``, '', ...fenced(stringifyOutput(part.input), 'json'), '');
        break;
      case 'tool-result':
        lines.push(`**Tool result** \`${part.toolName}\`${part.isError ? ' (error)' : ''}`, '', ...fenced(stringifyOutput(part.output), ''), '');
        break;
      case 'file':
        lines.push(`*Attachment: ${part.name ?? part.mediaType}*`, '');
        break;
    }
  }
  return lines;
}

function heading(role: Message['role']): string {
  return role === 'user' ? 'User' : role === 'assistant' ? 'Assistant' : role === 'tool' ? 'Tool' : 'System';
}

/** A code fence one backtick longer than any run of backticks in `text` (at least three). */
function fenced(text: string, language: string): string[] {
  const fence = '`'.repeat(Math.max(2, longestBacktickRun(text)) + 1);
  return [`${fence}${language}`, text, fence];
}

/** Counted in one pass: a text may hold millions of runs, too many to spread into `Math.max`. */
function longestBacktickRun(text: string): number {
  let longest = 0;
  let run = 0;
  for (let i = 0; i < text.length; i++) {
    run = text.charCodeAt(i) === 96 ? run + 1 : 0;
    if (run > longest) longest = run;
  }
  return longest;
}

export function quote(text: string): string[] {
  return text.split('\n').map((line) => (line ? `> ${line}` : '>'));
}
