/**
 * Random limit configurations for property-based runs of the loop statechart, shaped like the
 * model-based `ModelConfiguration` so that `abstractOutcomes` produces the outcomes of each state.
 *
 * The model-based configurations keep light calls under every budget; here each budget is instead
 * sized to be crossed by the k-th light call (k drawn per budget, beyond `maxSteps` meaning "never"),
 * so runs end on cumulative spend as well as on a single heavy call.
 */
import fc from 'fast-check';
import { pricedUsage, type ModelConfiguration } from '../model-based/abstract-events.js';
import type { CallUsage, TaskFailurePolicy } from '../../machines/types.js';

/** The knobs a configuration is built from; kept flat so a shrunk counterexample reads at a glance. */
export interface ConfigurationKnobs {
  maxSteps: number;
  /** Decisions per task; at or past `maxSteps` it never binds. */
  maxStepsPerTask: number;
  /** Tool calls per run; past `maxSteps` rounds it never binds. */
  maxToolCalls: number;
  /** The built-in plan tool: rounds may update the plan, and only then can the plan stall. */
  plan: boolean;
  maxRetries: number;
  /** Attempts per model call against transport failures. */
  maxTransportAttempts: number;
  /** Transport retries of the whole run; Infinity (the default) most of the time. */
  maxTransportRetries: number;
  maxArgumentRepairs: number;
  repeatedToolCall: number;
  unchangedState: number;
  sameEvaluatorReason: number;
  duplicateObservation: number;
  planStall: number;
  sameParseError: number;
  onFailure: TaskFailurePolicy[];
  deadlineMs: number;
  requestEstimate: number;
  lightInputTokens: number;
  lightOutputTokens: number;
  /** The light call that crosses each budget; past `maxSteps`, light calls alone never do. */
  lightCallsToCross: { input: number; output: number; cost: number };
}

const threshold = fc.integer({ min: 2, max: 6 });

/** Light calls never cross a budget this far out (maxSteps is at most 25). */
const NEVER_CROSSED = 100;

/** Most budgets are never reached by light calls, so most runs are long; one in five is crossed by the k-th. */
const lightCallsToCross = fc.oneof(
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 30 }) },
  { weight: 4, arbitrary: fc.constant(NEVER_CROSSED) },
);

export const configurationKnobs: fc.Arbitrary<ConfigurationKnobs> = fc.record({
  maxSteps: fc.integer({ min: 1, max: 25 }),
  // Mostly out of reach, so most runs are bounded by maxSteps; sometimes a per-task or tool-call budget binds first.
  maxStepsPerTask: fc.oneof(
    { weight: 1, arbitrary: fc.integer({ min: 1, max: 10 }) },
    { weight: 3, arbitrary: fc.constant(NEVER_CROSSED) },
  ),
  maxToolCalls: fc.oneof(
    { weight: 1, arbitrary: fc.integer({ min: 1, max: 10 }) },
    { weight: 3, arbitrary: fc.constant(NEVER_CROSSED) },
  ),
  plan: fc.boolean(),
  maxRetries: fc.integer({ min: 0, max: 4 }),
  maxTransportAttempts: fc.integer({ min: 1, max: 4 }),
  maxTransportRetries: fc.oneof(
    { weight: 1, arbitrary: fc.integer({ min: 0, max: 6 }) },
    { weight: 2, arbitrary: fc.constant(Infinity) },
  ),
  maxArgumentRepairs: fc.integer({ min: 0, max: 2 }),
  repeatedToolCall: threshold,
  unchangedState: threshold,
  sameEvaluatorReason: threshold,
  duplicateObservation: threshold,
  planStall: fc.integer({ min: 2, max: 30 }),
  sameParseError: threshold,
  onFailure: fc.array(fc.constantFrom<TaskFailurePolicy>('stop', 'continue'), { minLength: 1, maxLength: 4 }),
  // "Within" outcomes sit 100 ms after the start and backoffs add 10 ms each, so short deadlines are reached mid-run.
  deadlineMs: fc.integer({ min: 120, max: 5_000 }),
  requestEstimate: fc.integer({ min: 50, max: 400 }),
  lightInputTokens: fc.integer({ min: 50, max: 400 }),
  lightOutputTokens: fc.integer({ min: 5, max: 60 }),
  lightCallsToCross: fc.record({
    input: lightCallsToCross,
    output: lightCallsToCross,
    cost: lightCallsToCross,
  }),
});

