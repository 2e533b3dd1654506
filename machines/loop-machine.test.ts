/**
 * The statechart as a pure function: hand-written outcome sequences through `initialTransition`
 * / `transition`, with `getPendingEffect` telling what the machine asks the driver for at each
 * rest point. No actor, no driver, no clock.
 */
import { describe, expect, it } from 'vitest';
import { initialTransition, transition } from 'xstate';
import { loopMachine, statusOf } from './loop-machine.js';
import { getPendingEffect, type LoopSnapshot, type PendingEffect } from './pending-effect.js';
import {
  STOP_REASONS,
  type CallUsage,
  type LoopEvent,
  type LoopLimits,
  type LoopOutput,
  type ModelDecision,
  type NoProgressThresholds,
  type StopReason,
  type TaskPlan,
  type ToolRoundSummary,
} from './types.js';

const LIMITS: LoopLimits = {
  maxSteps: 10,
  maxRetries: 2,
  deadlineMs: 60_000,
  maxInputTokens: 10_000,
  maxOutputTokens: 5_000,
  maxCostUsd: 1,
  maxParallelTools: 4,
  maxToolResultBytes: 1_024,
  maxArgumentRepairs: 1,
};

// High enough that only the signal under test fires.
const THRESHOLDS: NoProgressThresholds = {
  repeatedToolCall: 3,
  unchangedState: 3,
  sameEvaluatorReason: 2,
  duplicateObservation: 3,
  planStall: 50,
  sameParseError: 3,
};

interface Setup {
  limits?: Partial<LoopLimits>;
  noProgress?: Partial<NoProgressThresholds>;
  tasks?: TaskPlan[];
}

function create({ limits, noProgress, tasks }: Setup = {}): LoopSnapshot {
  const [snapshot] = initialTransition(loopMachine, {
    limits: { ...LIMITS, ...limits },
    noProgress: { ...THRESHOLDS, ...noProgress },
    tasks: tasks ?? [{ id: 'answer', onFailure: 'stop' }],
  });
  return snapshot;
}

function send(snapshot: LoopSnapshot, ...events: LoopEvent[]): LoopSnapshot {
  let current = snapshot;
  for (const event of events) [current] = transition(loopMachine, current, event);
  return current;
}

/** A run started at time 0 whose first request is estimated at `nextRequestTokens`. */
function start(setup: Setup = {}, nextRequestTokens = 100): LoopSnapshot {
  return send(create(setup), started(nextRequestTokens));
}

const effect = (snapshot: LoopSnapshot): PendingEffect => getPendingEffect(snapshot);

function outputOf(snapshot: LoopSnapshot): LoopOutput {
  const pending = getPendingEffect(snapshot);
  if (pending.kind !== 'done') throw new Error(`expected the run to be done, it waits for ${JSON.stringify(pending)}`);
  return pending.output;
}

function expectStop(snapshot: LoopSnapshot, reason: StopReason): LoopOutput {
  const output = outputOf(snapshot);
  expect(output.stopReason).toBe(reason);
  expect(output.status).toBe(statusOf(reason));
  return output;
}

const callModel = (feedback: Extract<PendingEffect, { kind: 'callModel' }>['feedback'] = null, taskIndex = 0): PendingEffect => ({
  kind: 'callModel',
  feedback,
  taskIndex,
});

// ---- outcome events ---------------------------------------------------------------------------

const DEFAULT_AT = 1_000;
const DEFAULT_USAGE: CallUsage = { inputTokens: 100, outputTokens: 10, costUsd: 0.001 };
let digestCounter = 0;

function started(nextRequestTokens = 100, at = 0): LoopEvent {
  return { type: 'run.started', at, nextRequestTokens };
}

interface ResponseOptions {
  at?: number;
  usage?: CallUsage;
  /** Defaults to a fresh digest, so the unchanged-state signal fires only when a test repeats one. */
  stateDigest?: string;
  nextRequestTokens?: number;
}

function responded(decision: ModelDecision, options: ResponseOptions = {}): LoopEvent {
  return {
    type: 'model.responded',
    at: options.at ?? DEFAULT_AT,
    usage: options.usage ?? DEFAULT_USAGE,
    decision,
    stateDigest: options.stateDigest ?? `digest-${++digestCounter}`,
    nextRequestTokens: options.nextRequestTokens ?? 200,
  };
}

const finalReply = (options?: ResponseOptions): LoopEvent => responded({ kind: 'final' }, options);
const unparseable = (parseError: string, options?: ResponseOptions): LoopEvent =>
  responded({ kind: 'unparseable', parseError }, options);

function toolCalls(
  decision: Partial<Omit<Extract<ModelDecision, { kind: 'tool_calls' }>, 'kind'>> = {},
  options?: ResponseOptions,
): LoopEvent {
  return responded(
    {
      kind: 'tool_calls',
      calls: 1,
      invalidCalls: 0,
      parseError: null,
      deniedCalls: 0,
      approvalCalls: 0,
      unavailableCalls: 0,
      maxRepeatCount: 1,
      ...decision,
    },
    options,
  );
}

