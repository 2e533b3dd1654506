/**
 * The CLI's TypeScript hooks keep what they transpiled, by the source's hash, in `node_modules/.cache/loopstate`: a
 * `loopstate verify` of an unchanged `.ts` loop file (a pre-commit hook, run on every commit) then needs neither the
 * `typescript` package nor its compile. Plain ESM with no import of the rest of loopstate: it runs on Node's hooks
 * thread.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync, unlinkSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { replaceFile } from './replace-file.js';

/**
 * Bumped whenever the hooks transpile differently or the file's layout changes, so no older output is taken.
 * 1: the output alone; 2: a `// sha256:<hex>` line of the output's hash first.
 */
const TRANSPILE_FORMAT = 2;

/**
 * How many transpiled files the cache keeps (one per source version and path): past it, writing one removes the
 * oldest, so the folder does not grow for ever.
 */
export const MAX_TRANSPILED_ENTRIES = 256;

/** The first line of a cache file: the SHA-256 of what follows it, so a truncated or emptied file is a miss. */
const HEADER_PREFIX = '// sha256:';

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/**
 * The cache file for a transpile: under `folder`, named by the SHA-256 of everything the output depends on: the
 * source, its path (a source map names it), whether a source map is made, and the `typescript` package (its entry
 * file's size and modification time).
 * @example
 * transpiledFile({ folder, typescriptPath, fileName: '/p/loop.ts', sourceMaps: false, source });
 * // '<folder>/transpiled/3f1c….js'
 */
export function transpiledFile({
  folder,
  typescriptPath,
  fileName,
  sourceMaps,
  source,
}: {
  folder: string;
  typescriptPath: string;
  fileName: string;
  sourceMaps: boolean;
  source: string;
}): string {
  const { size, mtimeMs } = statSync(typescriptPath);
  const key = createHash('sha256')
    .update(JSON.stringify([TRANSPILE_FORMAT, typescriptPath, size, Math.trunc(mtimeMs), sourceMaps, fileName]))
    .update('\0')
    .update(source)
    .digest('hex');
  return join(folder, 'transpiled', `${key}.js`);
}

/**
 * What the cache file holds, or undefined when there is none, it cannot be read, or its output does not match the
 * hash in its first line (a file truncated or emptied by a crash, or of an older format): then it is transpiled again.
 * @example
 * const output = readTranspiled(file) ?? transpile(source);
 */
export function readTranspiled(file: string): string | undefined {
  let content: string;
  try {
    content = readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  const lineEnd = content.indexOf('\n');
  if (lineEnd < 0 || !content.startsWith(HEADER_PREFIX)) return undefined;
  const output = content.slice(lineEnd + 1);
  return content.slice(HEADER_PREFIX.length, lineEnd) === sha256(output) ? output : undefined;
}

/**
 * Keeps `output` in the cache file after a line of its hash, written aside and renamed (a reader sees no half file;
 * a crash that leaves a short one is caught by the hash); false when it could not
 * (a read-only folder, a full disk): the cache is an optimisation, never a reason to fail.
 * Past `maxEntries` files in its folder, the oldest others are removed.
 * @example
 * writeTranspiled(file, outputText);
 */
export function writeTranspiled(file: string, output: string, maxEntries = MAX_TRANSPILED_ENTRIES): boolean {
  try {
    replaceFile(file, `${HEADER_PREFIX}${sha256(output)}\n${output}`);
  } catch {
    return false;
  }
  removeOldest(dirname(file), basename(file), maxEntries);
  return true;
}

/**
 * Removes the oldest (by modification time) cache files of `folder` other than `kept` until `maxEntries` are left;
 * best effort: a file another process removed first, or one that cannot be removed, is passed over.
 */
function removeOldest(folder: string, kept: string, maxEntries: number): void {
  let names: string[];
  try {
    names = readdirSync(folder).filter((name) => name.endsWith('.js'));
  } catch {
    return;
  }
  if (names.length <= maxEntries) return;
  const others = names.flatMap((name) => {
    if (name === kept) return [];
    try {
      return [{ path: join(folder, name), modified: statSync(join(folder, name)).mtimeMs }];
    } catch {
      return [];
    }
  });
  others.sort((left, right) => left.modified - right.modified);
  for (const { path } of others.slice(0, names.length - maxEntries)) {
    try {
      unlinkSync(path);
    } catch {
      // Gone already, or not ours to remove: the bound is best effort.
    }
  }
}
