/**
 * The loop machine against its budgets: steps, the deadline, input and output tokens, and cost.
 */
import { describe, expect, it } from 'vitest';
import { getPendingEffect } from './pending-effect.js';
import type { CallUsage } from './types.js';
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
  type LoopInputOverrides,
} from '../test/support/statechart-fixtures.js';

describe('max_steps', () => {
  it('refuses the first model call when maxSteps is 0', () => {
    const output = expectStop(startedRun({ limits: { maxSteps: 0 } }), 'max_steps');
    expect(output.usage.modelCalls).toBe(0);
  });

  it('stops at the last allowed step before running its tool calls', () => {
    const atLimit = send(startedRun({ limits: { maxSteps: 2 } }), toolCallsReply(), toolsCompleted(), toolCallsReply());
    const output = expectStop(atLimit, 'max_steps');
    expect(output.steps).toBe(2);
    expect(output.usage.toolCalls).toBe(1);
    expect(output.detail).toContain('maxSteps (2)');
  });

  it('still evaluates a final reply made at the last allowed step', () => {
    const lastStep = send(startedRun({ limits: { maxSteps: 1 } }), finalReply());
    expect(getPendingEffect(lastStep)).toEqual({ kind: 'evaluate', taskIndex: 0, mayCallModel: true });
    expectStop(send(lastStep, evaluationPassed()), 'completed');
  });

  it('stops at the gate when a reflection would need a step past the limit', () => {
    const oneStepLeft = send(
      startedRun({ limits: { maxSteps: 2 } }),
      finalReply(),
      evaluationRejected('missing total'),
    );
    expect(getPendingEffect(oneStepLeft)).toEqual(callModelEffect({ kind: 'reflection', reason: 'missing total' }));
    const output = expectStop(send(oneStepLeft, finalReply(), evaluationRejected('total is negative')), 'max_steps');
    expect(output.steps).toBe(2);
  });
});

describe('deadline_exceeded', () => {
  const setup: LoopInputOverrides = { limits: { deadlineMs: 5_000 } };

  it('accepts a model reply one millisecond before the deadline', () => {
    expect(getPendingEffect(send(startedRun(setup), finalReply({ at: 4_999 })))).toEqual({
      kind: 'evaluate',
      taskIndex: 0,
      mayCallModel: true,
    });
  });

  it('stops on a model reply that arrives exactly at the deadline, still counting its usage', () => {
    const output = expectStop(send(startedRun(setup), finalReply({ at: 5_000 })), 'deadline_exceeded');
    expect(output.steps).toBe(1);
    expect(output.usage.modelCalls).toBe(1);
    expect(output.detail).toContain('5000 ms');
  });

  it('stops on a late tool round', () => {
    expectStop(
      send(startedRun(setup), toolCallsReply({}, { at: 1_000 }), toolsCompleted({}, { at: 5_001 })),
      'deadline_exceeded',
    );
  });

  it('stops on a late failing evaluation instead of reflecting', () => {
    expectStop(
      send(startedRun(setup), finalReply({ at: 1_000 }), evaluationRejected('missing total', { at: 6_000 })),
      'deadline_exceeded',
    );
  });

  it('accepts a late passing evaluation: the work is done', () => {
    expectStop(send(startedRun(setup), finalReply({ at: 1_000 }), evaluationPassed({ at: 6_000 })), 'completed');
  });

  it('stops on a late transport failure', () => {
    expectStop(send(startedRun(setup), modelFailed('transient', { at: 5_000 })), 'deadline_exceeded');
  });

  it('stops at once when the backoff would wake exactly at the deadline, and sleeps when it wakes just before', () => {
    expectStop(
      send(startedRun(setup), modelFailed('transient', { at: 4_000, retryDelayMs: 1_000 })),
      'deadline_exceeded',
    );
    expect(
      getPendingEffect(send(startedRun(setup), modelFailed('transient', { at: 4_000, retryDelayMs: 999 }))),
    ).toEqual({
      kind: 'sleep',
      until: 4_999,
    });
  });

  it('stops at the gate when a backoff elapses late, past the deadline, instead of calling the model', () => {
    const sleeping = send(startedRun(setup), modelFailed('transient', { at: 4_000, retryDelayMs: 500 }));
    expect(getPendingEffect(send(sleeping, backoffElapsed(4_999)))).toEqual(
      callModelEffect({ kind: 'transport_retry' }),
    );
    expectStop(send(sleeping, backoffElapsed(5_000)), 'deadline_exceeded');
  });

  it('stops on run.deadlineReached while a model call is in flight, without counting it', () => {
    const deciding = startedRun(setup);
    const output = expectStop(send(deciding, { type: 'run.deadlineReached', at: 5_000 }), 'deadline_exceeded');
    expect(output.steps).toBe(0);
    expect(output.usage.modelCalls).toBe(0);
  });

  it('stops on run.deadlineReached while sleeping and while running tools', () => {
    const sleeping = send(startedRun(setup), modelFailed());
    expect(getPendingEffect(sleeping).kind).toBe('sleep');
    expectStop(send(sleeping, { type: 'run.deadlineReached', at: 5_000 }), 'deadline_exceeded');
    expectStop(
      send(startedRun(setup), toolCallsReply(), { type: 'run.deadlineReached', at: 5_000 }),
      'deadline_exceeded',
    );
  });
});

