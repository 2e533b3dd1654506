/**
 * Abstract outcomes of every effect a loop can request, for the exhaustive exploration of `verify`.
 *
 * Each effect gets a small set of outcome classes the real driver can produce for this loop: decision kinds
 * its tools and policy allow, digests that repeat or change, evaluator reasons that repeat or change, usage
 * that leaves every budget standing (zero) or crosses one finite budget (exactly its limit), one time within
 * the deadline and the deadline itself. Outcomes depend only on what the state key keeps (see `state-key.ts`),
 * so states with the same key have the same futures.
 */
import { getPendingEffect } from '../../../machines/pending-effect.js';
import type { CallUsage, LoopContext, LoopEvent, ToolRoundSummary } from '../../../machines/types.js';
import type { DecisionClass } from './decision-classes.js';
import type { VerifyModel } from './verify-model.js';

export interface AbstractOutcome {
  /** Names the outcome class in a counterexample, e.g. `model.responded: tool calls (allowed)`. */
  label: string;
  event: LoopEvent;
  /** Tool calls this outcome runs (a tool round), for the worst-case count. */
  toolCalls: number;
  /** A destructive tool this decision runs without approval. */
  destructiveTool?: string;
}

export const ABSTRACT_START_AT = 1_000;
const WITHIN_OFFSET_MS = 100;
/**
 * The backoff of a transient failure that wakes up within the deadline. Zero (full jitter may draw it): a
 * longer one would move the clock on by its length at every retry, and the states of runs that differ only
 * in how many backoffs they slept would never merge, although no guard but the deadline's reads the time.
 */
const WITHIN_RETRY_DELAY_MS = 0;
/** The next request's estimate; one more after a new observation, which also tells the next decision its digest changes. */
const REQUEST_ESTIMATE = 1;
const NO_USAGE: CallUsage = Object.freeze({ inputTokens: 0, outputTokens: 0, costUsd: 0 });
const REASONS = ['reason A', 'reason B'] as const;

function within(context: LoopContext): number {
  return Math.max(context.lastEventAt, (context.startedAt ?? ABSTRACT_START_AT) + WITHIN_OFFSET_MS);
}

function past(context: LoopContext): number | null {
  if (!Number.isFinite(context.limits.deadlineMs)) return null;
  return Math.max(context.lastEventAt, (context.startedAt ?? ABSTRACT_START_AT) + context.limits.deadlineMs);
}

/** Each family's two digests, made once: the same string objects every time compare and hash faster downstream. */
const digestPairs = new Map<string, readonly [string, string]>();

function digestsOf(family: string): readonly [string, string] {
  let pair = digestPairs.get(family);
  if (pair === undefined) {
    pair = [`${family}-0`, `${family}-1`];
    digestPairs.set(family, pair);
  }
  return pair;
}

function flipped(last: string | null, family: string): string {
  const [zero, one] = digestsOf(family);
  return last === zero ? one : zero;
}

/**
 * Usage classes: none, or one finite budget crossed by exactly its limit. With `interchangeable`, only the
 * first: the shipped machine reads the three budgets only through `isSpendBudgetExhausted` (their "or"), which
 * a crossing keeps true for the rest of the run (usage only grows, and every abstract request estimate is at
 * least one token), so crossing any one of them fires the same transitions into states that differ in nothing else.
 */
function heavyUsages(context: LoopContext, model: VerifyModel, interchangeable: boolean): Array<[string, CallUsage]> {
  const { limits } = context;
  const heavy: Array<[string, CallUsage]> = [];
  if (Number.isFinite(limits.maxInputTokens))
    heavy.push(['input budget crossed', { ...NO_USAGE, inputTokens: limits.maxInputTokens }]);
  if (Number.isFinite(limits.maxOutputTokens))
    heavy.push(['output budget crossed', { ...NO_USAGE, outputTokens: limits.maxOutputTokens }]);
  // An unpriced model's spend counts as $0: its cost can never cross the budget.
  if (Number.isFinite(limits.maxCostUsd) && model.price !== undefined)
    heavy.push(['cost budget crossed', { ...NO_USAGE, costUsd: limits.maxCostUsd }]);
  return interchangeable ? heavy.slice(0, 1) : heavy;
}

