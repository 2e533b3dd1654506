import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { loopMachine } from '../../../machines/index.js';
import { writeSampleTrace } from '../../../test/support/sample-run.js';
import { createLoop } from '../../index.js';
import type { RunResult } from '../../index.js';
import { emptyReply, modelError, reply, scriptedModel, toolCall, virtualClock } from '../../testing/index.js';
import { evaluators } from '../../index.js';
import type { Loop } from '../../index.js';
import { defineTool } from '../../index.js';
import type { TraceEvent } from '../../index.js';
import { pickRun, readRunTrace } from './read-trace.js';
import { buildTimeline, type RunTimeline } from './run-timeline.js';
import { statechartGraph } from './statechart-graph.js';

const graph = statechartGraph(loopMachine);
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

describe('buildTimeline on a real run', () => {
  it('has one frame per machine event after the opening one, ending in the final state', () => {
    const transitions = result.trace.filter((event) => event.type === 'transition');
    expect(timeline.frames).toHaveLength(transitions.length + 1);
    expect(timeline.frames.map((frame) => frame.state)).toEqual(['READY', ...transitions.map((event) => event.to)]);
    expect(timeline.frames.every((frame) => frame.routeFound)).toBe(true);
  });

  it('sums the same usage and steps the run reported', () => {
    const last = timeline.frames.at(-1)!;
    expect(last.steps).toBe(result.steps);
    expect(last.usage.inputTokens).toBe(result.usage.inputTokens);
    expect(last.usage.outputTokens).toBe(result.usage.outputTokens);
    expect(last.usage.costUsd).toBeCloseTo(result.usage.costUsd, 12);
    expect(last.usage.modelCalls).toBe(result.usage.modelCalls);
    expect(last.usage.toolCalls).toBe(result.usage.toolCalls);
    expect(timeline.stop).toMatchObject({ reason: 'completed', status: 'succeeded', steps: result.steps });
    expect(timeline.stop?.explanation).toMatch(/an answer its evaluators accepted/);
  });

  it('counts the transport retry and the reflection from the routes taken, when they happened', () => {
    const counters = timeline.frames.map((frame) => [frame.state, frame.counters.transportRetries, frame.counters.reflectionRetries]);
    expect(counters).toEqual([
      ['READY', 0, 0],
      ['RUNNING.deciding', 0, 0],
      ['RETRY.backingOff', 1, 0],
      ['RUNNING.deciding', 1, 0],
      ['RUNNING.acting', 1, 0],
      ['RUNNING.deciding', 1, 0],
      ['RUNNING.evaluating', 1, 0],
      ['RUNNING.deciding', 1, 1],
      ['RUNNING.evaluating', 1, 1],
      ['TERMINATED', 1, 1],
    ]);
    expect(timeline.frames.at(-1)?.route).toEqual(['RUNNING.evaluating->RUNNING.routingEvaluation', 'RUNNING.routingEvaluation->SUCCESS', 'SUCCESS->TERMINATED']);
    expect(timeline.edgeCounts['RUNNING.gate->RUNNING.deciding']).toBe(3);
  });

  it('builds the step table: effect, tool calls, tokens, cost, latency, verdict, retries', () => {
    expect(timeline.steps.map((row) => [row.step, row.stateAfter, row.decision, row.verdict?.passed ?? null, row.retriesBefore.length])).toEqual([
      [1, 'RUNNING.acting', 'tool_calls', null, 1],
      [2, 'RUNNING.evaluating', 'final', false, 0],
      [3, 'RUNNING.evaluating', 'final', true, 0],
    ]);
    expect(timeline.steps[0]).toMatchObject({ inputTokens: 180, outputTokens: 24, latencyMs: 350, toolCalls: [{ name: 'get_order_status', status: 'ok', latencyMs: 120 }], retriesBefore: [{ errorKind: 'rate_limited' }] });
    expect(timeline.frames[timeline.steps[0]!.frame]?.state).toBe('RUNNING.acting');
    // run-start records the run's limits (switched-off ones as null).
    expect(timeline.limits).toMatchObject({ maxSteps: 6, maxCostUsd: 0.01, maxRetries: 2 });
  });

  it('shows no limits for a trace whose run-start has none (an older trace)', async () => {
    const content = (await import('node:fs')).readFileSync(join(directory, 'run.jsonl'), 'utf8').replace(/,"limits":\{[^}]*\}/, '');
    expect(content).not.toContain('"limits"');
    expect(buildTimeline(pickRun(content, 'run.jsonl'), graph).limits).toBeNull();
  });
});

