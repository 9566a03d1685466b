import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import type { Replacement } from '../../../src/app/workspace/exact-edits';
import { globToRegExp } from '../../../src/app/workspace/glob-match';
import type { WorkspaceRoot } from '../../../src/app/workspace/path-guard';
import type { EditorPort } from '../../../src/app/workspace/workspace-files';

/**
 * The editor as the agent's tools see it, over real folders: `findFiles` behaves like VS Code's
 * (follows symlinks, as `search.followSymlinks` does by default, so a link to a folder outside is
 * searched too; skips `node_modules` and `.git`; lists FIFOs and sockets like any other entry), and
 * documents with unsaved changes are a map from absolute path to their text.
 */
export class FakeEditor implements EditorPort {
  /** Absolute path → unsaved text. */
  readonly unsaved = new Map<string, string>();
  readonly unsavedEdits: { absolute: string; replacements: readonly Replacement[] }[] = [];

  constructor(private readonly roots: () => WorkspaceRoot[]) {}

  async findFiles(root: WorkspaceRoot | undefined, pattern: string, maxResults: number, signal: AbortSignal): Promise<string[]> {
    const matcher = globToRegExp(pattern);
    const found: string[] = [];
    for (const r of root ? [root] : this.roots()) {
      for (const file of await walk(r.fsPath, signal)) {
        if (matcher.test(path.relative(r.fsPath, file).split(path.sep).join('/'))) found.push(file);
        if (found.length >= maxResults) return found;
      }
    }
    return found;
  }

  unsavedText(absolute: string): string | undefined {
    return this.unsaved.get(absolute);
  }

  async editUnsaved(absolute: string, expected: string, replacements: readonly Replacement[]): Promise<boolean> {
    const text = this.unsaved.get(absolute);
    if (text !== expected) return false;
    let result = '';
    let at = 0;
    for (const r of replacements) {
      result += text.slice(at, r.start) + r.newText;
      at = r.end;
    }
    this.unsaved.set(absolute, result + text.slice(at));
    this.unsavedEdits.push({ absolute, replacements });
    return true;
  }
}

/** Like ripgrep's `--follow`: a linked folder is walked under each name, a link back to an ancestor is not. */
async function walk(dir: string, signal: AbortSignal, ancestors: ReadonlySet<string> = new Set()): Promise<string[]> {
  signal.throwIfAborted();
  const real = await fs.realpath(dir).catch(() => undefined);
  if (real === undefined || ancestors.has(real)) return [];
  const inside = new Set([...ancestors, real]);
  const files: string[] = [];
  const entries = await fs.readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
    if (entry.name === 'node_modules' || entry.name === '.git') continue;
    const full = path.join(dir, entry.name);
    const stats = await fs.stat(full).catch(() => undefined);
    if (!stats) continue;
    if (stats.isDirectory()) files.push(...(await walk(full, signal, inside)));
    else files.push(full);
  }
  return files;
}
