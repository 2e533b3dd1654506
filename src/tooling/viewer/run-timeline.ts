/**
 * What the viewer shows of one run: a frame per machine event, the step table and the stop. A trace that
 * records the machine's events (schema 2 on) is replayed through the machine (run-replay.ts), so every
 * frame's state, route, budgets and counters are exact. A version 1 trace records only the resting states
 * before and after each event: it opens with a reduced timeline, its frames holding the states and the
 * shortest route between them, no counters (the page says so).
 */
import type { TraceEvent } from '../../index.js';
import { replayRun, type FrameContext } from './run-replay.js';
import type { RunTrace } from './read-trace.js';
import { stepTable, type StepRow } from './step-table.js';
import { routeOf, type StatechartGraph } from './statechart-graph.js';
import { explainStopReason } from './stop-reason-text.js';

export type { StepRow, StepToolCall } from './step-table.js';

type EventOf<Type extends TraceEvent['type']> = Extract<TraceEvent, { type: Type }>;

export interface SpentUsage {
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
  modelCalls: number;
  toolCalls: number;
}

/** What the page shows at one point of the run: after the run started, then after each machine event. */
export interface TimelineFrame {
  index: number;
  /** Where its event sits among the run's events; -1 for the opening frame. */
  position: number;
  at: number;
  elapsedMs: number;
  /** The machine event of this frame; null for the opening frame. */
  event: string | null;
  from: string | null;
  state: string;
  /** Edges the event took, in order. */
  route: string[];
  /** True when the route is the machine's own (replayed); false when it is the shortest the statechart allows between two recorded states. */
  routeExact: boolean;
  /** False when no route of this statechart joins the recorded states (a trace from another version of the machine). */
  routeFound: boolean;
  taskId: string | null;
  /** The machine's context after the event, replayed; null for a trace that does not record machine events. */
  context: FrameContext | null;
  /** The step-table row of the latest step at this frame, or -1 before the first. */
  stepRow: number;
}

export interface RunTimeline {
  runId: string;
  source: string;
  modelId: string | null;
  goalSummary: string | null;
  tasks: string[];
  startedAt: number;
  /** True when the frames were replayed through the machine; false for a reduced timeline (a version 1 trace). */
  replayed: boolean;
  /** Null values mean "no limit"; null when the trace records none. */
  limits: Record<string, number | null> | null;
  noProgress: Record<string, number | null> | null;
  frames: TimelineFrame[];
  steps: StepRow[];
  /** Times each edge was taken over the whole run. */
  edgeCounts: Record<string, number>;
  stop: {
    reason: string;
    status: string;
    detail: string;
    explanation: string;
    usage: SpentUsage;
    steps: number;
  } | null;
  warnings: string[];
  notices: string[];
}

/** JSON's form of a limit: `Infinity` (switched off) as null. */
const traced = (values: object): Record<string, number | null> =>
  Object.fromEntries(
    Object.entries(values).map(([key, value]) => [
      key,
      typeof value === 'number' && Number.isFinite(value) ? value : null,
    ]),
  );

/** A version 1 trace's frames: the recorded resting states, the shortest route between each two. */
function recordedFrames(
  events: readonly TraceEvent[],
  graph: StatechartGraph,
  startedAt: number,
  firstTask: string | null,
): Omit<TimelineFrame, 'index' | 'elapsedMs' | 'stepRow'>[] {
  let taskId = firstTask;
  const frames: Omit<TimelineFrame, 'index' | 'elapsedMs' | 'stepRow'>[] = [
    {
      position: -1,
      at: startedAt,
      event: null,
      from: null,
      state: 'READY',
      route: [],
      routeExact: false,
      routeFound: true,
      taskId,
      context: null,
    },
  ];
  events.forEach((event, position) => {
    if ('taskId' in event) taskId = event.taskId;
    if (event.type !== 'transition') return;
    const route = routeOf(graph, event.from, event.event, event.to);
    frames.push({
      position,
      at: event.at,
      event: event.event,
      from: event.from,
      state: event.to,
      route: route ?? [],
      routeExact: false,
      routeFound: route !== null,
      taskId,
      context: null,
    });
  });
  return frames;
}

/**
 * The per-event view of one run, from its trace and the statechart.
 * @example
 * const timeline = buildTimeline(await readRunTrace('run.jsonl'), statechartGraph(loopMachine));
 * timeline.frames.at(-1)?.state // 'TERMINATED'
 */
export function buildTimeline(trace: RunTrace, graph: StatechartGraph): RunTimeline {
  const { events } = trace;
  const start = events.find((event): event is EventOf<'run-start'> => event.type === 'run-start');
  const end = events.find((event): event is EventOf<'run-end'> => event.type === 'run-end');
  const startedAt = start?.at ?? events[0]?.at ?? 0;
  const notices = [...trace.skipped, ...trace.notices];
  const replay = replayRun(events, graph);
  const hasMachineEvents = events.some((event) => event.type === 'machine-event');
  if (replay === null && hasMachineEvents)
    notices.push(
      "the trace holds machine events but not the run's first, which carries the machine's input (a run an older loopstate started, or a trace that begins mid-run): frames show the recorded states, without the machine's counters",
    );
  if (replay !== null) notices.push(...replay.notices);
  const places =
    replay === null
      ? recordedFrames(events, graph, startedAt, start?.tasks[0] ?? null)
      : replay.frames.map((frame) => ({
          ...frame,
          routeExact: true,
          routeFound: true,
          taskId: replay.input.tasks[frame.context.taskIndex]?.id ?? null,
        }));
  const { rows, unansweredErrors } = stepTable(events, places);
  const stepPositions = events.flatMap((event, position) => (event.type === 'step-end' ? [position] : []));
  const frames: TimelineFrame[] = places.map((place, index) => ({
    ...place,
    index,
    elapsedMs: place.at - startedAt,
    stepRow: place.position < 0 ? -1 : stepPositions.filter((position) => position < place.position).length - 1,
  }));
  for (const frame of frames)
    if (!frame.routeFound)
      notices.push(
        `no route in this statechart takes ${frame.event ?? '?'} from ${frame.from ?? '?'} to ${frame.state} (a trace from another version of the machine?)`,
      );
  if (unansweredErrors.length > 0)
    notices.push(
      `${unansweredErrors.length} failed model call(s) after the last step: ${unansweredErrors.map((error) => error.errorKind).join(', ')}`,
    );
  const edgeCounts: Record<string, number> = {};
  for (const frame of frames) for (const edge of frame.route) edgeCounts[edge] = (edgeCounts[edge] ?? 0) + 1;

  return {
    runId: trace.runId,
    source: trace.source,
    modelId: start?.modelId ?? null,
    goalSummary: start?.goalSummary ?? null,
    tasks: start?.tasks ?? [],
    startedAt,
    replayed: replay !== null,
    limits: replay === null ? (start?.limits ?? null) : traced(replay.input.limits),
    noProgress: replay === null ? null : traced(replay.input.noProgress),
    frames,
    steps: rows,
    edgeCounts,
    stop:
      end === undefined
        ? null
        : {
            reason: end.stopReason,
            status: end.status,
            detail: end.detail,
            explanation: explainStopReason(end.stopReason),
            usage: end.usage,
            steps: end.steps,
          },
    warnings: events
      .filter((event): event is EventOf<'warning'> => event.type === 'warning')
      .map((event) => event.message),
    notices,
  };
}
