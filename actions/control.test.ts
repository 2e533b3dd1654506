import { describe, expect, it } from 'vitest';
import {
  completeTask,
  failTask,
  nudge,
  nudgeAndReflect,
  nudgeOnDecision,
  requestArgumentRepair,
  requestParseRepair,
  requestReflection,
  scheduleBackoff,
  skipFailedTask,
  stopRun,
  stopWithTaskFailure,
} from './control.js';
import { FRESH_PROGRESS, FRESH_TASK_COUNTERS } from './initial-context.js';
import type { LoopContext, LoopEvent, NoProgressSignal, StopReason, TaskPlan } from '../machines/types.js';
import {
  backoffElapsed,
  evaluationRejected,
  finalReply,
  modelFailed,
  reduce,
  sortedKeys,
  startedContextWith,
  toolCallsReply,
  toolsCompleted,
  unparseableReply,
  type ContextOverrides,
} from '../test/support/statechart-fixtures.js';

/** Two tasks, so the failure details can name them and the completion detail can count them. */
const CLASSIFY_THEN_DRAFT: TaskPlan[] = [
  { id: 'classify', onFailure: 'continue' },
  { id: 'draft', onFailure: 'stop' },
];

/** A started run of `CLASSIFY_THEN_DRAFT`. */
const twoTaskContext = (overrides: ContextOverrides = {}): LoopContext =>
  startedContextWith({ tasks: CLASSIFY_THEN_DRAFT, ...overrides });

/** A tool round with a timed-out side effect whose outcome cannot be known. */
const unknownOutcomeRound = toolsCompleted({ timedOutCalls: 1, unknownOutcomeCalls: 1 });

describe('scheduleBackoff', () => {
  it('sets retryAt to the failure time plus the chosen delay and counts one transport retry', () => {
    const context = twoTaskContext({ task: { steps: 2, transportRetries: 1, reflectionRetries: 1, argumentRepairs: 1 } });
    const result = reduce(scheduleBackoff, context, modelFailed('transient', { at: 2_000, message: '503', retryDelayMs: 750 }));
    expect(result).toEqual({
      retryAt: 2_750,
      task: { steps: 2, transportRetries: 2, reflectionRetries: 1, argumentRepairs: 1 },
    });
  });

  it('rejects an event of another type', () => {
    expect(() => scheduleBackoff({ context: twoTaskContext(), event: backoffElapsed() })).toThrow();
  });
});

describe('requestArgumentRepair', () => {
  it('asks for argument-repair feedback and counts one repair, leaving the other counters', () => {
    const context = twoTaskContext({ task: { steps: 3, transportRetries: 1, reflectionRetries: 0, argumentRepairs: 0 } });
    const event = toolCallsReply({ invalidCalls: 1, parseError: 'schema:order_id' });
    expect(reduce(requestArgumentRepair, context, event)).toEqual({
      feedback: { kind: 'argument_repair' },
      task: { steps: 3, transportRetries: 1, reflectionRetries: 0, argumentRepairs: 1 },
    });
  });
});

describe('requestParseRepair', () => {
  it('feeds the parse error of an unparseable reply back, and changes nothing else', () => {
    const result = reduce(requestParseRepair, twoTaskContext(), unparseableReply('empty_reply'));
    expect(result).toEqual({ feedback: { kind: 'parse_error', parseError: 'empty_reply' } });
  });

  it('falls back to a generic key for a decision that is not unparseable', () => {
    const result = reduce(requestParseRepair, twoTaskContext(), toolCallsReply());
    expect(result).toEqual({ feedback: { kind: 'parse_error', parseError: 'unparseable_reply' } });
  });

  it('rejects an event of another type', () => {
    expect(() => requestParseRepair({ context: twoTaskContext(), event: evaluationRejected('x') })).toThrow();
  });
});

describe('requestReflection', () => {
  it('feeds the evaluator reason back and counts one reflection retry', () => {
    const context = twoTaskContext({ task: { steps: 2, transportRetries: 2, reflectionRetries: 0, argumentRepairs: 0 } });
    expect(reduce(requestReflection, context, evaluationRejected('missing field total'))).toEqual({
      feedback: { kind: 'reflection', reason: 'missing field total' },
      task: { steps: 2, transportRetries: 2, reflectionRetries: 1, argumentRepairs: 0 },
    });
  });

  it('rejects an event of another type', () => {
    expect(() => requestReflection({ context: twoTaskContext(), event: modelFailed() })).toThrow();
  });
});