function toolsDone(round: Partial<ToolRoundSummary> = {}, options: { at?: number; nextRequestTokens?: number } = {}): LoopEvent {
  return {
    type: 'tools.completed',
    at: options.at ?? DEFAULT_AT,
    nextRequestTokens: options.nextRequestTokens ?? 300,
    round: {
      calls: 1,
      failedCalls: 0,
      timedOutCalls: 0,
      unknownOutcomeCalls: 0,
      allObservationsSeen: false,
      requiredToolUnavailable: false,
      ...round,
    },
  };
}

function evaluated(passed: boolean, reason = '', options: { at?: number; usage?: CallUsage } = {}): LoopEvent {
  return {
    type: 'evaluation.completed',
    at: options.at ?? DEFAULT_AT,
    nextRequestTokens: 300,
    passed,
    reason,
    usage: options.usage ?? null,
  };
}
const passed = (options?: { at?: number; usage?: CallUsage }): LoopEvent => evaluated(true, '', options);
const rejected = (reason: string, options?: { at?: number; usage?: CallUsage }): LoopEvent => evaluated(false, reason, options);

function modelFailed(
  failure: 'transient' | 'fatal' = 'transient',
  options: { at?: number; retryDelayMs?: number; message?: string } = {},
): LoopEvent {
  return {
    type: 'model.failed',
    at: options.at ?? DEFAULT_AT,
    failure,
    message: options.message ?? (failure === 'fatal' ? '401 invalid api key' : '503 service unavailable'),
    retryDelayMs: options.retryDelayMs ?? 100,
  };
}

const backoffElapsed = (at = DEFAULT_AT + 100): LoopEvent => ({ type: 'backoff.elapsed', at });

// ---- tests ------------------------------------------------------------------------------------

describe('statusOf', () => {
  it('maps completed to succeeded, needs_human to needs_human, and every other reason to failed', () => {
    for (const reason of STOP_REASONS) {
      const expected = reason === 'completed' ? 'succeeded' : reason === 'needs_human' ? 'needs_human' : 'failed';
      expect(statusOf(reason)).toBe(expected);
    }
  });
});

describe('rest points', () => {
  it('waits for run.started, then asks for the first model call', () => {
    const ready = create();
    expect(effect(ready)).toEqual({ kind: 'start' });
    expect(effect(send(ready, started()))).toEqual(callModel());
  });

  it('asks to run tools after a tool-call decision and to call the model again after the round', () => {
    const acting = send(start(), toolCalls());
    expect(effect(acting)).toEqual({ kind: 'runTools', taskIndex: 0 });
    expect(effect(send(acting, toolsDone()))).toEqual(callModel());
  });

  it('asks to evaluate a final reply', () => {
    expect(effect(send(start(), finalReply()))).toEqual({ kind: 'evaluate', taskIndex: 0 });
  });
});

describe('completed', () => {
  it('stops with completed once the only task passes evaluation, with the usage of the run', () => {
    const done = send(start(), toolCalls({ calls: 2 }), toolsDone({ calls: 2 }), finalReply(), passed());
    expect(outputOf(done)).toEqual({
      stopReason: 'completed',
      status: 'succeeded',
      detail: '1 of 1 task(s) passed evaluation',
      steps: 2,
      usage: { inputTokens: 200, outputTokens: 20, costUsd: 0.002, modelCalls: 2, toolCalls: 2 },
      completedTasks: 1,
      failedTasks: 0,
    });
  });
});

describe('max_steps', () => {
  it('refuses the first model call when maxSteps is 0', () => {
    const output = expectStop(start({ limits: { maxSteps: 0 } }), 'max_steps');
    expect(output.usage.modelCalls).toBe(0);
  });

  it('stops at the last allowed step before running its tool calls', () => {
    const atLimit = send(start({ limits: { maxSteps: 2 } }), toolCalls(), toolsDone(), toolCalls());
    const output = expectStop(atLimit, 'max_steps');
    expect(output.steps).toBe(2);
    expect(output.usage.toolCalls).toBe(1);
    expect(output.detail).toContain('maxSteps (2)');
  });

  it('still evaluates a final reply made at the last allowed step', () => {
    const lastStep = send(start({ limits: { maxSteps: 1 } }), finalReply());
    expect(effect(lastStep)).toEqual({ kind: 'evaluate', taskIndex: 0 });
    expectStop(send(lastStep, passed()), 'completed');
  });

  it('stops at the gate when a reflection would need a step past the limit', () => {
    const oneStepLeft = send(start({ limits: { maxSteps: 2 } }), finalReply(), rejected('missing total'));
    expect(effect(oneStepLeft)).toEqual(callModel({ kind: 'reflection', reason: 'missing total' }));
    const output = expectStop(send(oneStepLeft, finalReply(), rejected('total is negative')), 'max_steps');
    expect(output.steps).toBe(2);
  });
});

