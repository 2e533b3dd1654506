/**
 * Exhaustive model-based exploration of the loop statechart: every reachable resting state under each
 * configuration of `abstract-events.ts`, checked for termination, stop reasons, call bounds and budgets,
 * plus the transition definitions the exploration fires, which must be all of them. `replay.test.ts`
 * drives the real runtime along the shortest paths found here.
 */
import { createActor } from 'xstate';
import { describe, expect, it } from 'vitest';
import { loopMachine } from '../../machines/loop-machine.js';
import { getPendingEffect, type LoopSnapshot } from '../../machines/pending-effect.js';
import {
  STOP_REASONS,
  type LoopEvent,
  type MachineOutput,
  type NoProgressSignal,
  type Usage,
} from '../../machines/types.js';
import { MODEL_CONFIGURATIONS, modelInput, serializeLoopSnapshot, type ModelConfiguration } from './abstract-events.js';
import {
  exploreLoopGraph,
  getLoopShortestPaths,
  longestRun,
  shortestPathsOf,
  statesThatCannotFinish,
  type LoopGraph,
  type LabelledPath,
  type LoopGraphEdge,
} from './loop-graph.js';
import { createTransitionTracer } from '../../src/tooling/verify/transition-catalog.js';
import { EXPECTED_STATUS } from '../support/statechart-fixtures.js';

const graphs = new Map<ModelConfiguration, LoopGraph>();

function graphOf(config: ModelConfiguration): LoopGraph {
  let graph = graphs.get(config);
  if (graph === undefined) {
    graph = exploreLoopGraph(config);
    graphs.set(config, graph);
  }
  return graph;
}

/** At most this many offending items are quoted in a failure message. */
const QUOTED = 5;

function outputOf(snapshot: LoopSnapshot): MachineOutput {
  return snapshot.output as MachineOutput;
}

function finalStates(graph: LoopGraph): LoopSnapshot[] {
  return [...graph.states.values()].filter((snapshot) => snapshot.status === 'done');
}

const routes = new WeakMap<LoopGraph, Map<string, LabelledPath>>();

/** The shortest sequence of outcome labels reaching a state, for failure messages (computed on demand). */
function route(graph: LoopGraph, key: string): string {
  let paths = routes.get(graph);
  if (paths === undefined) {
    paths = new Map(shortestPathsOf(graph).map((path) => [path.target, path]));
    routes.set(graph, paths);
  }
  const labels = paths.get(key)?.steps.map((step) => step.label) ?? ['?'];
  return labels.join(' > ');
}

function describeEdge(graph: LoopGraph, edge: LoopGraphEdge): string {
  return `${route(graph, edge.source)} > ${edge.label} (fired ${edge.fired.join(' > ')})`;
}

const failedTargets = new WeakMap<LoopGraph, Set<string>>();

/** Whether the transition definition `id` targets FAILED (a task failing for good). */
function entersFailed(graph: LoopGraph, id: string): boolean {
  let ids = failedTargets.get(graph);
  if (ids === undefined) {
    ids = new Set(graph.transitions.filter((entry) => entry.targets.includes('loop.FAILED')).map((entry) => entry.id));
    failedTargets.set(graph, ids);
  }
  return ids.has(id);
}

function spendOf(edge: LoopGraphEdge): Pick<Usage, 'inputTokens' | 'outputTokens' | 'costUsd'> {
  const { event } = edge;
  const usage =
    event.type === 'model.responded' ? event.usage : event.type === 'evaluation.completed' ? event.usage : null;
  return usage ?? { inputTokens: 0, outputTokens: 0, costUsd: 0 };
}

