import { describe, expect, it } from 'vitest';
import {
  recordBackoffElapsed,
  recordEvaluation,
  recordInterruption,
  recordModelFailure,
  recordModelResponse,
  recordToolRound,
  startRun,
} from './record.js';
import type { LoopEvent, ModelDecision } from '../machines/types.js';
import {
  contextWith,
  deepFreeze,
  evaluationCompleted,
  evaluationPassed,
  evaluationRejected,
  finalReply,
  modelResponded,
  reduce,
  sortedKeys,
  startedContextWith,
  toolCallsDecision,
  toolCallsReply,
  toolsCompleted,
  unparseableReply,
} from '../test/support/statechart-fixtures.js';

describe('startRun', () => {
  it('records the start time, the clock and the first request estimate, and nothing else', () => {
    const context = contextWith();
    const result = reduce(startRun, context, { type: 'run.started', at: 5_000, nextRequestTokens: 42 });
    expect(result).toEqual({ startedAt: 5_000, lastEventAt: 5_000, nextRequestTokens: 42 });
  });

  it('rejects an event of another type', () => {
    expect(() => startRun({ context: startedContextWith(), event: { type: 'backoff.elapsed', at: 1 } })).toThrow();
  });
});

describe('recordModelResponse', () => {
  it('returns only the fields a response changes', () => {
    const result = reduce(recordModelResponse, startedContextWith(), finalReply());
    expect(sortedKeys(result)).toEqual(['feedback', 'lastEventAt', 'nextRequestTokens', 'progress', 'steps', 'task', 'usage']);
  });

  it('counts a step in the run and in the task, and clears the feedback the request carried', () => {
    const context = startedContextWith({ steps: 3, task: { steps: 1 }, feedback: { kind: 'argument_repair' } });
    const result = reduce(recordModelResponse, context, finalReply());
    expect(result.steps).toBe(4);
    expect(result.task?.steps).toBe(2);
    expect(result.feedback).toBeNull();
  });

  it('adds the call usage to the totals and counts one model call, leaving tool calls alone', () => {
    const context = startedContextWith({ usage: { inputTokens: 1_000, outputTokens: 200, costUsd: 0.5, modelCalls: 4, toolCalls: 7 } });
    const result = reduce(recordModelResponse, context, finalReply({ usage: { inputTokens: 100, outputTokens: 20, costUsd: 0.25 } }));
    expect(result.usage).toEqual({ inputTokens: 1_100, outputTokens: 220, costUsd: 0.75, modelCalls: 5, toolCalls: 7 });
  });

  it('takes the next request estimate from the event and never moves the clock backwards', () => {
    const later = reduce(recordModelResponse, startedContextWith({ lastEventAt: 1_000 }), finalReply({ at: 2_500, nextRequestTokens: 77 }));
    expect(later.lastEventAt).toBe(2_500);
    expect(later.nextRequestTokens).toBe(77);
    const earlier = reduce(recordModelResponse, startedContextWith({ lastEventAt: 3_000 }), finalReply({ at: 2_500 }));
    expect(earlier.lastEventAt).toBe(3_000);
  });

  it('leaves the transport and reflection counters alone', () => {
    const context = startedContextWith({ task: { transportRetries: 2, reflectionRetries: 1 } });
    const result = reduce(recordModelResponse, context, finalReply());
    expect(result.task).toMatchObject({ transportRetries: 2, reflectionRetries: 1 });
  });

  describe('unchanged-state streak', () => {
    it('counts the first digest of the run as 1, like every other streak', () => {
      const result = reduce(recordModelResponse, startedContextWith(), finalReply({ stateDigest: 'a' }));
      expect(result.progress).toMatchObject({ lastStateDigest: 'a', unchangedStateStreak: 1 });
    });

    it('grows by one when the digest repeats', () => {
      const context = startedContextWith({ progress: { lastStateDigest: 'a', unchangedStateStreak: 2 } });
      const result = reduce(recordModelResponse, context, finalReply({ stateDigest: 'a' }));
      expect(result.progress).toMatchObject({ lastStateDigest: 'a', unchangedStateStreak: 3 });
    });

    it('resets when the digest changes', () => {
      const context = startedContextWith({ progress: { lastStateDigest: 'a', unchangedStateStreak: 2 } });
      const result = reduce(recordModelResponse, context, finalReply({ stateDigest: 'b' }));
      expect(result.progress).toMatchObject({ lastStateDigest: 'b', unchangedStateStreak: 1 });
    });
  });

  describe('same-parse-error streak', () => {
    it('starts at 1 on the first parse error', () => {
      const result = reduce(recordModelResponse, startedContextWith(), unparseableReply('empty_reply'));
      expect(result.progress).toMatchObject({ lastParseError: 'empty_reply', sameParseErrorStreak: 1 });
    });

    it('grows when the same parse error repeats, from an unparseable reply or an invalid tool call', () => {
      const context = startedContextWith({ progress: { lastParseError: 'bad_json', sameParseErrorStreak: 1 } });
      const viaToolCall = reduce(
        recordModelResponse,
        context,
        toolCallsReply({ invalidCalls: 1, parseError: 'bad_json' }),
      );
      expect(viaToolCall.progress).toMatchObject({ lastParseError: 'bad_json', sameParseErrorStreak: 2 });
      const viaUnparseable = reduce(recordModelResponse, context, unparseableReply('bad_json'));
      expect(viaUnparseable.progress).toMatchObject({ sameParseErrorStreak: 2 });
    });

    it('restarts at 1 on a different parse error', () => {
      const context = startedContextWith({ progress: { lastParseError: 'bad_json', sameParseErrorStreak: 2 } });
      const result = reduce(recordModelResponse, context, unparseableReply('empty_reply'));
      expect(result.progress).toMatchObject({ lastParseError: 'empty_reply', sameParseErrorStreak: 1 });
    });

    it('resets to 0 on a reply without a parse error', () => {
      const context = startedContextWith({ progress: { lastParseError: 'bad_json', sameParseErrorStreak: 2 } });
      for (const decision of [{ kind: 'final' } as const, toolCallsDecision()]) {
        const result = reduce(recordModelResponse, context, modelResponded(decision));
        expect(result.progress).toMatchObject({ lastParseError: null, sameParseErrorStreak: 0 });
      }
    });
  });

  it('keeps the other progress fields (evaluator streak, duplicate streak, nudge)', () => {
    const progress = {
      lastEvaluatorReason: 'missing total',
      sameReasonStreak: 1,
      duplicateObservationStreak: 2,
      nudgedAtStep: 3,
      lastSignal: 'duplicate_observation' as const,
    };
    const result = reduce(recordModelResponse, startedContextWith({ progress }), finalReply());
    expect(result.progress).toMatchObject(progress);
  });

  describe('argument repair counter', () => {
    const repairing = startedContextWith({ task: { argumentRepairs: 1 } });

    it('resets on a valid tool-call decision', () => {
      expect(reduce(recordModelResponse, repairing, toolCallsReply()).task?.argumentRepairs).toBe(0);
    });

    it('resets on a final reply', () => {
      expect(reduce(recordModelResponse, repairing, finalReply()).task?.argumentRepairs).toBe(0);
    });

    it('is kept on a decision with an invalid call', () => {
      const decision = toolCallsDecision({ calls: 2, invalidCalls: 1, parseError: 'schema:order_id' });
      expect(reduce(recordModelResponse, repairing, modelResponded(decision)).task?.argumentRepairs).toBe(1);
    });

    it('is kept on an unparseable reply', () => {
      const decision: ModelDecision = { kind: 'unparseable', parseError: 'empty_reply' };
      expect(reduce(recordModelResponse, repairing, modelResponded(decision)).task?.argumentRepairs).toBe(1);
    });
  });

  it('rejects an event of another type', () => {
    expect(() => recordModelResponse({ context: startedContextWith(), event: evaluationPassed() })).toThrow();
  });
});