describe('nudge', () => {
  it.each(['plan_stall', 'duplicate_observation'] satisfies NoProgressSignal[])(
    'records the step and the signal (%s) and asks for nudge feedback',
    (signal) => {
      const context = twoTaskContext({ steps: 4, progress: { unchangedStateStreak: 2, duplicateObservationStreak: 3 } });
      const result = reduce(nudge, context, unknownOutcomeRound, { signal });
      expect(sortedKeys(result)).toEqual(['feedback', 'progress']);
      expect(result.feedback).toEqual({ kind: 'nudge', signal });
      expect(result.progress).toEqual({
        ...context.progress,
        nudgedAtStep: 4,
        lastSignal: signal,
      });
    },
  );
});

describe('nudgeOnDecision', () => {
  it('nudges with the signal the decision raised', () => {
    const context = twoTaskContext({ steps: 6 });
    const result = reduce(nudgeOnDecision, context, toolCallsReply({ maxRepeatCount: 3 }));
    expect(result.feedback).toEqual({ kind: 'nudge', signal: 'repeated_tool_call' });
    expect(result.progress).toMatchObject({ nudgedAtStep: 6, lastSignal: 'repeated_tool_call' });
  });

  it('names the highest-precedence signal when several fire', () => {
    const context = twoTaskContext({ steps: 6, progress: { sameParseErrorStreak: 3, unchangedStateStreak: 3 } });
    const event = toolCallsReply({ invalidCalls: 1, parseError: 'bad_json', maxRepeatCount: 3 });
    expect(reduce(nudgeOnDecision, context, event).feedback).toEqual({ kind: 'nudge', signal: 'same_parse_error' });
  });

  it('nudges with unchanged_state for an unchanged digest', () => {
    const context = twoTaskContext({ steps: 6, progress: { unchangedStateStreak: 3 } });
    expect(reduce(nudgeOnDecision, context, finalReply()).feedback).toEqual({
      kind: 'nudge',
      signal: 'unchanged_state',
    });
  });
});

describe('nudgeAndReflect', () => {
  it('nudges with same_evaluator_reason and counts one reflection retry', () => {
    const context = twoTaskContext({ steps: 5, task: { steps: 5, reflectionRetries: 1 }, progress: { sameReasonStreak: 2 } });
    const result = reduce(nudgeAndReflect, context, evaluationRejected('missing total'));
    expect(sortedKeys(result)).toEqual(['feedback', 'progress', 'task']);
    expect(result.feedback).toEqual({ kind: 'nudge', signal: 'same_evaluator_reason' });
    expect(result.progress).toMatchObject({ nudgedAtStep: 5, lastSignal: 'same_evaluator_reason', sameReasonStreak: 2 });
    expect(result.task).toEqual({ steps: 5, transportRetries: 0, reflectionRetries: 2, argumentRepairs: 0 });
  });

  it('rejects an event of another type', () => {
    expect(() => nudgeAndReflect({ context: twoTaskContext(), event: finalReply() })).toThrow();
  });
});

