/**
 * The replay against the real thing: each run below is driven by createLoop, its actor watched through the
 * `inspect` option, and its trace (through JSON lines, as a file holds it) replayed by the viewer. Every
 * frame must be the snapshot the actor went through after the same event: the same state, the same context.
 */
import { describe, expect, it } from 'vitest';
import type { InspectionEvent } from 'xstate';
import { z } from 'zod';
import { loopMachine, type LoopSnapshot } from '../../../machines/index.js';
import { sampleLoopConfig } from '../../../test/support/sample-run.js';
import { createLoop, defineTool, evaluators, memoryStore, type LoopConfig, type TraceEvent } from '../../index.js';
import { reply, scriptedModel, toolCall, virtualClock } from '../../testing/index.js';
import { pickRun } from './read-trace.js';
import { buildTimeline, type RunTimeline } from './run-timeline.js';
import { stateNameOf } from './run-replay.js';
import { statechartGraph } from './statechart-graph.js';

const graph = statechartGraph(loopMachine);

/** What the actor went through: one snapshot per event it took, the first after its start. */
interface Watched {
  snapshots: LoopSnapshot[];
  events: TraceEvent[];
  inspect: (event: InspectionEvent) => void;
  onEvent: (event: TraceEvent) => void;
}
function watch(): Watched {
  const watched: Watched = {
    snapshots: [],
    events: [],
    inspect: (event) => {
      if (event.type === '@xstate.snapshot') watched.snapshots.push(event.snapshot as LoopSnapshot);
    },
    onEvent: (event) => watched.events.push(event),
  };
  return watched;
}

const asFile = (events: readonly TraceEvent[]) => events.map((event) => JSON.stringify(event)).join('\n');
const timelineOf = (events: readonly TraceEvent[]) => buildTimeline(pickRun(asFile(events), 'run.jsonl'), graph);

/** The snapshot as a frame shows it: its state, and its context without the input every frame shares. */
function shown(snapshot: LoopSnapshot) {
  const { limits: _limits, noProgress: _noProgress, tasks: _tasks, ...context } = snapshot.context;
  return { state: stateNameOf(snapshot), context };
}
const framesShown = (timeline: RunTimeline) =>
  timeline.frames.map((frame) => ({ state: frame.state, context: frame.context }));

/** Runs `config` once, watched; returns the timeline of its trace and what the actor went through. */
async function replayed(config: LoopConfig, goal: string) {
  const watched = watch();
  const result = await createLoop({ ...config, inspect: watched.inspect, trace: { onEvent: watched.onEvent } }).run({
    goal,
  });
  const timeline = timelineOf(watched.events);
  expect(timeline.replayed).toBe(true);
  expect(timeline.notices).toEqual([]);
  expect(framesShown(timeline)).toEqual(watched.snapshots.map(shown));
  return { result, timeline };
}

const lookup = defineTool({
  name: 'lookup',
  description: 'Looks up',
  input: z.object({ id: z.string() }),
  access: 'read',
  execute: async () => ({ same: true }),
});