describe('deadline_exceeded', () => {
  const setup: Setup = { limits: { deadlineMs: 5_000 } };

  it('accepts a model reply one millisecond before the deadline', () => {
    expect(effect(send(start(setup), finalReply({ at: 4_999 })))).toEqual({ kind: 'evaluate', taskIndex: 0 });
  });

  it('stops on a model reply that arrives exactly at the deadline, still counting its usage', () => {
    const output = expectStop(send(start(setup), finalReply({ at: 5_000 })), 'deadline_exceeded');
    expect(output.steps).toBe(1);
    expect(output.usage.modelCalls).toBe(1);
    expect(output.detail).toContain('5000 ms');
  });

  it('stops on a late tool round', () => {
    expectStop(send(start(setup), toolCalls({}, { at: 1_000 }), toolsDone({}, { at: 5_001 })), 'deadline_exceeded');
  });

  it('stops on a late failing evaluation instead of reflecting', () => {
    expectStop(send(start(setup), finalReply({ at: 1_000 }), rejected('missing total', { at: 6_000 })), 'deadline_exceeded');
  });

  it('accepts a late passing evaluation: the work is done', () => {
    expectStop(send(start(setup), finalReply({ at: 1_000 }), passed({ at: 6_000 })), 'completed');
  });

  it('stops on a late transport failure', () => {
    expectStop(send(start(setup), modelFailed('transient', { at: 5_000 })), 'deadline_exceeded');
  });

  it('stops at once when the backoff would wake exactly at the deadline, and sleeps when it wakes just before', () => {
    expectStop(send(start(setup), modelFailed('transient', { at: 4_000, retryDelayMs: 1_000 })), 'deadline_exceeded');
    expect(effect(send(start(setup), modelFailed('transient', { at: 4_000, retryDelayMs: 999 })))).toEqual({
      kind: 'sleep',
      until: 4_999,
    });
  });

  it('stops at the gate when a backoff elapses late, past the deadline, instead of calling the model', () => {
    const sleeping = send(start(setup), modelFailed('transient', { at: 4_000, retryDelayMs: 500 }));
    expect(effect(send(sleeping, backoffElapsed(4_999)))).toEqual(callModel({ kind: 'transport_retry' }));
    expectStop(send(sleeping, backoffElapsed(5_000)), 'deadline_exceeded');
  });

  it('stops on run.deadlineReached while a model call is in flight, without counting it', () => {
    const deciding = start(setup);
    const output = expectStop(send(deciding, { type: 'run.deadlineReached', at: 5_000 }), 'deadline_exceeded');
    expect(output.steps).toBe(0);
    expect(output.usage.modelCalls).toBe(0);
  });

  it('stops on run.deadlineReached while sleeping and while running tools', () => {
    const sleeping = send(start(setup), modelFailed());
    expect(effect(sleeping).kind).toBe('sleep');
    expectStop(send(sleeping, { type: 'run.deadlineReached', at: 5_000 }), 'deadline_exceeded');
    expectStop(send(start(setup), toolCalls(), { type: 'run.deadlineReached', at: 5_000 }), 'deadline_exceeded');
  });
});

describe('budget_exhausted', () => {
  describe('input tokens: the estimate refuses a call before it is made', () => {
    it('allows a first request estimated exactly at the limit', () => {
      expect(effect(start({}, 10_000))).toEqual(callModel());
    });

    it('never asks for the first model call when its estimate is over the limit', () => {
      const output = expectStop(start({}, 10_001), 'budget_exhausted');
      expect(output.usage.modelCalls).toBe(0);
      expect(output.detail).toContain('maxInputTokens (10000');
    });

    it('never asks for the next model call once a tool round made the next request too large', () => {
      // 100 input tokens used by the first call; 100 + 9,900 = 10,000 is allowed, 100 + 9,901 is not.
      const acting = send(start(), toolCalls());
      expect(effect(send(acting, toolsDone({}, { nextRequestTokens: 9_900 })))).toEqual(callModel());
      const refused = send(acting, toolsDone({}, { nextRequestTokens: 9_901 }));
      const output = expectStop(refused, 'budget_exhausted');
      expect(output.usage.modelCalls).toBe(1);
      expect(output.detail).toContain('~9901');
    });

    it('refuses a reflection whose request would be too large', () => {
      const evaluating = send(start(), finalReply());
      const refused = send(evaluating, { ...rejected('missing total'), nextRequestTokens: 9_901 } as LoopEvent);
      expectStop(refused, 'budget_exhausted');
    });
  });

  describe('output tokens', () => {
    const setup: Setup = { limits: { maxOutputTokens: 50 } };

    it('stops before running the tools of a reply that used up the output budget', () => {
      const output = expectStop(send(start(setup), toolCalls({}, { usage: { inputTokens: 100, outputTokens: 50, costUsd: 0 } })), 'budget_exhausted');
      expect(output.usage.toolCalls).toBe(0);
      expect(output.detail).toContain('maxOutputTokens (50)');
    });

    it('lets a reply one token under the limit go on to its tools', () => {
      const acting = send(start(setup), toolCalls({}, { usage: { inputTokens: 100, outputTokens: 49, costUsd: 0 } }));
      expect(effect(acting)).toEqual({ kind: 'runTools', taskIndex: 0 });
    });

    it('lets the final reply that crossed the limit stand, and refuses the next call', () => {
      const evaluating = send(start(setup), finalReply({ usage: { inputTokens: 100, outputTokens: 60, costUsd: 0 } }));
      expect(effect(evaluating)).toEqual({ kind: 'evaluate', taskIndex: 0 });
      expectStop(send(evaluating, passed()), 'completed');
      expectStop(send(evaluating, rejected('missing total')), 'budget_exhausted');
    });
  });

  describe('cost', () => {
    const setup: Setup = { limits: { maxCostUsd: 0.01 } };
    const halfBudget: CallUsage = { inputTokens: 10, outputTokens: 1, costUsd: 0.005 };

    it('stops when the cumulative cost reaches the limit exactly', () => {
      const secondCall = send(start(setup), toolCalls({}, { usage: halfBudget }), toolsDone());
      expect(effect(secondCall)).toEqual(callModel());
      const output = expectStop(send(secondCall, toolCalls({}, { usage: halfBudget })), 'budget_exhausted');
      expect(output.usage.costUsd).toBe(0.01);
      expect(output.usage.toolCalls).toBe(1);
      expect(output.detail).toContain('maxCostUsd');
    });

    it('counts an LLM judge towards the cost and the model calls', () => {
      const evaluating = send(start(setup), finalReply({ usage: halfBudget }));
      const output = expectStop(send(evaluating, rejected('off topic', { usage: halfBudget })), 'budget_exhausted');
      expect(output.usage.modelCalls).toBe(2);
      expect(output.usage.costUsd).toBe(0.01);
    });
  });
});

