/**
 * Folding a store's WAL back into its database when its last run under way stops (`foldWalWhenIdle`).
 */
import { statSync } from 'node:fs';
import type BetterSqlite3 from 'better-sqlite3';

type Database = BetterSqlite3.Database;

/**
 * At the stop of the store's last run under way, the WAL is folded back once it holds more than a
 * quarter of the database and more than 256 KiB: db + wal stays within max(1.25 × db, db + 256 KiB), and
 * neither a short run on a large file nor one on a small file (its WAL a few dozen pages) pays a
 * checkpoint's two fsyncs at every stop. A run of 64 commits or more (a 4 KiB frame at least each) always
 * has a WAL past the 256 KiB.
 */
const FOLD_ABOVE_DATABASE_FRACTION = 0.25;
const FOLD_ABOVE_BYTES = 256 * 1024;

const fileSize = (path: string): number => {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
};

/**
 * Folds the WAL back into the database and truncates it when it holds over a quarter of the database and
 * over 256 KiB (or at any size: `anySize`), without waiting: with the busy timeout at 0 for this one call,
 * a reader or writer of another connection makes it fold only the frames no one still needs (busy = 1)
 * instead of blocking the event loop (better-sqlite3 is synchronous) for the busy timeout. Best effort:
 * every record is committed already, so a checkpoint that cannot run now is left to the next one.
 * `startNext`: a WAL truncated whole is started again at once (`startWal`), so that the next write appends to it.
 */
export function foldWal(db: Database, busyTimeoutMs: number, anySize = false, startNext = false): void {
  if (db.memory) return;
  const wal = fileSize(`${db.name}-wal`);
  if (!anySize && (wal <= FOLD_ABOVE_BYTES || wal <= fileSize(db.name) * FOLD_ABOVE_DATABASE_FRACTION)) return;
  db.pragma('busy_timeout = 0');
  try {
    const [folded] = db.pragma('wal_checkpoint(TRUNCATE)') as { busy: number }[];
    if (startNext && folded?.busy === 0) startWal(db);
  } catch {
    // SQLITE_BUSY or an I/O error: the WAL stays as it was, and SQLite's next checkpoint takes it.
  } finally {
    db.pragma(`busy_timeout = ${busyTimeoutMs}`);
  }
}

/**
 * Writes one frame (page 1, the header's `user_version` written again as it is) into a WAL just truncated. The first
 * frame of a WAL restarts it, and SQLite then fsyncs the WAL's header (and, the first time, its directory) before
 * the frame, whatever `synchronous` is but OFF (see sqlite3WalFrames: ticket ff5be73dee): that ~0.5 ms on a quiet
 * disk (5–10 ms on a busy one) was paid by the next write, a resume's lease or a new run's row, on its way to its
 * first model call. Paid here instead, after the caller has its result; the next write appends to the WAL and
 * syncs nothing at `normal`. The WAL keeps one frame (4 KiB and its 56 bytes of headers), not 0 bytes.
 */
function startWal(db: Database): void {
  db.exec('BEGIN IMMEDIATE');
  try {
    const version = db.prepare('PRAGMA user_version').pluck().get() as number;
    db.exec(`PRAGMA user_version = ${version}`);
    db.exec('COMMIT');
  } catch (error) {
    if (db.inTransaction) db.exec('ROLLBACK');
    throw error;
  }
}
