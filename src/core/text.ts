import { stringifyOutput } from './messages';

/**
 * Text helpers shared across the engine: a tool value as plain searchable text, and a
 * workspace-relative path in the one form every comparison of paths uses.
 */

const JSON_ESCAPE = /\\(?:u([0-9a-fA-F]{4})|([\s\S]))/g;
const JSON_ESCAPES: Readonly<Record<string, string>> = { n: '\n', r: '\r', t: '\t', b: ' ', f: ' ' };

/**
 * A tool value as searchable text. Structured values are stringified as JSON and then unescaped:
 * in `{"stderr":"build\nerror"}` the escaped line break would otherwise glue an `n` to the front
 * of "error", hiding the keyword, and a run of escaped line breaks ("a\nb\nc") would read as a
 * backslash path; an error inside JSON keeps its lines.
 */
export function plainText(value: unknown): string {
  if (typeof value === 'string') return value;
  return stringifyOutput(value).replace(JSON_ESCAPE, (_, hex: string | undefined, ch: string | undefined) => {
    if (hex !== undefined) return String.fromCharCode(parseInt(hex, 16));
    return ch === undefined ? '' : (JSON_ESCAPES[ch] ?? ch);
  });
}

/**
 * A workspace-relative path as the file tools and the file ledger compare it: backslashes become
 * `/`, runs of slashes collapse to one, `./` segments go, and so does a trailing slash. `..` is
 * left alone (callers pass workspace paths), and so is surrounding whitespace, which may belong
 * to a name: trim a path a model wrote before normalizing it.
 */
export function normalizePath(path: string): string {
  let p = path
    .replace(/\\/g, '/')
    .replace(/\/{2,}/g, '/')
    .replace(/\/(\.\/)+/g, '/');
  while (p.startsWith('./')) p = p.slice(2);
  if (p.length > 1 && p.endsWith('/')) p = p.slice(0, -1);
  return p;
}