describe('no_progress: each signal nudges first, then stops', () => {
  it('repeated_tool_call: the call is not run, the model is nudged, and a further repeat stops the run', () => {
    const setup: Setup = { noProgress: { repeatedToolCall: 3 } };
    const twice = send(start(setup), toolCalls({ maxRepeatCount: 1 }), toolsDone(), toolCalls({ maxRepeatCount: 2 }), toolsDone());
    expect(effect(twice)).toEqual(callModel());
    const nudged = send(twice, toolCalls({ maxRepeatCount: 3 }));
    expect(effect(nudged)).toEqual(callModel({ kind: 'nudge', signal: 'repeated_tool_call' }));
    const output = expectStop(send(nudged, toolCalls({ maxRepeatCount: 4 })), 'no_progress');
    expect(output.detail).toBe('no progress after a nudge: repeated_tool_call');
    expect(output.usage.toolCalls).toBe(2);
  });

  it('repeated_tool_call: a model that changes course after the nudge goes on', () => {
    const nudged = send(start(), toolCalls({ maxRepeatCount: 3 }));
    expect(effect(send(nudged, toolCalls({ maxRepeatCount: 1 })))).toEqual({ kind: 'runTools', taskIndex: 0 });
  });

  it('unchanged_state: the same digest on three decisions in a row nudges, a fourth stops', () => {
    const same = { stateDigest: 'same' };
    const acting = send(start(), toolCalls({}, same), toolsDone(), toolCalls({}, same));
    // A streak of two (the first digest counts as one): no signal yet.
    expect(effect(acting)).toEqual({ kind: 'runTools', taskIndex: 0 });
    const nudged = send(acting, toolsDone(), toolCalls({}, same));
    expect(effect(nudged)).toEqual(callModel({ kind: 'nudge', signal: 'unchanged_state' }));
    const output = expectStop(send(nudged, toolCalls({}, same)), 'no_progress');
    expect(output.detail).toBe('no progress after a nudge: unchanged_state');
  });

  it('same_evaluator_reason: the same failure twice nudges (as a reflection), a third time stops', () => {
    const once = send(start(), finalReply(), rejected('missing total'));
    expect(effect(once)).toEqual(callModel({ kind: 'reflection', reason: 'missing total' }));
    const nudged = send(once, finalReply(), rejected('missing total'));
    expect(effect(nudged)).toEqual(callModel({ kind: 'nudge', signal: 'same_evaluator_reason' }));
    const output = expectStop(send(nudged, finalReply(), rejected('missing total')), 'no_progress');
    expect(output.detail).toBe('no progress after a nudge: same_evaluator_reason');
  });

  it('same_evaluator_reason: a different reason is a plain reflection', () => {
    const twice = send(start(), finalReply(), rejected('missing total'), finalReply(), rejected('total is negative'));
    expect(effect(twice)).toEqual(callModel({ kind: 'reflection', reason: 'total is negative' }));
  });

  it('duplicate_observation: three rounds of seen-before observations nudge, a fourth stops', () => {
    const seen = toolsDone({ allObservationsSeen: true });
    const twice = send(start(), toolCalls(), seen, toolCalls(), seen);
    expect(effect(twice)).toEqual(callModel());
    const nudged = send(twice, toolCalls(), seen);
    expect(effect(nudged)).toEqual(callModel({ kind: 'nudge', signal: 'duplicate_observation' }));
    const output = expectStop(send(nudged, toolCalls(), seen), 'no_progress');
    expect(output.detail).toBe('no progress after a nudge: duplicate_observation');
  });

  it('duplicate_observation: a round with something new resets the streak', () => {
    const seen = toolsDone({ allObservationsSeen: true });
    const fresh = toolsDone({ allObservationsSeen: false });
    const snapshot = send(start(), toolCalls(), seen, toolCalls(), seen, toolCalls(), fresh, toolCalls(), seen, toolCalls(), seen);
    expect(effect(snapshot)).toEqual(callModel());
  });

  it('plan_stall: a task that took planStall decisions is nudged at the gate, and stops after one more', () => {
    const setup: Setup = { noProgress: { planStall: 3 } };
    const twoSteps = send(start(setup), toolCalls(), toolsDone(), toolCalls(), toolsDone());
    expect(effect(twoSteps)).toEqual(callModel());
    const nudged = send(twoSteps, toolCalls(), toolsDone());
    expect(effect(nudged)).toEqual(callModel({ kind: 'nudge', signal: 'plan_stall' }));
    const output = expectStop(send(nudged, toolCalls(), toolsDone()), 'no_progress');
    expect(output.detail).toBe('no progress after a nudge: plan_stall');
    expect(output.steps).toBe(4);
  });

  it('same_parse_error: repairs twice, nudges on the third identical error, stops on the fourth', () => {
    const once = send(start(), unparseable('empty_reply'));
    expect(effect(once)).toEqual(callModel({ kind: 'parse_error', parseError: 'empty_reply' }));
    const twice = send(once, unparseable('empty_reply'));
    expect(effect(twice)).toEqual(callModel({ kind: 'parse_error', parseError: 'empty_reply' }));
    const nudged = send(twice, unparseable('empty_reply'));
    expect(effect(nudged)).toEqual(callModel({ kind: 'nudge', signal: 'same_parse_error' }));
    const output = expectStop(send(nudged, unparseable('empty_reply')), 'no_progress');
    expect(output.detail).toBe('no progress after a nudge: same_parse_error');
  });

  it('same_parse_error: alternating errors never build a streak', () => {
    const snapshot = send(start(), unparseable('empty_reply'), unparseable('bad_json'), unparseable('empty_reply'), unparseable('bad_json'));
    expect(effect(snapshot)).toEqual(callModel({ kind: 'parse_error', parseError: 'bad_json' }));
  });

  it('a second signal in the same step as the nudge does not stop the run before the model saw the nudge', () => {
    // The third decision both repeats a call and reaches planStall: one nudge, no stop.
    const setup: Setup = { noProgress: { planStall: 3, repeatedToolCall: 3 } };
    const nudged = send(
      start(setup),
      toolCalls({ maxRepeatCount: 1 }),
      toolsDone(),
      toolCalls({ maxRepeatCount: 2 }),
      toolsDone(),
      toolCalls({ maxRepeatCount: 3 }),
    );
    expect(effect(nudged)).toEqual(callModel({ kind: 'nudge', signal: 'repeated_tool_call' }));
    expect(nudged.context.progress.nudgedAtStep).toBe(3);
    // One nudge per task: once the model has answered it, the still-stalled plan stops the run.
    const answered = send(nudged, toolCalls({ maxRepeatCount: 1 }));
    expect(effect(answered)).toEqual({ kind: 'runTools', taskIndex: 0 });
    expectStop(send(answered, toolsDone()), 'no_progress');
  });

  it('after a nudge, a later transport retry does not count as the model reacting', () => {
    const nudged = send(start(), toolCalls({ maxRepeatCount: 3 }));
    const retried = send(nudged, modelFailed(), backoffElapsed());
    expect(effect(retried)).toEqual(callModel({ kind: 'transport_retry' }));
    expect(effect(send(retried, toolCalls({ maxRepeatCount: 1 })))).toEqual({ kind: 'runTools', taskIndex: 0 });
  });
});

