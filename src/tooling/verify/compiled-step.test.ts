/**
 * The compiled macrostep explores exactly what XState's `machine.transition` does: the same states in the same
 * order, the same edges and spend, the same transitions fired, the same findings, on every example loop and
 * the 22-tool triage loop of the benchmark, and on a statechart given other guards.
 */
import { describe, expect, it } from 'vitest';
import { createMachine } from 'xstate';
import incidentLoop from '../../../examples/incident.js';
import orderStatusLoop from '../../../examples/order-status.js';
import toolFeedbackLoop from '../../../examples/tool-feedback.js';
import weeklyReportLoop from '../../../examples/weekly-report.js';
import triageLoop from '../../../bench/triage-loop.js';
import { loopMachine, type LoopMachine } from '../../../machines/loop-machine.js';
import type { LoopLimits } from '../../../machines/types.js';
import { compileMachine } from './compiled-step.js';
import { exploreLoop, type ExploredGraph } from './explore.js';
import { resolveForVerify } from './resolve-for-verify.js';
import { verifyModelOf } from './verify-model.js';

function explored(loop: unknown, limits: Partial<LoopLimits>, machine: LoopMachine = loopMachine) {
  const { config } = resolveForVerify(loop);
  const model = verifyModelOf(config, { ...config.limits, ...limits });
  return (stepper: 'compiled' | 'xstate') => exploreLoop(model, 1_000_000, machine, stepper);
}

/** Everything verify reads off a graph, but its time. */
function figures(graph: ExploredGraph) {
  return {
    keys: graph.keys,
    states: graph.states.map((snapshot) => ({
      value: snapshot.value,
      status: snapshot.status,
      context: snapshot.context,
      output: snapshot.output,
    })),
    edges: [
      graph.parentEdge,
      graph.edgeSource,
      graph.edgeTarget,
      graph.edgeOutcome,
      graph.edgeModelCalls,
      graph.edgeToolCalls,
    ].map((array) => [...array]),
    fired: [...graph.fired].sort(),
    budgetFindings: graph.budgetFindings,
    destructiveFindings: graph.destructiveFindings,
    reductions: graph.reductions,
  };
}

describe('the compiled macrostep', () => {
  const cases: [string, unknown, Partial<LoopLimits>][] = [
    ['order-status', orderStatusLoop, {}],
    ['weekly-report', weeklyReportLoop, {}],
    ['tool-feedback', toolFeedbackLoop, { maxSteps: 6 }],
    ['incident', incidentLoop, { maxSteps: 8 }],
    ['triage (22 tools)', triageLoop, { maxSteps: 6 }],
  ];
  it.each(cases)(
    'explores %s exactly as XState does',
    (_name, loop, limits) => {
      const explore = explored(loop, limits);
      const compiled = explore('compiled');
      expect(compiled.keys.length).toBeGreaterThan(100);
      expect(figures(compiled)).toEqual(figures(explore('xstate')));
    },
    120_000,
  );

  it('explores a statechart given other guards as XState does', () => {
    const broken = loopMachine.provide({ guards: { isStepLimitReached: () => false } });
    const explore = explored(orderStatusLoop, { maxSteps: 3 }, broken);
    expect(figures(explore('compiled'))).toEqual(figures(explore('xstate')));
  }, 120_000);

  it('declines a statechart it does not cover, which is then explored through XState', () => {
    expect(compileMachine(loopMachine)).not.toBeNull();
    const parallel = createMachine({ type: 'parallel', states: { a: {}, b: {} } });
    expect(compileMachine(parallel as unknown as LoopMachine)).toBeNull();
  });
});
