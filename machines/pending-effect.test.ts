import { describe, expect, it } from 'vitest';
import { initialTransition, transition } from 'xstate';
import { loopMachine } from './loop-machine.js';
import { getPendingEffect, type LoopSnapshot } from './pending-effect.js';
import type { LoopEvent } from './types.js';

function started(): LoopSnapshot {
  const [ready] = initialTransition(loopMachine, {
    limits: {
      maxSteps: 5,
      maxRetries: 2,
      deadlineMs: 60_000,
      maxInputTokens: 10_000,
      maxOutputTokens: 5_000,
      maxCostUsd: 1,
      maxParallelTools: 4,
      maxToolResultBytes: 1_024,
      maxArgumentRepairs: 1,
    },
    noProgress: {
      repeatedToolCall: 3,
      unchangedState: 3,
      sameEvaluatorReason: 2,
      duplicateObservation: 3,
      planStall: 12,
      sameParseError: 3,
    },
    tasks: [
      { id: 'classify', onFailure: 'stop' },
      { id: 'draft', onFailure: 'stop' },
    ],
  });
  return transition(loopMachine, ready, { type: 'run.started', at: 0, nextRequestTokens: 10 })[0];
}

const send = (snapshot: LoopSnapshot, event: LoopEvent): LoopSnapshot => transition(loopMachine, snapshot, event)[0];

describe('getPendingEffect', () => {
  it('carries the task index of the current task', () => {
    const secondTask = [
      { type: 'model.responded', at: 1, nextRequestTokens: 10, usage: { inputTokens: 1, outputTokens: 1, costUsd: 0 }, decision: { kind: 'final' }, stateDigest: 'a' },
      { type: 'evaluation.completed', at: 2, nextRequestTokens: 10, passed: true, reason: '', usage: null },
    ].reduce<LoopSnapshot>((snapshot, event) => send(snapshot, event as LoopEvent), started());
    expect(getPendingEffect(secondTask)).toEqual({ kind: 'callModel', feedback: null, taskIndex: 1 });
  });

  it('asks to sleep until the absolute retryAt in context, not for a relative delay', () => {
    const sleeping = send(started(), { type: 'model.failed', at: 4_000, failure: 'transient', message: '503', retryDelayMs: 1_500 });
    expect(sleeping.context.retryAt).toBe(5_500);
    expect(getPendingEffect(sleeping)).toEqual({ kind: 'sleep', until: 5_500 });
  });

  it('returns the machine output once the run is done', () => {
    const done = send(started(), { type: 'run.cancelRequested', at: 5, message: 'stop' });
    const effect = getPendingEffect(done);
    expect(effect).toEqual({ kind: 'done', output: done.output });
    expect(effect.kind === 'done' && effect.output.stopReason).toBe('cancelled');
  });

  it('throws for a snapshot in a transient state, which no driver should ever see', () => {
    const gate = loopMachine.resolveState({ value: { RUNNING: 'gate' }, context: started().context });
    expect(() => getPendingEffect(gate)).toThrow(/transient state/);
  });
});
