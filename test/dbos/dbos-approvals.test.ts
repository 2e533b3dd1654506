/**
 * A DBOS worker in this process (a service that drives runs and takes approvals): a leg records its
 * entry and its end as DBOS steps (its effects are journalled, not checkpointed), a leg hands over to a successor workflow after `stepsPerWorkflow` effects, and a run
 * stopped for approval waits in a waiter workflow that `approve` hands the decisions to through
 * `DBOS.send`/`DBOS.recv`, with the typed approval errors checked before anything is sent.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DBOSClient } from '@dbos-inc/dbos-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApprovalError, memoryStore, type RunResult } from 'loopstate';
import { dbosClient, dbosWorker, type DbosWorker, type LoopDbosClient } from 'loopstate/dbos';
import { postgresStore, type PostgresStore } from 'loopstate/postgres';
import { testPostgres, type TestPostgres } from '../support/test-postgres.js';
import { refundLoop } from './fixtures/refund-loop.js';

const scratch = mkdtempSync(join(tmpdir(), 'loopstate-dbos-approvals-'));
const log = join(scratch, 'effects.log');
const STEPS_PER_WORKFLOW = 2;
let server: TestPostgres;
let store: PostgresStore;
let worker: DbosWorker;
let client: LoopDbosClient;
let steps: DBOSClient;
/** The journal append (counted from when it is set) that fails once; 0: none. */
let failAppendNumber = 0;

beforeAll(async () => {
  server = await testPostgres();
  store = postgresStore({ connectionString: server.url });
  // The worker's store fails the journal appends a test asks it to (a connection lost for a moment).
  const flaky: PostgresStore = {
    ...store,
    append: (...args) => {
      if (failAppendNumber > 0 && --failAppendNumber === 0)
        return Promise.reject(new Error('Connection terminated unexpectedly'));
      return store.append(...args);
    },
  };
  const loop = refundLoop({ store: flaky, log, driver: 'in-process' });
  worker = await dbosWorker({
    loop,
    store: flaky,
    systemDatabaseUrl: server.url,
    executorId: 'in-process',
    version: 'approvals-test',
    stepsPerWorkflow: STEPS_PER_WORKFLOW,
  });
  client = await dbosClient({ systemDatabaseUrl: server.url, version: 'approvals-test', pollingIntervalMs: 50 });
  steps = await DBOSClient.create({ systemDatabaseUrl: server.url });
}, 120_000);
afterAll(async () => {
  await steps?.destroy();
  await client?.close();
  await worker?.shutdown();
  await store?.close();
  await server?.stop();
  rmSync(scratch, { recursive: true, force: true });
}, 60_000);

const GOAL = 'Refund order O-7 after the fee';
const lines = () => readFileSync(log, 'utf8').split('\n').filter(Boolean);
const outputs = (list: Awaited<ReturnType<DBOSClient['listWorkflowSteps']>>) =>
  (list ?? []).map((step) => ({ name: step.name, output: step.output }));

async function stoppedForApproval(runId: string): Promise<RunResult> {
  await worker.enqueue({ goal: GOAL, runId });
  const stopped = await worker.result(runId);
  expect(stopped.stopReason, stopped.detail).toBe('needs_human');
  expect(stopped.pendingApprovals.map(({ tool }) => tool)).toEqual(['refund']);
  return stopped;
}

async function embedded(runId: string): Promise<{ stopped: RunResult; done: RunResult }> {
  const loop = refundLoop({ store: memoryStore(), log: join(scratch, `${runId}.embedded.log`), driver: 'embedded' });
  const stopped = await loop.run({ goal: GOAL, runId });
  return {
    stopped,
    done: await loop.resume(runId, { approvals: { [stopped.pendingApprovals[0]!.callId]: { approve: true } } }),
  };
}

