import { describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import { recordModelResponse, recordToolRound } from '../actions/record.js';
import { isStepLimitReached } from '../guards/budget.js';
import { loopMachine } from './loop-machine.js';
import {
  lastRecorded,
  plainGuardOf,
  RECORDED,
  readingRecorded,
  recordedArgs,
  recordedContext,
  recordedUpdate,
} from './recorded-context.js';
import {
  backoffElapsed,
  startedContextWith,
  TEST_LIMITS,
  TEST_NO_PROGRESS,
  toolCallsReply,
  toolsCompleted,
} from '../test/support/statechart-fixtures.js';

describe('recordedContext', () => {
  it('is the context with the event recorded, exactly as the reducer leaves it', () => {
    const context = startedContextWith({ steps: 3 });
    const reply = toolCallsReply();
    expect(recordedContext(context, reply)).toEqual({ ...context, ...recordModelResponse({ context, event: reply }) });
    const round = toolsCompleted({ maxRepeatCount: 2, allObservationsSeen: true, repeatedTool: 'lookup' });
    expect(recordedContext(context, round)).toEqual({ ...context, ...recordToolRound({ context, event: round }) });
  });

  it('is computed once per event and context, however many guards ask', () => {
    const context = startedContextWith();
    const reply = toolCallsReply();
    expect(recordedContext(context, reply)).toBe(recordedContext(context, reply));
    // Another context for the same event object is recorded afresh.
    const other = startedContextWith({ steps: 5 });
    expect(recordedContext(other, reply).steps).toBe(6);
  });

  it('answers for the last recording only, and leaves what earlier recordings gave as they were', () => {
    // One entry is refilled by every recording: nothing an earlier one answered may change, and it may not answer for
    // an event or context it no longer holds.
    const context = startedContextWith({ steps: 3 });
    const first = toolCallsReply({}, { stateDigest: 'first' });
    const second = toolCallsReply({}, { stateDigest: 'second' });
    const firstAfter = recordedContext(context, first);
    const firstUpdate = recordedUpdate(context, first, recordModelResponse);
    const firstCopy = structuredClone(firstAfter);
    expect(lastRecorded(context, first)?.after).toBe(firstAfter);
    const round = toolsCompleted({ maxRepeatCount: 2, allObservationsSeen: true, repeatedTool: 'lookup' });
    const roundAfter = recordedContext(firstAfter, round);
    expect(lastRecorded(context, first)).toBeUndefined();
    expect(lastRecorded(firstAfter, round)?.update).toBe(recordedUpdate(firstAfter, round, recordToolRound));
    const secondAfter = recordedContext(context, second);
    expect(lastRecorded(firstAfter, round)).toBeUndefined();
    expect(lastRecorded(context, first)).toBeUndefined();
    expect(lastRecorded(context, second)?.after).toBe(secondAfter);
    expect(secondAfter).not.toBe(firstAfter);
    expect(firstAfter).toEqual(firstCopy);
    expect(firstAfter.progress.lastStateDigest).toBe('first');
    expect(secondAfter.progress.lastStateDigest).toBe('second');
    expect(roundAfter.progress.repeatedTool).toBe('lookup');
    expect(recordedUpdate(context, second, recordModelResponse)).not.toBe(firstUpdate);
    // The args of the recording are the last one's, for the guards that read it now.
    const args = recordedArgs({ context, event: second });
    expect(args.context).toBe(secondAfter);
    expect(args.event).toBe(second);
    // Recorded afresh, the first event gives the same context again (a new object).
    const again = recordedContext(context, first);
    expect(again).toEqual(firstCopy);
    expect(again).not.toBe(firstAfter);
    expect(recordedArgs({ context, event: first }).context).toBe(again);
  });

  it('is the context itself for events this module does not record', () => {
    const context = startedContextWith();
    expect(recordedContext(context, backoffElapsed())).toBe(context);
  });
});

describe('readingRecorded', () => {
  it('asks the guard about the recorded context only with the RECORDED params', () => {
    const guard = readingRecorded(isStepLimitReached);
    const context = startedContextWith({ steps: TEST_LIMITS.maxSteps - 1 });
    const reply = toolCallsReply();
    expect(guard({ context, event: reply }, undefined)).toBe(false);
    // With the reply counted, the step limit is reached.
    expect(guard({ context, event: reply }, RECORDED)).toBe(true);
  });

  it('gives up the guard it wraps, which answers with recordedArgs as the wrapper does with RECORDED', () => {
    const guard = readingRecorded(isStepLimitReached);
    expect(plainGuardOf(guard)).toBe(isStepLimitReached);
    // The machine's own guards are such wrappers; anything else has no plain guard.
    expect(plainGuardOf(loopMachine.implementations.guards.isStepLimitReached)).toBe(isStepLimitReached);
    expect(plainGuardOf(isStepLimitReached)).toBeUndefined();
    expect(plainGuardOf('isStepLimitReached')).toBeUndefined();
    expect(plainGuardOf(undefined)).toBeUndefined();
    const context = startedContextWith({ steps: TEST_LIMITS.maxSteps - 1 });
    const args = { context, event: toolCallsReply() };
    expect(isStepLimitReached(recordedArgs(args))).toBe(guard(args, RECORDED));
    expect(isStepLimitReached(recordedArgs(args))).toBe(true);
    // An event this module does not record leaves the args as they are.
    const elapsed = { context, event: backoffElapsed() };
    expect(recordedArgs(elapsed)).toBe(elapsed);
  });
});

describe('microsteps of a tool step', () => {
  it('are two: the reply routes straight to acting, the round straight back to deciding', () => {
    let microsteps = 0;
    const limits = { ...TEST_LIMITS, maxSteps: 100, maxStepsPerTask: 100, maxToolCalls: 1_000 };
    const actor = createActor(loopMachine, {
      input: { limits, noProgress: TEST_NO_PROGRESS, tasks: [{ id: 'main', onFailure: 'stop' }] },
      inspect: (event) => {
        if (event.type === '@xstate.microstep') microsteps += 1;
      },
    }).start();
    actor.send({ type: 'run.started', at: 1_000, nextRequestTokens: 10 });
    const before = microsteps;
    for (let step = 0; step < 10; step++) {
      actor.send(toolCallsReply({}, { stateDigest: `digest-${step}` }));
      actor.send(toolsCompleted());
    }
    expect(actor.getSnapshot().value).toEqual({ RUNNING: 'deciding' });
    expect((microsteps - before) / 10).toBe(2);
  });
});
