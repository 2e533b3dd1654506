import { describe, expect, it } from 'vitest';
import {
  canReflect,
  canRepairArguments,
  canRetryTransport,
  hasTransportAttemptsLeft,
  isEvaluationPassed,
  isReviewRequested,
  isFatalModelFailure,
  isTransportRetryBudgetSpent,
} from './retry.js';
import {
  backoffElapsed,
  contextWith,
  evaluationAskingReview,
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
    expect(isFatalModelFailure({ context: contextWith(), event: evaluationRejected('missing field total') })).toBe(
      false,
    );
  });
});

describe('canRetryTransport', () => {
  it('allows a retry while the call has failed fewer times in a row than maxTransportAttempts, and refuses at it', () => {
    const failedInARow = (consecutiveFailures: number) => contextWith({ transport: { consecutiveFailures } });
    expect(canRetryTransport({ context: failedInARow(1), event: modelFailed() })).toBe(true);
    expect(canRetryTransport({ context: failedInARow(2), event: modelFailed() })).toBe(true);
    expect(canRetryTransport({ context: failedInARow(3), event: modelFailed() })).toBe(false);
  });

  it('counts per call: the run may have retried any number of times before (no run-wide cap by default)', () => {
    expect(
      canRetryTransport({
        context: contextWith({ transport: { consecutiveFailures: 1, retries: 1_000 } }),
        event: modelFailed(),
      }),
    ).toBe(true);
  });

  it('refuses once the run-wide maxTransportRetries is spent, with attempts of the call left', () => {
    const context = (retries: number) =>
      contextWith({ limits: { maxTransportRetries: 4 }, transport: { consecutiveFailures: 1, retries } });
    expect(canRetryTransport({ context: context(3), event: modelFailed() })).toBe(true);
    expect(canRetryTransport({ context: context(4), event: modelFailed() })).toBe(false);
    expect(hasTransportAttemptsLeft({ context: context(4) })).toBe(true);
    expect(isTransportRetryBudgetSpent({ context: context(4) })).toBe(true);
  });

  it('reads only its own counters: exhausted reflection retries and repairs do not block it', () => {
    const context = contextWith({
      task: { reflectionRetries: 2, argumentRepairs: 1 },
      transport: { consecutiveFailures: 1 },
    });
    expect(canRetryTransport({ context, event: modelFailed() })).toBe(true);
  });

  it('never retries with maxTransportAttempts 1 (one attempt per call), nor with maxTransportRetries 0', () => {
    expect(
      canRetryTransport({
        context: contextWith({ limits: { maxTransportAttempts: 1 }, transport: { consecutiveFailures: 1 } }),
        event: modelFailed(),
      }),
    ).toBe(false);
    expect(
      canRetryTransport({
        context: contextWith({ limits: { maxTransportRetries: 0 }, transport: { consecutiveFailures: 1 } }),
        event: modelFailed(),
      }),
    ).toBe(false);
  });

  it('does not read maxRetries, the reflection limit', () => {
    expect(
      canRetryTransport({
        context: contextWith({ limits: { maxRetries: 0 }, transport: { consecutiveFailures: 1 } }),
        event: modelFailed(),
      }),
    ).toBe(true);
  });
});

describe('canReflect', () => {
  it('allows a reflection while the counter is below maxRetries and refuses at it', () => {
    expect(canReflect({ context: contextWith({ task: { reflectionRetries: 1 } }), event: backoffElapsed() })).toBe(
      true,
    );
    expect(canReflect({ context: contextWith({ task: { reflectionRetries: 2 } }), event: backoffElapsed() })).toBe(
      false,
    );
  });

  it('reads only its own counter: a call out of transport attempts does not block it', () => {
    const context = contextWith({
      task: { reflectionRetries: 0, argumentRepairs: 1 },
      transport: { consecutiveFailures: 3, retries: 9 },
    });
    expect(canReflect({ context, event: backoffElapsed() })).toBe(true);
  });
});

describe('canRepairArguments', () => {
  it('allows a repair below maxArgumentRepairs and refuses at it', () => {
    expect(
      canRepairArguments({ context: contextWith({ task: { argumentRepairs: 0 } }), event: backoffElapsed() }),
    ).toBe(true);
    expect(
      canRepairArguments({ context: contextWith({ task: { argumentRepairs: 1 } }), event: backoffElapsed() }),
    ).toBe(false);
  });

  it('uses maxArgumentRepairs, not maxRetries', () => {
    const context = contextWith({ task: { argumentRepairs: 2 }, limits: { maxRetries: 5, maxArgumentRepairs: 3 } });
    expect(canRepairArguments({ context, event: backoffElapsed() })).toBe(true);
    const exhausted = contextWith({ task: { argumentRepairs: 1 }, limits: { maxRetries: 5, maxArgumentRepairs: 1 } });
    expect(canRepairArguments({ context: exhausted, event: backoffElapsed() })).toBe(false);
  });

  it('reads only its own counter', () => {
    const context = contextWith({
      task: { argumentRepairs: 0, reflectionRetries: 2 },
      transport: { consecutiveFailures: 3 },
    });
    expect(canRepairArguments({ context, event: backoffElapsed() })).toBe(true);
  });
});

describe('isEvaluationPassed', () => {
  it('is true for a passing evaluation and false for a failing one', () => {
    expect(isEvaluationPassed({ context: contextWith(), event: evaluationPassed() })).toBe(true);
    expect(isEvaluationPassed({ context: contextWith(), event: evaluationRejected('missing field total') })).toBe(
      false,
    );
  });

  it('is false for events of another type', () => {
    expect(isEvaluationPassed({ context: contextWith(), event: modelFailed('transient') })).toBe(false);
  });
});

describe('isReviewRequested', () => {
  it('is true only for an evaluation that asked for a person, which is never a pass', () => {
    const asking = evaluationAskingReview('a person must look');
    expect(isReviewRequested({ context: contextWith(), event: asking })).toBe(true);
    expect(isEvaluationPassed({ context: contextWith(), event: { ...asking, passed: true } as typeof asking })).toBe(
      false,
    );
    expect(isReviewRequested({ context: contextWith(), event: evaluationRejected('missing total') })).toBe(false);
    expect(isReviewRequested({ context: contextWith(), event: evaluationPassed() })).toBe(false);
    expect(isReviewRequested({ context: contextWith(), event: backoffElapsed() })).toBe(false);
  });
});