describe('recordModelFailure', () => {
  const failed: LoopEvent = { type: 'model.failed', at: 2_000, failure: 'transient', message: '503', retryDelayMs: 100 };

  it('counts the failed call as a model call without adding tokens or cost, and clears the feedback', () => {
    const context = startedContextWith({
      usage: { inputTokens: 500, outputTokens: 50, costUsd: 0.1, modelCalls: 2, toolCalls: 1 },
      feedback: { kind: 'reflection', reason: 'missing total' },
    });
    const result = reduce(recordModelFailure, context, failed);
    expect(result).toEqual({
      lastEventAt: 2_000,
      usage: { inputTokens: 500, outputTokens: 50, costUsd: 0.1, modelCalls: 3, toolCalls: 1 },
      feedback: null,
    });
  });

  it('does not count a step', () => {
    expect(reduce(recordModelFailure, startedContextWith({ steps: 2 }), failed)).not.toHaveProperty('steps');
  });

  it('never moves the clock backwards', () => {
    expect(reduce(recordModelFailure, startedContextWith({ lastEventAt: 9_000 }), failed).lastEventAt).toBe(9_000);
  });

  it('rejects an event of another type', () => {
    expect(() => recordModelFailure({ context: startedContextWith(), event: finalReply() })).toThrow();
  });
});

