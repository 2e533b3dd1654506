/**
 * How tangled a drawn statechart is, as a number: the points where two edges' routes cross. Edges that
 * meet at a shared state are not crossings; neither are two routes that run along each other.
 */
import type { PlacedEdge, Point } from './statechart-layout.js';

/** Where segment a1-a2 crosses b1-b2 strictly inside both; null when they do not (or only touch, or are parallel). */
function crossingPoint(a1: Point, a2: Point, b1: Point, b2: Point): Point | null {
  const denominator = (a2.x - a1.x) * (b2.y - b1.y) - (a2.y - a1.y) * (b2.x - b1.x);
  if (Math.abs(denominator) < 1e-9) return null;
  const t = ((b1.x - a1.x) * (b2.y - b1.y) - (b1.y - a1.y) * (b2.x - b1.x)) / denominator;
  const u = ((b1.x - a1.x) * (a2.y - a1.y) - (b1.y - a1.y) * (a2.x - a1.x)) / denominator;
  const inside = (value: number) => value > 1e-6 && value < 1 - 1e-6;
  return inside(t) && inside(u) ? { x: a1.x + t * (a2.x - a1.x), y: a1.y + t * (a2.y - a1.y) } : null;
}

const segments = (edge: PlacedEdge) =>
  edge.points.slice(1).map((point, index) => [edge.points[index]!, point] as const);

/**
 * Counts the crossings between every two drawn edges (each edge a polyline).
 * @example
 * edgeCrossings(shippedStatechartLayout().edges) // e.g. 12
 */
export function edgeCrossings(edges: readonly PlacedEdge[]): number {
  const drawn = edges.filter((edge) => edge.points.length >= 2).map(segments);
  let crossings = 0;
  for (let left = 0; left < drawn.length; left++) {
    for (let right = left + 1; right < drawn.length; right++) {
      for (const [a1, a2] of drawn[left]!)
        for (const [b1, b2] of drawn[right]!) if (crossingPoint(a1, a2, b1, b2) !== null) crossings++;
    }
  }
  return crossings;
}