describe('permission_denied', () => {
  it('stops without running any call of a reply with a denied call', () => {
    const output = expectStop(send(start(), toolCalls({ calls: 2, deniedCalls: 1 })), 'permission_denied');
    expect(output.usage.toolCalls).toBe(0);
    expect(output.detail).toContain('denied');
  });

  it('wins over a call needing approval in the same reply', () => {
    expectStop(send(start(), toolCalls({ calls: 2, deniedCalls: 1, approvalCalls: 1 })), 'permission_denied');
  });
});

describe('tool_unavailable', () => {
  it('stops on a call to a tool whose circuit is open', () => {
    const output = expectStop(send(start(), toolCalls({ unavailableCalls: 1 })), 'tool_unavailable');
    expect(output.usage.toolCalls).toBe(0);
  });

  it('stops after a round in which a tool the task requires became unavailable', () => {
    const output = expectStop(send(start(), toolCalls({ calls: 2 }), toolsDone({ calls: 2, failedCalls: 1, requiredToolUnavailable: true })), 'tool_unavailable');
    expect(output.usage.toolCalls).toBe(2);
  });

  it('goes on after a round with failed calls when no required tool is lost', () => {
    expect(effect(send(start(), toolCalls(), toolsDone({ failedCalls: 1 })))).toEqual(callModel());
  });
});

describe('cancelled', () => {
  const cancel = (message: string): LoopEvent => ({ type: 'run.cancelRequested', at: 2_000, message });

  it('stops with cancelled (status failed) while a model call is in flight, with the message', () => {
    const output = expectStop(send(start(), cancel('user pressed stop')), 'cancelled');
    expect(output.status).toBe('failed');
    expect(output.detail).toBe('cancelled: user pressed stop');
  });

  it('stops from every rest point: before start, acting, evaluating, sleeping', () => {
    expectStop(send(create(), cancel('x')), 'cancelled');
    expectStop(send(start(), toolCalls(), cancel('x')), 'cancelled');
    expectStop(send(start(), finalReply(), cancel('x')), 'cancelled');
    expectStop(send(start(), modelFailed(), cancel('x')), 'cancelled');
  });
});

