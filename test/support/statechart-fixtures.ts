/**
 * Shared fixtures of the statechart unit tests in guards/, actions/ and machines/: one loop input,
 * contexts built from it, outcome-event builders, and helpers that drive the machine as a pure
 * function. Deterministic: fixed times, and state digests from a counter. Kept under test/ so the
 * build (which compiles machines/, guards/ and actions/) never ships it.
 */
import { expect } from 'vitest';
import { initialTransition, transition } from 'xstate';
import { createInitialContext } from '../../actions/initial-context.js';
import type { ReducerArgs } from '../../actions/record.js';
import { loopMachine, statusOf } from '../../machines/loop-machine.js';
import { getPendingEffect, type LoopSnapshot, type PendingEffect } from '../../machines/pending-effect.js';
import type {
  CallUsage,
  Feedback,
  LoopContext,
  LoopEvent,
  LoopInput,
  LoopLimits,
  MachineOutput,
  ModelDecision,
  ModelFailureKind,
  NoProgressThresholds,
  ProgressState,
  RunStatus,
  StopReason,
  TaskCounters,
  TaskPlan,
  ToolRoundSummary,
  TransportCounters,
  Usage,
} from '../../machines/types.js';

// ---- loop input and context -------------------------------------------------------------------

/** Limits of the unit tests: roomy, with token budgets small enough for a test to reach. */
export const TEST_LIMITS: Readonly<LoopLimits> = Object.freeze({
  maxSteps: 10,
  maxRetries: 2,
  maxTransportAttempts: 3,
  maxTransportRetries: Infinity,
  deadlineMs: 60_000,
  maxInputTokens: 10_000,
  maxOutputTokens: 5_000,
  maxCostUsd: 1,
  maxParallelTools: 4,
  maxToolResultBytes: 1_024,
  maxArgumentRepairs: 1,
  maxStepsPerTask: 10,
  modelCallTimeoutMs: 30_000,
  evaluatorTimeoutMs: 30_000,
  maxToolCalls: 100,
  maxToolCallsPerReply: 10,
});

/** No-progress thresholds of the unit tests; planStall is high enough that only the signal under test fires. */
export const TEST_NO_PROGRESS: Readonly<NoProgressThresholds> = Object.freeze({
  repeatedToolCall: 3,
  unchangedState: 3,
  sameEvaluatorReason: 2,
  duplicateObservation: 3,
  planStall: 50,
  sameParseError: 3,
});

/** The default plan: one task, `answer`, that stops the run when it fails. */
export const SINGLE_TASK: readonly TaskPlan[] = Object.freeze([{ id: 'answer', onFailure: 'stop' }]);

export interface LoopInputOverrides {
  limits?: Partial<LoopLimits>;
  noProgress?: Partial<NoProgressThresholds>;
  tasks?: readonly TaskPlan[];
}

/** The test loop input, with any limit or threshold, or the task list, replaced. */
export function loopInput({ limits, noProgress, tasks }: LoopInputOverrides = {}): LoopInput {
  return {
    limits: { ...TEST_LIMITS, ...limits },
    noProgress: { ...TEST_NO_PROGRESS, ...noProgress },
    tasks: tasks ?? SINGLE_TASK,
  };
}

export interface ContextOverrides extends Partial<
  Omit<LoopContext, 'limits' | 'noProgress' | 'usage' | 'task' | 'transport' | 'progress'>
> {
  limits?: Partial<LoopLimits>;
  noProgress?: Partial<NoProgressThresholds>;
  usage?: Partial<Usage>;
  task?: Partial<TaskCounters>;
  transport?: Partial<TransportCounters>;
  progress?: Partial<ProgressState>;
}

/** A context fresh from `createInitialContext` (the run not started), with any field or nested field replaced. */
export function contextWith({
  limits,
  noProgress,
  usage,
  task,
  transport,
  progress,
  ...rest
}: ContextOverrides = {}): LoopContext {
  const base = createInitialContext({ input: loopInput({ limits, noProgress, tasks: rest.tasks }) });
  return {
    ...base,
    ...rest,
    usage: { ...base.usage, ...usage },
    task: { ...base.task, ...task },
    transport: { ...base.transport, ...transport },
    progress: { ...base.progress, ...progress },
  };
}

/** When `startedContextWith` says the run began, and last observed the clock. */
export const STARTED_AT = 1_000;

/** `contextWith` for a run that started at `STARTED_AT` and has not observed a later time yet. */
export function startedContextWith(overrides: ContextOverrides = {}): LoopContext {
  return contextWith({ startedAt: STARTED_AT, lastEventAt: STARTED_AT, ...overrides });
}

// ---- reducers ---------------------------------------------------------------------------------

