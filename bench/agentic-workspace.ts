/**
 * A generated workspace for replaying long agentic turns: TypeScript files of 150 to 600 lines, a test
 * runner whose logs fail and pass, a type checker, `git diff`. Longrun's own tools (`agent-tools.ts`)
 * run over it, so the outputs the model gets are exactly what Longrun's tools write: numbered reads,
 * `path:line: text` matches, command runs with their exit codes. Everything is deterministic by seed.
 */
import type { CapturedOutput } from '../src/llm/command-output';
import {
  ToolFailure,
  type CommandPort,
  type CommandRun,
  type LineRange,
  type ReadResult,
  type SearchMatch,
  type TextEdit,
  type WorkspacePort,
} from '../src/llm/workspace-port';
import { random } from './sessions';

const AREAS = ['api', 'auth', 'billing', 'jobs', 'storage', 'search', 'notify', 'reports'];
const NOUNS = ['invoice', 'session', 'retry', 'queue', 'token', 'ledger', 'account', 'payload', 'schedule', 'cursor', 'quota', 'webhook'];
const VERBS = ['load', 'parse', 'validate', 'apply', 'resolve', 'render', 'merge', 'persist', 'refresh', 'dispatch'];

function pick<T>(next: () => number, items: readonly T[]): T {
  return items[Math.floor(next() * items.length)]!;
}

const capital = (word: string): string => word.charAt(0).toUpperCase() + word.slice(1);

/** A plausible TypeScript module of about `lines` lines. */
export function moduleText(next: () => number, area: string, lines: number): string {
  const out: string[] = [
    `import { z } from 'zod';`,
    `import type { Context } from '../core/context';`,
    `import { logger } from '../core/logger';`,
    '',
  ];
  let n = 0;
  while (out.length < lines) {
    const noun = pick(next, NOUNS);
    const verb = pick(next, VERBS);
    const name = `${verb}${capital(noun)}${n++}`;
    out.push(
      `/**`,
      ` * ${capital(verb)}s the ${noun} of a ${area} request; retries ${1 + Math.floor(next() * 5)} times on a transient failure`,
      ` * and gives up with a ${capital(noun)}Error that names the field at fault.`,
      ` */`,
      `export async function ${name}(ctx: Context, input: ${capital(noun)}Input): Promise<${capital(noun)}Result> {`,
      `  const parsed = ${noun}Schema.safeParse(input);`,
      `  if (!parsed.success) throw new ${capital(noun)}Error(\`invalid ${noun}: \${parsed.error.issues[0]?.message ?? 'unknown'}\`);`,
      `  for (let attempt = 1; attempt <= ctx.limits.${noun}Retries; attempt++) {`,
      `    const result = await ctx.store.${verb}('${area}/${noun}', parsed.data, { timeoutMs: ${(1 + Math.floor(next() * 9)) * 500} });`,
      `    if (result.ok) return { ...result.value, attempts: attempt };`,
      `    logger.warn('${area}.${name}', { attempt, reason: result.reason });`,
      `  }`,
      `  return { status: 'failed', reason: 'gave up after ' + ctx.limits.${noun}Retries + ' attempts' };`,
      `}`,
      '',
    );
  }
  return out.slice(0, lines).join('\n');
}

interface File {
  lines: string[];
}

/** The workspace the tools read and change, and its command line. */
export class BenchWorkspace implements WorkspacePort, CommandPort {
  readonly files = new Map<string, File>();
  private readonly next: () => number;
  private readonly edited = new Set<string>();
  private runs = 0;

  constructor(seed: number) {
    this.next = random(seed * 7_919 + 3);
    for (const area of AREAS) {
      for (let i = 0; i < 8; i++) {
        const path = `src/${area}/${pick(this.next, NOUNS)}-${i}.ts`;
        this.files.set(path, { lines: moduleText(this.next, area, 150 + Math.floor(this.next() * 450)).split('\n') });
      }
    }
  }

  /** Every path, sorted. */
  paths(): string[] {
    return [...this.files.keys()].sort();
  }

  /** A line of `path` that an edit can replace: unique in the file. */
  editableLine(path: string, next: () => number): string | undefined {
    const file = this.files.get(path);
    if (!file) return undefined;
    const counts = new Map<string, number>();
    for (const line of file.lines) counts.set(line, (counts.get(line) ?? 0) + 1);
    const unique = file.lines.filter((line) => line.includes('timeoutMs') && counts.get(line) === 1);
    return unique.length > 0 ? pick(next, unique) : undefined;
  }

  async readFile(path: string, range: LineRange): Promise<ReadResult> {
    const file = this.files.get(path);
    if (!file) throw new ToolFailure(`File not found: ${path}`);
    const start = range.start ?? 1;
    const end = Math.min(file.lines.length, range.end ?? file.lines.length);
    return {
      path,
      text: file.lines.slice(start - 1, end).join('\n'),
      startLine: start,
      endLine: end,
      totalLines: file.lines.length,
      truncated: false,
    };
  }

