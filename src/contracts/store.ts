/**
 * Where durable runs live. A store keeps opaque, already-encoded records (the durable layer owns their
 * schemas and validates every one it reads), so an implementation is only storage: rows, a lease
 * compare-and-set and two control flags. Every method is async so a networked store (Postgres) fits the
 * same interface as the embedded ones.
 */

/**
 * One journal or snapshot row: `body` is a versioned JSON envelope written by the durable layer.
 * @example
 * const row: StoreRow = { seq: 3, kind: 'event', body: '{"schemaVersion":1,...}' };
 */
export interface StoreRow {
  seq: number;
  kind: string;
  body: string;
}

/**
 * A run's row: its metadata envelope, who holds it and whether a cancel was asked for.
 * @example
 * const run = await store.readRun('order-O-101'); // { runId, body, leaseOwner: null, leaseUntil: 0, cancelRequested: false }
 */
export interface RunRow {
  runId: string;
  body: string;
  leaseOwner: string | null;
  /** Epoch ms after which the lease is free to take. */
  leaseUntil: number;
  cancelRequested: boolean;
}

/**
 * A lease to hold (or take): written with every append, so an owner that keeps appending keeps its run.
 * @example
 * const lease: Lease = { owner: 'host:4242:k3j', until: Date.now() + 30_000 };
 */
export interface Lease {
  owner: string;
  until: number;
}

/**
 * What a run's next step must respect: a store-wide pause (the kill switch) and a cancel of this run.
 * @example
 * const { paused, cancelRequested } = await store.readControl(runId);
 */
export interface RunControl {
  /** Why every run is paused, or null when none is. */
  paused: string | null;
  cancelRequested: boolean;
}

/**
 * The key under which a store says its `append` may write the snapshot it is given (see `Store.append`). Its value
 * must be the store's own `writeSnapshot`: a wrapper that spreads such a store and replaces `writeSnapshot` (to count,
 * mirror or encrypt snapshots) no longer matches it, so the journal gives that wrapper every snapshot through its
 * `writeSnapshot` as before, and never lets the inner store write one the wrapper does not see.
 * @example
 * const store: Store = { ...myStore, [appendTakesSnapshot]: myStore.writeSnapshot };
 */
export const appendTakesSnapshot: unique symbol = Symbol.for('loopstate.appendTakesSnapshot');

/** Marks `store` as taking snapshots with its appends (its `writeSnapshot` under `appendTakesSnapshot`). */
export function markAppendTakesSnapshot<S extends Store>(store: S): S {
  store[appendTakesSnapshot] = store.writeSnapshot;
  return store;
}

/**
 * What an append resolves to: the run's control as the append found it and, when it was given a snapshot and wrote
 * it in the same transaction as the rows, `snapshotWritten: true`.
 * @example
 * const outcome = await store.append(runId, rows, lease, undefined, undefined, snapshot);
 * if (outcome?.snapshotWritten !== true) await store.writeSnapshot(runId, snapshot, lease);
 */
export interface AppendOutcome extends RunControl {
  /** True when the append wrote the snapshot it was given, atomically with its rows; absent otherwise. */
  snapshotWritten?: boolean;
}

/**
 * What `store.prune` deletes.
 * @example
 * await store.prune({ finishedBefore: Date.now() - 7 * 24 * 3_600_000 }); // runs finished over a week ago
 */
export interface PruneOptions {
  /** Epoch ms: runs that finished before it are deleted. */
  finishedBefore: number;
}

// --- Listing runs (the console, `loopstate runs list`) ---------------------------------------------

/**
 * What `store.listRuns` lists: one page of runs, by run id.
 * @example
 * const options: ListRunsOptions = { limit: 100, after: 'order-O-101' }; // the page after that run
 */
export interface ListRunsOptions {
  /** At most this many runs (a positive integer). */
  limit: number;
  /** Only runs whose id sorts after this one (the last id of the previous page); absent: from the first. */
  after?: string;
}

/**
 * One listed run: its metadata envelope (decoded by the durable layer, like `readRun`'s) and when it finished.
 * @example
 * const [first] = await store.listRuns!({ limit: 1 }); // { runId, body, finishedAt: null }
 */
export interface ListedRun {
  runId: string;
  body: string;
  /** Epoch ms the run finished (the `finishedAt` of its last append), or null while it is not finished. */
  finishedAt: number | null;
}

// --- end of listing runs -------------------------------------------------------------------------------

/**
 * One stored learning record, as `store.listLearning()` lists it.
 * @example
 * for (const { key, version } of await store.listLearning()) console.log(key, version);
 */
export interface LearningRow {
  key: string;
  body: string;
  version: number;
}

/**
 * Storage for durable runs: `memoryStore()` for tests and one process, `sqliteStore({ path })` for
 * crash-safe runs on one machine.
 * @example
 * const loop = createLoop({ model, tools, store: sqliteStore({ path: 'loops.db' }) });
 */