function modelOutcomes(context: LoopContext, model: VerifyModel, options: OutcomeOptions): AbstractOutcome[] {
  const outcomes: AbstractOutcome[] = [];
  const at = within(context);
  const late = past(context);
  const modelCalls = model.callsPerDecision;
  const last = context.progress.lastStateDigest;
  const newObservation = context.nextRequestTokens === REQUEST_ESTIMATE + 1;
  const heavy = heavyUsages(context, model, options.collapseDuplicates);
  // Outcomes of the shipped machine that fire the same transitions into the same state as one already listed
  // (`options.collapseDuplicates`) are left out: a late reply of any kind meets the deadline guard, the first of
  // `model.responded`; a blocked call stops the run before the spend check, so a heavy one is like a light one.
  const collapse = options.collapseDuplicates;
  options.decisions.forEach((decisionClass, classIndex) => {
    const changed = flipped(last, decisionClass.family);
    const canRepeat =
      last !== null &&
      context.task.steps > 0 &&
      !newObservation &&
      decisionClass.canRepeat &&
      last.startsWith(`${decisionClass.family}-`);
    // An empty reply in a position to repeat the last one always does.
    const digests: Array<[string, string]> = !canRepeat
      ? [['state changed', changed]]
      : decisionClass.family === 'empty'
        ? [['state unchanged', last]]
        : [
            ['state unchanged', last],
            ['state changed', changed],
          ];
    const [lastLabel, lastDigest] = digests[digests.length - 1] as [string, string];
    const responded = (label: string, stateDigest: string, usage: CallUsage, time: number): AbstractOutcome => ({
      label: `model.responded: ${decisionClass.label}, ${label}`,
      event: {
        type: 'model.responded',
        usage,
        decision: decisionClass.decision,
        stateDigest,
        nextRequestTokens: REQUEST_ESTIMATE,
        at: time,
        modelCalls,
      },
      toolCalls: 0,
      ...(decisionClass.destructiveTool === undefined ? {} : { destructiveTool: decisionClass.destructiveTool }),
    });
    for (const [label, digest] of digests) outcomes.push(responded(label, digest, NO_USAGE, at));
    if (!(collapse && decisionClass.stopsBeforeSpendCheck === true)) {
      for (const [label, usage] of heavy) outcomes.push(responded(`${lastLabel}, ${label}`, lastDigest, usage, at));
    }
    if (late !== null && !(collapse && classIndex > 0))
      outcomes.push(responded(`${lastLabel}, after the deadline`, lastDigest, NO_USAGE, late));
  });
  const failed = (
    label: string,
    failure: 'transient' | 'fatal',
    retryDelayMs: number,
    time: number,
  ): AbstractOutcome => ({
    label: `model.failed: ${label}`,
    event: {
      type: 'model.failed',
      failure,
      message: failure === 'fatal' ? 'HTTP 401' : 'HTTP 503',
      status: failure === 'fatal' ? 401 : 503,
      retryDelayMs,
      at: time,
      modelCalls,
    },
    toolCalls: 0,
  });
  outcomes.push(
    failed('transient (503)', 'transient', WITHIN_RETRY_DELAY_MS, at),
    failed('fatal (401)', 'fatal', 0, at),
  );
  if (late !== null) {
    outcomes.push(
      failed('transient, backoff past the deadline', 'transient', context.limits.deadlineMs, at),
      failed('transient, after the deadline', 'transient', WITHIN_RETRY_DELAY_MS, late),
    );
  }
  const withSummaryRetries = summaryRetried(context, model, outcomes);
  const first = model.tools[0];
  if (first !== undefined)
    withSummaryRetries.push({
      label: `tool.withheld: ${first.name} (circuit open)`,
      event: { type: 'tool.withheld', tool: first.name, at },
      toolCalls: 0,
    });
  return withSummaryRetries;
}

/** Transport retries one in-place call (a judge, a context summary) can still make: its own attempts, within the run's. */
function inPlaceRetries(context: LoopContext, calls: number): number {
  const { maxTransportAttempts, maxTransportRetries } = context.limits;
  return Math.max(0, Math.min(calls * (maxTransportAttempts - 1), maxTransportRetries - context.transport.retries));
}

