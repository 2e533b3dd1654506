/**
 * Distributed runs on DBOS Transact: a run is a chain of DBOS workflows on a DBOS queue, so any worker
 * process of the same definition may take a leg; the driver's effects are journalled in a `postgresStore`
 * by the same durable layer as the embedded mode, so the machine, its results, its resume rules and its
 * exactly-once effects are the same, and DBOS recovers the workflow that drives them (see step-log.ts for
 * why an effect is not also a DBOS step). A leg hands over to a successor workflow after
 * `stepsPerWorkflow` effects; a run that stops for approval waits in a waiter workflow, off the queue, for
 * the decisions `approve` sends it. A slot freed by a finished leg takes the next queued run at once
 * (slot-wake.ts), not at the queue's next poll.
 *
 * DBOS 5.3 without its hosted Conductor recovers only a restarted worker's own runs, so each worker
 * has a stable executor id, heartbeats into the store, and reaps: the PENDING workflows of an executor
 * silent for `deadAfterMs` are put back on a queue for a live worker, and the leases its process held
 * are freed then, so the runs go on at once on any host (not after `durable.leaseMs`).
 */
import type { DBOS as DBOSType, WorkflowQueue } from '@dbos-inc/dbos-sdk';
import { LoopConfigError } from '../../contracts/errors.js';
import type { RunInput } from '../../engine/config/config.js';
import { durableRunsOf, type Loop } from '../../engine/loop.js';
import type { ApprovalInput, ReviewInput } from '../../engine/durable/durable-runs.js';
import { ApprovalError, ReviewError, RunAccessError, StoreRecordError } from '../../engine/durable/durable-errors.js';
import type { RunResult } from '../../engine/runtime/run-result.js';
import type { PostgresStore } from '../postgres/index.js';
import { DEFAULT_DBOS_WORKER } from '../../engine/constants.js';
import { driveLeg, resumeRequest, runRequest, type LegRequest } from './run-leg.js';
import { loadDbos, loadDbosInternals, loadQueueRunner } from './load-dbos.js';
import { wakeOnFreedSlot } from './slot-wake.js';
import { leaseOwnerPrefix } from '../../engine/durable/lease-owner.js';
import { machineVersion } from './machine-version.js';
import { LegHandoff, StepLog, type LegOutcome } from './step-log.js';
import {
  APPROVALS_TOPIC,
  approvedLegId,
  chainPort,
  followRun,
  handOverDecisions,
  isApprovalMessage,
  RUN_WORKFLOW_NAME,
  successorId,
  WAIT_WORKFLOW_NAME,
  waiterId,
  type LegOutput,
  type WaitOutput,
} from './workflow-chain.js';

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
  /** A worker silent this long is dead: its runs go back on the queue and its leases are freed (default 5 000). */
  deadAfterMs?: number;
  /**
   * How often the queue is polled for runs, in ms (default 20): the longest a run another process queued
   * waits for a free slot. A slot freed by a leg of this worker, and a run this worker queued, are
   * dispatched at once. Stored with the queue, so the workers of its latest version set it for all.
   */
  queuePollingIntervalMs?: number;
  /** How often `result` and `approve` look whether a workflow finished, in ms (default 20). */
  pollingIntervalMs?: number;
  /** How long `shutdown()` waits for the runs in flight to finish their current step and hand on, in ms (default 30 000). */
  drainTimeoutMs?: number;
  /** Effects one workflow runs before a successor workflow continues the run (default 200): bounds a workflow's length. */
  stepsPerWorkflow?: number;
  /** How long a run stopped for approval waits for `approve` in a waiter workflow, in ms (default 24 h); 0: no waiter, `approve` starts a new leg. */
  approvalWaitMs?: number;
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
   * Puts the continuation of a stopped run on the queue (with the person's `approvals` or `review`, or after
   * a crash); `idempotencyKey` makes a retried request continue it once. A run stopped for review has no
   * waiter: its decision goes this way.
   */
  enqueueResume(
    runId: string,
    options?: { approvals?: Readonly<Record<string, ApprovalInput>>; review?: ReviewInput; idempotencyKey?: string },
  ): Promise<{ runId: string; workflowId: string }>;
  /**
   * Hands a person's decisions on a run stopped for approval to it, in whichever process waits for them
   * (`DBOS.send` to its waiter), or to a new leg on the queue. Checked first as `loop.resume` checks
   * them: a decision that does not fit throws the same typed `ApprovalError`, and nothing is sent.
   * `idempotencyKey` (default: the decisions' hash) makes a retried request continue the run once.
   */
  approve(
    runId: string,
    approvals: Readonly<Record<string, ApprovalInput>>,
    options?: { idempotencyKey?: string },
  ): Promise<{ runId: string; workflowId: string }>;
  /** Waits for the run's latest leg to stop (following successors and decided approvals) and returns its result. */
  result(runId: string, workflowId?: string): Promise<RunResult<Output>>;
  /** One reaper pass now (it also runs every `heartbeatMs`): the ids of the workflows put back on the queue. */
  reap(): Promise<string[]>;
  /**
   * Drains: takes no new run, lets each run in flight finish its current step and hands it on to the
   * queue (up to `drainTimeoutMs`), stops DBOS, then marks this worker gone, so a live worker's reaper
   * takes what is left (a waiter, a step past the timeout) on its next pass, with this worker's leases freed.
   */
  shutdown(): Promise<void>;
}

