import { describe, expect, it } from 'vitest';
import { loopMachine } from './loop-machine.js';
import { getPendingEffect } from './pending-effect.js';
import type { TaskPlan } from './types.js';
import { evaluationPassed, finalReply, modelFailed, send, startedRun } from '../test/support/statechart-fixtures.js';

const TWO_TASKS: TaskPlan[] = [
  { id: 'classify', onFailure: 'stop' },
  { id: 'draft', onFailure: 'stop' },
];

/** A started run of two tasks, waiting for the first model call. */
const startedTwoTaskRun = () => startedRun({ tasks: TWO_TASKS });

describe('getPendingEffect', () => {
  it('carries the task index of the current task', () => {
    const secondTask = send(startedTwoTaskRun(), finalReply(), evaluationPassed());
    expect(getPendingEffect(secondTask)).toEqual({ kind: 'callModel', feedback: null, taskIndex: 1 });
  });

  it('asks to sleep until the absolute retryAt in context, not for a relative delay', () => {
    const sleeping = send(startedTwoTaskRun(), modelFailed('transient', { at: 4_000, retryDelayMs: 1_500 }));
    expect(sleeping.context.retryAt).toBe(5_500);
    expect(getPendingEffect(sleeping)).toEqual({ kind: 'sleep', until: 5_500 });
  });

  it('returns the machine output once the run is done', () => {
    const done = send(startedTwoTaskRun(), { type: 'run.cancelRequested', at: 5, message: 'stop' });
    const effect = getPendingEffect(done);
    expect(effect).toEqual({ kind: 'done', output: done.output });
    expect(effect.kind === 'done' && effect.output.stopReason).toBe('cancelled');
  });

  it('throws for a snapshot in a transient state, which no driver should ever see', () => {
    const gate = loopMachine.resolveState({ value: { RUNNING: 'gate' }, context: startedTwoTaskRun().context });
    expect(() => getPendingEffect(gate)).toThrow(/transient state/);
  });
});
