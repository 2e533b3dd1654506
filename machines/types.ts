/**
 * Types of the loop statechart: its context, its events and its output.
 * The machine never performs I/O; the driver in `src/` reads which effect the
 * current state requests (see `pending-effect.ts`), performs it and sends the
 * outcome back as one of the events below. Event payloads are summaries the
 * driver computed (fingerprint counts, digests, estimates) so that guards stay
 * pure and constant-time, and a recorded run replays by re-sending its events.
 */

/**
 * Why a run stopped: one closed union, one value per terminal path.
 * @example
 * const retryable = (reason: StopReason) => reason === 'deadline_exceeded' || reason === 'budget_exhausted';
 */
export type StopReason =
  | 'completed'
  | 'max_steps'
  | 'deadline_exceeded'
  | 'budget_exhausted'
  | 'no_progress'
  | 'permission_denied'
  | 'tool_unavailable'
  | 'cancelled'
  | 'needs_human'
  | 'retries_exhausted'
  | 'fatal_error';

/**
 * Every stop reason, in documentation order.
 * @example
 * STOP_REASONS.includes(result.stopReason) // always true
 */
export const STOP_REASONS: readonly StopReason[] = [
  'completed',
  'max_steps',
  'deadline_exceeded',
  'budget_exhausted',
  'no_progress',
  'permission_denied',
  'tool_unavailable',
  'cancelled',
  'needs_human',
  'retries_exhausted',
  'fatal_error',
];

/**
 * A run's status; cancelled runs are `failed` with reason `cancelled`.
 * @example
 * const done = (status: RunStatus) => status !== 'running';
 */
export type RunStatus = 'running' | 'succeeded' | 'failed' | 'needs_human';

/**
 * Resolved budgets; every one is enforced by a guard before the next spend. `maxCostUsd`,
 * `maxInputTokens`, `maxOutputTokens`, `maxToolCalls` and `deadlineMs` may be `Infinity` (switched off,
 * said explicitly); a limit left out or `undefined` in the config is its default, never off.
 * @example
 * const limits: Partial<LoopLimits> = { maxSteps: 6, deadlineMs: 60_000, maxCostUsd: 0.1 };
 */
export interface LoopLimits {
  /** Model decisions (successful model calls) across the whole run. */
  maxSteps: number;
  /**
   * Reflection retries per task: a rejected answer is fed back with the evaluator's reason this many times
   * before the task fails. Transport failures have their own limits (`maxTransportAttempts`, `maxTransportRetries`).
   */
  maxRetries: number;
  /**
   * Attempts of one model call (the first included) against transport failures (429, 5xx, timeout, connection):
   * a call that fails this many times in a row fails the task. Per call: a success starts the next call afresh.
   */
  maxTransportAttempts: number;
  /** Transport retries of the whole run, every call's summed (main model, judges, context summaries); `Infinity` for no cap. */
  maxTransportRetries: number;
  /** End-to-end wall-clock budget in milliseconds. */
  deadlineMs: number;
  /** Cumulative input tokens; the next request's estimate is checked before the call. */
  maxInputTokens: number;
  /** Cumulative output tokens. */
  maxOutputTokens: number;
  /** Cumulative cost in US dollars, from usage and the price table. */
  maxCostUsd: number;
  /** Tool calls executed at once. */
  maxParallelTools: number;
  /** A tool result larger than this is cut, with a visible marker. */
  maxToolResultBytes: number;
  /** Consecutive invalid-argument rounds the model may repair before the task fails. */
  maxArgumentRepairs: number;
  /** Model decisions within one task; past it the task fails with `max_steps` (its `onFailure` decides the run). */
  maxStepsPerTask: number;
  /** One model call's own timeout in milliseconds; a call that takes longer is a transport failure, retried. */
  modelCallTimeoutMs: number;
  /**
   * How long one evaluator (format, rule or custom) may take, in milliseconds; one that takes longer stops the
   * run with `fatal_error`. LLM judges are bounded per call by `modelCallTimeoutMs` instead. `Infinity`: no bound.
   */
  evaluatorTimeoutMs: number;
  /** Tool calls executed across the whole run; a reply asking for more once it is spent stops the run. */
  maxToolCalls: number;
  /** Tool calls taken from one reply; the rest are answered to the model as refused, not run. */
  maxToolCallsPerReply: number;
}

