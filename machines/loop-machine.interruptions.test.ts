/**
 * The loop machine stopped from outside the loop: a cancel, a withheld tool, a faulted run, and late
 * events after the run ended.
 */
import { describe, expect, it } from 'vitest';
import { getPendingEffect } from './pending-effect.js';
import type { LoopEvent } from './types.js';
import {
  evaluationPassed,
  EVENT_AT,
  expectStop,
  finalReply,
  modelFailed,
  outputOf,
  readyRun,
  send,
  startedRun,
  toolCallsReply,
} from '../test/support/statechart-fixtures.js';

describe('cancelled', () => {
  const cancel = (message: string): LoopEvent => ({ type: 'run.cancelRequested', at: 2_000, message });

  it('stops with cancelled (status failed) while a model call is in flight, with the message', () => {
    const output = expectStop(send(startedRun(), cancel('user pressed stop')), 'cancelled');
    expect(output.status).toBe('failed');
    expect(output.detail).toBe('cancelled: user pressed stop');
  });

  it('stops from every rest point: before start, acting, evaluating, sleeping', () => {
    expectStop(send(readyRun(), cancel('x')), 'cancelled');
    expectStop(send(startedRun(), toolCallsReply(), cancel('x')), 'cancelled');
    expectStop(send(startedRun(), finalReply(), cancel('x')), 'cancelled');
    expectStop(send(startedRun(), modelFailed(), cancel('x')), 'cancelled');
  });
});

describe('driver-reported interruptions', () => {
  it('tool.withheld before a model call stops with tool_unavailable, naming the tool', () => {
    const output = expectStop(
      send(startedRun(), { type: 'tool.withheld', at: EVENT_AT, tool: 'search' }),
      'tool_unavailable',
    );
    expect(output.detail).toBe('the task requires tool "search", which is unavailable (circuit breaker open)');
    expect(output.steps).toBe(0);
  });

  it('tool.withheld is ignored outside deciding (the tools are already running)', () => {
    const acting = send(startedRun(), toolCallsReply({}));
    expect(send(acting, { type: 'tool.withheld', at: EVENT_AT, tool: 'search' }).value).toEqual(acting.value);
  });

  it('run.faulted stops with fatal_error from READY, RUNNING and RETRY', () => {
    const fault = (at: number): LoopEvent => ({ type: 'run.faulted', at, message: 'TypeError: policy hook threw' });
    expect(expectStop(send(readyRun(), fault(0)), 'fatal_error').detail).toBe(
      'run faulted: TypeError: policy hook threw',
    );
    expectStop(send(startedRun(), fault(EVENT_AT)), 'fatal_error');
    const backingOff = send(startedRun(), modelFailed('transient'));
    expect(getPendingEffect(backingOff).kind).toBe('sleep');
    expectStop(send(backingOff, fault(EVENT_AT)), 'fatal_error');
  });

  it('a finished run is never rewritten by a late cancel, deadline or fault', () => {
    const done = send(startedRun(), finalReply(), evaluationPassed());
    const before = expectStop(done, 'completed');
    for (const late of [
      { type: 'run.cancelRequested', at: EVENT_AT, message: 'late' },
      { type: 'run.deadlineReached', at: EVENT_AT },
      { type: 'run.faulted', at: EVENT_AT, message: 'late' },
    ] satisfies LoopEvent[]) {
      expect(outputOf(send(done, late))).toEqual(before);
    }
  });
});

describe('a fault after a model call', () => {
  it('counts the call that was made before the fault', () => {
    const usage = { inputTokens: 500, outputTokens: 50, costUsd: 0.002 };
    const output = expectStop(
      send(startedRun(), { type: 'run.faulted', at: EVENT_AT, message: 'Error: policy hook threw', usage }),
      'fatal_error',
    );
    expect(output.usage).toEqual({ inputTokens: 500, outputTokens: 50, costUsd: 0.002, modelCalls: 1, toolCalls: 0 });
    expect(output.steps).toBe(0);
  });

  it('counts nothing when the fault came before any call', () => {
    const output = expectStop(
      send(startedRun(), { type: 'run.faulted', at: EVENT_AT, message: 'Error: clock failed' }),
      'fatal_error',
    );
    expect(output.usage.modelCalls).toBe(0);
  });
});

describe('model calls cut short by an interruption', () => {
  const usage = { inputTokens: 300, outputTokens: 30, costUsd: 0.003 };

  it('a cancel counts the call abandoned mid-flight, with no tokens', () => {
    const output = expectStop(
      send(startedRun(), { type: 'run.cancelRequested', at: EVENT_AT, message: 'user', modelCalls: 1 }),
      'cancelled',
    );
    expect(output.usage).toEqual({ inputTokens: 0, outputTokens: 0, costUsd: 0, modelCalls: 1, toolCalls: 0 });
  });

  it('a deadline counts the calls made and the usage of those that returned', () => {
    const evaluating = send(startedRun(), finalReply());
    const output = expectStop(
      send(evaluating, { type: 'run.deadlineReached', at: EVENT_AT, usage, modelCalls: 2 }),
      'deadline_exceeded',
    );
    // One decision, then two judge calls cut short by the deadline.
    expect(output.usage).toMatchObject({ inputTokens: 400, outputTokens: 40, modelCalls: 3 });
    expect(output.steps).toBe(1);
  });

  it('a deadline without usage or model calls counts nothing', () => {
    const output = expectStop(send(startedRun(), { type: 'run.deadlineReached', at: EVENT_AT }), 'deadline_exceeded');
    expect(output.usage.modelCalls).toBe(0);
  });
});
