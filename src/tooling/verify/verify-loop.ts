/**
 * `verify`: explores a loop's own statechart exhaustively under abstract outcomes and reports what it
 * proved: reachable states, coverage, stop reasons, worst-case spend, and each invariant violation with a
 * counterexample path.
 */
import type { LoopMachine } from '../../../machines/loop-machine.js';
import type { LoopLimits, StopReason } from '../../../machines/types.js';
import { STOP_REASONS } from '../../../machines/types.js';
import type { ResolvedConfig } from '../../internal.js';
import type { ModelPrice } from '../../index.js';
import {
  DEFAULT_STATE_BOUND,
  exploreLoop,
  StateSpaceTooLargeError,
  type ExploredGraph,
  type ExploredState,
  type ExploreProgress,
} from './explore.js';
import {
  findCycle,
  heaviestRun,
  pathThrough,
  pathTo,
  stateName,
  statesThatCannotFinish,
  type Cycle,
  type PathStep,
} from './graph-analysis.js';
import { verifyModelOf, type VerifyModel } from './verify-model.js';
import { unboundedWaits } from './unbounded-waits.js';
import { modelCallBound, spendFigures, toolCallBound, type WorstCase } from './worst-case.js';
import { groupDigits } from './group-digits.js';

export type ViolationKind =
  | 'unbounded_cycle'
  | 'cannot_terminate'
  | 'destructive_without_approval'
  | 'budget_crossed_twice'
  | 'unpriced_cost_budget'
  | 'unbounded_spend';

export interface Violation {
  kind: ViolationKind;
  message: string;
  /** The events, from the start of a run, that reach the violation. */
  counterexample: PathStep[];
  /** For a cycle: the events that repeat for ever after the counterexample. */
  cycle?: PathStep[];
}

export interface VerifyOptions {
  /** Explore with limits scaled down when the exact space is over `maxStates`. */
  scale?: boolean;
  maxStates?: number;
  /** Limits the loop asked for but createLoop refuses (e.g. maxSteps: Infinity), explored as given. */
  limits?: LoopLimits;
  notes?: readonly string[];
  /** The statechart explored; the loop machine unless a test breaks a guard on purpose. */
  machine?: LoopMachine;
  /** Called every few thousand states expanded, for a progress line (each exploration when `scale` starts over). */
  onProgress?: (progress: ExploreProgress) => void;
}

export interface ScaledLimits {
  maxSteps: number;
  maxStepsPerTask: number;
  maxToolCalls: number;
}

export interface VerifyReport {
  bounded: boolean;
  model: { id: string; price: ModelPrice | null };
  limits: LoopLimits;
  explored: {
    /** The limits the exploration used instead of the loop's own, when `--scale` had to; null when exact. */
    scaledTo: ScaledLimits | null;
    states: number;
    transitions: number;
    finalStates: number;
    elapsedMs: number;
    statesPerSecond: number;
    /** The reductions that merged equivalent states or left out outcomes equivalent to others, in words; none changes a figure. */
    reductions: string[];
  };
  coverage: { fired: number; total: number; percent: number; unfired: string[] };
  stopReasons: StopReason[];
  worstCase: WorstCase;
  violations: Violation[];
  /**
   * With `deadlineMs: Infinity`, the waits nothing bounds in time (each naming the option that would): a run
   * still takes finitely many steps, but one of these can make it last for ever. Empty with a deadline.
   */
  unboundedWaits: string[];
  notes: string[];
}

function scaledLimits(limits: LoopLimits, maxSteps: number): LoopLimits {
  const ratio = maxSteps / limits.maxSteps;
  return {
    ...limits,
    maxSteps,
    maxStepsPerTask: Math.max(1, Math.min(maxSteps, Math.round(limits.maxStepsPerTask * ratio))),
    maxToolCalls: Number.isFinite(limits.maxToolCalls)
      ? Math.max(1, Math.ceil(limits.maxToolCalls * ratio))
      : limits.maxToolCalls,
  };
}

