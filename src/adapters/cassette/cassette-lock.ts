/**
 * One recorder per cassette. Each recorder rewrites the whole file from what it has seen, so two on
 * one path would silently replace each other's calls. The recorder holds `<cassette>.lock`, created
 * exclusively (O_EXCL) with its pid, host and a random token, until it is closed or its process
 * exits. A lock whose holder is gone (the same host, a pid that no longer runs) is taken over; any
 * other lock refuses the second recorder with `cassette_locked`, naming the holder.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, constants, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname } from 'node:path';
import { thrownMessage } from '../../engine/redaction/describe-thrown.js';
import { CassetteFileError } from './cassette-errors.js';

/** What a lock file says about its holder. */
interface LockHolder {
  pid: number;
  host: string;
  token: string;
  since: string;
}

/**
 * A held cassette lock.
 * @example
 * const lock = lockCassette('run.json'); try { lock.assertHeld(); write() } finally { lock.release() }
 */
export interface CassetteLock {
  /** The lock file, `<cassette>.lock`. */
  readonly lockPath: string;
  /** Throws `CassetteFileError` (`cassette_locked`) when the lock file is no longer this holder's. */
  assertHeld(): void;
  /** Deletes the lock file if it is still this holder's; safe to call twice. */
  release(): void;
}

/** Lock files this process holds, by path, with their tokens: released on exit, and told apart from a dead process that had the same pid. */
const held = new Map<string, string>();
let releasesOnExit = false;

/** Not through a planted link: a lock file is read only to name its holder. */
const READ_NO_FOLLOW = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0);

function readHolder(lockPath: string): LockHolder | null {
  try {
    const descriptor = openSync(lockPath, READ_NO_FOLLOW);
    try {
      const data: unknown = JSON.parse(readFileSync(descriptor, 'utf8'));
      const { pid, host, token, since } = (data ?? {}) as Partial<Record<keyof LockHolder, unknown>>;
      if (
        !Number.isSafeInteger(pid) ||
        typeof host !== 'string' ||
        typeof token !== 'string' ||
        typeof since !== 'string'
      )
        return null;
      return { pid: pid as number, host, token, since };
    } finally {
      closeSync(descriptor);
    }
  } catch {
    // Missing, a link, empty (its holder is between creating and writing it) or not ours: no holder to name.
    return null;
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it runs, as another user.
    return (error as { code?: unknown }).code === 'EPERM';
  }
}

/** Only a holder on this host can be known to be gone; one with this process's pid but a token it does not hold was an earlier process. */
function isStale(holder: LockHolder): boolean {
  if (holder.host !== hostname()) return false;
  // Searched by token, not path: the same file may be named by two spellings of its path.
  if (holder.pid === process.pid) return ![...held.values()].includes(holder.token);
  return !isRunning(holder.pid);
}

function describeHolder(holder: LockHolder | null, lockPath: string): string {
  if (holder === null)
    return `another recorder holds ${lockPath} (it names no holder); delete that file if no recorder is running`;
  if (holder.pid === process.pid && holder.host === hostname())
    return `another recordModel in this process (pid ${holder.pid}) has held it since ${holder.since}; close() that recorder first`;
  return `pid ${holder.pid} on host ${holder.host} has held it since ${holder.since} (${lockPath}); stop that recorder, or delete the lock file if that process is gone`;
}

function locked(path: string, problem: string): CassetteFileError {
  return new CassetteFileError({ code: 'cassette_locked', path, problem });
}

function releaseAllOnExit(): void {
  for (const [lockPath, token] of held) {
    if (readHolder(lockPath)?.token === token) rmSync(lockPath, { force: true });
  }
  held.clear();
}

function tryCreate(lockPath: string, holder: LockHolder): boolean {
  let descriptor: number;
  try {
    descriptor = openSync(lockPath, 'wx', 0o600);
  } catch (error) {
    if ((error as { code?: unknown }).code === 'EEXIST') return false;
    throw error;
  }
  try {
    writeSync(descriptor, `${JSON.stringify(holder)}\n`);
  } catch (error) {
    closeSync(descriptor);
    // An empty lock would name no holder and never go stale.
    rmSync(lockPath, { force: true });
    throw error;
  }
  closeSync(descriptor);
  return true;
}

/**
 * Takes the lock of the cassette at `path`, or throws `CassetteFileError`: `cassette_locked` naming
 * the holder when another live recorder has it, `cassette_write_failed` when the lock file cannot be
 * created (its folder cannot be made, say). A stale lock (its holder's process is gone) is taken over.
 * @example
 * const lock = lockCassette('test/cassettes/refund.json'); // ... record ...; lock.release();
 */
export function lockCassette(path: string): CassetteLock {
  const lockPath = `${path}.lock`;
  const holder: LockHolder = {
    pid: process.pid,
    host: hostname(),
    token: randomBytes(16).toString('hex'),
    since: new Date().toISOString(),
  };
  try {
    mkdirSync(dirname(path), { recursive: true });
    // A second pass after taking over a stale lock; a third means someone else keeps winning the race.
    for (let attempt = 0; ; attempt++) {
      if (tryCreate(lockPath, holder)) break;
      const current = readHolder(lockPath);
      if (current === null || !isStale(current) || attempt >= 2)
        throw locked(path, `is being recorded already: ${describeHolder(current, lockPath)}`);
      rmSync(lockPath, { force: true });
    }
  } catch (error) {
    if (error instanceof CassetteFileError) throw error;
    throw new CassetteFileError({
      code: 'cassette_write_failed',
      path,
      problem: `could not be written: its lock file ${lockPath} could not be created (${thrownMessage(error)})`,
      cause: error,
    });
  }
  held.set(lockPath, holder.token);
  if (!releasesOnExit) {
    releasesOnExit = true;
    process.on('exit', releaseAllOnExit);
  }
  return {
    lockPath,
    assertHeld() {
      if (held.get(lockPath) !== holder.token) throw locked(path, 'no longer holds its lock: the recorder was closed');
      const current = readHolder(lockPath);
      if (current?.token === holder.token) return;
      throw locked(
        path,
        `lost its lock while recording (${current === null ? `${lockPath} was deleted` : describeHolder(current, lockPath)}); this call was not written`,
      );
    },
    release() {
      if (held.get(lockPath) !== holder.token) return;
      held.delete(lockPath);
      if (readHolder(lockPath)?.token === holder.token) rmSync(lockPath, { force: true });
    },
  };
}
