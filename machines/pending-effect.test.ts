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

  it('reads every state off its value as snapshot.matches does (it no longer asks matches)', () => {
    const context = startedTwoTaskRun().context;
    // Every state of the machine, resting or transient, and one value no state has.
    const values = [
      'READY',
      'SUCCESS',
      'FAILED',
      ...['gate', 'deciding', 'acting', 'evaluating'].map((child) => ({ RUNNING: child })),
      ...['backingOff', 'reflecting'].map((child) => ({ RETRY: child })),
    ];
    // What getPendingEffect returned when it asked snapshot.matches, state by state.
    const byMatches = (snapshot: ReturnType<typeof loopMachine.resolveState>): string => {
      if (snapshot.matches({ RUNNING: 'deciding' })) return 'callModel';
      if (snapshot.matches({ RUNNING: 'acting' })) return 'runTools';
      if (snapshot.matches({ RUNNING: 'evaluating' })) return 'evaluate';
      if (snapshot.matches({ RETRY: 'backingOff' })) return 'sleep';
      if (snapshot.matches('READY')) return 'start';
      return 'transient';
    };
    for (const value of values) {
      const snapshot = loopMachine.resolveState({ value, context });
      const expected = snapshot.status === 'done' ? 'done' : byMatches(snapshot);
      let kind: string;
      try {
        kind = getPendingEffect({ ...snapshot, matches: () => expect.fail('matches was asked') }).kind;
      } catch (error) {
        kind = /transient state/.test(String(error)) ? 'transient' : String(error);
      }
      expect({ value, kind }).toEqual({ value, kind: expected });
    }
    expect(values.map((value) => byMatches(loopMachine.resolveState({ value, context })))).toEqual([
      'start',
      'transient',
      'transient',
      'transient',
      'callModel',
      'runTools',
      'evaluate',
      'sleep',
      'transient',
    ]);
  });
});
