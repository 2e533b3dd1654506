/**
 * Replaces a cache file as a whole: written aside under a name no other process or thread picks, then renamed over
 * it, so a reader sees the old file or the new, never half. Plain ESM with no import of the rest of loopstate: the
 * CLI's TypeScript hooks use it on Node's hooks thread.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { threadId } from 'node:worker_threads';

/**
 * Writes `data` to `file` (its folder made if missing) through a partial file beside it, named after the process,
 * the thread and a random id; throws when it could not, after removing the partial file.
 * @example
 * replaceFile('/p/node_modules/.cache/loopstate/transpiled/3f1c….js', output);
 */
export function replaceFile(file: string, data: string | Uint8Array): void {
  mkdirSync(dirname(file), { recursive: true });
  const partial = `${file}.${process.pid}.${threadId}.${randomUUID()}.partial`;
  try {
    writeFileSync(partial, data);
    renameSync(partial, file);
  } catch (error) {
    try {
      unlinkSync(partial);
    } catch {
      // Never written, or already gone: nothing to remove.
    }
    throw error;
  }
}
