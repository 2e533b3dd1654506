/**
 * Distributed runs on DBOS Transact: runs are DBOS workflows on a DBOS queue, so any worker process
 * of the same definition may take one; a run's effects are journalled in a `postgresStore` by the same
 * durable layer as the embedded mode, so the machine, its results and its resume rules are the same.
 *
 * DBOS 5.3 without its hosted Conductor recovers only a restarted worker's own runs, so each worker
 * has a stable executor id, heartbeats into the store, and reaps: the PENDING workflows of an executor
 * silent for `deadAfterMs` are put back on the queue for a live worker.
 */
import type { DBOS as DBOSType, WorkflowQueue } from '@dbos-inc/dbos-sdk';
import { LoopConfigError } from '../errors.js';
import type { RunInput } from '../config.js';
import type { Loop } from '../loop.js';
import type { ApprovalInput } from '../durable/durable-runs.js';
import type { RunResult } from '../runtime/run-result.js';
import type { PostgresStore } from '../store/postgres/postgres-store.js';
import { DEFAULT_DBOS_WORKER } from '../constants.js';
import { driveLeg, resumeRequest, runRequest, RUN_WORKFLOW_NAME, type LegRequest } from './run-leg.js';
import { loadDbos } from './load-dbos.js';
import { machineVersion } from './machine-version.js';

/**
 * Options of `dbosWorker`.
 * @example
 * const options: DbosWorkerOptions = { loop, store, systemDatabaseUrl: url, executorId: 'worker-a', version: 'refunds-3' };
 */
export interface DbosWorkerOptions<Output = unknown> {
  /** The loop every run of this worker drives; its `store` must be `store`. */
  loop: Loop<Output>;
  /** The Postgres store the loop journals into; also holds the workers' heartbeats. */
  store: PostgresStore;
  /** DBOS's system database (may be the store's database). */
  systemDatabaseUrl: string;
  /** Unique and stable per worker (a pod name, `host-1`): a restart with the same id recovers its runs. */
  executorId: string;
  /** DBOS application name (default `loopstate`): workers of one application share the queue. */
  applicationName?: string;
  /** Your loop's version (tools, prompts); appended to the statechart's version as DBOS's `applicationVersion`. */
  version?: string;
  /** The queue's name (default `loopstate-runs`). */
  queueName?: string;
  /** Runs one worker drives at once (default 4). */
  workerConcurrency?: number;
  /** Runs all workers drive at once (default: no limit). */
  globalConcurrency?: number;
  /** How often the worker heartbeats and reaps, in ms (default 1 000). */
  heartbeatMs?: number;
  /** A worker silent this long is dead: its runs go back on the queue (default 10 000). */
  deadAfterMs?: number;
}

/**
 * A launched worker: enqueue runs, continue stopped ones, read results, shut down.
 * @example
 * const { runId } = await worker.enqueue({ goal: 'Refund order O-7', runId: 'refund-O-7' });
 * const result = await worker.result(runId);
 */
export interface DbosWorker<Output = unknown> {
  readonly executorId: string;
  /** The `applicationVersion` this worker's workflows carry. */
  readonly applicationVersion: string;
  /** Puts a run on the queue; any worker may drive it. Enqueuing the same `runId` twice starts it once. */
  enqueue(input: RunInput & { runId: string }): Promise<{ runId: string; workflowId: string }>;
  /**
   * Puts the continuation of a stopped run on the queue (with the person's `approvals`, or after a
   * crash); `idempotencyKey` makes a retried request continue it once.
   */
  enqueueResume(runId: string, options?: { approvals?: Readonly<Record<string, ApprovalInput>>; idempotencyKey?: string }): Promise<{ runId: string; workflowId: string }>;
  /** Waits for the run's latest leg to stop and returns its result. */
  result(runId: string, workflowId?: string): Promise<RunResult<Output>>;
  /** One reaper pass now (it also runs every `heartbeatMs`): the ids of the workflows put back on the queue. */
  reap(): Promise<string[]>;
  /** Stops the heartbeat and DBOS (runs in flight are recovered by this executor id or a reaper). */
  shutdown(): Promise<void>;
}

let launched = false;