const comparable = (result: RunResult) => ({
  status: result.status,
  stopReason: result.stopReason,
  detail: result.detail,
  output: result.output,
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

describe('a DBOS worker in this process', () => {
  it('records a leg as two DBOS steps whatever its effects, and hands a long leg to successor workflows', async () => {
    const stopped = await stoppedForApproval('steps-1');
    // Effects: model, tools (lookup + fee), model; then the refund is held for approval. Two a workflow,
    // journalled: DBOS records only where the leg was entered and how it ended.
    const first = await steps.listWorkflowSteps('steps-1');
    expect(outputs(first)).toEqual([
      { name: 'loopstate.step', output: { kind: 'entered' } },
      { name: 'loopstate.step', output: { kind: 'leg-end', outcome: { kind: 'handoff', effects: 2 } } },
      // The successor, started as a child workflow.
      { name: 'loopstate.run', output: null },
    ]);
    expect(first?.[2]?.childWorkflowID).toBe('steps-1/part/2');
    const second = outputs(await steps.listWorkflowSteps('steps-1/part/2'));
    expect(
      second.filter((step) => step.name === 'loopstate.step').map((step) => (step.output as { kind: string }).kind),
    ).toEqual(['entered', 'leg-end']);
    expect((second[1]!.output as { outcome: { kind: string; result: RunResult } }).outcome.result.stopReason).toBe(
      'needs_human',
    );
    // What the two legs did is in the journal: the first leg's two effects, the second's one.
    expect(lines().filter((line) => line.startsWith('model:'))).toEqual(['model:0', 'model:1']);

    const same = await embedded('steps-1');
    expect(comparable(stopped)).toEqual(comparable(same.stopped));
    const continued = await worker.approve('steps-1', { [stopped.pendingApprovals[0]!.callId]: { approve: true } });
    expect(continued.workflowId).toMatch(/^steps-1\/part\/2\/wait\/approved\//);
    const done = await worker.result('steps-1');
    expect(comparable(done)).toEqual(comparable(same.done));
    expect(lines().filter((line) => line.startsWith('effect:refund:')).length).toBe(1);
  }, 60_000);

  it('hands decisions to the waiting run through DBOS.send, from a client too, and continues it once', async () => {
    const stopped = await stoppedForApproval('approve-client');
    const waiters = await steps.listWorkflows({
      workflow_id_prefix: 'approve-client',
      workflowName: 'loopstate.wait-for-approval',
      status: 'PENDING',
    });
    expect(waiters.map((waiter) => waiter.workflowID)).toEqual(['approve-client/part/2/wait']);
    const decisions = {
      [stopped.pendingApprovals[0]!.callId]: {
        approve: true as const,
        argumentsHash: stopped.pendingApprovals[0]!.argumentsHash,
      },
    };
    const { workflowId } = await client.approve('approve-client', decisions, { idempotencyKey: 'ticket-81' });
    expect(workflowId).toBe('approve-client/part/2/wait/approved/ticket-81');
    const done = await client.result('approve-client');
    expect(done.stopReason, done.detail).toBe('completed');
    expect(done.output).toEqual({ refunded: 'O-7' });
    // The waiter took the decisions from its queue of messages and ended.
    expect((await steps.getWorkflow('approve-client/part/2/wait'))?.status).toBe('SUCCESS');
    // A retried request (same key, no waiter any more): the same continuation, no new leg.
    const retried = await client.approve('approve-client', decisions, { idempotencyKey: 'ticket-81' });
    expect(retried.workflowId).toBe('approve-client/part/2/wait/approved/ticket-81');
    expect(
      await steps.getWorkflow('approve-client/resume/ticket-81'),
      'no leg was started for the retry',
    ).toBeUndefined();
    expect(comparable(await client.result(retried.workflowId))).toEqual(comparable(done));
    expect(lines().filter((line) => line.startsWith('effect:refund:') && line.includes('approve-client')).length).toBe(
      1,
    );
  }, 60_000);

  it('checks the decisions before handing them over: every typed approval error, and nothing sent', async () => {
    const stopped = await stoppedForApproval('approve-typed');
    const callId = stopped.pendingApprovals[0]!.callId;
    const code = (promise: Promise<unknown>) =>
      promise.then(
        () => 'accepted',
        (error: unknown) => (error instanceof ApprovalError ? error.code : `not an ApprovalError: ${String(error)}`),
      );
    expect(await code(worker.approve('approve-typed', { nope: { approve: true } }))).toBe('approval_unknown_call');
    expect(
      await code(worker.approve('approve-typed', { [callId]: { approve: true, argumentsHash: 'f'.repeat(64) } })),
    ).toBe('approval_arguments_changed');
    expect(await code(worker.approve('approve-typed', {}))).toBe('approvals_incomplete');
    await expect(worker.approve('approve-typed', { [callId]: { approve: false } as never })).rejects.toThrow(
      `approvals.${callId}.reason`,
    );
    // Nothing reached the waiter: it still waits, and the refund never ran.
    expect((await steps.getWorkflow('approve-typed/part/2/wait'))?.status).toBe('PENDING');
    expect(lines().some((line) => line.startsWith('effect:refund:') && line.includes('approve-typed'))).toBe(false);

    await worker.approve('approve-typed', { [callId]: { approve: false, reason: 'refunds need a manager' } });
    const done = await worker.result('approve-typed');
    expect(done.stopReason, done.detail).not.toBe('needs_human');
    expect(JSON.stringify(done.messages)).toContain('refunds need a manager');
    expect(lines().some((line) => line.startsWith('effect:refund:') && line.includes('approve-typed'))).toBe(false);
    expect(await code(worker.approve('approve-typed', { [callId]: { approve: true } }))).toBe(
      'approval_already_decided',
    );
  }, 60_000);

  it('reads the latest stop from the store when the run went on outside its chain (loop.cancel in this process while it waits)', async () => {
    await stoppedForApproval('cancel-waiting');
    const here = refundLoop({ store, log, driver: 'here' });
    const cancelled = await here.cancel('cancel-waiting');
    expect(cancelled?.stopReason).toBe('cancelled');
    // The waiter has not looked yet; the worker's result is the store's, not the stale stop.
    expect((await steps.getWorkflow('cancel-waiting/part/2/wait'))?.status).toBe('PENDING');
    expect((await worker.result('cancel-waiting')).stopReason).toBe('cancelled');
    const code = await worker.approve('cancel-waiting', { whatever: { approve: true } }).then(
      () => 'accepted',
      (error: unknown) => (error as ApprovalError).code,
    );
    expect(code).toBe('run_not_waiting');
  }, 60_000);

  it('two people deciding at once: one decision continues the run, the other is told it was not taken', async () => {
    const stopped = await stoppedForApproval('race-decide');
    const callId = stopped.pendingApprovals[0]!.callId;
    const outcomes = await Promise.allSettled([
      worker.approve('race-decide', { [callId]: { approve: true } }, { idempotencyKey: 'alice' }),
      worker.approve(
        'race-decide',
        { [callId]: { approve: false, reason: 'not without a receipt' } },
        { idempotencyKey: 'bob' },
      ),
    ]);
    const taken = outcomes.filter((outcome) => outcome.status === 'fulfilled');
    const refused = outcomes.filter((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected');
    expect(taken).toHaveLength(1);
    expect(refused).toHaveLength(1);
    expect(refused[0]!.reason).toBeInstanceOf(ApprovalError);
    expect((refused[0]!.reason as ApprovalError).code).toBe('approval_already_decided');
    const done = await worker.result('race-decide');
    const approved = outcomes[0]!.status === 'fulfilled';
    if (approved) expect(done.stopReason, done.detail).toBe('completed');
    else expect(JSON.stringify(done.messages), 'the model was told the rejection').toContain('not without a receipt');
    expect(lines().filter((line) => line.startsWith('effect:refund:') && line.includes('race-decide')).length).toBe(
      approved ? 1 : 0,
    );
  }, 60_000);

  it("a client's decision that does not fit: the leg refuses it before anything changes, approve throws the typed error, the run still waits", async () => {
    const stopped = await stoppedForApproval('client-bad');
    const code = await client.approve('client-bad', { nope: { approve: true } }).then(
      () => 'accepted',
      (error: unknown) => (error instanceof ApprovalError ? error.code : `not an ApprovalError: ${String(error)}`),
    );
    expect(code).toBe('approval_unknown_call');
    // The refused leg started a new waiter; result still reports the stop the run waits at.
    const still = await client.result('client-bad');
    expect(still.stopReason).toBe('needs_human');
    expect(still.pendingApprovals.map(({ callId }) => callId)).toEqual([stopped.pendingApprovals[0]!.callId]);
    await client.approve('client-bad', { [stopped.pendingApprovals[0]!.callId]: { approve: true } });
    expect((await client.result('client-bad')).stopReason).toBe('completed');
    expect((await worker.result('client-bad')).stopReason).toBe('completed');
  }, 60_000);

  it('result(runId) right after enqueueResume waits for the leg it queued, not the stop before it', async () => {
    const stopped = await stoppedForApproval('queued-resume');
    await client.enqueueResume('queued-resume', {
      approvals: { [stopped.pendingApprovals[0]!.callId]: { approve: true } },
    });
    expect((await client.result('queued-resume')).stopReason).toBe('completed');
    expect((await worker.result('queued-resume')).stopReason).toBe('completed');
  }, 60_000);

  it('refuses run ids and keys with "/" (they name the run\'s workflows)', async () => {
    await expect(worker.enqueue({ goal: GOAL, runId: 'a/b' })).rejects.toThrow(
      'runId: expected a non-empty string without "/"',
    );
    await expect(client.enqueueResume('a', { idempotencyKey: 'k/1' })).rejects.toThrow('idempotencyKey');
  });

  it('a store error mid-run ends the leg, and a successor takes the run up again from the journal', async () => {
    // The 4th append: the first tool round's outcome (after run.started, the model's reply, its event).
    failAppendNumber = 4;
    await worker.enqueue({ goal: GOAL, runId: 'store-blip' });
    const stopped = await worker.result('store-blip');
    expect(stopped.stopReason, stopped.detail).toBe('needs_human');
    expect(failAppendNumber, 'the failure was injected').toBe(0);
    const legs = await steps.listWorkflows({ workflow_id_prefix: 'store-blip', workflowName: 'loopstate.run' });
    const ends = await Promise.all(
      legs.map(
        async (leg) =>
          ((await steps.listWorkflowSteps(leg.workflowID)) ?? [])
            .map((step) => step.output as { kind?: string; outcome?: { kind: string; failure?: string } })
            .find((output) => output?.kind === 'leg-end')?.outcome,
      ),
    );
    expect(
      ends.some((outcome) => outcome?.failure?.includes('Connection terminated unexpectedly')),
      JSON.stringify(ends),
    ).toBe(true);
    const same = await embedded('store-blip');
    expect(comparable(stopped)).toEqual(comparable(same.stopped));
    expect(
      lines().filter((line) => line.startsWith('effect:charge_fee:') && line.includes('store-blip')).length,
      'the fee is charged once',
    ).toBe(1);
  }, 60_000);

  it("a store error as a person's decisions are applied: the successor applies them, the refund runs once", async () => {
    const stopped = await stoppedForApproval('store-blip-approve');
    // The first append after this: the journal event that carries the decisions.
    failAppendNumber = 1;
    await worker.approve('store-blip-approve', { [stopped.pendingApprovals[0]!.callId]: { approve: true } });
    const done = await worker.result('store-blip-approve');
    expect(failAppendNumber, 'the failure was injected').toBe(0);
    expect(done.stopReason, done.detail).toBe('completed');
    expect(comparable(done)).toEqual(comparable((await embedded('store-blip-approve')).done));
    expect(
      lines().filter((line) => line.startsWith('effect:refund:') && line.includes('store-blip-approve')).length,
      'the refund runs once',
    ).toBe(1);
  }, 60_000);
});