describe('budget_exhausted', () => {
  describe('input tokens: the estimate refuses a call before it is made', () => {
    it('allows a first request estimated exactly at the limit', () => {
      expect(getPendingEffect(startedRun({}, 10_000))).toEqual(callModelEffect());
    });

    it('never asks for the first model call when its estimate is over the limit', () => {
      const output = expectStop(startedRun({}, 10_001), 'budget_exhausted');
      expect(output.usage.modelCalls).toBe(0);
      expect(output.detail).toContain('maxInputTokens (10000');
    });

    it('never asks for the next model call once a tool round made the next request too large', () => {
      // 100 input tokens used by the first call; 100 + 9,900 = 10,000 is allowed, 100 + 9,901 is not.
      const acting = send(startedRun(), toolCallsReply());
      expect(getPendingEffect(send(acting, toolsCompleted({}, { nextRequestTokens: 9_900 })))).toEqual(
        callModelEffect(),
      );
      const refused = send(acting, toolsCompleted({}, { nextRequestTokens: 9_901 }));
      const output = expectStop(refused, 'budget_exhausted');
      expect(output.usage.modelCalls).toBe(1);
      expect(output.detail).toContain('~9901');
    });

    it('refuses a reflection whose request would be too large', () => {
      const evaluating = send(startedRun(), finalReply());
      const refused = send(evaluating, evaluationRejected('missing total', { nextRequestTokens: 9_901 }));
      expectStop(refused, 'budget_exhausted');
    });
  });

  describe('output tokens', () => {
    const setup: LoopInputOverrides = { limits: { maxOutputTokens: 50 } };

    it('stops before running the tools of a reply that used up the output budget', () => {
      const reply = toolCallsReply({}, { usage: { inputTokens: 100, outputTokens: 50, costUsd: 0 } });
      const output = expectStop(send(startedRun(setup), reply), 'budget_exhausted');
      expect(output.usage.toolCalls).toBe(0);
      expect(output.detail).toContain('maxOutputTokens (50)');
    });

    it('lets a reply one token under the limit go on to its tools', () => {
      const acting = send(
        startedRun(setup),
        toolCallsReply({}, { usage: { inputTokens: 100, outputTokens: 49, costUsd: 0 } }),
      );
      expect(getPendingEffect(acting)).toEqual({ kind: 'runTools', taskIndex: 0 });
    });

    it('lets the final reply that crossed the limit stand, and refuses the next call', () => {
      const evaluating = send(
        startedRun(setup),
        finalReply({ usage: { inputTokens: 100, outputTokens: 60, costUsd: 0 } }),
      );
      // The reply is evaluated, but no LLM judge may be paid for with the budget spent.
      expect(getPendingEffect(evaluating)).toEqual({ kind: 'evaluate', taskIndex: 0, mayCallModel: false });
      expectStop(send(evaluating, evaluationPassed()), 'completed');
      expectStop(send(evaluating, evaluationRejected('missing total')), 'budget_exhausted');
    });

    it('names the budget, not the retry count, when a rejected reply cannot be retried for want of budget', () => {
      const noRetries: LoopInputOverrides = { limits: { maxOutputTokens: 50, maxRetries: 0 } };
      const evaluating = send(
        startedRun(noRetries),
        finalReply({ usage: { inputTokens: 100, outputTokens: 60, costUsd: 0 } }),
      );
      expectStop(send(evaluating, evaluationRejected('missing total')), 'budget_exhausted');
      // With budget left, the same rejection is a spent retry layer.
      const withinBudget = send(
        startedRun(noRetries),
        finalReply({ usage: { inputTokens: 100, outputTokens: 10, costUsd: 0 } }),
      );
      expectStop(send(withinBudget, evaluationRejected('missing total')), 'retries_exhausted');
    });
  });

  describe('tool calls (maxToolCalls)', () => {
    const setup: LoopInputOverrides = { limits: { maxToolCalls: 3 } };

    it('lets the round that crosses the budget stand, and refuses the next reply asking for tools, before running them', () => {
      const crossed = send(
        startedRun(setup),
        toolCallsReply({ calls: 2 }),
        toolsCompleted({ calls: 2 }),
        toolCallsReply({ calls: 2 }),
      );
      expect(getPendingEffect(crossed)).toEqual({ kind: 'runTools', taskIndex: 0 });
      const spent = send(crossed, toolsCompleted({ calls: 2 }));
      expect(getPendingEffect(spent)).toEqual(callModelEffect());
      const output = expectStop(send(spent, toolCallsReply()), 'budget_exhausted');
      expect(output.usage.toolCalls).toBe(4);
      expect(output.steps).toBe(3);
      expect(output.detail).toBe(
        "the model asked for more tool calls after 4 ran, the run's maxToolCalls (3); raise limits.maxToolCalls",
      );
    });

    it('still evaluates a final reply once the tool-call budget is spent', () => {
      const spent = send(startedRun(setup), toolCallsReply({ calls: 3 }), toolsCompleted({ calls: 3 }));
      const evaluating = send(spent, finalReply());
      expect(getPendingEffect(evaluating)).toEqual({ kind: 'evaluate', taskIndex: 0, mayCallModel: true });
      expectStop(send(evaluating, evaluationPassed()), 'completed');
    });

    it('allows tool calls up to the budget: one call short of it, the reply goes on to its tools', () => {
      const almost = send(
        startedRun(setup),
        toolCallsReply({ calls: 2 }),
        toolsCompleted({ calls: 2 }),
        toolCallsReply(),
      );
      expect(getPendingEffect(almost)).toEqual({ kind: 'runTools', taskIndex: 0 });
    });
  });

  describe('cost', () => {
    const setup: LoopInputOverrides = { limits: { maxCostUsd: 0.01 } };
    const halfBudget: CallUsage = { inputTokens: 10, outputTokens: 1, costUsd: 0.005 };

    it('stops when the cumulative cost reaches the limit exactly', () => {
      const secondCall = send(startedRun(setup), toolCallsReply({}, { usage: halfBudget }), toolsCompleted());
      expect(getPendingEffect(secondCall)).toEqual(callModelEffect());
      const output = expectStop(send(secondCall, toolCallsReply({}, { usage: halfBudget })), 'budget_exhausted');
      expect(output.usage.costUsd).toBe(0.01);
      expect(output.usage.toolCalls).toBe(1);
      expect(output.detail).toContain('maxCostUsd');
    });

    it('counts an LLM judge towards the cost and the model calls', () => {
      const evaluating = send(startedRun(setup), finalReply({ usage: halfBudget }));
      const output = expectStop(
        send(evaluating, evaluationRejected('off topic', { usage: halfBudget })),
        'budget_exhausted',
      );
      expect(output.usage.modelCalls).toBe(2);
      expect(output.usage.costUsd).toBe(0.01);
    });
  });
});