describe('replayRun, frame by frame against the actor', () => {
  it('a transport retry with backoff, a tool round, a rejected answer and its reflection', async () => {
    const { result, timeline } = await replayed(
      sampleLoopConfig(virtualClock(1_767_225_600_000)),
      'What is the status of order O-101?',
    );
    expect(result.stopReason).toBe('completed');
    // [state, failed attempts of this call, transport retries of the run, reflections, input tokens, steps]
    expect(
      timeline.frames.map(({ state, context }) => [
        state,
        context?.transport.consecutiveFailures,
        context?.transport.retries,
        context?.task.reflectionRetries,
        context?.usage.inputTokens,
        context?.steps,
      ]),
    ).toEqual([
      ['READY', 0, 0, 0, 0, 0],
      ['RUNNING.deciding', 0, 0, 0, 0, 0],
      ['RETRY.backingOff', 1, 1, 0, 0, 0],
      ['RUNNING.deciding', 1, 1, 0, 0, 0],
      ['RUNNING.acting', 0, 1, 0, 180, 1],
      ['RUNNING.deciding', 0, 1, 0, 180, 1],
      ['RUNNING.evaluating', 0, 1, 0, 440, 2],
      ['RUNNING.deciding', 0, 1, 1, 440, 2],
      ['RUNNING.evaluating', 0, 1, 1, 770, 3],
      // A task that completes starts its counters over (the next task's, had there been one).
      ['TERMINATED', 0, 1, 0, 770, 3],
    ]);
    expect(timeline.frames[2]?.route).toEqual([
      'RUNNING.deciding->RUNNING.routingFailure',
      'RUNNING.routingFailure->RUNNING.backoffChecked',
      'RUNNING.backoffChecked->RETRY.backingOff',
    ]);
    expect(timeline.frames[7]?.route).toEqual([
      'RUNNING.evaluating->RUNNING.routingEvaluation',
      'RUNNING.routingEvaluation->RETRY.reflecting',
      'RETRY.reflecting->RUNNING.gate',
      'RUNNING.gate->RUNNING.deciding',
    ]);
    expect(timeline.frames.at(-1)?.route).toEqual([
      'RUNNING.evaluating->RUNNING.routingEvaluation',
      'RUNNING.routingEvaluation->SUCCESS',
      'SUCCESS->TERMINATED',
    ]);
    expect(timeline.frames.at(-1)?.context?.usage).toEqual(result.usage);
  });

  it('the same call and result again: a nudge, then no_progress', async () => {
    const { result, timeline } = await replayed(
      {
        model: scriptedModel(Array.from({ length: 5 }, () => toolCall('lookup', { id: 'A' }))),
        tools: [lookup],
        clock: virtualClock(),
      },
      'loop',
    );
    expect(result.stopReason).toBe('no_progress');
    const rounds = timeline.frames.filter((frame) => frame.event === 'tools.completed');
    expect(
      rounds.map((frame) => [frame.context?.progress.repeatCount, frame.context?.progress.nudgedAtStep, frame.state]),
    ).toEqual([
      [1, null, 'RUNNING.deciding'],
      [2, 2, 'RUNNING.deciding'],
      [3, 2, 'TERMINATED'],
    ]);
    expect(rounds[1]?.route).toContain('RUNNING.acting->RUNNING.roundSignalled');
    expect(rounds[2]?.route).toEqual(['RUNNING.acting->RUNNING.roundSignalled', 'RUNNING.roundSignalled->TERMINATED']);
    expect(timeline.frames.at(-1)?.context?.stop).toEqual({ reason: 'no_progress', detail: result.detail });
  });

  it('two tasks: the counters start over in the second', async () => {
    const { timeline } = await replayed(
      {
        model: scriptedModel([reply('first'), reply('second'), reply('second, fixed')]),
        clock: virtualClock(),
        tasks: [
          { id: 'draft', prompt: 'Draft it' },
          {
            id: 'format',
            prompt: 'Format it',
            evaluate: evaluators.rule((text: string) => text.endsWith('fixed'), 'must be fixed'),
          },
        ],
      },
      'g',
    );
    expect(
      timeline.frames.map((frame) => [frame.taskId, frame.context?.task.steps, frame.context?.task.reflectionRetries]),
    ).toEqual([
      ['draft', 0, 0],
      ['draft', 0, 0],
      ['draft', 1, 0],
      ['format', 0, 0],
      ['format', 1, 0],
      ['format', 1, 1],
      ['format', 2, 1],
      // Past the last task: no current task, nothing counted for it.
      [null, 0, 0],
    ]);
  });

  it("a stop for approval, then the approval continues the run: both the resumed result and the two processes' files", async () => {
    const store = memoryStore();
    const refund = defineTool({
      name: 'refund',
      description: 'Refunds',
      input: z.object({ order_id: z.string() }),
      access: 'destructive',
      execute: async ({ order_id }) => ({ refunded: order_id }),
    });
    const first = watch();
    const second = watch();
    // One loop, as a service keeps it; what it runs is watched by the first watcher, then the second.
    let watching = first;
    const loop = createLoop({
      model: scriptedModel([toolCall('refund', { order_id: 'O-7' }), reply('Refunded O-7.')]),
      tools: [refund],
      clock: virtualClock(),
      store,
      inspect: (event) => watching.inspect(event),
      trace: { onEvent: (event) => watching.onEvent(event) },
    });
    const stopped = await loop.run({ goal: 'Refund O-7', runId: 'r1' });
    expect(stopped.stopReason).toBe('needs_human');
    const firstTimeline = timelineOf(first.events);
    expect(framesShown(firstTimeline)).toEqual(first.snapshots.map(shown));
    expect(firstTimeline.frames.at(-1)).toMatchObject({
      state: 'TERMINATED',
      context: { stop: { reason: 'needs_human' } },
    });

    watching = second;
    const done = await loop.resume('r1', { approvals: { [stopped.pendingApprovals[0]!.callId]: { approve: true } } });
    expect(done.stopReason).toBe('completed');
    // The resumed actor replays the journal first; the frames after the stop are the events it then took.
    const continued = second.snapshots.slice(-4).map(shown);
    expect(continued.map((frame) => frame.state)).toEqual([
      'RUNNING.acting',
      'RUNNING.deciding',
      'RUNNING.evaluating',
      'TERMINATED',
    ]);
    // The resumed run's own trace: the journal's events (without the one it stopped at), then the continuation.
    const resumed = timelineOf(done.trace);
    expect(framesShown(resumed).slice(-4)).toEqual(continued);
    expect(framesShown(resumed).slice(0, -4)).toEqual(first.snapshots.slice(0, -1).map(shown));
    // Two processes appending to one file: the stop, then the continuation in its place.
    const file = timelineOf([...first.events, ...second.events]);
    expect(file.notices).toEqual([]);
    expect(framesShown(file)).toEqual([...first.snapshots.map(shown), ...continued]);
    expect(file.frames.at(-1)?.context?.usage).toEqual(done.usage);
  });

  it('a stop for review, then a rejection continues the run: the file of both processes replays without a notice', async () => {
    const first = watch();
    const second = watch();
    let watching = first;
    const loop = createLoop({
      model: scriptedModel([reply('{"amount":250}'), reply('{"amount":90}')]),
      clock: virtualClock(),
      store: memoryStore(),
      evaluate: [
        evaluators.json(),
        evaluators.review({ when: (refund) => (refund as { amount: number }).amount > 100 }),
      ],
      inspect: (event) => watching.inspect(event),
      trace: { onEvent: (event) => watching.onEvent(event) },
    });
    const stopped = await loop.run({ goal: 'Refund O-7', runId: 'r2' });
    expect(stopped.stopReason).toBe('needs_human');
    expect(timelineOf(first.events).frames.at(-1)).toMatchObject({
      state: 'TERMINATED',
      context: { stop: { reason: 'needs_human' } },
    });
    watching = second;
    const done = await loop.resume('r2', { review: { accept: false, reason: 'the total is 90' } });
    expect(done.stopReason).toBe('completed');
    const continued = second.snapshots.slice(-3).map(shown);
    expect(continued.map((frame) => frame.state)).toEqual(['RUNNING.deciding', 'RUNNING.evaluating', 'TERMINATED']);
    const file = timelineOf([...first.events, ...second.events]);
    expect(file.notices).toEqual([]);
    expect(framesShown(file)).toEqual([...first.snapshots.map(shown), ...continued]);
    // The rejection was a reflection: counted while the task ran on.
    expect(file.frames.some((frame) => frame.context?.task.reflectionRetries === 1)).toBe(true);
  });
});