/**
 * A context summary before the call has transport attempts of its own. With no cap on the run's retries, they
 * are read by no guard, so every model outcome carries the most (the worst case for the call count); with a
 * cap, a summary that retried leaves fewer for later calls, so both variants are explored.
 */
function summaryRetried(context: LoopContext, model: VerifyModel, outcomes: AbstractOutcome[]): AbstractOutcome[] {
  const retries = model.callsPerDecision === 2 ? inPlaceRetries(context, 1) : 0;
  if (retries === 0) return outcomes;
  const retried = outcomes.map((outcome): AbstractOutcome => {
    const { event } = outcome;
    if (event.type !== 'model.responded' && event.type !== 'model.failed') return outcome;
    return {
      ...outcome,
      label: `${outcome.label}, after ${retries} summary transport retries`,
      event: { ...event, modelCalls: (event.modelCalls ?? 1) + retries, transportRetries: retries },
    };
  });
  return Number.isFinite(context.limits.maxTransportRetries) ? [...outcomes, ...retried] : retried;
}

const ROUND: ToolRoundSummary = Object.freeze({
  calls: 1,
  failedCalls: 0,
  timedOutCalls: 0,
  unknownOutcomeCalls: 0,
  allObservationsSeen: false,
  maxRepeatCount: 1,
  repeatedTool: null,
  requiredToolUnavailable: false,
  plan: null,
});

/** Tool calls one round runs at most: a full reply, or what the run's tool-call budget has left. */
export function fullRound(context: LoopContext): number {
  return Math.max(
    1,
    Math.min(context.limits.maxToolCallsPerReply, context.limits.maxToolCalls - context.usage.toolCalls),
  );
}

function toolOutcomes(context: LoopContext, model: VerifyModel, toolCallsBinding: boolean): AbstractOutcome[] {
  const full = fullRound(context);
  // When the tool-call budget cannot bind, the size of a round changes nothing but the count: only full rounds.
  const sizes = toolCallsBinding && full > 1 ? [1, full] : [full];
  const rounds: Array<[string, ToolRoundSummary, number]> = [];
  for (const calls of sizes) {
    const size = calls === 1 ? '1 call' : `${calls} calls`;
    rounds.push([`new results (${size})`, { ...ROUND, calls }, REQUEST_ESTIMATE + 1]);
    if (context.progress.repeatCount >= 1) {
      rounds.push([
        `results seen before (${size})`,
        {
          ...ROUND,
          calls,
          allObservationsSeen: true,
          maxRepeatCount: context.progress.repeatCount + 1,
          repeatedTool: model.tools[0]?.name ?? 'tool',
        },
        REQUEST_ESTIMATE,
      ]);
    }
  }
  rounds.push(['a call timed out', { ...ROUND, maxRepeatCount: 0, timedOutCalls: 1 }, REQUEST_ESTIMATE + 1]);
  // Only a side-effecting tool that may run can leave an outcome nobody knows.
  if (model.tools.some((tool) => !tool.idempotent && tool.verdicts.includes('allow'))) {
    rounds.push([
      'a side effect of unknown outcome',
      { ...ROUND, maxRepeatCount: 0, unknownOutcomeCalls: 1 },
      REQUEST_ESTIMATE + 1,
    ]);
  }
  rounds.push([
    'a required tool failed into an open circuit',
    { ...ROUND, maxRepeatCount: 0, failedCalls: 1, requiredToolUnavailable: true },
    REQUEST_ESTIMATE + 1,
  ]);
  if (Number.isFinite(context.limits.maxInputTokens))
    rounds.push([
      'results too large for the input budget',
      { ...ROUND, calls: full },
      context.limits.maxInputTokens + 1,
    ]);
  if (model.plan) {
    rounds.push([
      'plan updated, no item done',
      { ...ROUND, maxRepeatCount: 0, plan: { openItems: 1, progressed: false } },
      REQUEST_ESTIMATE,
    ]);
    if (context.progress.planActive)
      rounds.push([
        'plan item done',
        { ...ROUND, maxRepeatCount: 0, plan: { openItems: 1, progressed: true } },
        REQUEST_ESTIMATE,
      ]);
  }
  const at = within(context);
  const outcomes = rounds.map(([label, round, nextRequestTokens]): AbstractOutcome => ({
    label: `tools.completed: ${label}`,
    event: { type: 'tools.completed', round, nextRequestTokens, at },
    toolCalls: round.calls,
  }));
  const late = past(context);
  if (late !== null) {
    outcomes.push({
      label: 'tools.completed: new results, after the deadline',
      event: {
        type: 'tools.completed',
        round: { ...ROUND, calls: full },
        nextRequestTokens: REQUEST_ESTIMATE + 1,
        at: late,
      },
      toolCalls: full,
    });
  }
  return outcomes;
}