describe('buildTimeline on a doom loop', () => {
  it('recomputes the repeated-call streak and reads the nudge, then the no_progress stop', async () => {
    const events: TraceEvent[] = [];
    const lookup = defineTool({ name: 'lookup', description: 'Looks up', input: z.object({ id: z.string() }), access: 'read', execute: async () => ({ same: true }) });
    const model = scriptedModel(Array.from({ length: 5 }, () => toolCall('lookup', { id: 'A' })));
    const run = await createLoop({ model, tools: [lookup], clock: virtualClock(), trace: { onEvent: (event) => events.push(event) } }).run({ goal: 'loop' });
    expect(run.stopReason).toBe('no_progress');
    const doom = buildTimeline(pickRun(events.map((event) => JSON.stringify(event)).join('\n'), 'doom.jsonl'), graph);
    expect(doom.frames.every((frame) => frame.routeFound)).toBe(true);
    const afterRounds = doom.frames.filter((frame) => frame.event === 'tools.completed').map((frame) => frame.streaks.repeatedToolCall);
    expect(afterRounds).toEqual([1, 2, 3].slice(0, afterRounds.length));
    expect(doom.frames.at(-1)?.streaks.nudge).toMatchObject({ signal: 'repeated_tool_call' });
    expect(doom.frames.some((frame) => frame.route.includes('RUNNING.acting->RUNNING.roundSignalled'))).toBe(true);
    expect(doom.stop?.reason).toBe('no_progress');
  });
});

/** The trace of one run of `loop`, through the JSONL reader. */
async function traced(run: (onEvent: (event: TraceEvent) => void) => Promise<RunResult>): Promise<{ result: RunResult; timeline: RunTimeline }> {
  const events: TraceEvent[] = [];
  const result = await run((event) => events.push(event));
  return { result, timeline: buildTimeline(pickRun(events.map((event) => JSON.stringify(event)).join('\n'), 'run.jsonl'), graph) };
}

