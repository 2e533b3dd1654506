/**
 * Enqueues runs for DBOS workers from a process that drives none (a web server): the same workflow
 * ids and requests as `worker.enqueue`, through DBOS's client.
 */
import type { DBOSClient } from '@dbos-inc/dbos-sdk';
import { LoopConfigError } from '../../contracts/errors.js';
import type { RunInput } from '../../engine/config/config.js';
import type { ApprovalInput, ReviewInput } from '../../engine/durable/durable-runs.js';
import type { RunResult } from '../../engine/runtime/run-result.js';
import { DEFAULT_DBOS_WORKER } from '../../engine/constants.js';
import { loadDbos } from './load-dbos.js';
import { machineVersion } from './machine-version.js';
import { resumeRequest, runRequest, type LegRequest } from './run-leg.js';
import { chainPort, followRun, handOverDecisions, RUN_WORKFLOW_NAME } from './workflow-chain.js';
import { postgresStore, type PostgresStore } from '../postgres/index.js';
import { workerPresence } from './worker-presence.js';

/**
 * Options of `dbosClient`: the workers' application, queue and version.
 * @example
 * const options: DbosClientOptions = { systemDatabaseUrl: url, version: 'refunds-3' };
 */
export interface DbosClientOptions {
  systemDatabaseUrl: string;
  /** As given to the workers (default `loopstate`). */
  applicationName?: string;
  /** As given to the workers: only workers of this version take the runs. */
  version?: string;
  /** As given to the workers (default `loopstate-runs`). */
  queueName?: string;
  /** How often `result` and `approve` poll, in ms (default 20). */
  pollingIntervalMs?: number;
  /**
   * The workers' store, where their heartbeats say which workers live and which version each runs
   * (default: a `postgresStore` on `systemDatabaseUrl`, the one database of the usual setup; `null`: no
   * such check). With it, `approve` says when no worker is alive, and a request no live worker's
   * version would take is an error rather than a run queued for ever.
   */
  store?: PostgresStore | null;
  /** As given to the workers (default 5 000): a worker silent this long is not alive. */
  deadAfterMs?: number;
}

/**
 * Enqueue and read runs without driving them.
 * @example
 * const { workflowId } = await client.enqueue({ goal: 'Refund order O-7', runId: 'refund-O-7' });
 * const result = await client.result(workflowId);
 */
export interface LoopDbosClient<Output = unknown> {
  enqueue(input: RunInput & { runId: string }): Promise<{ runId: string; workflowId: string }>;
  enqueueResume(
    runId: string,
    options?: { approvals?: Readonly<Record<string, ApprovalInput>>; review?: ReviewInput; idempotencyKey?: string },
  ): Promise<{ runId: string; workflowId: string }>;
  /**
   * Hands a person's decisions to the run's waiter (`DBOS.send`), or to a new leg on the queue, as
   * `worker.approve` does. The client has no store to check them against first: the leg checks them
   * before anything changes, and `approve` throws its verdict as the typed `ApprovalError` (the run
   * still waits). A leg that has not judged them within 30 s (a busy queue) is returned unjudged.
   */
  approve(
    runId: string,
    approvals: Readonly<Record<string, ApprovalInput>>,
    options?: { idempotencyKey?: string },
  ): Promise<{ runId: string; workflowId: string }>;
  /**
   * Waits for the run's latest stop from any workflow of it (a run id, or a `workflowId` from
   * `enqueueResume` or `approve`), following a leg of the run queued or running now. A run continued
   * without DBOS (`loop.resume` or `loop.cancel` in another process) is not seen: the client has no
   * store; `worker.result` reads the store too.
   */
  result(workflowId: string): Promise<RunResult<Output>>;
  close(): Promise<void>;
}

/**
 * A DBOS client for the runs of `dbosWorker`s.
 * @example
 * const client = await dbosClient({ systemDatabaseUrl: process.env.DATABASE_URL! });
 * await client.enqueue({ goal: 'Refund order O-7', runId: 'refund-O-7' });
 */
export async function dbosClient<Output = unknown>(options: DbosClientOptions): Promise<LoopDbosClient<Output>> {
  if (typeof options?.systemDatabaseUrl !== 'string' || !/^postgres(ql)?:\/\//.test(options.systemDatabaseUrl)) {
    throw new LoopConfigError({ issues: [{ path: 'systemDatabaseUrl', message: 'expected a postgresql:// URL' }] });
  }
  const issues: { path: string; message: string }[] = [];
  for (const key of ['pollingIntervalMs', 'deadAfterMs'] as const) {
    const value = options[key];
    if (value !== undefined && !(Number.isInteger(value) && value > 0))
      issues.push({ path: key, message: 'expected a positive integer' });
  }
  if (options.store != null && typeof options.store.liveWorkers !== 'function')
    issues.push({ path: 'store', message: 'expected a postgresStore({ connectionString }), or null' });
  if (issues.length > 0) throw new LoopConfigError({ issues });
  const { DBOSClient: Client } = loadDbos() as { DBOSClient: typeof DBOSClient };
  const client = await Client.create({
    systemDatabaseUrl: options.systemDatabaseUrl,
    applicationName: options.applicationName ?? DEFAULT_DBOS_WORKER.applicationName,
  });
  const appVersion = machineVersion(options.version);
  const queueName = options.queueName ?? DEFAULT_DBOS_WORKER.queueName;
  const pollingIntervalMs = options.pollingIntervalMs ?? DEFAULT_DBOS_WORKER.pollingIntervalMs;
  const ownStore = options.store === undefined ? postgresStore({ connectionString: options.systemDatabaseUrl }) : null;
  const store = options.store ?? ownStore;
  const presence =
    store === null
      ? async () => undefined
      : workerPresence(store, appVersion, options.deadAfterMs ?? DEFAULT_DBOS_WORKER.deadAfterMs);
  const start = async ({ workflowId, request }: { workflowId: string; request: LegRequest }) => {
    await presence(`enqueue ${workflowId}`, false);
    await client.enqueue({ queueName, workflowName: RUN_WORKFLOW_NAME, workflowID: workflowId, appVersion }, request);
    return { runId: request.runId, workflowId };
  };
  const port = chainPort(
    {
      output: (workflowId) => client.retrieveWorkflow(workflowId).getResult({ pollingIntervalMs }),
      status: (workflowId) => client.getWorkflow(workflowId),
      listWorkflows: (input) => client.listWorkflows(input),
      listWorkflowSteps: (workflowId) => client.listWorkflowSteps(workflowId),
      send: (workflowId, message, topic, idempotencyKey) => client.send(workflowId, message, topic, idempotencyKey),
    },
    (runId, approvals, idempotencyKey) => start(resumeRequest(runId, { approvals, idempotencyKey })),
  );
  return {
    enqueue: async (input) => start(runRequest(input)),
    enqueueResume: async (runId, resumeOptions) => start(resumeRequest(runId, resumeOptions)),
    approve: async (runId, approvals, approveOptions = {}) => {
      await presence(`approve ${runId}`, true);
      return handOverDecisions(
        port,
        runId,
        { ...approvals },
        { ...approveOptions, takeTimeoutMs: 30_000, pollMs: pollingIntervalMs },
      );
    },
    result: async (workflowId) => {
      // Queued for a version no live worker runs, it would wait for ever: said now instead.
      if ((await client.getWorkflow(workflowId))?.status === 'ENQUEUED') await presence(`result ${workflowId}`, false);
      return (await followRun(port, workflowId)) as RunResult<Output>;
    },
    close: async () => {
      await client.destroy();
      await ownStore?.close();
    },
  };
}