describe.each(MODEL_CONFIGURATIONS)('loop statechart, $name', (config) => {
  const { limits } = config;

  it('explores a finite graph and prints its figures', () => {
    const graph = graphOf(config);
    const covered = new Set(graph.edges.flatMap((edge) => edge.fired));
    const reasons = new Map<string, number>();
    for (const snapshot of finalStates(graph)) {
      const reason = outputOf(snapshot).stopReason;
      reasons.set(reason, (reasons.get(reason) ?? 0) + 1);
    }
    console.log(
      [
        `[model-based] ${config.name}`,
        `  reachable states: ${graph.states.size} (final ${finalStates(graph).length}), edges: ${graph.edges.length}, longest run: ${longestRun(graph)} events`,
        `  transition definitions fired: ${covered.size} / ${graph.transitions.length} (${((100 * covered.size) / graph.transitions.length).toFixed(1)}%)`,
        `  final states by stop reason: ${[...reasons].map(([reason, count]) => `${reason} ${count}`).join(', ')}`,
      ].join('\n'),
    );
    expect(graph.states.size).toBeGreaterThan(1);
  });

  it('reaches a final state from every reachable state, and no run can go on forever', () => {
    const graph = graphOf(config);
    const stuck = statesThatCannotFinish(graph);
    expect(
      stuck.slice(0, QUOTED).map((key) => route(graph, key)),
      `${stuck.length} state(s) cannot reach a final state`,
    ).toEqual([]);
    // Acyclic: every sequence of outcomes ends, not only some sequence.
    expect(Number.isFinite(longestRun(graph)), 'the graph has a cycle').toBe(true);
  });

  it('ends every run in TERMINATED with exactly one stop reason and the matching status', () => {
    const graph = graphOf(config);
    const wrong: string[] = [];
    for (const [key, snapshot] of graph.states) {
      if (snapshot.status !== 'done') {
        if (snapshot.context.stop !== null) wrong.push(`stop recorded before the end: ${route(graph, key)}`);
        continue;
      }
      const output = outputOf(snapshot);
      const stop = snapshot.context.stop;
      if (!snapshot.matches('TERMINATED')) wrong.push(`final outside TERMINATED: ${route(graph, key)}`);
      if (stop === null) wrong.push(`final without a stop record: ${route(graph, key)}`);
      else if (output.stopReason !== stop.reason || output.detail !== stop.detail)
        wrong.push(`output disagrees with stop: ${route(graph, key)}`);
      if (!STOP_REASONS.includes(output.stopReason))
        wrong.push(`unknown stop reason ${output.stopReason}: ${route(graph, key)}`);
      if (output.status !== EXPECTED_STATUS[output.stopReason])
        wrong.push(`status ${output.status} for ${output.stopReason}: ${route(graph, key)}`);
      if (output.steps !== snapshot.context.steps) wrong.push(`output steps disagree: ${route(graph, key)}`);
    }
    expect(wrong.slice(0, QUOTED), `${wrong.length} violation(s)`).toEqual([]);
  });

  it('stops for reasons the final context bears out', () => {
    const graph = graphOf(config);
    const wrong: string[] = [];
    for (const [key, snapshot] of graph.states) {
      const { context } = snapshot;
      if (context.completedTasks + context.failedTasks > config.tasks.length)
        wrong.push(`more tasks finished than planned: ${route(graph, key)}`);
      if (snapshot.status !== 'done') continue;
      const { usage } = context;
      switch (outputOf(snapshot).stopReason) {
        case 'max_steps':
          if (context.steps !== limits.maxSteps && context.task.steps < limits.maxStepsPerTask)
            wrong.push(`max_steps before maxSteps or maxStepsPerTask: ${route(graph, key)}`);
          break;
        case 'budget_exhausted':
          if (
            usage.inputTokens + context.nextRequestTokens <= limits.maxInputTokens &&
            usage.outputTokens < limits.maxOutputTokens &&
            usage.costUsd < limits.maxCostUsd &&
            usage.toolCalls < limits.maxToolCalls
          ) {
            wrong.push(`budget_exhausted with every budget standing: ${route(graph, key)}`);
          }
          break;
        case 'completed':
          if (context.completedTasks + context.failedTasks !== config.tasks.length)
            wrong.push(`completed with tasks left: ${route(graph, key)}`);
          break;
        default:
          break;
      }
    }
    expect(wrong.slice(0, QUOTED), `${wrong.length} violation(s)`).toEqual([]);
  });

  it('records the stop in exactly one microstep of the macrostep that ends the run', () => {
    const graph = graphOf(config);
    const wrong = graph.edges.filter((edge) => {
      const ends = graph.states.get(edge.target)?.status === 'done';
      return edge.stopAssignments !== (ends ? 1 : 0);
    });
    expect(
      wrong.slice(0, QUOTED).map((edge) => describeEdge(graph, edge)),
      `${wrong.length} edge(s)`,
    ).toEqual([]);
  });

  it('names the pending effect of every resting state and handles every outcome of it', () => {
    const graph = graphOf(config);
    const wrong: string[] = [];
    for (const [key, snapshot] of graph.states) {
      try {
        const effect = getPendingEffect(snapshot);
        if ((effect.kind === 'done') !== (snapshot.status === 'done'))
          wrong.push(`effect ${effect.kind} for status ${snapshot.status}: ${route(graph, key)}`);
      } catch (error) {
        wrong.push(`getPendingEffect threw (${String(error)}): ${route(graph, key)}`);
      }
    }
    for (const edge of graph.edges) {
      if (edge.fired.length === 0) wrong.push(`outcome ignored: ${describeEdge(graph, edge)}`);
      if (edge.fired.some((id) => id.startsWith('unknown:')))
        wrong.push(`fired an unlisted transition: ${describeEdge(graph, edge)}`);
    }
    expect(wrong.slice(0, QUOTED), `${wrong.length} violation(s)`).toEqual([]);
  });

  it('bounds model calls: steps by maxSteps, each call by its transport attempts, all retries by the run-wide cap', () => {
    const graph = graphOf(config);
    const wrong: string[] = [];
    for (const [key, { context }] of graph.states) {
      const { task, transport, usage } = context;
      if (context.steps > limits.maxSteps) wrong.push(`steps ${context.steps} > maxSteps: ${route(graph, key)}`);
      if (task.reflectionRetries > limits.maxRetries)
        wrong.push(`reflection retries over maxRetries: ${route(graph, key)}`);
      if (transport.consecutiveFailures > limits.maxTransportAttempts)
        wrong.push(`a call failed more often than maxTransportAttempts: ${route(graph, key)}`);
      if (transport.retries > limits.maxTransportRetries)
        wrong.push(`transport retries over maxTransportRetries: ${route(graph, key)}`);
      if (task.argumentRepairs > limits.maxArgumentRepairs)
        wrong.push(`argument repairs over maxArgumentRepairs: ${route(graph, key)}`);
      // Each call counted once is a decision, the call of a task that failed for good, or the call in hand; the
      // rest are transport retries, at most maxTransportAttempts − 1 per call. Retries never multiply with
      // reflections: a reflection is a decision of its own.
      const calls = context.steps + context.failedTasks + 1;
      if (usage.modelCalls - transport.retries > calls)
        wrong.push(`modelCalls ${usage.modelCalls} counts more calls than ${calls}: ${route(graph, key)}`);
      if (transport.retries > calls * (limits.maxTransportAttempts - 1))
        wrong.push(
          `transport retries ${transport.retries} > ${calls} calls × ${limits.maxTransportAttempts - 1}: ${route(graph, key)}`,
        );
      const bound = limits.maxTransportAttempts * (limits.maxSteps + context.failedTasks);
      if (usage.modelCalls > bound) wrong.push(`modelCalls ${usage.modelCalls} > ${bound}: ${route(graph, key)}`);
    }
    expect(wrong.slice(0, QUOTED), `${wrong.length} violation(s)`).toEqual([]);
  });

  it('keeps modelCalls within maxTransportAttempts × maxSteps when no task failed for good', () => {
    const graph = graphOf(config);
    const bound = limits.maxTransportAttempts * limits.maxSteps;
    const over = [...graph.states].filter(
      ([, { context }]) => context.failedTasks === 0 && context.usage.modelCalls > bound,
    );
    expect(
      over.slice(0, QUOTED).map(([key]) => route(graph, key)),
      `${over.length} state(s)`,
    ).toEqual([]);
  });

  it('spends only while every budget stands, so no budget is passed by more than the call that crossed it', () => {
    const graph = graphOf(config);
    const wrong: string[] = [];
    for (const edge of graph.edges) {
      const spend = spendOf(edge);
      if (spend.inputTokens === 0 && spend.outputTokens === 0 && spend.costUsd === 0) continue;
      const before = (graph.states.get(edge.source) as LoopSnapshot).context;
      const after = (graph.states.get(edge.target) as LoopSnapshot).context.usage;
      if (before.usage.inputTokens + before.nextRequestTokens > limits.maxInputTokens)
        wrong.push(`input estimate over budget: ${describeEdge(graph, edge)}`);
      if (before.usage.outputTokens >= limits.maxOutputTokens)
        wrong.push(`output budget gone: ${describeEdge(graph, edge)}`);
      if (before.usage.costUsd >= limits.maxCostUsd) wrong.push(`cost budget gone: ${describeEdge(graph, edge)}`);
      if (after.inputTokens - spend.inputTokens > limits.maxInputTokens)
        wrong.push(`input tokens over by more than one call: ${describeEdge(graph, edge)}`);
      if (after.outputTokens - spend.outputTokens > limits.maxOutputTokens)
        wrong.push(`output tokens over by more than one call: ${describeEdge(graph, edge)}`);
      if (after.costUsd - spend.costUsd > limits.maxCostUsd)
        wrong.push(`cost over by more than one call: ${describeEdge(graph, edge)}`);
    }
    expect(wrong.slice(0, QUOTED), `${wrong.length} violation(s)`).toEqual([]);
  });
});

