/**
 * One random run of the pure loop statechart: at every resting state a choice picks one of the abstract
 * outcomes the state waits for (interruptions and run-ending outcomes weighted down, so long runs
 * happen), and every invariant of the exhaustive exploration is checked along the way. A violation throws
 * a `RunViolation` naming the outcomes sent so far, which fast-check reports with the shrunk input.
 */
import { createActor, initialTransition } from 'xstate';
import { loopMachine } from '../../machines/loop-machine.js';
import { getPendingEffect, type LoopSnapshot, type PendingEffect } from '../../machines/pending-effect.js';
import {
  STOP_REASONS,
  type CallUsage,
  type LoopContext,
  type LoopEvent,
  type MachineOutput,
  type StopReason,
} from '../../machines/types.js';
import {
  abstractOutcomes,
  modelInput,
  serializeLoopSnapshot,
  type AbstractOutcome,
  type ModelConfiguration,
} from '../model-based/abstract-events.js';
import type { TransitionTracer } from '../../src/tooling/verify/transition-catalog.js';
import { eventBound } from './random-configuration.js';
import { EXPECTED_STATUS } from '../support/statechart-fixtures.js';

export class RunViolation extends Error {
  override name = 'RunViolation';
}

export interface RunReport {
  events: number;
  bound: number;
  stopReason: StopReason;
  /** Labels of the outcomes sent, in order. */
  trail: string[];
  /** Events not among the outcomes a state waits for that the state nevertheless handled. */
  strayEventsHandled: number;
}

/**
 * Outcomes fall in four kinds, drawn with these chances (per 100): outcomes that move the task on (a new
 * tool call or a final reply, a new observation, a pass, a backoff on time); setbacks that a retry layer or
 * a no-progress signal absorbs (repeats, invalid or empty replies, evaluator failures, transient failures);
 * outcomes that end the run on their own terms (a denied, approval-gated or unavailable tool call, a fatal
 * failure, an unknown tool outcome); and interruptions, late events and heavy calls, which end it at once.
 */
const KIND_CHANCES = { progressing: 55, setback: 39, ending: 3, interrupting: 3 } as const;
type OutcomeKind = keyof typeof KIND_CHANCES;

const INTERRUPTING_LABELS = [
  /^run\.(cancelRequested|deadlineReached|faulted)/,
  /^tool\.withheld/,
  /:past/,
  /past-deadline/,
  /overslept/,
  /over-input-budget/,
  /:heavy-/,
];
const ENDING_LABELS = [
  /tools-denied/,
  /tools-approval/,
  /tools-unavailable/,
  /model\.failed:fatal/,
  /unknown-outcome/,
  /required-unavailable/,
];
const PROGRESSING_LABELS = [
  /^run\.started:fits/,
  /^model\.responded:(tools|final):changed:light:within/,
  /^tools\.completed:(ok-new|plan-progressed):within/,
  /^evaluation\.completed:pass:within/,
  /^backoff\.elapsed:on-time/,
];

function kindOf(label: string): OutcomeKind {
  if (INTERRUPTING_LABELS.some((pattern) => pattern.test(label))) return 'interrupting';
  if (ENDING_LABELS.some((pattern) => pattern.test(label))) return 'ending';
  if (PROGRESSING_LABELS.some((pattern) => pattern.test(label))) return 'progressing';
  return 'setback';
}

function kindDrawn(draw: number): OutcomeKind {
  let remaining = draw;
  for (const [kind, chance] of Object.entries(KIND_CHANCES) as Array<[OutcomeKind, number]>) {
    remaining -= chance;
    if (remaining < 0) return kind;
  }
  return 'progressing';
}

/**
 * The outcome `choice` lands on: `choice % 100` draws the kind (a state with no outcome of that kind falls
 * back to progressing, then setback outcomes), the rest of `choice` picks within it. Choice 0 is the first
 * progressing outcome, so shrinking leads towards plain runs.
 */
export function pickOutcome(outcomes: readonly AbstractOutcome[], choice: number): AbstractOutcome {
  const ofKind = (wanted: OutcomeKind) => outcomes.filter((outcome) => kindOf(outcome.label) === wanted);
  const candidates = [ofKind(kindDrawn(choice % 100)), ofKind('progressing'), ofKind('setback'), [...outcomes]];
  const pool = candidates.find((list) => list.length > 0) ?? [];
  const picked = pool[Math.floor(choice / 100) % pool.length];
  if (picked === undefined) throw new Error('no outcome to pick from');
  return picked;
}

