/**
 * Abstract outcomes for model-based exploration of the loop statechart.
 *
 * The machine is pure: at rest it waits for one effect (`getPendingEffect`) and the driver answers
 * with an outcome event whose payload is a summary. Here every effect gets a small, finite set of
 * outcome classes (decision kinds, digests that repeat or change, reasons from {A, B}, usage that does
 * or does not cross a budget, times "within" or "past" the deadline), so the reachable state space is
 * finite and `xstate/graph` can enumerate it exhaustively.
 *
 * The classes are the ones the real driver can produce (`replay.test.ts` replays them through
 * `createLoop`), so a few follow the driver's contracts rather than the machine's event types alone:
 * the state digest covers the task, the distinct observations and the reply (so it changes on a new
 * task, after a new observation and with a new tool call, and an empty reply always repeats it); an
 * observation can be "seen before" only once the run has made a tool call; costs come from one price.
 */
import { getPendingEffect, type LoopSnapshot } from '../../machines/pending-effect.js';
import { toolCallsDecision } from '../support/statechart-fixtures.js';
import type {
  CallUsage,
  LoopContext,
  LoopEvent,
  LoopInput,
  LoopLimits,
  ModelDecision,
  ModelFailureKind,
  NoProgressThresholds,
  TaskPlan,
  ToolRoundSummary,
} from '../../machines/types.js';

/** One limit configuration of the model, with the usage classes sized against its budgets. */
export interface ModelConfiguration {
  name: string;
  limits: LoopLimits;
  noProgress: NoProgressThresholds;
  tasks: readonly TaskPlan[];
  /** Estimated input tokens of the next request, sent with every transcript event. */
  requestEstimate: number;
  /** A model call that leaves every budget standing, even after `maxSteps` of them. */
  lightUsage: CallUsage;
  /** Calls that each cross exactly one budget on their own. */
  heavyUsage: { input: CallUsage; output: CallUsage; cost: CallUsage };
  /** The built-in plan tool is on: rounds may update the plan, and only then can the plan stall. */
  plan: boolean;
  /** A round may bring a result so large that the next request's estimate is over the input budget. */
  hugeResults?: boolean;
  /** An evaluation may ask a person to review the output (`evaluators.review`): the run stops needs_human. */
  review?: boolean;
}

/** Abstract clock: the run starts at `startAt`; "within" is a fixed offset after it, "past" is the deadline itself. */
export const ABSTRACT_TIME = Object.freeze({
  startAt: 1_000,
  withinOffsetMs: 100,
  shortRetryDelayMs: 10,
});

/** USD per million tokens of the one model a run uses; the replay gives the scripted model this price. */
export const ABSTRACT_PRICE = Object.freeze({ inputPerMillion: 1, outputPerMillion: 50 });

/** A call's usage with its cost, computed exactly as the driver prices it (same operations, same float). */
export function pricedUsage(inputTokens: number, outputTokens: number): CallUsage {
  const costUsd =
    (inputTokens * ABSTRACT_PRICE.inputPerMillion + outputTokens * ABSTRACT_PRICE.outputPerMillion) / 1_000_000;
  return { inputTokens, outputTokens, costUsd };
}

export const EVALUATOR_REASONS = ['reason A', 'reason B'] as const;
/** Why the abstract evaluation asks a person; the replay's review evaluator gives the same reason. */
export const REVIEW_REASON = 'a person must look';
export const PARSE_ERRORS = Object.freeze({
  emptyReply: 'empty_reply',
  invalidArguments: 'invalid_arguments:lookup:id',
});

/** Texts the driver puts in events, shared with the replay so that stop details agree too. */
export const OUTCOME_TEXT = Object.freeze({
  transientFailure: 'HTTP 503',
  fatalFailure: 'HTTP 401',
  cancelled: 'user cancelled',
  fault: 'Error: injected fault',
  /** The tool every task requires; its circuit opening is `tool.withheld` or a `required-unavailable` round. */
  requiredTool: 'required_tool',
});

/**
 * A round with a new observation grows the next request by this many tokens. Besides being true of a real
 * transcript, it tells the next decision, through the context, that its digest must change.
 */
export const NEW_OBSERVATION_TOKENS = 1;

/** An abstract outcome: the event to send plus a stable label naming its class (for replay and failure messages). */
export interface AbstractOutcome {
  label: string;
  event: LoopEvent;
}

