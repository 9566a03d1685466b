import { isSummaryMessage } from './history';
import { messageText, stringifyOutput, type Message } from './messages';
import { previousSummaryText, summaryHeading } from './summary-request';

/**
 * A summary made without a model, for when the summarizer fails: the user's messages verbatim up
 * to a budget (the first and the most recent first), the tools used, the errors seen and the
 * previous summary. It frees space without inventing anything.
 */
export interface FallbackInput {
  readonly round: number;
  readonly toCompact: readonly Message[];
  readonly previousSummary?: Message;
  readonly failure: string;
  readonly budgetTokens: number;
  readonly countText: (value: string) => number;
  /** A user message with this text is left out: the original task, which has a section of its own. */
  readonly skipUserText?: string;
}

export const FALLBACK_MODEL = 'extractive-fallback';

export function extractiveSummary(input: FallbackInput): string {
  const { countText } = input;
  let remaining = input.budgetTokens;
  const take = (value: string): string | undefined => {
    const cost = countText(value);
    if (cost > remaining) return undefined;
    remaining -= cost;
    return value;
  };

  const lines: string[] = [
    `${summaryHeading(input.round)} (extractive fallback)`,
    '',
    `This summary was extracted without a model because ${input.failure}. It lists what was said and done; it does not interpret it.`,
  ];
  remaining -= countText(lines.join('\n'));

  const skip = input.skipUserText?.trim();
  const users = input.toCompact
    .filter((m) => m.role === 'user' && !isSummaryMessage(m))
    .map((m) => messageText(m).trim())
    .filter((t) => t && t !== skip);
  // The first request, then the newest ones: the task and where it stands matter most.
  const order = users.length > 0 ? [0, ...users.map((_, i) => users.length - 1 - i).filter((i) => i !== 0)] : [];
  const chosen = new Map<number, string>();
  let omitted = 0;
  for (const i of order) {
    const quoted = take(quote(users[i]!));
    if (quoted === undefined) omitted++;
    else chosen.set(i, quoted);
  }
  lines.push('', '### User messages (verbatim, oldest first)');
  if (users.length === 0) lines.push('- (none in the compacted part)');
  [...chosen.keys()].sort((a, b) => a - b).forEach((i) => lines.push(chosen.get(i)!, ''));
  if (omitted > 0) lines.push(`- (${omitted} more user message${omitted === 1 ? '' : 's'} left out for length)`);

  const tools = new Map<string, number>();
  const errors: string[] = [];
  for (const message of input.toCompact) {
    for (const part of message.content) {
      if (part.type === 'tool-call') tools.set(part.toolName, (tools.get(part.toolName) ?? 0) + 1);
      if (part.type === 'tool-result' && part.isError) {
        errors.push(`- ${part.toolName}: ${firstLine(stringifyOutput(part.output))}`);
      }
    }
  }
  lines.push('', '### Tools used');
  if (tools.size === 0) lines.push('- (none)');
  else lines.push(...[...tools].sort((a, b) => a[0].localeCompare(b[0])).map(([name, n]) => `- ${name} ×${n}`));

  lines.push('', '### Errors seen');
  const keptErrors = errors.filter((e) => take(e) !== undefined);
  if (keptErrors.length === 0) lines.push(errors.length ? `- (${errors.length} errors, left out for length)` : '- (none)');
  else lines.push(...keptErrors);

  if (input.previousSummary) {
    const previous = previousSummaryText(input.previousSummary);
    lines.push('', '### Earlier summary');
    lines.push(take(previous) ?? `${previous.slice(0, Math.max(0, remaining * 3))}\n[… earlier summary cut for length]`);
  }
  return lines.join('\n');
}

function quote(value: string): string {
  return value
    .split('\n')
    .map((line) => `> ${line}`)
    .join('\n');
}

function firstLine(value: string): string {
  const line = value.split('\n').find((l) => l.trim()) ?? '';
  return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}