/** One event of every type, stamped at the last observed time, for probing what a state ignores. */
function oneOfEachEvent(context: LoopContext): LoopEvent[] {
  const at = context.lastEventAt;
  const nextRequestTokens = context.nextRequestTokens;
  const round = {
    calls: 1,
    failedCalls: 0,
    timedOutCalls: 0,
    unknownOutcomeCalls: 0,
    allObservationsSeen: false,
    maxRepeatCount: 1,
    repeatedTool: null,
    requiredToolUnavailable: false,
    plan: null,
  };
  return [
    { type: 'run.started', nextRequestTokens, at },
    {
      type: 'model.responded',
      usage: { inputTokens: 1, outputTokens: 1, costUsd: 0 },
      decision: { kind: 'final' },
      stateDigest: 'stray',
      nextRequestTokens,
      at,
    },
    { type: 'model.failed', failure: 'transient', message: 'stray', retryDelayMs: 1, at },
    { type: 'tools.completed', round, nextRequestTokens, at },
    {
      type: 'evaluation.completed',
      passed: true,
      reason: '',
      outputDigest: 'stray',
      usage: null,
      modelCalls: 0,
      transportRetries: 0,
      nextRequestTokens,
      at,
    },
    { type: 'backoff.elapsed', at },
    { type: 'run.deadlineReached', at },
    { type: 'tool.withheld', tool: 'stray', at },
    { type: 'run.faulted', message: 'stray', at },
    { type: 'run.cancelRequested', message: 'stray', at },
  ];
}

function spendOf(event: LoopEvent): CallUsage | null {
  if (event.type === 'model.responded') return event.usage;
  if (event.type === 'evaluation.completed' || event.type === 'run.faulted') return event.usage ?? null;
  return null;
}

/** Every spend budget stands: the next request's estimate fits, output and cost are under their limits. */
function budgetsStand(context: LoopContext): boolean {
  const { usage, limits } = context;
  return (
    usage.inputTokens + context.nextRequestTokens <= limits.maxInputTokens &&
    usage.outputTokens < limits.maxOutputTokens &&
    usage.costUsd < limits.maxCostUsd
  );
}

export interface RunOptions {
  /** Extra outcomes beyond the abstract ones (e.g. an LLM judge's usage), appended to each state's list. */
  extraOutcomes?: (config: ModelConfiguration, snapshot: LoopSnapshot) => AbstractOutcome[];
}

/**
 * Sends outcomes picked by `choices` (cycled when they run out) until the run is final, checking the
 * invariants at every resting state, on every outcome and on the final state.
 */
