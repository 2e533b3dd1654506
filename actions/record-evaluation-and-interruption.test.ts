/**
 * The reducers of what happens around a step: an evaluation (judge usage, the same-reason streak), a backoff that
 * elapsed, an interruption; and the deepFreeze helper the no-mutation checks of both record test files rely on.
 */
import { describe, expect, it } from 'vitest';
import { recordBackoffElapsed, recordEvaluation, recordInterruption } from './record.js';
import type { LoopEvent } from '../machines/types.js';
import {
  deepFreeze,
  evaluationCompleted,
  evaluationPassed,
  evaluationRejected,
  finalReply,
  reduce,
  startedContextWith,
  toolsCompleted,
} from '../test/support/statechart-fixtures.js';

describe('recordEvaluation', () => {
  it('leaves usage and the transport retries as they were when no judge ran', () => {
    const context = startedContextWith({
      usage: { inputTokens: 10, costUsd: 0.2, modelCalls: 1 },
      transport: { retries: 1 },
    });
    const result = reduce(recordEvaluation, context, evaluationRejected('missing total'));
    expect(result.usage).toEqual(context.usage);
    expect(result.transport).toEqual(context.transport);
    expect(result).not.toHaveProperty('task');
  });

  it('counts every judge call it was told about, failed attempts included, and their transport retries', () => {
    const context = startedContextWith({
      usage: { inputTokens: 10, outputTokens: 5, costUsd: 0.2, modelCalls: 1, toolCalls: 4 },
      transport: { consecutiveFailures: 0, retries: 1 },
    });
    const event = evaluationPassed({
      usage: { inputTokens: 30, outputTokens: 3, costUsd: 0.05 },
      modelCalls: 3,
      transportRetries: 2,
    });
    const result = reduce(recordEvaluation, context, event);
    expect(result.usage).toMatchObject({ inputTokens: 40, outputTokens: 8, modelCalls: 4, toolCalls: 4 });
    expect(result.transport).toEqual({ consecutiveFailures: 0, retries: 3 });
  });

  it('counts judge calls that returned no usage (every attempt failed)', () => {
    const context = startedContextWith({ usage: { inputTokens: 10, modelCalls: 1 } });
    const result = reduce(
      recordEvaluation,
      context,
      evaluationRejected('judge unavailable', { usage: null, modelCalls: 2, transportRetries: 1 }),
    );
    expect(result.usage).toEqual({ ...context.usage, modelCalls: 3 });
    expect(result.transport?.retries).toBe(1);
  });

  it('adds a judge call to the usage and counts it as a model call', () => {
    const context = startedContextWith({
      usage: { inputTokens: 10, outputTokens: 5, costUsd: 0.2, modelCalls: 1, toolCalls: 4 },
    });
    const result = reduce(
      recordEvaluation,
      context,
      evaluationPassed({ usage: { inputTokens: 30, outputTokens: 3, costUsd: 0.05 } }),
    );
    expect(result.usage?.inputTokens).toBe(40);
    expect(result.usage?.outputTokens).toBe(8);
    expect(result.usage?.costUsd).toBeCloseTo(0.25, 12);
    expect(result.usage?.modelCalls).toBe(2);
    expect(result.usage?.toolCalls).toBe(4);
  });

  it('records the clock and the next request estimate', () => {
    const result = reduce(
      recordEvaluation,
      startedContextWith(),
      evaluationRejected('x', { at: 2_750, nextRequestTokens: 400 }),
    );
    expect(result.lastEventAt).toBe(2_750);
    expect(result.nextRequestTokens).toBe(400);
  });

  it('starts the same-reason streak at 1 on the first failure, remembering the reason and the output', () => {
    const result = reduce(
      recordEvaluation,
      startedContextWith(),
      evaluationRejected('missing total', { outputDigest: 'out-1' }),
    );
    expect(result.progress).toMatchObject({
      lastEvaluatorReason: 'missing total',
      lastOutputDigest: 'out-1',
      sameReasonStreak: 1,
    });
  });

  it('grows the streak when the same output is rejected for the same reason', () => {
    const context = startedContextWith({
      progress: { lastEvaluatorReason: 'missing total', lastOutputDigest: 'out-1', sameReasonStreak: 1 },
    });
    const result = reduce(recordEvaluation, context, evaluationRejected('missing total', { outputDigest: 'out-1' }));
    expect(result.progress).toMatchObject({
      lastEvaluatorReason: 'missing total',
      lastOutputDigest: 'out-1',
      sameReasonStreak: 2,
    });
  });

  it('restarts the streak at 1 when the output changed, even for the same reason: the answer is moving', () => {
    const context = startedContextWith({
      progress: { lastEvaluatorReason: 'missing total', lastOutputDigest: 'out-1', sameReasonStreak: 1 },
    });
    const result = reduce(recordEvaluation, context, evaluationRejected('missing total', { outputDigest: 'out-2' }));
    expect(result.progress).toMatchObject({
      lastEvaluatorReason: 'missing total',
      lastOutputDigest: 'out-2',
      sameReasonStreak: 1,
    });
  });

  it('restarts the streak at 1 when the failure reason changes, even for the same output', () => {
    const context = startedContextWith({
      progress: { lastEvaluatorReason: 'missing total', lastOutputDigest: 'out-1', sameReasonStreak: 2 },
    });
    const result = reduce(
      recordEvaluation,
      context,
      evaluationRejected('total is negative', { outputDigest: 'out-1' }),
    );
    expect(result.progress).toMatchObject({ lastEvaluatorReason: 'total is negative', sameReasonStreak: 1 });
  });

  it('clears the reason, the output and the streak when the evaluation passes', () => {
    const context = startedContextWith({
      progress: { lastEvaluatorReason: 'missing total', lastOutputDigest: 'out-1', sameReasonStreak: 2 },
    });
    const result = reduce(
      recordEvaluation,
      context,
      evaluationCompleted(true, 'missing total', { outputDigest: 'out-1' }),
    );
    expect(result.progress).toMatchObject({ lastEvaluatorReason: null, lastOutputDigest: null, sameReasonStreak: 0 });
  });

  it('rejects an event of another type', () => {
    expect(() => recordEvaluation({ context: startedContextWith(), event: toolsCompleted() })).toThrow();
  });
});