/**
 * Budgets crossed exactly by the k-th light call:
 * - input: after k − 1 calls the next estimate (+1 after a new observation) still fits; after k it does not,
 *   because the slack of half a light call is under one light call (light input ≥ 50 tokens);
 * - output: k light calls land exactly on the limit, which the guard counts as exhausted;
 * - cost: the limit sits half a light call's cost above k − 1 calls, far beyond the guard's 1e-9 slack.
 * Heavy calls cross one budget alone: input and output by their tokens, cost through a dearer price.
 */
export function configurationFrom(knobs: ConfigurationKnobs): ModelConfiguration {
  const light = pricedUsage(knobs.lightInputTokens, knobs.lightOutputTokens);
  const { input, output, cost } = knobs.lightCallsToCross;
  const maxInputTokens =
    (input - 1) * light.inputTokens + knobs.requestEstimate + 1 + Math.floor(light.inputTokens / 2);
  const maxOutputTokens = output * light.outputTokens;
  const maxCostUsd = light.costUsd * (cost - 0.5);
  const dearCall: CallUsage = { inputTokens: light.inputTokens, outputTokens: light.outputTokens, costUsd: maxCostUsd };
  return {
    name: `random: maxSteps ${knobs.maxSteps}, maxRetries ${knobs.maxRetries}, maxTransportAttempts ${knobs.maxTransportAttempts}, maxTransportRetries ${knobs.maxTransportRetries}, tasks ${knobs.onFailure.join('/')}`,
    limits: {
      maxSteps: knobs.maxSteps,
      maxRetries: knobs.maxRetries,
      maxTransportAttempts: knobs.maxTransportAttempts,
      maxTransportRetries: knobs.maxTransportRetries,
      maxArgumentRepairs: knobs.maxArgumentRepairs,
      deadlineMs: knobs.deadlineMs,
      maxInputTokens,
      maxOutputTokens,
      maxCostUsd,
      maxParallelTools: 2,
      maxToolResultBytes: 1_024,
      maxStepsPerTask: Math.min(knobs.maxStepsPerTask, knobs.maxSteps),
      modelCallTimeoutMs: 100_000,
      evaluatorTimeoutMs: 100_000,
      maxToolCalls: knobs.maxToolCalls,
      maxToolCallsPerReply: 10,
    },
    plan: knobs.plan,
    noProgress: {
      repeatedToolCall: knobs.repeatedToolCall,
      unchangedState: knobs.unchangedState,
      sameEvaluatorReason: knobs.sameEvaluatorReason,
      duplicateObservation: knobs.duplicateObservation,
      planStall: knobs.planStall,
      sameParseError: knobs.sameParseError,
    },
    tasks: knobs.onFailure.map((onFailure, index) => ({ id: `task-${index}`, onFailure })),
    requestEstimate: knobs.requestEstimate,
    lightUsage: light,
    heavyUsage: {
      input: pricedUsage(maxInputTokens, light.outputTokens),
      output: pricedUsage(light.inputTokens, maxOutputTokens),
      cost: dearCall,
    },
  };
}

export const configurations: fc.Arbitrary<ModelConfiguration> = configurationKnobs.map(configurationFrom);

/**
 * Events a run can consume before it must be final. Every term is a counter a guard caps:
 * - 1 `run.started`;
 * - ≤ maxSteps `model.responded` (the gate checks `steps < maxSteps` before every `deciding`, and steps are
 *   counted across the run), each followed by at most one `tools.completed` or `evaluation.completed`;
 * - transport retries, each a `model.failed` that schedules a backoff plus its `backoff.elapsed`: at most
 *   maxTransportAttempts − 1 per call (a reply resets the count), the calls being the decisions and one per task
 *   that fails for good, and at most maxTransportRetries in all;
 * - per task one more `model.failed` that ends the task or the run;
 * - 1 interruption (cancel, deadline, fault, withheld), which always ends the run.
 * Reflection retries and argument repairs cost a decision each, so they are inside the maxSteps terms.
 */
export function eventBound(config: ModelConfiguration): number {
  const { maxSteps, maxTransportAttempts, maxTransportRetries } = config.limits;
  const tasks = config.tasks.length;
  const retries = Math.min(maxTransportRetries, (maxTransportAttempts - 1) * (maxSteps + tasks));
  return 1 + 2 * maxSteps + 2 * retries + tasks + 1;
}