describe('stopRun', () => {
  const stop = (reason: StopReason, context: LoopContext, event: LoopEvent) => reduce(stopRun, context, event, { reason });

  it('records the reason, clears the feedback, and touches nothing else', () => {
    const result = stop('max_steps', twoTaskContext({ feedback: { kind: 'argument_repair' } }), backoffElapsed());
    expect(sortedKeys(result)).toEqual(['feedback', 'stop']);
    expect(result.feedback).toBeNull();
    expect(result.stop?.reason).toBe('max_steps');
  });

  it('completed: says how many of the tasks passed', () => {
    expect(stop('completed', twoTaskContext({ completedTasks: 2 }), evaluationRejected('')).stop?.detail).toBe(
      '2 of 2 task(s) passed evaluation',
    );
    expect(stop('completed', twoTaskContext({ completedTasks: 1, failedTasks: 1 }), evaluationRejected('')).stop?.detail).toBe(
      '1 of 2 task(s) passed evaluation',
    );
  });

  it('max_steps and deadline_exceeded: name the limit', () => {
    expect(stop('max_steps', twoTaskContext({ limits: { maxSteps: 7 } }), backoffElapsed()).stop?.detail).toContain('maxSteps (7)');
    expect(stop('deadline_exceeded', twoTaskContext({ limits: { deadlineMs: 4_321 } }), backoffElapsed()).stop?.detail).toContain(
      '4321 ms',
    );
  });

  describe('budget_exhausted names the budget that ran out', () => {
    it('cost', () => {
      const context = twoTaskContext({ limits: { maxCostUsd: 0.5 }, usage: { costUsd: 0.5 } });
      const detail = stop('budget_exhausted', context, backoffElapsed()).stop?.detail;
      expect(detail).toContain('maxCostUsd');
      expect(detail).toContain('0.500000');
    });

    it('output tokens', () => {
      const context = twoTaskContext({ limits: { maxOutputTokens: 300 }, usage: { outputTokens: 300 } });
      const detail = stop('budget_exhausted', context, backoffElapsed()).stop?.detail;
      expect(detail).toContain('maxOutputTokens (300)');
      expect(detail).not.toContain('maxCostUsd');
    });

    it('input estimate', () => {
      const context = twoTaskContext({ limits: { maxInputTokens: 1_000 }, usage: { inputTokens: 800 }, nextRequestTokens: 250 });
      const detail = stop('budget_exhausted', context, backoffElapsed()).stop?.detail;
      expect(detail).toContain('maxInputTokens (1000');
      expect(detail).toContain('~250');
      expect(detail).toContain('used 800');
      expect(detail).not.toContain('maxOutputTokens');
    });
  });

  describe('no_progress names the signal', () => {
    it('from the decision that stopped the run', () => {
      const context = twoTaskContext({ progress: { lastSignal: 'plan_stall', unchangedStateStreak: 3 } });
      expect(stop('no_progress', context, finalReply()).stop?.detail).toBe(
        'no progress after a nudge: unchanged_state',
      );
    });

    it('from the last signal when the event is not a decision', () => {
      const context = twoTaskContext({ progress: { lastSignal: 'duplicate_observation', duplicateObservationStreak: 3 } });
      expect(stop('no_progress', context, unknownOutcomeRound).stop?.detail).toBe('no progress after a nudge: duplicate_observation');
    });
  });

  it('cancelled: carries the cancel message, or says cancelled without one', () => {
    expect(stop('cancelled', twoTaskContext(), { type: 'run.cancelRequested', at: 2_000, message: 'user pressed stop' }).stop?.detail).toBe(
      'cancelled: user pressed stop',
    );
    expect(stop('cancelled', twoTaskContext(), { type: 'run.cancelRequested', at: 2_000, message: '' }).stop?.detail).toBe('cancelled');
  });

  it('needs_human: tells an unknown tool outcome from a call needing approval', () => {
    expect(stop('needs_human', twoTaskContext(), unknownOutcomeRound).stop?.detail).toContain('outcome cannot be known');
    expect(stop('needs_human', twoTaskContext(), toolCallsReply({ approvalCalls: 1 })).stop?.detail).toContain('approval');
  });

  it('permission_denied and tool_unavailable: say what happened', () => {
    expect(stop('permission_denied', twoTaskContext(), toolCallsReply({ deniedCalls: 1 })).stop?.detail).toContain('denied');
    expect(stop('tool_unavailable', twoTaskContext(), toolCallsReply({ unavailableCalls: 1 })).stop?.detail).toContain(
      'unavailable',
    );
  });

  it('fatal_error: carries the model error message', () => {
    const event: LoopEvent = { type: 'model.failed', at: 2_000, failure: 'fatal', message: '401 invalid api key', retryDelayMs: 0 };
    expect(stop('fatal_error', twoTaskContext(), event).stop?.detail).toBe('model call failed: 401 invalid api key');
  });
});

