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
import { createInitialContext, FRESH_PROGRESS, FRESH_TASK_COUNTERS } from './initial-context.js';
import type { ReducerArgs } from './record.js';
import type {
  LoopContext,
  LoopEvent,
  LoopLimits,
  ModelDecision,
  NoProgressSignal,
  ProgressState,
  StopReason,
  TaskCounters,
  Usage,
} from '../machines/types.js';

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const key of Reflect.ownKeys(value)) deepFreeze((value as Record<PropertyKey, unknown>)[key]);
  }
  return value;
}

/** Runs a reducer on a deeply frozen context and event, and checks it left both as they were. */
function reduce<P>(
  reducer: (args: ReducerArgs, params: P) => Partial<LoopContext>,
  context: LoopContext,
  event: LoopEvent,
  params: P,
): Partial<LoopContext> {
  const contextBefore = structuredClone(context);
  const eventBefore = structuredClone(event);
  const result = reducer({ context: deepFreeze(context), event: deepFreeze(event) }, params);
  expect(context).toEqual(contextBefore);
  expect(event).toEqual(eventBefore);
  return result;
}

interface Overrides extends Partial<Omit<LoopContext, 'limits' | 'usage' | 'task' | 'progress'>> {
  limits?: Partial<LoopLimits>;
  usage?: Partial<Usage>;
  task?: Partial<TaskCounters>;
  progress?: Partial<ProgressState>;
}

function contextWith({ limits, usage, task, progress, ...rest }: Overrides = {}): LoopContext {
  const base = createInitialContext({
    input: {
      limits: {
        maxSteps: 10,
        maxRetries: 2,
        deadlineMs: 60_000,
        maxInputTokens: 100_000,
        maxOutputTokens: 10_000,
        maxCostUsd: 1,
        maxParallelTools: 4,
        maxToolResultBytes: 1_024,
        maxArgumentRepairs: 1,
        ...limits,
      },
      noProgress: {
        repeatedToolCall: 3,
        unchangedState: 3,
        sameEvaluatorReason: 2,
        duplicateObservation: 3,
        planStall: 12,
        sameParseError: 3,
      },
      tasks: [
        { id: 'classify', onFailure: 'continue' },
        { id: 'draft', onFailure: 'stop' },
      ],
    },
  });
  return {
    ...base,
    startedAt: 1_000,
    lastEventAt: 1_000,
    ...rest,
    usage: { ...base.usage, ...usage },
    task: { ...base.task, ...task },
    progress: { ...base.progress, ...progress },
  };
}

function toolCalls(overrides: Partial<Omit<Extract<ModelDecision, { kind: 'tool_calls' }>, 'kind'>> = {}): ModelDecision {
  return {
    kind: 'tool_calls',
    calls: 1,
    invalidCalls: 0,
    parseError: null,
    deniedCalls: 0,
    approvalCalls: 0,
    unavailableCalls: 0,
    maxRepeatCount: 1,
    ...overrides,
  };
}

const responded = (decision: ModelDecision): LoopEvent => ({
  type: 'model.responded',
  at: 2_000,
  nextRequestTokens: 100,
  usage: { inputTokens: 10, outputTokens: 5, costUsd: 0.001 },
  decision,
  stateDigest: 'digest',
});
const modelFailed = (message = '503 service unavailable', retryDelayMs = 750): LoopEvent => ({
  type: 'model.failed',
  at: 2_000,
  failure: 'transient',
  message,
  retryDelayMs,
});
const evaluated = (reason: string): LoopEvent => ({
  type: 'evaluation.completed',
  at: 2_000,
  nextRequestTokens: 100,
  passed: false,
  reason,
  usage: null,
});
const toolsCompleted: LoopEvent = {
  type: 'tools.completed',
  at: 2_000,
  nextRequestTokens: 100,
  round: {
    calls: 1,
    failedCalls: 0,
    timedOutCalls: 1,
    unknownOutcomeCalls: 1,
    allObservationsSeen: false,
    requiredToolUnavailable: false,
  },
};
const backoffElapsed: LoopEvent = { type: 'backoff.elapsed', at: 2_000 };

const sortedKeys = (value: object): string[] => Object.keys(value).sort();
const noParams = undefined;

describe('scheduleBackoff', () => {
  it('sets retryAt to the failure time plus the chosen delay and counts one transport retry', () => {
    const context = contextWith({ task: { steps: 2, transportRetries: 1, reflectionRetries: 1, argumentRepairs: 1 } });
    const result = reduce(scheduleBackoff, context, modelFailed('503', 750), noParams);
    expect(result).toEqual({
      retryAt: 2_750,
      task: { steps: 2, transportRetries: 2, reflectionRetries: 1, argumentRepairs: 1 },
    });
  });

  it('rejects an event of another type', () => {
    expect(() => scheduleBackoff({ context: contextWith(), event: backoffElapsed })).toThrow();
  });
});

