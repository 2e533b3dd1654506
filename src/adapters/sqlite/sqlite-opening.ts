/**
 * Opening a SQLite store's file: WAL mode, the durability and limits asked for, and the schema brought up to date in
 * one transaction. A new file is turned to WAL unsynced and then fsynced once (see `prepareDatabase`).
 */
import { closeSync, fsyncSync, openSync, readFileSync, statSync } from 'node:fs';
import type BetterSqlite3 from 'better-sqlite3';
import {
  ADDED_COLUMNS,
  JOURNAL_CHUNKS_INDEX,
  mayStamp,
  SCHEMA_STAMP,
  SQLITE_SCHEMA,
  SQLITE_SCHEMA_FINISH,
  type JournalLayout,
} from './sqlite-schema.js';
import { SQLITE_LEARNING_SCHEMA } from './sqlite-learning.js';

type Database = BetterSqlite3.Database;

/** What opening reads of `SqliteStoreOptions` (the store's own checks have run). */
export interface OpeningOptions {
  readonly path: string;
  readonly durability?: 'normal' | 'full';
  readonly busyTimeoutMs?: number;
  readonly journalSizeLimitBytes?: number;
}

/** The tables and indexes a database up to date has, by name (read from the statements that make them). */
const SCHEMA_OBJECTS = Array.from(
  [SQLITE_SCHEMA, SQLITE_SCHEMA_FINISH, JOURNAL_CHUNKS_INDEX.keyed, SQLITE_LEARNING_SCHEMA]
    .join('\n')
    .matchAll(/CREATE (?:UNIQUE )?(?:TABLE|INDEX) IF NOT EXISTS (\w+)/g),
  (match) => match[1]!,
);

/**
 * The tables and indexes of a database, and each table's columns, read in ONE statement (a `table_info` pragma per
 * table and a look at `sqlite_schema` were seven statements prepared at every opening, ~0.3 ms).
 */
function readSchema(db: Database): Map<string, Set<string>> {
  const rows = db
    .prepare(
      "SELECT m.name AS object, p.name AS column FROM sqlite_schema m LEFT JOIN pragma_table_info(m.name) p ON m.type = 'table' WHERE m.type IN ('table', 'index')",
    )
    .all() as { object: string; column: string | null }[];
  const objects = new Map<string, Set<string>>();
  for (const { object, column } of rows) {
    let columns = objects.get(object);
    if (columns === undefined) objects.set(object, (columns = new Set()));
    if (column !== null) columns.add(column);
  }
  return objects;
}

/** Whether a database (as `readSchema` read it) lacks a table, an index or a column of this version. */
const outOfDate = (schema: Map<string, Set<string>>) =>
  SCHEMA_OBJECTS.some((name) => !schema.has(name)) ||
  ADDED_COLUMNS.some(({ table, name }) => !schema.get(table)?.has(name));

/**
 * Whether every table, index, view and trigger of the database is loopstate's: a file an application shares with
 * the store (its own tables beside ours) is never stamped, even while its `user_version` is still 0, since its
 * migrations may count there later.
 */
function holdsOnlyOurs(db: Database): boolean {
  const names = db
    .prepare("SELECT name FROM sqlite_schema WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\'")
    .pluck()
    .all() as string[];
  return names.every((name) => SCHEMA_OBJECTS.includes(name));
}

/**
 * Opens the store's file (created when missing) and brings its schema up to date; returns the connection and the
 * journal's layout. A connection that fails to get there is closed before the error is thrown.
 */
export function openDatabase(
  Driver: typeof BetterSqlite3,
  options: OpeningOptions,
): { db: Database; layout: JournalLayout } {
  const isNew = isNewFile(options.path);
  const db = new Driver(options.path);
  try {
    return prepareDatabase(db, options, isNew);
  } catch (error) {
    // Not left open (on Windows an open file cannot be removed or renamed) nor with synchronous=OFF.
    db.close();
    if (error instanceof Error && isZeroFilled(options.path))
      error.message += ` (${options.path} holds only zero bytes: a new store file whose first page never reached the disk, as after a power cut while it was made. Nothing was committed in it; delete it, and its -wal and -shm files if any, to start afresh)`;
    throw error;
  }
}

