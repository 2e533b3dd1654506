/**
 * The reducers of a step's own events: the run's start, a model's reply or failure, a tool round. The evaluation,
 * backoff and interruption reducers are in record-evaluation-and-interruption.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { recordModelFailure, recordModelResponse, recordToolRound, startRun } from './record.js';
import type { LoopEvent, ModelDecision } from '../machines/types.js';
import {
  contextWith,
  evaluationPassed,
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
    expect(sortedKeys(result)).toEqual([
      'feedback',
      'lastEventAt',
      'nextRequestTokens',
      'progress',
      'steps',
      'task',
      'usage',
    ]);
  });

  it('counts a step in the run and in the task, and clears the feedback the request carried', () => {
    const context = startedContextWith({ steps: 3, task: { steps: 1 }, feedback: { kind: 'argument_repair' } });
    const result = reduce(recordModelResponse, context, finalReply());
    expect(result.steps).toBe(4);
    expect(result.task?.steps).toBe(2);
    expect(result.feedback).toBeNull();
  });

  it('adds the call usage to the totals and counts one model call, leaving tool calls alone', () => {
    const context = startedContextWith({
      usage: { inputTokens: 1_000, outputTokens: 200, costUsd: 0.5, modelCalls: 4, toolCalls: 7 },
    });
    const result = reduce(
      recordModelResponse,
      context,
      finalReply({ usage: { inputTokens: 100, outputTokens: 20, costUsd: 0.25 } }),
    );
    expect(result.usage).toEqual({ inputTokens: 1_100, outputTokens: 220, costUsd: 0.75, modelCalls: 5, toolCalls: 7 });
  });

  it('takes the next request estimate from the event and never moves the clock backwards', () => {
    const later = reduce(
      recordModelResponse,
      startedContextWith({ lastEventAt: 1_000 }),
      finalReply({ at: 2_500, nextRequestTokens: 77 }),
    );
    expect(later.lastEventAt).toBe(2_500);
    expect(later.nextRequestTokens).toBe(77);
    const earlier = reduce(recordModelResponse, startedContextWith({ lastEventAt: 3_000 }), finalReply({ at: 2_500 }));
    expect(earlier.lastEventAt).toBe(3_000);
  });

  it("leaves the reflection counter alone, and ends the call's transport failures in a row (the run's total stays)", () => {
    const context = startedContextWith({
      task: { reflectionRetries: 1 },
      transport: { consecutiveFailures: 2, retries: 6 },
    });
    const result = reduce(recordModelResponse, context, finalReply());
    expect(result.task).toMatchObject({ reflectionRetries: 1 });
    expect(result.transport).toEqual({ consecutiveFailures: 0, retries: 6 });
  });

  it("adds a context summary's transport retries of the same step to the run's total", () => {
    const context = startedContextWith({ transport: { consecutiveFailures: 1, retries: 3 } });
    const event = { ...finalReply(), modelCalls: 3, transportRetries: 1 };
    expect(reduce(recordModelResponse, context, event).transport).toEqual({ consecutiveFailures: 0, retries: 4 });
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

  describe('plan-stall steps', () => {
    it('grow by one per decision while the plan is active, whatever the decision', () => {
      const context = startedContextWith({ progress: { planActive: true, planStallSteps: 2 } });
      for (const event of [finalReply(), toolCallsReply(), unparseableReply('empty_reply')]) {
        expect(reduce(recordModelResponse, context, event).progress?.planStallSteps).toBe(3);
      }
    });

    it('stay at 0 without an active plan, however long the task runs', () => {
      const context = startedContextWith({
        steps: 30,
        task: { steps: 30 },
        progress: { planActive: false, planStallSteps: 0 },
      });
      expect(reduce(recordModelResponse, context, toolCallsReply()).progress).toMatchObject({
        planActive: false,
        planStallSteps: 0,
      });
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
  const failed: LoopEvent = {
    type: 'model.failed',
    at: 2_000,
    failure: 'transient',
    message: '503',
    retryDelayMs: 100,
  };

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
      transport: { consecutiveFailures: 1, retries: 0 },
    });
  });

  it("counts the call's failures in a row, and a summary's retries of the same step in the run's total", () => {
    const context = startedContextWith({ transport: { consecutiveFailures: 1, retries: 4 } });
    expect(reduce(recordModelFailure, context, failed).transport).toEqual({ consecutiveFailures: 2, retries: 4 });
    expect(reduce(recordModelFailure, context, { ...failed, modelCalls: 3, transportRetries: 1 }).transport).toEqual({
      consecutiveFailures: 2,
      retries: 5,
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
    const result = reduce(
      recordToolRound,
      context,
      toolsCompleted({ calls: 2 }, { at: 2_500, nextRequestTokens: 640 }),
    );
    expect(sortedKeys(result)).toEqual(['lastEventAt', 'nextRequestTokens', 'progress', 'usage']);
    expect(result.usage).toEqual({ ...context.usage, toolCalls: 5 });
    expect(result.lastEventAt).toBe(2_500);
    expect(result.nextRequestTokens).toBe(640);
  });

  it('grows the duplicate-observation streak when every observation was seen before', () => {
    const context = startedContextWith({ progress: { duplicateObservationStreak: 1 } });
    expect(
      reduce(recordToolRound, context, toolsCompleted({ allObservationsSeen: true })).progress
        ?.duplicateObservationStreak,
    ).toBe(2);
  });

  it('resets the duplicate-observation streak when the round brought something new', () => {
    const context = startedContextWith({ progress: { duplicateObservationStreak: 2 } });
    expect(
      reduce(recordToolRound, context, toolsCompleted({ allObservationsSeen: false })).progress
        ?.duplicateObservationStreak,
    ).toBe(0);
  });

  it('does not grow the duplicate-observation streak for a round with no successful call', () => {
    // The driver reports allObservationsSeen false when nothing succeeded: a failure is not an observation.
    const context = startedContextWith({ progress: { duplicateObservationStreak: 2 } });
    const failed = toolsCompleted({ failedCalls: 1, maxRepeatCount: 0, allObservationsSeen: false });
    expect(reduce(recordToolRound, context, failed).progress?.duplicateObservationStreak).toBe(0);
  });

  it('records the round repeat count and its tool, replacing the last round values', () => {
    const context = startedContextWith({ progress: { repeatCount: 2, repeatedTool: 'search' } });
    const repeated = reduce(
      recordToolRound,
      context,
      toolsCompleted({ maxRepeatCount: 3, repeatedTool: 'lookup', allObservationsSeen: true }),
    );
    expect(repeated.progress).toMatchObject({ repeatCount: 3, repeatedTool: 'lookup' });
    const fresh = reduce(recordToolRound, context, toolsCompleted({ maxRepeatCount: 1, repeatedTool: null }));
    expect(fresh.progress).toMatchObject({ repeatCount: 1, repeatedTool: null });
  });

  it('keeps the other progress fields', () => {
    // A round of seen results brings no news, so the nudge stays.
    const context = startedContextWith({
      steps: 2,
      progress: { lastStateDigest: 'a', unchangedStateStreak: 2, nudgedAtStep: 1 },
    });
    expect(
      reduce(recordToolRound, context, toolsCompleted({ allObservationsSeen: true, maxRepeatCount: 3 })).progress,
    ).toMatchObject({
      lastStateDigest: 'a',
      unchangedStateStreak: 2,
      nudgedAtStep: 1,
    });
  });

  describe('an earlier nudge', () => {
    // Nudged at step 2, the round of step 3 is the model's answer.
    const nudged = () =>
      startedContextWith({ steps: 3, progress: { nudgedAtStep: 2, lastSignal: 'repeated_tool_call' } });

    it('is cleared by a round that brought news, so the next signal nudges again', () => {
      const result = reduce(
        recordToolRound,
        nudged(),
        toolsCompleted({ maxRepeatCount: 1, allObservationsSeen: false }),
      );
      expect(result.progress?.nudgedAtStep).toBeNull();
    });

    it('is cleared by a round whose repeat is still below the threshold', () => {
      const result = reduce(
        recordToolRound,
        nudged(),
        toolsCompleted({ maxRepeatCount: 2, allObservationsSeen: false }),
      );
      expect(result.progress?.nudgedAtStep).toBeNull();
    });

    it('is kept when the round repeated a call up to the threshold', () => {
      const result = reduce(
        recordToolRound,
        nudged(),
        toolsCompleted({ maxRepeatCount: 3, repeatedTool: 'lookup', allObservationsSeen: true }),
      );
      expect(result.progress?.nudgedAtStep).toBe(2);
    });

    it('is kept when every observation of the round was seen before', () => {
      const result = reduce(
        recordToolRound,
        nudged(),
        toolsCompleted({ maxRepeatCount: 1, allObservationsSeen: true }),
      );
      expect(result.progress?.nudgedAtStep).toBe(2);
    });

    it('is kept when no call succeeded', () => {
      const result = reduce(recordToolRound, nudged(), toolsCompleted({ failedCalls: 1, maxRepeatCount: 0 }));
      expect(result.progress?.nudgedAtStep).toBe(2);
    });

    it('made at this very step is kept: the model has not seen it yet', () => {
      const context = startedContextWith({ steps: 3, progress: { nudgedAtStep: 3 } });
      expect(reduce(recordToolRound, context, toolsCompleted({ maxRepeatCount: 1 })).progress?.nudgedAtStep).toBe(3);
    });

    it('of plan_stall is answered by news too, and the stall count starts over (the plan is nudged again later, never stopped while work goes on)', () => {
      const stalled = startedContextWith({
        steps: 3,
        progress: { nudgedAtStep: 2, lastSignal: 'plan_stall', planActive: true, planStallSteps: 5 },
      });
      expect(reduce(recordToolRound, stalled, toolsCompleted({ maxRepeatCount: 1 })).progress).toMatchObject({
        nudgedAtStep: null,
        planStallSteps: 0,
      });
      const seenOnly = toolsCompleted({ allObservationsSeen: true, maxRepeatCount: 2, plan: null });
      expect(reduce(recordToolRound, stalled, seenOnly).progress).toMatchObject({ nudgedAtStep: 2, planStallSteps: 5 });
      const unmovedPlan = toolsCompleted({ maxRepeatCount: 0, plan: { openItems: 3, progressed: false } });
      expect(reduce(recordToolRound, stalled, unmovedPlan).progress).toMatchObject({
        nudgedAtStep: 2,
        planStallSteps: 5,
      });
      const moved = toolsCompleted({ maxRepeatCount: 0, plan: { openItems: 2, progressed: true } });
      expect(reduce(recordToolRound, stalled, moved).progress).toMatchObject({ nudgedAtStep: null, planStallSteps: 0 });
    });

    it('is answered by any round with a new triple, even one with a call that repeats itself beside it', () => {
      const strict = startedContextWith({
        steps: 3,
        noProgress: { repeatedToolCall: 2 },
        progress: { nudgedAtStep: 2 },
      });
      expect(
        reduce(recordToolRound, strict, toolsCompleted({ maxRepeatCount: 2, allObservationsSeen: false })).progress
          ?.nudgedAtStep,
      ).toBeNull();
      expect(
        reduce(recordToolRound, strict, toolsCompleted({ maxRepeatCount: 2, allObservationsSeen: true })).progress
          ?.nudgedAtStep,
      ).toBe(2);
    });
  });

  describe('plan facts', () => {
    it('a plan with open items makes the plan active; the stall count carries on when nothing progressed', () => {
      const context = startedContextWith({ progress: { planActive: false, planStallSteps: 0 } });
      const created = reduce(recordToolRound, context, toolsCompleted({ plan: { openItems: 3, progressed: false } }));
      expect(created.progress).toMatchObject({ planActive: true, planStallSteps: 0 });
      const stalled = startedContextWith({ progress: { planActive: true, planStallSteps: 4 } });
      const updated = reduce(recordToolRound, stalled, toolsCompleted({ plan: { openItems: 3, progressed: false } }));
      expect(updated.progress).toMatchObject({ planActive: true, planStallSteps: 4 });
    });

    it('a round that completed or removed an item resets the stall count', () => {
      const context = startedContextWith({ progress: { planActive: true, planStallSteps: 4 } });
      const result = reduce(recordToolRound, context, toolsCompleted({ plan: { openItems: 2, progressed: true } }));
      expect(result.progress).toMatchObject({ planActive: true, planStallSteps: 0 });
    });

    it('a plan with no open item left is no longer active', () => {
      const context = startedContextWith({ progress: { planActive: true, planStallSteps: 4 } });
      const result = reduce(recordToolRound, context, toolsCompleted({ plan: { openItems: 0, progressed: true } }));
      expect(result.progress).toMatchObject({ planActive: false, planStallSteps: 0 });
    });

    it('a round without the plan tool keeps the plan state as it was', () => {
      const context = startedContextWith({ progress: { planActive: true, planStallSteps: 4 } });
      const result = reduce(recordToolRound, context, toolsCompleted({ plan: null }));
      expect(result.progress).toMatchObject({ planActive: true, planStallSteps: 4 });
    });
  });

  it('never moves the clock backwards', () => {
    expect(
      reduce(recordToolRound, startedContextWith({ lastEventAt: 9_000 }), toolsCompleted({}, { at: 2_000 }))
        .lastEventAt,
    ).toBe(9_000);
  });

  it('rejects an event of another type', () => {
    expect(() => recordToolRound({ context: startedContextWith(), event: finalReply() })).toThrow();
  });
});
