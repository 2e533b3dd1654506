import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { loopMachine } from '../../../machines/index.js';
import { writeSampleTrace } from '../../../test/support/sample-run.js';
import { createLoop, defineTool, type RunResult, type TraceEvent } from '../../index.js';
import { emptyReply, modelError, scriptedModel, toolCall, virtualClock } from '../../testing/index.js';
import { pickRun, readRunTrace } from './read-trace.js';
import { buildTimeline, type RunTimeline } from './run-timeline.js';
import { statechartGraph } from './statechart-graph.js';

const graph = statechartGraph(loopMachine);
const V1_FIXTURE = resolve(
  dirname(fileURLToPath(import.meta.url)),
  '../../../test/fixtures/traces/v1-sample-run.jsonl',
);
let directory: string;
let result: RunResult;
let timeline: RunTimeline;
beforeAll(async () => {
  directory = mkdtempSync(join(tmpdir(), 'loopstate-timeline-'));
  const path = join(directory, 'run.jsonl');
  result = await writeSampleTrace(path);
  timeline = buildTimeline(await readRunTrace(path), graph);
});
afterAll(() => rmSync(directory, { recursive: true, force: true }));

const timelineOf = (events: readonly object[]) =>
  buildTimeline(pickRun(events.map((event) => JSON.stringify(event)).join('\n'), 'run.jsonl'), graph);

describe('buildTimeline on a real run', () => {
  it('has one frame per machine event after the opening one, each in the state the run went to', () => {
    const transitions = result.trace.filter((event) => event.type === 'transition');
    expect(result.trace.filter((event) => event.type === 'machine-event')).toHaveLength(transitions.length);
    expect(timeline.replayed).toBe(true);
    expect(timeline.frames.map((frame) => frame.state)).toEqual(['READY', ...transitions.map((event) => event.to)]);
    expect(timeline.frames.every((frame) => frame.routeExact && frame.routeFound)).toBe(true);
    expect(timeline.edgeCounts['RUNNING.gate->RUNNING.deciding']).toBe(3);
  });

  it("ends with the machine's own totals, the ones the run reported", () => {
    expect(timeline.frames.at(-1)?.context).toMatchObject({
      steps: result.steps,
      usage: result.usage,
      stop: { reason: 'completed', detail: result.detail },
    });
    expect(timeline.stop).toMatchObject({
      reason: 'completed',
      status: 'succeeded',
      steps: result.steps,
      usage: result.usage,
    });
    expect(timeline.stop?.explanation).toMatch(/an answer its evaluators accepted/);
  });

  it('builds the step table: effect, tool calls, tokens, cost, latency, verdict, retries, and the frame of each decision', () => {
    expect(
      timeline.steps.map((row) => [
        row.step,
        row.stateAfter,
        row.decision,
        row.verdict?.passed ?? null,
        row.retriesBefore.length,
        row.frame,
      ]),
    ).toEqual([
      [1, 'RUNNING.acting', 'tool_calls', null, 1, 4],
      [2, 'RUNNING.evaluating', 'final', false, 0, 6],
      [3, 'RUNNING.evaluating', 'final', true, 0, 8],
    ]);
    expect(timeline.steps[0]).toMatchObject({
      inputTokens: 180,
      outputTokens: 24,
      latencyMs: 350,
      toolCalls: [{ name: 'get_order_status', status: 'ok', latencyMs: 120 }],
      retriesBefore: [{ errorKind: 'rate_limited' }],
    });
    expect(timeline.frames.map((frame) => frame.stepRow)).toEqual([-1, -1, -1, -1, 0, 0, 1, 1, 2, 2]);
  });

  it('shows the limits and thresholds the machine ran with (switched off as null)', () => {
    expect(timeline.limits).toMatchObject({ maxSteps: 6, maxCostUsd: 0.01, maxRetries: 2, maxTransportRetries: null });
    expect(timeline.noProgress).toMatchObject({ repeatedToolCall: 2, planStall: 10 });
  });
});

describe('buildTimeline on a version 1 trace (before machine events were recorded)', () => {
  it('opens with a reduced timeline: the recorded states, the shortest routes, the full step table, no counters', async () => {
    const v1 = buildTimeline(await readRunTrace(V1_FIXTURE), graph);
    expect(v1.replayed).toBe(false);
    expect(v1.notices).toEqual([]);
    expect(v1.frames.map((frame) => frame.state)).toEqual(timeline.frames.map((frame) => frame.state));
    expect(v1.frames.every((frame) => frame.context === null && !frame.routeExact && frame.routeFound)).toBe(true);
    // The shortest route is the one taken here, except where a longer one was: a rejection's reflection is as long as a pass.
    expect(v1.frames[7]?.route).toEqual(timeline.frames[7]?.route);
    expect(v1.steps).toEqual(timeline.steps.map((row) => ({ ...row, frame: row.frame })));
    expect(v1.limits).toMatchObject({ maxSteps: 6, maxCostUsd: 0.01 });
    expect(v1.noProgress).toBeNull();
    expect(v1.stop).toEqual(timeline.stop);
  });
});