describe('needs_human', () => {
  it('stops before running a reply with a call that needs approval', () => {
    const output = expectStop(send(start(), toolCalls({ calls: 2, approvalCalls: 1 })), 'needs_human');
    expect(output.status).toBe('needs_human');
    expect(output.usage.toolCalls).toBe(0);
    expect(output.detail).toContain('approval');
  });

  it('stops after a round with a side effect whose outcome cannot be known', () => {
    const output = expectStop(send(start(), toolCalls(), toolsDone({ timedOutCalls: 1, unknownOutcomeCalls: 1 })), 'needs_human');
    expect(output.detail).toContain('outcome cannot be known');
  });

  it('goes on after a timed-out call whose outcome is known', () => {
    expect(effect(send(start(), toolCalls(), toolsDone({ timedOutCalls: 1, failedCalls: 1 })))).toEqual(callModel());
  });
});

describe('retries_exhausted', () => {
  it('transport: backs off until retryAt, retries maxRetries times, then fails the task', () => {
    const first = send(start(), modelFailed('transient', { at: 1_000, retryDelayMs: 250 }));
    expect(effect(first)).toEqual({ kind: 'sleep', until: 1_250 });
    const retry1 = send(first, backoffElapsed(1_250));
    expect(effect(retry1)).toEqual(callModel({ kind: 'transport_retry' }));
    const second = send(retry1, modelFailed('transient', { at: 1_300, retryDelayMs: 500 }));
    expect(effect(second)).toEqual({ kind: 'sleep', until: 1_800 });
    const retry2 = send(second, backoffElapsed(1_800));
    const output = expectStop(send(retry2, modelFailed('transient', { message: '429 rate limited' })), 'retries_exhausted');
    expect(output.usage.modelCalls).toBe(3);
    expect(output.steps).toBe(0);
    expect(output.detail).toBe('task answer: model call failed after 2 transport retries: 429 rate limited');
  });

  it('reflection: reflects maxRetries times on a failing evaluation, then fails the task', () => {
    const twice = send(start(), finalReply(), rejected('reason 1'), finalReply(), rejected('reason 2'));
    expect(effect(twice)).toEqual(callModel({ kind: 'reflection', reason: 'reason 2' }));
    const output = expectStop(send(twice, finalReply(), rejected('reason 3')), 'retries_exhausted');
    expect(output.usage.modelCalls).toBe(3);
    expect(output.detail).toBe('task answer: evaluation still failing after 2 reflection retries: reason 3');
  });

  it('reflection: a repeated reason that cannot reflect any more fails the task rather than nudging', () => {
    const output = expectStop(
      send(start({ limits: { maxRetries: 1 } }), finalReply(), rejected('missing total'), finalReply(), rejected('missing total')),
      'retries_exhausted',
    );
    expect(output.steps).toBe(2);
  });

  it('argument repair: one repair is allowed, a second invalid reply in a row fails the task', () => {
    const repairing = send(start(), toolCalls({ invalidCalls: 1, parseError: 'schema:order_id' }));
    expect(effect(repairing)).toEqual(callModel({ kind: 'argument_repair' }));
    const output = expectStop(send(repairing, toolCalls({ invalidCalls: 1, parseError: 'schema:limit' })), 'retries_exhausted');
    expect(output.usage.toolCalls).toBe(0);
    expect(output.detail).toBe('task answer: tool arguments still invalid after 1 repair(s)');
  });

  it('argument repair: a valid decision in between gives the model its repair back', () => {
    const snapshot = send(
      start(),
      toolCalls({ invalidCalls: 1, parseError: 'schema:order_id' }),
      toolCalls(),
      toolsDone(),
      toolCalls({ invalidCalls: 1, parseError: 'schema:limit' }),
    );
    expect(effect(snapshot)).toEqual(callModel({ kind: 'argument_repair' }));
  });
});

describe('fatal_error', () => {
  it('stops on a fatal model failure without backing off', () => {
    const output = expectStop(send(start(), modelFailed('fatal', { message: '401 invalid api key' })), 'fatal_error');
    expect(output.detail).toBe('model call failed: 401 invalid api key');
    expect(output.usage.modelCalls).toBe(1);
  });

  it('is fatal even with every transport retry left', () => {
    const afterOneRetry = send(start(), modelFailed(), backoffElapsed());
    expectStop(send(afterOneRetry, modelFailed('fatal')), 'fatal_error');
  });
});

