/** The statechart's layout as the viewer draws it: boxes of states, routes and labels of edges. */
import type { StatechartEdge, StatechartGraph, StatechartState } from './statechart-graph.js';

export interface Point {
  x: number;
  y: number;
}

/** A state's box, in absolute page coordinates. */
export interface PlacedState extends StatechartState {
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface PlacedLabel {
  text: string;
  x: number;
  y: number;
  width: number;
  height: number;
}

/**
 * How an edge is drawn. `route`: an arrow, laid out. The edges into the final state would otherwise cross
 * everything on their way to it, so they are folded: `stop`, one from a state inside RUNNING or RETRY (a
 * budget, a deadline, a denial...), is a stop mark on its state's box; `interruption`, one a top-level state
 * defines for all of its states (cancel, deadline, fault), is an entry of the legend.
 */
export type EdgeDrawing = 'route' | 'stop' | 'interruption';

/** An edge's route as a polyline from source to target (empty when folded), and its label's box when it has one. */
export interface PlacedEdge extends StatechartEdge {
  drawing: EdgeDrawing;
  points: Point[];
  label: PlacedLabel | null;
}

export interface StatechartLayout {
  width: number;
  height: number;
  states: PlacedState[];
  edges: PlacedEdge[];
}

/**
 * Text metrics the layout reserves room with and the drawing uses: 13 px sans-serif, generous so a label
 * never overflows its box; the stop mark's room at the right end of a state's box.
 */
export const STATECHART_TEXT = { fontSize: 13, characterWidth: 7.8, lineHeight: 17, stopMarkWidth: 18 } as const;

/** The text on an edge: its events, one per line. Eventless edges carry none (they are drawn dashed). */
export function edgeLabelText(edge: StatechartEdge): string {
  return edge.events.join('\n');
}

/**
 * How each edge of `graph` is drawn; see `EdgeDrawing`.
 * @example
 * edgeDrawings(statechartGraph(loopMachine)).get('RUNNING->TERMINATED') // 'interruption'
 */
export function edgeDrawings(graph: StatechartGraph): Map<string, EdgeDrawing> {
  const byId = new Map(graph.states.map((state) => [state.id, state]));
  return new Map(
    graph.edges.map((edge) => {
      const source = byId.get(edge.source);
      if (byId.get(edge.target)?.kind !== 'final' || source === undefined) return [edge.id, 'route'];
      if (source.parent !== null) return [edge.id, 'stop'];
      // A top-level state's own events reach every state inside it; its eventless exits (a task done or failed) stay arrows.
      return [edge.id, edge.eventless ? 'route' : 'interruption'];
    }),
  );
}