export function modelInput(config: ModelConfiguration): LoopInput {
  return { limits: config.limits, noProgress: config.noProgress, tasks: config.tasks };
}

type Moment = 'within' | 'past';

/** Time never goes backwards: "within" is at least the last observed time, "past" is the deadline itself. */
function timeAt(context: LoopContext, moment: Moment): number {
  const startedAt = context.startedAt ?? ABSTRACT_TIME.startAt;
  if (moment === 'past') return Math.max(context.lastEventAt, startedAt + context.limits.deadlineMs);
  return Math.max(context.lastEventAt, startedAt + ABSTRACT_TIME.withinOffsetMs);
}

const toolCalls = toolCallsDecision;

/**
 * What a reply looks like to the digest: a text, nothing (an empty reply), valid tool calls, or invalid ones.
 * A reply can only repeat the last reply of its own family.
 */
type ReplyFamily = 'text' | 'empty' | 'calls' | 'invalid';

export interface DecisionClass {
  label: string;
  decision: ModelDecision;
  family: ReplyFamily;
  /**
   * Whether this decision can be the very reply made last. Tool calls can (the model repeats its last
   * calls); an invalid call cannot (its raw arguments change every time in the replay).
   */
  canRepeatReply: boolean;
}

export function decisionClasses(_config: ModelConfiguration): readonly DecisionClass[] {
  return [
    { label: 'final', decision: { kind: 'final' }, family: 'text', canRepeatReply: true },
    { label: 'tools', decision: toolCalls({}), family: 'calls', canRepeatReply: true },
    {
      label: 'tools-invalid',
      decision: toolCalls({ invalidCalls: 1, parseError: PARSE_ERRORS.invalidArguments }),
      family: 'invalid',
      canRepeatReply: false,
    },
    {
      label: 'unparseable',
      decision: { kind: 'unparseable', parseError: PARSE_ERRORS.emptyReply },
      family: 'empty',
      canRepeatReply: true,
    },
    {
      label: 'tools-denied',
      decision: toolCalls({ deniedCalls: 1, blockedTool: 'forbidden' }),
      family: 'calls',
      canRepeatReply: false,
    },
    {
      label: 'tools-approval',
      decision: toolCalls({ approvalCalls: 1, blockedTool: 'wipe' }),
      family: 'calls',
      canRepeatReply: false,
    },
    {
      label: 'tools-unavailable',
      decision: toolCalls({ unavailableCalls: 1, blockedTool: 'broken' }),
      family: 'calls',
      canRepeatReply: false,
    },
  ];
}

function heavyUsageClasses(config: ModelConfiguration): ReadonlyArray<readonly [string, CallUsage]> {
  return [
    ['heavy-input', config.heavyUsage.input],
    ['heavy-output', config.heavyUsage.output],
    ['heavy-cost', config.heavyUsage.cost],
  ];
}

/** Digests are `<family>-<0|1>`: "changed" flips within a family, so at most two values per family exist. */
function changedDigest(last: string | null, family: ReplyFamily): string {
  if (last === `${family}-0`) return `${family}-1`;
  return `${family}-0`;
}

/**
 * "same" repeats the last digest: only for a reply that can repeat the last one (same family), in the same
 * task, with no new observation since. An empty reply in that position always repeats it.
 */
function digestClasses(
  config: ModelConfiguration,
  context: LoopContext,
  decision: DecisionClass,
): ReadonlyArray<readonly [string, string]> {
  const last = context.progress.lastStateDigest;
  const changed: readonly [string, string] = ['changed', changedDigest(last, decision.family)];
  const sameTask = context.task.steps > 0;
  const newObservation = context.nextRequestTokens === config.requestEstimate + NEW_OBSERVATION_TOKENS;
  const canRepeat =
    last !== null && sameTask && !newObservation && decision.canRepeatReply && last.startsWith(`${decision.family}-`);
  if (!canRepeat) return [changed];
  if (decision.family === 'empty') return [['same', last]];
  return [['same', last], changed];
}

const ROUND_BASE = {
  calls: 1,
  failedCalls: 0,
  timedOutCalls: 0,
  unknownOutcomeCalls: 0,
  allObservationsSeen: false,
  maxRepeatCount: 0,
  repeatedTool: null,
  requiredToolUnavailable: false,
  plan: null,
} as const;

