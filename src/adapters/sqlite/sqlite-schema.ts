/**
 * The store's tables. Changelog — 1: runs (metadata envelope, lease, cancel flag), journal (runId, seq),
 * one latest snapshot per run, a key/value control table (the store-wide pause), tenant ledgers
 * (a versioned row per tenant, written by compare-and-set).
 * 2: the journal is a rowid table (its key an index beside it). In a WITHOUT ROWID table a row over ~1 KB
 * spills into overflow pages, mostly empty: a 1.5 KB event took two pages, 8 KB on disk. A database made
 * by version 1 keeps its table as it is (both work alike). `runs.finished_at`: when the run finished (for
 * `prune`), added to a version 1 database when it is opened.
 * 3: `runs.packed`, `journal.packed` and `snapshots.packed`: a body of a few hundred bytes or more is stored deflated there
 * (row-packing.ts), its `body` empty; added to an older database when it is opened (its rows stay text).
 * 4: `journal_chunks`, a partial index of the rows written with snapshots (`trace` and `transcript` chunks): a
 * resume reads those few rows of a long run without visiting the others; built on an older database when opened.
 * 5: a `learning` table (a versioned record per loop name and tenant), created in sqlite-learning.ts when a
 * database is opened, so an older database gains it.
 * 6: a new database's journal is ONE B-tree: its key `id` = the run's `runs.number` × 2^32 + seq (`seq` a
 * virtual column of it, `run_id` kept as a plain column, unindexed), where version 2–5 had a rowid table and
 * the (run_id, seq) key in an index beside it: every insert dirtied two trees, two WAL frames a commit. The
 * chunk index is on `id`. `runs.number` (unique, set by `createRun`) is added to an older database when it is
 * opened; an older database keeps its journal as it is (both work alike, `JournalLayout` says which). An
 * older loopstate cannot use a version 6 database: SQLite refuses its journal insert statement when it is
 * prepared (`cannot INSERT into generated column "seq"`), so it fails at once rather than write a wrong key.
 * 7: no table changes. A database this version makes or brings up to date says so in its header: `PRAGMA
 * user_version` is `SCHEMA_STAMP[layout]`, set in the transaction that makes it or brings it up to date, and only
 * over 0 or an older stamp of loopstate's (`mayStamp`): an application keeping these tables in its own file keeps
 * its own `user_version`. An opening that finds the stamp reads nothing more of the schema (a query of
 * `sqlite_schema` and every table's columns, ~0.1 ms, was made at every opening), so it does not re-create a table or
 * an index dropped by hand; any other value (0: a database made before; the application's own; a later loopstate's
 * stamp) is looked at as before, at every opening, and a database found up to date then is not written to.
 * Any change of the definitions here, of ADDED_COLUMNS or of the learning schema must come with the next version's
 * stamp (SQLITE_LAYOUT_VERSION), or stamped files would never get it: sqlite-schema.test.ts fails until then.
 */
export const SQLITE_SCHEMA = `
CREATE TABLE IF NOT EXISTS runs (
  run_id TEXT PRIMARY KEY,
  body TEXT NOT NULL,
  lease_owner TEXT,
  lease_until INTEGER NOT NULL DEFAULT 0,
  cancel_requested INTEGER NOT NULL DEFAULT 0,
  finished_at INTEGER,
  packed BLOB,
  number INTEGER
) STRICT;
CREATE TABLE IF NOT EXISTS journal (
  id INTEGER PRIMARY KEY,
  run_id TEXT NOT NULL,
  seq INTEGER GENERATED ALWAYS AS (id & 4294967295) VIRTUAL,
  kind TEXT NOT NULL,
  body TEXT NOT NULL,
  packed BLOB
) STRICT;
CREATE TABLE IF NOT EXISTS snapshots (
  run_id TEXT PRIMARY KEY,
  seq INTEGER NOT NULL,
  kind TEXT NOT NULL,
  body TEXT NOT NULL,
  packed BLOB
) STRICT;
CREATE TABLE IF NOT EXISTS ledgers (
  tenant_id TEXT PRIMARY KEY,
  body TEXT NOT NULL,
  version INTEGER NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS control (
  key TEXT PRIMARY KEY,
  value TEXT
) STRICT;
`;

