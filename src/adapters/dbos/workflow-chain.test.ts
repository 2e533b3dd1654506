import { describe, expect, it } from 'vitest';
import { ApprovalError } from '../../engine/durable/durable-errors.js';
import type { RunResult } from '../../engine/runtime/run-result.js';
import {
  decisionsKey,
  handOverDecisions,
  latestStop,
  ofRun,
  successorId,
  type ApprovalMessage,
  type ApprovalPort,
  type LegOutput,
  type WaitOutput,
} from './workflow-chain.js';

const result = (stopReason: RunResult['stopReason']) => ({ runId: 'r1', stopReason }) as RunResult;

/** A DBOS stand-in: workflow outputs and statuses by id, and what was sent or enqueued. */
function fakePort(
  workflows: Record<string, { status: string; output?: LegOutput | WaitOutput }>,
  waiting: string[] = [],
  verdicts: Record<string, { accepted: boolean; code?: string; message?: string }> = {},
  inputs: Record<string, unknown> = {},
) {
  const sent: { workflowId: string; message: ApprovalMessage; key: string }[] = [];
  const enqueued: { runId: string; key: string }[] = [];
  const port: ApprovalPort = {
    output: async (id) => {
      const workflow = workflows[id];
      if (workflow?.output === undefined) throw new Error(`no output for ${id}`);
      return workflow.output;
    },
    status: async (id) => workflows[id]?.status as never,
    waiting: async () => waiting,
    continuation: async (runId, key) =>
      Object.keys(workflows).find((id) => id === `${runId}/resume/${key}` || id.endsWith(`/approved/${key}`)),
    verdict: async (id) => verdicts[id],
    send: async (workflowId, message, key) => {
      sent.push({ workflowId, message, key });
    },
    input: async (id) => inputs[id],
    enqueueResume: async (runId, _approvals, key) => {
      enqueued.push({ runId, key });
      return { runId, workflowId: `${runId}/resume/${key}` };
    },
  };
  return { port, sent, enqueued };
}

