/**
 * The bounded agent loop as an XState v5 statechart.
 *
 * The machine never invokes I/O and has no `after` delays: each state names the effect it
 * wants (see `pending-effect.ts`) and the driver answers with an outcome event. Every cycle
 * passes the budget guards before the next model call: at `RUNNING.gate`, or, on the common path of
 * a tool round, in the round's own transition back to `deciding` (outcome events route straight to
 * their next resting state; eventless states remain for the decisions that need their own state).
 * No-progress signals are checked where their facts arrive: parse errors and an unchanged state
 * on a decision, repeated (call, result) triples after a tool round, a repeated rejection after an
 * evaluation, a stalled plan at the gate.
 */
import { and, assign, setup } from 'xstate';
import * as actions from '../actions/index.js';
import { guards as plainGuards } from '../guards/index.js';
import { RECORDED, readingRecorded, recordedUpdate, type RecordedParams } from './recorded-context.js';
import type { LoopContext, LoopEvent, LoopInput, MachineOutput, NoProgressSignal, StopReason } from './types.js';

const stop = (reason: StopReason) => ({ type: 'stopRun', params: { reason } }) as const;
const stopStalled = (signal: NoProgressSignal) =>
  ({ type: 'stopRun', params: { reason: 'no_progress', signal } }) as const;
const fail = (reason: StopReason) => ({ type: 'failTask', params: { reason } }) as const;

type GuardName = keyof typeof plainGuards;

/** Every named guard, able to read the context an outcome event's own transition leaves (params `RECORDED`). */
const guards = Object.fromEntries(
  Object.entries(plainGuards).map(([name, guard]) => [name, readingRecorded(guard)]),
) as Record<GuardName, (args: { context: LoopContext; event: LoopEvent }, params: RecordedParams) => boolean>;

/** The named guard, asked about the context as the event's transition records it. */
const recorded = <Name extends GuardName>(name: Name) => ({ type: name, params: RECORDED }) as const;

const TERMINATED = '#loop.TERMINATED';
const FAILED = '#loop.FAILED';
const GATE = '#loop.RUNNING.gate';

/**
 * Cancel, deadline and fault reach every state that can rest (READY, RUNNING, RETRY), but not
 * TERMINATED: a finished run is never rewritten, even through the pure `transition()`.
 */
const interruptions = {
  'run.cancelRequested': { target: TERMINATED, actions: ['recordInterruption', stop('cancelled')] },
  'run.deadlineReached': { target: TERMINATED, actions: ['recordInterruption', stop('deadline_exceeded')] },
  'run.faulted': { target: TERMINATED, actions: ['recordInterruption', stop('fatal_error')] },
} as const;

/** Shared first candidate of every outcome routing: a late outcome past the deadline stops the run. */
const deadlineStop = { guard: 'isDeadlineExceeded', target: TERMINATED, actions: stop('deadline_exceeded') } as const;

export function statusOf(reason: StopReason): MachineOutput['status'] {
  if (reason === 'completed') return 'succeeded';
  if (reason === 'needs_human') return 'needs_human';
  return 'failed';
}

/**
 * The loop statechart itself, for inspection, visualisation and model-based testing.
 * @example
 * const [snapshot] = initialTransition(loopMachine, { limits: DEFAULT_LIMITS, noProgress: DEFAULT_NO_PROGRESS, tasks: [{ id: 'main', onFailure: 'stop' }] });
 */