describe('failTask', () => {
  it('records and counts the failure of the task, not a stop of the run, and clears the feedback', () => {
    const context = twoTaskContext({ task: { transportRetries: 2 }, feedback: { kind: 'transport_retry' } });
    const result = reduce(failTask, context, modelFailed(), { reason: 'retries_exhausted' });
    expect(sortedKeys(result)).toEqual(['failedTasks', 'failure', 'feedback']);
    expect(result.feedback).toBeNull();
    expect(result.failedTasks).toBe(1);
    expect(result.failure?.reason).toBe('retries_exhausted');
  });

  it('retries_exhausted after transport failures: names the task, the retry count and the error', () => {
    const context = twoTaskContext({ task: { transportRetries: 2 } });
    const detail = reduce(failTask, context, modelFailed(), { reason: 'retries_exhausted' }).failure?.detail;
    expect(detail).toBe('task classify: model call failed after 2 transport retries: 503 service unavailable');
  });

  it('retries_exhausted after reflections: names the task, the retry count and the evaluator reason', () => {
    const context = twoTaskContext({ taskIndex: 1, task: { reflectionRetries: 2 } });
    const detail = reduce(failTask, context, evaluationRejected('missing field total'), { reason: 'retries_exhausted' }).failure?.detail;
    expect(detail).toBe('task draft: evaluation still failing after 2 reflection retries: missing field total');
  });

  it('retries_exhausted after argument repairs: names the task and the repair count', () => {
    const context = twoTaskContext({ task: { argumentRepairs: 1 } });
    const event = toolCallsReply({ invalidCalls: 1, parseError: 'schema:order_id' });
    expect(reduce(failTask, context, event, { reason: 'retries_exhausted' }).failure?.detail).toBe(
      'task classify: tool arguments still invalid after 1 repair(s)',
    );
  });

  it('fatal_error: carries the model error message', () => {
    const event: LoopEvent = { type: 'model.failed', at: 2_000, failure: 'fatal', message: '400 bad request', retryDelayMs: 0 };
    expect(reduce(failTask, twoTaskContext(), event, { reason: 'fatal_error' }).failure).toEqual({
      reason: 'fatal_error',
      detail: 'model call failed: 400 bad request',
    });
  });
});

describe('stopWithTaskFailure', () => {
  it('moves the recorded task failure onto the run', () => {
    const failure = { reason: 'retries_exhausted' as const, detail: 'task draft: ...' };
    expect(reduce(stopWithTaskFailure, twoTaskContext({ failure }), evaluationRejected('x'))).toEqual({ stop: failure });
  });

  it('falls back to fatal_error when no failure was recorded', () => {
    expect(reduce(stopWithTaskFailure, twoTaskContext(), evaluationRejected('x')).stop?.reason).toBe('fatal_error');
  });
});

describe('completeTask and skipFailedTask', () => {
  const midTask = (): LoopContext =>
    twoTaskContext({
      taskIndex: 0,
      steps: 6,
      completedTasks: 0,
      failedTasks: 0,
      usage: { inputTokens: 900, modelCalls: 6 },
      task: { steps: 6, transportRetries: 2, reflectionRetries: 1, argumentRepairs: 1 },
      progress: {
        lastStateDigest: 'digest-6',
        unchangedStateStreak: 2,
        lastEvaluatorReason: 'missing total',
        sameReasonStreak: 1,
        duplicateObservationStreak: 2,
        lastParseError: 'bad_json',
        sameParseErrorStreak: 1,
        nudgedAtStep: 4,
        lastSignal: 'plan_stall',
      },
      feedback: { kind: 'reflection', reason: 'missing total' },
      failure: { reason: 'retries_exhausted', detail: 'x' },
    });

  it('completeTask advances the task, resets its counters and streaks (keeping the digest) and counts a completion', () => {
    const result = reduce(completeTask, midTask(), evaluationRejected(''));
    expect(result).toEqual({
      taskIndex: 1,
      task: FRESH_TASK_COUNTERS,
      progress: { ...FRESH_PROGRESS, lastStateDigest: 'digest-6' },
      feedback: null,
      completedTasks: 1,
    });
  });

  it('skipFailedTask advances the task the same way; the failure was already counted by failTask', () => {
    const result = reduce(skipFailedTask, midTask(), evaluationRejected('missing total'));
    expect(result).toEqual({
      taskIndex: 1,
      task: FRESH_TASK_COUNTERS,
      progress: { ...FRESH_PROGRESS, lastStateDigest: 'digest-6' },
      feedback: null,
    });
  });

  it('skipFailedTask keeps the recorded failure, so the driver can name it in the skip warning', () => {
    expect(reduce(skipFailedTask, midTask(), evaluationRejected('missing total'))).not.toHaveProperty('failure');
  });

  it('the fresh counters start every retry layer at zero', () => {
    expect(FRESH_TASK_COUNTERS).toEqual({ steps: 0, transportRetries: 0, reflectionRetries: 0, argumentRepairs: 0 });
    expect(FRESH_PROGRESS.nudgedAtStep).toBeNull();
  });
});
