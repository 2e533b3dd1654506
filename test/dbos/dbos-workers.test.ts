/**
 * Distributed runs with real processes: two DBOS workers share one queue on a throwaway Postgres.
 * One is SIGKILLed mid-run; the other's reaper puts the run back on the queue, it is finished there,
 * and the side-effect log proves nothing completed ran twice. A scripted run gives the same result
 * through the workers as in the embedded mode, and a lone worker restarted under its executor id
 * recovers its own run.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DBOSClient } from '@dbos-inc/dbos-sdk';
import { memoryStore, readTenantLedger, type RunResult } from 'loopstate';
import { dbosClient, type LoopDbosClient } from 'loopstate/dbos';
import { postgresStore, type PostgresStore } from 'loopstate/postgres';
import { buildCrashChild, removeCrashChild } from '../durable/crash-harness.js';
import { testPostgres, type TestPostgres } from '../support/test-postgres.js';
import { countLines as count, logLines as lines, stopWorker, until } from './worker-processes.js';
import { refundLoop } from './fixtures/refund-loop.js';
import { TENANT_CALL_COST } from './fixtures/tenant-loop.js';

const entry = join('..', 'dbos', 'fixtures', 'dbos-worker-child.ts');
const scratch = mkdtempSync(join(tmpdir(), 'loopstate-dbos-'));
let script: string;
let server: TestPostgres;
let client: LoopDbosClient;
let steps: DBOSClient;
let store: PostgresStore;
const workers: ChildProcess[] = [];

beforeAll(async () => {
  [script, server] = await Promise.all([buildCrashChild(entry), testPostgres()]);
  client = await dbosClient({ systemDatabaseUrl: server.url, version: 'refund-test', pollingIntervalMs: 50 });
  steps = await DBOSClient.create({ systemDatabaseUrl: server.url });
  store = postgresStore({ connectionString: server.url });
}, 120_000);
// Every test starts its own workers: one left running would take the next test's runs.
afterEach(() => Promise.all(workers.map(stopWorker)), 30_000);
afterAll(async () => {
  await Promise.all(workers.map(stopWorker));
  await client?.close();
  await steps?.destroy();
  await store?.close();
  await server?.stop();
  removeCrashChild(entry);
  rmSync(scratch, { recursive: true, force: true });
}, 60_000);

interface Worker {
  process: ChildProcess;
  stderr: () => string;
  exited: Promise<NodeJS.Signals | number | null>;
}

function startWorker(log: string, executorId: string, env: Record<string, string> = {}): Promise<Worker> {
  const child = spawn(process.execPath, [script, server.url, log, executorId], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  workers.push(child);
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) =>
    child.on('exit', (code, signal) => resolve(signal ?? code)),
  );
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('ready')) resolve({ process: child, stderr: () => stderr, exited });
    });
    void exited.then((how) =>
      reject(new Error(`worker ${executorId} exited (${String(how)}) before it was ready: ${stderr}`)),
    );
  });
}

/** Enqueues the run, approves the refund it stops for, returns both results. */
async function runThroughWorkers(
  runId: string,
  approve: (runId: string, approvals: Record<string, { approve: true }>) => Promise<{ workflowId: string }> = (
    id,
    approvals,
  ) => client.enqueueResume(id, { approvals }),
): Promise<{ stopped: RunResult; done: RunResult }> {
  const { workflowId } = await client.enqueue({ goal: 'Refund order O-7 after the fee', runId });
  const stopped = await client.result(workflowId);
  expect(stopped.stopReason, stopped.detail).toBe('needs_human');
  const approval = await approve(runId, { [stopped.pendingApprovals[0]!.callId]: { approve: true } });
  return { stopped, done: await client.result(approval.workflowId) };
}

/** What must not depend on where a run ran (not its timings or trace). */
const comparable = (result: RunResult) => ({
  status: result.status,
  stopReason: result.stopReason,
  detail: result.detail,
  output: result.output,
  rawOutput: result.rawOutput,
  usage: result.usage,
  steps: result.steps,
  messages: result.messages,
  pendingApprovals: result.pendingApprovals.map(({ callId, tool, args, argumentsHash }) => ({
    callId,
    tool,
    args,
    argumentsHash,
  })),
});

