import { readFile } from 'node:fs/promises';
import * as path from 'node:path';
import { isRecord } from '../../core/errors';

/**
 * The npm packages a folder's lock files pin, and the programs they install: what `npx`, `npm exec`
 * and `pnpm dlx` may run under an allow rule (`command-risks.ts`) without fetching an unknown
 * package. Reads `package-lock.json` and `npm-shrinkwrap.json` (names and `bin` entries),
 * `yarn.lock` and `pnpm-lock.yaml` (names); a file missing, too large or unreadable adds nothing, so
 * the command asks.
 */

/** Lock files larger than this are not read: asking is the safe answer. */
const MAX_LOCK_BYTES = 64 * 1024 * 1024;

/** Names of packages and programs pinned by the lock files in `folder`. */
export async function lockedPackages(folder: string | undefined): Promise<ReadonlySet<string>> {
  const names = new Set<string>();
  if (folder === undefined) return names;
  const readers: ReadonlyArray<readonly [string, (text: string, into: Set<string>) => void]> = [
    ['package-lock.json', npmLockNames],
    ['npm-shrinkwrap.json', npmLockNames],
    ['yarn.lock', yarnLockNames],
    ['pnpm-lock.yaml', pnpmLockNames],
  ];
  for (const [file, read] of readers) {
    const text = await readSmall(path.join(folder, file));
    if (text !== undefined) read(text, names);
  }
  return names;
}

async function readSmall(file: string): Promise<string | undefined> {
  try {
    const bytes = await readFile(file);
    return bytes.length > MAX_LOCK_BYTES ? undefined : bytes.toString('utf8');
  } catch {
    return undefined;
  }
}

/** `packages["node_modules/a/node_modules/@s/b"]` (and v1's `dependencies`) with their `bin` names. */
export function npmLockNames(text: string, into: Set<string>): void {
  let lock: unknown;
  try {
    lock = JSON.parse(text);
  } catch {
    return;
  }
  if (!isRecord(lock)) return;
  const packages = isRecord(lock['packages']) ? lock['packages'] : {};
  for (const [key, entry] of Object.entries(packages)) {
    const at = key.lastIndexOf('node_modules/');
    if (at === -1) continue;
    into.add(key.slice(at + 'node_modules/'.length).toLowerCase());
    if (isRecord(entry) && isRecord(entry['bin'])) for (const bin of Object.keys(entry['bin'])) into.add(bin.toLowerCase());
  }
  if (isRecord(lock['dependencies'])) for (const name of Object.keys(lock['dependencies'])) into.add(name.toLowerCase());
}

/** Unindented entries `"a@^1", "@s/b@npm:^2":` of a yarn lock (classic or berry). */
export function yarnLockNames(text: string, into: Set<string>): void {
  for (const line of text.split('\n')) {
    if (line === '' || /^[\s#]/.test(line) || !line.trimEnd().endsWith(':')) continue;
    for (const spec of line.trimEnd().slice(0, -1).split(',')) {
      const name = /^"?((?:@[^@/"]+\/)?[^@"\s]+)@/.exec(spec.trim())?.[1];
      if (name !== undefined && name !== '__metadata') into.add(name.toLowerCase());
    }
  }
}

/** Keys of `packages:` in a pnpm lock: `/a@1.0.0:`, `'@s/b@2.0.0(peer@1)':`, `/a/1.0.0:` (older). */
export function pnpmLockNames(text: string, into: Set<string>): void {
  let inPackages = false;
  for (const line of text.split('\n')) {
    if (/^\S/.test(line)) inPackages = /^(?:packages|snapshots):\s*$/.test(line);
    if (!inPackages) continue;
    const key = /^ {2}['"]?\/?((?:@[^@/'"]+\/)?[^@/'"\s]+)[@/]/.exec(line)?.[1];
    if (key !== undefined) into.add(key.toLowerCase());
  }
}