function prepareDatabase(
  db: Database,
  options: OpeningOptions,
  isNew: boolean,
): { db: Database; layout: JournalLayout } {
  if (isNew) {
    // A new file turns to WAL through a rollback-journal transaction, which at the default synchronous=FULL
    // costs four fsyncs (journal twice, its directory, the file): ~5-20 ms on this disk, as much as a 1,000-step
    // run's encoding. Unsynced, then one fsync of the file: page 1, WAL mode in it, is on disk before anything is
    // committed, as it was.
    db.pragma('synchronous = OFF');
    db.pragma('journal_mode = WAL');
    syncFile(options.path);
  } else db.pragma('journal_mode = WAL');
  // One exec, no statement kept: these pragmas return nothing to read.
  db.exec(
    `PRAGMA synchronous = ${options.durability === 'full' ? 'FULL' : 'NORMAL'}; PRAGMA busy_timeout = ${options.busyTimeoutMs ?? 5_000}; PRAGMA journal_size_limit = ${options.journalSizeLimitBytes ?? 4 * 1024 * 1024};`,
  );
  // A database this version made or brought up to date says so, with its layout, in its header: nothing more read.
  const stamp = db.prepare('PRAGMA user_version').pluck().get();
  if (stamp === SCHEMA_STAMP.keyed) return { db, layout: 'keyed' };
  if (stamp === SCHEMA_STAMP.indexed) return { db, layout: 'indexed' };
  let schema = readSchema(db);
  // A new database (or an older one missing a table, an index or a column) is brought up to date in ONE write
  // transaction, looked at again inside it: another process opening it at the same moment may have done it since
  // the look outside (its ALTER would then fail with "duplicate column name"). Statement by statement, a new file
  // took a dozen commits (a dozen WAL frames of page 1 and more, ~2 ms CPU and ~10 ms on this disk). A database up
  // to date takes no lock.
  if (outOfDate(schema)) {
    db.exec('BEGIN IMMEDIATE');
    try {
      db.exec(SQLITE_SCHEMA);
      const tables = readSchema(db);
      for (const { table, name, type } of ADDED_COLUMNS)
        if (!tables.get(table)?.has(name)) db.exec(`ALTER TABLE ${table} ADD COLUMN ${name} ${type}`);
      db.exec(SQLITE_SCHEMA_FINISH);
      const made: JournalLayout = tables.get('journal')?.has('id') === true ? 'keyed' : 'indexed';
      db.exec(JOURNAL_CHUNKS_INDEX[made]);
      db.exec(SQLITE_LEARNING_SCHEMA);
      // In the same commit: the next opening finds it up to date from the header alone. Read again here (another
      // process may have stamped it since); an application's own value, or a later loopstate's stamp, is kept.
      if (mayStamp(db.prepare('PRAGMA user_version').pluck().get() as number) && holdsOnlyOurs(db))
        db.exec(`PRAGMA user_version = ${SCHEMA_STAMP[made]}`);
      db.exec('COMMIT');
    } catch (error) {
      if (db.inTransaction) db.exec('ROLLBACK');
      throw error;
    }
    schema = readSchema(db);
  }
  const layout: JournalLayout = schema.get('journal')?.has('id') === true ? 'keyed' : 'indexed';
  return { db, layout };
}

/**
 * Whether `path` names a database file that does not exist yet or is empty (a regular file): not `:memory:`, a
 * temporary database, a URI, a directory or a device, which SQLite opens (or refuses) as it always did.
 */
function isNewFile(path: string): boolean {
  if (path === ':memory:' || path === '' || path.startsWith('file:')) return false;
  try {
    const stat = statSync(path);
    return stat.isFile() && stat.size === 0;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT';
  }
}

/**
 * Whether `path` is a small regular file of zero bytes only: what a power cut can leave of a new file made unsynced.
 * It is only ever named in the error, never emptied here: another process may be making that file at this moment.
 */
function isZeroFilled(path: string): boolean {
  try {
    const stat = statSync(path);
    return (
      stat.isFile() && stat.size > 0 && stat.size <= ZEROED_FILE_LIMIT && readFileSync(path).every((byte) => byte === 0)
    );
  } catch {
    return false;
  }
}

/** The largest file read to see whether it is zeros only: a new file's first pages, never a database in use. */
const ZEROED_FILE_LIMIT = 64 * 1024;

/**
 * fsync of a new database file, so that page 1 (WAL mode in its header) is on disk before the first commit: a file
 * found empty drops its WAL. Its directory entry is synced by SQLite with the WAL's first sync (the WAL is new too).
 */
function syncFile(path: string): void {
  // Read-write: Windows flushes a file (FlushFileBuffers) only through a handle that may write it.
  const fd = openSync(path, 'r+');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