function evaluationOutcomes(
  context: LoopContext,
  model: VerifyModel,
  mayCallModel: boolean,
  options: OutcomeOptions,
): AbstractOutcome[] {
  const { progress } = context;
  const judges = mayCallModel ? (model.judgesPerTask[context.taskIndex] ?? 0) : 0;
  // The output evaluated is the last one exactly when the decision repeated the state.
  const outputDigest =
    progress.unchangedStateStreak > 1 && progress.lastOutputDigest !== null
      ? progress.lastOutputDigest
      : flipped(progress.lastOutputDigest, 'output');
  const sameReason = progress.lastEvaluatorReason ?? REASONS[0];
  const otherReason = sameReason === REASONS[0] ? REASONS[1] : REASONS[0];
  const evaluated = (
    label: string,
    passed: boolean,
    reason: string,
    time: number,
    extra: { usage?: CallUsage; retries?: number; review?: boolean } = {},
  ): AbstractOutcome => ({
    label: `evaluation.completed: ${label}`,
    event: {
      type: 'evaluation.completed',
      passed,
      reason,
      ...(extra.review === true ? { needsReview: true } : {}),
      outputDigest,
      usage: judges > 0 ? (extra.usage ?? NO_USAGE) : null,
      modelCalls: judges + (extra.retries ?? 0),
      transportRetries: extra.retries ?? 0,
      nextRequestTokens: REQUEST_ESTIMATE,
      at: time,
    },
    toolCalls: 0,
  });
  const at = within(context);
  const outcomes = [
    evaluated('passed', true, '', at),
    evaluated('failed for the same reason', false, sameReason, at),
    evaluated('failed for another reason', false, otherReason, at),
  ];
  // The run stops for a person; their decision continues it as a pass or a failure, both explored above.
  if (model.reviewsPerTask[context.taskIndex] === true)
    outcomes.push(evaluated('a person must review the output', false, otherReason, at, { review: true }));
  if (judges > 0) {
    // Each judge call has its own attempts; with a cap on the run's, the judges draw on what is left of it.
    const retries = inPlaceRetries(context, judges);
    if (retries > 0) {
      outcomes.push(
        evaluated(`passed after ${retries} judge transport retries`, true, '', at, { retries }),
        evaluated(`failed after ${retries} judge transport retries`, false, otherReason, at, { retries }),
      );
    }
    for (const [label, usage] of heavyUsages(context, model, options.collapseDuplicates))
      outcomes.push(evaluated(`failed, the judge's ${label}`, false, otherReason, at, { usage }));
  }
  const late = past(context);
  if (late !== null)
    outcomes.push(
      evaluated('passed, after the deadline', true, '', late),
      evaluated('failed, after the deadline', false, otherReason, late),
    );
  return outcomes;
}

function interruptionOutcomes(context: LoopContext, duringModelCall: boolean): AbstractOutcome[] {
  const spent = duringModelCall ? { modelCalls: 1 } : {};
  const outcomes: AbstractOutcome[] = [
    {
      label: 'run.cancelRequested',
      event: { type: 'run.cancelRequested', message: 'cancelled', at: within(context), ...spent },
      toolCalls: 0,
    },
    {
      label: 'run.faulted',
      event: { type: 'run.faulted', message: 'a hook threw', at: within(context) },
      toolCalls: 0,
    },
  ];
  const late = past(context);
  if (late !== null)
    outcomes.push({
      label: 'run.deadlineReached',
      event: { type: 'run.deadlineReached', at: late, ...spent },
      toolCalls: 0,
    });
  return outcomes;
}

