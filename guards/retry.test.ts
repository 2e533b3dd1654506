import { describe, expect, it } from 'vitest';
import { canReflect, canRepairArguments, canRetryTransport, isEvaluationPassed, isFatalModelFailure } from './retry.js';
import {
  backoffElapsed,
  contextWith,
  evaluationPassed,
  evaluationRejected,
  modelFailed,
} from '../test/support/statechart-fixtures.js';

describe('isFatalModelFailure', () => {
  it('is true for a fatal failure and false for a transient one', () => {
    expect(isFatalModelFailure({ context: contextWith(), event: modelFailed('fatal') })).toBe(true);
    expect(isFatalModelFailure({ context: contextWith(), event: modelFailed('transient') })).toBe(false);
  });

  it('is false for events of another type', () => {
    expect(isFatalModelFailure({ context: contextWith(), event: evaluationRejected('missing field total') })).toBe(false);
  });
});

describe('canRetryTransport', () => {
  it('allows a retry while the counter is below maxRetries and refuses at it', () => {
    expect(canRetryTransport({ context: contextWith({ task: { transportRetries: 0 } }), event: backoffElapsed() })).toBe(true);
    expect(canRetryTransport({ context: contextWith({ task: { transportRetries: 1 } }), event: backoffElapsed() })).toBe(true);
    expect(canRetryTransport({ context: contextWith({ task: { transportRetries: 2 } }), event: backoffElapsed() })).toBe(false);
  });

  it('reads only its own counter: exhausted reflection retries and repairs do not block it', () => {
    const context = contextWith({ task: { transportRetries: 1, reflectionRetries: 2, argumentRepairs: 1 } });
    expect(canRetryTransport({ context, event: backoffElapsed() })).toBe(true);
  });

  it('never retries when maxRetries is 0', () => {
    expect(canRetryTransport({ context: contextWith({ limits: { maxRetries: 0 } }), event: backoffElapsed() })).toBe(false);
  });
});

describe('canReflect', () => {
  it('allows a reflection while the counter is below maxRetries and refuses at it', () => {
    expect(canReflect({ context: contextWith({ task: { reflectionRetries: 1 } }), event: backoffElapsed() })).toBe(true);
    expect(canReflect({ context: contextWith({ task: { reflectionRetries: 2 } }), event: backoffElapsed() })).toBe(false);
  });

  it('reads only its own counter: exhausted transport retries do not block it', () => {
    const context = contextWith({ task: { transportRetries: 2, reflectionRetries: 0, argumentRepairs: 1 } });
    expect(canReflect({ context, event: backoffElapsed() })).toBe(true);
  });
});

describe('canRepairArguments', () => {
  it('allows a repair below maxArgumentRepairs and refuses at it', () => {
    expect(canRepairArguments({ context: contextWith({ task: { argumentRepairs: 0 } }), event: backoffElapsed() })).toBe(true);
    expect(canRepairArguments({ context: contextWith({ task: { argumentRepairs: 1 } }), event: backoffElapsed() })).toBe(false);
  });

  it('uses maxArgumentRepairs, not maxRetries', () => {
    const context = contextWith({ task: { argumentRepairs: 2 }, limits: { maxRetries: 5, maxArgumentRepairs: 3 } });
    expect(canRepairArguments({ context, event: backoffElapsed() })).toBe(true);
    const exhausted = contextWith({ task: { argumentRepairs: 1 }, limits: { maxRetries: 5, maxArgumentRepairs: 1 } });
    expect(canRepairArguments({ context: exhausted, event: backoffElapsed() })).toBe(false);
  });

  it('reads only its own counter', () => {
    const context = contextWith({ task: { argumentRepairs: 0, transportRetries: 2, reflectionRetries: 2 } });
    expect(canRepairArguments({ context, event: backoffElapsed() })).toBe(true);
  });
});

describe('isEvaluationPassed', () => {
  it('is true for a passing evaluation and false for a failing one', () => {
    expect(isEvaluationPassed({ context: contextWith(), event: evaluationPassed() })).toBe(true);
    expect(isEvaluationPassed({ context: contextWith(), event: evaluationRejected('missing field total') })).toBe(false);
  });

  it('is false for events of another type', () => {
    expect(isEvaluationPassed({ context: contextWith(), event: modelFailed('transient') })).toBe(false);
  });
});
