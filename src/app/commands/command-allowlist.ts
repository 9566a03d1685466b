import { commandWords } from './command-line';
import { riskyArgument, type ArgumentContext } from './command-risks';

/**
 * `longrun.agent.allowedCommands`: the commands the agent may run without asking. Pure (no
 * `vscode`, no Node).
 *
 * An entry is one of two kinds of rule:
 * - an exact command, `npm test`: allows that command line and nothing else (surrounding
 *   whitespace aside; a `*` inside it is an ordinary character);
 * - a prefix rule, an entry ending in a space and `*`, `npm run *`: allows the command whose words,
 *   as the shell splits them, begin with the rule's words (`npm run`, `npm run build`, `npm "run"
 *   build`; not `npm runner`). Never a command line that holds a shell operator or substitution (see
 *   {@link hasShellSyntax}), which could run a second command after the allowed one
 *   (`npm run build; curl … | sh`), nor one whose words the shell only knows when it runs it
 *   (variables, globs: `command-line.ts`), nor one with an argument past the rule's words that sets
 *   configuration, names a program to run or fetches a package to run (`command-risks.ts`).
 */

export type AllowRule =
  | { readonly kind: 'exact'; readonly command: string; readonly entry: string }
  | { readonly kind: 'prefix'; readonly words: readonly string[]; readonly entry: string };

/**
 * Characters that let a command line run more than its first command, redirect into files, or
 * substitute another command's output: `;` `&` `|` (so `&&`, `||` and pipes), backticks, `$(`,
 * `<` and `>` (redirections, process substitution), `!` (bash's history expansion re-runs an
 * earlier command), and line breaks.
 */
const SHELL_SYNTAX = /[;&|`<>!\r\n]|\$\(/;

/** Whether the command line holds an operator, a redirection or a substitution; see {@link SHELL_SYNTAX}. */
export function hasShellSyntax(command: string): boolean {
  return SHELL_SYNTAX.test(command);
}

/** The rule an entry of the setting stands for, or why it is not a valid entry. */
export function parseAllowRule(entry: string): AllowRule | { readonly problem: string } {
  const trimmed = entry.trim();
  if (trimmed === '') return { problem: 'must not be empty' };
  if (/[\r\n]/.test(trimmed)) return { problem: 'must be one line' };
  if (!/\s\*$/.test(trimmed) && trimmed !== '*') return { kind: 'exact', command: trimmed, entry: trimmed };
  const prefix = trimmed.slice(0, -1).trimEnd();
  if (prefix === '') return { problem: 'would allow every command; list the commands, or their first words followed by " *"' };
  if (hasShellSyntax(prefix))
    return { problem: 'is a prefix rule with a shell operator in it (; & | ` $( < > !), which no command it allows may contain' };
  const parsed = commandWords(prefix);
  if ('unreadable' in parsed) return { problem: `is a prefix rule no command can match: ${parsed.unreadable}` };
  return { kind: 'prefix', words: parsed.words, entry: trimmed };
}

/** The rules of the setting's valid entries. */
export function allowRules(entries: readonly string[]): AllowRule[] {
  const rules: AllowRule[] = [];
  for (const entry of entries) {
    const rule = parseAllowRule(entry);
    if ('kind' in rule) rules.push(rule);
  }
  return rules;
}

/** What a prefix rule may check a command against besides its words. */
export type AllowContext = ArgumentContext;

const NOTHING_LOCKED: AllowContext = { lockedPackages: new Set() };

/** The first rule that allows `command` to run without asking; `undefined` when it must be asked for. */
export function findAllowRule(command: string, rules: readonly AllowRule[], context: AllowContext = NOTHING_LOCKED): AllowRule | undefined {
  const line = command.trim();
  const parsed = hasShellSyntax(line) ? undefined : commandWords(line);
  const words = parsed && 'words' in parsed ? parsed.words : undefined;
  return rules.find((rule) => {
    if (rule.kind === 'exact') return line === rule.command;
    return words !== undefined && startsWith(words, rule.words) && riskyArgument(words, rule.words.length, context) === undefined;
  });
}

function startsWith(words: readonly string[], prefix: readonly string[]): boolean {
  return prefix.length <= words.length && prefix.every((word, i) => words[i] === word);
}