/** Freezes a value and everything it holds, so a reducer that writes to its input throws. */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const key of Reflect.ownKeys(value)) deepFreeze((value as Record<PropertyKey, unknown>)[key]);
  }
  return value;
}

/** Runs a reducer on a deeply frozen context and event, and checks it left both as they were. */
export function reduce<Params = undefined>(
  reducer: (args: ReducerArgs, params: Params) => Partial<LoopContext>,
  context: LoopContext,
  event: LoopEvent,
  // Reducers without params take none; the others must be given theirs.
  ...[params]: undefined extends Params ? [params?: Params] : [params: Params]
): Partial<LoopContext> {
  const contextBefore = structuredClone(context);
  const eventBefore = structuredClone(event);
  const result = reducer({ context: deepFreeze(context), event: deepFreeze(event) }, params as Params);
  expect(context).toEqual(contextBefore);
  expect(event).toEqual(eventBefore);
  return result;
}

/** The keys of a reducer's result, sorted: for "returns only these fields" checks. */
export const sortedKeys = (value: object): string[] => Object.keys(value).sort();

// ---- outcome events ---------------------------------------------------------------------------

/** Default time of outcome events: after `STARTED_AT`, so recording one moves the clock forward. */
export const EVENT_AT = 2_000;

/** Default usage of a model call. */
export const CALL_USAGE: Readonly<CallUsage> = Object.freeze({ inputTokens: 100, outputTokens: 10, costUsd: 0.001 });

/** Default backoff of `modelFailed`, and so the default wait of `backoffElapsed`. */
export const RETRY_DELAY_MS = 100;

let digestCounter = 0;

/** A `run.started` event: the run starts at time 0 unless `at` says otherwise. */
export function runStarted(nextRequestTokens = 100, at = 0): LoopEvent {
  return { type: 'run.started', at, nextRequestTokens };
}

export interface ResponseOptions {
  at?: number;
  usage?: CallUsage;
  /** Defaults to a fresh digest, so the unchanged-state signal fires only when a test repeats one. */
  stateDigest?: string;
  nextRequestTokens?: number;
}

/** A `model.responded` event carrying `decision`. */
export function modelResponded(decision: ModelDecision, options: ResponseOptions = {}): LoopEvent {
  return {
    type: 'model.responded',
    at: options.at ?? EVENT_AT,
    usage: options.usage ?? CALL_USAGE,
    decision,
    stateDigest: options.stateDigest ?? `digest-${++digestCounter}`,
    nextRequestTokens: options.nextRequestTokens ?? 200,
  };
}

export type ToolCallsDecision = Extract<ModelDecision, { kind: 'tool_calls' }>;

/** A tool-calls decision: one valid, allowed call, requested for the first time, unless overridden. */
export function toolCallsDecision(overrides: Partial<Omit<ToolCallsDecision, 'kind'>> = {}): ToolCallsDecision {
  return {
    kind: 'tool_calls',
    calls: 1,
    invalidCalls: 0,
    parseError: null,
    deniedCalls: 0,
    approvalCalls: 0,
    unavailableCalls: 0,
    refusedCalls: 0,
    blockedTool: null,
    ...overrides,
  };
}

/** A `model.responded` event with a final reply. */
export const finalReply = (options?: ResponseOptions): LoopEvent => modelResponded({ kind: 'final' }, options);

/** A `model.responded` event whose reply could not be parsed. */
export const unparseableReply = (parseError: string, options?: ResponseOptions): LoopEvent =>
  modelResponded({ kind: 'unparseable', parseError }, options);

/** A `model.responded` event with tool calls, as `toolCallsDecision` builds them. */
export const toolCallsReply = (
  decision: Partial<Omit<ToolCallsDecision, 'kind'>> = {},
  options?: ResponseOptions,
): LoopEvent => modelResponded(toolCallsDecision(decision), options);

/** A `tools.completed` event: one call that succeeded with something new, unless overridden. */
export function toolsCompleted(
  round: Partial<ToolRoundSummary> = {},
  options: { at?: number; nextRequestTokens?: number } = {},
): LoopEvent {
  return {
    type: 'tools.completed',
    at: options.at ?? EVENT_AT,
    nextRequestTokens: options.nextRequestTokens ?? 300,
    round: {
      calls: 1,
      failedCalls: 0,
      timedOutCalls: 0,
      unknownOutcomeCalls: 0,
      allObservationsSeen: false,
      maxRepeatCount: 1,
      repeatedTool: null,
      requiredToolUnavailable: false,
      plan: null,
      ...round,
    },
  };
}

export interface EvaluationOptions {
  at?: number;
  /** An LLM judge's usage; null (the default) when no judge ran. */
  usage?: CallUsage | null;
  nextRequestTokens?: number;
  /** Digest of the evaluated output; each evaluation gets a new one unless given. */
  outputDigest?: string;
  /** Judge calls made; 1 when `usage` is given, else 0, unless given. */
  modelCalls?: number;
  transportRetries?: number;
}