describe('buildTimeline finds a route for every recorded transition', () => {
  const lookup = defineTool({ name: 'lookup', description: 'Looks up', input: z.object({ id: z.string() }), access: 'read', execute: async ({ id }) => ({ id }) });
  const loopWith = (script: Parameters<typeof scriptedModel>[0], extra: object, onEvent: (event: TraceEvent) => void): Loop =>
    createLoop({ model: scriptedModel(script), tools: [lookup], clock: virtualClock(), random: () => 0.5, trace: { onEvent }, ...extra });
  it('a two-task workflow: the task switch goes through SUCCESS and READY, and counters start over', async () => {
    const { result, timeline } = await traced((onEvent) =>
      loopWith([reply('first'), reply('second'), reply('second, fixed')], {
        tasks: [
          { id: 'draft', prompt: 'Draft it' },
          { id: 'format', prompt: 'Format it', evaluate: evaluators.rule((text: string) => text.endsWith('fixed'), 'must be fixed') },
        ],
      }, onEvent).run({ goal: 'g' }),
    );
    expect(result.stopReason).toBe('completed');
    expect(timeline.frames.every((frame) => frame.routeFound)).toBe(true);
    const switched = timeline.frames.find((frame) => frame.route.includes('SUCCESS->READY'));
    expect(switched?.route).toEqual(['RUNNING.evaluating->RUNNING.routingEvaluation', 'RUNNING.routingEvaluation->SUCCESS', 'SUCCESS->READY', 'READY->RUNNING', 'RUNNING.gate->RUNNING.deciding']);
    expect(timeline.frames.at(-1)).toMatchObject({ taskId: 'format', counters: { reflectionRetries: 1 } });
    expect(timeline.steps.map((row) => row.taskId)).toEqual(['draft', 'format', 'format']);
  });

  it('a step limit', async () => {
    const { result, timeline } = await traced((onEvent) => loopWith([toolCall('lookup', { id: 'a' }), toolCall('lookup', { id: 'b' }), toolCall('lookup', { id: 'c' })], { limits: { maxSteps: 2 } }, onEvent).run({ goal: 'g' }));
    expect(result.stopReason).toBe('max_steps');
    expect(timeline.frames.every((frame) => frame.routeFound)).toBe(true);
    expect(timeline.notices).toEqual([]);
  });

  it('rejections until the retries run out, through FAILED', async () => {
    const { result, timeline } = await traced((onEvent) =>
      loopWith([reply('no'), reply('still no'), reply('never')], { evaluate: evaluators.rule(() => false, 'always wrong'), limits: { maxRetries: 2 } }, onEvent).run({ goal: 'g' }),
    );
    expect(result.stopReason).toBe('retries_exhausted');
    expect(timeline.frames.every((frame) => frame.routeFound)).toBe(true);
    expect(timeline.frames.at(-1)?.route).toContain('FAILED->TERMINATED');
    expect(timeline.frames.at(-1)?.counters.reflectionRetries).toBe(2);
  });

  it('an invalid tool call repaired, a parse error, and a fatal model error', async () => {
    const { result, timeline } = await traced((onEvent) =>
      loopWith([toolCall('lookup', { id: 7 }), emptyReply(), toolCall('lookup', { id: 'a' }), modelError({ status: 401 })], {}, onEvent).run({ goal: 'g' }),
    );
    expect(result.stopReason).toBe('fatal_error');
    expect(timeline.frames.every((frame) => frame.routeFound)).toBe(true);
    expect(timeline.frames.map((frame) => frame.counters.argumentRepairs).at(-1)).toBe(1);
    expect(timeline.edgeCounts['RUNNING.deciding->RUNNING.gate']).toBe(1);
    expect(timeline.frames.some((frame) => frame.streaks.sameParseError === 1)).toBe(true);
    expect(timeline.notices).toEqual(['1 failed model call(s) after the last step: auth']);
    // The repaired call was not run; the step table says what was wrong with its arguments.
    expect(timeline.steps[0]?.toolCalls).toEqual([expect.objectContaining({ name: 'lookup', status: null, argumentError: 'id: Invalid input: expected string, received number' })]);
  });

  it('an argument repair in a trace written before argumentErrors: the same route and counters, no field error', async () => {
    const events: TraceEvent[] = [];
    await loopWith([toolCall('lookup', { id: 7 }), toolCall('lookup', { id: 'a' }), reply('done')], {}, (event) => events.push(event)).run({ goal: 'g' });
    const read = (list: readonly object[]) => buildTimeline(pickRun(list.map((event) => JSON.stringify(event)).join('\n'), 'run.jsonl'), graph);
    const current = read(events);
    const older = read(events.map((event) => (event.type === 'retry' ? { ...event, argumentErrors: undefined } : event)));
    expect(JSON.stringify(events)).toContain('"argumentErrors"');
    expect(older.frames).toEqual(current.frames);
    expect(older.frames.at(-1)?.counters.argumentRepairs).toBe(1);
    expect(older.steps[0]?.toolCalls[0]?.argumentError).toBeNull();
    expect(current.steps[0]?.toolCalls[0]?.argumentError).toBe('id: Invalid input: expected string, received number');
  });

  it('a cancelled run', async () => {
    const controller = new AbortController();
    const { result, timeline } = await traced((onEvent) => {
      const cancelling = defineTool({ name: 'lookup', description: 'Cancels', input: z.object({ id: z.string() }), access: 'read', execute: async () => { controller.abort(); return {}; } });
      return createLoop({ model: scriptedModel([toolCall('lookup', { id: 'a' }), reply('x')]), tools: [cancelling], clock: virtualClock(), trace: { onEvent } }).run({ goal: 'g', signal: controller.signal });
    });
    expect(result.stopReason).toBe('cancelled');
    expect(timeline.frames.every((frame) => frame.routeFound)).toBe(true);
  });
});
