import { describe, expect, it } from 'vitest';
import {
  canNudge,
  decisionSignal,
  hasDecisionSignal,
  isDuplicateObservationSignal,
  isPlanStalled,
  isSameEvaluatorReasonSignal,
  wasNudgedEarlier,
} from './progress.js';
import {
  backoffElapsed,
  contextWith,
  finalReply,
  toolCallsReply,
  toolsCompleted,
  unparseableReply,
} from '../test/support/statechart-fixtures.js';

/** A tool round whose observations had all been seen before: not a decision, so no decision signal. */
const seenBeforeRound = toolsCompleted({ allObservationsSeen: true });

describe('decisionSignal', () => {
  it('is null for events other than model.responded, even with every streak past its threshold', () => {
    const context = contextWith({ progress: { sameParseErrorStreak: 9, unchangedStateStreak: 9 } });
    expect(decisionSignal(context, seenBeforeRound)).toBeNull();
    expect(decisionSignal(context, backoffElapsed())).toBeNull();
  });

  it('is null when every streak is one below its threshold', () => {
    const context = contextWith({ progress: { sameParseErrorStreak: 2, unchangedStateStreak: 2 } });
    expect(decisionSignal(context, toolCallsReply({ maxRepeatCount: 2 }))).toBeNull();
  });

  it('raises same_parse_error at the threshold', () => {
    const context = contextWith({ progress: { sameParseErrorStreak: 3 } });
    expect(decisionSignal(context, unparseableReply('empty_reply'))).toBe('same_parse_error');
  });

  it('raises repeated_tool_call when a fingerprint reaches the threshold', () => {
    expect(decisionSignal(contextWith(), toolCallsReply({ maxRepeatCount: 3 }))).toBe('repeated_tool_call');
    expect(decisionSignal(contextWith(), toolCallsReply({ maxRepeatCount: 2 }))).toBeNull();
  });

  it('raises unchanged_state at the threshold, for any decision kind', () => {
    const context = contextWith({ progress: { unchangedStateStreak: 3 } });
    expect(decisionSignal(context, finalReply())).toBe('unchanged_state');
    expect(decisionSignal(context, toolCallsReply({ maxRepeatCount: 1 }))).toBe('unchanged_state');
  });

  it('prefers same_parse_error over repeated_tool_call over unchanged_state', () => {
    const all = contextWith({ progress: { sameParseErrorStreak: 3, unchangedStateStreak: 3 } });
    expect(decisionSignal(all, toolCallsReply({ maxRepeatCount: 3 }))).toBe('same_parse_error');
    const noParse = contextWith({ progress: { sameParseErrorStreak: 2, unchangedStateStreak: 3 } });
    expect(decisionSignal(noParse, toolCallsReply({ maxRepeatCount: 3 }))).toBe('repeated_tool_call');
    expect(decisionSignal(noParse, toolCallsReply({ maxRepeatCount: 2 }))).toBe('unchanged_state');
  });

  it('reads the configured thresholds', () => {
    const context = contextWith({ noProgress: { repeatedToolCall: 5, sameParseError: 1 }, progress: { sameParseErrorStreak: 0 } });
    expect(decisionSignal(context, toolCallsReply({ maxRepeatCount: 4 }))).toBeNull();
    expect(decisionSignal(context, toolCallsReply({ maxRepeatCount: 5 }))).toBe('repeated_tool_call');
    const oneParseError = contextWith({ noProgress: { sameParseError: 1 }, progress: { sameParseErrorStreak: 1 } });
    expect(decisionSignal(oneParseError, unparseableReply('empty_reply'))).toBe(
      'same_parse_error',
    );
  });
});

describe('hasDecisionSignal', () => {
  it('follows decisionSignal', () => {
    expect(hasDecisionSignal({ context: contextWith(), event: toolCallsReply({ maxRepeatCount: 3 }) })).toBe(true);
    expect(hasDecisionSignal({ context: contextWith(), event: toolCallsReply({ maxRepeatCount: 1 }) })).toBe(false);
    expect(hasDecisionSignal({ context: contextWith({ progress: { unchangedStateStreak: 3 } }), event: seenBeforeRound })).toBe(
      false,
    );
  });
});

describe('streak guards', () => {
  const event = seenBeforeRound;

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
    const noProgress = { planStall: 4 };
    expect(isPlanStalled({ context: contextWith({ noProgress, task: { steps: 3 }, steps: 9 }), event })).toBe(false);
    expect(isPlanStalled({ context: contextWith({ noProgress, task: { steps: 4 }, steps: 4 }), event })).toBe(true);
  });
});

describe('nudge guards', () => {
  const event = seenBeforeRound;

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
