/**
 * Per-step work must not grow with history (issue 2, point 12): the machine's context holds
 * counters and digests only, so after 500 steps it is as large as after 5.
 */
import { createActor } from 'xstate';
import { describe, expect, it } from 'vitest';
import { loopMachine } from '../../machines/index.js';
import { DEFAULT_LIMITS, DEFAULT_NO_PROGRESS } from '../../src/engine/constants.js';

function contextSizeAfter(steps: number): { size: number; keys: string } {
  const actor = createActor(loopMachine, {
    input: {
      limits: {
        ...DEFAULT_LIMITS,
        maxSteps: 10_000,
        maxStepsPerTask: 10_000,
        maxToolCalls: 10_000,
        maxInputTokens: 1e12,
        maxOutputTokens: 1e12,
        maxCostUsd: 1e9,
      },
      noProgress: { ...DEFAULT_NO_PROGRESS, planStall: 10_000 },
      tasks: [{ id: 'main', onFailure: 'stop' }],
    },
  }).start();
  actor.send({ type: 'run.started', at: 0, nextRequestTokens: 10 });
  for (let step = 0; step < steps; step++) {
    actor.send({
      type: 'model.responded',
      at: step,
      nextRequestTokens: 10 + step,
      stateDigest: `digest-${step}`,
      usage: { inputTokens: 5, outputTokens: 1, costUsd: 0 },
      decision: {
        kind: 'tool_calls',
        calls: 1,
        invalidCalls: 0,
        parseError: null,
        deniedCalls: 0,
        approvalCalls: 0,
        unavailableCalls: 0,
        refusedCalls: 0,
        blockedTool: null,
      },
    });
    actor.send({
      type: 'tools.completed',
      at: step,
      nextRequestTokens: 20 + step,
      // An active plan that moves now and then: its counters stay bounded however long the run.
      round: {
        calls: 1,
        failedCalls: 0,
        timedOutCalls: 0,
        unknownOutcomeCalls: 0,
        allObservationsSeen: false,
        maxRepeatCount: 1,
        repeatedTool: null,
        requiredToolUnavailable: false,
        plan: { openItems: 3, progressed: step % 5 === 0 },
      },
    });
  }
  const snapshot = actor.getSnapshot();
  expect(snapshot.matches({ RUNNING: 'deciding' })).toBe(true);
  const json = JSON.stringify(snapshot.context);
  return { size: json.length, keys: JSON.stringify(Object.keys(snapshot.context)) };
}

describe('machine context size', () => {
  it('does not grow with the number of steps', () => {
    const early = contextSizeAfter(5);
    const late = contextSizeAfter(500);
    expect(late.keys).toBe(early.keys);
    // Only counters gain digits (5 → 500, 5 → 2500 tokens...); nothing accumulates per step.
    expect(late.size - early.size).toBeLessThan(40);
  });
});