describe('requestArgumentRepair', () => {
  it('asks for argument-repair feedback and counts one repair, leaving the other counters', () => {
    const context = contextWith({ task: { steps: 3, transportRetries: 1, reflectionRetries: 0, argumentRepairs: 0 } });
    const event = responded(toolCalls({ invalidCalls: 1, parseError: 'schema:order_id' }));
    expect(reduce(requestArgumentRepair, context, event, noParams)).toEqual({
      feedback: { kind: 'argument_repair' },
      task: { steps: 3, transportRetries: 1, reflectionRetries: 0, argumentRepairs: 1 },
    });
  });
});

describe('requestParseRepair', () => {
  it('feeds the parse error of an unparseable reply back, and changes nothing else', () => {
    const result = reduce(requestParseRepair, contextWith(), responded({ kind: 'unparseable', parseError: 'empty_reply' }), noParams);
    expect(result).toEqual({ feedback: { kind: 'parse_error', parseError: 'empty_reply' } });
  });

  it('falls back to a generic key for a decision that is not unparseable', () => {
    const result = reduce(requestParseRepair, contextWith(), responded(toolCalls()), noParams);
    expect(result).toEqual({ feedback: { kind: 'parse_error', parseError: 'unparseable_reply' } });
  });

  it('rejects an event of another type', () => {
    expect(() => requestParseRepair({ context: contextWith(), event: evaluated('x') })).toThrow();
  });
});

describe('requestReflection', () => {
  it('feeds the evaluator reason back and counts one reflection retry', () => {
    const context = contextWith({ task: { steps: 2, transportRetries: 2, reflectionRetries: 0, argumentRepairs: 0 } });
    expect(reduce(requestReflection, context, evaluated('missing field total'), noParams)).toEqual({
      feedback: { kind: 'reflection', reason: 'missing field total' },
      task: { steps: 2, transportRetries: 2, reflectionRetries: 1, argumentRepairs: 0 },
    });
  });

  it('rejects an event of another type', () => {
    expect(() => requestReflection({ context: contextWith(), event: modelFailed() })).toThrow();
  });
});

describe('nudge', () => {
  it.each(['plan_stall', 'duplicate_observation'] satisfies NoProgressSignal[])(
    'records the step and the signal (%s) and asks for nudge feedback',
    (signal) => {
      const context = contextWith({ steps: 4, progress: { unchangedStateStreak: 2, duplicateObservationStreak: 3 } });
      const result = reduce(nudge, context, toolsCompleted, { signal });
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
    const context = contextWith({ steps: 6 });
    const result = reduce(nudgeOnDecision, context, responded(toolCalls({ maxRepeatCount: 3 })), noParams);
    expect(result.feedback).toEqual({ kind: 'nudge', signal: 'repeated_tool_call' });
    expect(result.progress).toMatchObject({ nudgedAtStep: 6, lastSignal: 'repeated_tool_call' });
  });

  it('names the highest-precedence signal when several fire', () => {
    const context = contextWith({ steps: 6, progress: { sameParseErrorStreak: 3, unchangedStateStreak: 3 } });
    const event = responded(toolCalls({ invalidCalls: 1, parseError: 'bad_json', maxRepeatCount: 3 }));
    expect(reduce(nudgeOnDecision, context, event, noParams).feedback).toEqual({ kind: 'nudge', signal: 'same_parse_error' });
  });

  it('nudges with unchanged_state for an unchanged digest', () => {
    const context = contextWith({ steps: 6, progress: { unchangedStateStreak: 3 } });
    expect(reduce(nudgeOnDecision, context, responded({ kind: 'final' }), noParams).feedback).toEqual({
      kind: 'nudge',
      signal: 'unchanged_state',
    });
  });
});

describe('nudgeAndReflect', () => {
  it('nudges with same_evaluator_reason and counts one reflection retry', () => {
    const context = contextWith({ steps: 5, task: { steps: 5, reflectionRetries: 1 }, progress: { sameReasonStreak: 2 } });
    const result = reduce(nudgeAndReflect, context, evaluated('missing total'), noParams);
    expect(sortedKeys(result)).toEqual(['feedback', 'progress', 'task']);
    expect(result.feedback).toEqual({ kind: 'nudge', signal: 'same_evaluator_reason' });
    expect(result.progress).toMatchObject({ nudgedAtStep: 5, lastSignal: 'same_evaluator_reason', sameReasonStreak: 2 });
    expect(result.task).toEqual({ steps: 5, transportRetries: 0, reflectionRetries: 2, argumentRepairs: 0 });
  });

  it('rejects an event of another type', () => {
    expect(() => nudgeAndReflect({ context: contextWith(), event: responded({ kind: 'final' }) })).toThrow();
  });
});