export interface Store {
  /**
   * This store's own `writeSnapshot` when its `append` may take the snapshot (see `appendTakesSnapshot`); absent,
   * or any other value, and every snapshot goes through `writeSnapshot`.
   */
  [appendTakesSnapshot]?: Store['writeSnapshot'];
  /** Creates the run's row holding `lease`; false when a run with this id exists already. */
  createRun(runId: string, body: string, lease: Lease): Promise<boolean>;
  readRun(runId: string): Promise<RunRow | null>;
  /**
   * Compare-and-set: takes the lease when it is free, expired, already `lease.owner`'s, or held by
   * `takeOverFrom` (an owner known to be dead). True when the caller now holds it.
   */
  acquireLease(runId: string, lease: Lease, now: number, takeOverFrom?: string): Promise<boolean>;
  /** Frees the lease if `owner` holds it. */
  releaseLease(runId: string, owner: string): Promise<void>;
  /**
   * Appends rows atomically (with the run's new metadata when given) if `lease.owner` holds the run;
   * an append without rows (the owner's heartbeat) or with `runBody` also renews the lease. Throws
   * `StoreConflictError` when a row's seq exists already or `lease.owner` no longer holds the run:
   * two writers of one run can never both succeed. `finishedAt` (epoch ms, with the run body of a
   * finished run): the run is finished from then on, and `prune` may delete it. May resolve to the run's
   * control as the append found it (what `readControl` would answer), so the owner needs no second call
   * before its next step; a store that resolves to nothing is asked with `readControl`. `snapshot` (optional, a
   * row `writeSnapshot` would take, its seq at most the last row's): given only to a store whose
   * `[appendTakesSnapshot]` is its own `writeSnapshot`. Such a store may write it in the same transaction as the
   * rows (never before them: a snapshot must not be durable without the events it covers) and then resolves to
   * `snapshotWritten: true`; one that does not (resolves without it) is given it with `writeSnapshot` after the
   * append, as before.
   */
  append(
    runId: string,
    rows: readonly StoreRow[],
    lease: Lease,
    runBody?: string,
    finishedAt?: number,
    snapshot?: StoreRow,
  ): Promise<AppendOutcome | void>;
  /**
   * Journal rows with seq greater than `afterSeq`, in seq order; with `kinds`, only rows of those kinds (a
   * resume reads the chunks written with snapshots this way, not every row of a long run). The durable layer
   * filters again, so a store that ignores `kinds` is correct, only slower.
   */
  readJournal(runId: string, afterSeq: number, kinds?: readonly string[]): Promise<StoreRow[]>;
  writeSnapshot(runId: string, row: StoreRow, lease: Lease): Promise<void>;
  /** The snapshot with the highest seq, or null. */
  latestSnapshot(runId: string): Promise<StoreRow | null>;
  /**
   * Asks the run to stop; its owner sees it at its next commit or control read: before its next step, or within
   * `durable.maxUncommittedMs` for steps grouped into one commit. False when there is no such run.
   */
  requestCancel(runId: string): Promise<boolean>;
  /**
   * Pauses (a reason) or unpauses (null) every run in the store: a run sees it at its next commit or control read
   * (before its next step, or within `durable.maxUncommittedMs` for steps grouped into one commit) and waits.
   */
  setPaused(reason: string | null): Promise<void>;
  readControl(runId: string): Promise<RunControl>;
  /** A tenant's ledger (encoded) and its version, or null when the tenant has none yet. */
  readLedger(tenantId: string): Promise<{ body: string; version: number } | null>;
  /**
   * Compare-and-set of a tenant's ledger: writes when its version is still `expectedVersion` (null: the
   * ledger must not exist yet) and bumps the version. False when another writer got there first.
   */
  writeLedger(tenantId: string, body: string, expectedVersion: number | null): Promise<boolean>;
  /**
   * Deletes the runs that finished before `finishedBefore` (epoch ms) with their journal and snapshot;
   * runs still running or waiting for approval are kept whatever their age. Returns how many it deleted.
   */
  prune(options: PruneOptions): Promise<number>;
  // --- Learning across runs: one versioned record per key, written by compare-and-set. ---
  /** A learning record (encoded) and its version, or null when the key has none. */
  readLearning(key: string): Promise<{ body: string; version: number } | null>;
  /**
   * Compare-and-set of a learning record: writes when its version is still `expectedVersion` (null: the
   * record must not exist yet) and bumps the version. False when another writer got there first.
   */
  writeLearning(key: string, body: string, expectedVersion: number | null): Promise<boolean>;
  /** Every learning record, ordered by key. */
  listLearning(): Promise<LearningRow[]>;
  /** Deletes a learning record; false when there was none. */
  deleteLearning(key: string): Promise<boolean>;
  // --- end of learning ---
  /**
   * One page of the store's runs in ascending run id order (by code point, as UTF-8 bytes sort), `limit`
   * at most, after `after` when given: paging with the last id of each page visits every run once.
   * Optional, so a store written before it still works; `loopstate runs` and the console need it.
   */
  listRuns?(options: ListRunsOptions): Promise<ListedRun[]>;
  /** How often (ms) a paused run looks again whether the pause was lifted. */
  readonly pausePollMs: number;
  close(): Promise<void>;
}
