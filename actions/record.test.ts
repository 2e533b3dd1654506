import { describe, expect, it } from 'vitest';
import { createInitialContext } from './initial-context.js';
import {
  recordBackoffElapsed,
  recordEvaluation,
  recordInterruption,
  recordModelFailure,
  recordModelResponse,
  recordToolRound,
  startRun,
  type ReducerArgs,
} from './record.js';
import type {
  CallUsage,
  LoopContext,
  LoopEvent,
  ModelDecision,
  ProgressState,
  TaskCounters,
  ToolRoundSummary,
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
function reduce(
  reducer: (args: ReducerArgs) => Partial<LoopContext>,
  context: LoopContext,
  event: LoopEvent,
): Partial<LoopContext> {
  const contextBefore = structuredClone(context);
  const eventBefore = structuredClone(event);
  const result = reducer({ context: deepFreeze(context), event: deepFreeze(event) });
  expect(context).toEqual(contextBefore);
  expect(event).toEqual(eventBefore);
  return result;
}

interface Overrides extends Partial<Omit<LoopContext, 'usage' | 'task' | 'progress'>> {
  usage?: Partial<Usage>;
  task?: Partial<TaskCounters>;
  progress?: Partial<ProgressState>;
}

function contextWith({ usage, task, progress, ...rest }: Overrides = {}): LoopContext {
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
      },
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

interface RespondedOptions {
  at?: number;
  decision?: ModelDecision;
  stateDigest?: string;
  usage?: CallUsage;
  nextRequestTokens?: number;
}

function responded({
  at = 2_000,
  decision = { kind: 'final' },
  stateDigest = 'digest-a',
  usage = { inputTokens: 100, outputTokens: 20, costUsd: 0.25 },
  nextRequestTokens = 150,
}: RespondedOptions = {}): LoopEvent {
  return { type: 'model.responded', at, decision, stateDigest, usage, nextRequestTokens };
}

function toolsCompleted(round: Partial<ToolRoundSummary> = {}, at = 2_000, nextRequestTokens = 300): LoopEvent {
  return {
    type: 'tools.completed',
    at,
    nextRequestTokens,
    round: {
      calls: 2,
      failedCalls: 0,
      timedOutCalls: 0,
      unknownOutcomeCalls: 0,
      allObservationsSeen: false,
      requiredToolUnavailable: false,
      ...round,
    },
  };
}

function evaluated(passed: boolean, reason: string, usage: CallUsage | null = null, at = 2_000): LoopEvent {
  return { type: 'evaluation.completed', at, nextRequestTokens: 400, passed, reason, usage };
}

const sortedKeys = (value: object): string[] => Object.keys(value).sort();

describe('startRun', () => {
  it('records the start time, the clock and the first request estimate, and nothing else', () => {
    const context = contextWith({ startedAt: null, lastEventAt: 0 });
    const result = reduce(startRun, context, { type: 'run.started', at: 5_000, nextRequestTokens: 42 });
    expect(result).toEqual({ startedAt: 5_000, lastEventAt: 5_000, nextRequestTokens: 42 });
  });

  it('rejects an event of another type', () => {
    expect(() => startRun({ context: contextWith(), event: { type: 'backoff.elapsed', at: 1 } })).toThrow();
  });
});

describe('recordModelResponse', () => {
  it('returns only the fields a response changes', () => {
    const result = reduce(recordModelResponse, contextWith(), responded());
    expect(sortedKeys(result)).toEqual(['feedback', 'lastEventAt', 'nextRequestTokens', 'progress', 'steps', 'task', 'usage']);
  });

  it('counts a step in the run and in the task, and clears the feedback the request carried', () => {
    const context = contextWith({ steps: 3, task: { steps: 1 }, feedback: { kind: 'argument_repair' } });
    const result = reduce(recordModelResponse, context, responded());
    expect(result.steps).toBe(4);
    expect(result.task?.steps).toBe(2);
    expect(result.feedback).toBeNull();
  });

  it('adds the call usage to the totals and counts one model call, leaving tool calls alone', () => {
    const context = contextWith({ usage: { inputTokens: 1_000, outputTokens: 200, costUsd: 0.5, modelCalls: 4, toolCalls: 7 } });
    const result = reduce(recordModelResponse, context, responded({ usage: { inputTokens: 100, outputTokens: 20, costUsd: 0.25 } }));
    expect(result.usage).toEqual({ inputTokens: 1_100, outputTokens: 220, costUsd: 0.75, modelCalls: 5, toolCalls: 7 });
  });

  it('takes the next request estimate from the event and never moves the clock backwards', () => {
    const later = reduce(recordModelResponse, contextWith({ lastEventAt: 1_000 }), responded({ at: 2_500, nextRequestTokens: 77 }));
    expect(later.lastEventAt).toBe(2_500);
    expect(later.nextRequestTokens).toBe(77);
    const earlier = reduce(recordModelResponse, contextWith({ lastEventAt: 3_000 }), responded({ at: 2_500 }));
    expect(earlier.lastEventAt).toBe(3_000);
  });

  it('leaves the transport and reflection counters alone', () => {
    const context = contextWith({ task: { transportRetries: 2, reflectionRetries: 1 } });
    const result = reduce(recordModelResponse, context, responded());
    expect(result.task).toMatchObject({ transportRetries: 2, reflectionRetries: 1 });
  });

  describe('unchanged-state streak', () => {
    it('counts the first digest of the run as 1, like every other streak', () => {
      const result = reduce(recordModelResponse, contextWith(), responded({ stateDigest: 'a' }));
      expect(result.progress).toMatchObject({ lastStateDigest: 'a', unchangedStateStreak: 1 });
    });

    it('grows by one when the digest repeats', () => {
      const context = contextWith({ progress: { lastStateDigest: 'a', unchangedStateStreak: 2 } });
      const result = reduce(recordModelResponse, context, responded({ stateDigest: 'a' }));
      expect(result.progress).toMatchObject({ lastStateDigest: 'a', unchangedStateStreak: 3 });
    });

    it('resets when the digest changes', () => {
      const context = contextWith({ progress: { lastStateDigest: 'a', unchangedStateStreak: 2 } });
      const result = reduce(recordModelResponse, context, responded({ stateDigest: 'b' }));
      expect(result.progress).toMatchObject({ lastStateDigest: 'b', unchangedStateStreak: 1 });
    });
  });

  describe('same-parse-error streak', () => {
    const unparseable = (parseError: string): ModelDecision => ({ kind: 'unparseable', parseError });

    it('starts at 1 on the first parse error', () => {
      const result = reduce(recordModelResponse, contextWith(), responded({ decision: unparseable('empty_reply') }));
      expect(result.progress).toMatchObject({ lastParseError: 'empty_reply', sameParseErrorStreak: 1 });
    });

    it('grows when the same parse error repeats, from an unparseable reply or an invalid tool call', () => {
      const context = contextWith({ progress: { lastParseError: 'bad_json', sameParseErrorStreak: 1 } });
      const viaToolCall = reduce(
        recordModelResponse,
        context,
        responded({ decision: toolCalls({ invalidCalls: 1, parseError: 'bad_json' }) }),
      );
      expect(viaToolCall.progress).toMatchObject({ lastParseError: 'bad_json', sameParseErrorStreak: 2 });
      const viaUnparseable = reduce(recordModelResponse, context, responded({ decision: unparseable('bad_json') }));
      expect(viaUnparseable.progress).toMatchObject({ sameParseErrorStreak: 2 });
    });

    it('restarts at 1 on a different parse error', () => {
      const context = contextWith({ progress: { lastParseError: 'bad_json', sameParseErrorStreak: 2 } });
      const result = reduce(recordModelResponse, context, responded({ decision: unparseable('empty_reply') }));
      expect(result.progress).toMatchObject({ lastParseError: 'empty_reply', sameParseErrorStreak: 1 });
    });

    it('resets to 0 on a reply without a parse error', () => {
      const context = contextWith({ progress: { lastParseError: 'bad_json', sameParseErrorStreak: 2 } });
      for (const decision of [{ kind: 'final' } as const, toolCalls()]) {
        const result = reduce(recordModelResponse, context, responded({ decision }));
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
    const result = reduce(recordModelResponse, contextWith({ progress }), responded());
    expect(result.progress).toMatchObject(progress);
  });

  describe('argument repair counter', () => {
    const repairing = contextWith({ task: { argumentRepairs: 1 } });

    it('resets on a valid tool-call decision', () => {
      expect(reduce(recordModelResponse, repairing, responded({ decision: toolCalls() })).task?.argumentRepairs).toBe(0);
    });

    it('resets on a final reply', () => {
      expect(reduce(recordModelResponse, repairing, responded({ decision: { kind: 'final' } })).task?.argumentRepairs).toBe(0);
    });

    it('is kept on a decision with an invalid call', () => {
      const decision = toolCalls({ calls: 2, invalidCalls: 1, parseError: 'schema:order_id' });
      expect(reduce(recordModelResponse, repairing, responded({ decision })).task?.argumentRepairs).toBe(1);
    });

    it('is kept on an unparseable reply', () => {
      const decision: ModelDecision = { kind: 'unparseable', parseError: 'empty_reply' };
      expect(reduce(recordModelResponse, repairing, responded({ decision })).task?.argumentRepairs).toBe(1);
    });
  });

  it('rejects an event of another type', () => {
    expect(() => recordModelResponse({ context: contextWith(), event: evaluated(true, '') })).toThrow();
  });
});

describe('recordModelFailure', () => {
  const failed: LoopEvent = { type: 'model.failed', at: 2_000, failure: 'transient', message: '503', retryDelayMs: 100 };

  it('counts the failed call as a model call without adding tokens or cost, and clears the feedback', () => {
    const context = contextWith({
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
    expect(reduce(recordModelFailure, contextWith({ steps: 2 }), failed)).not.toHaveProperty('steps');
  });

  it('never moves the clock backwards', () => {
    expect(reduce(recordModelFailure, contextWith({ lastEventAt: 9_000 }), failed).lastEventAt).toBe(9_000);
  });

  it('rejects an event of another type', () => {
    expect(() => recordModelFailure({ context: contextWith(), event: responded() })).toThrow();
  });
});

describe('recordToolRound', () => {
  it('counts the round calls as tool calls and records the clock and next estimate', () => {
    const context = contextWith({ usage: { toolCalls: 3, modelCalls: 2, inputTokens: 10 } });
    const result = reduce(recordToolRound, context, toolsCompleted({ calls: 2 }, 2_500, 640));
    expect(sortedKeys(result)).toEqual(['lastEventAt', 'nextRequestTokens', 'progress', 'usage']);
    expect(result.usage).toEqual({ ...context.usage, toolCalls: 5 });
    expect(result.lastEventAt).toBe(2_500);
    expect(result.nextRequestTokens).toBe(640);
  });

  it('grows the duplicate-observation streak when every observation was seen before', () => {
    const context = contextWith({ progress: { duplicateObservationStreak: 1 } });
    expect(reduce(recordToolRound, context, toolsCompleted({ allObservationsSeen: true })).progress?.duplicateObservationStreak).toBe(2);
  });

  it('resets the duplicate-observation streak when the round brought something new', () => {
    const context = contextWith({ progress: { duplicateObservationStreak: 2 } });
    expect(reduce(recordToolRound, context, toolsCompleted({ allObservationsSeen: false })).progress?.duplicateObservationStreak).toBe(
      0,
    );
  });

  it('keeps the other progress fields', () => {
    const context = contextWith({ progress: { lastStateDigest: 'a', unchangedStateStreak: 2, nudgedAtStep: 1 } });
    expect(reduce(recordToolRound, context, toolsCompleted()).progress).toMatchObject({
      lastStateDigest: 'a',
      unchangedStateStreak: 2,
      nudgedAtStep: 1,
    });
  });

  it('never moves the clock backwards', () => {
    expect(reduce(recordToolRound, contextWith({ lastEventAt: 9_000 }), toolsCompleted({}, 2_000)).lastEventAt).toBe(9_000);
  });

  it('rejects an event of another type', () => {
    expect(() => recordToolRound({ context: contextWith(), event: responded() })).toThrow();
  });
});

describe('recordEvaluation', () => {
  it('leaves usage as it was when no judge ran', () => {
    const context = contextWith({ usage: { inputTokens: 10, costUsd: 0.2, modelCalls: 1 } });
    const result = reduce(recordEvaluation, context, evaluated(false, 'missing total'));
    expect(result.usage).toEqual(context.usage);
  });

  it('adds a judge call to the usage and counts it as a model call', () => {
    const context = contextWith({ usage: { inputTokens: 10, outputTokens: 5, costUsd: 0.2, modelCalls: 1, toolCalls: 4 } });
    const result = reduce(recordEvaluation, context, evaluated(true, '', { inputTokens: 30, outputTokens: 3, costUsd: 0.05 }));
    expect(result.usage?.inputTokens).toBe(40);
    expect(result.usage?.outputTokens).toBe(8);
    expect(result.usage?.costUsd).toBeCloseTo(0.25, 12);
    expect(result.usage?.modelCalls).toBe(2);
    expect(result.usage?.toolCalls).toBe(4);
  });

  it('records the clock and the next request estimate', () => {
    const result = reduce(recordEvaluation, contextWith(), evaluated(false, 'x', null, 2_750));
    expect(result.lastEventAt).toBe(2_750);
    expect(result.nextRequestTokens).toBe(400);
  });

  it('starts the same-reason streak at 1 on the first failure', () => {
    const result = reduce(recordEvaluation, contextWith(), evaluated(false, 'missing total'));
    expect(result.progress).toMatchObject({ lastEvaluatorReason: 'missing total', sameReasonStreak: 1 });
  });

  it('grows the streak when the failure reason repeats', () => {
    const context = contextWith({ progress: { lastEvaluatorReason: 'missing total', sameReasonStreak: 1 } });
    const result = reduce(recordEvaluation, context, evaluated(false, 'missing total'));
    expect(result.progress).toMatchObject({ lastEvaluatorReason: 'missing total', sameReasonStreak: 2 });
  });

  it('restarts the streak at 1 when the failure reason changes', () => {
    const context = contextWith({ progress: { lastEvaluatorReason: 'missing total', sameReasonStreak: 2 } });
    const result = reduce(recordEvaluation, context, evaluated(false, 'total is negative'));
    expect(result.progress).toMatchObject({ lastEvaluatorReason: 'total is negative', sameReasonStreak: 1 });
  });

  it('clears the reason and the streak when the evaluation passes', () => {
    const context = contextWith({ progress: { lastEvaluatorReason: 'missing total', sameReasonStreak: 2 } });
    const result = reduce(recordEvaluation, context, evaluated(true, 'missing total'));
    expect(result.progress).toMatchObject({ lastEvaluatorReason: null, sameReasonStreak: 0 });
  });

  it('rejects an event of another type', () => {
    expect(() => recordEvaluation({ context: contextWith(), event: toolsCompleted() })).toThrow();
  });
});

describe('recordBackoffElapsed', () => {
  it('clears retryAt, asks for transport-retry feedback and moves the clock, and nothing else', () => {
    const context = contextWith({ retryAt: 2_100, lastEventAt: 2_000 });
    expect(reduce(recordBackoffElapsed, context, { type: 'backoff.elapsed', at: 2_150 })).toEqual({
      lastEventAt: 2_150,
      retryAt: null,
      feedback: { kind: 'transport_retry' },
    });
  });

  it('never moves the clock backwards', () => {
    const result = reduce(recordBackoffElapsed, contextWith({ retryAt: 2_100, lastEventAt: 3_000 }), { type: 'backoff.elapsed', at: 2_150 });
    expect(result.lastEventAt).toBe(3_000);
  });

  it('rejects an event of another type', () => {
    expect(() => recordBackoffElapsed({ context: contextWith(), event: responded() })).toThrow();
  });
});

describe('recordInterruption', () => {
  it('only moves the clock, for a cancel and for a deadline event', () => {
    expect(reduce(recordInterruption, contextWith(), { type: 'run.cancelRequested', at: 3_000, message: 'user' })).toEqual({
      lastEventAt: 3_000,
    });
    expect(reduce(recordInterruption, contextWith(), { type: 'run.deadlineReached', at: 4_000 })).toEqual({ lastEventAt: 4_000 });
  });

  it('never moves the clock backwards', () => {
    expect(reduce(recordInterruption, contextWith({ lastEventAt: 9_000 }), { type: 'run.deadlineReached', at: 4_000 })).toEqual({
      lastEventAt: 9_000,
    });
  });

  it('rejects an event of another type', () => {
    expect(() => recordInterruption({ context: contextWith(), event: { type: 'backoff.elapsed', at: 1 } })).toThrow();
  });
});

describe('deepFreeze helper (so the no-mutation checks above can fail)', () => {
  it('makes a nested write throw', () => {
    const frozen = deepFreeze(contextWith());
    expect(() => {
      (frozen.usage as { modelCalls: number }).modelCalls = 1;
    }).toThrow(TypeError);
  });
});