describe('retry layers keep separate counters', () => {
  it('two transport retries, then two reflection retries in the same task, are all allowed with maxRetries 2', () => {
    const afterTransport = send(start(), modelFailed(), backoffElapsed(), modelFailed(), backoffElapsed());
    expect(afterTransport.context.task.transportRetries).toBe(2);
    const firstReflection = send(afterTransport, finalReply(), rejected('reason 1'));
    expect(effect(firstReflection)).toEqual(callModel({ kind: 'reflection', reason: 'reason 1' }));
    const secondReflection = send(firstReflection, finalReply(), rejected('reason 2'));
    expect(effect(secondReflection)).toEqual(callModel({ kind: 'reflection', reason: 'reason 2' }));
    const output = expectStop(send(secondReflection, finalReply(), passed()), 'completed');
    expect(output.usage.modelCalls).toBe(5);
  });

  it('model calls of a task are bounded additively: 2 transport failures + 1 + 2 reflections, never multiplied', () => {
    const output = expectStop(
      send(
        start(),
        modelFailed(),
        backoffElapsed(),
        modelFailed(),
        backoffElapsed(),
        finalReply(),
        rejected('reason 1'),
        finalReply(),
        rejected('reason 2'),
        finalReply(),
        rejected('reason 3'),
      ),
      'retries_exhausted',
    );
    expect(output.usage.modelCalls).toBe(5);
  });

  it('a reflection does not give the transport layer its retries back', () => {
    const reflecting = send(start(), modelFailed(), backoffElapsed(), modelFailed(), backoffElapsed(), finalReply(), rejected('reason 1'));
    const output = expectStop(send(reflecting, modelFailed()), 'retries_exhausted');
    expect(output.detail).toContain('after 2 transport retries');
    expect(output.usage.modelCalls).toBe(4);
  });

  it('an argument repair is allowed after transport and reflection retries are used up', () => {
    const used = send(
      start(),
      modelFailed(),
      backoffElapsed(),
      modelFailed(),
      backoffElapsed(),
      finalReply(),
      rejected('reason 1'),
      finalReply(),
      rejected('reason 2'),
    );
    expect(effect(send(used, toolCalls({ invalidCalls: 1, parseError: 'schema:order_id' })))).toEqual(
      callModel({ kind: 'argument_repair' }),
    );
  });
});

describe('multi-task workflows', () => {
  const threeTasks: TaskPlan[] = [
    { id: 'classify', onFailure: 'stop' },
    { id: 'draft', onFailure: 'stop' },
    { id: 'format', onFailure: 'stop' },
  ];

  it('runs three tasks in order and completes', () => {
    const afterFirst = send(start({ tasks: threeTasks }), finalReply(), passed());
    expect(effect(afterFirst)).toEqual(callModel(null, 1));
    const afterSecond = send(afterFirst, toolCalls(), toolsDone(), finalReply(), passed());
    expect(effect(afterSecond)).toEqual(callModel(null, 2));
    const output = expectStop(send(afterSecond, finalReply(), passed()), 'completed');
    expect(output).toMatchObject({ steps: 4, completedTasks: 3, failedTasks: 0, detail: '3 of 3 task(s) passed evaluation' });
  });

  it('gives every task its own retry counters and its own nudge', () => {
    const firstUsedUp = send(
      start({ tasks: threeTasks }),
      modelFailed(),
      backoffElapsed(),
      modelFailed(),
      backoffElapsed(),
      toolCalls({ maxRepeatCount: 3 }),
      finalReply(),
      passed(),
    );
    expect(firstUsedUp.context.taskIndex).toBe(1);
    const secondRetries = send(firstUsedUp, modelFailed(), backoffElapsed(), modelFailed());
    expect(effect(secondRetries).kind).toBe('sleep');
    // The second task's first repeat is nudged, not stopped, although the first task was nudged earlier.
    const nudgedAgain = send(secondRetries, backoffElapsed(), toolCalls({ maxRepeatCount: 3 }));
    expect(effect(nudgedAgain)).toEqual(callModel({ kind: 'nudge', signal: 'repeated_tool_call' }, 1));
  });

  it('a task with onFailure continue that fails is skipped, and the run completes with the next one', () => {
    const tasks: TaskPlan[] = [
      { id: 'classify', onFailure: 'continue' },
      { id: 'draft', onFailure: 'stop' },
    ];
    const skipped = send(start({ tasks, limits: { maxRetries: 1 } }), finalReply(), rejected('reason 1'), finalReply(), rejected('reason 2'));
    expect(effect(skipped)).toEqual(callModel(null, 1));
    expect(skipped.context.failure).toEqual({
      reason: 'retries_exhausted',
      detail: 'task classify: evaluation still failing after 1 reflection retries: reason 2',
    });
    const output = expectStop(send(skipped, finalReply(), passed()), 'completed');
    expect(output).toMatchObject({
      status: 'succeeded',
      completedTasks: 1,
      failedTasks: 1,
      detail: '1 of 2 task(s) passed evaluation',
    });
  });

  it('a fatal model error stops the run even when the task says onFailure: continue', () => {
    const tasks: TaskPlan[] = [
      { id: 'classify', onFailure: 'continue' },
      { id: 'draft', onFailure: 'stop' },
    ];
    const output = expectStop(send(start({ tasks }), modelFailed('fatal')), 'fatal_error');
    expect(output.completedTasks).toBe(0);
  });

  it('a task that fails for good under onFailure: continue is counted and skipped', () => {
    const tasks: TaskPlan[] = [
      { id: 'classify', onFailure: 'continue' },
      { id: 'draft', onFailure: 'stop' },
    ];
    const skipped = send(start({ tasks }), toolCalls({ invalidCalls: 1, parseError: 'e1' }), toolCalls({ invalidCalls: 1, parseError: 'e2' }));
    expect(effect(skipped)).toEqual(callModel(null, 1));
    expect(skipped.context.failedTasks).toBe(1);
  });

  it('a task with onFailure stop that fails stops the run with its cause, and later tasks never run', () => {
    const tasks: TaskPlan[] = [
      { id: 'classify', onFailure: 'stop' },
      { id: 'draft', onFailure: 'continue' },
    ];
    const output = expectStop(
      send(start({ tasks }), toolCalls({ invalidCalls: 1, parseError: 'e1' }), toolCalls({ invalidCalls: 1, parseError: 'e2' })),
      'retries_exhausted',
    );
    expect(output.detail).toBe('task classify: tool arguments still invalid after 1 repair(s)');
    expect(output.completedTasks).toBe(0);
    expect(output.usage.modelCalls).toBe(2);
  });

  it('a failing last task stops the run even under onFailure continue: there is nothing to continue with', () => {
    const tasks: TaskPlan[] = [
      { id: 'classify', onFailure: 'stop' },
      { id: 'draft', onFailure: 'continue' },
    ];
    const output = expectStop(send(start({ tasks }), finalReply(), passed(), modelFailed('fatal', { message: 'boom' })), 'fatal_error');
    expect(output.detail).toBe('model call failed: boom');
    expect(output.completedTasks).toBe(1);
  });

  it('a task that passes after the deadline completes, and the next task is refused at the gate', () => {
    const output = expectStop(
      send(start({ tasks: threeTasks, limits: { deadlineMs: 5_000 } }), finalReply({ at: 4_000 }), passed({ at: 5_000 })),
      'deadline_exceeded',
    );
    expect(output.completedTasks).toBe(1);
  });
});

