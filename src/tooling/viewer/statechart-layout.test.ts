import { describe, expect, it } from 'vitest';
import { loopMachine } from '../../../machines/index.js';
import { routeOf, statechartGraph } from './statechart-graph.js';
import { LAYOUT_DATA_FILE, layoutStatechart, statechartLayoutModule } from '../../../scripts/layout-statechart.js';
import { readFileSync } from 'node:fs';
import { shippedStatechartLayout } from './shipped-statechart-layout.js';
import { statechartSvg } from './statechart-svg.js';
import { edgeCrossings } from './edge-crossings.js';
import { edgeDrawings } from './statechart-layout.js';

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
    expect(graph.states.find((state) => state.id === 'RUNNING')).toMatchObject({
      kind: 'compound',
      initial: 'RUNNING.gate',
    });
    expect(graph.states.find((state) => state.id === 'TERMINATED')).toMatchObject({ kind: 'final', parent: null });
  });

  it('has the transitions, with their events and guards', () => {
    const responded = graph.edges.find((edge) => edge.id === 'RUNNING.deciding->RUNNING.acting');
    expect(responded).toMatchObject({ events: ['model.responded'], eventless: false });
    const gate = graph.edges.find((edge) => edge.id === 'RUNNING.gate->TERMINATED');
    expect(gate?.eventless).toBe(true);
    expect(gate?.transitions.map((transition) => transition.guard)).toEqual([
      'isDeadlineExceeded',
      'isStepLimitReached',
      'isSpendBudgetExhausted',
    ]);
    expect(
      graph.edges.find((edge) => edge.id === 'RUNNING.repairingArguments->RUNNING.decisionSignalled')?.transitions[0]
        ?.guard,
    ).toBe('canRepairArguments and hasDecisionSignal');
  });
});

