/** The statechart's layout as the viewer draws it: boxes of states, routes and labels of edges. */
import type { StatechartEdge, StatechartState } from './statechart-graph.js';

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

/** An edge's route as a polyline from source to target, and its label's box when it has one. */
export interface PlacedEdge extends StatechartEdge {
  points: Point[];
  label: PlacedLabel | null;
}

export interface StatechartLayout {
  width: number;
  height: number;
  states: PlacedState[];
  edges: PlacedEdge[];
}

/** The text on an edge: its events, one per line. Eventless edges carry none (they are drawn dashed). */
export function edgeLabelText(edge: StatechartEdge): string {
  return edge.events.join('\n');
}