/**
 * Rounds of one call: a new result; the result the same call brought last time (possible only when the
 * task's last round succeeded, and counted one up from it); a timeout, an unknown outcome, the required
 * tool failing into an open circuit (failures are never observations).
 */
function toolRounds(
  config: ModelConfiguration,
  context: LoopContext,
): ReadonlyArray<readonly [string, ToolRoundSummary]> {
  const rounds: Array<readonly [string, ToolRoundSummary]> = [['ok-new', { ...ROUND_BASE, maxRepeatCount: 1 }]];
  if (context.progress.repeatCount >= 1) {
    rounds.push([
      'ok-seen',
      {
        ...ROUND_BASE,
        allObservationsSeen: true,
        maxRepeatCount: context.progress.repeatCount + 1,
        repeatedTool: 'lookup',
      },
    ]);
  }
  rounds.push(
    ['timeout', { ...ROUND_BASE, failedCalls: 0, timedOutCalls: 1 }],
    ['unknown-outcome', { ...ROUND_BASE, timedOutCalls: 0, unknownOutcomeCalls: 1 }],
    ['required-unavailable', { ...ROUND_BASE, failedCalls: 1, requiredToolUnavailable: true }],
  );
  // A plan update is not an observation (the plan is the model's own bookkeeping); it leaves one item open either way.
  if (config.plan) {
    rounds.push(['plan-open', { ...ROUND_BASE, plan: { openItems: 1, progressed: false } }]);
    // Progress closes an item that was open: there must be a plan already.
    if (context.progress.planActive)
      rounds.push(['plan-progressed', { ...ROUND_BASE, plan: { openItems: 1, progressed: true } }]);
  }
  return rounds;
}

/**
 * Within the deadline: every decision with a light call (each digest class it allows) and with each heavy
 * call (last digest class: the digest does not matter once a budget is gone). Past the deadline: every
 * decision once, with a light call; the routing checks the deadline before anything in the payload.
 */
function modelOutcomes(config: ModelConfiguration, context: LoopContext): AbstractOutcome[] {
  const outcomes: AbstractOutcome[] = [];
  const nextRequestTokens = config.requestEstimate;
  const within = timeAt(context, 'within');
  const past = timeAt(context, 'past');
  for (const decisionClass of decisionClasses(config)) {
    const { decision } = decisionClass;
    const digests = digestClasses(config, context, decisionClass);
    const last = digests[digests.length - 1] as readonly [string, string];
    const responded = (usage: CallUsage, stateDigest: string, at: number, label: string): AbstractOutcome => ({
      label: `model.responded:${decisionClass.label}:${label}`,
      event: { type: 'model.responded', usage, decision, stateDigest, nextRequestTokens, at },
    });
    for (const [digestLabel, stateDigest] of digests) {
      outcomes.push(responded(config.lightUsage, stateDigest, within, `${digestLabel}:light:within`));
    }
    for (const [usageLabel, usage] of heavyUsageClasses(config)) {
      outcomes.push(responded(usage, last[1], within, `${last[0]}:${usageLabel}:within`));
    }
    outcomes.push(responded(config.lightUsage, last[1], past, `${last[0]}:light:past`));
  }
  const failed = (label: string, failure: ModelFailureKind, retryDelayMs: number, at: number): AbstractOutcome => ({
    label: `model.failed:${label}`,
    event: {
      type: 'model.failed',
      failure,
      message: failure === 'fatal' ? OUTCOME_TEXT.fatalFailure : OUTCOME_TEXT.transientFailure,
      retryDelayMs,
      at,
      // As the driver reports a scripted HTTP error: its status, and the Retry-After of a long wait.
      status: failure === 'fatal' ? 401 : 503,
      ...(failure === 'transient' && retryDelayMs > ABSTRACT_TIME.shortRetryDelayMs
        ? { retryAfterMs: retryDelayMs }
        : {}),
    },
  });
  outcomes.push(
    failed('transient-short:within', 'transient', ABSTRACT_TIME.shortRetryDelayMs, within),
    failed('transient-past-deadline:within', 'transient', config.limits.deadlineMs, within),
    failed('fatal:within', 'fatal', 0, within),
    failed('transient-short:past', 'transient', ABSTRACT_TIME.shortRetryDelayMs, past),
    // The driver checks the task's required tools before each model call.
    { label: 'tool.withheld', event: { type: 'tool.withheld', tool: OUTCOME_TEXT.requiredTool, at: within } },
  );
  return outcomes;
}

