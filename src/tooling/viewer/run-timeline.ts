/**
 * The viewer's time travel, derived from a trace. The machine is pure, but today's trace does not
 * hold its outcome events (their digests and summaries), so instead of replaying them this rebuilds
 * what the page shows at each step from what the trace does hold: usage summed from step-end (and
 * context-summary) events, steps counted from step-end, tool calls from tool-end, transport retries
 * from model.failed transitions into RETRY, reflections and argument repairs from the route each
 * transition took through the statechart, and no-progress streaks recomputed from tool results and
 * verdicts. Every derived figure is named as such on the page; run-end's own totals are shown beside them.
 */
import { addCall } from '../../internal.js';
import { explainStopReason } from './stop-reason-text.js';
import type { TraceEvent } from '../../index.js';
import type { RunTrace } from './read-trace.js';
import { countersMovedBy, NUDGE_WARNING, routeHint, type DerivedCounters } from './route-evidence.js';
import { routeOf, type StatechartGraph } from './statechart-graph.js';

type EventOf<Type extends TraceEvent['type']> = Extract<TraceEvent, { type: Type }>;

export interface SpentUsage {
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
  modelCalls: number;
  toolCalls: number;
}


/** No-progress streaks of the current task, recomputed from the trace (see `noProgressNote`). */
export interface DerivedStreaks {
  /** Most times one (tool, argument summary, result id) triple was seen in the task, as of the last round. */
  repeatedToolCall: number;
  /** Consecutive tool rounds that only brought triples already seen in the task. */
  duplicateObservation: number;
  /** Consecutive unparseable decisions (the parse error's key is not in the trace). */
  sameParseError: number;
  /** Consecutive rejections with the same reason for the same reply. */
  sameEvaluatorReason: number;
  /** The last nudge, from its warning. */
  nudge: { step: number; signal: string } | null;
}

/** What the page shows at one point of the run: after the run started, then after each machine event. */
export interface TimelineFrame {
  index: number;
  at: number;
  elapsedMs: number;
  /** The machine event of this frame; null for the opening frame. */
  event: string | null;
  from: string | null;
  state: string;
  /** Edges the event took (the eventless hops between resting states are reconstructed). */
  route: string[];
  routeFound: boolean;
  taskId: string | null;
  steps: number;
  usage: SpentUsage;
  counters: DerivedCounters;
  streaks: DerivedStreaks;
  /** The step-table row of the latest step at this frame, or -1 before the first. */
  stepRow: number;
}

export interface StepToolCall {
  callId: string;
  name: string;
  argumentsSummary: string;
  status: string | null;
  latencyMs: number | null;
  bytes: number | null;
  /** What was wrong with the arguments, when the call was sent back to the model to fix them (not run). */
  argumentError: string | null;
}

export interface StepRow {
  step: number;
  taskId: string;
  at: number;
  /** The resting state the step's decision led to. */
  stateAfter: string | null;
  decision: string;
  replySummary: string | null;
  toolCalls: StepToolCall[];
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
  latencyMs: number;
  verdict: { passed: boolean; reason: string; evaluator: string | null } | null;
  /** Failed model calls retried before this step's call succeeded. */
  retriesBefore: { errorKind: string; message: string; retryDelayMs: number | null }[];
  frame: number;
}

export interface RunTimeline {
  runId: string;
  source: string;
  modelId: string | null;
  goalSummary: string | null;
  tasks: string[];
  startedAt: number;
  /** From run-start when the trace records them (null values mean "no limit"); null when it does not. */
  limits: Record<string, number | null> | null;
  noProgress: Record<string, number | null> | null;
  frames: TimelineFrame[];
  steps: StepRow[];
  /** Times each edge was taken over the whole run. */
  edgeCounts: Record<string, number>;
  stop: { reason: string; status: string; detail: string; explanation: string; usage: SpentUsage; steps: number } | null;
  warnings: string[];
  notices: string[];
}

const zeroUsage = (): SpentUsage => ({ inputTokens: 0, outputTokens: 0, costUsd: 0, modelCalls: 0, toolCalls: 0 });
const zeroStreaks = (): DerivedStreaks => ({ repeatedToolCall: 0, duplicateObservation: 0, sameParseError: 0, sameEvaluatorReason: 0, nudge: null });
const zeroCounters = (): DerivedCounters => ({ transportRetries: 0, reflectionRetries: 0, argumentRepairs: 0 });