describe('recordToolRound', () => {
  it('counts the round calls as tool calls and records the clock and next estimate', () => {
    const context = startedContextWith({ usage: { toolCalls: 3, modelCalls: 2, inputTokens: 10 } });
    const result = reduce(recordToolRound, context, toolsCompleted({ calls: 2 }, { at: 2_500, nextRequestTokens: 640 }));
    expect(sortedKeys(result)).toEqual(['lastEventAt', 'nextRequestTokens', 'progress', 'usage']);
    expect(result.usage).toEqual({ ...context.usage, toolCalls: 5 });
    expect(result.lastEventAt).toBe(2_500);
    expect(result.nextRequestTokens).toBe(640);
  });

  it('grows the duplicate-observation streak when every observation was seen before', () => {
    const context = startedContextWith({ progress: { duplicateObservationStreak: 1 } });
    expect(reduce(recordToolRound, context, toolsCompleted({ allObservationsSeen: true })).progress?.duplicateObservationStreak).toBe(2);
  });

  it('resets the duplicate-observation streak when the round brought something new', () => {
    const context = startedContextWith({ progress: { duplicateObservationStreak: 2 } });
    expect(reduce(recordToolRound, context, toolsCompleted({ allObservationsSeen: false })).progress?.duplicateObservationStreak).toBe(
      0,
    );
  });

  it('keeps the other progress fields', () => {
    const context = startedContextWith({ progress: { lastStateDigest: 'a', unchangedStateStreak: 2, nudgedAtStep: 1 } });
    expect(reduce(recordToolRound, context, toolsCompleted()).progress).toMatchObject({
      lastStateDigest: 'a',
      unchangedStateStreak: 2,
      nudgedAtStep: 1,
    });
  });

  it('never moves the clock backwards', () => {
    expect(reduce(recordToolRound, startedContextWith({ lastEventAt: 9_000 }), toolsCompleted({}, { at: 2_000 })).lastEventAt).toBe(9_000);
  });

  it('rejects an event of another type', () => {
    expect(() => recordToolRound({ context: startedContextWith(), event: finalReply() })).toThrow();
  });
});

describe('recordEvaluation', () => {
  it('leaves usage as it was when no judge ran', () => {
    const context = startedContextWith({ usage: { inputTokens: 10, costUsd: 0.2, modelCalls: 1 } });
    const result = reduce(recordEvaluation, context, evaluationRejected('missing total'));
    expect(result.usage).toEqual(context.usage);
  });

  it('adds a judge call to the usage and counts it as a model call', () => {
    const context = startedContextWith({ usage: { inputTokens: 10, outputTokens: 5, costUsd: 0.2, modelCalls: 1, toolCalls: 4 } });
    const result = reduce(recordEvaluation, context, evaluationPassed({ usage: { inputTokens: 30, outputTokens: 3, costUsd: 0.05 } }));
    expect(result.usage?.inputTokens).toBe(40);
    expect(result.usage?.outputTokens).toBe(8);
    expect(result.usage?.costUsd).toBeCloseTo(0.25, 12);
    expect(result.usage?.modelCalls).toBe(2);
    expect(result.usage?.toolCalls).toBe(4);
  });

  it('records the clock and the next request estimate', () => {
    const result = reduce(recordEvaluation, startedContextWith(), evaluationRejected('x', { at: 2_750, nextRequestTokens: 400 }));
    expect(result.lastEventAt).toBe(2_750);
    expect(result.nextRequestTokens).toBe(400);
  });

  it('starts the same-reason streak at 1 on the first failure', () => {
    const result = reduce(recordEvaluation, startedContextWith(), evaluationRejected('missing total'));
    expect(result.progress).toMatchObject({ lastEvaluatorReason: 'missing total', sameReasonStreak: 1 });
  });

  it('grows the streak when the failure reason repeats', () => {
    const context = startedContextWith({ progress: { lastEvaluatorReason: 'missing total', sameReasonStreak: 1 } });
    const result = reduce(recordEvaluation, context, evaluationRejected('missing total'));
    expect(result.progress).toMatchObject({ lastEvaluatorReason: 'missing total', sameReasonStreak: 2 });
  });

  it('restarts the streak at 1 when the failure reason changes', () => {
    const context = startedContextWith({ progress: { lastEvaluatorReason: 'missing total', sameReasonStreak: 2 } });
    const result = reduce(recordEvaluation, context, evaluationRejected('total is negative'));
    expect(result.progress).toMatchObject({ lastEvaluatorReason: 'total is negative', sameReasonStreak: 1 });
  });

  it('clears the reason and the streak when the evaluation passes', () => {
    const context = startedContextWith({ progress: { lastEvaluatorReason: 'missing total', sameReasonStreak: 2 } });
    const result = reduce(recordEvaluation, context, evaluationCompleted(true, 'missing total'));
    expect(result.progress).toMatchObject({ lastEvaluatorReason: null, sameReasonStreak: 0 });
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
    expect(reduce(recordInterruption, startedContextWith(), { type: 'run.cancelRequested', at: 3_000, message: 'user' })).toEqual({
      lastEventAt: 3_000,
    });
    expect(reduce(recordInterruption, startedContextWith(), { type: 'run.deadlineReached', at: 4_000 })).toEqual({ lastEventAt: 4_000 });
  });

  it('never moves the clock backwards', () => {
    expect(reduce(recordInterruption, startedContextWith({ lastEventAt: 9_000 }), { type: 'run.deadlineReached', at: 4_000 })).toEqual({
      lastEventAt: 9_000,
    });
  });

  it('rejects an event of another type', () => {
    expect(() => recordInterruption({ context: startedContextWith(), event: { type: 'backoff.elapsed', at: 1 } })).toThrow();
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