let outputCounter = 0;

/** An `evaluation.completed` event. */
export function evaluationCompleted(passed: boolean, reason = '', options: EvaluationOptions = {}): LoopEvent {
  return {
    type: 'evaluation.completed',
    at: options.at ?? EVENT_AT,
    nextRequestTokens: options.nextRequestTokens ?? 300,
    passed,
    reason,
    outputDigest: options.outputDigest ?? `output-${outputCounter++}`,
    usage: options.usage ?? null,
    modelCalls: options.modelCalls ?? (options.usage ? 1 : 0),
    transportRetries: options.transportRetries ?? 0,
  };
}

/** An `evaluation.completed` event that passed. */
export const evaluationPassed = (options?: EvaluationOptions): LoopEvent => evaluationCompleted(true, '', options);

/** An `evaluation.completed` event that failed for `reason`. */
export const evaluationRejected = (reason: string, options?: EvaluationOptions): LoopEvent =>
  evaluationCompleted(false, reason, options);

/** An `evaluation.completed` event in which an evaluator asked a person to review the output. */
export const evaluationAskingReview = (reason: string, options?: EvaluationOptions): LoopEvent =>
  ({ ...evaluationCompleted(false, reason, options), needsReview: true }) as LoopEvent;

/** A `model.failed` event: a transient 503 unless `failure` is fatal (then a 401). */
export function modelFailed(
  failure: ModelFailureKind = 'transient',
  options: {
    at?: number;
    retryDelayMs?: number;
    message?: string;
    status?: number;
    retryAfterMs?: number;
    transportRetries?: number;
    modelCalls?: number;
  } = {},
): LoopEvent {
  const { at, retryDelayMs, message, status, ...rest } = options;
  return {
    type: 'model.failed',
    at: at ?? EVENT_AT,
    failure,
    message: message ?? (failure === 'fatal' ? '401 invalid api key' : '503 service unavailable'),
    retryDelayMs: retryDelayMs ?? RETRY_DELAY_MS,
    status: status ?? (failure === 'fatal' ? 401 : 503),
    ...rest,
  };
}

/** A `backoff.elapsed` event, by default when the backoff of a default `modelFailed` ends. */
export const backoffElapsed = (at = EVENT_AT + RETRY_DELAY_MS): LoopEvent => ({ type: 'backoff.elapsed', at });

// ---- the machine as a pure function -----------------------------------------------------------

/** A machine waiting for `run.started`. */
export function readyRun(overrides: LoopInputOverrides = {}): LoopSnapshot {
  return initialTransition(loopMachine, loopInput(overrides))[0];
}

/** Sends the events one after the other through `transition`, and returns the last snapshot. */
export function send(snapshot: LoopSnapshot, ...events: LoopEvent[]): LoopSnapshot {
  let current = snapshot;
  for (const event of events) [current] = transition(loopMachine, current, event);
  return current;
}

/** A run started at time 0 whose first request is estimated at `nextRequestTokens`. */
export function startedRun(overrides: LoopInputOverrides = {}, nextRequestTokens = 100): LoopSnapshot {
  return send(readyRun(overrides), runStarted(nextRequestTokens));
}

/** The `callModel` effect a run waits for, with the feedback the request must carry. */
export const callModelEffect = (feedback: Feedback | null = null, taskIndex = 0): PendingEffect => ({
  kind: 'callModel',
  feedback,
  taskIndex,
});

/** The output of a finished run; throws when the run still waits for an effect. */
export function outputOf(snapshot: LoopSnapshot): MachineOutput {
  const pending = getPendingEffect(snapshot);
  if (pending.kind !== 'done') throw new Error(`expected the run to be done, it waits for ${JSON.stringify(pending)}`);
  return pending.output;
}

/** Checks the run stopped for `reason` with the status that reason maps to, and returns its output. */
export function expectStop(snapshot: LoopSnapshot, reason: StopReason): MachineOutput {
  const output = outputOf(snapshot);
  expect(output.stopReason).toBe(reason);
  expect(output.status).toBe(statusOf(reason));
  return output;
}

/** The status each stop reason must map to, written out here rather than taken from the machine's own `statusOf`. */
export const EXPECTED_STATUS: Readonly<Record<StopReason, RunStatus>> = {
  completed: 'succeeded',
  needs_human: 'needs_human',
  max_steps: 'failed',
  deadline_exceeded: 'failed',
  budget_exhausted: 'failed',
  no_progress: 'failed',
  permission_denied: 'failed',
  tool_unavailable: 'failed',
  cancelled: 'failed',
  retries_exhausted: 'failed',
  fatal_error: 'failed',
};
