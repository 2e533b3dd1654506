/**
 * The statechart as a pure function: hand-written outcome sequences through `initialTransition`
 * / `transition`, with `getPendingEffect` telling what the machine asks the driver for at each
 * rest point. No actor, no driver, no clock. This file: the happy path and the events a state
 * ignores; the `loop-machine.*.test.ts` files beside it cover one concern each.
 */
import { describe, expect, it } from 'vitest';
import { statusOf } from './loop-machine.js';
import { getPendingEffect, type LoopSnapshot } from './pending-effect.js';
import { STOP_REASONS, type LoopEvent } from './types.js';
import {
  backoffElapsed,
  callModelEffect,
  evaluationPassed,
  finalReply,
  modelFailed,
  outputOf,
  readyRun,
  runStarted,
  send,
  startedRun,
  toolCallsReply,
  toolsCompleted,
} from '../test/support/statechart-fixtures.js';

describe('statusOf', () => {
  it('maps completed to succeeded, needs_human to needs_human, and every other reason to failed', () => {
    for (const reason of STOP_REASONS) {
      const expected = reason === 'completed' ? 'succeeded' : reason === 'needs_human' ? 'needs_human' : 'failed';
      expect(statusOf(reason)).toBe(expected);
    }
  });
});

describe('rest points', () => {
  it('waits for run.started, then asks for the first model call', () => {
    const ready = readyRun();
    expect(getPendingEffect(ready)).toEqual({ kind: 'start' });
    expect(getPendingEffect(send(ready, runStarted()))).toEqual(callModelEffect());
  });

  it('asks to run tools after a tool-call decision and to call the model again after the round', () => {
    const acting = send(startedRun(), toolCallsReply());
    expect(getPendingEffect(acting)).toEqual({ kind: 'runTools', taskIndex: 0 });
    expect(getPendingEffect(send(acting, toolsCompleted()))).toEqual(callModelEffect());
  });

  it('asks to evaluate a final reply', () => {
    expect(getPendingEffect(send(startedRun(), finalReply()))).toEqual({
      kind: 'evaluate',
      taskIndex: 0,
      mayCallModel: true,
    });
  });
});

describe('completed', () => {
  it('stops with completed once the only task passes evaluation, with the usage of the run', () => {
    const done = send(
      startedRun(),
      toolCallsReply({ calls: 2 }),
      toolsCompleted({ calls: 2 }),
      finalReply(),
      evaluationPassed(),
    );
    expect(outputOf(done)).toEqual({
      stopReason: 'completed',
      status: 'succeeded',
      detail: '1 of 1 task(s) passed evaluation',
      steps: 2,
      usage: { inputTokens: 200, outputTokens: 20, costUsd: 0.002, modelCalls: 2, toolCalls: 2 },
      completedTasks: 1,
      failedTasks: 0,
    });
  });
});

describe('events irrelevant in a state are ignored', () => {
  const cases: [string, () => LoopSnapshot, LoopEvent][] = [
    ['tools.completed while deciding', () => startedRun(), toolsCompleted()],
    ['evaluation.completed while deciding', () => startedRun(), evaluationPassed()],
    ['backoff.elapsed while deciding', () => startedRun(), backoffElapsed()],
    ['run.started while deciding', () => startedRun(), runStarted(9_999, 500)],
    ['model.responded while acting', () => send(startedRun(), toolCallsReply()), finalReply()],
    ['evaluation.completed while acting', () => send(startedRun(), toolCallsReply()), evaluationPassed()],
    ['model.failed while evaluating', () => send(startedRun(), finalReply()), modelFailed('fatal')],
    ['tools.completed while evaluating', () => send(startedRun(), finalReply()), toolsCompleted()],
    ['model.responded while sleeping', () => send(startedRun(), modelFailed()), finalReply()],
    ['model.responded before the run started', () => readyRun(), finalReply()],
  ];

  it.each(cases)('%s', (_name, at, event) => {
    const before = at();
    const after = send(before, event);
    expect(after.value).toEqual(before.value);
    expect(after.context).toEqual(before.context);
    expect(getPendingEffect(after)).toEqual(getPendingEffect(before));
  });

  it('outcome events after the run stopped change nothing', () => {
    const done = send(startedRun(), finalReply(), evaluationPassed());
    const output = outputOf(done);
    const after = send(done, finalReply(), toolsCompleted(), modelFailed('fatal'));
    expect(after.status).toBe('done');
    expect(outputOf(after)).toEqual(output);
  });
});
