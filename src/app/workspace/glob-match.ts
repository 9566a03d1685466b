/**
 * Glob patterns as VS Code writes them (`files.exclude`, `findFiles`), compiled to regular
 * expressions. Pure (no `vscode`, no Node). Written by hand because no glob library is a runtime
 * dependency of the extension and Node's `path.matchesGlob` still prints an experimental warning.
 *
 * Supported: `*` (any characters but `/`), `?` (one character but `/`), `**` as a whole path
 * segment (any number of segments, none included), `{a,b}` alternatives (nestable), and `[abc]`,
 * `[a-z]`, `[!abc]` / `[^abc]` classes. Anything else is literal; an unclosed `{` or `[` is literal too,
 * so every string compiles.
 */

/** Compiles `glob` to an anchored regular expression over POSIX paths (`a/b/c.ts`). */
export function globToRegExp(glob: string, options: { readonly caseInsensitive?: boolean } = {}): RegExp {
  // `s`: a file name may contain a line break, and `.*` must still cross it.
  return new RegExp(`^${translate(glob)}$`, options.caseInsensitive ? 'is' : 's');
}

/** True when the POSIX path `path` matches `glob` as a whole. */
export function matchesGlob(path: string, glob: string, options: { readonly caseInsensitive?: boolean } = {}): boolean {
  return globToRegExp(glob, options).test(path);
}

function translate(glob: string): string {
  let out = '';
  let i = 0;
  while (i < glob.length) {
    const c = glob[i] as string;
    if (c === '*') {
      let j = i;
      while (glob[j] === '*') j++;
      const wholeSegment = j - i >= 2 && (i === 0 || glob[i - 1] === '/') && (j === glob.length || glob[j] === '/');
      if (!wholeSegment) {
        out += '[^/]*';
      } else if (j === glob.length) {
        // `a/**` matches `a` itself and everything below it; a lone `**` matches everything.
        out = out.endsWith('/') ? `${out.slice(0, -1)}(?:/.*)?` : `${out}.*`;
      } else {
        out += '(?:.*/)?';
        j++; // the `/` after `**` is part of the optional group
      }
      i = j;
    } else if (c === '?') {
      out += '[^/]';
      i++;
    } else if (c === '{') {
      const close = matchingBrace(glob, i);
      if (close === -1) {
        out += '\\{';
        i++;
      } else {
        out += `(?:${splitAlternatives(glob.slice(i + 1, close))
          .map(translate)
          .join('|')})`;
        i = close + 1;
      }
    } else if (c === '[') {
      const close = glob.indexOf(']', i + 2); // `[]]` holds a literal `]`
      if (close === -1) {
        out += '\\[';
        i++;
      } else {
        out += characterClass(glob.slice(i + 1, close));
        i = close + 1;
      }
    } else {
      out += escapeRegExp(c);
      i++;
    }
  }
  return out;
}

function matchingBrace(glob: string, open: number): number {
  let depth = 0;
  for (let i = open; i < glob.length; i++) {
    if (glob[i] === '{') depth++;
    else if (glob[i] === '}' && --depth === 0) return i;
  }
  return -1;
}

/** `a,{b,c},d` → `a`, `{b,c}`, `d`: commas inside nested braces do not split. */
function splitAlternatives(body: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < body.length; i++) {
    if (body[i] === '{') depth++;
    else if (body[i] === '}') depth--;
    else if (body[i] === ',' && depth === 0) {
      parts.push(body.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(body.slice(start));
  return parts;
}

function characterClass(body: string): string {
  const negated = body.startsWith('!') || body.startsWith('^');
  const members = (negated ? body.slice(1) : body).replace(/[\\\]^[]/g, '\\$&');
  // A class never matches the separator: `[!a]` is one character of a file name.
  return negated ? `[^/${members}]` : `(?!/)[${members}]`;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
