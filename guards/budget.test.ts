import { describe, expect, it } from 'vitest';
import {
  isCostBudgetExhausted,
  isDeadlineExceeded,
  isInputBudgetExhausted,
  isOutputBudgetExhausted,
  isRetryPastDeadline,
  isSpendBudgetExhausted,
  isStepLimitReached,
  isTaskStepLimitReached,
  isToolCallBudgetExhausted,
} from './budget.js';
import type { LoopContext, LoopLimits } from '../machines/types.js';
import {
  backoffElapsed,
  contextWith,
  finalReply,
  modelFailed,
  startedContextWith,
  toolCallsReply,
  toolsCompleted,
  unparseableReply,
  type ContextOverrides,
} from '../test/support/statechart-fixtures.js';

/** Budgets small enough to reach; a run started at 1,000 ms has its deadline at 6,000 ms. */
const BUDGET_LIMITS: Partial<LoopLimits> = {
  maxSteps: 5,
  deadlineMs: 5_000,
  maxInputTokens: 1_000,
  maxOutputTokens: 500,
  maxCostUsd: 0.5,
};

/** A context under `BUDGET_LIMITS`, the run not started. */
const budgetContext = ({ limits, ...overrides }: ContextOverrides = {}): LoopContext =>
  contextWith({ ...overrides, limits: { ...BUDGET_LIMITS, ...limits } });

/** A started run under `BUDGET_LIMITS`: began at 1,000 ms, last observed then. */
const startedBudgetContext = ({ limits, ...overrides }: ContextOverrides = {}): LoopContext =>
  startedContextWith({ ...overrides, limits: { ...BUDGET_LIMITS, ...limits } });

/** A transient model failure at `at` whose backoff lasts `retryDelayMs`. */
const failedAt = (at: number, retryDelayMs: number) => modelFailed('transient', { at, retryDelayMs });

describe('isDeadlineExceeded', () => {
  it('is false before the run started, however late the event', () => {
    expect(isDeadlineExceeded({ context: budgetContext(), event: backoffElapsed(1e12) })).toBe(false);
  });

  it('is false one millisecond before the deadline and true exactly at it', () => {
    // startedAt 1,000 + deadlineMs 5,000 = 6,000.
    expect(isDeadlineExceeded({ context: startedBudgetContext(), event: backoffElapsed(5_999) })).toBe(false);
    expect(isDeadlineExceeded({ context: startedBudgetContext(), event: backoffElapsed(6_000) })).toBe(true);
    expect(isDeadlineExceeded({ context: startedBudgetContext(), event: backoffElapsed(6_001) })).toBe(true);
  });

  it('never lets time run backwards: an event stamped earlier than the last observed time uses the later one', () => {
    const context = startedBudgetContext({ lastEventAt: 6_000 });
    expect(isDeadlineExceeded({ context, event: backoffElapsed(2_000) })).toBe(true);
  });

  it('reads the last observed time for run.started, whose own time is the start', () => {
    const context = startedBudgetContext({ lastEventAt: 1_000 });
    expect(isDeadlineExceeded({ context, event: { type: 'run.started', at: 99_999, nextRequestTokens: 10 } })).toBe(
      false,
    );
    expect(
      isDeadlineExceeded({
        context: startedBudgetContext({ lastEventAt: 6_000 }),
        event: { type: 'run.started', at: 0, nextRequestTokens: 10 },
      }),
    ).toBe(true);
  });

  it('honours the configured deadline, not a constant', () => {
    const context = startedBudgetContext({ limits: { deadlineMs: 100 } });
    expect(isDeadlineExceeded({ context, event: backoffElapsed(1_099) })).toBe(false);
    expect(isDeadlineExceeded({ context, event: backoffElapsed(1_100) })).toBe(true);
  });
});

describe('isStepLimitReached', () => {
  it('is false at maxSteps - 1 and true at and past maxSteps', () => {
    const event = backoffElapsed(0);
    expect(isStepLimitReached({ context: budgetContext({ steps: 4 }), event })).toBe(false);
    expect(isStepLimitReached({ context: budgetContext({ steps: 5 }), event })).toBe(true);
    expect(isStepLimitReached({ context: budgetContext({ steps: 6 }), event })).toBe(true);
  });

  it('refuses the first step when maxSteps is 0', () => {
    expect(isStepLimitReached({ context: budgetContext({ limits: { maxSteps: 0 } }), event: backoffElapsed(0) })).toBe(
      true,
    );
  });
});

describe('isInputBudgetExhausted (checked on the estimate, before the call)', () => {
  const event = backoffElapsed(0);

  it('allows a request whose estimate lands exactly on the limit', () => {
    const context = budgetContext({ usage: { inputTokens: 900 }, nextRequestTokens: 100 });
    expect(isInputBudgetExhausted({ context, event })).toBe(false);
  });

  it('refuses a request whose estimate would go one token over', () => {
    const context = budgetContext({ usage: { inputTokens: 900 }, nextRequestTokens: 101 });
    expect(isInputBudgetExhausted({ context, event })).toBe(true);
  });

  it('refuses even the first request when its estimate alone is over the limit', () => {
    expect(isInputBudgetExhausted({ context: budgetContext({ nextRequestTokens: 1_001 }), event })).toBe(true);
    expect(isInputBudgetExhausted({ context: budgetContext({ nextRequestTokens: 1_000 }), event })).toBe(false);
  });
});