/** Every round within the deadline; past the deadline, one new-observation round (the routing checks the deadline first). */
function toolOutcomes(config: ModelConfiguration, context: LoopContext): AbstractOutcome[] {
  const completed = (label: string, round: ToolRoundSummary, moment: Moment): AbstractOutcome => ({
    label: `tools.completed:${label}:${moment}`,
    event: {
      type: 'tools.completed',
      round,
      // New results and failures change the digest; a round of seen results or a plan update does not.
      nextRequestTokens:
        config.requestEstimate + (round.allObservationsSeen || round.plan !== null ? 0 : NEW_OBSERVATION_TOKENS),
      at: timeAt(context, moment),
    },
  });
  const rounds = toolRounds(config, context);
  const [newObservation] = rounds;
  if (newObservation === undefined) return [];
  const outcomes = [
    ...rounds.map(([label, round]) => completed(label, round, 'within')),
    completed(newObservation[0], newObservation[1], 'past'),
  ];
  if (config.hugeResults === true) {
    const huge = completed('ok-huge', newObservation[1], 'within');
    outcomes.push({
      ...huge,
      event: { ...huge.event, nextRequestTokens: config.limits.maxInputTokens + 1 } as LoopEvent,
    });
  }
  return outcomes;
}

/**
 * A pass and two distinct failure reasons; past the deadline a pass and a failure (a pass is routed before the
 * deadline); with `review`, a request for a person's review.
 */
function evaluationOutcomes(config: ModelConfiguration, context: LoopContext): AbstractOutcome[] {
  const evaluated = (
    label: string,
    passed: boolean,
    reason: string,
    moment: Moment,
    needsReview = false,
  ): AbstractOutcome => ({
    label: `evaluation.completed:${label}:${moment}`,
    event: {
      type: 'evaluation.completed',
      passed,
      reason,
      ...(needsReview ? { needsReview: true } : {}),
      // The output is the last final reply: the one evaluated before exactly when the decision repeated the digest.
      outputDigest:
        context.progress.unchangedStateStreak > 1 && context.progress.lastOutputDigest !== null
          ? context.progress.lastOutputDigest
          : `output-at-step-${context.steps}`,
      usage: null,
      modelCalls: 0,
      transportRetries: 0,
      nextRequestTokens: config.requestEstimate,
      at: timeAt(context, moment),
    },
  });
  return [
    evaluated('pass', true, '', 'within'),
    evaluated('fail-A', false, EVALUATOR_REASONS[0], 'within'),
    evaluated('fail-B', false, EVALUATOR_REASONS[1], 'within'),
    evaluated('pass', true, '', 'past'),
    evaluated('fail-A', false, EVALUATOR_REASONS[0], 'past'),
    // A person's decision later replaces this event with a pass or a failure, both explored above.
    ...(config.review === true ? [evaluated('review', false, REVIEW_REASON, 'within', true)] : []),
  ];
}

function backoffOutcomes(context: LoopContext, until: number): AbstractOutcome[] {
  return [
    { label: 'backoff.elapsed:on-time', event: { type: 'backoff.elapsed', at: Math.max(until, context.lastEventAt) } },
    {
      label: 'backoff.elapsed:overslept-past-deadline',
      event: { type: 'backoff.elapsed', at: timeAt(context, 'past') },
    },
  ];
}

function startOutcomes(config: ModelConfiguration, context: LoopContext): AbstractOutcome[] {
  // A started run rests in READY only transiently; `start` is pending only before `run.started`.
  if (context.startedAt !== null) return [];
  const at = ABSTRACT_TIME.startAt;
  return [
    { label: 'run.started:fits', event: { type: 'run.started', nextRequestTokens: config.requestEstimate, at } },
    {
      label: 'run.started:request-over-input-budget',
      event: { type: 'run.started', nextRequestTokens: config.limits.maxInputTokens + 1, at },
    },
  ];
}

