import { describe, expect, it } from 'vitest';
import { createInitialContext } from '../actions/initial-context.js';
import {
  canNudge,
  decisionSignal,
  hasDecisionSignal,
  isDuplicateObservationSignal,
  isPlanStalled,
  isSameEvaluatorReasonSignal,
  wasNudgedEarlier,
} from './progress.js';
import type {
  LoopContext,
  LoopEvent,
  ModelDecision,
  NoProgressThresholds,
  ProgressState,
  TaskCounters,
} from '../machines/types.js';

const THRESHOLDS: NoProgressThresholds = {
  repeatedToolCall: 3,
  unchangedState: 3,
  sameEvaluatorReason: 2,
  duplicateObservation: 3,
  planStall: 4,
  sameParseError: 3,
};

interface Overrides extends Partial<Omit<LoopContext, 'noProgress' | 'progress' | 'task'>> {
  noProgress?: Partial<NoProgressThresholds>;
  progress?: Partial<ProgressState>;
  task?: Partial<TaskCounters>;
}

function contextWith({ noProgress, progress, task, ...rest }: Overrides = {}): LoopContext {
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
      noProgress: { ...THRESHOLDS, ...noProgress },
      tasks: [{ id: 'task-1', onFailure: 'stop' }],
    },
  });
  return { ...base, ...rest, progress: { ...base.progress, ...progress }, task: { ...base.task, ...task } };
}

function toolCalls(maxRepeatCount: number): ModelDecision {
  return {
    kind: 'tool_calls',
    calls: 1,
    invalidCalls: 0,
    parseError: null,
    deniedCalls: 0,
    approvalCalls: 0,
    unavailableCalls: 0,
    maxRepeatCount,
  };
}

const responded = (decision: ModelDecision): LoopEvent => ({
  type: 'model.responded',
  at: 10,
  nextRequestTokens: 10,
  usage: { inputTokens: 10, outputTokens: 5, costUsd: 0.001 },
  decision,
  stateDigest: 'digest',
});
const toolsCompleted: LoopEvent = {
  type: 'tools.completed',
  at: 10,
  nextRequestTokens: 10,
  round: {
    calls: 1,
    failedCalls: 0,
    timedOutCalls: 0,
    unknownOutcomeCalls: 0,
    allObservationsSeen: true,
    requiredToolUnavailable: false,
  },
};

describe('decisionSignal', () => {
  it('is null for events other than model.responded, even with every streak past its threshold', () => {
    const context = contextWith({ progress: { sameParseErrorStreak: 9, unchangedStateStreak: 9 } });
    expect(decisionSignal(context, toolsCompleted)).toBeNull();
    expect(decisionSignal(context, { type: 'backoff.elapsed', at: 10 })).toBeNull();
  });

  it('is null when every streak is one below its threshold', () => {
    const context = contextWith({ progress: { sameParseErrorStreak: 2, unchangedStateStreak: 2 } });
    expect(decisionSignal(context, responded(toolCalls(2)))).toBeNull();
  });

  it('raises same_parse_error at the threshold', () => {
    const context = contextWith({ progress: { sameParseErrorStreak: 3 } });
    expect(decisionSignal(context, responded({ kind: 'unparseable', parseError: 'empty_reply' }))).toBe('same_parse_error');
  });

  it('raises repeated_tool_call when a fingerprint reaches the threshold', () => {
    expect(decisionSignal(contextWith(), responded(toolCalls(3)))).toBe('repeated_tool_call');
    expect(decisionSignal(contextWith(), responded(toolCalls(2)))).toBeNull();
  });

  it('raises unchanged_state at the threshold, for any decision kind', () => {
    const context = contextWith({ progress: { unchangedStateStreak: 3 } });
    expect(decisionSignal(context, responded({ kind: 'final' }))).toBe('unchanged_state');
    expect(decisionSignal(context, responded(toolCalls(1)))).toBe('unchanged_state');
  });

  it('prefers same_parse_error over repeated_tool_call over unchanged_state', () => {
    const all = contextWith({ progress: { sameParseErrorStreak: 3, unchangedStateStreak: 3 } });
    expect(decisionSignal(all, responded(toolCalls(3)))).toBe('same_parse_error');
    const noParse = contextWith({ progress: { sameParseErrorStreak: 2, unchangedStateStreak: 3 } });
    expect(decisionSignal(noParse, responded(toolCalls(3)))).toBe('repeated_tool_call');
    expect(decisionSignal(noParse, responded(toolCalls(2)))).toBe('unchanged_state');
  });

  it('reads the configured thresholds', () => {
    const context = contextWith({ noProgress: { repeatedToolCall: 5, sameParseError: 1 }, progress: { sameParseErrorStreak: 0 } });
    expect(decisionSignal(context, responded(toolCalls(4)))).toBeNull();
    expect(decisionSignal(context, responded(toolCalls(5)))).toBe('repeated_tool_call');
    const oneParseError = contextWith({ noProgress: { sameParseError: 1 }, progress: { sameParseErrorStreak: 1 } });
    expect(decisionSignal(oneParseError, responded({ kind: 'unparseable', parseError: 'empty_reply' }))).toBe(
      'same_parse_error',
    );
  });
});