describe('the workflow chain of a distributed run', () => {
  it('answers decisions sent again with the leg they continued the run in, not a new one', async () => {
    const approvals = { c1: { approve: true as const } };
    const key = decisionsKey(approvals, undefined);
    const { port, sent, enqueued } = fakePort({ [`r1/wait/approved/${key}`]: { status: 'SUCCESS' } }, [], {
      [`r1/wait/approved/${key}`]: { accepted: true },
    });
    const options = { takeTimeoutMs: 1_000, pollMs: 1 };
    expect(await handOverDecisions(port, 'r1', approvals, options)).toEqual({
      runId: 'r1',
      workflowId: `r1/wait/approved/${key}`,
    });
    expect(sent).toEqual([]);
    expect(enqueued).toEqual([]);
  });

  it('follows successors and decided approvals to the latest stop', async () => {
    const { port } = fakePort({
      r1: { status: 'SUCCESS', output: { kind: 'continued', workflowId: 'r1/part/2' } },
      'r1/part/2': {
        status: 'SUCCESS',
        output: { kind: 'stopped', result: result('needs_human'), waitingIn: 'r1/part/2/wait' },
      },
      'r1/part/2/wait': { status: 'SUCCESS', output: { kind: 'continued', workflowId: 'r1/part/2/wait/approved/k' } },
      'r1/part/2/wait/approved/k': { status: 'SUCCESS', output: { kind: 'stopped', result: result('completed') } },
    });
    expect((await latestStop(port, 'r1')).stopReason).toBe('completed');
  });

  it('stops at a stop whose waiter still waits or ended without decisions', async () => {
    const stopped: LegOutput = { kind: 'stopped', result: result('needs_human'), waitingIn: 'r1/wait' };
    expect(
      (
        await latestStop(
          fakePort({ r1: { status: 'SUCCESS', output: stopped }, 'r1/wait': { status: 'PENDING' } }).port,
          'r1',
        )
      ).stopReason,
    ).toBe('needs_human');
    const expired = fakePort({
      r1: { status: 'SUCCESS', output: stopped },
      'r1/wait': { status: 'SUCCESS', output: { kind: 'ended', reason: 'expired' } },
    });
    expect((await latestStop(expired.port, 'r1')).stopReason).toBe('needs_human');
  });

  it('sends decisions to the waiter and returns the leg it continued the run in', async () => {
    const { port, sent, enqueued } = fakePort(
      { 'r1/wait': { status: 'SUCCESS', output: { kind: 'continued', workflowId: 'r1/wait/approved/k1' } } },
      ['r1/wait'],
    );
    const handed = await handOverDecisions(
      port,
      'r1',
      { c1: { approve: true } },
      { idempotencyKey: 'k1', takeTimeoutMs: 1_000, pollMs: 1 },
    );
    expect(handed).toEqual({ runId: 'r1', workflowId: 'r1/wait/approved/k1' });
    expect(sent).toEqual([
      { workflowId: 'r1/wait', message: { approvals: { c1: { approve: true } }, key: 'k1' }, key: 'k1' },
    ]);
    expect(enqueued).toEqual([]);
  });

  it('enqueues a new leg when no waiter waits, or the wait expired as the decisions arrived', async () => {
    const none = fakePort({});
    expect(
      await handOverDecisions(
        none.port,
        'r1',
        { c1: { approve: true } },
        { idempotencyKey: 'k2', takeTimeoutMs: 1_000, pollMs: 1 },
      ),
    ).toEqual({ runId: 'r1', workflowId: 'r1/resume/k2' });
    expect(none.sent).toEqual([]);
    const expired = fakePort({ 'r1/wait': { status: 'SUCCESS', output: { kind: 'ended', reason: 'expired' } } }, [
      'r1/wait',
    ]);
    expect(
      await handOverDecisions(
        expired.port,
        'r1',
        { c1: { approve: true } },
        { idempotencyKey: 'k3', takeTimeoutMs: 1_000, pollMs: 1 },
      ),
    ).toEqual({ runId: 'r1', workflowId: 'r1/resume/k3' });
    expect(expired.sent).toHaveLength(1);
    const failed = fakePort({ 'r1/wait': { status: 'ERROR' } }, ['r1/wait']);
    expect(
      (
        await handOverDecisions(
          failed.port,
          'r1',
          { c1: { approve: true } },
          { idempotencyKey: 'k4', takeTimeoutMs: 1_000, pollMs: 1 },
        )
      ).workflowId,
    ).toBe('r1/resume/k4');
  });

  it('returns the leg the waiter will start when it does not take the decisions in time (its worker is dead until a reaper moves it)', async () => {
    const { port, enqueued } = fakePort({ 'r1/wait': { status: 'PENDING' } }, ['r1/wait']);
    expect(
      await handOverDecisions(
        port,
        'r1',
        { c1: { approve: true } },
        { idempotencyKey: 'k5', takeTimeoutMs: 5, pollMs: 1 },
      ),
    ).toEqual({ runId: 'r1', workflowId: 'r1/wait/approved/k5' });
    expect(enqueued).toEqual([]);
  });

  it('keys decisions by their content unless given a key, and keeps another run out of a prefix listing', () => {
    expect(decisionsKey({ a: { approve: true }, b: { approve: false, reason: 'no' } }, undefined)).toBe(
      decisionsKey({ b: { reason: 'no', approve: false }, a: { approve: true } }, undefined),
    );
    expect(decisionsKey({ a: { approve: true } }, 'ticket-9')).toBe('ticket-9');
    const listed = ['run-1', 'run-1/part/2/wait', 'run-10', 'run-10/wait'].map(
      (workflowID) => ({ workflowID }) as never,
    );
    expect(ofRun('run-1', listed).map((workflow: { workflowID: string }) => workflow.workflowID)).toEqual([
      'run-1',
      'run-1/part/2/wait',
    ]);
    expect(successorId('run-1/part/2', 3)).toBe('run-1/part/3');
    expect(successorId('run-1/resume/k', 2)).toBe('run-1/resume/k/part/2');
  });

  it("throws the leg's verdict as the error loop.resume would have thrown: typed, the run untouched", async () => {
    const refused = fakePort({}, [], {
      'r1/resume/k6': {
        accepted: false,
        code: 'approval_unknown_call',
        message: 'run r1 has no call nope waiting for approval',
      },
    });
    const error = await handOverDecisions(
      refused.port,
      'r1',
      { nope: { approve: true } },
      { idempotencyKey: 'k6', takeTimeoutMs: 1_000, pollMs: 1 },
    ).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(ApprovalError);
    expect(error).toMatchObject({
      code: 'approval_unknown_call',
      runId: 'r1',
      message: 'run r1 has no call nope waiting for approval',
    });
    const shape = fakePort({}, [], {
      'r1/resume/k7': { accepted: false, code: 'invalid_config', message: 'Invalid run input: approvals.c1.reason' },
    });
    await expect(
      handOverDecisions(
        shape.port,
        'r1',
        { c1: { approve: true } },
        { idempotencyKey: 'k7', takeTimeoutMs: 1_000, pollMs: 1 },
      ),
    ).rejects.toMatchObject({ code: 'invalid_config' });
  });

  it('tells a person whose decisions reached the waiter second that they were not taken, unless they were the same decisions', async () => {
    const other = fakePort(
      { 'r1/wait': { status: 'SUCCESS', output: { kind: 'continued', workflowId: 'r1/wait/approved/alice' } } },
      ['r1/wait'],
      {},
      { 'r1/wait/approved/alice': { kind: 'resume', runId: 'r1', approvals: { c1: { approve: true } } } },
    );
    const error = await handOverDecisions(
      other.port,
      'r1',
      { c1: { approve: false, reason: 'no' } },
      { idempotencyKey: 'bob', takeTimeoutMs: 1_000, pollMs: 1 },
    ).catch((thrown: unknown) => thrown);
    expect(error).toMatchObject({ code: 'approval_already_decided', runId: 'r1' });
    expect(other.enqueued).toEqual([]);
    const same = await handOverDecisions(
      other.port,
      'r1',
      { c1: { approve: true } },
      { idempotencyKey: 'alice-again', takeTimeoutMs: 1_000, pollMs: 1 },
    );
    expect(same.workflowId).toBe('r1/wait/approved/alice');
  });
});
