import { promises as fs } from 'node:fs';
import type { Conversation } from '../../../src/app/conversation/conversation';
import type { ConversationStore } from '../../../src/app/store/conversation-store';
import type { Message } from '../../../src/core/messages';
import type { Summarizer } from '../../../src/core/ports';
import { assistant, toolResult, user } from '../core/fixtures';

/**
 * A conversation whose compacted messages are held on disk only, and the ways its files can change
 * under a window that opened it: a byte changed, another conversation copied over it, a file deleted.
 */

/** A file's text as a tool read it, long enough to be held on disk once archived, and unique to `n`. */
export const fileText = (n: number): string => `// file ${n}: marker-${n}-word\n${`export const value${n} = ${n};\n`.repeat(150)}`;

export const fixedSummarizer: Summarizer = {
  name: 'test-summarizer',
  summarize: async () => ({ text: 'The files were read and nothing was changed.' }),
};

/** Turns `from`…`to`, each reading one file, appended to `conversation`. */
export async function readingTurns(conversation: Conversation, from: number, to: number): Promise<void> {
  for (let n = from; n <= to; n++) {
    await conversation.beginTurn(`t${n}`);
    await conversation.append([
      { type: 'message', message: user(`u${n}`, `read file ${n}`) },
      { type: 'message', message: assistant(`a${n}`, '', { callId: `c${n}`, tool: 'read_file', input: { path: `f${n}.ts` } }) },
      { type: 'message', message: toolResult(`r${n}`, `c${n}`, 'read_file', fileText(n)) },
      { type: 'message', message: assistant(`d${n}`, `File ${n} read.`) },
    ]);
  }
}

/** The ids of the messages of `view` that carry no content. */
export const hollowIn = (view: readonly Message[]): string[] => view.filter((m) => m.content.length === 0).map((m) => m.id);

/** The files of conversation `id`, part by part, as they are now. */
export async function partsOf(store: ConversationStore, id: string): Promise<Buffer[]> {
  const parts: Buffer[] = [];
  for (let part = 1; ; part++) {
    try {
      parts.push(await fs.readFile(store.partFile(id, part)));
    } catch {
      return parts;
    }
  }
}

/** Letters of the message and call ids, and those another conversation has in their place. */
const OTHER_ID: Readonly<Record<string, string>> = { u: 'w', a: 'b', r: 's', d: 'e', c: 'k' };

/**
 * Another conversation whose lines have exactly the lengths of those of `text`: every message and
 * tool call has another id, and every file it read other words, as if another conversation of the
 * same shape had been copied over this one.
 */
export function anotherConversation(text: string): string {
  return text
    .replace(/"([uardc])(\d+)"/g, (_, letter: string, n: string) => `"${OTHER_ID[letter]!}${n}"`)
    .replace(/marker-(\d+)-word/g, 'MARKER-$1-WORD');
}

/**
 * `text` with one byte changed in the line where `needle` is first found: the needle's first letter
 * (the line still reads as a record), or the brace that opens the line (it no longer does).
 */
export function withByteChanged(text: string, needle: string, what: 'letter' | 'syntax'): string {
  const found = text.indexOf(needle);
  if (found < 0) throw new Error(`${needle} is not in the file`);
  const at = what === 'letter' ? found : text.lastIndexOf('\n', found) + 1;
  const now = what === 'letter' ? (text[at] === 'X' ? 'Y' : 'X') : '[';
  return `${text.slice(0, at)}${now}${text.slice(at + 1)}`;
}