function checkOptions(options: DbosWorkerOptions): void {
  const issues: { path: string; message: string }[] = [];
  if (typeof options?.loop?.run !== 'function') issues.push({ path: 'loop', message: 'expected a loop from createLoop({ ..., store })' });
  if (typeof options?.store?.claimSilentExecutors !== 'function') issues.push({ path: 'store', message: 'expected a postgresStore({ connectionString })' });
  if (typeof options?.systemDatabaseUrl !== 'string' || !/^postgres(ql)?:\/\//.test(options.systemDatabaseUrl)) issues.push({ path: 'systemDatabaseUrl', message: 'expected a postgresql:// URL' });
  if (typeof options?.executorId !== 'string' || !/^[A-Za-z0-9._:-]{1,100}$/.test(options.executorId)) issues.push({ path: 'executorId', message: 'expected a stable id of letters, digits, . _ : -' });
  for (const key of ['workerConcurrency', 'globalConcurrency', 'heartbeatMs', 'deadAfterMs'] as const) {
    const value = options?.[key];
    if (value !== undefined && !(Number.isInteger(value) && value > 0)) issues.push({ path: key, message: 'expected a positive integer' });
  }
  if ((options?.deadAfterMs ?? DEFAULT_DBOS_WORKER.deadAfterMs) <= (options?.heartbeatMs ?? DEFAULT_DBOS_WORKER.heartbeatMs) * 2) issues.push({ path: 'deadAfterMs', message: 'expected more than two heartbeats, so a live worker is never reaped' });
  if (issues.length > 0) throw new LoopConfigError({ issues });
}

/** Serialises DBOS's first migration across processes that launch at once. */
const MIGRATION_LOCK = 7_271_002;

/**
 * Launches this process as a DBOS worker of `loop` (one per process: DBOS is process-wide).
 * @example
 * const store = postgresStore({ connectionString: process.env.DATABASE_URL! });
 * const loop = createLoop({ model, tools, store });
 * const worker = await dbosWorker({ loop, store, systemDatabaseUrl: process.env.DATABASE_URL!, executorId: process.env.HOSTNAME! });
 */
export async function dbosWorker<Output>(options: DbosWorkerOptions<Output>): Promise<DbosWorker<Output>> {
  checkOptions(options as DbosWorkerOptions);
  if (launched) throw new LoopConfigError({ issues: [{ path: 'dbosWorker', message: 'one DBOS worker per process: DBOS is process-wide; shut the other down first' }] });
  const { DBOS } = loadDbos() as { DBOS: typeof DBOSType };
  const { loop, store, executorId } = options;
  const queueName = options.queueName ?? DEFAULT_DBOS_WORKER.queueName;
  const heartbeatMs = options.heartbeatMs ?? DEFAULT_DBOS_WORKER.heartbeatMs;
  const deadAfterMs = options.deadAfterMs ?? DEFAULT_DBOS_WORKER.deadAfterMs;
  const applicationVersion = machineVersion(options.version);

  // One DBOS step per leg: the leg's effects are durable in the store's journal, so a replay of this
  // workflow re-enters the leg and the journal serves every effect that completed.
  const driveRunWorkflow = DBOS.registerWorkflow(
    async (request: LegRequest): Promise<RunResult> => DBOS.runStep(() => driveLeg(loop as Loop, request), { name: 'loopstate.leg' }),
    { name: RUN_WORKFLOW_NAME },
  );

  DBOS.setConfig({
    name: options.applicationName ?? DEFAULT_DBOS_WORKER.applicationName,
    systemDatabaseUrl: options.systemDatabaseUrl,
    executorID: executorId,
    applicationVersion,
    logLevel: process.env.LOOPSTATE_DBOS_LOG_LEVEL ?? 'warn',
  });
  await store.exclusive(MIGRATION_LOCK, () => DBOS.migrate(options.systemDatabaseUrl));
  // A heartbeat before launch: a worker that dies while launching is already known to the reapers.
  await store.heartbeat(executorId, Date.now());
  let queue: WorkflowQueue;
  try {
    await DBOS.launch();
    queue = await DBOS.registerQueue(queueName, {
      workerConcurrency: options.workerConcurrency ?? DEFAULT_DBOS_WORKER.workerConcurrency,
      ...(options.globalConcurrency === undefined ? {} : { globalConcurrency: options.globalConcurrency }),
    });
  } catch (error) {
    // A failed launch leaves DBOS's background work running (the process never exits) unless shut down.
    await DBOS.shutdown().catch(() => undefined);
    throw error;
  }
  launched = true;

  const reap = async (): Promise<string[]> => {
    const now = Date.now();
    await store.heartbeat(executorId, now);
    const dead = await store.claimSilentExecutors(now - deadAfterMs, executorId);
    if (dead.length === 0) return [];
    const pending = await DBOS.listWorkflows({ status: 'PENDING', executorId: dead, queueName });
    const ids = pending.map((workflow) => workflow.workflowID);
    if (ids.length > 0) await DBOS.resumeWorkflows(ids, { queueName });
    return ids;
  };
  let reaping: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    reaping = reaping.then(reap).catch((error: unknown) => DBOS.logger.warn(`loopstate reaper: ${String(error)}`));
  }, heartbeatMs);
  timer.unref();

  const start = async ({ workflowId, request }: { workflowId: string; request: LegRequest }) => {
    await DBOS.startWorkflow(driveRunWorkflow, { workflowID: workflowId, queueName: queue.name })(request);
    return { runId: request.runId, workflowId };
  };
  return {
    executorId,
    applicationVersion,
    enqueue: (input) => start(runRequest(input)),
    enqueueResume: (runId, resumeOptions) => start(resumeRequest(runId, resumeOptions)),
    result: async (runId, workflowId) => (await DBOS.retrieveWorkflow<RunResult<Output>>(workflowId ?? runId).getResult()) as RunResult<Output>,
    reap: () => (reaping = reaping.then(reap)) as Promise<string[]>,
    shutdown: async () => {
      clearInterval(timer);
      await reaping.catch(() => undefined);
      await DBOS.shutdown();
      launched = false;
    },
  };
}