/** Cancel, the deadline timer and an effect failing outright can happen whatever the machine waits for. */
function interruptionOutcomes(context: LoopContext, duringModelCall = false): AbstractOutcome[] {
  // A model call cut short by cancel or the deadline was still made, and is counted.
  const spent = duringModelCall ? { modelCalls: 1 } : {};
  return [
    {
      label: 'run.cancelRequested',
      event: { type: 'run.cancelRequested', message: OUTCOME_TEXT.cancelled, at: timeAt(context, 'within'), ...spent },
    },
    { label: 'run.deadlineReached', event: { type: 'run.deadlineReached', at: timeAt(context, 'past'), ...spent } },
    {
      label: 'run.faulted',
      event: { type: 'run.faulted', message: OUTCOME_TEXT.fault, at: timeAt(context, 'within') },
    },
  ];
}

/** Every abstract outcome of the effect `snapshot` waits for, plus the interruptions; none for a final snapshot. */
export function abstractOutcomes(config: ModelConfiguration, snapshot: LoopSnapshot): AbstractOutcome[] {
  const effect = getPendingEffect(snapshot);
  const { context } = snapshot;
  switch (effect.kind) {
    case 'done':
      return [];
    case 'start':
      return [...startOutcomes(config, context), ...interruptionOutcomes(context)];
    case 'callModel':
      return [...modelOutcomes(config, context), ...interruptionOutcomes(context, true)];
    case 'runTools':
      return [...toolOutcomes(config, context), ...interruptionOutcomes(context)];
    case 'evaluate':
      return [...evaluationOutcomes(config, context), ...interruptionOutcomes(context)];
    case 'sleep':
      return [...backoffOutcomes(context, effect.until), ...interruptionOutcomes(context)];
  }
}

/** The `events` option for `xstate/graph` traversals. */
export function createAbstractEvents(config: ModelConfiguration): (snapshot: LoopSnapshot) => LoopEvent[] {
  return (snapshot) => abstractOutcomes(config, snapshot).map((outcome) => outcome.event);
}

/** Value plus context, without the fields fixed by the configuration: states differ whenever a counter differs. */
export function serializeLoopSnapshot(snapshot: LoopSnapshot): string {
  const { limits: _limits, noProgress: _noProgress, tasks: _tasks, ...varying } = snapshot.context;
  return JSON.stringify({ value: snapshot.value, context: varying });
}

export function serializeLoopEvent(event: LoopEvent): string {
  return JSON.stringify(event);
}

/**
 * Budgets sized against the usage classes below for up to 4 decisions: light calls never exhaust one, and
 * each heavy call crosses exactly one (input: 10,000 + any estimate; output: 200; cost: $0.0145 ≥ $0.0144,
 * while 3 light calls plus a heavy input or output call stay below $0.0144). The input budget leaves room
 * for the driver's real request estimates (under 1,700 tokens), which the replay depends on.
 */
const SHARED_LIMITS = {
  deadlineMs: 1_000,
  // No run-wide cap unless a configuration sets one (the default).
  maxTransportRetries: Infinity,
  // Longer than the deadline: the run's deadline, not the call's own timeout, is what the exploration reaches.
  modelCallTimeoutMs: 100_000,
  evaluatorTimeoutMs: 100_000,
  maxToolCalls: 100,
  maxToolCallsPerReply: 10,
  maxInputTokens: 10_000,
  maxOutputTokens: 200,
  maxCostUsd: 0.0144,
  maxParallelTools: 2,
  maxToolResultBytes: 1_024,
  maxArgumentRepairs: 1,
} as const;

const SHARED_USAGE = {
  requestEstimate: 100,
  lightUsage: pricedUsage(100, 20),
  heavyUsage: {
    input: pricedUsage(10_000, 20),
    output: pricedUsage(100, 200),
    cost: pricedUsage(8_000, 130),
  },
} as const;

/**
 * The configurations explored; each is small, and together they reach every transition. Streaks count the
 * first occurrence as 1, so a threshold of 1 fires on every occurrence (an unchanged-state threshold of 1
 * would signal on every decision: 2 is the smallest that lets a tool round run), and a threshold of 2
 * fires on the first repeat, early enough for the nudge and the stop after it to fit under `maxSteps`.
 */