export const loopMachine = setup({
  types: {
    context: {} as LoopContext,
    events: {} as LoopEvent,
    input: {} as LoopInput,
    output: {} as MachineOutput,
  },
  guards,
  actions: {
    startRun: assign(actions.startRun),
    // The update its guards already computed (see recorded-context.ts).
    recordModelResponse: assign(({ context, event }) => recordedUpdate(context, event, actions.recordModelResponse)),
    recordModelFailure: assign(actions.recordModelFailure),
    recordToolRound: assign(({ context, event }) => recordedUpdate(context, event, actions.recordToolRound)),
    recordEvaluation: assign(actions.recordEvaluation),
    recordBackoffElapsed: assign(actions.recordBackoffElapsed),
    recordInterruption: assign(actions.recordInterruption),
    scheduleBackoff: assign(actions.scheduleBackoff),
    requestArgumentRepair: assign(actions.requestArgumentRepair),
    requestParseRepair: assign(actions.requestParseRepair),
    requestReflection: assign(actions.requestReflection),
    nudge: assign(actions.nudge),
    nudgeOnDecision: assign(actions.nudgeOnDecision),
    nudgeOnRound: assign(actions.nudgeOnRound),
    stopRun: assign(actions.stopRun),
    failTask: assign(actions.failTask),
    stopWithTaskFailure: assign(actions.stopWithTaskFailure),
    completeTask: assign(actions.completeTask),
    skipFailedTask: assign(actions.skipFailedTask),
  },
}).createMachine({
  id: 'loop',
  context: actions.createInitialContext,
  initial: 'READY',
  states: {
    READY: {
      // First entry waits for the driver to start the run; later entries queue the next task.
      always: { guard: 'hasRunStarted', target: 'RUNNING' },
      on: { 'run.started': { target: 'RUNNING', actions: 'startRun' }, ...interruptions },
    },
    RUNNING: {
      on: interruptions,
      initial: 'gate',
      states: {
        gate: {
          always: [
            deadlineStop,
            { guard: 'isStepLimitReached', target: TERMINATED, actions: stop('max_steps') },
            { guard: 'isSpendBudgetExhausted', target: TERMINATED, actions: stop('budget_exhausted') },
            // A per-task bound is the task's budget: the task fails and its onFailure decides the run.
            { guard: 'isTaskStepLimitReached', target: FAILED, actions: fail('max_steps') },
            // No plan-stall check here: every way into the gate carries feedback for the next request (a
            // stalled plan waits for it), or starts a task with no plan yet; a tool round checks the plan.
            { target: 'deciding' },
          ],
        },
        // Never entered with a nudge of this step pending: the plan waits while any feedback is (see isPlanStalled).
        gateStalled: {
          always: [
            { guard: 'wasNudgedEarlier', target: TERMINATED, actions: stopStalled('plan_stall') },
            { target: 'deciding', actions: { type: 'nudge', params: { signal: 'plan_stall' } } },
          ],
        },
        deciding: {
          on: {
            // Routed straight to the next resting state: each guard reads the context with the reply recorded.
            'model.responded': [
              {
                guard: recorded('isDeadlineExceeded'),
                target: TERMINATED,
                actions: ['recordModelResponse', stop('deadline_exceeded')],
              },
              { guard: 'isFinalReply', target: 'evaluating', actions: 'recordModelResponse' },
              {
                guard: 'hasDeniedToolCall',
                target: TERMINATED,
                actions: ['recordModelResponse', stop('permission_denied')],
              },
              {
                guard: 'hasToolCallNeedingApproval',
                target: TERMINATED,
                actions: ['recordModelResponse', stop('needs_human')],
              },
              {
                guard: 'hasUnavailableToolCall',
                target: TERMINATED,
                actions: ['recordModelResponse', stop('tool_unavailable')],
              },
              // Tool results nobody can read are not worth their side effects: stop before acting.
              {
                guard: recorded('isStepLimitReached'),
                target: TERMINATED,
                actions: ['recordModelResponse', stop('max_steps')],
              },
              {
                guard: recorded('isSpendBudgetExhausted'),
                target: TERMINATED,
                actions: ['recordModelResponse', stop('budget_exhausted')],
              },
              {
                guard: recorded('isToolCallBudgetExhausted'),
                target: TERMINATED,
                actions: ['recordModelResponse', stop('budget_exhausted')],
              },
              {
                guard: recorded('isTaskStepLimitReached'),
                target: FAILED,
                actions: ['recordModelResponse', fail('max_steps')],
              },
              // Invalid arguments are the repair layer's first: a repeated mistake is no progress only while repairs remain.
              { guard: 'hasInvalidToolCall', target: 'repairingArguments', actions: 'recordModelResponse' },
              { guard: recorded('hasDecisionSignal'), target: 'decisionSignalled', actions: 'recordModelResponse' },
              { guard: 'isUnparseableReply', target: GATE, actions: ['recordModelResponse', 'requestParseRepair'] },
              { target: 'acting', actions: 'recordModelResponse' },
            ],
            'model.failed': { target: 'routingFailure', actions: 'recordModelFailure' },
            'tool.withheld': { target: TERMINATED, actions: ['recordInterruption', stop('tool_unavailable')] },
          },
        },
        // Streaks are read after the step was counted, so a nudge recorded here is always from an earlier step.
        decisionSignalled: {
          always: [
            { guard: 'wasNudgedEarlier', target: TERMINATED, actions: stop('no_progress') },
            { target: GATE, actions: 'nudgeOnDecision' },
          ],
        },
        repairingArguments: {
          always: [
            { guard: and(['canRepairArguments', 'hasDecisionSignal']), target: 'decisionSignalled' },
            { guard: 'canRepairArguments', target: GATE, actions: 'requestArgumentRepair' },
            { target: FAILED, actions: fail('retries_exhausted') },
          ],
        },
        routingFailure: {
          always: [
            deadlineStop,
            // A fatal error is the run's, not the task's: no onFailure policy can continue past it.
            { guard: 'isFatalModelFailure', target: TERMINATED, actions: stop('fatal_error') },
            { guard: 'canRetryTransport', target: 'backoffChecked' },
            { target: FAILED, actions: fail('retries_exhausted') },
          ],
        },
        backoffChecked: {
          always: [
            { guard: 'isRetryPastDeadline', target: TERMINATED, actions: stop('deadline_exceeded') },
            { target: '#loop.RETRY.backingOff', actions: 'scheduleBackoff' },
          ],
        },
        acting: {
          on: {
            // Routed straight back to deciding on the common path: the round's checks, then the gate's.
            'tools.completed': [
              {
                guard: recorded('isDeadlineExceeded'),
                target: TERMINATED,
                actions: ['recordToolRound', stop('deadline_exceeded')],
              },
              { guard: 'hasUnknownToolOutcome', target: TERMINATED, actions: ['recordToolRound', stop('needs_human')] },
              {
                guard: 'isRequiredToolUnavailable',
                target: TERMINATED,
                actions: ['recordToolRound', stop('tool_unavailable')],
              },
              { guard: recorded('hasRoundSignal'), target: 'roundSignalled', actions: 'recordToolRound' },
              // What the gate checks before the next model call, so the round does not hop through it. (The step
              // bounds cannot be reached here: a decision at a bound stops before its tools run.)
              {
                guard: recorded('isSpendBudgetExhausted'),
                target: TERMINATED,
                actions: ['recordToolRound', stop('budget_exhausted')],
              },
              { guard: recorded('isPlanStalled'), target: 'gateStalled', actions: 'recordToolRound' },
              { target: 'deciding', actions: 'recordToolRound' },
            ],
          },
        },
        // The repeated calls ran (a changed result would have been progress); the nudge goes with their results.
        roundSignalled: {
          always: [
            { guard: 'wasNudgedEarlier', target: TERMINATED, actions: stop('no_progress') },
            { target: 'gate', actions: 'nudgeOnRound' },
          ],
        },
        evaluating: {
          on: { 'evaluation.completed': { target: 'routingEvaluation', actions: 'recordEvaluation' } },
        },
        routingEvaluation: {
          always: [
            { guard: 'isEvaluationPassed', target: '#loop.SUCCESS' },
            // Waiting for a person spends nothing: the stop is persisted and a resume replaces this verdict with theirs.
            { guard: 'isReviewRequested', target: TERMINATED, actions: stop('needs_human') },
            deadlineStop,
            // No retry can be paid for: the budget, not the retry count, is why the run stops.
            { guard: 'isSpendBudgetExhausted', target: TERMINATED, actions: stop('budget_exhausted') },
            // The reason was fed back and the same output came back: the reflection was the nudge.
            { guard: 'isSameEvaluatorReasonSignal', target: TERMINATED, actions: stopStalled('same_evaluator_reason') },
            { guard: 'canReflect', target: '#loop.RETRY.reflecting', actions: 'requestReflection' },
            { target: FAILED, actions: fail('retries_exhausted') },
          ],
        },
      },
    },
    RETRY: {
      on: interruptions,
      // Entered only through its sub-states; `backingOff` is the nominal initial.
      initial: 'backingOff',
      states: {
        backingOff: {
          on: { 'backoff.elapsed': { target: GATE, actions: 'recordBackoffElapsed' } },
        },
        // Reflection needs no wait: the evaluator's reason is the new information.
        reflecting: { always: { target: GATE } },
      },
    },
    SUCCESS: {
      entry: 'completeTask',
      always: [
        { guard: 'hasQueuedTask', target: 'READY' },
        { target: 'TERMINATED', actions: stop('completed') },
      ],
    },
    FAILED: {
      always: [
        { guard: 'canContinueAfterTaskFailure', target: 'READY', actions: 'skipFailedTask' },
        { target: 'TERMINATED', actions: 'stopWithTaskFailure' },
      ],
    },
    TERMINATED: { type: 'final' },
  },
  output: ({ context }) => {
    const stopRecord = context.stop ?? { reason: 'fatal_error' as const, detail: 'terminated without a stop record' };
    return {
      stopReason: stopRecord.reason,
      status: statusOf(stopRecord.reason),
      detail: stopRecord.detail,
      steps: context.steps,
      usage: context.usage,
      completedTasks: context.completedTasks,
      failedTasks: context.failedTasks,
    };
  },
});

export type LoopMachine = typeof loopMachine;
