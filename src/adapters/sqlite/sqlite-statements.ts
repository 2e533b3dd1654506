/**
 * The SQL of sqliteStore's statements in each journal layout, and how they are prepared: each on first use,
 * so a fresh store pays only for the statements its first calls need.
 */
import type BetterSqlite3 from 'better-sqlite3';
import { prepareStatement } from './prepare-statement.js';
import type { JournalLayout } from './sqlite-schema.js';

type Database = BetterSqlite3.Database;

/** A prepared statement of better-sqlite3. */
export type SqliteStatement = BetterSqlite3.Statement<unknown[]>;

/** sqliteStore's statements of one connection (see `prepareStoreStatements`). */
export type StoreStatements = { readonly [Name in keyof ReturnType<typeof STATEMENTS>]: SqliteStatement } & {
  journalRange: string;
  journalOrder: string;
  readKinds: Map<string, SqliteStatement>;
};

/**
 * The statement reading rows of some kinds only (null: none asked for), made once per set of kinds. The kinds
 * are in its text, not bound: the planner uses the partial index `journal_chunks` only for a query whose
 * condition is that index's own (`kind IN ('trace', 'transcript')`).
 */
export function readKinds(db: Database, statements: StoreStatements, kinds: readonly string[]): SqliteStatement | null {
  if (kinds.length === 0) return null;
  const key = JSON.stringify(kinds);
  let statement = statements.readKinds.get(key);
  if (statement === undefined) {
    statement = prepareStatement(
      db,
      `${statements.journalRange}${kindsCondition(kinds)} ORDER BY ${statements.journalOrder}`,
    );
    // A caller asking for many sets of kinds gets each prepared again rather than a cache without bound.
    if (statements.readKinds.size < 16) statements.readKinds.set(key, statement);
  }
  return statement;
}

/** The chunk index's own condition (SQLite uses a partial index only for a query that has its WHERE term as is). */
const CHUNK_INDEX_CONDITION = "kind IN ('trace', 'transcript')";

/**
 * The condition on the journal's kinds: a subset of the chunk kinds (`transcript` alone, say) is asked with the
 * chunk index's own condition too, so that it is read through that index rather than by visiting every row
 * of the run.
 * @example
 * kindsCondition(['transcript']); // " AND kind IN ('trace', 'transcript') AND kind IN ('transcript')"
 */
export function kindsCondition(kinds: readonly string[]): string {
  const list = kinds.map((kind) => `'${String(kind).replaceAll("'", "''")}'`).join(', ');
  const chunksOnly = kinds.every((kind) => kind === 'trace' || kind === 'transcript');
  return chunksOnly && list !== "'trace', 'transcript'"
    ? ` AND ${CHUNK_INDEX_CONDITION} AND kind IN (${list})`
    : ` AND kind IN (${list})`;
}

/**
 * The journal's statements in each layout, with named parameters (`runId`, `afterSeq`, `seq`, ...; `insertRecord`
 * takes positional ones).
 * `keyed` (version 6): a run's rows are the id range of its number, read as a range of the one tree (the number
 * read in the statement); `indexed` (versions 1–5): through the (run_id, seq) key.
 */
function journalStatements(layout: JournalLayout) {
  if (layout === 'indexed')
    return {
      journalRange: 'SELECT seq, kind, body, packed FROM journal WHERE run_id = @runId AND seq > @afterSeq',
      journalOrder: 'seq',
      // Positional: run, seq, kind, body, packed.
      insertRecord: 'INSERT INTO journal (run_id, seq, kind, body, packed) VALUES (?, ?, ?, ?, ?)',
      readRecord: 'SELECT seq, kind, body, packed FROM journal WHERE run_id = @runId AND seq = @seq',
      pruneJournal:
        'DELETE FROM journal WHERE run_id IN (SELECT run_id FROM runs WHERE finished_at IS NOT NULL AND finished_at < @finishedBefore)',
    };
  const number = '(SELECT number FROM runs WHERE run_id = @runId)';
  return {
    // afterSeq below −1 (a caller's window reaching before the first row) must not reach the run before.
    journalRange: `SELECT id & 4294967295 AS seq, kind, body, packed FROM journal WHERE id > (${number} << 32) + max(@afterSeq, -1) AND id < ((${number} + 1) << 32)`,
    journalOrder: 'id',
    // Positional: number, seq, run, kind, body, packed.
    insertRecord: 'INSERT INTO journal (id, run_id, kind, body, packed) VALUES ((? << 32) + ?, ?, ?, ?, ?)',
    readRecord: `SELECT id & 4294967295 AS seq, kind, body, packed FROM journal WHERE id = (${number} << 32) + @seq AND @seq >= 0 AND @seq < 4294967296`,
    // A range delete per run pruned (a statement over the whole journal would visit every row).
    pruneJournal: `DELETE FROM journal WHERE id IN (SELECT journal.id FROM runs, journal WHERE runs.finished_at IS NOT NULL AND runs.finished_at < @finishedBefore AND journal.id >= runs.number << 32 AND journal.id < (runs.number + 1) << 32)`,
  };
}