/** The outcome lists of model calls, tool rounds and backoffs already made in one exploration (its `OutcomeOptions`), by what they read. */
interface CallOutcomeMemo {
  model: VerifyModel;
  limits: LoopContext['limits'];
  lists: Map<string, AbstractOutcome[]>;
  toolLists: Map<string, AbstractOutcome[]>;
  backoffLists: Map<string, AbstractOutcome[]>;
  evaluationLists: Map<string, AbstractOutcome[]>;
}

const callOutcomeMemos = new WeakMap<OutcomeOptions, CallOutcomeMemo>();

/**
 * What a model call's outcomes (`modelOutcomes`, then the interruptions) read of the context besides its limits,
 * as one string: the clock (`lastEventAt`, `startedAt`), whether the task has decided, whether the last request
 * was a new observation, the run's transport retries, and the last decision's digest (last: it is the only part that
 * is free text, so no two contexts that differ in what is read give one key).
 */
function callOutcomeKey(context: LoopContext): string {
  const digest = context.progress.lastStateDigest;
  return `${context.lastEventAt}|${context.startedAt}|${context.task.steps > 0 ? 1 : 0}${context.nextRequestTokens === REQUEST_ESTIMATE + 1 ? 1 : 0}|${context.transport.retries}|${digest === null ? '' : `=${digest}`}`;
}

/**
 * A model call's outcomes, then the interruptions: made once per exploration for each `callOutcomeKey` (most
 * states that wait for the model read the same few values), and shared by the states that read alike. The list
 * and its events are never changed by the exploration, the machine or the report.
 */
function callOutcomes(context: LoopContext, model: VerifyModel, options: OutcomeOptions): AbstractOutcome[] {
  const memo = outcomeMemo(context, model, options);
  const key = callOutcomeKey(context);
  let outcomes = memo.lists.get(key);
  if (outcomes === undefined) {
    outcomes = [...modelOutcomes(context, model, options), ...interruptionOutcomes(context, true)];
    memo.lists.set(key, outcomes);
  }
  return outcomes;
}

/** The memo of one exploration's outcome lists: made afresh for other options, another model or other limits. */
function outcomeMemo(context: LoopContext, model: VerifyModel, options: OutcomeOptions): CallOutcomeMemo {
  let memo = callOutcomeMemos.get(options);
  if (memo === undefined || memo.model !== model || memo.limits !== context.limits) {
    memo = {
      model,
      limits: context.limits,
      lists: new Map(),
      toolLists: new Map(),
      backoffLists: new Map(),
      evaluationLists: new Map(),
    };
    callOutcomeMemos.set(options, memo);
  }
  return memo;
}

/**
 * What a tool round's outcomes (`toolOutcomes`, then the interruptions) read of the context besides its limits, as one
 * string: the size of a full round (the run's tool calls so far), the repeat count, whether a plan is active, and
 * the clock (`lastEventAt`, `startedAt`).
 */
function toolOutcomeKey(context: LoopContext): string {
  const { progress } = context;
  return `${fullRound(context)}|${progress.repeatCount}|${progress.planActive ? 1 : 0}|${context.lastEventAt}|${context.startedAt}`;
}

/**
 * A tool round's outcomes, then the interruptions: made once per exploration for each `toolOutcomeKey` and shared by
 * the states that read alike, as a model call's are (see `callOutcomes`).
 */
function toolRoundOutcomes(context: LoopContext, model: VerifyModel, options: OutcomeOptions): AbstractOutcome[] {
  const memo = outcomeMemo(context, model, options);
  const key = toolOutcomeKey(context);
  let outcomes = memo.toolLists.get(key);
  if (outcomes === undefined) {
    outcomes = [...toolOutcomes(context, model, options.toolCallsBinding), ...interruptionOutcomes(context, false)];
    memo.toolLists.set(key, outcomes);
  }
  return outcomes;
}

/**
 * What an evaluation's outcomes (`evaluationOutcomes`, then the interruptions) read of the context besides its limits,
 * as one string: whether a judge may be called, the task (its judges and reviews), whether the decision repeated the
 * state, the clock (`lastEventAt`, `startedAt`), the run's transport retries, and the two texts: the last evaluator
 * reason by its length and the last output's digest last, so no two contexts that differ in what is read give one key.
 */
