import { describe, expect, it } from 'vitest';
import { createInitialContext } from '../actions/initial-context.js';
import { canReflect, canRepairArguments, canRetryTransport, isEvaluationPassed, isFatalModelFailure } from './retry.js';
import type { LoopContext, LoopEvent, LoopLimits, TaskCounters } from '../machines/types.js';

const LIMITS: LoopLimits = {
  maxSteps: 10,
  maxRetries: 2,
  deadlineMs: 60_000,
  maxInputTokens: 100_000,
  maxOutputTokens: 10_000,
  maxCostUsd: 1,
  maxParallelTools: 4,
  maxToolResultBytes: 1_024,
  maxArgumentRepairs: 1,
};

function contextWith(task: Partial<TaskCounters> = {}, limits: Partial<LoopLimits> = {}): LoopContext {
  const base = createInitialContext({
    input: {
      limits: { ...LIMITS, ...limits },
      noProgress: {
        repeatedToolCall: 3,
        unchangedState: 3,
        sameEvaluatorReason: 2,
        duplicateObservation: 3,
        planStall: 12,
        sameParseError: 3,
      },
      tasks: [{ id: 'task-1', onFailure: 'stop' }],
    },
  });
  return { ...base, task: { ...base.task, ...task } };
}

const modelFailed = (failure: 'transient' | 'fatal'): LoopEvent => ({
  type: 'model.failed',
  at: 10,
  failure,
  message: failure === 'fatal' ? '401 unauthorized' : '503',
  retryDelayMs: 100,
});
const evaluated = (passed: boolean): LoopEvent => ({
  type: 'evaluation.completed',
  at: 10,
  nextRequestTokens: 10,
  passed,
  reason: passed ? '' : 'missing field total',
  usage: null,
});
const backoffElapsed: LoopEvent = { type: 'backoff.elapsed', at: 10 };

describe('isFatalModelFailure', () => {
  it('is true for a fatal failure and false for a transient one', () => {
    expect(isFatalModelFailure({ context: contextWith(), event: modelFailed('fatal') })).toBe(true);
    expect(isFatalModelFailure({ context: contextWith(), event: modelFailed('transient') })).toBe(false);
  });

  it('is false for events of another type', () => {
    expect(isFatalModelFailure({ context: contextWith(), event: evaluated(false) })).toBe(false);
  });
});

describe('canRetryTransport', () => {
  it('allows a retry while the counter is below maxRetries and refuses at it', () => {
    expect(canRetryTransport({ context: contextWith({ transportRetries: 0 }), event: backoffElapsed })).toBe(true);
    expect(canRetryTransport({ context: contextWith({ transportRetries: 1 }), event: backoffElapsed })).toBe(true);
    expect(canRetryTransport({ context: contextWith({ transportRetries: 2 }), event: backoffElapsed })).toBe(false);
  });

  it('reads only its own counter: exhausted reflection retries and repairs do not block it', () => {
    const context = contextWith({ transportRetries: 1, reflectionRetries: 2, argumentRepairs: 1 });
    expect(canRetryTransport({ context, event: backoffElapsed })).toBe(true);
  });

  it('never retries when maxRetries is 0', () => {
    expect(canRetryTransport({ context: contextWith({}, { maxRetries: 0 }), event: backoffElapsed })).toBe(false);
  });
});

describe('canReflect', () => {
  it('allows a reflection while the counter is below maxRetries and refuses at it', () => {
    expect(canReflect({ context: contextWith({ reflectionRetries: 1 }), event: backoffElapsed })).toBe(true);
    expect(canReflect({ context: contextWith({ reflectionRetries: 2 }), event: backoffElapsed })).toBe(false);
  });

  it('reads only its own counter: exhausted transport retries do not block it', () => {
    const context = contextWith({ transportRetries: 2, reflectionRetries: 0, argumentRepairs: 1 });
    expect(canReflect({ context, event: backoffElapsed })).toBe(true);
  });
});

describe('canRepairArguments', () => {
  it('allows a repair below maxArgumentRepairs and refuses at it', () => {
    expect(canRepairArguments({ context: contextWith({ argumentRepairs: 0 }), event: backoffElapsed })).toBe(true);
    expect(canRepairArguments({ context: contextWith({ argumentRepairs: 1 }), event: backoffElapsed })).toBe(false);
  });

  it('uses maxArgumentRepairs, not maxRetries', () => {
    const context = contextWith({ argumentRepairs: 2 }, { maxRetries: 5, maxArgumentRepairs: 3 });
    expect(canRepairArguments({ context, event: backoffElapsed })).toBe(true);
    const exhausted = contextWith({ argumentRepairs: 1 }, { maxRetries: 5, maxArgumentRepairs: 1 });
    expect(canRepairArguments({ context: exhausted, event: backoffElapsed })).toBe(false);
  });

  it('reads only its own counter', () => {
    const context = contextWith({ argumentRepairs: 0, transportRetries: 2, reflectionRetries: 2 });
    expect(canRepairArguments({ context, event: backoffElapsed })).toBe(true);
  });
});

describe('isEvaluationPassed', () => {
  it('is true for a passing evaluation and false for a failing one', () => {
    expect(isEvaluationPassed({ context: contextWith(), event: evaluated(true) })).toBe(true);
    expect(isEvaluationPassed({ context: contextWith(), event: evaluated(false) })).toBe(false);
  });

  it('is false for events of another type', () => {
    expect(isEvaluationPassed({ context: contextWith(), event: modelFailed('transient') })).toBe(false);
  });
});