/** The store's statements in the database's layout, each prepared on first use, and the cache of `readKinds`. */
export function prepareStoreStatements(db: Database, layout: JournalLayout): StoreStatements {
  const journal = journalStatements(layout);
  // Assigned onto the statements (a spread would read, and so prepare, every one of them).
  return Object.assign(preparedOnFirstUse(db, STATEMENTS(journal)), {
    journalRange: journal.journalRange,
    journalOrder: journal.journalOrder,
    readKinds: new Map<string, SqliteStatement>(),
  });
}

/**
 * The store's statements, each prepared when first used (then kept): preparing all of them (26) at the opening was most of
 * a fresh store's cost before its first read (a resume uses a dozen of them). A statement SQLite refuses (a table
 * or column missing) is refused at its first use instead of the opening, by the same error.
 */
function preparedOnFirstUse<Name extends string>(
  db: Database,
  sql: Record<Name, string>,
): { readonly [K in Name]: BetterSqlite3.Statement<unknown[]> } {
  const statements = {} as { [K in Name]: BetterSqlite3.Statement<unknown[]> };
  for (const name of Object.keys(sql) as Name[]) {
    Object.defineProperty(statements, name, {
      enumerable: true,
      configurable: true,
      get() {
        const statement = prepareStatement(db, sql[name]);
        Object.defineProperty(statements, name, { value: statement, enumerable: true });
        return statement;
      },
    });
  }
  return statements;
}

/** The SQL of the store's statements, by name (`journal`: the journal's in the database's layout). */
const STATEMENTS = (journal: ReturnType<typeof journalStatements>) => ({
  // The run's number (the key of its journal rows, version 6): one more than the largest, through runs_number.
  insertRun:
    'INSERT OR IGNORE INTO runs (run_id, body, packed, lease_owner, lease_until, number) VALUES (?, ?, ?, ?, ?, (SELECT coalesce(max(number), 0) + 1 FROM runs))',
  readRun: 'SELECT body, packed, lease_owner, lease_until, cancel_requested FROM runs WHERE run_id = ?',
  acquireLease:
    'UPDATE runs SET lease_owner = ?, lease_until = ? WHERE run_id = ? AND (lease_owner IS NULL OR lease_until < ? OR lease_owner = ? OR lease_owner = ?)',
  ownerAndControl:
    "SELECT lease_owner, lease_until, cancel_requested, (SELECT value FROM control WHERE key = 'paused') AS paused, number FROM runs WHERE run_id = ?",
  leaseOwner: 'SELECT lease_owner, lease_until FROM runs WHERE run_id = ?',
  numberRun:
    'UPDATE runs SET number = (SELECT coalesce(max(number), 0) + 1 FROM runs) WHERE run_id = ? AND number IS NULL RETURNING number',
  releaseLease: 'UPDATE runs SET lease_owner = NULL, lease_until = 0 WHERE run_id = ? AND lease_owner = ?',
  renewLease: 'UPDATE runs SET lease_until = ? WHERE run_id = ? AND lease_owner = ?',
  writeRunBody:
    'UPDATE runs SET lease_until = ?, body = ?, packed = ?, finished_at = ? WHERE run_id = ? AND lease_owner = ? RETURNING number',
  pruneJournal: journal.pruneJournal,
  pruneSnapshots:
    'DELETE FROM snapshots WHERE run_id IN (SELECT run_id FROM runs WHERE finished_at IS NOT NULL AND finished_at < ?)',
  pruneRuns: 'DELETE FROM runs WHERE finished_at IS NOT NULL AND finished_at < ?',
  insertRecord: journal.insertRecord,
  readJournal: `${journal.journalRange} ORDER BY ${journal.journalOrder}`,
  readRecord: journal.readRecord,
  upsertSnapshot:
    'INSERT INTO snapshots (run_id, seq, kind, body, packed) VALUES (?, ?, ?, ?, ?) ON CONFLICT (run_id) DO UPDATE SET seq = excluded.seq, kind = excluded.kind, body = excluded.body, packed = excluded.packed WHERE excluded.seq >= snapshots.seq',
  latestSnapshot: 'SELECT seq, kind, body, packed FROM snapshots WHERE run_id = ?',
  readLedger: 'SELECT body, version FROM ledgers WHERE tenant_id = ?',
  insertLedger: 'INSERT OR IGNORE INTO ledgers (tenant_id, body, version) VALUES (?, ?, 1)',
  updateLedger: 'UPDATE ledgers SET body = ?, version = version + 1 WHERE tenant_id = ? AND version = ?',
  // --- listing runs (the primary key's index gives the order)
  listRuns: 'SELECT run_id, body, packed, finished_at FROM runs ORDER BY run_id LIMIT ?',
  listRunsAfter: 'SELECT run_id, body, packed, finished_at FROM runs WHERE run_id > ? ORDER BY run_id LIMIT ?',
  // --- end of listing runs
  requestCancel: 'UPDATE runs SET cancel_requested = 1 WHERE run_id = ?',
  setPaused:
    "INSERT INTO control (key, value) VALUES ('paused', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
  readControl:
    "SELECT (SELECT value FROM control WHERE key = 'paused') AS paused, (SELECT cancel_requested FROM runs WHERE run_id = ?) AS cancel_requested",
  // Changes when another connection commits (never for this one's own commits): see `controlSeen`.
  dataVersion: 'PRAGMA data_version',
});
