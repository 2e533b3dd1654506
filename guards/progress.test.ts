import { describe, expect, it } from 'vitest';
import {
  canNudge,
  decisionSignal,
  hasDecisionSignal,
  hasRoundSignal,
  isPlanStalled,
  isSameEvaluatorReasonSignal,
  roundSignal,
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
    const context = contextWith({ progress: { sameParseErrorStreak: 9, unchangedStateStreak: 9, repeatCount: 9 } });
    expect(decisionSignal(context, seenBeforeRound)).toBeNull();
    expect(decisionSignal(context, backoffElapsed())).toBeNull();
  });

  it('is null when every streak is one below its threshold', () => {
    const context = contextWith({ progress: { sameParseErrorStreak: 2, unchangedStateStreak: 2 } });
    expect(decisionSignal(context, toolCallsReply())).toBeNull();
  });

  it('raises same_parse_error at the threshold', () => {
    const context = contextWith({ progress: { sameParseErrorStreak: 3 } });
    expect(decisionSignal(context, unparseableReply('empty_reply'))).toBe('same_parse_error');
  });

  it('never raises repeated_tool_call: repeats are judged on the round, once their results are known', () => {
    const context = contextWith({ progress: { repeatCount: 9, duplicateObservationStreak: 9 } });
    expect(decisionSignal(context, toolCallsReply())).toBeNull();
  });

  it('raises unchanged_state at the threshold, for any decision kind', () => {
    const context = contextWith({ progress: { unchangedStateStreak: 3 } });
    expect(decisionSignal(context, finalReply())).toBe('unchanged_state');
    expect(decisionSignal(context, toolCallsReply())).toBe('unchanged_state');
  });

  it('prefers same_parse_error over unchanged_state', () => {
    const all = contextWith({ progress: { sameParseErrorStreak: 3, unchangedStateStreak: 3 } });
    expect(decisionSignal(all, unparseableReply('bad_json'))).toBe('same_parse_error');
  });

  it('reads the configured thresholds', () => {
    const oneParseError = contextWith({ noProgress: { sameParseError: 1 }, progress: { sameParseErrorStreak: 1 } });
    expect(decisionSignal(oneParseError, unparseableReply('empty_reply'))).toBe('same_parse_error');
    const patient = contextWith({ noProgress: { unchangedState: 5 }, progress: { unchangedStateStreak: 4 } });
    expect(decisionSignal(patient, finalReply())).toBeNull();
  });
});

describe('hasDecisionSignal', () => {
  it('follows decisionSignal', () => {
    expect(
      hasDecisionSignal({ context: contextWith({ progress: { unchangedStateStreak: 3 } }), event: toolCallsReply() }),
    ).toBe(true);
    expect(hasDecisionSignal({ context: contextWith(), event: toolCallsReply() })).toBe(false);
    expect(
      hasDecisionSignal({ context: contextWith({ progress: { unchangedStateStreak: 3 } }), event: seenBeforeRound }),
    ).toBe(false);
  });
});

describe('roundSignal', () => {
  it('is null for events other than tools.completed, even with every round streak past its threshold', () => {
    const context = contextWith({ progress: { repeatCount: 9, duplicateObservationStreak: 9 } });
    expect(roundSignal(context, toolCallsReply())).toBeNull();
    expect(roundSignal(context, backoffElapsed())).toBeNull();
  });

  it('is null when both round streaks are one below their thresholds', () => {
    const context = contextWith({ progress: { repeatCount: 2, duplicateObservationStreak: 2 } });
    expect(roundSignal(context, toolsCompleted())).toBeNull();
  });

  it('raises repeated_tool_call when a round of seen results has a (call, result) triple seen repeatedToolCall times', () => {
    expect(roundSignal(contextWith({ progress: { repeatCount: 3 } }), seenBeforeRound)).toBe('repeated_tool_call');
    expect(roundSignal(contextWith({ progress: { repeatCount: 4 } }), seenBeforeRound)).toBe('repeated_tool_call');
  });

  it('raises nothing for a round that brought anything new, whatever repeated beside it', () => {
    const context = contextWith({ progress: { repeatCount: 9, duplicateObservationStreak: 9 } });
    expect(roundSignal(context, toolsCompleted({ allObservationsSeen: false, maxRepeatCount: 9 }))).toBeNull();
  });

  it('raises duplicate_observation at the streak threshold', () => {
    expect(roundSignal(contextWith({ progress: { duplicateObservationStreak: 3 } }), seenBeforeRound)).toBe(
      'duplicate_observation',
    );
  });

  it('prefers repeated_tool_call over duplicate_observation', () => {
    const both = contextWith({ progress: { repeatCount: 3, duplicateObservationStreak: 3 } });
    expect(roundSignal(both, seenBeforeRound)).toBe('repeated_tool_call');
  });

  it('reads the configured thresholds', () => {
    const context = contextWith({
      noProgress: { repeatedToolCall: 5, duplicateObservation: 2 },
      progress: { repeatCount: 4 },
    });
    expect(roundSignal(context, seenBeforeRound)).toBeNull();
    expect(roundSignal({ ...context, progress: { ...context.progress, repeatCount: 5 } }, seenBeforeRound)).toBe(
      'repeated_tool_call',
    );
    expect(
      roundSignal({ ...context, progress: { ...context.progress, duplicateObservationStreak: 2 } }, seenBeforeRound),
    ).toBe('duplicate_observation');
  });
});

describe('hasRoundSignal', () => {
  it('follows roundSignal', () => {
    expect(hasRoundSignal({ context: contextWith({ progress: { repeatCount: 3 } }), event: seenBeforeRound })).toBe(
      true,
    );
    expect(hasRoundSignal({ context: contextWith({ progress: { repeatCount: 2 } }), event: seenBeforeRound })).toBe(
      false,
    );
    expect(hasRoundSignal({ context: contextWith({ progress: { repeatCount: 3 } }), event: finalReply() })).toBe(false);
  });
});

describe('streak guards', () => {
  const event = seenBeforeRound;

  it('isSameEvaluatorReasonSignal is false one rejection below the threshold and true at it', () => {
    expect(isSameEvaluatorReasonSignal({ context: contextWith({ progress: { sameReasonStreak: 1 } }), event })).toBe(
      false,
    );
    expect(isSameEvaluatorReasonSignal({ context: contextWith({ progress: { sameReasonStreak: 2 } }), event })).toBe(
      true,
    );
  });

  describe('isPlanStalled', () => {
    const noProgress = { planStall: 4 };

    it('is false one step below the threshold and true at it, while the plan is active', () => {
      expect(
        isPlanStalled({
          context: contextWith({ noProgress, progress: { planActive: true, planStallSteps: 3 } }),
          event,
        }),
      ).toBe(false);
      expect(
        isPlanStalled({
          context: contextWith({ noProgress, progress: { planActive: true, planStallSteps: 4 } }),
          event,
        }),
      ).toBe(true);
    });

    it('is never true without an active plan, however many steps the task took', () => {
      const context = contextWith({
        noProgress,
        steps: 40,
        task: { steps: 40 },
        progress: { planActive: false, planStallSteps: 40 },
      });
      expect(isPlanStalled({ context, event })).toBe(false);
    });

    it('counts steps without plan progress, not the steps of the task', () => {
      const context = contextWith({
        noProgress,
        steps: 9,
        task: { steps: 9 },
        progress: { planActive: true, planStallSteps: 1 },
      });
      expect(isPlanStalled({ context, event })).toBe(false);
    });
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
