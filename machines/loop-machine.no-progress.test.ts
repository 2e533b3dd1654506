/**
 * The loop machine's no-progress signals: each one nudges the model first, then stops the run.
 */
import { describe, expect, it } from 'vitest';
import { getPendingEffect } from './pending-effect.js';
import {
  backoffElapsed,
  callModelEffect,
  evaluationRejected,
  expectStop,
  finalReply,
  modelFailed,
  send,
  startedRun,
  toolCallsReply,
  toolsCompleted,
  unparseableReply,
  type LoopInputOverrides,
} from '../test/support/statechart-fixtures.js';

describe('no_progress: each signal nudges first, then stops', () => {
  it('repeated_tool_call: the call is not run, the model is nudged, and a further repeat stops the run', () => {
    const setup: LoopInputOverrides = { noProgress: { repeatedToolCall: 3 } };
    const twice = send(
      startedRun(setup),
      toolCallsReply({ maxRepeatCount: 1 }),
      toolsCompleted(),
      toolCallsReply({ maxRepeatCount: 2 }),
      toolsCompleted(),
    );
    expect(getPendingEffect(twice)).toEqual(callModelEffect());
    const nudged = send(twice, toolCallsReply({ maxRepeatCount: 3 }));
    expect(getPendingEffect(nudged)).toEqual(callModelEffect({ kind: 'nudge', signal: 'repeated_tool_call' }));
    const output = expectStop(send(nudged, toolCallsReply({ maxRepeatCount: 4 })), 'no_progress');
    expect(output.detail).toBe('no progress after a nudge: repeated_tool_call');
    expect(output.usage.toolCalls).toBe(2);
  });

  it('repeated_tool_call: a model that changes course after the nudge goes on', () => {
    const nudged = send(startedRun(), toolCallsReply({ maxRepeatCount: 3 }));
    expect(getPendingEffect(send(nudged, toolCallsReply({ maxRepeatCount: 1 })))).toEqual({ kind: 'runTools', taskIndex: 0 });
  });

  it('unchanged_state: the same digest on three decisions in a row nudges, a fourth stops', () => {
    const same = { stateDigest: 'same' };
    const acting = send(startedRun(), toolCallsReply({}, same), toolsCompleted(), toolCallsReply({}, same));
    // A streak of two (the first digest counts as one): no signal yet.
    expect(getPendingEffect(acting)).toEqual({ kind: 'runTools', taskIndex: 0 });
    const nudged = send(acting, toolsCompleted(), toolCallsReply({}, same));
    expect(getPendingEffect(nudged)).toEqual(callModelEffect({ kind: 'nudge', signal: 'unchanged_state' }));
    const output = expectStop(send(nudged, toolCallsReply({}, same)), 'no_progress');
    expect(output.detail).toBe('no progress after a nudge: unchanged_state');
  });

  it('same_evaluator_reason: the same failure twice nudges (as a reflection), a third time stops', () => {
    const once = send(startedRun(), finalReply(), evaluationRejected('missing total'));
    expect(getPendingEffect(once)).toEqual(callModelEffect({ kind: 'reflection', reason: 'missing total' }));
    const nudged = send(once, finalReply(), evaluationRejected('missing total'));
    expect(getPendingEffect(nudged)).toEqual(callModelEffect({ kind: 'nudge', signal: 'same_evaluator_reason' }));
    const output = expectStop(send(nudged, finalReply(), evaluationRejected('missing total')), 'no_progress');
    expect(output.detail).toBe('no progress after a nudge: same_evaluator_reason');
  });

  it('same_evaluator_reason: a different reason is a plain reflection', () => {
    const twice = send(
      startedRun(),
      finalReply(),
      evaluationRejected('missing total'),
      finalReply(),
      evaluationRejected('total is negative'),
    );
    expect(getPendingEffect(twice)).toEqual(callModelEffect({ kind: 'reflection', reason: 'total is negative' }));
  });

  it('duplicate_observation: three rounds of seen-before observations nudge, a fourth stops', () => {
    const seen = toolsCompleted({ allObservationsSeen: true });
    const twice = send(startedRun(), toolCallsReply(), seen, toolCallsReply(), seen);
    expect(getPendingEffect(twice)).toEqual(callModelEffect());
    const nudged = send(twice, toolCallsReply(), seen);
    expect(getPendingEffect(nudged)).toEqual(callModelEffect({ kind: 'nudge', signal: 'duplicate_observation' }));
    const output = expectStop(send(nudged, toolCallsReply(), seen), 'no_progress');
    expect(output.detail).toBe('no progress after a nudge: duplicate_observation');
  });

  it('duplicate_observation: a round with something new resets the streak', () => {
    const seen = toolsCompleted({ allObservationsSeen: true });
    const fresh = toolsCompleted({ allObservationsSeen: false });
    const rounds = [seen, seen, fresh, seen, seen];
    const snapshot = send(startedRun(), ...rounds.flatMap((round) => [toolCallsReply(), round]));
    expect(getPendingEffect(snapshot)).toEqual(callModelEffect());
  });

  it('plan_stall: a task that took planStall decisions is nudged at the gate, and stops after one more', () => {
    const setup: LoopInputOverrides = { noProgress: { planStall: 3 } };
    const twoSteps = send(startedRun(setup), toolCallsReply(), toolsCompleted(), toolCallsReply(), toolsCompleted());
    expect(getPendingEffect(twoSteps)).toEqual(callModelEffect());
    const nudged = send(twoSteps, toolCallsReply(), toolsCompleted());
    expect(getPendingEffect(nudged)).toEqual(callModelEffect({ kind: 'nudge', signal: 'plan_stall' }));
    const output = expectStop(send(nudged, toolCallsReply(), toolsCompleted()), 'no_progress');
    expect(output.detail).toBe('no progress after a nudge: plan_stall');
    expect(output.steps).toBe(4);
  });

  it('same_parse_error: repairs twice, nudges on the third identical error, stops on the fourth', () => {
    const once = send(startedRun(), unparseableReply('empty_reply'));
    expect(getPendingEffect(once)).toEqual(callModelEffect({ kind: 'parse_error', parseError: 'empty_reply' }));
    const twice = send(once, unparseableReply('empty_reply'));
    expect(getPendingEffect(twice)).toEqual(callModelEffect({ kind: 'parse_error', parseError: 'empty_reply' }));
    const nudged = send(twice, unparseableReply('empty_reply'));
    expect(getPendingEffect(nudged)).toEqual(callModelEffect({ kind: 'nudge', signal: 'same_parse_error' }));
    const output = expectStop(send(nudged, unparseableReply('empty_reply')), 'no_progress');
    expect(output.detail).toBe('no progress after a nudge: same_parse_error');
  });

  it('same_parse_error: alternating errors never build a streak', () => {
    const snapshot = send(
      startedRun(),
      unparseableReply('empty_reply'),
      unparseableReply('bad_json'),
      unparseableReply('empty_reply'),
      unparseableReply('bad_json'),
    );
    expect(getPendingEffect(snapshot)).toEqual(callModelEffect({ kind: 'parse_error', parseError: 'bad_json' }));
  });

  it('a second signal in the same step as the nudge does not stop the run before the model saw the nudge', () => {
    // The third decision both repeats a call and reaches planStall: one nudge, no stop.
    const setup: LoopInputOverrides = { noProgress: { planStall: 3, repeatedToolCall: 3 } };
    const nudged = send(
      startedRun(setup),
      toolCallsReply({ maxRepeatCount: 1 }),
      toolsCompleted(),
      toolCallsReply({ maxRepeatCount: 2 }),
      toolsCompleted(),
      toolCallsReply({ maxRepeatCount: 3 }),
    );
    expect(getPendingEffect(nudged)).toEqual(callModelEffect({ kind: 'nudge', signal: 'repeated_tool_call' }));
    expect(nudged.context.progress.nudgedAtStep).toBe(3);
    // One nudge per task: once the model has answered it, the still-stalled plan stops the run.
    const answered = send(nudged, toolCallsReply({ maxRepeatCount: 1 }));
    expect(getPendingEffect(answered)).toEqual({ kind: 'runTools', taskIndex: 0 });
    expectStop(send(answered, toolsCompleted()), 'no_progress');
  });

  it('after a nudge, a later transport retry does not count as the model reacting', () => {
    const nudged = send(startedRun(), toolCallsReply({ maxRepeatCount: 3 }));
    const retried = send(nudged, modelFailed(), backoffElapsed());
    expect(getPendingEffect(retried)).toEqual(callModelEffect({ kind: 'transport_retry' }));
    expect(getPendingEffect(send(retried, toolCallsReply({ maxRepeatCount: 1 })))).toEqual({ kind: 'runTools', taskIndex: 0 });
  });
});
