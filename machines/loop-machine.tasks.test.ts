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
    expect(output).toMatchObject({
      steps: 4,
      completedTasks: 3,
      failedTasks: 0,
      detail: '3 of 3 task(s) passed evaluation',
    });
  });

  it('gives every task its own retry counters and its own nudge', () => {
    // The driver keeps (call, result) history per task; here each task repeats its own call to the threshold.
    const repeatedLookup = toolsCompleted({ maxRepeatCount: 3, repeatedTool: 'lookup', allObservationsSeen: true });
    const firstUsedUp = send(
      startedRun({ tasks: threeTasks }),
      modelFailed(),
      backoffElapsed(),
      modelFailed(),
      backoffElapsed(),
      toolCallsReply(),
      repeatedLookup,
      finalReply(),
      evaluationPassed(),
    );
    expect(firstUsedUp.context.taskIndex).toBe(1);
    const secondRetries = send(firstUsedUp, modelFailed(), backoffElapsed(), modelFailed());
    expect(getPendingEffect(secondRetries).kind).toBe('sleep');
    // The second task's first repeat is nudged, not stopped, although the first task was nudged earlier.
    const nudgedAgain = send(secondRetries, backoffElapsed(), toolCallsReply(), repeatedLookup);
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
      detail: 'task classify: evaluation still failing after 1 reflection retries: reason 2; raise limits.maxRetries',
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
    expect(output.detail).toBe(
      'task classify: tool arguments still invalid after 1 repair(s); raise limits.maxArgumentRepairs',
    );
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
      send(
        startedRun({ tasks: threeTasks, limits: { deadlineMs: 5_000 } }),
        finalReply({ at: 4_000 }),
        evaluationPassed({ at: 5_000 }),
      ),
      'deadline_exceeded',
    );
    expect(output.completedTasks).toBe(1);
  });
});

describe('maxStepsPerTask', () => {
  const limits = { maxSteps: 20, maxStepsPerTask: 2 };

  it('fails a task under onFailure continue at its step limit, and the next task gets its own steps', () => {
    const tasks: TaskPlan[] = [
      { id: 'classify', onFailure: 'continue' },
      { id: 'draft', onFailure: 'stop' },
    ];
    // The second decision of classify asks for tools at the limit: they are not run, the task fails.
    const skipped = send(startedRun({ tasks, limits }), toolCallsReply(), toolsCompleted(), toolCallsReply());
    expect(getPendingEffect(skipped)).toEqual(callModelEffect(null, 1));
    expect(skipped.context.failure).toEqual({
      reason: 'max_steps',
      detail: 'task classify reached maxStepsPerTask (2) before it passed evaluation; raise limits.maxStepsPerTask',
    });
    expect(skipped.context.usage.toolCalls).toBe(1);
    expect(skipped.context.task.steps).toBe(0);
    const output = expectStop(
      send(skipped, toolCallsReply(), toolsCompleted(), finalReply(), evaluationPassed()),
      'completed',
    );
    expect(output).toMatchObject({ steps: 4, completedTasks: 1, failedTasks: 1 });
  });

  it('stops the run with max_steps under onFailure stop, naming the task and the option', () => {
    const tasks: TaskPlan[] = [
      { id: 'classify', onFailure: 'stop' },
      { id: 'draft', onFailure: 'stop' },
    ];
    const output = expectStop(
      send(startedRun({ tasks, limits }), toolCallsReply(), toolsCompleted(), toolCallsReply()),
      'max_steps',
    );
    expect(output.detail).toBe(
      'task classify reached maxStepsPerTask (2) before it passed evaluation; raise limits.maxStepsPerTask',
    );
    expect(output).toMatchObject({ steps: 2, completedTasks: 0, failedTasks: 1 });
  });

  it('still evaluates a final reply made at the last step of the task', () => {
    const lastStep = send(startedRun({ limits }), toolCallsReply(), toolsCompleted(), finalReply());
    expect(getPendingEffect(lastStep)).toEqual({ kind: 'evaluate', taskIndex: 0, mayCallModel: true });
    expectStop(send(lastStep, evaluationPassed()), 'completed');
  });

  it('refuses a reflection past the task limit at the gate', () => {
    const rejected = send(
      startedRun({ limits }),
      toolCallsReply(),
      toolsCompleted(),
      finalReply(),
      evaluationRejected('missing total'),
    );
    const output = expectStop(rejected, 'max_steps');
    expect(output.detail).toContain('maxStepsPerTask (2)');
    expect(output.usage.modelCalls).toBe(2);
  });

  it('names the run limit when the run and the task limit are reached together', () => {
    const output = expectStop(
      send(
        startedRun({ limits: { maxSteps: 2, maxStepsPerTask: 2 } }),
        toolCallsReply(),
        toolsCompleted(),
        toolCallsReply(),
      ),
      'max_steps',
    );
    expect(output.detail).toBe('reached maxSteps (2) before the task passed evaluation; raise limits.maxSteps');
  });
});
