/**
 * The loop machine's no-progress signals: each one nudges the model first, then stops the run, except
 * a repeated evaluator rejection, which stops at once (the fed-back reason was the nudge).
 */
import { describe, expect, it } from 'vitest';
import { getPendingEffect } from './pending-effect.js';
import { DEFAULT_NO_PROGRESS } from '../src/engine/constants.js';
import type { LoopEvent } from './types.js';
import {
  backoffElapsed,
  callModelEffect,
  evaluationPassed,
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

/** One decision asking for a call, and the round that ran it with `round` facts. */
const step = (round: Parameters<typeof toolsCompleted>[0] = {}): LoopEvent[] => [
  toolCallsReply(),
  toolsCompleted(round),
];

/** A round that repeated the `lookup` call `times` times with the same result. */
const lookupSeen = (times: number) =>
  toolsCompleted({ maxRepeatCount: times, repeatedTool: 'lookup', allObservationsSeen: true });

/** A round whose only call failed: no observation, so neither news nor a repeat. */
const failedRound = toolsCompleted({ failedCalls: 1, maxRepeatCount: 0 });

describe('repeated_tool_call (judged on the round, once the results are known)', () => {
  it('the same call bringing the same result nudges at the threshold, with its calls run, and stops the next time', () => {
    const twice = send(startedRun(), ...step({ maxRepeatCount: 1 }), toolCallsReply(), lookupSeen(2));
    expect(getPendingEffect(twice)).toEqual(callModelEffect());
    const nudged = send(twice, toolCallsReply(), lookupSeen(3));
    expect(getPendingEffect(nudged)).toEqual(callModelEffect({ kind: 'nudge', signal: 'repeated_tool_call' }));
    expect(nudged.context.usage.toolCalls).toBe(3);
    const output = expectStop(send(nudged, toolCallsReply(), lookupSeen(4)), 'no_progress');
    expect(output.detail).toBe(
      'no progress after a nudge: repeated_tool_call: lookup was called with the same arguments and brought the same result 4 times in this task (threshold 3); raise noProgress.repeatedToolCall',
    );
    expect(output.usage.toolCalls).toBe(4);
  });

  it('a decision asking for a call never signals by itself: the reply goes on to its tools', () => {
    const acting = send(startedRun(), toolCallsReply(), lookupSeen(2), toolCallsReply());
    expect(getPendingEffect(acting)).toEqual({ kind: 'runTools', taskIndex: 0 });
  });

  it('the same call whose result keeps changing (polling) never signals', () => {
    // The driver counts (call, result) triples: a changed result is seen once, so the round repeat count stays 1.
    const polled = send(startedRun(), ...Array.from({ length: 8 }, () => step({ maxRepeatCount: 1 })).flat());
    expect(getPendingEffect(polled)).toEqual(callModelEffect());
    expect(polled.context.progress.nudgedAtStep).toBeNull();
  });

  it('a round that brings news after the nudge clears it: the next repeat nudges again instead of stopping', () => {
    const nudged = send(startedRun(), toolCallsReply(), lookupSeen(3));
    expect(nudged.context.progress.nudgedAtStep).toBe(1);
    const changedCourse = send(nudged, ...step({ maxRepeatCount: 1 }));
    expect(getPendingEffect(changedCourse)).toEqual(callModelEffect());
    expect(changedCourse.context.progress.nudgedAtStep).toBeNull();
    const nudgedAgain = send(changedCourse, toolCallsReply(), lookupSeen(4));
    expect(getPendingEffect(nudgedAgain)).toEqual(callModelEffect({ kind: 'nudge', signal: 'repeated_tool_call' }));
    expect(nudgedAgain.context.progress.nudgedAtStep).toBe(3);
  });

  it('a round with only failed calls after the nudge is no answer: the next repeat stops', () => {
    const nudged = send(startedRun(), toolCallsReply(), lookupSeen(3));
    const failed = send(nudged, toolCallsReply(), failedRound);
    expect(getPendingEffect(failed)).toEqual(callModelEffect());
    expectStop(send(failed, toolCallsReply(), lookupSeen(4)), 'no_progress');
  });

  it('reads the configured threshold', () => {
    const strict: LoopInputOverrides = { noProgress: { repeatedToolCall: 2 } };
    const nudged = send(startedRun(strict), ...step({ maxRepeatCount: 1 }), toolCallsReply(), lookupSeen(2));
    expect(getPendingEffect(nudged)).toEqual(callModelEffect({ kind: 'nudge', signal: 'repeated_tool_call' }));
  });
});

describe('duplicate_observation', () => {
  // A cycle A, B, C, A, B, C: every round of the second pass brings only pairs seen once before.
  const newRound = toolsCompleted({ maxRepeatCount: 1 });
  const seenOnce = toolsCompleted({ maxRepeatCount: 2, repeatedTool: 'lookup', allObservationsSeen: true });

  it('three rounds of seen-before observations nudge; the next signal of the round stops', () => {
    const firstPass = [newRound, newRound, newRound];
    const twice = send(
      startedRun(),
      ...[...firstPass, seenOnce, seenOnce].flatMap((round) => [toolCallsReply(), round]),
    );
    expect(getPendingEffect(twice)).toEqual(callModelEffect());
    const nudged = send(twice, toolCallsReply(), seenOnce);
    expect(getPendingEffect(nudged)).toEqual(callModelEffect({ kind: 'nudge', signal: 'duplicate_observation' }));
    const output = expectStop(send(nudged, toolCallsReply(), seenOnce), 'no_progress');
    expect(output.detail).toBe(
      'no progress after a nudge: duplicate_observation: 4 tool rounds in a row brought only (call, result) pairs already seen in this task (threshold 3); raise noProgress.duplicateObservation',
    );
  });

  it('a round with something new resets the streak', () => {
    const rounds = [seenOnce, seenOnce, newRound, seenOnce, seenOnce];
    const snapshot = send(startedRun(), ...rounds.flatMap((round) => [toolCallsReply(), round]));
    expect(getPendingEffect(snapshot)).toEqual(callModelEffect());
  });
});

describe('unchanged_state', () => {
  it('the same digest on three decisions in a row nudges without running the calls, a fourth stops', () => {
    const same = { stateDigest: 'same' };
    const acting = send(startedRun(), toolCallsReply({}, same), toolsCompleted(), toolCallsReply({}, same));
    // A streak of two (the first digest counts as one): no signal yet.
    expect(getPendingEffect(acting)).toEqual({ kind: 'runTools', taskIndex: 0 });
    const nudged = send(acting, toolsCompleted(), toolCallsReply({}, same));
    expect(getPendingEffect(nudged)).toEqual(callModelEffect({ kind: 'nudge', signal: 'unchanged_state' }));
    expect(nudged.context.usage.toolCalls).toBe(2);
    const output = expectStop(send(nudged, toolCallsReply({}, same)), 'no_progress');
    expect(output.detail).toBe(
      'no progress after a nudge: unchanged_state: nothing new for 4 decisions in a row (threshold 3); raise noProgress.unchangedState',
    );
  });

  it('after the nudge, a transport retry does not count as the model reacting: the same state still stops', () => {
    const same = { stateDigest: 'same' };
    const nudged = send(
      startedRun(),
      toolCallsReply({}, same),
      toolsCompleted(),
      toolCallsReply({}, same),
      toolsCompleted(),
      toolCallsReply({}, same),
    );
    expect(getPendingEffect(nudged)).toEqual(callModelEffect({ kind: 'nudge', signal: 'unchanged_state' }));
    const retried = send(nudged, modelFailed(), backoffElapsed());
    expect(getPendingEffect(retried)).toEqual(callModelEffect({ kind: 'transport_retry' }));
    expectStop(send(retried, toolCallsReply({}, same)), 'no_progress');
    expect(getPendingEffect(send(retried, toolCallsReply()))).toEqual({ kind: 'runTools', taskIndex: 0 });
  });
});

describe('same_evaluator_reason (stops at once: the fed-back reason was the nudge)', () => {
  it('the same output rejected for the same reason a second time stops the run, without a nudge', () => {
    const once = send(startedRun(), finalReply(), evaluationRejected('missing total', { outputDigest: 'out-1' }));
    expect(getPendingEffect(once)).toEqual(callModelEffect({ kind: 'reflection', reason: 'missing total' }));
    const output = expectStop(
      send(once, finalReply(), evaluationRejected('missing total', { outputDigest: 'out-1' })),
      'no_progress',
    );
    expect(output.detail).toBe(
      'no progress after the reason was fed back: same_evaluator_reason: the same output was rejected 2 times for the same reason (threshold 2): missing total; raise noProgress.sameEvaluatorReason',
    );
    expect(output.steps).toBe(2);
  });

  it('a changed output rejected for the same reason is a plain reflection, bounded by maxRetries', () => {
    const twice = send(
      startedRun(),
      finalReply(),
      evaluationRejected('missing total', { outputDigest: 'out-1' }),
      finalReply(),
      evaluationRejected('missing total', { outputDigest: 'out-2' }),
    );
    expect(getPendingEffect(twice)).toEqual(callModelEffect({ kind: 'reflection', reason: 'missing total' }));
    expect(twice.context.task.reflectionRetries).toBe(2);
    const output = expectStop(
      send(twice, finalReply(), evaluationRejected('missing total', { outputDigest: 'out-3' })),
      'retries_exhausted',
    );
    expect(output.detail).toContain('evaluation still failing after 2 reflection retries');
  });

  it('a different reason for the same output is a plain reflection', () => {
    const twice = send(
      startedRun(),
      finalReply(),
      evaluationRejected('missing total', { outputDigest: 'out-1' }),
      finalReply(),
      evaluationRejected('total is negative', { outputDigest: 'out-1' }),
    );
    expect(getPendingEffect(twice)).toEqual(callModelEffect({ kind: 'reflection', reason: 'total is negative' }));
  });

  it('reads the configured threshold', () => {
    const patient: LoopInputOverrides = { noProgress: { sameEvaluatorReason: 3 }, limits: { maxRetries: 5 } };
    const same = (reason: string) => [finalReply(), evaluationRejected(reason, { outputDigest: 'out-1' })];
    const twice = send(startedRun(patient), ...same('missing total'), ...same('missing total'));
    expect(getPendingEffect(twice)).toEqual(callModelEffect({ kind: 'reflection', reason: 'missing total' }));
    expectStop(send(twice, ...same('missing total')), 'no_progress');
  });
});

describe('plan_stall (only with the plan tool)', () => {
  const setup: LoopInputOverrides = { noProgress: { planStall: 3 } };
  const planCreated = toolsCompleted({ plan: { openItems: 3, progressed: false } });

  it('planStall decisions without a plan item done or removed nudge at the gate; one more stops', () => {
    // Decision 1 creates the plan; decisions 2, 3, 4 count.
    const created = send(startedRun(setup), toolCallsReply(), planCreated);
    const twoSteps = send(created, ...step(), ...step());
    expect(getPendingEffect(twoSteps)).toEqual(callModelEffect());
    const nudged = send(twoSteps, ...step());
    expect(getPendingEffect(nudged)).toEqual(callModelEffect({ kind: 'nudge', signal: 'plan_stall' }));
    // A round that brings nothing new (its only call failed) and does not move the plan is no answer to the nudge.
    const output = expectStop(send(nudged, ...step({ failedCalls: 1, maxRepeatCount: 0 })), 'no_progress');
    expect(output.detail).toBe(
      'no progress after a nudge: plan_stall: 4 steps without a plan item done or removed (threshold 3); raise noProgress.planStall',
    );
    expect(output.steps).toBe(5);
  });

  it('new results answer a plan-stall nudge too: the count starts over, so work that goes on is nudged again later, never stopped', () => {
    const nudged = send(startedRun(setup), toolCallsReply(), planCreated, ...step(), ...step(), ...step());
    expect(getPendingEffect(nudged)).toEqual(callModelEffect({ kind: 'nudge', signal: 'plan_stall' }));
    const answered = send(nudged, ...step({ maxRepeatCount: 1 }));
    expect(getPendingEffect(answered)).toEqual(callModelEffect());
    expect(answered.context.progress).toMatchObject({ planStallSteps: 0, nudgedAtStep: null });
    const later = send(answered, ...step(), ...step(), ...step());
    expect(getPendingEffect(later)).toEqual(callModelEffect({ kind: 'nudge', signal: 'plan_stall' }));
  });

  it('a pending reflection is not overwritten by a plan-stall nudge: the plan waits a step', () => {
    const stalled = send(startedRun(setup), toolCallsReply(), planCreated, ...step(), ...step());
    const rejected = send(stalled, finalReply(), evaluationRejected('missing field total'));
    expect(getPendingEffect(rejected)).toEqual(callModelEffect({ kind: 'reflection', reason: 'missing field total' }));
  });

  it('a round that completes a plan item resets the count and answers the nudge', () => {
    const nudged = send(startedRun(setup), toolCallsReply(), planCreated, ...step(), ...step(), ...step());
    expect(getPendingEffect(nudged)).toEqual(callModelEffect({ kind: 'nudge', signal: 'plan_stall' }));
    const moved = send(nudged, ...step({ plan: { openItems: 2, progressed: true } }));
    expect(getPendingEffect(moved)).toEqual(callModelEffect());
    expect(moved.context.progress).toMatchObject({ planStallSteps: 0, nudgedAtStep: null });
    // The count starts over: stalling again nudges again, it does not stop.
    const nudgedAgain = send(moved, ...step(), ...step(), ...step());
    expect(getPendingEffect(nudgedAgain)).toEqual(callModelEffect({ kind: 'nudge', signal: 'plan_stall' }));
  });

  it('a plan with every item done can no longer stall', () => {
    const finished = send(
      startedRun(setup),
      toolCallsReply(),
      planCreated,
      ...step({ plan: { openItems: 0, progressed: true } }),
    );
    const later = send(finished, ...Array.from({ length: 6 }, () => step()).flat());
    expect(getPendingEffect(later)).toEqual(callModelEffect());
  });

  it('a long loop without a plan never plan-stalls, nor raises any other signal, with default-like thresholds', () => {
    const run = startedRun({
      limits: { maxSteps: 50, maxStepsPerTask: 50, maxInputTokens: 1e9, maxOutputTokens: 1e9, maxCostUsd: 1e9 },
      noProgress: DEFAULT_NO_PROGRESS,
    });
    let snapshot = run;
    for (let decision = 1; decision <= 35; decision += 1) {
      snapshot = send(snapshot, toolCallsReply(), toolsCompleted({ maxRepeatCount: 1 }));
      expect(getPendingEffect(snapshot)).toEqual(callModelEffect());
    }
    expect(snapshot.context.steps).toBe(35);
    expect(snapshot.context.progress).toMatchObject({
      planActive: false,
      planStallSteps: 0,
      nudgedAtStep: null,
      lastSignal: null,
    });
    expectStop(send(snapshot, finalReply(), evaluationPassed()), 'completed');
  });
});

describe('same_parse_error', () => {
  it('repairs twice, nudges on the third identical error, stops on the fourth', () => {
    const once = send(startedRun(), unparseableReply('empty_reply'));
    expect(getPendingEffect(once)).toEqual(callModelEffect({ kind: 'parse_error', parseError: 'empty_reply' }));
    const twice = send(once, unparseableReply('empty_reply'));
    expect(getPendingEffect(twice)).toEqual(callModelEffect({ kind: 'parse_error', parseError: 'empty_reply' }));
    const nudged = send(twice, unparseableReply('empty_reply'));
    expect(getPendingEffect(nudged)).toEqual(callModelEffect({ kind: 'nudge', signal: 'same_parse_error' }));
    const output = expectStop(send(nudged, unparseableReply('empty_reply')), 'no_progress');
    expect(output.detail).toBe(
      'no progress after a nudge: same_parse_error: empty_reply 4 times in a row (threshold 3); raise noProgress.sameParseError',
    );
  });

  it('the same invalid arguments are repaired while repairs remain, nudged at the threshold, then stopped', () => {
    const invalid = () => toolCallsReply({ invalidCalls: 1, parseError: 'schema:order_id' });
    const twice = send(startedRun({ limits: { maxArgumentRepairs: 5 } }), invalid(), invalid());
    expect(getPendingEffect(twice)).toEqual(callModelEffect({ kind: 'argument_repair' }));
    const nudged = send(twice, invalid());
    expect(getPendingEffect(nudged)).toEqual(callModelEffect({ kind: 'nudge', signal: 'same_parse_error' }));
    expect(nudged.context.task.argumentRepairs).toBe(2);
    expect(expectStop(send(nudged, invalid()), 'no_progress').detail).toContain(
      'same_parse_error: schema:order_id 4 times',
    );
  });

  it('invalid arguments with no repair left fail the task, whatever the streak', () => {
    const invalid = () => toolCallsReply({ invalidCalls: 1, parseError: 'schema:order_id' });
    const setup: LoopInputOverrides = { limits: { maxArgumentRepairs: 1 }, noProgress: { sameParseError: 2 } };
    expectStop(send(startedRun(setup), invalid(), invalid()), 'retries_exhausted');
  });

  it('alternating errors never build a streak', () => {
    const snapshot = send(
      startedRun(),
      unparseableReply('empty_reply'),
      unparseableReply('bad_json'),
      unparseableReply('empty_reply'),
      unparseableReply('bad_json'),
    );
    expect(getPendingEffect(snapshot)).toEqual(callModelEffect({ kind: 'parse_error', parseError: 'bad_json' }));
  });
});

describe('one nudge at a time', () => {
  it('a second signal in the same step as the nudge does not stop the run before the model saw the nudge', () => {
    // The third round both repeats a call and leaves the plan stalled: one nudge, no stop.
    const setup: LoopInputOverrides = { noProgress: { planStall: 2, repeatedToolCall: 3 } };
    const nudged = send(
      startedRun(setup),
      ...step({ maxRepeatCount: 1, plan: { openItems: 2, progressed: false } }),
      toolCallsReply(),
      lookupSeen(2),
      toolCallsReply(),
      lookupSeen(3),
    );
    expect(getPendingEffect(nudged)).toEqual(callModelEffect({ kind: 'nudge', signal: 'repeated_tool_call' }));
    expect(nudged.context.progress).toMatchObject({ nudgedAtStep: 3, planStallSteps: 2 });
    // Once the model has answered it without news, the still-stalled plan stops the run.
    const output = expectStop(send(nudged, toolCallsReply(), failedRound), 'no_progress');
    expect(output.detail).toContain('plan_stall: 3 steps');
  });
});
