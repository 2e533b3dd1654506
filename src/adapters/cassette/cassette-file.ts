/**
 * The cassette's bytes on disk. Reading refuses anything that is not a regular file of a sane size
 * before reading it (a FIFO would block forever, a huge file would exhaust memory). Writing is
 * atomic and never goes through a symbolic link: the text goes to a temporary file created
 * exclusively under a random name beside the cassette, is flushed, then renamed over the cassette.
 */
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  fstatSync,
  fsyncSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { thrownMessage } from '../../engine/redaction/describe-thrown.js';
import { CassetteFileError } from './cassette-errors.js';

/** Far above any reviewable cassette, and below the longest string V8 can hold. */
export const MAX_CASSETTE_BYTES = 256 * 1024 * 1024;

/** `O_NONBLOCK` so that opening a FIFO returns at once (and is then refused) instead of waiting for a writer. */
const READ_FLAGS = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0);

function errorCode(error: unknown): unknown {
  return (error as { code?: unknown } | null)?.code;
}

/**
 * The text of the cassette at `path`; throws `CassetteFileError` naming the path when it is missing
 * (`cassette_not_found`), or cannot be read, is not a regular file, or is over `MAX_CASSETTE_BYTES`
 * (`cassette_unreadable`).
 * @example
 * const text = readCassetteText('test/cassettes/refund.json');
 */
export function readCassetteText(path: string): string {
  let descriptor: number;
  try {
    descriptor = openSync(path, READ_FLAGS);
  } catch (error) {
    const missing = errorCode(error) === 'ENOENT';
    throw new CassetteFileError({
      code: missing ? 'cassette_not_found' : 'cassette_unreadable',
      path,
      problem: missing ? 'no such file; record it first with recordModel' : `cannot be read (${String(error)})`,
      cause: error,
    });
  }
  try {
    const stats = fstatSync(descriptor);
    if (!stats.isFile())
      throw new CassetteFileError({
        code: 'cassette_unreadable',
        path,
        problem: `is ${stats.isDirectory() ? 'a directory' : 'not a regular file'}; a cassette is a JSON file`,
      });
    if (stats.size > MAX_CASSETTE_BYTES) {
      throw new CassetteFileError({
        code: 'cassette_unreadable',
        path,
        problem: `is ${stats.size} bytes, over the ${MAX_CASSETTE_BYTES} bytes a cassette may have; it is not one recordModel wrote`,
      });
    }
    return readFileSync(descriptor, 'utf8');
  } catch (error) {
    if (error instanceof CassetteFileError) throw error;
    throw new CassetteFileError({
      code: 'cassette_unreadable',
      path,
      problem: `cannot be read (${String(error)})`,
      cause: error,
    });
  } finally {
    closeSync(descriptor);
  }
}

/** `.run.json.<32 hex digits>.tmp`: hidden, beside the cassette (so the rename stays on one file system), unguessable. */
const TEMPORARY_NAME = /^\.(.+)\.[0-9a-f]{32}\.tmp$/;

function temporaryPath(path: string): string {
  return join(dirname(path), `.${basename(path)}.${randomBytes(16).toString('hex')}.tmp`);
}

/**
 * Throws `CassetteFileError` (`cassette_write_failed`) when the cassette path is a symbolic link:
 * replacing the link would surprise whoever made it, and writing through it must never happen.
 * @example
 * refuseSymbolicLink('test/cassettes/refund.json'); // before the first call reaches the model
 */
export function refuseSymbolicLink(path: string): void {
  let isLink = false;
  try {
    isLink = lstatSync(path).isSymbolicLink();
  } catch (error) {
    if (errorCode(error) !== 'ENOENT') throw error;
  }
  if (isLink) {
    throw new CassetteFileError({
      code: 'cassette_write_failed',
      path,
      problem:
        'is a symbolic link; recordModel never writes through a link (remove it, or record to the file it points to)',
    });
  }
}

/**
 * Writes `text` as the cassette at `path`, atomically: a crash leaves the old file or the new one,
 * never half of one. Refuses a cassette path that is a symbolic link. Throws `CassetteFileError`
 * (`cassette_write_failed`) naming the path.
 * @example
 * writeCassetteText('test/cassettes/refund.json', serializeCassette(cassette));
 */
export function writeCassetteText(path: string, text: string): void {
  let temporary: string | null = null;
  try {
    mkdirSync(dirname(path), { recursive: true });
    refuseSymbolicLink(path);
    const candidate = temporaryPath(path);
    // `wx` is O_CREAT | O_EXCL: it fails on anything already there, a planted link included, and never follows one.
    const descriptor = openSync(candidate, 'wx', 0o600);
    temporary = candidate;
    try {
      const bytes = Buffer.from(text, 'utf8');
      for (let offset = 0; offset < bytes.length;)
        offset += writeSync(descriptor, bytes, offset, bytes.length - offset);
      fsyncSync(descriptor);
    } finally {
      closeSync(descriptor);
    }
    // rename replaces whatever is at `path`, a link planted since the check included, and never touches a link's target.
    renameSync(temporary, path);
    temporary = null;
    syncDirectory(dirname(path));
  } catch (error) {
    if (temporary !== null) rmSync(temporary, { force: true });
    if (error instanceof CassetteFileError) throw error;
    throw new CassetteFileError({
      code: 'cassette_write_failed',
      path,
      problem: `could not be written (${thrownMessage(error)})`,
      cause: error,
    });
  }
}

/** Makes the rename itself durable; not every platform can open a directory, and the data is already safe without it. */
function syncDirectory(directory: string): void {
  try {
    const descriptor = openSync(directory, constants.O_RDONLY);
    try {
      fsyncSync(descriptor);
    } finally {
      closeSync(descriptor);
    }
  } catch {
    // Windows cannot open a directory; the rename is still atomic there.
  }
}

/**
 * Deletes temporary files a killed recorder of this cassette left behind. Only the holder of the
 * cassette's lock writes temporary files, so while it holds the lock every other one is litter.
 * @example
 * removeLeftoverTemporaries('test/cassettes/refund.json');
 */
export function removeLeftoverTemporaries(path: string): void {
  let names: string[];
  try {
    names = readdirSync(dirname(path));
  } catch {
    return;
  }
  for (const name of names) {
    if (TEMPORARY_NAME.exec(name)?.[1] !== basename(path)) continue;
    try {
      // Not recursive: a directory someone named like a temporary file is left alone.
      rmSync(join(dirname(path), name), { force: true });
    } catch {
      // Someone else's to clean up.
    }
  }
}
