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
 */
export function foldWal(db: Database, busyTimeoutMs: number, anySize = false): void {
  if (db.memory) return;
  const wal = fileSize(`${db.name}-wal`);
  if (!anySize && (wal <= FOLD_ABOVE_BYTES || wal <= fileSize(db.name) * FOLD_ABOVE_DATABASE_FRACTION)) return;
  db.pragma('busy_timeout = 0');
  try {
    db.pragma('wal_checkpoint(TRUNCATE)');
  } catch {
    // SQLITE_BUSY or an I/O error: the WAL stays as it was, and SQLite's next checkpoint takes it.
  } finally {
    db.pragma(`busy_timeout = ${busyTimeoutMs}`);
  }
}
