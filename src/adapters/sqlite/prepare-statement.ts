/**
 * Preparing a SQLite store's statement, with a refusal for a missing table that says how to have it made again.
 */
import type BetterSqlite3 from 'better-sqlite3';
import { SCHEMA_STAMP } from './sqlite-schema.js';

type Database = BetterSqlite3.Database;

/**
 * A statement prepared on `db`; a refusal for a missing table says how to have it made again: an opening does not
 * look at the tables of a file stamped up to date (a table dropped by hand after it was made), nor at those of a
 * file already open (one dropped by another connection since).
 */
export function prepareStatement(db: Database, sql: string): BetterSqlite3.Statement<unknown[]> {
  try {
    return db.prepare(sql);
  } catch (error) {
    if (error instanceof Error && error.message.startsWith('no such table: ')) error.message += missingTableHint(db);
    throw error;
  }
}

function missingTableHint(db: Database): string {
  let found: unknown;
  try {
    found = db.prepare('PRAGMA user_version').pluck().get();
  } catch {
    found = undefined;
  }
  const stamped = found === SCHEMA_STAMP.keyed || found === SCHEMA_STAMP.indexed;
  return stamped
    ? ` (${db.name} lacks a table loopstate makes, dropped after it was made: a file stamped up to date (user_version ${String(found)}) is not looked at again when opened. Run \`PRAGMA user_version = 0\` on it and open the store again: what is missing, tables and indexes, is made, and nothing else is changed)`
    : ` (${db.name} lacks a table loopstate makes, dropped while the store was open: close the store and use it again, its opening makes what is missing)`;
}