/**
 * Thresholds of the six no-progress signals. A signal first nudges the model, and stops the run
 * with `no_progress` if one fires again before the model made progress. Every signal is about the
 * current task only, and none counts a call whose result changed, a failed call or a transient error.
 * @example
 * const noProgress: Partial<NoProgressThresholds> = { repeatedToolCall: 3, planStall: 8 };
 */
export interface NoProgressThresholds {
  /** The same tool with the same canonical arguments brought the same result this many times in the task. */
  repeatedToolCall: number;
  /** The state digest (distinct observations and the reply) unchanged across this many consecutive decisions. */
  unchangedState: number;
  /** The same output was rejected for the same reason this many times in a row; stops at once (the reason was already fed back). */
  sameEvaluatorReason: number;
  /** This many consecutive tool rounds that only brought (call, result) pairs already seen in the task: cycles such as A, B, A, B. */
  duplicateObservation: number;
  /** With the built-in plan tool: this many decisions without a plan item completed or removed. */
  planStall: number;
  /** The same parse error (empty reply, malformed or invalid arguments, unknown tool) this many times in a row. */
  sameParseError: number;
}

/**
 * The no-progress signal that nudged or stopped a run.
 * @example
 * const signal: NoProgressSignal = 'repeated_tool_call';
 */
export type NoProgressSignal =
  | 'repeated_tool_call'
  | 'unchanged_state'
  | 'same_evaluator_reason'
  | 'duplicate_observation'
  | 'plan_stall'
  | 'same_parse_error';

/** What a task does when it fails for good: stop the run, or record a warning and go on with the next task. */
export type TaskFailurePolicy = 'stop' | 'continue';

export interface TaskPlan {
  id: string;
  onFailure: TaskFailurePolicy;
  /**
   * False when the task has no evaluator, so its first final answer completes it unchecked; the stop
   * detail says so. Absent (a plan from before this field) counts as evaluated.
   */
  evaluated?: boolean;
}

/**
 * Cumulative usage of a run.
 * @example
 * console.log(`${result.usage.modelCalls} calls, $${result.usage.costUsd.toFixed(4)}`);
 */
export interface Usage {
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
  modelCalls: number;
  toolCalls: number;
}

/** Usage of one model call, with its cost already priced by the driver. */
export interface CallUsage {
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
}

/** The model's decision, classified by the driver (tool lookup, policy, argument validation, fingerprints). */
export type ModelDecision =
  | { kind: 'final' }
  | {
      /** No usable content: an empty reply. `parseError` is a stable key such as `empty_reply`. */
      kind: 'unparseable';
      parseError: string;
    }
  | {
      kind: 'tool_calls';
      calls: number;
      /** Calls whose arguments were malformed JSON, failed the zod schema, or named an unknown tool. */
      invalidCalls: number;
      /** Stable key of the first invalid call's error, for the same-parse-error signal; null when all are valid. */
      parseError: string | null;
      /** Calls the policy forbids outright. */
      deniedCalls: number;
      /** Calls the policy allows only with a person's approval. */
      approvalCalls: number;
      /** Calls to a tool whose circuit breaker is open. */
      unavailableCalls: number;
      /** Calls answered to the model as refused and not run: over a tool-call cap, or denied with `onDeny: 'tell_model'`. */
      refusedCalls: number;
      /** The tool of the first denied, approval-needing or unavailable call, to name it in the stop detail. */
      blockedTool: string | null;
    };