describe('events irrelevant in a state are ignored', () => {
  const cases: [string, () => LoopSnapshot, LoopEvent][] = [
    ['tools.completed while deciding', () => start(), toolsDone()],
    ['evaluation.completed while deciding', () => start(), passed()],
    ['backoff.elapsed while deciding', () => start(), backoffElapsed()],
    ['run.started while deciding', () => start(), started(9_999, 500)],
    ['model.responded while acting', () => send(start(), toolCalls()), finalReply()],
    ['evaluation.completed while acting', () => send(start(), toolCalls()), passed()],
    ['model.failed while evaluating', () => send(start(), finalReply()), modelFailed('fatal')],
    ['tools.completed while evaluating', () => send(start(), finalReply()), toolsDone()],
    ['model.responded while sleeping', () => send(start(), modelFailed()), finalReply()],
    ['model.responded before the run started', () => create(), finalReply()],
  ];

  it.each(cases)('%s', (_name, at, event) => {
    const before = at();
    const after = send(before, event);
    expect(after.value).toEqual(before.value);
    expect(after.context).toEqual(before.context);
    expect(effect(after)).toEqual(effect(before));
  });

  it('outcome events after the run stopped change nothing', () => {
    const done = send(start(), finalReply(), passed());
    const output = outputOf(done);
    const after = send(done, finalReply(), toolsDone(), modelFailed('fatal'));
    expect(after.status).toBe('done');
    expect(outputOf(after)).toEqual(output);
  });
});

describe('driver-reported interruptions', () => {
  it('tool.withheld before a model call stops with tool_unavailable, naming the tool', () => {
    const output = expectStop(send(start(), { type: 'tool.withheld', at: DEFAULT_AT, tool: 'search' }), 'tool_unavailable');
    expect(output.detail).toBe('the task requires tool "search", which is unavailable (circuit breaker open)');
    expect(output.steps).toBe(0);
  });

  it('tool.withheld is ignored outside deciding (the tools are already running)', () => {
    const acting = send(start(), toolCalls({}));
    expect(send(acting, { type: 'tool.withheld', at: DEFAULT_AT, tool: 'search' }).value).toEqual(acting.value);
  });

  it('run.faulted stops with fatal_error from READY, RUNNING and RETRY', () => {
    const fault = (at: number): LoopEvent => ({ type: 'run.faulted', at, message: 'TypeError: policy hook threw' });
    expect(expectStop(send(create(), fault(0)), 'fatal_error').detail).toBe('run faulted: TypeError: policy hook threw');
    expectStop(send(start(), fault(DEFAULT_AT)), 'fatal_error');
    const backingOff = send(start(), modelFailed('transient'));
    expect(effect(backingOff).kind).toBe('sleep');
    expectStop(send(backingOff, fault(DEFAULT_AT)), 'fatal_error');
  });

  it('a finished run is never rewritten by a late cancel, deadline or fault', () => {
    const done = send(start(), finalReply(), passed());
    const before = expectStop(done, 'completed');
    for (const late of [
      { type: 'run.cancelRequested', at: DEFAULT_AT, message: 'late' },
      { type: 'run.deadlineReached', at: DEFAULT_AT },
      { type: 'run.faulted', at: DEFAULT_AT, message: 'late' },
    ] satisfies LoopEvent[]) {
      expect(outputOf(send(done, late))).toEqual(before);
    }
  });
});