describe('buildTimeline when the trace and the machine part ways', () => {
  it('a trace that begins mid-run holds no machine input: the recorded states, and a notice', () => {
    const events = result.trace.filter((event, index) => index > 1 || event.type !== 'machine-event');
    const cut = timelineOf(events);
    expect(cut.replayed).toBe(false);
    expect(cut.notices).toContain(
      "the trace holds machine events but not the run's first, which carries the machine's input (a run an older loopstate started, or a trace that begins mid-run): frames show the recorded states, without the machine's counters",
    );
  });

  it('says where a replay leaves the recorded run (a trace from another version of the machine)', () => {
    let changed = false;
    const events = result.trace.map((event): TraceEvent => {
      if (changed || event.type !== 'transition' || event.event !== 'tools.completed') return event;
      changed = true;
      return { ...event, to: 'RUNNING.gateStalled' };
    });
    expect(timelineOf(events).notices).toEqual([
      'the replay left RUNNING.acting for RUNNING.deciding on tools.completed, the run for RUNNING.gateStalled: a trace from another version of the machine? Frames from here on may differ from the run',
    ]);
  });
});

describe('buildTimeline on the retry layers', () => {
  const lookup = defineTool({
    name: 'lookup',
    description: 'Looks up',
    input: z.object({ id: z.string() }),
    access: 'read',
    execute: async ({ id }) => ({ id }),
  });

  it('an invalid tool call repaired, a parse error, and a fatal model error', async () => {
    const events: TraceEvent[] = [];
    const run = await createLoop({
      model: scriptedModel([
        toolCall('lookup', { id: 7 }),
        emptyReply(),
        toolCall('lookup', { id: 'a' }),
        modelError({ status: 401 }),
      ]),
      tools: [lookup],
      clock: virtualClock(),
      trace: { onEvent: (event) => events.push(event) },
    }).run({ goal: 'g' });
    expect(run.stopReason).toBe('fatal_error');
    const repaired = timelineOf(events);
    expect(
      repaired.frames.map((frame) => [
        frame.event,
        frame.context?.task.argumentRepairs,
        frame.context?.progress.sameParseErrorStreak,
      ]),
    ).toEqual([
      [null, 0, 0],
      ['run.started', 0, 0],
      ['model.responded', 1, 1],
      // An empty reply: a parse error of another kind than the invalid arguments, so the streak starts over.
      ['model.responded', 1, 1],
      // A valid call: repairs count consecutive rounds, so they start over too.
      ['model.responded', 0, 0],
      ['tools.completed', 0, 0],
      ['model.failed', 0, 0],
    ]);
    expect(repaired.frames[2]?.route).toEqual([
      'RUNNING.deciding->RUNNING.repairingArguments',
      'RUNNING.repairingArguments->RUNNING.gate',
      'RUNNING.gate->RUNNING.deciding',
    ]);
    expect(repaired.edgeCounts['RUNNING.deciding->RUNNING.gate']).toBe(1);
    expect(repaired.notices).toEqual(['1 failed model call(s) after the last step: auth']);
    // The repaired call was not run; the step table says what was wrong with its arguments.
    expect(repaired.steps[0]?.toolCalls).toEqual([
      expect.objectContaining({
        name: 'lookup',
        status: null,
        argumentError: 'id: Invalid input: expected string, received number',
      }),
    ]);
  });

  it('a cancelled run: the interruption is taken from the parent state', async () => {
    const controller = new AbortController();
    const events: TraceEvent[] = [];
    const cancelling = defineTool({
      name: 'lookup',
      description: 'Cancels',
      input: z.object({ id: z.string() }),
      access: 'read',
      execute: async () => {
        controller.abort();
        return {};
      },
    });
    const run = await createLoop({
      model: scriptedModel([toolCall('lookup', { id: 'a' })]),
      tools: [cancelling],
      clock: virtualClock(),
      trace: { onEvent: (event) => events.push(event) },
    }).run({ goal: 'g', signal: controller.signal });
    expect(run.stopReason).toBe('cancelled');
    const cancelled = timelineOf(events);
    expect(cancelled.frames.at(-1)).toMatchObject({
      event: 'run.cancelRequested',
      state: 'TERMINATED',
      route: ['RUNNING->TERMINATED'],
      context: { stop: { reason: 'cancelled' } },
    });
  });
});