describe('transition coverage across the configurations', () => {
  it('fires every transition definition of the machine', () => {
    const fired = new Set<string>();
    for (const config of MODEL_CONFIGURATIONS)
      for (const edge of graphOf(config).edges) for (const id of edge.fired) fired.add(id);
    const all = graphOf(MODEL_CONFIGURATIONS[0] as ModelConfiguration).transitions;
    const unfired = all.filter((entry) => !fired.has(entry.id));
    const percent = ((100 * (all.length - unfired.length)) / all.length).toFixed(1);
    console.log(
      `[model-based] transition definitions covered: ${all.length - unfired.length} / ${all.length} (${percent}%)`,
    );
    expect(
      unfired.map((entry) => `${entry.id} [guard ${entry.guard ?? 'none'}] -> ${entry.targets.join(', ')}`),
      'transition definitions never taken in any configuration',
    ).toEqual([]);
  });
});

/** The signal each no-progress stop state checks; the detail of its stop should name it. */
const STOPPING_SIGNAL: Record<string, NoProgressSignal> = {
  'loop.RUNNING.gateStalled|always|0': 'plan_stall',
  'loop.RUNNING.routingEvaluation|always|4': 'same_evaluator_reason',
};

describe('stop details and task counts across the configurations', () => {
  // Was a known defect: the stop named the signal of the earlier nudge (progress.lastSignal) instead.
  it('a no_progress stop names the signal that stopped the run', () => {
    const wrong: string[] = [];
    let checked = 0;
    for (const config of MODEL_CONFIGURATIONS) {
      const graph = graphOf(config);
      for (const edge of graph.edges) {
        const stopping = edge.fired.map((id) => STOPPING_SIGNAL[id]).find((signal) => signal !== undefined);
        if (stopping === undefined) continue;
        checked += 1;
        const detail = (graph.states.get(edge.target) as LoopSnapshot).context.stop?.detail ?? '';
        if (!detail.includes(`: ${stopping}: `))
          wrong.push(`${detail} (expected ${stopping}): ${describeEdge(graph, edge)}`);
      }
    }
    expect(checked).toBeGreaterThan(0);
    expect(wrong.slice(0, QUOTED), `${wrong.length} stop(s)`).toEqual([]);
  });

  it('stops the run on a fatal model failure, never through FAILED, whatever the task failure policy', () => {
    const wrong: string[] = [];
    for (const config of MODEL_CONFIGURATIONS) {
      const graph = graphOf(config);
      for (const edge of graph.edges) {
        if (edge.event.type !== 'model.failed' || edge.event.failure !== 'fatal') continue;
        const target = graph.states.get(edge.target) as LoopSnapshot;
        const within = edge.event.at - (target.context.startedAt ?? 0) < config.limits.deadlineMs;
        const reason = target.status === 'done' ? outputOf(target).stopReason : null;
        if (
          reason !== (within ? 'fatal_error' : 'deadline_exceeded') ||
          edge.fired.some((id) => entersFailed(graph, id))
        ) {
          wrong.push(`${reason ?? 'not stopped'}: ${describeEdge(graph, edge)}`);
        }
      }
    }
    expect(wrong.slice(0, QUOTED), `${wrong.length} edge(s)`).toEqual([]);
  });

  it('counts every task that failed for good in failedTasks, whether the run stops or skips it', () => {
    const wrong: string[] = [];
    for (const config of MODEL_CONFIGURATIONS) {
      const graph = graphOf(config);
      for (const edge of graph.edges) {
        const entered = edge.fired.filter((id) => entersFailed(graph, id)).length;
        const before = (graph.states.get(edge.source) as LoopSnapshot).context.failedTasks;
        const after = (graph.states.get(edge.target) as LoopSnapshot).context.failedTasks;
        if (after - before !== entered)
          wrong.push(
            `failedTasks ${before} -> ${after} entering FAILED ${entered} time(s): ${describeEdge(graph, edge)}`,
          );
      }
      for (const snapshot of finalStates(graph)) {
        const { context } = snapshot;
        if (
          outputOf(snapshot).stopReason === 'retries_exhausted' &&
          (context.failedTasks < 1 || context.failure?.detail !== context.stop?.detail)
        ) {
          wrong.push(`retries_exhausted without its failed task: failedTasks ${context.failedTasks}`);
        }
      }
    }
    expect(wrong.slice(0, QUOTED), `${wrong.length} violation(s)`).toEqual([]);
  });

  it('counts the unchanged-state streak like the other streaks: a new digest starts it at 1', () => {
    const wrong: string[] = [];
    for (const config of MODEL_CONFIGURATIONS) {
      const graph = graphOf(config);
      for (const edge of graph.edges) {
        if (edge.event.type !== 'model.responded') continue;
        const before = (graph.states.get(edge.source) as LoopSnapshot).context.progress;
        const after = (graph.states.get(edge.target) as LoopSnapshot).context.progress;
        const expected = edge.event.stateDigest === before.lastStateDigest ? before.unchangedStateStreak + 1 : 1;
        if (after.unchangedStateStreak !== expected)
          wrong.push(`streak ${after.unchangedStateStreak}, expected ${expected}: ${describeEdge(graph, edge)}`);
      }
    }
    expect(wrong.slice(0, QUOTED), `${wrong.length} edge(s)`).toEqual([]);
  });

  it('never rewrites a finished run: interruptions sent to a final snapshot change nothing', () => {
    const wrong: string[] = [];
    // The tracer's `machine.transition` with one reused actor scope: what `transition()` does, minus a scope per call.
    const tracer = createTransitionTracer(loopMachine);
    for (const config of MODEL_CONFIGURATIONS) {
      const graph = graphOf(config);
      for (const [key, snapshot] of graph.states) {
        if (snapshot.status !== 'done') continue;
        const at = snapshot.context.lastEventAt + 1;
        const late: LoopEvent[] = [
          { type: 'run.cancelRequested', message: 'late', at },
          { type: 'run.deadlineReached', at },
          { type: 'run.faulted', message: 'late', at },
          { type: 'tool.withheld', tool: 'late', at },
        ];
        for (const event of late) {
          const { next, fired } = tracer.step(snapshot, event);
          if (
            fired.length > 0 ||
            serializeLoopSnapshot(next) !== key ||
            JSON.stringify(next.output) !== JSON.stringify(snapshot.output)
          ) {
            wrong.push(`${event.type} rewrote: ${route(graph, key)}`);
          }
        }
      }
    }
    expect(wrong.slice(0, QUOTED), `${wrong.length} rewrite(s)`).toEqual([]);
  });
});