/** Run after SQLITE_SCHEMA and the added columns: brings an older database up to date. */
export const SQLITE_SCHEMA_FINISH = `
CREATE INDEX IF NOT EXISTS runs_finished_at ON runs (finished_at) WHERE finished_at IS NOT NULL;
CREATE UNIQUE INDEX IF NOT EXISTS runs_number ON runs (number);
`;

/**
 * How a database's journal is keyed: `keyed` (version 6: one tree, `id` = run number × 2^32 + seq) or
 * `indexed` (versions 2–5: a rowid table and a (run_id, seq) index; version 1: a WITHOUT ROWID table on it).
 */
export type JournalLayout = 'keyed' | 'indexed';

/** The columns added to a database made by an older version when it is opened (versions 2, 3 and 6). */
export const ADDED_COLUMNS = [
  { table: 'runs', name: 'finished_at', type: 'INTEGER' },
  { table: 'runs', name: 'packed', type: 'BLOB' },
  { table: 'journal', name: 'packed', type: 'BLOB' },
  { table: 'snapshots', name: 'packed', type: 'BLOB' },
  { table: 'runs', name: 'number', type: 'INTEGER' },
] as const;

/**
 * The version of the SQLite file's tables, columns and indexes this loopstate makes (the changelog above), stamped
 * into the file. Bumped with any change of them: `SCHEMA_FINGERPRINTS` records the definitions of each.
 */
export const SQLITE_LAYOUT_VERSION = 7;

/**
 * loopstate's mark in a SQLite file's `PRAGMA user_version`: 0x6C6F6F70 ("loop" in ASCII), far from the small
 * counters migration tools keep there. A stamp is `STAMP_BASE + 100 × SQLITE_LAYOUT_VERSION + (1 for the keyed
 * journal)`; a value from `STAMP_BASE` to `STAMP_BASE + 9_999` is loopstate's, any other but 0 is not.
 */
export const STAMP_BASE = 0x6c6f6f70;

/**
 * `PRAGMA user_version` of a database up to date for this version, by its journal's layout (1_819_243_053 keyed,
 * 1_819_243_052 indexed). Older versions leave it 0 and never read it.
 */
export const SCHEMA_STAMP: Record<JournalLayout, number> = {
  keyed: STAMP_BASE + SQLITE_LAYOUT_VERSION * 100 + 1,
  indexed: STAMP_BASE + SQLITE_LAYOUT_VERSION * 100,
};

/**
 * Whether a database whose `user_version` is `found` may be stamped when it is brought up to date: 0 (never
 * stamped) or an older stamp of loopstate's. A value of the application's own (it keeps loopstate's tables in its
 * own file, its migrations counting there) is never written over, nor a later loopstate's stamp (never downgraded).
 * @example
 * mayStamp(0); // true
 * mayStamp(3); // false: the application's own
 */
export function mayStamp(found: number): boolean {
  const offset = found - STAMP_BASE;
  return found === 0 || (offset >= 0 && offset < 10_000 && Math.floor(offset / 100) < SQLITE_LAYOUT_VERSION);
}

/**
 * The sha256 (hex, its first 16 digits) of the definitions each stamped version makes (SQLITE_SCHEMA,
 * SQLITE_SCHEMA_FINISH, JOURNAL_CHUNKS_INDEX, ADDED_COLUMNS, the learning schema), as sqlite-schema.test.ts derives
 * it. Never edit a recorded one: a change of the definitions bumps SQLITE_LAYOUT_VERSION and records its own here.
 */
export const SCHEMA_FINGERPRINTS: Readonly<Record<number, string>> = { 7: '678de0e0cbf32564' };

/** The chunk index (version 4) of each layout: a resume reads a long run's chunks without its other rows. */
export const JOURNAL_CHUNKS_INDEX: Record<JournalLayout, string> = {
  keyed: "CREATE INDEX IF NOT EXISTS journal_chunks ON journal (id) WHERE kind IN ('trace', 'transcript');",
  indexed: "CREATE INDEX IF NOT EXISTS journal_chunks ON journal (run_id, seq) WHERE kind IN ('trace', 'transcript');",
};

/** A run's journal rows span ids [number × 2^32, (number + 1) × 2^32): a seq is below 2^32. */
export const SEQ_LIMIT = 2 ** 32;