/** Summary of one tool round, as the driver observed it. */
export interface ToolRoundSummary {
  calls: number;
  failedCalls: number;
  timedOutCalls: number;
  /** Side-effecting calls whose outcome cannot be known (timed out, no idempotent lookup). */
  unknownOutcomeCalls: number;
  /**
   * True when the round ran at least one call and every successful one brought a (tool, canonical
   * arguments, result) triple already seen in this task. Failed calls are never observations.
   */
  allObservationsSeen: boolean;
  /** Highest number of times one (tool, arguments, result) triple of this round has been seen in this task, this one included; 0 when none succeeded. */
  maxRepeatCount: number;
  /** The tool of that most repeated call, for the stop detail; null when nothing repeated. */
  repeatedTool: string | null;
  /** True when a tool the current task requires became unavailable (its circuit opened). */
  requiredToolUnavailable: boolean;
  /** What the built-in plan tool reported in this round; null when it was not called. */
  plan: PlanRoundFacts | null;
}

/** The plan after a round that updated it. */
export interface PlanRoundFacts {
  /** Items neither done nor removed. */
  openItems: number;
  /** True when an item was completed or removed in this round. */
  progressed: boolean;
}

export type ModelFailureKind = 'transient' | 'fatal';

export interface TimedEvent {
  /** Wall-clock time (ms) at which the driver observed the outcome; the only way time enters the machine. */
  at: number;
}

/** Model calls made by an effect that an interruption cut short; they are counted all the same. */
export interface SpentBeforeInterruption {
  /** Usage of calls that returned before the interruption (e.g. a reply that made a policy hook throw). */
  usage?: CallUsage;
  /** Model calls made, including one abandoned mid-flight; defaults to 1 when `usage` is given, else 0. */
  modelCalls?: number;
}

export interface TranscriptEvent extends TimedEvent {
  /** Estimated input tokens of the next model request if it were built now. */
  nextRequestTokens: number;
}

/**
 * Every event the machine accepts: effect outcomes from the driver, plus cancel, deadline and fault.
 * @example
 * actor.send({ type: 'backoff.elapsed', at: Date.now() });
 */
export type LoopEvent =
  | ({ type: 'run.started' } & TranscriptEvent)
  | ({
      type: 'model.responded';
      usage: CallUsage;
      decision: ModelDecision;
      /** Digest of the run's state summary (task, distinct observations, this reply). */
      stateDigest: string;
      /** Model calls this step made: the decision plus one that condensed the context first; defaults to 1. */
      modelCalls?: number;
      /** Transport retries of a context summary made before the decision in the same step. */
      transportRetries?: number;
    } & TranscriptEvent)
  | ({
      type: 'model.failed';
      failure: ModelFailureKind;
      message: string;
      /** Backoff chosen by the driver's retry policy (full jitter, Retry-After honoured). */
      retryDelayMs: number;
      /** The provider's HTTP status, when the failure had one; the stop detail names it. */
      status?: number;
      /** The failure's kind as the model adapter classified it (`rate_limited`, `server`, `timeout`, ...). */
      errorKind?: string;
      /** The wait the server asked for (Retry-After), when it asked; the stop detail names it. */
      retryAfterMs?: number;
      /** Transport retries of a context summary made before the failed call in the same step. */
      transportRetries?: number;
      /** Usage the failed call reported before it failed, plus a call made before it in the same step (a context summary); counted all the same. */
      usage?: CallUsage;
      /** Model calls this step made, the failed one included; defaults to 1. */
      modelCalls?: number;
    } & TimedEvent)
  | ({ type: 'tools.completed'; round: ToolRoundSummary } & TranscriptEvent)
  | ({
      type: 'evaluation.completed';
      passed: boolean;
      reason: string;
      /**
       * An evaluator asked a person to review the output instead of passing or failing it (`passed` is false):
       * the run stops with `needs_human`. A person's decision replaces this event with a plain verdict.
       */
      needsReview?: boolean;
      /** Digest of the evaluated output: the same reason counts as no progress only when the output did not change either. */
      outputDigest: string;
      /** Usage of the LLM judges that ran, summed. */
      usage: CallUsage | null;
      /** Judge calls made, failed attempts included. */
      modelCalls: number;
      /** Judge transport retries made (each judge call has its own attempts); they count against the run's `maxTransportRetries`. */
      transportRetries: number;
    } & TranscriptEvent)
  | ({ type: 'backoff.elapsed' } & TimedEvent)
  | ({ type: 'run.deadlineReached' } & SpentBeforeInterruption & TimedEvent)
  /** A tool the current task requires is withheld (circuit open) before the next model call. */
  | ({ type: 'tool.withheld'; tool: string } & TimedEvent)
  /** An effect failed in a way no retry layer covers (a throwing policy hook, prompt or trace sink). */
  | ({ type: 'run.faulted'; message: string } & SpentBeforeInterruption & TimedEvent)
  | ({ type: 'run.cancelRequested'; message: string } & SpentBeforeInterruption & TimedEvent);