describe('reusable paths', () => {
  const config = MODEL_CONFIGURATIONS[0] as ModelConfiguration;

  it('matches the states of xstate/graph getShortestPaths on the untraced machine', () => {
    const graph = graphOf(config);
    const targets = new Set(getLoopShortestPaths(config).map((path) => serializeLoopSnapshot(path.state)));
    expect(targets.size).toBe(graph.states.size);
    expect(
      [...graph.states.keys()]
        .filter((key) => !targets.has(key))
        .slice(0, QUOTED)
        .map((key) => route(graph, key)),
    ).toEqual([]);
  });

  it('replays every shortest path through an actor to its target state', () => {
    const graph = graphOf(config);
    const paths = shortestPathsOf(graph);
    expect(paths.length).toBe(graph.states.size);
    const mismatched: string[] = [];
    for (const path of paths) {
      const actor = createActor(loopMachine, { input: modelInput(config) }).start();
      for (const step of path.steps) actor.send(step.event);
      if (serializeLoopSnapshot(actor.getSnapshot()) !== path.target)
        mismatched.push(path.steps.map((step) => step.label).join(' > '));
      actor.stop();
    }
    expect(mismatched.slice(0, QUOTED), `${mismatched.length} path(s)`).toEqual([]);
  });
});

describe('known defects (reported, not fixed here: flip to `it` once fixed)', () => {
  // isCostBudgetExhausted allows 1e-9 of float drift, describeStop compares without it: a run stopped by a
  // cost of 0.7 + 0.1 (0.7999999999999999) against maxCostUsd 0.8 is said to have run out of input tokens.
  it('a budget stop caused by cost names the cost budget', () => {
    const config = MODEL_CONFIGURATIONS[0] as ModelConfiguration;
    const actor = createActor(loopMachine, {
      input: { ...modelInput(config), limits: { ...config.limits, maxCostUsd: 0.8 } },
    }).start();
    const decision = {
      kind: 'tool_calls',
      calls: 1,
      invalidCalls: 0,
      parseError: null,
      deniedCalls: 0,
      approvalCalls: 0,
      unavailableCalls: 0,
      refusedCalls: 0,
      blockedTool: null,
    } as const;
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
    actor.send({ type: 'run.started', at: 0, nextRequestTokens: 10 });
    actor.send({
      type: 'model.responded',
      at: 1,
      nextRequestTokens: 10,
      stateDigest: 'a',
      decision,
      usage: { inputTokens: 1, outputTokens: 1, costUsd: 0.7 },
    });
    actor.send({ type: 'tools.completed', at: 2, nextRequestTokens: 10, round });
    actor.send({
      type: 'model.responded',
      at: 3,
      nextRequestTokens: 10,
      stateDigest: 'b',
      decision,
      usage: { inputTokens: 1, outputTokens: 1, costUsd: 0.1 },
    });
    const output = outputOf(actor.getSnapshot());
    expect(output.stopReason).toBe('budget_exhausted');
    expect(output.detail).toMatch(/^cost /);
  });
});