function evaluationOutcomeKey(context: LoopContext, mayCallModel: boolean): string {
  const { progress } = context;
  const reason = progress.lastEvaluatorReason;
  const digest = progress.lastOutputDigest;
  return `${mayCallModel ? 1 : 0}|${context.taskIndex}|${progress.unchangedStateStreak > 1 ? 1 : 0}|${context.lastEventAt}|${context.startedAt}|${context.transport.retries}|${reason === null ? '-' : `${reason.length}:${reason}`}|${digest === null ? '-' : `=${digest}`}`;
}

/**
 * An evaluation's outcomes, then the interruptions: made once per exploration for each `evaluationOutcomeKey` and
 * shared by the states that read alike, as a model call's are (see `callOutcomes`).
 */
function evaluateOutcomes(
  context: LoopContext,
  model: VerifyModel,
  mayCallModel: boolean,
  options: OutcomeOptions,
): AbstractOutcome[] {
  const memo = outcomeMemo(context, model, options);
  const key = evaluationOutcomeKey(context, mayCallModel);
  let outcomes = memo.evaluationLists.get(key);
  if (outcomes === undefined) {
    outcomes = [...evaluationOutcomes(context, model, mayCallModel, options), ...interruptionOutcomes(context, false)];
    memo.evaluationLists.set(key, outcomes);
  }
  return outcomes;
}

export interface OutcomeOptions {
  /** The run's tool-call budget can stop it: rounds of one call and full rounds both matter. */
  toolCallsBinding: boolean;
  decisions: readonly DecisionClass[];
  /**
   * Leave out outcomes that, in the shipped machine, fire the same transitions into an equivalent state as one
   * kept: the other spend budgets (see `heavyUsages`), late replies after the first, heavy blocked calls.
   */
  collapseDuplicates: boolean;
}

/** Every abstract outcome of the effect the snapshot waits for, plus the interruptions; none once done. */
export function abstractOutcomes(
  snapshot: Parameters<typeof getPendingEffect>[0],
  model: VerifyModel,
  options: OutcomeOptions,
): AbstractOutcome[] {
  const effect = getPendingEffect(snapshot);
  const { context } = snapshot;
  switch (effect.kind) {
    case 'done':
      return [];
    case 'start': {
      if (context.startedAt !== null) return [];
      const started = (label: string, nextRequestTokens: number): AbstractOutcome => ({
        label,
        event: { type: 'run.started', nextRequestTokens, at: ABSTRACT_START_AT },
        toolCalls: 0,
      });
      const outcomes = [started('run.started', REQUEST_ESTIMATE)];
      if (Number.isFinite(context.limits.maxInputTokens))
        outcomes.push(started('run.started: first request over the input budget', context.limits.maxInputTokens + 1));
      return [...outcomes, ...interruptionOutcomes(context, false)];
    }
    case 'callModel':
      return callOutcomes(context, model, options);
    case 'runTools':
      return toolRoundOutcomes(context, model, options);
    case 'evaluate':
      return evaluateOutcomes(context, model, effect.mayCallModel, options);
    case 'sleep':
      return backoffOutcomes(context, effect.until, model, options);
  }
}

/**
 * A backoff's outcomes, then the interruptions: made once per exploration for each wake-up time and clock
 * (`lastEventAt`, `startedAt`), all they read besides the limits, and shared by the states that read alike, as a
 * model call's are (see `callOutcomes`).
 */
function backoffOutcomes(
  context: LoopContext,
  until: number,
  model: VerifyModel,
  options: OutcomeOptions,
): AbstractOutcome[] {
  const memo = outcomeMemo(context, model, options);
  const key = `${until}|${context.lastEventAt}|${context.startedAt}`;
  let outcomes = memo.backoffLists.get(key);
  if (outcomes === undefined) {
    const late = past(context);
    outcomes = [
      {
        label: 'backoff.elapsed',
        event: { type: 'backoff.elapsed', at: Math.max(until, context.lastEventAt) },
        toolCalls: 0,
      },
      ...(late === null
        ? []
        : [
            {
              label: 'backoff.elapsed: overslept past the deadline',
              event: { type: 'backoff.elapsed', at: late } as LoopEvent,
              toolCalls: 0,
            },
          ]),
      ...interruptionOutcomes(context, false),
    ];
    memo.backoffLists.set(key, outcomes);
  }
  return outcomes;
}