function explore(
  model: VerifyModel,
  limits: LoopLimits,
  options: VerifyOptions,
): { graph: ExploredGraph; scaledTo: ScaledLimits | null } {
  const bound = options.maxStates ?? DEFAULT_STATE_BOUND;
  const exploreOptions = options.onProgress === undefined ? {} : { onProgress: options.onProgress };
  try {
    return {
      graph: exploreLoop(
        { ...model, input: { ...model.input, limits } },
        bound,
        options.machine,
        'compiled',
        exploreOptions,
      ),
      scaledTo: null,
    };
  } catch (error) {
    if (!(error instanceof StateSpaceTooLargeError) || options.scale !== true || !Number.isFinite(limits.maxSteps))
      throw error;
  }
  for (let maxSteps = Math.floor(limits.maxSteps / 2); maxSteps >= 2; maxSteps = Math.floor(maxSteps / 2)) {
    const scaled = scaledLimits(limits, maxSteps);
    try {
      const graph = exploreLoop(
        { ...model, input: { ...model.input, limits: scaled } },
        bound,
        options.machine,
        'compiled',
        exploreOptions,
      );
      return {
        graph,
        scaledTo: {
          maxSteps: scaled.maxSteps,
          maxStepsPerTask: scaled.maxStepsPerTask,
          maxToolCalls: scaled.maxToolCalls,
        },
      };
    } catch (error) {
      if (!(error instanceof StateSpaceTooLargeError)) throw error;
    }
  }
  throw new StateSpaceTooLargeError(bound);
}

/** The first edge on which the model answers and the run goes on: a path on which the model spends. */
function firstPaidDecision(graph: ExploredGraph): number {
  for (let edge = 0; edge < graph.edgeCount; edge += 1) {
    const source = graph.states[graph.edgeSource[edge] as number];
    if (
      source?.matches({ RUNNING: 'deciding' }) === true &&
      graph.states[graph.edgeTarget[edge] as number]?.status !== 'done'
    )
      return edge;
  }
  return 0;
}

function violationsOf(
  graph: ExploredGraph,
  model: VerifyModel,
  limits: LoopLimits,
  worstCase: WorstCase,
  cycle: Cycle | null,
): Violation[] {
  const violations: Violation[] = [];
  if (cycle !== null) {
    const switchedOff = (['maxSteps', 'maxStepsPerTask', 'maxToolCalls', 'maxTransportAttempts'] as const).filter(
      (name) => !Number.isFinite(limits[name]),
    );
    violations.push({
      kind: 'unbounded_cycle',
      message: `a run can go on for ever: the cycle below passes no budget guard that can stop it${switchedOff.length > 0 ? ` (${switchedOff.join(', ')} switched off with Infinity)` : ''}`,
      counterexample: cycle.prefix,
      cycle: cycle.cycle,
    });
  }
  const stuck = statesThatCannotFinish(graph);
  const firstStuck = stuck[0];
  if (firstStuck !== undefined) {
    violations.push({
      kind: 'cannot_terminate',
      message: `${stuck.length} reachable state(s) cannot reach TERMINATED, e.g. ${stateName(graph.states[firstStuck] as ExploredState)}`,
      counterexample: pathTo(graph, firstStuck),
    });
  }
  const destructive = graph.destructiveFindings[0];
  if (destructive !== undefined) {
    violations.push({
      kind: 'destructive_without_approval',
      message: `${destructive.detail}: the policy allows its access level; put 'destructive' in policy.requireApproval`,
      counterexample: pathThrough(graph, destructive.edge),
    });
  }
  const crossed = graph.budgetFindings[0];
  if (crossed !== undefined) {
    violations.push({
      kind: 'budget_crossed_twice',
      message: `a budget can be crossed by more than one call: ${crossed.detail}`,
      counterexample: pathThrough(graph, crossed.edge),
    });
  }
  const spending = () => pathThrough(graph, firstPaidDecision(graph));
  if (model.price === undefined && Number.isFinite(limits.maxCostUsd)) {
    violations.push({
      kind: 'unpriced_cost_budget',
      message: `cost budget with an unpriced model: "${model.modelId}" has no price, so every call counts as $0 against maxCostUsd ($${limits.maxCostUsd}) and the budget never stops a run; add the model to \`prices\` or set maxCostUsd: Infinity`,
      counterexample: spending(),
    });
  }
  const unbounded = (['inputTokens', 'outputTokens', 'costUsd'] as const).filter(
    (name) => worstCase[name].value === null && worstCase[name].formula.startsWith('unbounded'),
  );
  if (unbounded.length > 0) {
    violations.push({
      kind: 'unbounded_spend',
      message: `nothing bounds what a run spends (${unbounded.map((name) => `${name}: ${worstCase[name].formula}`).join('; ')}): any call of the run below may be of any size`,
      counterexample: spending(),
    });
  }
  return violations;
}

/**
 * Explores the loop whose resolved config is `config` and reports what holds.
 * @example
 * const report = verifyLoopConfig(loopConfigOf(loop)!);
 * if (!report.bounded) console.log(report.violations[0]?.message);
 */