describe('hasDecisionSignal', () => {
  it('follows decisionSignal', () => {
    expect(hasDecisionSignal({ context: contextWith(), event: responded(toolCalls(3)) })).toBe(true);
    expect(hasDecisionSignal({ context: contextWith(), event: responded(toolCalls(1)) })).toBe(false);
    expect(hasDecisionSignal({ context: contextWith({ progress: { unchangedStateStreak: 3 } }), event: toolsCompleted })).toBe(
      false,
    );
  });
});

describe('streak guards', () => {
  const event = toolsCompleted;

  it('isDuplicateObservationSignal is false one round below the threshold and true at it', () => {
    expect(isDuplicateObservationSignal({ context: contextWith({ progress: { duplicateObservationStreak: 2 } }), event })).toBe(
      false,
    );
    expect(isDuplicateObservationSignal({ context: contextWith({ progress: { duplicateObservationStreak: 3 } }), event })).toBe(
      true,
    );
  });

  it('isSameEvaluatorReasonSignal is false one failure below the threshold and true at it', () => {
    expect(isSameEvaluatorReasonSignal({ context: contextWith({ progress: { sameReasonStreak: 1 } }), event })).toBe(false);
    expect(isSameEvaluatorReasonSignal({ context: contextWith({ progress: { sameReasonStreak: 2 } }), event })).toBe(true);
  });

  it('isPlanStalled counts the decisions of the current task, not of the run', () => {
    expect(isPlanStalled({ context: contextWith({ task: { steps: 3 }, steps: 9 }), event })).toBe(false);
    expect(isPlanStalled({ context: contextWith({ task: { steps: 4 }, steps: 4 }), event })).toBe(true);
  });
});

describe('nudge guards', () => {
  const event = toolsCompleted;

  it('canNudge is true until a nudge is recorded, including one at step 0', () => {
    expect(canNudge({ context: contextWith(), event })).toBe(true);
    expect(canNudge({ context: contextWith({ progress: { nudgedAtStep: 0 } }), event })).toBe(false);
  });

  it('wasNudgedEarlier is false when never nudged', () => {
    expect(wasNudgedEarlier({ context: contextWith({ steps: 5 }), event })).toBe(false);
  });

  it('wasNudgedEarlier is false for a nudge at the current step: the model has not answered it yet', () => {
    expect(wasNudgedEarlier({ context: contextWith({ steps: 5, progress: { nudgedAtStep: 5 } }), event })).toBe(false);
  });

  it('wasNudgedEarlier is true for a nudge at an earlier step, including step 0', () => {
    expect(wasNudgedEarlier({ context: contextWith({ steps: 5, progress: { nudgedAtStep: 4 } }), event })).toBe(true);
    expect(wasNudgedEarlier({ context: contextWith({ steps: 1, progress: { nudgedAtStep: 0 } }), event })).toBe(true);
  });
});
