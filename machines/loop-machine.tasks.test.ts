/**
 * The loop machine over a task plan: tasks in order, per-task counters, and what a failing task does.
 */
import { describe, expect, it } from 'vitest';
import { getPendingEffect } from './pending-effect.js';
import type { TaskPlan } from './types.js';
import {
  backoffElapsed,
  callModelEffect,
  evaluationPassed,
  evaluationRejected,
  expectStop,
  finalReply,
  modelFailed,
  send,
  startedRun,
  toolCallsReply,
  toolsCompleted,
} from '../test/support/statechart-fixtures.js';

describe('multi-task workflows', () => {
  const threeTasks: TaskPlan[] = [
    { id: 'classify', onFailure: 'stop' },
    { id: 'draft', onFailure: 'stop' },
    { id: 'format', onFailure: 'stop' },
  ];

  it('runs three tasks in order and completes', () => {
    const afterFirst = send(startedRun({ tasks: threeTasks }), finalReply(), evaluationPassed());
    expect(getPendingEffect(afterFirst)).toEqual(callModelEffect(null, 1));
    const afterSecond = send(afterFirst, toolCallsReply(), toolsCompleted(), finalReply(), evaluationPassed());
    expect(getPendingEffect(afterSecond)).toEqual(callModelEffect(null, 2));
    const output = expectStop(send(afterSecond, finalReply(), evaluationPassed()), 'completed');
    expect(output).toMatchObject({ steps: 4, completedTasks: 3, failedTasks: 0, detail: '3 of 3 task(s) passed evaluation' });
  });

  it('gives every task its own retry counters and its own nudge', () => {
    const firstUsedUp = send(
      startedRun({ tasks: threeTasks }),
      modelFailed(),
      backoffElapsed(),
      modelFailed(),
      backoffElapsed(),
      toolCallsReply({ maxRepeatCount: 3 }),
      finalReply(),
      evaluationPassed(),
    );
    expect(firstUsedUp.context.taskIndex).toBe(1);
    const secondRetries = send(firstUsedUp, modelFailed(), backoffElapsed(), modelFailed());
    expect(getPendingEffect(secondRetries).kind).toBe('sleep');
    // The second task's first repeat is nudged, not stopped, although the first task was nudged earlier.
    const nudgedAgain = send(secondRetries, backoffElapsed(), toolCallsReply({ maxRepeatCount: 3 }));
    expect(getPendingEffect(nudgedAgain)).toEqual(callModelEffect({ kind: 'nudge', signal: 'repeated_tool_call' }, 1));
  });

  it('a task with onFailure continue that fails is skipped, and the run completes with the next one', () => {
    const tasks: TaskPlan[] = [
      { id: 'classify', onFailure: 'continue' },
      { id: 'draft', onFailure: 'stop' },
    ];
    const skipped = send(
      startedRun({ tasks, limits: { maxRetries: 1 } }),
      finalReply(),
      evaluationRejected('reason 1'),
      finalReply(),
      evaluationRejected('reason 2'),
    );
    expect(getPendingEffect(skipped)).toEqual(callModelEffect(null, 1));
    expect(skipped.context.failure).toEqual({
      reason: 'retries_exhausted',
      detail: 'task classify: evaluation still failing after 1 reflection retries: reason 2',
    });
    const output = expectStop(send(skipped, finalReply(), evaluationPassed()), 'completed');
    expect(output).toMatchObject({
      status: 'succeeded',
      completedTasks: 1,
      failedTasks: 1,
      detail: '1 of 2 task(s) passed evaluation',
    });
  });

  it('a fatal model error stops the run even when the task says onFailure: continue', () => {
    const tasks: TaskPlan[] = [
      { id: 'classify', onFailure: 'continue' },
      { id: 'draft', onFailure: 'stop' },
    ];
    const output = expectStop(send(startedRun({ tasks }), modelFailed('fatal')), 'fatal_error');
    expect(output.completedTasks).toBe(0);
  });

  it('a task that fails for good under onFailure: continue is counted and skipped', () => {
    const tasks: TaskPlan[] = [
      { id: 'classify', onFailure: 'continue' },
      { id: 'draft', onFailure: 'stop' },
    ];
    const skipped = send(
      startedRun({ tasks }),
      toolCallsReply({ invalidCalls: 1, parseError: 'e1' }),
      toolCallsReply({ invalidCalls: 1, parseError: 'e2' }),
    );
    expect(getPendingEffect(skipped)).toEqual(callModelEffect(null, 1));
    expect(skipped.context.failedTasks).toBe(1);
  });

  it('a task with onFailure stop that fails stops the run with its cause, and later tasks never run', () => {
    const tasks: TaskPlan[] = [
      { id: 'classify', onFailure: 'stop' },
      { id: 'draft', onFailure: 'continue' },
    ];
    const output = expectStop(
      send(
        startedRun({ tasks }),
        toolCallsReply({ invalidCalls: 1, parseError: 'e1' }),
        toolCallsReply({ invalidCalls: 1, parseError: 'e2' }),
      ),
      'retries_exhausted',
    );
    expect(output.detail).toBe('task classify: tool arguments still invalid after 1 repair(s)');
    expect(output.completedTasks).toBe(0);
    expect(output.usage.modelCalls).toBe(2);
  });

  it('a failing last task stops the run even under onFailure continue: there is nothing to continue with', () => {
    const tasks: TaskPlan[] = [
      { id: 'classify', onFailure: 'stop' },
      { id: 'draft', onFailure: 'continue' },
    ];
    const output = expectStop(
      send(startedRun({ tasks }), finalReply(), evaluationPassed(), modelFailed('fatal', { message: 'boom' })),
      'fatal_error',
    );
    expect(output.detail).toBe('model call failed: boom');
    expect(output.completedTasks).toBe(1);
  });

  it('a task that passes after the deadline completes, and the next task is refused at the gate', () => {
    const output = expectStop(
      send(startedRun({ tasks: threeTasks, limits: { deadlineMs: 5_000 } }), finalReply({ at: 4_000 }), evaluationPassed({ at: 5_000 })),
      'deadline_exceeded',
    );
    expect(output.completedTasks).toBe(1);
  });
});