  async listFiles(glob: string, limit: number): Promise<{ files: string[]; truncated: boolean }> {
    const prefix = glob.replace(/\*.*$/, '');
    const all = this.paths().filter((p) => p.startsWith(prefix));
    return { files: all.slice(0, limit), truncated: all.length > limit };
  }

  async searchText(query: string, options: { readonly limit: number }): Promise<{ matches: SearchMatch[]; truncated: boolean }> {
    const matches: SearchMatch[] = [];
    for (const path of this.paths()) {
      this.files.get(path)!.lines.forEach((text, i) => {
        if (text.includes(query)) matches.push({ path, line: i + 1, text });
      });
    }
    return { matches: matches.slice(0, options.limit), truncated: matches.length > options.limit };
  }

  async createFile(path: string, content: string): Promise<{ path: string }> {
    if (this.files.has(path)) throw new ToolFailure(`${path} already exists.`);
    this.files.set(path, { lines: content.split('\n') });
    this.edited.add(path);
    return { path };
  }

  async editFile(path: string, edits: readonly TextEdit[]): Promise<{ path: string; replacements: number }> {
    const file = this.files.get(path);
    if (!file) throw new ToolFailure(`File not found: ${path}`);
    for (const edit of edits) {
      const at = file.lines.indexOf(edit.oldText);
      if (at < 0) throw new ToolFailure(`oldText was not found in ${path}.`);
      file.lines[at] = edit.newText;
    }
    this.edited.add(path);
    return { path, replacements: edits.length };
  }

  async runCommand(command: string): Promise<CommandRun> {
    this.runs++;
    const lines = command.startsWith('npm test') ? this.testLog() : command.startsWith('git diff') ? this.diff() : this.typeCheck();
    const failed = lines.some((l) => /failing|error TS/.test(l));
    const output: CapturedOutput = {
      head: lines.slice(0, 200),
      tail: lines.slice(200).slice(-100),
      omittedLines: Math.max(0, lines.length - 300),
      omittedChars: 0,
    };
    return { command, exitCode: failed ? 1 : 0, output, where: 'the terminal "Longrun"' };
  }

  private testLog(): string[] {
    const next = this.next;
    const out = ['', '> bench-app@1.0.0 test', '> mocha', ''];
    let passing = 0;
    const failures: string[] = [];
    for (const area of AREAS) {
      out.push(`  ${area}`);
      for (let i = 0; i < 6 + Math.floor(next() * 8); i++) {
        const noun = pick(next, NOUNS);
        const name = `${pick(next, VERBS)}s the ${noun} of a request with ${1 + Math.floor(next() * 4)} retries`;
        if (next() < 0.06 && failures.length < 4) {
          failures.push(`${area} ${name}`);
          out.push(`    ${failures.length}) ${name}`);
        } else {
          passing++;
          out.push(`    ✔ ${name}${next() < 0.2 ? ` (${Math.floor(next() * 300)}ms)` : ''}`);
        }
      }
    }
    out.push('', `  ${passing} passing (${(2 + next() * 5).toFixed(0)}s)`);
    if (failures.length > 0) out.push(`  ${failures.length} failing`);
    failures.forEach((failure, i) => {
      const noun = pick(next, NOUNS);
      out.push(
        '',
        `  ${i + 1}) ${failure}:`,
        `     AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:`,
        '',
        `${Math.floor(next() * 5)} !== ${Math.floor(next() * 5) + 5}`,
        '',
        `      at Context.<anonymous> (test/${noun}.test.ts:${10 + Math.floor(next() * 300)}:${5 + Math.floor(next() * 20)})`,
        `      at process.processImmediate (node:internal/timers:483:21)`,
      );
    });
    return out;
  }

  private typeCheck(): string[] {
    const next = this.next;
    if (this.runs % 3 === 0) return [];
    const out: string[] = [];
    const paths = this.paths();
    for (let i = 0; i < 2 + Math.floor(next() * 10); i++) {
      const noun = pick(next, NOUNS);
      out.push(
        `${pick(next, paths)}(${1 + Math.floor(next() * 400)},${1 + Math.floor(next() * 60)}): error TS2322: Type '${capital(noun)}Result | undefined' is not assignable to type '${capital(noun)}Result'.`,
      );
    }
    out.push('', `Found ${out.length - 1} errors.`);
    return out;
  }

  private diff(): string[] {
    const out: string[] = [];
    for (const path of [...this.edited].sort()) {
      const file = this.files.get(path)!;
      const at = Math.floor(this.next() * Math.max(1, file.lines.length - 8));
      out.push(`diff --git a/${path} b/${path}`, `--- a/${path}`, `+++ b/${path}`, `@@ -${at + 1},7 +${at + 1},7 @@`);
      for (const line of file.lines.slice(at, at + 7)) out.push(` ${line}`);
    }
    return out.length > 0 ? out : [''];
  }
}