describe('stopRun', () => {
  const stop = (reason: StopReason, context: LoopContext, event: LoopEvent) => reduce(stopRun, context, event, { reason });

  it('records the reason, clears the feedback, and touches nothing else', () => {
    const result = stop('max_steps', contextWith({ feedback: { kind: 'argument_repair' } }), backoffElapsed);
    expect(sortedKeys(result)).toEqual(['feedback', 'stop']);
    expect(result.feedback).toBeNull();
    expect(result.stop?.reason).toBe('max_steps');
  });

  it('completed: says how many of the tasks passed', () => {
    expect(stop('completed', contextWith({ completedTasks: 2 }), evaluated('')).stop?.detail).toBe('2 of 2 task(s) passed evaluation');
    expect(stop('completed', contextWith({ completedTasks: 1, failedTasks: 1 }), evaluated('')).stop?.detail).toBe(
      '1 of 2 task(s) passed evaluation',
    );
  });

  it('max_steps and deadline_exceeded: name the limit', () => {
    expect(stop('max_steps', contextWith({ limits: { maxSteps: 7 } }), backoffElapsed).stop?.detail).toContain('maxSteps (7)');
    expect(stop('deadline_exceeded', contextWith({ limits: { deadlineMs: 4_321 } }), backoffElapsed).stop?.detail).toContain(
      '4321 ms',
    );
  });

  describe('budget_exhausted names the budget that ran out', () => {
    it('cost', () => {
      const context = contextWith({ limits: { maxCostUsd: 0.5 }, usage: { costUsd: 0.5 } });
      const detail = stop('budget_exhausted', context, backoffElapsed).stop?.detail;
      expect(detail).toContain('maxCostUsd');
      expect(detail).toContain('0.500000');
    });

    it('output tokens', () => {
      const context = contextWith({ limits: { maxOutputTokens: 300 }, usage: { outputTokens: 300 } });
      const detail = stop('budget_exhausted', context, backoffElapsed).stop?.detail;
      expect(detail).toContain('maxOutputTokens (300)');
      expect(detail).not.toContain('maxCostUsd');
    });

    it('input estimate', () => {
      const context = contextWith({ limits: { maxInputTokens: 1_000 }, usage: { inputTokens: 800 }, nextRequestTokens: 250 });
      const detail = stop('budget_exhausted', context, backoffElapsed).stop?.detail;
      expect(detail).toContain('maxInputTokens (1000');
      expect(detail).toContain('~250');
      expect(detail).toContain('used 800');
      expect(detail).not.toContain('maxOutputTokens');
    });
  });

  describe('no_progress names the signal', () => {
    it('from the decision that stopped the run', () => {
      const context = contextWith({ progress: { lastSignal: 'plan_stall', unchangedStateStreak: 3 } });
      expect(stop('no_progress', context, responded({ kind: 'final' })).stop?.detail).toBe(
        'no progress after a nudge: unchanged_state',
      );
    });

    it('from the last signal when the event is not a decision', () => {
      const context = contextWith({ progress: { lastSignal: 'duplicate_observation', duplicateObservationStreak: 3 } });
      expect(stop('no_progress', context, toolsCompleted).stop?.detail).toBe('no progress after a nudge: duplicate_observation');
    });
  });

  it('cancelled: carries the cancel message, or says cancelled without one', () => {
    expect(stop('cancelled', contextWith(), { type: 'run.cancelRequested', at: 2_000, message: 'user pressed stop' }).stop?.detail).toBe(
      'cancelled: user pressed stop',
    );
    expect(stop('cancelled', contextWith(), { type: 'run.cancelRequested', at: 2_000, message: '' }).stop?.detail).toBe('cancelled');
  });

  it('needs_human: tells an unknown tool outcome from a call needing approval', () => {
    expect(stop('needs_human', contextWith(), toolsCompleted).stop?.detail).toContain('outcome cannot be known');
    expect(stop('needs_human', contextWith(), responded(toolCalls({ approvalCalls: 1 }))).stop?.detail).toContain('approval');
  });

  it('permission_denied and tool_unavailable: say what happened', () => {
    expect(stop('permission_denied', contextWith(), responded(toolCalls({ deniedCalls: 1 }))).stop?.detail).toContain('denied');
    expect(stop('tool_unavailable', contextWith(), responded(toolCalls({ unavailableCalls: 1 }))).stop?.detail).toContain(
      'unavailable',
    );
  });

  it('fatal_error: carries the model error message', () => {
    const event: LoopEvent = { type: 'model.failed', at: 2_000, failure: 'fatal', message: '401 invalid api key', retryDelayMs: 0 };
    expect(stop('fatal_error', contextWith(), event).stop?.detail).toBe('model call failed: 401 invalid api key');
  });
});

