import type { SideTurn } from '../core/branches';
import type { ConversationLog } from '../core/history';
import { stringifyOutput, type Message } from '../core/messages';

/**
 * A whole conversation as Markdown, for "Longrun: Export Conversation as Markdown": every message
 * in the order it was written, the compacted originals included, and each compaction's summary
 * where it applied (undone ones marked so), and where tool outputs were pruned. Code fences grow to hold any backticks in the content.
 */
export function conversationMarkdown(log: ConversationLog, title: string, sides: readonly SideTurn[] = []): string {
  const out: string[] = [`# ${title.replace(/\n/g, ' ')}`, ''];
  renderRecords(log, out);
  if (sides.length > 0) {
    out.push(
      '# Side branches',
      '',
      'Turns the chat no longer holds (rewound, retried, or an edited request), or that another chat forked from this one went on with. They are kept, and were not sent to the model on the branch above.',
      '',
    );
    for (const side of sides) {
      out.push(`### Side turn ${side.turn.id}${side.turn.parent ? `, continuing turn ${side.turn.parent}` : ', at the start'}`, '');
      renderRecords(side.records, out);
    }
  }
  return `${out.join('\n').trimEnd()}\n`;
}

function renderRecords(log: ConversationLog, out: string[]): void {
  const undone = new Set<string>();
  for (const record of log) if (record.type === 'undo') undone.add(record.entryId);
  for (const record of log) {
    switch (record.type) {
      case 'message':
        out.push(...renderMessage(record.message), '');
        break;
      case 'compaction': {
        const e = record.entry;
        const state = undone.has(e.id) ? ', later undone' : '';
        if (e.editOf) {
          out.push(
            '---',
            '',
            `> **Summary of compaction round ${e.round} edited by the user**${state ? ` (${state.slice(2)})` : ''}: from here on the model got this text instead.`,
            '',
            ...quote(e.summary),
            '',
            '---',
            '',
          );
          break;
        }
        out.push(
          `---`,
          '',
          `> **Compaction round ${e.round}** (${e.reason}${e.fallback ? ', extractive fallback' : ''}${state}): ${e.compactedMessageIds.length} messages above were replaced by this summary, ${e.tokensBefore.toLocaleString('en-US')} → ${e.tokensAfter.toLocaleString('en-US')} tokens.`,
          '',
          ...quote(e.summary),
          '',
          `---`,
          '',
        );
        break;
      }
      case 'pruning': {
        const e = record.entry;
        const state = undone.has(e.id) ? ', later undone' : '';
        const n = e.outputs.length;
        out.push(
          `> **Pruning** (${e.reason}${state}): ${n} tool output${n === 1 ? '' : 's'} above ${n === 1 ? 'was' : 'were'} replaced by a stub in the model's view (kept here in full), ${e.tokensBefore.toLocaleString('en-US')} → ${e.tokensAfter.toLocaleString('en-US')} tokens.`,
          '',
        );
        break;
      }
      default:
        break;
    }
  }
}

function renderMessage(message: Message): string[] {
  const lines: string[] = [`## ${heading(message.role)}`, ''];
  for (const part of message.content) {
    switch (part.type) {
      case 'text':
        lines.push(part.text, '');
        break;
      case 'reasoning':
        lines.push('*Reasoning:*', '', ...quote(part.text), '');
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

function fenced(text: string, language: string): string[] {
  const longest = Math.max(2, ...(text.match(/`+/g) ?? []).map((run) => run.length));
  const fence = '`'.repeat(longest + 1);
  return [`${fence}${language}`, text, fence];
}

function quote(text: string): string[] {
  return text.split('\n').map((line) => (line ? `> ${line}` : '>'));
}