/**
 * Rebuilds the per-step view of one run from its trace and the statechart.
 * @example
 * const timeline = buildTimeline(await readRunTrace('run.jsonl'), statechartGraph(loopMachine));
 * timeline.frames.at(-1)?.state // 'TERMINATED'
 */
export function buildTimeline(trace: RunTrace, graph: StatechartGraph): RunTimeline {
  const events = trace.events;
  const start = events.find((event): event is EventOf<'run-start'> => event.type === 'run-start');
  const end = events.find((event): event is EventOf<'run-end'> => event.type === 'run-end');
  const startedAt = start?.at ?? events[0]?.at ?? 0;
  const stopReason = end?.stopReason ?? null;

  const usage = zeroUsage();
  let counters = zeroCounters();
  let streaks = zeroStreaks();
  let steps = 0;
  let taskId: string | null = start?.tasks?.[0] ?? null;
  let state = 'READY';
  const triples = new Map<string, number>();
  const argumentsByCall = new Map<string, string>();
  let roundTriples: string[] = [];
  let lastRejection: { reason: string; reply: string | null } | null = null;
  let lastReply: string | null = null;
  let pendingErrors: StepRow['retriesBefore'] = [];
  const rows: StepRow[] = [];
  const edgeCounts: Record<string, number> = {};
  const notices = [...trace.skipped, ...trace.notices];

  const frame = (index: number, at: number, transition: EventOf<'transition'> | null, route: string[] | null): TimelineFrame => ({
    index,
    at,
    elapsedMs: at - startedAt,
    event: transition?.event ?? null,
    from: transition?.from ?? null,
    state,
    route: route ?? [],
    routeFound: transition === null || route !== null,
    taskId,
    steps,
    usage: { ...usage },
    counters: { ...counters },
    streaks: { ...streaks },
    stepRow: rows.length - 1,
  });
  const frames: TimelineFrame[] = [frame(0, startedAt, null, null)];

  const enterTask = (next: string) => {
    if (next === taskId) return;
    taskId = next;
    counters = zeroCounters();
    streaks = zeroStreaks();
    triples.clear();
    lastRejection = null;
  };

  events.forEach((event, position) => {
    switch (event.type) {
      case 'step-end': {
        enterTask(event.taskId);
        steps++;
        addCall(usage, event);
        lastReply = event.replySummary ?? null;
        streaks.sameParseError = event.decision === 'unparseable' ? streaks.sameParseError + 1 : 0;
        for (const call of event.toolCalls) argumentsByCall.set(call.callId, call.argumentsSummary ?? '');
        rows.push({
          step: event.step,
          taskId: event.taskId,
          at: event.at,
          stateAfter: null,
          decision: event.decision,
          replySummary: event.replySummary ?? null,
          toolCalls: event.toolCalls.map((call) => ({ callId: call.callId, name: call.name, argumentsSummary: call.argumentsSummary ?? '', status: null, latencyMs: null, bytes: null, argumentError: null })),
          inputTokens: event.inputTokens,
          outputTokens: event.outputTokens,
          costUsd: event.costUsd,
          latencyMs: event.latencyMs,
          verdict: null,
          retriesBefore: pendingErrors,
          frame: -1,
        });
        pendingErrors = [];
        break;
      }
      case 'model-error':
        enterTask(event.taskId);
        // A failed call counts; so do the tokens it reported before it failed.
        if (event.inputTokens !== undefined && event.outputTokens !== undefined) addCall(usage, { inputTokens: event.inputTokens, outputTokens: event.outputTokens, costUsd: event.costUsd ?? 0 });
        else usage.modelCalls++;
        pendingErrors.push({ errorKind: event.errorKind, message: event.message, retryDelayMs: event.retryDelayMs ?? null });
        break;
      case 'context-trimmed':
        if (event.summaryUsage) addCall(usage, event.summaryUsage);
        break;
      case 'tool-end': {
        enterTask(event.taskId);
        usage.toolCalls++;
        const call = rows.at(-1)?.toolCalls.find((candidate) => candidate.callId === event.callId);
        if (call) Object.assign(call, { status: event.status, latencyMs: event.latencyMs, bytes: event.bytes ?? null });
        if (event.status === 'ok') {
          const triple = `${event.name}\u0000${argumentsByCall.get(event.callId) ?? ''}\u0000${event.observationId}`;
          triples.set(triple, (triples.get(triple) ?? 0) + 1);
          roundTriples.push(triple);
        }
        break;
      }
      case 'evaluation-end': {
        enterTask(event.taskId);
        const row = rows.at(-1);
        if (row && row.verdict === null) row.verdict = { passed: event.passed, reason: event.reason, evaluator: event.evaluator ?? null };
        if (event.passed) {
          streaks.sameEvaluatorReason = 0;
          lastRejection = null;
        } else {
          const same = lastRejection !== null && lastRejection.reason === event.reason && lastRejection.reply === lastReply;
          streaks.sameEvaluatorReason = same ? streaks.sameEvaluatorReason + 1 : 1;
          lastRejection = { reason: event.reason, reply: lastReply };
        }
        break;
      }
      case 'retry': {
        const calls = rows.at(-1)?.toolCalls ?? [];
        for (const entry of event.argumentErrors ?? []) {
          const call = calls.find((candidate) => candidate.callId === entry.callId);
          if (call) call.argumentError = entry.error;
        }
        break;
      }
      case 'warning': {
        const nudge = NUDGE_WARNING.exec(event.message);
        if (nudge) streaks.nudge = { step: Number(nudge[1]), signal: nudge[2] ?? '' };
        break;
      }
      case 'transition': {
        // Warnings and retries are recorded after the transition that caused them: the evidence is what came before that.
        const before = events.slice(0, position).reverse().find((candidate) => candidate.type !== 'warning' && candidate.type !== 'retry');
        const nextTransition = events.findIndex((candidate, index) => index > position && candidate.type === 'transition');
        const after = events.slice(position + 1, nextTransition === -1 ? undefined : nextTransition);
        const route = routeOf(graph, event.from, event.event, event.to, routeHint(event, before, after, stopReason));
        if (route === null) notices.push(`no route in this statechart takes ${event.event} from ${event.from} to ${event.to} (a trace from another version of the machine?)`);
        for (const edge of route ?? []) edgeCounts[edge] = (edgeCounts[edge] ?? 0) + 1;
        const moved = countersMovedBy(route ?? []);
        counters = {
          transportRetries: counters.transportRetries + (moved.transportRetries ?? 0),
          reflectionRetries: counters.reflectionRetries + (moved.reflectionRetries ?? 0),
          argumentRepairs: counters.argumentRepairs + (moved.argumentRepairs ?? 0),
        };
        if (event.event === 'tools.completed') {
          const repeats = roundTriples.map((triple) => triples.get(triple) ?? 0);
          streaks.repeatedToolCall = repeats.length === 0 ? 0 : Math.max(...repeats);
          const allSeen = repeats.length > 0 && repeats.every((times) => times > 1);
          streaks.duplicateObservation = allSeen ? streaks.duplicateObservation + 1 : 0;
          roundTriples = [];
        }
        // Warnings the machine's decision caused are recorded right after its transition.
        for (const warning of after) {
          const nudge = warning.type === 'warning' ? NUDGE_WARNING.exec(warning.message) : null;
          if (nudge) streaks.nudge = { step: Number(nudge[1]), signal: nudge[2] ?? '' };
        }
        state = event.to;
        const row = rows.at(-1);
        if (event.event === 'model.responded' && row && row.stateAfter === null) row.stateAfter = event.to;
        frames.push(frame(frames.length, event.at, event, route));
        if (event.event === 'model.responded' && row && row.frame === -1) row.frame = frames.length - 1;
        break;
      }
      default:
        break;
    }
  });
  if (pendingErrors.length > 0) {
    notices.push(`${pendingErrors.length} failed model call(s) after the last step: ${pendingErrors.map((error) => error.errorKind).join(', ')}`);
  }

  return {
    runId: trace.runId,
    source: trace.source,
    modelId: start?.modelId ?? null,
    goalSummary: start?.goalSummary ?? null,
    tasks: start?.tasks ?? [],
    startedAt,
    limits: start?.limits ?? null,
    noProgress: null,
    frames,
    steps: rows,
    edgeCounts,
    stop: end === undefined
      ? null
      : {
          reason: end.stopReason,
          status: end.status,
          detail: end.detail,
          explanation: explainStopReason(end.stopReason),
          usage: { inputTokens: end.usage.inputTokens, outputTokens: end.usage.outputTokens, costUsd: end.usage.costUsd, modelCalls: end.usage.modelCalls ?? 0, toolCalls: end.usage.toolCalls ?? 0 },
          steps: end.steps,
        },
    warnings: events.filter((event): event is EventOf<'warning'> => event.type === 'warning').map((event) => event.message),
    notices,
  };
}