describe('DBOS workers sharing a queue', () => {
  it('a worker SIGKILLed right after a non-idempotent effect: the other worker finishes the run, nothing completed runs twice', async () => {
    const log = join(scratch, 'kill.log');
    const [a, b] = await Promise.all([
      startWorker(log, 'worker-a', { KILL_AT: 'effect:charge_fee' }),
      startWorker(log, 'worker-b', { KILL_AT: 'effect:charge_fee' }),
    ]);
    const { done } = await runThroughWorkers('refund-crash');
    expect(done.stopReason).toBe('completed');
    expect(done.output).toEqual({ refunded: 'O-7' });
    const killed = lines(log)
      .find((line) => line.startsWith('killed:'))
      ?.slice('killed:'.length);
    expect(['worker-a', 'worker-b']).toContain(killed);
    const [victim, survivor] = killed === 'worker-a' ? [a, b] : [b, a];
    expect(await victim.exited, victim.stderr()).toBe('SIGKILL');
    expect(survivor.process.exitCode, survivor.stderr()).toBeNull();
    const survivorId = killed === 'worker-a' ? 'worker-b' : 'worker-a';
    // Model calls 1 and 2 were made by the survivor, after it recovered the run.
    expect(
      lines(log)
        .filter((line) => line.startsWith('driver:'))
        .slice(1),
    ).toEqual([`driver:${survivorId}:model:1`, `driver:${survivorId}:model:2`]);
    for (const step of [0, 1, 2]) expect(count(log, `model:${step}`), `model call ${step}`).toBe(1);
    expect(count(log, 'effect:charge_fee:'), 'the fee is charged once (the outcome lookup found it)').toBe(1);
    expect(count(log, 'effect:refund:'), 'the refund runs once').toBe(1);
    await Promise.all(workers.map(stopWorker));
  }, 90_000);

  // Effects are journalled, not DBOS steps: a kill right after each side effect, before its outcome is
  // journalled, leaves the survivor only the journal to go by.
  it.each([
    ['model:0', 'the first model call'],
    ['model:1', 'a model call after the tool round'],
    ['effect:refund:', 'the refund a person approved (no outcome lookup)'],
    ['model:2', 'the last model call'],
  ])(
    'a worker SIGKILLed right after %s (%s): the other worker takes the run on from the journal, no tool runs twice',
    async (killAt) => {
      const log = join(scratch, `kill-${killAt.replaceAll(':', '-')}.log`);
      await Promise.all([
        startWorker(log, 'worker-k1', { KILL_AT: killAt }),
        startWorker(log, 'worker-k2', { KILL_AT: killAt }),
      ]);
      const { done } = await runThroughWorkers(`refund-kill-${killAt.replaceAll(':', '-')}`);
      expect(lines(log).filter((line) => line.startsWith('killed:'))).toHaveLength(1);
      expect(count(log, 'effect:charge_fee:'), 'the fee is charged once').toBe(1);
      expect(count(log, 'effect:refund:'), 'the refund runs at most once').toBe(1);
      if (killAt.startsWith('model:')) {
        // A model call whose reply was lost with the worker is made again; the others once.
        for (const step of [0, 1, 2])
          expect(count(log, `model:${step}`), `model call ${step}`).toBe(`model:${step}` === killAt ? 2 : 1);
        expect(done.stopReason, done.detail).toBe('completed');
        expect(done.output).toEqual({ refunded: 'O-7' });
      } else {
        // The refund ran, but its outcome was lost and it cannot be looked up: the run stops for a person
        // (unknown_outcome) instead of refunding again, as the embedded mode does.
        expect(done.stopReason, done.detail).toBe('needs_human');
        expect(count(log, 'model:2')).toBe(0);
      }
      await Promise.all(workers.map(stopWorker));
    },
    90_000,
  );

  it('a scripted run gives the same results through the workers as in the embedded mode', async () => {
    const log = join(scratch, 'same.log');
    await Promise.all([startWorker(log, 'worker-c'), startWorker(log, 'worker-d')]);
    const distributed = await runThroughWorkers('refund-same');

    const embeddedLog = join(scratch, 'embedded.log');
    const loop = refundLoop({ store: memoryStore(), log: embeddedLog, driver: 'embedded' });
    const stopped = await loop.run({ goal: 'Refund order O-7 after the fee', runId: 'refund-same' });
    const done = await loop.resume('refund-same', {
      approvals: { [stopped.pendingApprovals[0]!.callId]: { approve: true } },
    });

    expect(comparable(distributed.stopped)).toEqual(comparable(stopped));
    expect(comparable(distributed.done)).toEqual(comparable(done));
    const effects = (file: string) => lines(file).filter((line) => !line.startsWith('driver:'));
    expect(effects(log)).toEqual(effects(embeddedLog));
    await Promise.all(workers.map(stopWorker));
  }, 90_000);

  it('a lone worker SIGKILLed mid-run and restarted with the same executor id recovers its own run', async () => {
    const log = join(scratch, 'restart.log');
    const first = await startWorker(log, 'worker-e', { KILL_AT: 'effect:charge_fee' });
    const { workflowId } = await client.enqueue({ goal: 'Refund order O-7 after the fee', runId: 'refund-restart' });
    expect(await first.exited, first.stderr()).toBe('SIGKILL');
    await startWorker(log, 'worker-e');
    const stopped = await client.result(workflowId);
    expect(stopped.stopReason, stopped.detail).toBe('needs_human');
    expect(count(log, 'model:0')).toBe(1);
    expect(count(log, 'effect:charge_fee:'), 'the fee is charged once').toBe(1);
    expect(
      lines(log)
        .filter((line) => line.startsWith('driver:'))
        .at(-1),
    ).toBe('driver:worker-e:model:1');
  }, 90_000);

  it('a worker SIGKILLed inside an effect of a successor workflow: the leg is entered again on the other worker, nothing completed runs twice', async () => {
    const log = join(scratch, 'successor-kill.log');
    const env = { KILL_AT: 'effect:charge_fee', STEPS_PER_WORKFLOW: '1' };
    await Promise.all([startWorker(log, 'worker-f', env), startWorker(log, 'worker-g', env)]);
    const { done } = await runThroughWorkers('refund-parts', (runId, approvals) => client.approve(runId, approvals));
    expect(done.stopReason, done.detail).toBe('completed');
    expect(done.output).toEqual({ refunded: 'O-7' });
    expect(lines(log).filter((line) => line.startsWith('killed:'))).toHaveLength(1);
    for (const step of [0, 1, 2]) expect(count(log, `model:${step}`), `model call ${step}`).toBe(1);
    expect(count(log, 'effect:charge_fee:'), 'the fee is charged once').toBe(1);
    expect(count(log, 'effect:refund:'), 'the refund runs once').toBe(1);
    // One effect a workflow: the tool round died in part 2; its recovery drained the step recorded
    // before (entered), marked where it came back, and ran the round there. Effects are journalled,
    // not DBOS steps: a leg records only where it was entered and how it ended.
    const kinds = async (workflowId: string) =>
      ((await steps.listWorkflowSteps(workflowId)) ?? [])
        .filter((step) => step.name === 'loopstate.step')
        .map((step) => {
          const output = step.output as { kind: string; effect?: string };
          return output.effect === undefined ? output.kind : `${output.kind}:${output.effect}`;
        });
    expect(await kinds('refund-parts')).toEqual(['entered', 'leg-end']);
    expect(await kinds('refund-parts/part/2')).toEqual(['entered', 'entered', 'leg-end']);
    expect(await kinds('refund-parts/part/3')).toEqual(['entered', 'leg-end']);
    await Promise.all(workers.map(stopWorker));
  }, 90_000);

  it('a worker SIGKILLed while its waiter waits for approval: the reaper moves the waiter to a live worker, which takes the decisions', async () => {
    const log = join(scratch, 'waiter-kill.log');
    const started = await Promise.all([startWorker(log, 'worker-n'), startWorker(log, 'worker-o')]);
    await client.enqueue({ goal: 'Refund order O-7 after the fee', runId: 'refund-waiter' });
    const stopped = await client.result('refund-waiter');
    expect(stopped.stopReason, stopped.detail).toBe('needs_human');
    const waiter = await steps.getWorkflow('refund-waiter/wait');
    expect(waiter?.status).toBe('PENDING');
    const host = started[waiter?.executorId === 'worker-n' ? 0 : 1]!;
    host.process.kill('SIGKILL');
    expect(await host.exited).toBe('SIGKILL');
    const { workflowId } = await client.approve('refund-waiter', {
      [stopped.pendingApprovals[0]!.callId]: { approve: true },
    });
    expect(workflowId).toMatch(/^refund-waiter\/wait\/approved\//);
    const done = await client.result('refund-waiter');
    expect(done.stopReason, done.detail).toBe('completed');
    expect((await steps.getWorkflow('refund-waiter/wait'))?.executorId, 'the waiter finished on the live worker').toBe(
      waiter?.executorId === 'worker-n' ? 'worker-o' : 'worker-n',
    );
    expect(count(log, 'effect:refund:'), 'the refund runs once').toBe(1);
    expect(count(log, 'effect:charge_fee:'), 'the fee is charged once').toBe(1);
  }, 90_000);

  it('loop.cancel from another process stops a run a worker drives, at its next step', async () => {
    const log = join(scratch, 'cancel.log');
    await Promise.all([
      startWorker(log, 'worker-h', { MODEL_DELAY_MS: '1500' }),
      startWorker(log, 'worker-i', { MODEL_DELAY_MS: '1500' }),
    ]);
    await client.enqueue({ goal: 'Refund order O-7 after the fee', runId: 'refund-cancel' });
    await until(async () => existsSync(log) && count(log, 'driver:') > 0, 'the first model call to start');
    const here = refundLoop({ store, log: join(scratch, 'cancel-here.log'), driver: 'test' });
    expect(await here.cancel('refund-cancel'), 'another process drives it: cancelled at its next step').toBeNull();
    const stopped = await client.result('refund-cancel');
    expect(stopped.stopReason, stopped.detail).toBe('cancelled');
    expect(stopped.detail).toContain('loop.cancel');
    expect(
      lines(log).filter((line) => line.includes(':model:')),
      'the call in flight finished; no other',
    ).toHaveLength(1);
    expect(count(log, 'effect:'), 'no tool ran after the cancel').toBe(0);
    await Promise.all(workers.map(stopWorker));
  }, 90_000);

  it('a store-wide pause holds every worker before its next step until lifted', async () => {
    const log = join(scratch, 'pause.log');
    await Promise.all([startWorker(log, 'worker-j'), startWorker(log, 'worker-k')]);
    await store.setPaused('incident 42: payments frozen');
    try {
      await client.enqueue({ goal: 'Refund order O-7 after the fee', runId: 'refund-paused-1' });
      await client.enqueue({ goal: 'Refund order O-7 after the fee', runId: 'refund-paused-2' });
      await until(
        async () =>
          (await store.readRun('refund-paused-1')) !== null && (await store.readRun('refund-paused-2')) !== null,
        'both runs to start',
      );
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect(existsSync(log) ? count(log, 'model:') : 0, 'no model call while paused').toBe(0);
    } finally {
      await store.setPaused(null);
    }
    const results = await Promise.all([client.result('refund-paused-1'), client.result('refund-paused-2')]);
    expect(results.map((result) => result.stopReason)).toEqual(['needs_human', 'needs_human']);
    expect(count(log, 'effect:charge_fee:')).toBe(2);
    await Promise.all(workers.map(stopWorker));
  }, 90_000);

  it('runs of one tenant on two workers draw from one ledger and overspend it by at most the calls in flight', async () => {
    const log = join(scratch, 'tenant.log');
    const env = { LOOP: 'tenant', RUN_LIMIT_USD: '0.006', TENANT_BUDGET_USD: '0.015', WORKER_CONCURRENCY: '2' };
    await Promise.all([startWorker(log, 'worker-l', env), startWorker(log, 'worker-m', env)]);
    const tenantClient = await dbosClient({
      systemDatabaseUrl: server.url,
      version: 'tenant-test',
      pollingIntervalMs: 50,
    });
    try {
      const ids = ['acme-1', 'acme-2', 'acme-3', 'acme-4'];
      await Promise.all(ids.map((runId) => tenantClient.enqueue({ goal: 'Look everything up', runId })));
      const results = await Promise.all(ids.map((runId) => tenantClient.result(runId)));
      for (const result of results) expect(result.stopReason, result.detail).toBe('budget_exhausted');
      const spent = results.reduce((sum, result) => sum + result.usage.costUsd, 0);
      expect(spent).toBeGreaterThanOrEqual(0.015 - 1e-9);
      // A run's last call may cross its share: at most one call a run beyond the tenant's budget.
      expect(spent).toBeLessThanOrEqual(0.015 + ids.length * TENANT_CALL_COST + 1e-9);
      const ledger = await readTenantLedger(store, 'acme');
      expect(ledger?.spent.costUsd).toBeCloseTo(spent, 9);
      expect(Object.keys(ledger?.holds ?? {}), 'every run gave its hold back').toEqual([]);
      const drivers = new Set(lines(log).map((line) => line.split(':')[1]));
      expect(drivers.size, 'both workers drove runs').toBe(2);
    } finally {
      await tenantClient.close();
    }
    await Promise.all(workers.map(stopWorker));
  }, 90_000);
});