export const MODEL_CONFIGURATIONS: readonly ModelConfiguration[] = [
  {
    // Same parse error at 3 (out of reach) lets a second invalid-argument round exhaust the repair; same
    // evaluator reason at 2 lets another reason exhaust reflection unsignalled; no plan stall, as by default.
    // A per-task bound below the run's: the task fails with max_steps before the run's bound is reached.
    name: 'one task, maxSteps 3 (2 per task), maxRetries 1, 2 transport attempts per call',
    limits: { ...SHARED_LIMITS, maxSteps: 3, maxStepsPerTask: 2, maxRetries: 1, maxTransportAttempts: 2 },
    noProgress: {
      repeatedToolCall: 2,
      unchangedState: 2,
      sameEvaluatorReason: 2,
      duplicateObservation: 1,
      planStall: 3,
      sameParseError: 3,
    },
    tasks: [{ id: 'only', onFailure: 'stop' }],
    ...SHARED_USAGE,
    plan: false,
    review: true,
  },
  {
    // Signals on the first occurrence or the second; reflection has room for a nudge and a retry.
    // A parse error signals at once, so its nudge (also from an invalid call, while repairs remain) and the stop after it fit.
    // Two transport attempts per call (retries of several calls already add up to more than one per task).
    name: 'one task, maxSteps 3, maxRetries 2, 2 transport attempts per call',
    limits: { ...SHARED_LIMITS, maxSteps: 3, maxStepsPerTask: 3, maxRetries: 2, maxTransportAttempts: 2 },
    noProgress: {
      repeatedToolCall: 2,
      unchangedState: 2,
      sameEvaluatorReason: 1,
      duplicateObservation: 2,
      planStall: 2,
      sameParseError: 1,
    },
    tasks: [{ id: 'only', onFailure: 'stop' }],
    ...SHARED_USAGE,
    plan: false,
  },
  {
    // A workflow: the first task may fail and the run goes on with the second. The run may retry a failed
    // call twice in all (maxTransportRetries), fewer than its calls' attempts allow.
    name: 'two tasks (first continues on failure), maxSteps 2, maxRetries 1, 2 transport attempts per call, 2 in the run',
    limits: {
      ...SHARED_LIMITS,
      maxSteps: 2,
      maxStepsPerTask: 2,
      maxRetries: 1,
      maxTransportAttempts: 2,
      maxTransportRetries: 2,
    },
    noProgress: {
      repeatedToolCall: 2,
      unchangedState: 2,
      sameEvaluatorReason: 1,
      duplicateObservation: 1,
      planStall: 1,
      sameParseError: 2,
    },
    tasks: [
      { id: 'classify', onFailure: 'continue' },
      { id: 'draft', onFailure: 'stop' },
    ],
    ...SHARED_USAGE,
    plan: false,
  },
  {
    // The plan tool is on and stalls after one decision: the nudge, then the stop at the next gate, fit
    // under maxSteps; a round that completes a plan item answers the nudge.
    // Four steps: a round can repeat from the second round on, and its stop after a nudge needs a third. No
    // retries (the other configurations explore them), which keeps the four steps' graph small.
    name: 'one task, plan tool, plan stall after one step, maxSteps 4, maxRetries 0, one transport attempt per call',
    limits: { ...SHARED_LIMITS, maxSteps: 4, maxStepsPerTask: 4, maxRetries: 0, maxTransportAttempts: 1 },
    noProgress: {
      repeatedToolCall: 2,
      unchangedState: 2,
      sameEvaluatorReason: 2,
      duplicateObservation: 1,
      planStall: 1,
      sameParseError: 3,
    },
    tasks: [{ id: 'only', onFailure: 'stop' }],
    ...SHARED_USAGE,
    plan: true,
  },
  {
    // One tool call for the whole run: a second tool decision stops it with budget_exhausted.
    // Results up to 64 KB: one can push the next request's estimate past the input budget.
    name: 'one task, one tool call allowed, maxSteps 3, maxRetries 1, 2 transport attempts per call',
    limits: {
      ...SHARED_LIMITS,
      maxSteps: 3,
      maxStepsPerTask: 3,
      maxRetries: 1,
      maxTransportAttempts: 2,
      maxToolCalls: 1,
      maxToolResultBytes: 65_536,
    },
    hugeResults: true,
    noProgress: {
      repeatedToolCall: 2,
      unchangedState: 2,
      sameEvaluatorReason: 2,
      duplicateObservation: 1,
      planStall: 1,
      sameParseError: 3,
    },
    tasks: [{ id: 'only', onFailure: 'stop' }],
    ...SHARED_USAGE,
    plan: false,
  },
];
