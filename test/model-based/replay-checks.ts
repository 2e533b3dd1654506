/**
 * What a replayed run must agree on with its abstract path: the route (the event and the resulting state
 * of every transition the driver made), the payload facts the trace shows for each step (decision kind,
 * usage and cost, retry delay, tool outcome and whether its observation was seen before, verdict), and the
 * machine's output for the path's final state.
 */
import type { LoopSnapshot } from '../../machines/pending-effect.js';
import type { MachineOutput, ToolRoundSummary } from '../../machines/types.js';
import type { RunResult, TraceEvent } from 'loopstate';
import type { LabelledPath, LabelledStep } from './loop-graph.js';

export type RoundClass =
  'ok-new' | 'ok-seen' | 'timeout' | 'unknown-outcome' | 'required-unavailable' | 'plan-open' | 'plan-progressed';

/** The abstract class of a tool round, read off its summary. */
export function roundClassOf(round: ToolRoundSummary): RoundClass {
  if (round.plan !== null) return round.plan.progressed ? 'plan-progressed' : 'plan-open';
  if (round.unknownOutcomeCalls > 0) return 'unknown-outcome';
  if (round.requiredToolUnavailable) return 'required-unavailable';
  if (round.allObservationsSeen) return 'ok-seen';
  return round.timedOutCalls > 0 ? 'timeout' : 'ok-new';
}

/** Named like the driver's `transition` trace records: `RUNNING.deciding`, `TERMINATED`. */
export function stateName(snapshot: LoopSnapshot): string {
  const value = snapshot.value;
  if (typeof value === 'string') return value;
  const [parent, child] = Object.entries(value)[0] ?? ['?', '?'];
  return `${parent}.${String(child)}`;
}

/**
 * The input-budget detail quotes the request estimate, and a backoff past the deadline the times around it, which
 * are the driver's own (the abstraction uses a class: a time "within" the deadline).
 */
function normalizeDetail(detail: string): string {
  return detail
    .replace(/~\d+ input tokens/, '~N input tokens')
    .replace(
      /start \d+ ms after the deadline \((\d+) ms; \d+ ms were left\)/,
      'start N ms after the deadline ($1 ms; N ms were left)',
    );
}

const SKIPPED_TASK_WARNING = /^task .+ failed \(.+\) and was skipped/;

/** The run's equivalents of the machine output's task counts. */
function taskCountsOf(result: RunResult): { completedTasks: number; failedTasks: number } {
  const skipped = result.warnings.filter((warning) => SKIPPED_TASK_WARNING.test(warning)).length;
  // A task failing for good under `stop` is the run's stop: retries_exhausted is reached only through FAILED.
  const failedForGood =
    result.stopReason === 'retries_exhausted' ||
    (result.stopReason === 'max_steps' && result.detail.includes('maxStepsPerTask'));
  return { completedTasks: Object.keys(result.taskOutputs).length, failedTasks: skipped + (failedForGood ? 1 : 0) };
}

function checkOutput(expected: MachineOutput, result: RunResult): string[] {
  const actual = {
    ...taskCountsOf(result),
    stopReason: result.stopReason,
    status: result.status,
    detail: normalizeDetail(result.detail),
    steps: result.steps,
    ...result.usage,
  };
  const wanted = {
    completedTasks: expected.completedTasks,
    failedTasks: expected.failedTasks,
    stopReason: expected.stopReason,
    status: expected.status,
    detail: normalizeDetail(expected.detail),
    steps: expected.steps,
    ...expected.usage,
  };
  return (Object.keys(wanted) as Array<keyof typeof wanted>)
    .filter((field) => actual[field] !== wanted[field])
    .map((field) => `${field}: runtime ${JSON.stringify(actual[field])}, machine ${JSON.stringify(wanted[field])}`);
}