export function runToEnd(
  config: ModelConfiguration,
  choices: readonly number[],
  tracer: TransitionTracer,
  options: RunOptions = {},
): RunReport {
  const { limits } = config;
  const bound = eventBound(config);
  const trail: string[] = [];
  const sent: LoopEvent[] = [];
  const fail = (message: string): never => {
    throw new RunViolation(`${message}\n  after ${trail.length} event(s): ${trail.join(' > ') || '(none)'}`);
  };
  const checkCounters = ({ context }: LoopSnapshot) => {
    const { task, transport, usage } = context;
    if (context.steps > limits.maxSteps) fail(`steps ${context.steps} > maxSteps ${limits.maxSteps}`);
    if (task.reflectionRetries > limits.maxRetries) fail(`reflection retries over maxRetries: ${JSON.stringify(task)}`);
    if (transport.consecutiveFailures > limits.maxTransportAttempts)
      fail(`a call failed more often than maxTransportAttempts: ${JSON.stringify(transport)}`);
    if (transport.retries > limits.maxTransportRetries)
      fail(`transport retries over maxTransportRetries: ${JSON.stringify(transport)}`);
    if (task.argumentRepairs > limits.maxArgumentRepairs)
      fail(`argument repairs ${task.argumentRepairs} > maxArgumentRepairs ${limits.maxArgumentRepairs}`);
    // Retries add across layers, never multiply: each call of the loop (a decision, or the call of a task failed for
    // good) makes at most maxTransportAttempts attempts, and all retries together at most maxTransportRetries; an LLM
    // judge's call is counted too, one per judged evaluation.
    const judgedEvaluations = sent.filter(
      (event) => event.type === 'evaluation.completed' && event.usage !== null,
    ).length;
    // A model call cut short by an interruption is counted without being a step.
    const interruptedCalls = sent.reduce(
      (sum, event) => sum + (event.type.startsWith('run.') && 'modelCalls' in event ? (event.modelCalls ?? 0) : 0),
      0,
    );
    const loopCalls = limits.maxSteps + context.failedTasks;
    const loopAttempts = Math.min(limits.maxTransportAttempts * loopCalls, loopCalls + limits.maxTransportRetries);
    const callBound = loopAttempts + judgedEvaluations + interruptedCalls;
    if (usage.modelCalls > callBound) fail(`modelCalls ${usage.modelCalls} > ${callBound}`);
    if (context.completedTasks + context.failedTasks > config.tasks.length) fail('more tasks finished than planned');
  };
  const effectOf = (snapshot: LoopSnapshot): PendingEffect => {
    try {
      return getPendingEffect(snapshot);
    } catch (error) {
      return fail(`getPendingEffect threw: ${String(error)}`);
    }
  };

  let [snapshot] = initialTransition(loopMachine, modelInput(config));
  let strayEventsHandled = 0;
  while (snapshot.status !== 'done') {
    const effect = effectOf(snapshot);
    if (effect.kind === 'done') fail(`effect done while the status is ${snapshot.status}`);
    if (snapshot.context.stop !== null) fail(`stop recorded before the end: ${JSON.stringify(snapshot.context.stop)}`);
    checkCounters(snapshot);
    if (effect.kind === 'callModel' && !budgetsStand(snapshot.context))
      fail(`callModel requested with a budget gone: ${JSON.stringify(snapshot.context.usage)}`);
    // Tool results only a further model call can read: tools run only while such a call is still allowed.
    if (effect.kind === 'runTools' && (snapshot.context.steps >= limits.maxSteps || !budgetsStand(snapshot.context)))
      fail('runTools requested when no model call may read the results');
    if (trail.length >= bound) fail(`not final after ${trail.length} events (bound ${bound})`);

    const outcomes = [...abstractOutcomes(config, snapshot), ...(options.extraOutcomes?.(config, snapshot) ?? [])];
    const waitedFor = new Set(outcomes.map((outcome) => outcome.event.type));
    const before = serializeLoopSnapshot(snapshot);
    for (const stray of oneOfEachEvent(snapshot.context).filter((event) => !waitedFor.has(event.type))) {
      let probe;
      try {
        probe = tracer.step(snapshot, stray);
      } catch (error) {
        return fail(`${stray.type} sent to ${JSON.stringify(snapshot.value)} threw: ${String(error)}`);
      }
      if (probe.fired.length > 0) {
        strayEventsHandled += 1;
        effectOf(probe.next);
      } else if (serializeLoopSnapshot(probe.next) !== before) {
        fail(`${stray.type} ignored by ${JSON.stringify(snapshot.value)} but changed the snapshot`);
      }
    }

    const outcome = pickOutcome(outcomes, choices[trail.length % choices.length] ?? 0);
    trail.push(outcome.label);
    sent.push(outcome.event);
    const traced = tracer.step(snapshot, outcome.event);
    const next = traced.next;
    if (traced.fired.length === 0) fail(`outcome ignored by ${JSON.stringify(snapshot.value)}`);
    let stopAssignments = 0;
    let previousStop = snapshot.context.stop;
    for (const microstep of traced.microsteps) {
      if (microstep.context.stop !== previousStop) stopAssignments += 1;
      previousStop = microstep.context.stop;
    }
    if (stopAssignments !== (next.status === 'done' ? 1 : 0))
      fail(`stop assigned ${stopAssignments} time(s) in a macrostep ending in ${next.status}`);
    const spend = spendOf(outcome.event);
    if (spend !== null) {
      if (!budgetsStand(snapshot.context)) fail(`spent with a budget gone: ${JSON.stringify(snapshot.context.usage)}`);
      const after = next.context.usage;
      if (after.inputTokens - spend.inputTokens > limits.maxInputTokens)
        fail('input tokens over by more than one call');
      if (after.outputTokens - spend.outputTokens > limits.maxOutputTokens)
        fail('output tokens over by more than one call');
      if (after.costUsd - spend.costUsd > limits.maxCostUsd) fail('cost over by more than one call');
    }
    snapshot = next;
  }

  checkCounters(snapshot);
  const { context } = snapshot;
  const output = snapshot.output as MachineOutput;
  const stop = context.stop;
  if (!snapshot.matches('TERMINATED')) fail(`final outside TERMINATED: ${JSON.stringify(snapshot.value)}`);
  if (stop === null) return fail('final without a stop record');
  if (!STOP_REASONS.includes(stop.reason)) fail(`unknown stop reason ${stop.reason}`);
  if (output.stopReason !== stop.reason || output.detail !== stop.detail) fail('output disagrees with the stop record');
  if (output.status !== EXPECTED_STATUS[stop.reason]) fail(`status ${output.status} for ${stop.reason}`);
  if (output.steps !== context.steps) fail('output steps disagree with the context');
  if (stop.reason === 'max_steps' && context.steps !== limits.maxSteps && context.task.steps < limits.maxStepsPerTask)
    fail(`max_steps at ${context.steps} steps, ${context.task.steps} in the task`);
  if (stop.reason === 'budget_exhausted' && budgetsStand(context) && context.usage.toolCalls < limits.maxToolCalls)
    fail('budget_exhausted with every budget standing');
  if (stop.reason === 'completed' && context.completedTasks + context.failedTasks !== config.tasks.length)
    fail('completed with tasks left');

  const finalKey = serializeLoopSnapshot(snapshot);
  // The pure transitions above and a live actor must agree: replay the run's events through one.
  const actor = createActor(loopMachine, { input: modelInput(config) }).start();
  for (const event of sent) actor.send(event);
  if (serializeLoopSnapshot(actor.getSnapshot()) !== finalKey) fail('an actor fed the same events ends elsewhere');
  actor.stop();
  for (const late of oneOfEachEvent(context)) {
    const probe = tracer.step(snapshot, late);
    if (
      probe.fired.length > 0 ||
      serializeLoopSnapshot(probe.next) !== finalKey ||
      JSON.stringify(probe.next.output) !== JSON.stringify(output)
    ) {
      fail(`${late.type} rewrote the finished run`);
    }
  }
  return { events: trail.length, bound, stopReason: stop.reason, trail, strayEventsHandled };
}