describe('recordBackoffElapsed', () => {
  it('clears retryAt, asks for transport-retry feedback and moves the clock, and nothing else', () => {
    const context = startedContextWith({ retryAt: 2_100, lastEventAt: 2_000 });
    expect(reduce(recordBackoffElapsed, context, { type: 'backoff.elapsed', at: 2_150 })).toEqual({
      lastEventAt: 2_150,
      retryAt: null,
      feedback: { kind: 'transport_retry' },
    });
  });

  it('never moves the clock backwards', () => {
    const context = startedContextWith({ retryAt: 2_100, lastEventAt: 3_000 });
    const result = reduce(recordBackoffElapsed, context, { type: 'backoff.elapsed', at: 2_150 });
    expect(result.lastEventAt).toBe(3_000);
  });

  it('rejects an event of another type', () => {
    expect(() => recordBackoffElapsed({ context: startedContextWith(), event: finalReply() })).toThrow();
  });
});

describe('recordInterruption', () => {
  it('only moves the clock, for a cancel and for a deadline event', () => {
    expect(
      reduce(recordInterruption, startedContextWith(), { type: 'run.cancelRequested', at: 3_000, message: 'user' }),
    ).toEqual({
      lastEventAt: 3_000,
    });
    expect(reduce(recordInterruption, startedContextWith(), { type: 'run.deadlineReached', at: 4_000 })).toEqual({
      lastEventAt: 4_000,
    });
  });

  it('never moves the clock backwards', () => {
    expect(
      reduce(recordInterruption, startedContextWith({ lastEventAt: 9_000 }), {
        type: 'run.deadlineReached',
        at: 4_000,
      }),
    ).toEqual({
      lastEventAt: 9_000,
    });
  });

  describe('model calls cut short', () => {
    const usage = { inputTokens: 200, outputTokens: 20, costUsd: 0.01 };
    const before = () =>
      startedContextWith({ usage: { inputTokens: 100, outputTokens: 10, costUsd: 0.02, modelCalls: 2, toolCalls: 3 } });

    it.each([
      { type: 'run.cancelRequested', at: 3_000, message: 'user', usage },
      { type: 'run.deadlineReached', at: 3_000, usage },
      { type: 'run.faulted', at: 3_000, message: 'hook threw', usage },
    ] satisfies LoopEvent[])('adds the usage given with $type and counts one model call by default', (event) => {
      const result = reduce(recordInterruption, before(), event);
      expect(result.lastEventAt).toBe(3_000);
      expect(result.usage).toMatchObject({ inputTokens: 300, outputTokens: 30, modelCalls: 3, toolCalls: 3 });
      expect(result.usage?.costUsd).toBeCloseTo(0.03, 12);
    });

    it('counts the model calls it is told about, with their usage', () => {
      const event: LoopEvent = { type: 'run.faulted', at: 3_000, message: 'hook threw', usage, modelCalls: 2 };
      expect(reduce(recordInterruption, before(), event).usage).toMatchObject({ inputTokens: 300, modelCalls: 4 });
    });

    it('counts a call abandoned mid-flight, which has no usage, without adding tokens or cost', () => {
      const event: LoopEvent = { type: 'run.cancelRequested', at: 3_000, message: 'user', modelCalls: 1 };
      expect(reduce(recordInterruption, before(), event).usage).toEqual({ ...before().usage, modelCalls: 3 });
    });

    it('changes no usage when the event says no call was made', () => {
      const event: LoopEvent = { type: 'run.deadlineReached', at: 3_000, modelCalls: 0 };
      expect(reduce(recordInterruption, before(), event)).toEqual({ lastEventAt: 3_000 });
    });
  });

  it('only moves the clock for a withheld tool', () => {
    expect(
      reduce(recordInterruption, startedContextWith(), { type: 'tool.withheld', at: 3_000, tool: 'search' }),
    ).toEqual({ lastEventAt: 3_000 });
  });

  it('rejects an event of another type', () => {
    expect(() =>
      recordInterruption({ context: startedContextWith(), event: { type: 'backoff.elapsed', at: 1 } }),
    ).toThrow();
  });
});

describe('deepFreeze helper (so the no-mutation checks above can fail)', () => {
  it('makes a nested write throw', () => {
    const frozen = deepFreeze(startedContextWith());
    expect(() => {
      (frozen.usage as { modelCalls: number }).modelCalls = 1;
    }).toThrow(TypeError);
  });
});