export type LoopEventType = LoopEvent['type'];

/** What the next model request must add to the transcript, decided by the machine. */
export type Feedback =
  | { kind: 'reflection'; reason: string }
  | { kind: 'argument_repair' }
  | { kind: 'parse_error'; parseError: string }
  | { kind: 'nudge'; signal: NoProgressSignal }
  | { kind: 'transport_retry' };

export interface TaskCounters {
  steps: number;
  reflectionRetries: number;
  argumentRepairs: number;
}

/** Transport failures: the current model call's, and the run's retries in total. */
export interface TransportCounters {
  /** Failed attempts of the current model call in a row; a reply (or the next task) resets it. */
  consecutiveFailures: number;
  /** Transport retries of the whole run: main model calls, LLM judges and context summaries. */
  retries: number;
}

export interface ProgressState {
  lastStateDigest: string | null;
  unchangedStateStreak: number;
  lastEvaluatorReason: string | null;
  lastOutputDigest: string | null;
  /** Rejections in a row with the same reason AND the same output. */
  sameReasonStreak: number;
  duplicateObservationStreak: number;
  /** Highest repeat count of a (call, result) triple in the last round, and its tool. */
  repeatCount: number;
  repeatedTool: string | null;
  /** The plan tool has open items; only then can the plan stall. */
  planActive: boolean;
  /** Decisions since a plan item was last completed or removed. */
  planStallSteps: number;
  lastParseError: string | null;
  sameParseErrorStreak: number;
  /** The step at which the model was nudged; null when it has not been (reset when a task succeeds). */
  nudgedAtStep: number | null;
  /** The signal that fired last, for the stop detail. */
  lastSignal: NoProgressSignal | null;
}

export interface StopRecord {
  reason: StopReason;
  detail: string;
}

export interface LoopContext {
  limits: LoopLimits;
  noProgress: NoProgressThresholds;
  tasks: readonly TaskPlan[];
  taskIndex: number;
  startedAt: number | null;
  lastEventAt: number;
  steps: number;
  usage: Usage;
  nextRequestTokens: number;
  task: TaskCounters;
  transport: TransportCounters;
  progress: ProgressState;
  feedback: Feedback | null;
  retryAt: number | null;
  /** Why the last task that failed for good failed; kept after a skip so the driver can name it. */
  failure: StopRecord | null;
  stop: StopRecord | null;
  completedTasks: number;
  failedTasks: number;
}

export interface LoopInput {
  limits: LoopLimits;
  noProgress: NoProgressThresholds;
  tasks: readonly TaskPlan[];
}

/** What the loop machine ends with: the stop reason and the counters; the driver builds the typed run result from it. */
export interface MachineOutput {
  stopReason: StopReason;
  status: RunStatus;
  detail: string;
  steps: number;
  usage: Usage;
  completedTasks: number;
  failedTasks: number;
}