let launched = false;

function checkOptions(options: DbosWorkerOptions): void {
  const issues: { path: string; message: string }[] = [];
  if (typeof options?.loop?.run !== 'function')
    issues.push({ path: 'loop', message: 'expected a loop from createLoop({ ..., store })' });
  if (typeof options?.store?.claimSilentExecutors !== 'function')
    issues.push({ path: 'store', message: 'expected a postgresStore({ connectionString })' });
  if (typeof options?.systemDatabaseUrl !== 'string' || !/^postgres(ql)?:\/\//.test(options.systemDatabaseUrl))
    issues.push({ path: 'systemDatabaseUrl', message: 'expected a postgresql:// URL' });
  if (typeof options?.executorId !== 'string' || !/^[A-Za-z0-9._:-]{1,100}$/.test(options.executorId))
    issues.push({ path: 'executorId', message: 'expected a stable id of letters, digits, . _ : -' });
  for (const key of [
    'workerConcurrency',
    'globalConcurrency',
    'heartbeatMs',
    'deadAfterMs',
    'stepsPerWorkflow',
    'queuePollingIntervalMs',
    'pollingIntervalMs',
  ] as const) {
    const value = options?.[key];
    if (value !== undefined && !(Number.isInteger(value) && value > 0))
      issues.push({ path: key, message: 'expected a positive integer' });
  }
  const drain = options?.drainTimeoutMs;
  if (drain !== undefined && !(Number.isInteger(drain) && drain >= 0))
    issues.push({ path: 'drainTimeoutMs', message: 'expected a whole number of ms, 0 or more' });
  const wait = options?.approvalWaitMs;
  if (wait !== undefined && !(Number.isInteger(wait) && wait >= 0))
    issues.push({ path: 'approvalWaitMs', message: 'expected a whole number of ms, 0 or more (0: no waiter)' });
  if (typeof options?.loop?.run === 'function' && durableRunsOf(options.loop) === undefined)
    issues.push({ path: 'loop', message: 'expected a loop with a store: createLoop({ ..., store })' });
  if (
    (options?.deadAfterMs ?? DEFAULT_DBOS_WORKER.deadAfterMs) <=
    (options?.heartbeatMs ?? DEFAULT_DBOS_WORKER.heartbeatMs) * 2
  )
    issues.push({
      path: 'deadAfterMs',
      message: 'expected more than two heartbeats, so a live worker is never reaped',
    });
  if (issues.length > 0) throw new LoopConfigError({ issues });
}

/** Legs ended by a store error in a row before the run's workflow gives up (as ERROR; `loop.resume` still continues it). */
const LEG_RETRIES = 5;
const LEG_RETRY_BASE_MS = 1_000;

/** A waiter looks at its run this often (a DBOS durable wait each time, so a few rows an hour). */
const WAIT_LOOK_EVERY_MS = 5 * 60_000;

/** A little more than DBOS's queue reconcile interval (`WFQueueRunner.reconcileIntervalMs`, 1 s). */
const QUEUE_RECONCILE_MS = 1_100;

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
  if (launched)
    throw new LoopConfigError({
      issues: [
        { path: 'dbosWorker', message: 'one DBOS worker per process: DBOS is process-wide; shut the other down first' },
      ],
    });
  const { DBOS } = loadDbos() as { DBOS: typeof DBOSType };
  const { loop, store, executorId } = options;
  const queueName = options.queueName ?? DEFAULT_DBOS_WORKER.queueName;
  const heartbeatMs = options.heartbeatMs ?? DEFAULT_DBOS_WORKER.heartbeatMs;
  const deadAfterMs = options.deadAfterMs ?? DEFAULT_DBOS_WORKER.deadAfterMs;
  const applicationVersion = machineVersion(options.version);
  const pollingIntervalMs = options.pollingIntervalMs ?? DEFAULT_DBOS_WORKER.pollingIntervalMs;
  const drainTimeoutMs = options.drainTimeoutMs ?? DEFAULT_DBOS_WORKER.drainTimeoutMs;
  let draining = false;
  /** The legs this process drives now: `shutdown` waits for them to hand on. */
  const inFlight = new Set<Promise<unknown>>();

  const runs = durableRunsOf(loop)!;
  const stepsPerWorkflow = options.stepsPerWorkflow ?? DEFAULT_DBOS_WORKER.stepsPerWorkflow;
  const approvalWaitMs = options.approvalWaitMs ?? DEFAULT_DBOS_WORKER.approvalWaitMs;

  // A leg: drive the run to its next stop (or `stepsPerWorkflow` effects), its effects journalled.
  const legWorkflow = DBOS.registerWorkflow(
    async (request: LegRequest): Promise<LegOutput> => {
      const self = DBOS.workflowID as string;
      const log = new StepLog(DBOS, stepsPerWorkflow, () => draining);
      let outcome: LegOutcome | null = await log.enter();
      if (outcome === null) {
        const driven = driveRecorded(log, request);
        inFlight.add(driven);
        try {
          outcome = await log.end(await driven);
        } finally {
          inFlight.delete(driven);
        }
      }
      if (outcome.kind === 'handoff') {
        const part = (request.part ?? 1) + 1;
        const next = successorId(self, part);
        const failures = outcome.failure === undefined ? 0 : (request.failures ?? 0) + 1;
        if (failures > 0) {
          DBOS.logger.warn(
            `loopstate: run ${request.runId}'s leg ${self} failed (${outcome.failure}); ${next} takes it up from the journal`,
          );
          // A store that is down for a moment: the next leg waits, longer each time (durably).
          await DBOS.sleep(LEG_RETRY_BASE_MS * 2 ** (failures - 1));
        }
        // After a failure the successor is asked what this leg was (a new run's input, a person's decisions
        // that may not have been applied): it finds out from the journal how far this leg got.
        // A review decision goes on bound to the stop it was checked against: the run may stop again before.
        const bound: LegRequest =
          request.kind === 'resume' && request.review !== undefined && outcome.reviewId !== undefined
            ? { ...request, review: { ...request.review, reviewId: outcome.reviewId } }
            : request;
        const successor: LegRequest =
          failures > 0 ? { ...bound, part, failures } : { kind: 'resume', runId: request.runId, part };
        await DBOS.startWorkflow(legWorkflow, { workflowID: next, queueName })(successor);
        return { kind: 'continued', workflowId: next };
      }
      const { result } = outcome;
      const waits =
        approvalWaitMs > 0 &&
        result !== null &&
        result.stopReason === 'needs_human' &&
        result.pendingApprovals.length > 0;
      // Off the queue: a run waiting days for a person holds none of the queue's concurrency.
      const waiter = waiterId(self);
      if (waits)
        await DBOS.startWorkflow(waitWorkflow, { workflowID: waiter })({
          runId: request.runId,
          waitMs: approvalWaitMs,
        });
      if (outcome.kind === 'refused')
        return {
          kind: 'refused',
          code: outcome.code,
          message: outcome.message,
          result,
          ...(waits ? { waitingIn: waiter } : {}),
        };
      return { kind: 'stopped', result: outcome.result, ...(waits ? { waitingIn: waiter } : {}) };
    },
    { name: RUN_WORKFLOW_NAME },
  );

  /**
   * The leg's work, from its first fresh step: decisions checked (and the verdict recorded) before
   * anything changes, then the run driven to its next stop or to the handoff.
   */
  async function driveRecorded(log: StepLog, given: LegRequest): Promise<LegOutcome> {
    let request = given;
    let reviewId: string | undefined;
    if (request.kind === 'resume' && (request.approvals !== undefined || request.review !== undefined)) {
      const { runId, approvals, review } = request;
      const verdict = await log.verdict(async () => {
        if (approvals !== undefined) await runs.checkDecisions(runId, approvals);
        return review === undefined ? null : (await runs.checkReviewDecision(runId, review)).reviewId;
      });
      // The same decisions taken already (a retried request) are accepted and the leg goes on as the run does.
      if (!verdict.accepted) {
        return {
          kind: 'refused',
          code: verdict.code,
          message: verdict.message,
          result: await runs.latestResult(runId),
        };
      }
      // A review decision is bound to the stop the verdict checked it against (a re-entered leg takes the
      // verdict it drained): applied once, or answered with the result, never applied to a later stop.
      reviewId = verdict.reviewId;
      if (review !== undefined && reviewId !== undefined) request = { ...request, review: { ...review, reviewId } };
    }
    const onto = reviewId === undefined ? {} : { reviewId };
    try {
      return { kind: 'stopped', result: await driveLeg(loop, runs, request, { effectStep: log.effect }) };
    } catch (error) {
      if (error instanceof LegHandoff) return { kind: 'handoff', effects: error.effects, ...onto };
      // A store error (a lost connection, a lease another process took, a run still busy): everything
      // done so far is in the journal, so a successor takes the run up again, a few times at most.
      // A corrupt record or another loop's run is not something a retry mends.
      const mendable =
        !(error instanceof StoreRecordError) &&
        !(error instanceof RunAccessError && error.code !== 'run_busy') &&
        !(error instanceof LoopConfigError) &&
        !(error instanceof ApprovalError) &&
        !(error instanceof ReviewError);
      if (!mendable || (request.failures ?? 0) >= LEG_RETRIES) throw error;
      return {
        kind: 'handoff',
        effects: 0,
        failure: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
        ...onto,
      };
    }
  }

  // A waiter: receives the decisions (DBOS.recv), continues the run in a new leg, ends. It looks at the
  // run now and then, and ends early once the run was continued or cancelled elsewhere.
  const waitWorkflow = DBOS.registerWorkflow(
    async ({ runId, waitMs }: { runId: string; waitMs: number }): Promise<WaitOutput> => {
      const self = DBOS.workflowID as string;
      const until = await DBOS.runStep(async () => Date.now() + waitMs, { name: 'loopstate.wait-until' });
      for (;;) {
        const now = await DBOS.runStep(async () => Date.now(), { name: 'loopstate.now' });
        if (now >= until) return { kind: 'ended', reason: 'expired' };
        const message = await DBOS.recv<unknown>(APPROVALS_TOPIC, {
          timeoutSeconds: Math.max(1, Math.ceil(Math.min(until - now, WAIT_LOOK_EVERY_MS) / 1_000)),
        });
        if (isApprovalMessage(message)) {
          const next = approvedLegId(self, message.key);
          await DBOS.startWorkflow(legWorkflow, { workflowID: next, queueName })({
            kind: 'resume',
            runId,
            approvals: message.approvals,
          });
          return { kind: 'continued', workflowId: next };
        }
        if (message !== null)
          DBOS.logger.warn(`loopstate: run ${runId}'s waiter ignored a message that is not { approvals, key }`);
        const state = await DBOS.runStep(() => runs.state(runId), { name: 'loopstate.run-state' });
        if (state !== 'waiting') return { kind: 'ended', reason: 'not_waiting' };
      }
    },
    { name: WAIT_WORKFLOW_NAME },
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
  const about = { applicationVersion, leasePrefix: leaseOwnerPrefix() };
  await store.heartbeat(executorId, Date.now(), about);
  // And while it launches (migrations, recovery, the queue's first reading take seconds): a launching
  // worker is alive, neither reaped nor reported as no live worker.
  const launching = setInterval(
    () => void store.heartbeat(executorId, Date.now(), about).catch(() => undefined),
    heartbeatMs,
  );
  let queue: WorkflowQueue;
  try {
    await DBOS.launch();
    queue = await DBOS.registerQueue(queueName, {
      workerConcurrency: options.workerConcurrency ?? DEFAULT_DBOS_WORKER.workerConcurrency,
      minPollingIntervalMs: options.queuePollingIntervalMs ?? DEFAULT_DBOS_WORKER.queuePollingIntervalMs,
      ...(options.globalConcurrency === undefined ? {} : { globalConcurrency: options.globalConcurrency }),
    });
    // DBOS 5.3's dispatcher reads the queues' rows at launch and then once a second: a queue registered
    // (or re-configured) by this launch is dispatched, with these limits, only from its next reading.
    // Ready before that, a worker would take a burst of runs with the old limits, or none for a second.
    await new Promise((resolve) => setTimeout(resolve, QUEUE_RECONCILE_MS));
  } catch (error) {
    // A failed launch leaves DBOS's background work running (the process never exits) unless shut down.
    await DBOS.shutdown().catch(() => undefined);
    throw error;
  } finally {
    clearInterval(launching);
  }
  await store.heartbeat(executorId, Date.now(), about);
  launched = true;
  // A leg that ends, a run this worker queues, a dead worker's runs put back: the queue is polled now.
  const slots = wakeOnFreedSlot(queue, loadDbosInternals(), (error: unknown) =>
    DBOS.logger.warn(
      `loopstate: polling queue ${queueName} for a freed slot failed (${String(error)}); its next poll retries`,
    ),
  );
  if (!slots.active)
    DBOS.logger.warn(
      `loopstate: this DBOS has no queue runner to wake; a freed slot waits for queue ${queueName}'s next poll (queuePollingIntervalMs)`,
    );

  // Since when this worker's own heartbeats have gone through: after an outage (the database restarted)
  // every worker was silent, and none is judged dead until the survivors have been heard again for
  // `deadAfterMs` themselves.
  let heardSince = Date.now();
  let lastHeard = heardSince;
  let passes = 0;
  const warnedVersions = new Set<string>();
  // Runs queued for a version no live worker runs would wait for ever in silence: say so (once a version).
  const warnStranded = async (now: number) => {
    const queued = await DBOS.listWorkflows({
      status: 'ENQUEUED',
      queueName,
      workflowName: RUN_WORKFLOW_NAME,
      endTime: new Date(now - deadAfterMs).toISOString(),
      limit: 100,
      loadInput: false,
    });
    const live = new Set((await store.liveWorkers(now - deadAfterMs)).map((row) => row.applicationVersion));
    for (const workflow of queued) {
      const version = workflow.applicationVersion;
      if (version === undefined || live.has(version) || warnedVersions.has(version)) continue;
      warnedVersions.add(version);
      DBOS.logger.warn(
        `loopstate: ${workflow.workflowID} (and maybe more runs) waits on queue ${queueName} for version ${version}, which no live worker runs (this one runs ${applicationVersion}); start a worker of that version, or enqueue with this one`,
      );
    }
  };
  const reap = async (): Promise<string[]> => {
    const now = Date.now();
    try {
      await store.heartbeat(executorId, now, about);
    } catch (error) {
      heardSince = Number.POSITIVE_INFINITY;
      throw error;
    }
    if (now - lastHeard > heartbeatMs * 2 || heardSince === Number.POSITIVE_INFINITY) heardSince = now;
    lastHeard = now;
    if (now - heardSince < deadAfterMs) return [];
    if (++passes % 10 === 0) await warnStranded(now);
    const dead = await store.claimSilentExecutors(now - deadAfterMs, executorId, now);
    if (dead.length === 0) return [];
    // Their leases first: the legs resumed below take their runs at once, on this host or any other.
    await store.releaseLeasesOf(dead, executorId);
    const pending = await DBOS.listWorkflows({
      status: 'PENDING',
      executorId: dead,
      workflowName: [RUN_WORKFLOW_NAME, WAIT_WORKFLOW_NAME],
    });
    // Legs go back on the runs' queue; waiters on DBOS's internal one, which has no concurrency limit.
    // Only this deployment's: legs of its queue, waiters of its version (another one may share the database).
    const legs = pending
      .filter((workflow) => workflow.workflowName === RUN_WORKFLOW_NAME && workflow.queueName === queueName)
      .map((workflow) => workflow.workflowID);
    const waiters = pending
      .filter(
        (workflow) =>
          workflow.workflowName === WAIT_WORKFLOW_NAME && workflow.applicationVersion === applicationVersion,
      )
      .map((workflow) => workflow.workflowID);
    if (legs.length > 0) {
      await DBOS.resumeWorkflows(legs, { queueName });
      slots.wake();
    }
    if (waiters.length > 0) await DBOS.resumeWorkflows(waiters);
    // Only now: a reaper that dies before this line leaves its claim to expire and another reaper to redo it.
    await store.releaseExecutors(dead, executorId);
    return [...legs, ...waiters];
  };
  let reaping: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    reaping = reaping.then(reap).catch((error: unknown) => DBOS.logger.warn(`loopstate reaper: ${String(error)}`));
  }, heartbeatMs);
  const queueRunner = loadQueueRunner();
  timer.unref();

  const start = async ({ workflowId, request }: { workflowId: string; request: LegRequest }) => {
    await DBOS.startWorkflow(legWorkflow, { workflowID: workflowId, queueName: queue.name })(request);
    slots.wake();
    return { runId: request.runId, workflowId };
  };
  const port = chainPort(
    {
      output: (workflowId) => DBOS.retrieveWorkflow(workflowId).getResult({ pollingIntervalMs }),
      status: (workflowId) => DBOS.getWorkflowStatus(workflowId),
      listWorkflows: (input) => DBOS.listWorkflows(input),
      listWorkflowSteps: (workflowId) => DBOS.listWorkflowSteps(workflowId),
      send: (workflowId, message, topic, idempotencyKey) => DBOS.send(workflowId, message, topic, idempotencyKey),
    },
    (runId, approvals, idempotencyKey) => start(resumeRequest(runId, { approvals, idempotencyKey })),
  );
  return {
    executorId,
    applicationVersion,
    enqueue: async (input) => start(runRequest(input)),
    enqueueResume: async (runId, resumeOptions) => start(resumeRequest(runId, resumeOptions)),
    approve: async (runId, approvals, approveOptions = {}) => {
      await runs.checkDecisions(runId, approvals);
      return handOverDecisions(
        port,
        runId,
        { ...approvals },
        { ...approveOptions, takeTimeoutMs: deadAfterMs * 3, pollMs: pollingIntervalMs },
      );
    },
    result: async (runId, workflowId) =>
      (await followRun(port, workflowId ?? runId, (id) => runs.latestResult(id))) as RunResult<Output>,
    reap: () => (reaping = reaping.then(reap)) as Promise<string[]>,
    shutdown: async () => {
      if (draining) return;
      draining = true;
      // No new leg from now on; the heartbeat goes on while the legs in flight hand on, so nobody reaps them.
      queueRunner?.stop();
      let timeout: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        Promise.allSettled([...inFlight]),
        new Promise((resolve) => (timeout = setTimeout(resolve, drainTimeoutMs))),
      ]);
      clearTimeout(timeout);
      clearInterval(timer);
      await reaping.catch(() => undefined);
      await DBOS.shutdown();
      slots.uninstall();
      launched = false;
      // What is left (waiters, a step past the timeout) is handed on by the next live reaper, at once.
      await store.retire(executorId).catch((error: unknown) => DBOS.logger.warn(`loopstate: ${String(error)}`));
    },
  };
}
