/** An in-memory `Store`: the same records and checks as the embedded database, gone with the process. */
import type { Lease, RunControl, RunRow, Store, StoreRow } from '../../contracts/store.js';
import { StoreConflictError } from './store-conflict-error.js';
import { memoryLearning } from './memory-learning.js';

interface MemoryRun extends RunRow {
  finishedAt: number | null;
  journal: StoreRow[];
  seqs: Set<number>;
  snapshot: StoreRow | null;
}

const utf8 = new TextEncoder();
/** Run ids in UTF-8 byte order, the order SQLite and Postgres (collation "C") list them in. */
function compareIds(a: string, b: string): number {
  const left = utf8.encode(a);
  const right = utf8.encode(b);
  for (let index = 0; index < Math.min(left.length, right.length); index++)
    if (left[index] !== right[index]) return (left[index] as number) - (right[index] as number);
  return left.length - right.length;
}

/**
 * A store in this process's memory: for tests, and for approvals within one process. Records are kept
 * as the encoded text a database would hold, so every read is validated the same way.
 * @example
 * const store = memoryStore();
 * const loop = createLoop({ model, tools, store });
 */
export function memoryStore(options: { pausePollMs?: number } = {}): Store {
  const runs = new Map<string, MemoryRun>();
  let paused: string | null = null;
  const ledgers = new Map<string, { body: string; version: number }>();
  const runOf = (runId: string): MemoryRun => {
    const run = runs.get(runId);
    if (!run) throw new StoreConflictError({ runId, seq: null, message: `run ${runId} does not exist in the store` });
    return run;
  };
  const holds = (run: MemoryRun, owner: string) => run.leaseOwner === owner;
  const learning = memoryLearning();
  return {
    pausePollMs: options.pausePollMs ?? 200,
    async createRun(runId, body, lease) {
      if (runs.has(runId)) return false;
      runs.set(runId, {
        runId,
        body,
        leaseOwner: lease.owner,
        leaseUntil: lease.until,
        cancelRequested: false,
        finishedAt: null,
        journal: [],
        seqs: new Set(),
        snapshot: null,
      });
      return true;
    },
    async readRun(runId) {
      const run = runs.get(runId);
      return run
        ? {
            runId,
            body: run.body,
            leaseOwner: run.leaseOwner,
            leaseUntil: run.leaseUntil,
            cancelRequested: run.cancelRequested,
          }
        : null;
    },
    async acquireLease(runId, lease: Lease, now, takeOverFrom) {
      const run = runs.get(runId);
      if (!run) return false;
      const free =
        run.leaseOwner === null ||
        run.leaseUntil < now ||
        run.leaseOwner === lease.owner ||
        (takeOverFrom !== undefined && run.leaseOwner === takeOverFrom);
      if (!free) return false;
      run.leaseOwner = lease.owner;
      run.leaseUntil = lease.until;
      return true;
    },
    async releaseLease(runId, owner) {
      const run = runs.get(runId);
      if (run && holds(run, owner)) {
        run.leaseOwner = null;
        run.leaseUntil = 0;
      }
    },
    async append(runId, rows, lease, runBody, finishedAt) {
      const run = runOf(runId);
      if (!holds(run, lease.owner))
        throw new StoreConflictError({
          runId,
          seq: rows[0]?.seq ?? null,
          message: `run ${runId} is held by another owner; this writer lost its lease`,
        });
      for (const row of rows) {
        if (run.seqs.has(row.seq))
          throw new StoreConflictError({
            runId,
            seq: row.seq,
            message: `run ${runId} already has a journal record at seq ${row.seq}`,
          });
      }
      for (const row of rows) {
        run.seqs.add(row.seq);
        run.journal.push({ ...row });
      }
      if (runBody !== undefined) run.body = runBody;
      if (runBody !== undefined) run.finishedAt = finishedAt ?? null;
      if (rows.length === 0 || runBody !== undefined) run.leaseUntil = lease.until;
      return { paused, cancelRequested: run.cancelRequested };
    },
    async readJournal(runId, afterSeq, kinds) {
      const run = runs.get(runId);
      return run
        ? run.journal
            .filter((row) => row.seq > afterSeq && (kinds === undefined || kinds.includes(row.kind)))
            .sort((a, b) => a.seq - b.seq)
            .map((row) => ({ ...row }))
        : [];
    },
    async writeSnapshot(runId, row, lease) {
      const run = runOf(runId);
      if (!holds(run, lease.owner))
        throw new StoreConflictError({
          runId,
          seq: row.seq,
          message: `run ${runId} is held by another owner; this writer lost its lease`,
        });
      if (run.snapshot === null || row.seq >= run.snapshot.seq) run.snapshot = { ...row };
    },
    async latestSnapshot(runId) {
      const snapshot = runs.get(runId)?.snapshot;
      return snapshot ? { ...snapshot } : null;
    },
    async prune({ finishedBefore }) {
      let deleted = 0;
      for (const [runId, run] of runs)
        if (run.finishedAt !== null && run.finishedAt < finishedBefore) {
          runs.delete(runId);
          deleted += 1;
        }
      return deleted;
    },
    // --- listing runs
    async listRuns({ limit, after }) {
      return [...runs.values()]
        .filter((run) => after === undefined || compareIds(run.runId, after) > 0)
        .sort((a, b) => compareIds(a.runId, b.runId))
        .slice(0, limit)
        .map((run) => ({ runId: run.runId, body: run.body, finishedAt: run.finishedAt }));
    },
    // --- end of listing runs
    async requestCancel(runId) {
      const run = runs.get(runId);
      if (!run) return false;
      run.cancelRequested = true;
      return true;
    },
    async setPaused(reason) {
      paused = reason;
    },
    async readControl(runId): Promise<RunControl> {
      return { paused, cancelRequested: runs.get(runId)?.cancelRequested ?? false };
    },
    async readLedger(tenantId) {
      const ledger = ledgers.get(tenantId);
      return ledger ? { ...ledger } : null;
    },
    async writeLedger(tenantId, body, expectedVersion) {
      const current = ledgers.get(tenantId);
      if ((current?.version ?? null) !== expectedVersion) return false;
      ledgers.set(tenantId, { body, version: (current?.version ?? 0) + 1 });
      return true;
    },
    readLearning: learning.readLearning,
    writeLearning: learning.writeLearning,
    listLearning: learning.listLearning,
    deleteLearning: learning.deleteLearning,
    async close() {
      runs.clear();
      ledgers.clear();
      learning.clear();
    },
  };
}