describe('isOutputBudgetExhausted', () => {
  const event = backoffElapsed(0);

  it('is false one token below the limit and true at it', () => {
    expect(isOutputBudgetExhausted({ context: budgetContext({ usage: { outputTokens: 499 } }), event })).toBe(false);
    expect(isOutputBudgetExhausted({ context: budgetContext({ usage: { outputTokens: 500 } }), event })).toBe(true);
  });
});

describe('isCostBudgetExhausted', () => {
  const event = backoffElapsed(0);

  it('is false below the limit and true when the cost equals it', () => {
    expect(isCostBudgetExhausted({ context: budgetContext({ usage: { costUsd: 0.499_999 } }), event })).toBe(false);
    expect(isCostBudgetExhausted({ context: budgetContext({ usage: { costUsd: 0.5 } }), event })).toBe(true);
    expect(isCostBudgetExhausted({ context: budgetContext({ usage: { costUsd: 0.75 } }), event })).toBe(true);
  });
});

describe('isSpendBudgetExhausted', () => {
  const event = backoffElapsed(0);

  it('is false when every spend budget has room', () => {
    const context = budgetContext({
      usage: { inputTokens: 500, outputTokens: 499, costUsd: 0.49 },
      nextRequestTokens: 500,
    });
    expect(isSpendBudgetExhausted({ context, event })).toBe(false);
  });

  it.each([
    ['input estimate', { usage: { inputTokens: 500 }, nextRequestTokens: 501 }],
    ['output tokens', { usage: { outputTokens: 500 } }],
    ['cost', { usage: { costUsd: 0.5 } }],
  ] satisfies [string, ContextOverrides][])('is true when only the %s budget is exhausted', (_name, overrides) => {
    expect(isSpendBudgetExhausted({ context: budgetContext(overrides), event })).toBe(true);
  });
});

describe('isRetryPastDeadline', () => {
  it('is false for events other than model.failed', () => {
    expect(isRetryPastDeadline({ context: startedBudgetContext(), event: backoffElapsed(1e12) })).toBe(false);
  });

  it('is false before the run started', () => {
    expect(isRetryPastDeadline({ context: budgetContext(), event: failedAt(1e12, 1e12) })).toBe(false);
  });

  it('is false when the retry wakes one millisecond before the deadline and true when it wakes exactly at it', () => {
    // Deadline at 6,000.
    expect(isRetryPastDeadline({ context: startedBudgetContext(), event: failedAt(5_000, 999) })).toBe(false);
    expect(isRetryPastDeadline({ context: startedBudgetContext(), event: failedAt(5_000, 1_000) })).toBe(true);
  });

  it('counts the delay, not only the failure time', () => {
    expect(isRetryPastDeadline({ context: startedBudgetContext(), event: failedAt(1_001, 0) })).toBe(false);
    expect(isRetryPastDeadline({ context: startedBudgetContext(), event: failedAt(1_001, 10_000) })).toBe(true);
  });
});

describe('isTaskStepLimitReached', () => {
  const event = backoffElapsed(0);

  it('is false at maxStepsPerTask - 1 and true at and past it', () => {
    const limits = { maxStepsPerTask: 3 };
    expect(isTaskStepLimitReached({ context: budgetContext({ limits, task: { steps: 2 } }), event })).toBe(false);
    expect(isTaskStepLimitReached({ context: budgetContext({ limits, task: { steps: 3 } }), event })).toBe(true);
    expect(isTaskStepLimitReached({ context: budgetContext({ limits, task: { steps: 4 } }), event })).toBe(true);
  });

  it('counts the steps of the current task, not of the run', () => {
    const limits = { maxSteps: 100, maxStepsPerTask: 3 };
    expect(isTaskStepLimitReached({ context: budgetContext({ limits, steps: 50, task: { steps: 1 } }), event })).toBe(
      false,
    );
  });
});

describe('isToolCallBudgetExhausted', () => {
  const limits = { maxToolCalls: 4 };

  it('is false one call below the budget and true at and past it, for a reply asking for tool calls', () => {
    expect(
      isToolCallBudgetExhausted({
        context: budgetContext({ limits, usage: { toolCalls: 3 } }),
        event: toolCallsReply(),
      }),
    ).toBe(false);
    expect(
      isToolCallBudgetExhausted({
        context: budgetContext({ limits, usage: { toolCalls: 4 } }),
        event: toolCallsReply(),
      }),
    ).toBe(true);
    expect(
      isToolCallBudgetExhausted({
        context: budgetContext({ limits, usage: { toolCalls: 9 } }),
        event: toolCallsReply(),
      }),
    ).toBe(true);
  });

  it('lets a final or unparseable reply through: only a request for more calls is refused', () => {
    const spent = budgetContext({ limits, usage: { toolCalls: 4 } });
    expect(isToolCallBudgetExhausted({ context: spent, event: finalReply() })).toBe(false);
    expect(isToolCallBudgetExhausted({ context: spent, event: unparseableReply('empty_reply') })).toBe(false);
  });

  it('lets a tool-calls reply with no runnable call through', () => {
    const spent = budgetContext({ limits, usage: { toolCalls: 4 } });
    expect(isToolCallBudgetExhausted({ context: spent, event: toolCallsReply({ calls: 0 }) })).toBe(false);
  });

  it('is false for events other than model.responded', () => {
    const spent = budgetContext({ limits, usage: { toolCalls: 4 } });
    expect(isToolCallBudgetExhausted({ context: spent, event: toolsCompleted() })).toBe(false);
  });
});