describe('failTask', () => {
  it('records and counts the failure of the task, not a stop of the run, and clears the feedback', () => {
    const context = contextWith({ task: { transportRetries: 2 }, feedback: { kind: 'transport_retry' } });
    const result = reduce(failTask, context, modelFailed('503 service unavailable'), { reason: 'retries_exhausted' });
    expect(sortedKeys(result)).toEqual(['failedTasks', 'failure', 'feedback']);
    expect(result.feedback).toBeNull();
    expect(result.failedTasks).toBe(1);
    expect(result.failure?.reason).toBe('retries_exhausted');
  });

  it('retries_exhausted after transport failures: names the task, the retry count and the error', () => {
    const context = contextWith({ task: { transportRetries: 2 } });
    const detail = reduce(failTask, context, modelFailed('503 service unavailable'), { reason: 'retries_exhausted' }).failure?.detail;
    expect(detail).toBe('task classify: model call failed after 2 transport retries: 503 service unavailable');
  });

  it('retries_exhausted after reflections: names the task, the retry count and the evaluator reason', () => {
    const context = contextWith({ taskIndex: 1, task: { reflectionRetries: 2 } });
    const detail = reduce(failTask, context, evaluated('missing field total'), { reason: 'retries_exhausted' }).failure?.detail;
    expect(detail).toBe('task draft: evaluation still failing after 2 reflection retries: missing field total');
  });

  it('retries_exhausted after argument repairs: names the task and the repair count', () => {
    const context = contextWith({ task: { argumentRepairs: 1 } });
    const event = responded(toolCalls({ invalidCalls: 1, parseError: 'schema:order_id' }));
    expect(reduce(failTask, context, event, { reason: 'retries_exhausted' }).failure?.detail).toBe(
      'task classify: tool arguments still invalid after 1 repair(s)',
    );
  });

  it('fatal_error: carries the model error message', () => {
    const event: LoopEvent = { type: 'model.failed', at: 2_000, failure: 'fatal', message: '400 bad request', retryDelayMs: 0 };
    expect(reduce(failTask, contextWith(), event, { reason: 'fatal_error' }).failure).toEqual({
      reason: 'fatal_error',
      detail: 'model call failed: 400 bad request',
    });
  });
});

describe('stopWithTaskFailure', () => {
  it('moves the recorded task failure onto the run', () => {
    const failure = { reason: 'retries_exhausted' as const, detail: 'task draft: ...' };
    expect(reduce(stopWithTaskFailure, contextWith({ failure }), evaluated('x'), noParams)).toEqual({ stop: failure });
  });

  it('falls back to fatal_error when no failure was recorded', () => {
    expect(reduce(stopWithTaskFailure, contextWith(), evaluated('x'), noParams).stop?.reason).toBe('fatal_error');
  });
});

describe('completeTask and skipFailedTask', () => {
  const midTask = (): LoopContext =>
    contextWith({
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
    const result = reduce(completeTask, midTask(), evaluated(''), noParams);
    expect(result).toEqual({
      taskIndex: 1,
      task: FRESH_TASK_COUNTERS,
      progress: { ...FRESH_PROGRESS, lastStateDigest: 'digest-6' },
      feedback: null,
      completedTasks: 1,
    });
  });

  it('skipFailedTask advances the task the same way; the failure was already counted by failTask', () => {
    const result = reduce(skipFailedTask, midTask(), evaluated('missing total'), noParams);
    expect(result).toEqual({
      taskIndex: 1,
      task: FRESH_TASK_COUNTERS,
      progress: { ...FRESH_PROGRESS, lastStateDigest: 'digest-6' },
      feedback: null,
    });
  });

  it('skipFailedTask keeps the recorded failure, so the driver can name it in the skip warning', () => {
    expect(reduce(skipFailedTask, midTask(), evaluated('missing total'), noParams)).not.toHaveProperty('failure');
  });

  it('the fresh counters start every retry layer at zero', () => {
    expect(FRESH_TASK_COUNTERS).toEqual({ steps: 0, transportRetries: 0, reflectionRetries: 0, argumentRepairs: 0 });
    expect(FRESH_PROGRESS.nudgedAtStep).toBeNull();
  });
});
