import { parse } from 'shell-quote';

/**
 * A command line as the shell will split it into words, for the allow rules of
 * `command-allowlist.ts`. Pure (no `vscode`, no Node).
 *
 * Quotes and backslashes are undone as the shell undoes them (`git \-c x` and `git "-c" x` both pass
 * `-c` to git). A line whose words the shell would only know when it runs is not read at all:
 * a variable or `$'…'` (its value may be an option), a glob or a brace expansion (a file named
 * `--exec=…` becomes an argument), a comment, or any operator.
 */

export type CommandWords =
  | { readonly words: readonly string[] }
  | {
      /** Why the words cannot be known before the shell runs the line, for the rule's author. */
      readonly unreadable: string;
    };

/** `{a,b}` and `{1..3}`: brace expansions bash turns into several words. */
const BRACE_EXPANSION = /\{[^{}]*(?:,|\.\.)[^{}]*\}/;

/** The words of `line`, or why they cannot be known before it runs. */
export function commandWords(line: string): CommandWords {
  // Even inside single quotes, where it is literal: shells differ ($'…', PowerShell's "$x").
  if (line.includes('$')) return { unreadable: 'it uses a variable or $ quoting' };
  const words: string[] = [];
  for (const token of parse(line)) {
    if (typeof token !== 'string') return { unreadable: unreadableToken(token) };
    if (BRACE_EXPANSION.test(token) || token.includes('[')) return { unreadable: 'it has a glob or brace expansion' };
    words.push(token);
  }
  return { words };
}

function unreadableToken(token: object): string {
  if ('comment' in token) return 'it has a comment';
  if ('op' in token && token.op === 'glob') return 'it has a glob or brace expansion';
  return 'it has a shell operator';
}