describe('routeOf', () => {
  it('finds the eventless hops between two recorded resting states', () => {
    expect(routeOf(graph, 'READY', 'run.started', 'RUNNING.deciding')).toEqual([
      'READY->RUNNING',
      'RUNNING.gate->RUNNING.deciding',
    ]);
    expect(routeOf(graph, 'RUNNING.deciding', 'model.failed', 'RETRY.backingOff')).toEqual([
      'RUNNING.deciding->RUNNING.routingFailure',
      'RUNNING.routingFailure->RUNNING.backoffChecked',
      'RUNNING.backoffChecked->RETRY.backingOff',
    ]);
    // An interruption defined on the parent state.
    expect(routeOf(graph, 'RUNNING.acting', 'run.cancelRequested', 'TERMINATED')).toEqual(['RUNNING->TERMINATED']);
  });

  it('takes the route through a hinted state, and the shortest without one', () => {
    expect(routeOf(graph, 'RUNNING.evaluating', 'evaluation.completed', 'TERMINATED')).toEqual([
      'RUNNING.evaluating->RUNNING.routingEvaluation',
      'RUNNING.routingEvaluation->TERMINATED',
    ]);
    expect(routeOf(graph, 'RUNNING.evaluating', 'evaluation.completed', 'TERMINATED', 'SUCCESS')).toEqual([
      'RUNNING.evaluating->RUNNING.routingEvaluation',
      'RUNNING.routingEvaluation->SUCCESS',
      'SUCCESS->TERMINATED',
    ]);
    expect(
      routeOf(graph, 'RUNNING.deciding', 'model.responded', 'RUNNING.deciding', 'RUNNING.repairingArguments'),
    ).toEqual([
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
    for (const edge of layout.edges) {
      if (edge.drawing === 'route') expect(edge.points.length, edge.id).toBeGreaterThanOrEqual(2);
      else expect([edge.points, edge.label], edge.id).toEqual([[], null]);
    }
    // Compound states do not overlap their siblings.
    const top = layout.states.filter((state) => state.parent === null);
    for (const a of top)
      for (const b of top)
        if (a !== b)
          expect(
            a.x + a.width <= b.x || b.x + b.width <= a.x || a.y + a.height <= b.y || b.y + b.height <= a.y,
            `${a.id} overlaps ${b.id}`,
          ).toBe(true);
    const svg = statechartSvg(layout, { 'READY->RUNNING': 1 });
    for (const state of layout.states) expect(svg).toContain(`data-state="${state.id}"`);
    expect(svg).toContain('class="edge route taken" data-edge="READY-&gt;RUNNING" data-count="1"');
  });
});

describe('the shipped layout', () => {
  it('is the layout of the machine as it is now (run `npm run layout` after changing the statechart)', async () => {
    expect(readFileSync(LAYOUT_DATA_FILE, 'utf8')).toBe(await statechartLayoutModule());
  });

  it('places every state of the machine', () => {
    expect(
      shippedStatechartLayout()
        .states.map((state) => state.id)
        .sort(),
    ).toEqual(machineStateIds().sort());
  });
});

/** The drawn element of one edge (an arrow, a stop mark or a legend chip), by its id; edge groups hold no group. */
function edgeElement(svg: string, id: string): string | undefined {
  const at = svg.indexOf(`data-edge="${id.replaceAll('>', '&gt;')}"`);
  if (at < 0) return undefined;
  const start = svg.lastIndexOf('<g ', at);
  return svg.slice(start, svg.indexOf('</g>', at) + '</g>'.length);
}

describe('the drawing', () => {
  const layout = shippedStatechartLayout();
  const drawings = edgeDrawings(graph);

  it('folds the interruptions (cancel, deadline, fault from every resting state) into one legend entry, drawn as no arrow', () => {
    const interruptions = graph.edges.filter((edge) => drawings.get(edge.id) === 'interruption').map((edge) => edge.id);
    expect(interruptions).toEqual(['READY->TERMINATED', 'RUNNING->TERMINATED', 'RETRY->TERMINATED']);
    const svg = statechartSvg(layout, { 'RUNNING->TERMINATED': 1 });
    const legend = svg.slice(svg.indexOf('<g class="legend">'));
    expect(legend).toContain('to TERMINATED: run.cancelRequested, run.deadlineReached, run.faulted');
    for (const id of interruptions) {
      const chip = edgeElement(svg, id);
      expect(chip, id).toBeDefined();
      expect(legend).toContain(chip);
      expect(chip).not.toContain('<path');
    }
    // Taken, the legend's chip says so, as an arrow would.
    expect(edgeElement(svg, 'RUNNING->TERMINATED')).toContain('class="edge interruption taken"');
    expect(edgeElement(svg, 'READY->TERMINATED')).toContain('class="edge interruption"');
  });

  it("draws a stop from inside RUNNING as a mark in its state's box, not an arrow across the chart", () => {
    const stops = layout.edges.filter((edge) => edge.drawing === 'stop');
    expect(stops.map((edge) => edge.source).sort()).toEqual([
      'RUNNING.acting',
      'RUNNING.backoffChecked',
      'RUNNING.deciding',
      'RUNNING.decisionSignalled',
      'RUNNING.gate',
      'RUNNING.gateStalled',
      'RUNNING.roundSignalled',
      'RUNNING.routingEvaluation',
      'RUNNING.routingFailure',
    ]);
    const svg = statechartSvg(layout);
    for (const edge of stops) {
      const mark = edgeElement(svg, edge.id) ?? '';
      const [x, y] = (/<rect x="([\d.]+)" y="([\d.]+)"/.exec(mark) ?? []).slice(1).map(Number);
      const box = layout.states.find((state) => state.id === edge.source)!;
      expect(mark).not.toContain('<path');
      expect(x! > box.x && x! + 10 < box.x + box.width && y! > box.y && y! + 10 < box.y + box.height, edge.id).toBe(
        true,
      );
      // The tooltip names the guards that stop the run there.
      expect(mark).toContain(edge.transitions[0]!.guard ?? edge.transitions[0]!.event ?? '');
    }
    // What still reaches TERMINATED as an arrow: a finished or failed task.
    expect(
      layout.edges
        .filter((edge) => edge.drawing === 'route' && edge.target === 'TERMINATED')
        .map((edge) => edge.source),
    ).toEqual(['SUCCESS', 'FAILED']);
  });

  it('emphasises the path taken and leaves the rest plain', () => {
    const taken = { 'READY->RUNNING': 1, 'RUNNING.gate->RUNNING.deciding': 3, 'RUNNING.deciding->TERMINATED': 1 };
    const svg = statechartSvg(layout, taken);
    expect(edgeElement(svg, 'READY->RUNNING')).toMatch(
      /^<g class="edge route taken" data-edge="READY-&gt;RUNNING" data-count="1">/,
    );
    expect(edgeElement(svg, 'RUNNING.gate->RUNNING.deciding')).toContain('>3×</text>');
    expect(edgeElement(svg, 'RUNNING.deciding->TERMINATED')).toContain('class="edge stop taken"');
    const plain = layout.edges
      .filter((edge) => !(edge.id in taken))
      .map((edge) => edgeElement(svg, edge.id))
      .filter((element) => element !== undefined);
    expect(plain.length).toBeGreaterThan(30);
    for (const element of plain) expect(element).not.toContain('taken');
  });

  it('crosses few edges: at most 6 crossings between the arrows (44 edges and 36 crossings before the folding)', () => {
    expect(layout.edges.filter((edge) => edge.drawing === 'route')).toHaveLength(32);
    expect(edgeCrossings(layout.edges)).toBeLessThanOrEqual(6);
  });
});

describe('edgeCrossings', () => {
  const edge = (id: string, points: [number, number][]) => ({
    id,
    source: 'a',
    target: 'b',
    events: [],
    eventless: true,
    transitions: [],
    drawing: 'route' as const,
    label: null,
    points: points.map(([x, y]) => ({ x, y })),
  });
  it('counts a crossing, not a shared end or two routes side by side', () => {
    expect(
      edgeCrossings([
        edge('h', [
          [0, 5],
          [10, 5],
        ]),
        edge('v', [
          [5, 0],
          [5, 10],
        ]),
      ]),
    ).toBe(1);
    expect(
      edgeCrossings([
        edge('h', [
          [0, 5],
          [10, 5],
        ]),
        edge('t', [
          [10, 5],
          [10, 10],
        ]),
      ]),
    ).toBe(0);
    expect(
      edgeCrossings([
        edge('h', [
          [0, 5],
          [10, 5],
        ]),
        edge('p', [
          [0, 6],
          [10, 6],
        ]),
      ]),
    ).toBe(0);
    expect(
      edgeCrossings([
        edge('z', [
          [0, 0],
          [0, 10],
          [10, 10],
        ]),
        edge('x', [
          [-5, 5],
          [5, 5],
          [5, 15],
        ]),
      ]),
    ).toBe(2);
  });
});
