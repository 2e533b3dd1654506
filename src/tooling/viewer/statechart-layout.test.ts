import { describe, expect, it } from 'vitest';
import { loopMachine } from '../../../machines/index.js';
import { routeOf, statechartGraph } from './statechart-graph.js';
import { LAYOUT_DATA_FILE, layoutStatechart, statechartLayoutModule } from '../../../scripts/layout-statechart.js';
import { readFileSync } from 'node:fs';
import { shippedStatechartLayout } from './shipped-statechart-layout.js';
import { statechartSvg } from './statechart-svg.js';

const graph = statechartGraph(loopMachine);

/** Every state node id of the machine, walked independently of the graph module. */
function machineStateIds(): string[] {
  const ids: string[] = [];
  const visit = (node: { id: string; states: Record<string, unknown> }) => {
    for (const child of Object.values(node.states) as { id: string; states: Record<string, unknown> }[]) {
      ids.push(child.id.replace(/^loop\./, ''));
      visit(child);
    }
  };
  visit(loopMachine.root as unknown as { id: string; states: Record<string, unknown> });
  return ids;
}

describe('statechartGraph', () => {
  it('has every state node of the machine, with compound states holding their children', () => {
    expect(graph.states.map((state) => state.id).sort()).toEqual(machineStateIds().sort());
    expect(graph.states.find((state) => state.id === 'RUNNING')).toMatchObject({ kind: 'compound', initial: 'RUNNING.gate' });
    expect(graph.states.find((state) => state.id === 'TERMINATED')).toMatchObject({ kind: 'final', parent: null });
  });

  it('has the transitions, with their events and guards', () => {
    const responded = graph.edges.find((edge) => edge.id === 'RUNNING.deciding->RUNNING.acting');
    expect(responded).toMatchObject({ events: ['model.responded'], eventless: false });
    const gate = graph.edges.find((edge) => edge.id === 'RUNNING.gate->TERMINATED');
    expect(gate?.eventless).toBe(true);
    expect(gate?.transitions.map((transition) => transition.guard)).toEqual(['isDeadlineExceeded', 'isStepLimitReached', 'isSpendBudgetExhausted']);
    expect(graph.edges.find((edge) => edge.id === 'RUNNING.repairingArguments->RUNNING.decisionSignalled')?.transitions[0]?.guard).toBe('canRepairArguments and hasDecisionSignal');
  });
});

describe('routeOf', () => {
  it('finds the eventless hops between two recorded resting states', () => {
    expect(routeOf(graph, 'READY', 'run.started', 'RUNNING.deciding')).toEqual(['READY->RUNNING', 'RUNNING.gate->RUNNING.deciding']);
    expect(routeOf(graph, 'RUNNING.deciding', 'model.failed', 'RETRY.backingOff')).toEqual([
      'RUNNING.deciding->RUNNING.routingFailure',
      'RUNNING.routingFailure->RUNNING.backoffChecked',
      'RUNNING.backoffChecked->RETRY.backingOff',
    ]);
    // An interruption defined on the parent state.
    expect(routeOf(graph, 'RUNNING.acting', 'run.cancelRequested', 'TERMINATED')).toEqual(['RUNNING->TERMINATED']);
  });

  it('takes the route through a hinted state, and the shortest without one', () => {
    expect(routeOf(graph, 'RUNNING.evaluating', 'evaluation.completed', 'TERMINATED')).toEqual(['RUNNING.evaluating->RUNNING.routingEvaluation', 'RUNNING.routingEvaluation->TERMINATED']);
    expect(routeOf(graph, 'RUNNING.evaluating', 'evaluation.completed', 'TERMINATED', 'SUCCESS')).toEqual([
      'RUNNING.evaluating->RUNNING.routingEvaluation',
      'RUNNING.routingEvaluation->SUCCESS',
      'SUCCESS->TERMINATED',
    ]);
    expect(routeOf(graph, 'RUNNING.deciding', 'model.responded', 'RUNNING.deciding', 'RUNNING.repairingArguments')).toEqual([
      'RUNNING.deciding->RUNNING.repairingArguments',
      'RUNNING.repairingArguments->RUNNING.gate',
      'RUNNING.gate->RUNNING.deciding',
    ]);
  });

  it('returns null for a transition this statechart cannot make', () => {
    expect(routeOf(graph, 'TERMINATED', 'model.responded', 'READY')).toBeNull();
  });
});

describe('layoutStatechart', () => {
  it('places every state node, children inside their parents, and routes every edge', async () => {
    const layout = await layoutStatechart(graph);
    expect(layout.states.map((state) => state.id).sort()).toEqual(machineStateIds().sort());
    const byId = new Map(layout.states.map((state) => [state.id, state]));
    for (const state of layout.states) {
      for (const value of [state.x, state.y, state.width, state.height]) expect(Number.isFinite(value)).toBe(true);
      expect(state.width).toBeGreaterThan(0);
      expect(state.x + state.width).toBeLessThanOrEqual(layout.width);
      const parent = state.parent === null ? undefined : byId.get(state.parent);
      if (parent !== undefined) {
        expect(state.x).toBeGreaterThanOrEqual(parent.x);
        expect(state.y).toBeGreaterThanOrEqual(parent.y);
        expect(state.x + state.width).toBeLessThanOrEqual(parent.x + parent.width);
        expect(state.y + state.height).toBeLessThanOrEqual(parent.y + parent.height);
      }
    }
    for (const edge of layout.edges) expect(edge.points.length, edge.id).toBeGreaterThanOrEqual(2);
    // Compound states do not overlap their siblings.
    const top = layout.states.filter((state) => state.parent === null);
    for (const a of top) for (const b of top) if (a !== b) expect(a.x + a.width <= b.x || b.x + b.width <= a.x || a.y + a.height <= b.y || b.y + b.height <= a.y, `${a.id} overlaps ${b.id}`).toBe(true);
    const svg = statechartSvg(layout, { 'READY->RUNNING': 1 });
    for (const state of layout.states) expect(svg).toContain(`data-state="${state.id}"`);
    expect(svg).toContain('class="edge taken" data-edge="READY-&gt;RUNNING" data-count="1"');
  });
});

describe('the shipped layout', () => {
  it('is the layout of the machine as it is now (run `npm run layout` after changing the statechart)', async () => {
    expect(readFileSync(LAYOUT_DATA_FILE, 'utf8')).toBe(await statechartLayoutModule());
  });

  it('places every state of the machine', () => {
    expect(shippedStatechartLayout().states.map((state) => state.id).sort()).toEqual(machineStateIds().sort());
  });
});
