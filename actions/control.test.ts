import { describe, expect, it } from 'vitest';
import {
  completeTask,
  failTask,
  nudge,
  nudgeOnDecision,
  nudgeOnRound,
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
  it("sets retryAt to the failure time plus the chosen delay and counts one retry in the run's total", () => {
    const context = twoTaskContext({
      task: { steps: 2, reflectionRetries: 1, argumentRepairs: 1 },
      transport: { consecutiveFailures: 2, retries: 5 },
    });
    const result = reduce(
      scheduleBackoff,
      context,
      modelFailed('transient', { at: 2_000, message: '503', retryDelayMs: 750 }),
    );
    // The call's failures in a row were counted when the failure was recorded; the task's counters are another layer's.
    expect(result).toEqual({ retryAt: 2_750, transport: { consecutiveFailures: 2, retries: 6 } });
  });

  it('rejects an event of another type', () => {
    expect(() => scheduleBackoff({ context: twoTaskContext(), event: backoffElapsed() })).toThrow();
  });
});

describe('requestArgumentRepair', () => {
  it('asks for argument-repair feedback and counts one repair, leaving the other counters', () => {
    const context = twoTaskContext({ task: { steps: 3, reflectionRetries: 0, argumentRepairs: 0 } });
    const event = toolCallsReply({ invalidCalls: 1, parseError: 'schema:order_id' });
    expect(reduce(requestArgumentRepair, context, event)).toEqual({
      feedback: { kind: 'argument_repair' },
      task: { steps: 3, reflectionRetries: 0, argumentRepairs: 1 },
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
    const context = twoTaskContext({
      task: { steps: 2, reflectionRetries: 0, argumentRepairs: 0 },
      transport: { retries: 2 },
    });
    expect(reduce(requestReflection, context, evaluationRejected('missing field total'))).toEqual({
      feedback: { kind: 'reflection', reason: 'missing field total' },
      task: { steps: 2, reflectionRetries: 1, argumentRepairs: 0 },
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
      const context = twoTaskContext({
        steps: 4,
        progress: { unchangedStateStreak: 2, duplicateObservationStreak: 3 },
      });
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
    const context = twoTaskContext({ steps: 6, progress: { unchangedStateStreak: 3 } });
    const result = reduce(nudgeOnDecision, context, toolCallsReply());
    expect(result.feedback).toEqual({ kind: 'nudge', signal: 'unchanged_state' });
    expect(result.progress).toMatchObject({ nudgedAtStep: 6, lastSignal: 'unchanged_state' });
  });

  it('names the highest-precedence signal when several fire', () => {
    const context = twoTaskContext({ steps: 6, progress: { sameParseErrorStreak: 3, unchangedStateStreak: 3 } });
    const event = toolCallsReply({ invalidCalls: 1, parseError: 'bad_json' });
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

describe('nudgeOnRound', () => {
  it('nudges with repeated_tool_call when a (call, result) triple reached the threshold', () => {
    const context = twoTaskContext({ steps: 4, progress: { repeatCount: 3, repeatedTool: 'lookup' } });
    const result = reduce(nudgeOnRound, context, toolsCompleted({ maxRepeatCount: 3, repeatedTool: 'lookup' }));
    expect(sortedKeys(result)).toEqual(['feedback', 'progress']);
    expect(result.feedback).toEqual({ kind: 'nudge', signal: 'repeated_tool_call' });
    expect(result.progress).toEqual({ ...context.progress, nudgedAtStep: 4, lastSignal: 'repeated_tool_call' });
  });

  it('nudges with duplicate_observation when only the seen-before streak fired', () => {
    const context = twoTaskContext({ steps: 4, progress: { repeatCount: 1, duplicateObservationStreak: 3 } });
    const result = reduce(nudgeOnRound, context, toolsCompleted({ allObservationsSeen: true }));
    expect(result.feedback).toEqual({ kind: 'nudge', signal: 'duplicate_observation' });
  });
});

describe('stopRun', () => {
  const stop = (reason: StopReason, context: LoopContext, event: LoopEvent) =>
    reduce(stopRun, context, event, { reason });

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
    expect(
      stop('completed', twoTaskContext({ completedTasks: 1, failedTasks: 1 }), evaluationRejected('')).stop?.detail,
    ).toBe('1 of 2 task(s) passed evaluation');
  });

  it('max_steps and deadline_exceeded: name the limit and the option to raise', () => {
    expect(
      stop('max_steps', twoTaskContext({ steps: 7, limits: { maxSteps: 7 } }), backoffElapsed()).stop?.detail,
    ).toBe('reached maxSteps (7) before the task passed evaluation; raise limits.maxSteps');
    expect(
      stop('deadline_exceeded', twoTaskContext({ limits: { deadlineMs: 4_321 } }), backoffElapsed()).stop?.detail,
    ).toBe('the run passed its deadline (4321 ms); raise limits.deadlineMs');
  });

  it('deadline_exceeded before the deadline, by a 429 whose Retry-After reaches past it: names the 429 and the wait', () => {
    // Started at 1 000 with a 60 s deadline; the 429 comes at 50 000 asking for 30 s: the retry would start at 80 000.
    const context = twoTaskContext({
      limits: { deadlineMs: 60_000 },
      usage: { modelCalls: 5 },
      transport: { consecutiveFailures: 1, retries: 1 },
    });
    const event = modelFailed('transient', {
      at: 50_000,
      status: 429,
      retryAfterMs: 30_000,
      retryDelayMs: 30_000,
      message: 'rate limited',
    });
    expect(stop('deadline_exceeded', context, event).stop?.detail).toBe(
      'model call 4 failed (HTTP 429) and the server asked to wait 30000 ms (Retry-After): the retry would start 19000 ms after the deadline (60000 ms; 11000 ms were left), so the run stopped without waiting; raise limits.deadlineMs (or lower retry.maxRetryAfterMs)',
    );
  });

  it('deadline_exceeded before the deadline by a backoff of our own: names the backoff', () => {
    const context = twoTaskContext({
      limits: { deadlineMs: 10_000 },
      usage: { modelCalls: 1 },
      transport: { consecutiveFailures: 1 },
    });
    expect(
      stop('deadline_exceeded', context, modelFailed('transient', { at: 9_000, retryDelayMs: 2_500 })).stop?.detail,
    ).toBe(
      'model call 1 failed (HTTP 503) and its backoff is 2500 ms: the retry would start 500 ms after the deadline (10000 ms; 2000 ms were left), so the run stopped without waiting; raise limits.deadlineMs',
    );
  });

  it('deadline_exceeded by a failure that came after the deadline: the run did pass it', () => {
    const context = twoTaskContext({ limits: { deadlineMs: 10_000 } });
    expect(stop('deadline_exceeded', context, modelFailed('transient', { at: 12_000 })).stop?.detail).toBe(
      'the run passed its deadline (10000 ms); raise limits.deadlineMs',
    );
  });

  it('max_steps: names the run limit when both the run and the task limit are reached', () => {
    const context = twoTaskContext({ steps: 5, task: { steps: 5 }, limits: { maxSteps: 5, maxStepsPerTask: 5 } });
    expect(stop('max_steps', context, backoffElapsed()).stop?.detail).toContain('raise limits.maxSteps');
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

    it('tool calls: the reply asked for more after the run spent maxToolCalls', () => {
      const context = twoTaskContext({ limits: { maxToolCalls: 5 }, usage: { toolCalls: 5 } });
      expect(stop('budget_exhausted', context, toolCallsReply()).stop?.detail).toBe(
        "the model asked for more tool calls after 5 ran, the run's maxToolCalls (5); raise limits.maxToolCalls",
      );
    });

    it('input estimate, even when the tool-call budget is spent too', () => {
      const context = twoTaskContext({
        limits: { maxInputTokens: 1_000, maxToolCalls: 5 },
        usage: { inputTokens: 800, toolCalls: 5 },
        nextRequestTokens: 250,
      });
      const detail = stop('budget_exhausted', context, toolCallsReply()).stop?.detail;
      expect(detail).toContain('maxInputTokens (1000');
      expect(detail).not.toContain('maxToolCalls');
    });

    it('input estimate', () => {
      const context = twoTaskContext({
        limits: { maxInputTokens: 1_000 },
        usage: { inputTokens: 800 },
        nextRequestTokens: 250,
      });
      const detail = stop('budget_exhausted', context, backoffElapsed()).stop?.detail;
      expect(detail).toContain('maxInputTokens (1000');
      expect(detail).toContain('~250');
      expect(detail).toContain('used 800');
      expect(detail).not.toContain('maxOutputTokens');
    });
  });

  describe('no_progress names the signal, its count, the threshold and the option to raise', () => {
    it('from the decision that stopped the run', () => {
      const context = twoTaskContext({ progress: { lastSignal: 'plan_stall', unchangedStateStreak: 3 } });
      expect(stop('no_progress', context, finalReply()).stop?.detail).toBe(
        'no progress after a nudge: unchanged_state: nothing new for 3 decisions in a row (threshold 3); raise noProgress.unchangedState',
      );
    });

    it('from the tool round that stopped the run: repeated_tool_call names the tool', () => {
      const context = twoTaskContext({
        progress: { repeatCount: 3, repeatedTool: 'lookup', lastSignal: 'unchanged_state' },
      });
      expect(
        stop(
          'no_progress',
          context,
          toolsCompleted({ allObservationsSeen: true, maxRepeatCount: 3, repeatedTool: 'lookup' }),
        ).stop?.detail,
      ).toBe(
        'no progress after a nudge: repeated_tool_call: lookup was called with the same arguments and brought the same result 3 times in this task (threshold 3); raise noProgress.repeatedToolCall',
      );
    });

    it('from the tool round that stopped the run: duplicate_observation', () => {
      const context = twoTaskContext({ progress: { duplicateObservationStreak: 3 } });
      expect(stop('no_progress', context, toolsCompleted({ allObservationsSeen: true })).stop?.detail).toBe(
        'no progress after a nudge: duplicate_observation: 3 tool rounds in a row brought only (call, result) pairs already seen in this task (threshold 3); raise noProgress.duplicateObservation',
      );
    });

    it('from the last signal when the event raises none', () => {
      const context = twoTaskContext({
        progress: { lastSignal: 'duplicate_observation', duplicateObservationStreak: 1 },
      });
      expect(stop('no_progress', context, unknownOutcomeRound).stop?.detail).toContain(
        'no progress after a nudge: duplicate_observation: 1 tool rounds',
      );
    });

    it('plan_stall, when given as the signal', () => {
      const context = twoTaskContext({
        noProgress: { planStall: 10 },
        progress: { planActive: true, planStallSteps: 10 },
      });
      expect(
        reduce(stopRun, context, backoffElapsed(), { reason: 'no_progress', signal: 'plan_stall' }).stop?.detail,
      ).toBe(
        'no progress after a nudge: plan_stall: 10 steps without a plan item done or removed (threshold 10); raise noProgress.planStall',
      );
    });

    it('same_evaluator_reason says the reason was fed back, and quotes it', () => {
      const context = twoTaskContext({ progress: { sameReasonStreak: 2, lastEvaluatorReason: 'missing total' } });
      const event = evaluationRejected('missing total');
      expect(
        reduce(stopRun, context, event, { reason: 'no_progress', signal: 'same_evaluator_reason' }).stop?.detail,
      ).toBe(
        'no progress after the reason was fed back: same_evaluator_reason: the same output was rejected 2 times for the same reason (threshold 2): missing total; raise noProgress.sameEvaluatorReason',
      );
    });

    it('same_parse_error names the error', () => {
      const context = twoTaskContext({ progress: { sameParseErrorStreak: 3, lastParseError: 'empty_reply' } });
      expect(stop('no_progress', context, unparseableReply('empty_reply')).stop?.detail).toBe(
        'no progress after a nudge: same_parse_error: empty_reply 3 times in a row (threshold 3); raise noProgress.sameParseError',
      );
    });
  });

  it('cancelled: carries the cancel message, or says cancelled without one', () => {
    expect(
      stop('cancelled', twoTaskContext(), { type: 'run.cancelRequested', at: 2_000, message: 'user pressed stop' }).stop
        ?.detail,
    ).toBe('cancelled: user pressed stop');
    expect(
      stop('cancelled', twoTaskContext(), { type: 'run.cancelRequested', at: 2_000, message: '' }).stop?.detail,
    ).toBe('cancelled');
  });

  it('needs_human: tells an unknown tool outcome from a call needing approval, naming that tool', () => {
    expect(stop('needs_human', twoTaskContext(), unknownOutcomeRound).stop?.detail).toContain(
      'outcome cannot be known',
    );
    expect(
      stop('needs_human', twoTaskContext(), toolCallsReply({ approvalCalls: 1, blockedTool: 'refund' })).stop?.detail,
    ).toBe(`tool "refund" needs a person's approval (see pendingApprovals)`);
  });

  it('permission_denied and tool_unavailable: name the blocked tool of the decision', () => {
    expect(
      stop('permission_denied', twoTaskContext(), toolCallsReply({ deniedCalls: 1, blockedTool: 'delete_user' })).stop
        ?.detail,
    ).toBe(
      `the policy denied tool "delete_user"; it is never retried (set policy.onDeny to 'tell_model' to let the model work around denials)`,
    );
    expect(
      stop('tool_unavailable', twoTaskContext(), toolCallsReply({ unavailableCalls: 1, blockedTool: 'search' })).stop
        ?.detail,
    ).toBe('tool "search", which the task needs, is unavailable (circuit breaker open)');
  });

  it('tool_unavailable after a tool round: no tool name is known, so none is made up', () => {
    const round = toolsCompleted({ requiredToolUnavailable: true, maxRepeatCount: 3, repeatedTool: 'lookup' });
    expect(stop('tool_unavailable', twoTaskContext(), round).stop?.detail).toBe(
      'a tool the task needs is unavailable (circuit breaker open)',
    );
  });

  it('fatal_error: carries the model error message', () => {
    const event: LoopEvent = {
      type: 'model.failed',
      at: 2_000,
      failure: 'fatal',
      message: '401 invalid api key',
      retryDelayMs: 0,
    };
    expect(stop('fatal_error', twoTaskContext(), event).stop?.detail).toBe('model call failed: 401 invalid api key');
  });
});

describe('failTask', () => {
  it('records and counts the failure of the task, not a stop of the run, and clears the feedback', () => {
    const context = twoTaskContext({
      transport: { consecutiveFailures: 3, retries: 2 },
      feedback: { kind: 'transport_retry' },
    });
    const result = reduce(failTask, context, modelFailed(), { reason: 'retries_exhausted' });
    expect(sortedKeys(result)).toEqual(['failedTasks', 'failure', 'feedback']);
    expect(result.feedback).toBeNull();
    expect(result.failedTasks).toBe(1);
    expect(result.failure?.reason).toBe('retries_exhausted');
  });

  it('retries_exhausted after transport failures: names the task, the failures in a row, the call, the status and the option', () => {
    // The 17th model call of the run failed a third time in a row (19 attempts so far, 2 of them retries of this call).
    const context = twoTaskContext({ usage: { modelCalls: 19 }, transport: { consecutiveFailures: 3, retries: 2 } });
    const detail = reduce(failTask, context, modelFailed(), { reason: 'retries_exhausted' }).failure?.detail;
    expect(detail).toBe(
      'task classify: 3rd consecutive transport failure of model call 17 (HTTP 503); raise limits.maxTransportAttempts (3). Last error: 503 service unavailable',
    );
  });

  it("retries_exhausted by the run-wide cap: names maxTransportRetries, not the call's attempts", () => {
    const context = twoTaskContext({
      limits: { maxTransportRetries: 4 },
      usage: { modelCalls: 12 },
      transport: { consecutiveFailures: 1, retries: 4 },
    });
    const detail = reduce(failTask, context, modelFailed('transient', { status: 502, message: 'bad gateway' }), {
      reason: 'retries_exhausted',
    }).failure?.detail;
    expect(detail).toBe(
      "task classify: model call 8 failed (HTTP 502) with the run's transport retries spent (4 of maxTransportRetries 4); raise limits.maxTransportRetries. Last error: bad gateway",
    );
  });

  it('retries_exhausted without a status names the kind of failure', () => {
    const context = twoTaskContext({
      usage: { modelCalls: 2 },
      transport: { consecutiveFailures: 2, retries: 1 },
      limits: { maxTransportAttempts: 2 },
    });
    const event: LoopEvent = {
      type: 'model.failed',
      at: 2_000,
      failure: 'transient',
      message: 'timed out',
      retryDelayMs: 10,
      errorKind: 'timeout',
    };
    expect(reduce(failTask, context, event, { reason: 'retries_exhausted' }).failure?.detail).toBe(
      'task classify: 2nd consecutive transport failure of model call 1 (timeout); raise limits.maxTransportAttempts (2). Last error: timed out',
    );
  });

  it('retries_exhausted after reflections: names the task, the retry count and the evaluator reason', () => {
    const context = twoTaskContext({ taskIndex: 1, task: { reflectionRetries: 2 } });
    const detail = reduce(failTask, context, evaluationRejected('missing field total'), { reason: 'retries_exhausted' })
      .failure?.detail;
    expect(detail).toBe(
      'task draft: evaluation still failing after 2 reflection retries: missing field total; raise limits.maxRetries',
    );
  });

  it('retries_exhausted after argument repairs: names the task and the repair count', () => {
    const context = twoTaskContext({ task: { argumentRepairs: 1 } });
    const event = toolCallsReply({ invalidCalls: 1, parseError: 'schema:order_id' });
    expect(reduce(failTask, context, event, { reason: 'retries_exhausted' }).failure?.detail).toBe(
      'task classify: tool arguments still invalid after 1 repair(s); raise limits.maxArgumentRepairs',
    );
  });

  it('max_steps for the task: names the task and limits.maxStepsPerTask', () => {
    const context = twoTaskContext({
      taskIndex: 1,
      steps: 6,
      task: { steps: 3 },
      limits: { maxSteps: 10, maxStepsPerTask: 3 },
    });
    expect(reduce(failTask, context, toolCallsReply(), { reason: 'max_steps' }).failure).toEqual({
      reason: 'max_steps',
      detail: 'task draft reached maxStepsPerTask (3) before it passed evaluation; raise limits.maxStepsPerTask',
    });
  });

  it('fatal_error: carries the model error message', () => {
    const event: LoopEvent = {
      type: 'model.failed',
      at: 2_000,
      failure: 'fatal',
      message: '400 bad request',
      retryDelayMs: 0,
    };
    expect(reduce(failTask, twoTaskContext(), event, { reason: 'fatal_error' }).failure).toEqual({
      reason: 'fatal_error',
      detail: 'model call failed: 400 bad request',
    });
  });
});

describe('stopWithTaskFailure', () => {
  it('moves the recorded task failure onto the run', () => {
    const failure = { reason: 'retries_exhausted' as const, detail: 'task draft: ...' };
    expect(reduce(stopWithTaskFailure, twoTaskContext({ failure }), evaluationRejected('x'))).toEqual({
      stop: failure,
    });
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
      task: { steps: 6, reflectionRetries: 1, argumentRepairs: 1 },
      transport: { consecutiveFailures: 3, retries: 7 },
      progress: {
        lastStateDigest: 'digest-6',
        unchangedStateStreak: 2,
        lastEvaluatorReason: 'missing total',
        sameReasonStreak: 1,
        lastOutputDigest: 'out-3',
        duplicateObservationStreak: 2,
        repeatCount: 2,
        repeatedTool: 'lookup',
        planActive: true,
        planStallSteps: 5,
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
      // The next task's first call has every attempt; the run's total stays.
      transport: { consecutiveFailures: 0, retries: 7 },
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
      transport: { consecutiveFailures: 0, retries: 7 },
      progress: { ...FRESH_PROGRESS, lastStateDigest: 'digest-6' },
      feedback: null,
    });
  });

  it('skipFailedTask keeps the recorded failure, so the driver can name it in the skip warning', () => {
    expect(reduce(skipFailedTask, midTask(), evaluationRejected('missing total'))).not.toHaveProperty('failure');
  });

  it('the fresh counters start every retry layer at zero', () => {
    expect(FRESH_TASK_COUNTERS).toEqual({ steps: 0, reflectionRetries: 0, argumentRepairs: 0 });
    expect(FRESH_PROGRESS).toMatchObject({
      nudgedAtStep: null,
      repeatCount: 0,
      repeatedTool: null,
      planActive: false,
      planStallSteps: 0,
      lastOutputDigest: null,
    });
  });
});