/** A run holds at most what its tenant's budget has in all: the lesser of the two is its limit. */
function withTenant(limits: LoopLimits, config: ResolvedConfig): { limits: LoopLimits; note: string | null } {
  const tenant = config.tenant;
  if (tenant === undefined) return { limits, note: null };
  const capped = { ...limits };
  const names = (['maxCostUsd', 'maxInputTokens', 'maxOutputTokens'] as const).filter(
    (name) => tenant[name] !== undefined && (tenant[name] as number) < limits[name],
  );
  for (const name of names) capped[name] = tenant[name] as number;
  return {
    limits: capped,
    note:
      names.length === 0
        ? null
        : `tenant "${tenant.id}" caps what one run may hold: ${names.map((name) => `${name} ${capped[name]}`).join(', ')}`,
  };
}

export function verifyLoopConfig(config: ResolvedConfig, options: VerifyOptions = {}): VerifyReport {
  const tenant = withTenant(options.limits ?? config.limits, config);
  const limits = tenant.limits;
  const model = verifyModelOf(config, limits);
  const { graph, scaledTo } = explore(model, limits, options);
  const worstExplored = {
    modelCalls: heaviestRun(graph, graph.edgeModelCalls),
    toolCalls: heaviestRun(graph, graph.edgeToolCalls),
  };
  // Searched once: the figures below and the violations both ask.
  const cycle = findCycle(graph);
  const cyclic = cycle !== null;
  const modelBound = modelCallBound(model, limits);
  const toolBound = toolCallBound(limits);
  const explored = (
    figure: { total: number; path: PathStep[] },
    bound: { value: number; formula: string },
    name: string,
  ) => {
    if (cyclic)
      return { value: null, formula: `unbounded: a ${name} cycle passes no budget guard`, plusOneCall: false };
    // Scaled: the exploration's figure is for the smaller limits; the formula gives the real one.
    if (!Number.isFinite(bound.value))
      return {
        value: figure.total,
        formula: `${figure.total} on the worst explored run (no formula: a limit is Infinity, other limits bound it)`,
        plusOneCall: false,
      };
    if (scaledTo !== null)
      return {
        value: Number.isFinite(bound.value) ? bound.value : null,
        formula: `${bound.formula} (from the formula; explored at the scaled limits: ${figure.total})`,
        plusOneCall: false,
      };
    return {
      value: figure.total,
      formula: `${figure.total} on the worst explored run; bound ${bound.value} = ${bound.formula}`,
      plusOneCall: false,
      run: figure.path,
    };
  };
  const worstCase: WorstCase = {
    modelCalls: explored(worstExplored.modelCalls, modelBound, 'model-call'),
    toolCalls: explored(worstExplored.toolCalls, toolBound, 'tool-call'),
    ...spendFigures(model, limits),
  };
  const violations = violationsOf(graph, model, limits, worstCase, cycle);
  const reasons = new Set(
    graph.states.filter((snapshot) => snapshot.status === 'done').map((snapshot) => snapshot.context.stop?.reason),
  );
  const stopReasons = STOP_REASONS.filter((reason) => reasons.has(reason));
  const unfired = graph.transitions
    .filter((entry) => !graph.fired.has(entry.id))
    .map((entry) => `${entry.id}${entry.guard === null ? '' : ` [${entry.guard}]`}`);
  const notes = [...(options.notes ?? []), ...(tenant.note === null ? [] : [tenant.note])];
  if (scaledTo !== null)
    notes.push(
      `the exact space is over ${groupDigits(options.maxStates ?? DEFAULT_STATE_BOUND)} states: explored with maxSteps ${scaledTo.maxSteps} (not ${limits.maxSteps}), maxStepsPerTask ${scaledTo.maxStepsPerTask}, maxToolCalls ${scaledTo.maxToolCalls}; model and tool calls at the real limits come from the formulas`,
    );
  if (model.judgesPerTask.some((judges) => judges > 0))
    notes.push(
      'LLM judges are priced by their own model, which verify cannot see; their calls are counted and their spend is checked by the same budgets',
    );
  if (model.hasPolicyHook)
    notes.push(
      'policy.decide decides per call: every verdict (allow, deny, needs_approval) was explored for every tool',
    );
  const elapsedMs = Math.round(graph.elapsedMs);
  return {
    bounded: violations.length === 0,
    model: { id: model.modelId, price: model.price ?? null },
    limits,
    explored: {
      scaledTo,
      states: graph.states.length,
      transitions: graph.edgeCount,
      finalStates: reasons.size,
      elapsedMs,
      statesPerSecond: Math.round((graph.states.length / Math.max(graph.elapsedMs, 1)) * 1000),
      reductions: graph.reductions,
    },
    coverage: {
      fired: graph.transitions.length - unfired.length,
      total: graph.transitions.length,
      percent: Math.round((1000 * (graph.transitions.length - unfired.length)) / graph.transitions.length) / 10,
      unfired,
    },
    stopReasons,
    worstCase,
    violations,
    unboundedWaits: unboundedWaits(config, limits, stopReasons),
    notes,
  };
}