function checkRoute(path: LabelledPath, result: RunResult): string[] {
  const targets = [...path.steps.slice(1).map((step) => step.state), path.state];
  const expected = path.steps.map(
    (step, index) => `${step.event.type} -> ${stateName(targets[index] as LoopSnapshot)}`,
  );
  const actual = result.trace.flatMap((event) =>
    event.type === 'transition' ? [`${event.event} -> ${event.to}`] : [],
  );
  const differs = expected.findIndex((entry, index) => actual[index] !== entry);
  if (differs === -1 && actual.length === expected.length) return [];
  const at = differs === -1 ? expected.length : differs;
  return [
    `route differs at step ${at} (${path.steps[at]?.label ?? 'after the end'}): runtime ${actual[at] ?? 'nothing'}, machine ${expected[at] ?? 'nothing'}`,
  ];
}

const TOOL_STATUS = {
  'ok-new': 'ok',
  'ok-seen': 'ok',
  timeout: 'timeout',
  'unknown-outcome': 'unknown_outcome',
  'required-unavailable': 'error',
  'plan-open': 'ok',
  'plan-progressed': 'ok',
} as const;

/** Payload facts of one step, from the trace records the driver wrote while producing it. */
function checkStep(
  step: LabelledStep,
  index: number,
  records: readonly TraceEvent[],
  seenObservations: Set<string>,
): string[] {
  const { event } = step;
  const problems: string[] = [];
  const fail = (what: string) => problems.push(`step ${index} (${step.label}): ${what}`);
  switch (event.type) {
    case 'model.responded': {
      const end = records.find((record) => record.type === 'step-end');
      if (end === undefined) fail('no step-end record');
      else if (
        end.decision !== event.decision.kind ||
        end.inputTokens !== event.usage.inputTokens ||
        end.outputTokens !== event.usage.outputTokens ||
        end.costUsd !== event.usage.costUsd
      ) {
        fail(`runtime decided ${end.decision} with ${end.inputTokens}/${end.outputTokens} tokens, $${end.costUsd}`);
      }
      break;
    }
    case 'model.failed': {
      const error = records.find((record) => record.type === 'model-error');
      if (error?.retryDelayMs !== event.retryDelayMs || error.message !== event.message)
        fail(`runtime failure ${JSON.stringify(error)}`);
      break;
    }
    case 'tools.completed': {
      const ends = records.filter((record) => record.type === 'tool-end');
      const wantedStatus = TOOL_STATUS[roundClassOf(event.round)];
      // Only a successful call is an observation; a failed one has no observation id.
      const observed = ends.filter((end) => end.status === 'ok');
      const allSeen = observed.length > 0 && observed.every((end) => seenObservations.has(end.observationId));
      if (
        ends.length !== event.round.calls ||
        ends.some((end) => end.status !== wantedStatus) ||
        allSeen !== event.round.allObservationsSeen
      ) {
        fail(
          `runtime round ${JSON.stringify(ends.map((end) => ({ status: end.status, seen: seenObservations.has(end.observationId) })))}`,
        );
      }
      break;
    }
    case 'evaluation.completed': {
      const end = records.find((record) => record.type === 'evaluation-end');
      if (end?.passed !== event.passed || (!event.passed && end.reason !== event.reason))
        fail(`runtime verdict ${JSON.stringify(end)}`);
      break;
    }
    default:
      break;
  }
  for (const record of records)
    if (record.type === 'tool-end' && record.observationId !== '') seenObservations.add(record.observationId);
  return problems;
}

/** Every disagreement between the run and its abstract path; empty when they agree. */
export function checkReplay(path: LabelledPath, result: RunResult): string[] {
  const route = checkRoute(path, result);
  // Per-step records are only aligned with the path when the route is.
  if (route.length > 0) return [...route, ...checkOutput(path.state.output as MachineOutput, result)];
  const segments: TraceEvent[][] = [[]];
  for (const event of result.trace) {
    if (event.type === 'transition') segments.push([]);
    else segments[segments.length - 1]?.push(event);
  }
  const seenObservations = new Set<string>();
  const payloads = path.steps.flatMap((step, index) => checkStep(step, index, segments[index] ?? [], seenObservations));
  return [...payloads, ...checkOutput(path.state.output as MachineOutput, result)];
}
