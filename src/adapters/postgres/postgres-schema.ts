/**
 * The Postgres store's tables, in their own schema so they sit beside DBOS's system tables in one
 * database. Changelog — 1: the SQLite store's tables (runs, journal, snapshots, ledgers, control) with
 * the same keys, plus `workers`: each distributed worker's heartbeat, read by the reaper. 2: workers say
 * their `application_version` and the `lease_prefix` of their process (a reaper frees a dead worker's
 * leases by it), an index finds the runs a lease is held on, and `runs.finished_at` says when the run
 * finished (for `prune`); each is added to a version 1 schema when opened. 3: `journal_chunks`, a partial index
 * of the rows written with snapshots (`trace` and `transcript` chunks), which a resume reads without visiting
 * the others; built on an older schema when opened. 4: a `learning` table (a versioned
 * record per loop name and tenant), created by postgres-learning.ts when the store opens, so an older schema gains it. 5: `runs_by_id`, the run ids in
 * byte order (collation "C") for `listRuns`, added when opened.
 */
export function postgresSchema(schema: string): string {
  const s = `"${schema}"`;
  return `
CREATE SCHEMA IF NOT EXISTS ${s};
CREATE TABLE IF NOT EXISTS ${s}.runs (
  run_id TEXT PRIMARY KEY,
  body TEXT NOT NULL,
  lease_owner TEXT,
  lease_until BIGINT NOT NULL DEFAULT 0,
  cancel_requested BOOLEAN NOT NULL DEFAULT FALSE
);
CREATE TABLE IF NOT EXISTS ${s}.journal (
  run_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  kind TEXT NOT NULL,
  body TEXT NOT NULL,
  PRIMARY KEY (run_id, seq)
);
CREATE TABLE IF NOT EXISTS ${s}.snapshots (
  run_id TEXT PRIMARY KEY,
  seq INTEGER NOT NULL,
  kind TEXT NOT NULL,
  body TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS ${s}.ledgers (
  tenant_id TEXT PRIMARY KEY,
  body TEXT NOT NULL,
  version INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS ${s}.control (
  key TEXT PRIMARY KEY,
  value TEXT
);
CREATE TABLE IF NOT EXISTS ${s}.workers (
  executor_id TEXT PRIMARY KEY,
  heartbeat_at BIGINT NOT NULL
);
ALTER TABLE ${s}.runs ADD COLUMN IF NOT EXISTS finished_at BIGINT;
CREATE INDEX IF NOT EXISTS runs_finished_at ON ${s}.runs (finished_at) WHERE finished_at IS NOT NULL;
ALTER TABLE ${s}.workers ADD COLUMN IF NOT EXISTS claimed_by TEXT;
ALTER TABLE ${s}.workers ADD COLUMN IF NOT EXISTS claimed_at BIGINT;
ALTER TABLE ${s}.workers ADD COLUMN IF NOT EXISTS application_version TEXT;
ALTER TABLE ${s}.workers ADD COLUMN IF NOT EXISTS lease_prefix TEXT;
CREATE INDEX IF NOT EXISTS runs_by_id ON ${s}.runs (run_id COLLATE "C");
CREATE INDEX IF NOT EXISTS runs_leased ON ${s}.runs (lease_owner) WHERE lease_owner IS NOT NULL;
CREATE INDEX IF NOT EXISTS journal_chunks ON ${s}.journal (run_id, seq) WHERE kind IN ('trace', 'transcript');
`;
}
