/**
 * Distributed runs with real processes: two DBOS workers share one queue on a throwaway Postgres.
 * One is SIGKILLed mid-run; the other's reaper puts the run back on the queue, it is finished there,
 * and the side-effect log proves nothing completed ran twice. A scripted run gives the same result
 * through the workers as in the embedded mode, and a lone worker restarted under its executor id
 * recovers its own run.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dbosClient, memoryStore, type LoopDbosClient, type RunResult } from '../../src/index.js';
import { buildCrashChild, removeCrashChild } from '../durable/crash-harness.js';
import { testPostgres, type TestPostgres } from '../support/test-postgres.js';
import { refundLoop } from './fixtures/refund-loop.js';

const entry = join('..', 'dbos', 'fixtures', 'dbos-worker-child.ts');
const scratch = mkdtempSync(join(tmpdir(), 'loopstate-dbos-'));
let script: string;
let server: TestPostgres;
let client: LoopDbosClient;
const workers: ChildProcess[] = [];

beforeAll(async () => {
  [script, server] = await Promise.all([buildCrashChild(entry), testPostgres()]);
  client = await dbosClient({ systemDatabaseUrl: server.url, version: 'refund-test' });
}, 120_000);
afterAll(async () => {
  await Promise.all(workers.map(stopWorker));
  await client?.close();
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
  const child = spawn(process.execPath, [script, server.url, log, executorId], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  workers.push(child);
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) => child.on('exit', (code, signal) => resolve(signal ?? code)));
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('ready')) resolve({ process: child, stderr: () => stderr, exited });
    });
    void exited.then((how) => reject(new Error(`worker ${executorId} exited (${String(how)}) before it was ready: ${stderr}`)));
  });
}

async function stopWorker(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.on('exit', resolve));
  child.kill('SIGTERM');
  await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5_000))]);
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}

const lines = (log: string) => readFileSync(log, 'utf8').split('\n').filter(Boolean);
const count = (log: string, prefix: string) => lines(log).filter((line) => line.startsWith(prefix)).length;

/** Enqueues the run, approves the refund it stops for, returns both results. */
async function runThroughWorkers(runId: string): Promise<{ stopped: RunResult; done: RunResult }> {
  const { workflowId } = await client.enqueue({ goal: 'Refund order O-7 after the fee', runId });
  const stopped = await client.result(workflowId);
  expect(stopped.stopReason, stopped.detail).toBe('needs_human');
  const approval = await client.enqueueResume(runId, { approvals: { [stopped.pendingApprovals[0]!.callId]: { approve: true } } });
  return { stopped, done: await client.result(approval.workflowId) };
}

/** What must not depend on where a run ran (not its timings or trace). */
const comparable = (result: RunResult) => ({
  status: result.status, stopReason: result.stopReason, detail: result.detail, output: result.output, rawOutput: result.rawOutput,
  usage: result.usage, steps: result.steps, messages: result.messages, pendingApprovals: result.pendingApprovals.map(({ callId, tool, args, argumentsHash }) => ({ callId, tool, args, argumentsHash })),
});

describe('DBOS workers sharing a queue', () => {
  it('a worker SIGKILLed right after a non-idempotent effect: the other worker finishes the run, nothing completed runs twice', async () => {
    const log = join(scratch, 'kill.log');
    const [a, b] = await Promise.all([startWorker(log, 'worker-a', { KILL_AT: 'effect:charge_fee' }), startWorker(log, 'worker-b', { KILL_AT: 'effect:charge_fee' })]);
    const { done } = await runThroughWorkers('refund-crash');
    expect(done.stopReason).toBe('completed');
    expect(done.output).toEqual({ refunded: 'O-7' });
    const killed = lines(log).find((line) => line.startsWith('killed:'))?.slice('killed:'.length);
    expect(['worker-a', 'worker-b']).toContain(killed);
    const [victim, survivor] = killed === 'worker-a' ? [a, b] : [b, a];
    expect(await victim.exited, victim.stderr()).toBe('SIGKILL');
    expect(survivor.process.exitCode, survivor.stderr()).toBeNull();
    const survivorId = killed === 'worker-a' ? 'worker-b' : 'worker-a';
    // Model calls 1 and 2 were made by the survivor, after it recovered the run.
    expect(lines(log).filter((line) => line.startsWith('driver:')).slice(1)).toEqual([`driver:${survivorId}:model:1`, `driver:${survivorId}:model:2`]);
    for (const step of [0, 1, 2]) expect(count(log, `model:${step}`), `model call ${step}`).toBe(1);
    expect(count(log, 'effect:charge_fee:'), 'the fee is charged once (the outcome lookup found it)').toBe(1);
    expect(count(log, 'effect:refund:'), 'the refund runs once').toBe(1);
    await Promise.all(workers.map(stopWorker));
  }, 90_000);

  it('a scripted run gives the same results through the workers as in the embedded mode', async () => {
    const log = join(scratch, 'same.log');
    await Promise.all([startWorker(log, 'worker-c'), startWorker(log, 'worker-d')]);
    const distributed = await runThroughWorkers('refund-same');

    const embeddedLog = join(scratch, 'embedded.log');
    const loop = refundLoop({ store: memoryStore(), log: embeddedLog, driver: 'embedded' });
    const stopped = await loop.run({ goal: 'Refund order O-7 after the fee', runId: 'refund-same' });
    const done = await loop.resume('refund-same', { approvals: { [stopped.pendingApprovals[0]!.callId]: { approve: true } } });

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
    expect(lines(log).filter((line) => line.startsWith('driver:')).at(-1)).toBe('driver:worker-e:model:1');
  }, 90_000);
});
