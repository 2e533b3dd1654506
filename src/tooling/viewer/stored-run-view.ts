/**
 * The viewer for a run read from a store (the console, `loopstate runs show`): the same timeline and page
 * as for a trace file, built from the trace the run's recorded result holds, with no file at all.
 */
import type { TraceEvent } from '../../index.js';
import { loopMachine } from '../../../machines/index.js';
import { buildTimeline, type RunTimeline } from './run-timeline.js';
import { shippedStatechartLayout } from './shipped-statechart-layout.js';
import { statechartGraph } from './statechart-graph.js';
import { viewerPage } from './viewer-page.js';

/**
 * The timeline of a stored run from its recorded trace; `source` names where it came from, `notices` what the
 * page should say besides (e.g. a part of the run's record that cannot be read).
 * @example
 * const timeline = storedRunTimeline(result.runId, result.trace, 'store loops.db');
 */
export function storedRunTimeline(
  runId: string,
  events: readonly TraceEvent[],
  source: string,
  notices: readonly string[] = [],
): RunTimeline {
  const own = events.filter((event) => event.runId === runId);
  const said = [...notices];
  if (own.length === 0) said.push('the store holds no trace for this run (its loop kept no trace in memory)');
  else if (!own.some((event) => event.type === 'run-end'))
    said.push('the trace has no run-end event: the run was still going, or its process died');
  return buildTimeline(
    { source, runId, events: own, otherRuns: [], skipped: [], notices: said },
    statechartGraph(loopMachine),
  );
}

/**
 * The viewer's page for a stored run, `notices` said above its timeline.
 * @example
 * response.end(storedRunPage(result.runId, result.trace, 'store loops.db'));
 */
export function storedRunPage(
  runId: string,
  events: readonly TraceEvent[],
  source: string,
  notices: readonly string[] = [],
): string {
  return viewerPage(shippedStatechartLayout(), storedRunTimeline(runId, events, source, notices));
}
