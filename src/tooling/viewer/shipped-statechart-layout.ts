/**
 * The machine is fixed, so it is laid out once with elkjs at build time (`npm run layout`,
 * scripts/layout-statechart.ts) and shipped in statechart-layout.data.ts: the viewer needs no layout engine at
 * run time. A test lays it out afresh and compares, so the two never drift.
 */
import type { StatechartLayout } from './statechart-layout.js';
import { STATECHART_LAYOUT } from './statechart-layout.data.js';

/**
 * The shipped layout of the loop statechart: every state's box and every edge's route.
 * @example
 * shippedStatechartLayout().states.find((state) => state.id === 'RUNNING.deciding') // { x, y, width, height, ... }
 */
export function shippedStatechartLayout(): StatechartLayout {
  return STATECHART_LAYOUT;
}
