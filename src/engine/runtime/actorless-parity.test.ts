/**
 * Paired runs: the same config without an inspector (no XState actor, `ActorlessRun`) and with one (an actor)
 * end the same way, result and trace deep-equal in the same key order, the trace observer called in the same
 * order, and a rejection the same, where a run is interrupted or a hook of the user's throws: a cancel mid-run,
 * a deadline, an approval asked for, a tool, an evaluator, `policy.decide` or the clock throwing, and a trace
 * observer that throws or aborts the run from inside a transition.
 */
import { beforeAll, describe, expect, it, vi } from 'vitest';
import type * as XState from 'xstate';
import { z } from 'zod';
import { createLoop, defineTool, type LoopConfig, type Model, type RunResult } from 'loopstate';
import { modelError, reply, scriptedModel, toolCall, virtualClock } from '../../testing/index.js';
import { actorlessRunsWork } from './actorless-probe.js';

/**
 * Every XState actor started in this file's process, counted (a loop's setup makes actors for its initial state
 * but starts none): a run without an inspector must start none, an inspected run one.
 */
const actorsStarted = vi.hoisted(() => ({ count: 0 }));
vi.mock('xstate', async (importOriginal) => {
  const xstate = await importOriginal<typeof XState>();
  return {
    ...xstate,
    createActor: (...args: Parameters<typeof xstate.createActor>) => {
      const actor = xstate.createActor(...args);
      const start = actor.start.bind(actor);
      actor.start = () => {
        actorsStarted.count++;
        return start();
      };
      return actor;
    },
  };
});

// The probe's own actor, started once a process, before any counting.
beforeAll(() => expect(actorlessRunsWork()).toBe(true));

const fixed = { generateRunId: () => 'run-fixed', random: () => 0.5 } as const;

function lookup(execute: (input: { key: string }) => unknown, access: 'read' | 'destructive' = 'read') {
  return defineTool({
    name: 'lookup',
    description: 'Look a key up.',
    input: z.object({ key: z.string() }),
    access,
    execute: (input) => execute(input) as string,
  });
}

/** A fresh config for one run, given the run's log of trace events and the controller of its signal. */
type MakeConfig = (log: string[], controller: AbortController) => LoopConfig;

interface Ended {
  result: RunResult | undefined;
  rejection: string | undefined;
  log: string[];
}

async function runOnce(make: MakeConfig, inspected: boolean): Promise<Ended & { actors: number }> {
  const log: string[] = [];
  const controller = new AbortController();
  const config = { ...make(log, controller), ...(inspected ? { inspect: () => undefined } : {}) };
  const before = actorsStarted.count;
  try {
    const result = await createLoop(config).run({ goal: 'Look k up', signal: controller.signal });
    return { result, rejection: undefined, log, actors: actorsStarted.count - before };
  } catch (error) {
    return { result: undefined, rejection: String(error), log, actors: actorsStarted.count - before };
  }
}

/** Runs `make`'s config without an actor and with one; they must end alike. The run without one is returned. */
async function bothWays(make: MakeConfig): Promise<Ended> {
  const actorless = await runOnce(make, false);
  const inspected = await runOnce(make, true);
  // One side without an actor (none started, none handed over to), the other with one.
  expect([actorless.actors, inspected.actors]).toEqual([0, 1]);
  expect(actorless.rejection).toEqual(inspected.rejection);
  expect(actorless.log).toEqual(inspected.log);
  expect(actorless.result).toStrictEqual(inspected.result);
  expect(JSON.stringify(actorless.result)).toBe(JSON.stringify(inspected.result));
  return actorless;
}

/** A trace observer that logs each event's type, then does `also` with it. */
function observed(log: string[], also?: (event: { type: string }) => void): Pick<LoopConfig, 'trace'> {
  return {
    trace: {
      onEvent: (event: { type: string }) => {
        log.push(event.type);
        also?.(event);
      },
    },
  };
}

describe('a run without an actor and a run with one, paired', () => {
  it('end alike when a tool throws', async () => {
    const ended = await bothWays((log) => ({
      ...fixed,
      clock: virtualClock(5),
      ...observed(log),
      tools: [
        lookup(() => {
          throw new Error('boom');
        }),
      ],
      model: scriptedModel([toolCall('lookup', { key: 'k' }), reply('done')]),
    }));
    expect(ended.result?.stopReason).toBe('completed');
    expect(ended.log).toContain('tool-end');
    expect(ended.result?.trace.find((event) => event.type === 'tool-end')).toMatchObject({ status: 'error' });
  });

  it('end alike when an evaluator throws', async () => {
    const ended = await bothWays((log) => ({
      ...fixed,
      clock: virtualClock(5),
      ...observed(log),
      evaluate: {
        name: 'bad',
        kind: 'rule',
        evaluate: () => {
          throw new Error('evaluator bug');
        },
      } as unknown as LoopConfig['evaluate'],
      model: scriptedModel([reply('x'), reply('y')]),
    }));
    expect(ended.result?.stopReason).toBe('fatal_error');
  });

  it('end alike when policy.decide throws', async () => {
    const ended = await bothWays((log) => ({
      ...fixed,
      clock: virtualClock(5),
      ...observed(log),
      tools: [lookup(() => 'v')],
      policy: {
        decide: () => {
          throw new Error('policy bug');
        },
      },
      model: scriptedModel([toolCall('lookup', { key: 'k' }), reply('done')]),
    }));
    expect(ended.result?.stopReason).toBe('fatal_error');
  });

  it('end alike when the trace observer throws at a transition', async () => {
    const ended = await bothWays((log) => ({
      ...fixed,
      clock: virtualClock(5),
      ...observed(log, (event) => {
        if (event.type === 'transition') throw new Error('observer bug');
      }),
      model: scriptedModel([reply('x')]),
    }));
    expect(ended.result?.stopReason).toBe('completed');
    // Disabled after its first throw, with a warning; the run goes on.
    expect(ended.log).toEqual(['run-start', 'machine-event', 'transition']);
    expect(ended.result?.warnings).toEqual(['trace.onEvent threw and was disabled for this run: observer bug']);
  });

  it('end alike when the trace observer aborts the run from inside its first transition', async () => {
    const ended = await bothWays((log, controller) => ({
      ...fixed,
      clock: virtualClock(5),
      ...observed(log, (event) => {
        if (event.type === 'transition') controller.abort('from the observer');
      }),
      tools: [lookup(() => 'v')],
      model: scriptedModel([toolCall('lookup', { key: 'k' }), reply('x')]),
    }));
    expect(ended.result?.stopReason).toBe('cancelled');
  });

  it('end alike when cancelled during a model call', async () => {
    const ended = await bothWays((log, controller) => {
      const scripted = scriptedModel([reply('x')]);
      const model: Model = {
        id: scripted.id,
        generate: async (request) => {
          controller.abort('mid-call');
          await new Promise((resolve) => setTimeout(resolve, 1));
          return scripted.generate(request);
        },
      };
      return { ...fixed, clock: virtualClock(5), ...observed(log), model };
    });
    expect(ended.result?.stopReason).toBe('cancelled');
  });

  it('end alike when the deadline passes during a backoff', async () => {
    const ended = await bothWays((log) => ({
      ...fixed,
      clock: virtualClock(5),
      ...observed(log),
      limits: { deadlineMs: 1_000, maxRetries: 3 },
      model: scriptedModel([modelError({ status: 429, retryAfterMs: 5_000 }), reply('x')]),
    }));
    expect(ended.result?.stopReason).toBe('deadline_exceeded');
  });

  it('end alike when a destructive call waits for approval', async () => {
    const ended = await bothWays((log) => ({
      ...fixed,
      clock: virtualClock(5),
      ...observed(log),
      tools: [lookup(() => 'v', 'destructive')],
      model: scriptedModel([toolCall('lookup', { key: 'k' })]),
    }));
    expect(ended.result?.stopReason).toBe('needs_human');
    expect(ended.result?.pendingApprovals).toHaveLength(1);
  });

  it('end alike when the clock throws mid-run', async () => {
    const ended = await bothWays((log) => {
      const clock = virtualClock(5);
      let reads = 0;
      return {
        ...fixed,
        ...observed(log),
        clock: {
          ...clock,
          now: () => {
            if (++reads === 4) throw new Error('clock bug');
            return clock.now();
          },
        },
        model: scriptedModel([reply('x')]),
      };
    });
    expect(ended.result?.stopReason).toBe('fatal_error');
    expect(ended.result?.error?.message).toBe('clock bug');
  });

  it('keep concurrent runs apart: interleaved runs each end as the same run alone through an actor', async () => {
    // Each its own clock and tool result: what a run took from another shows in its times or its transcript.
    const configFor = (index: number): LoopConfig => ({
      ...fixed,
      clock: virtualClock(index * 1_000),
      tools: [lookup(async () => new Promise((resolve) => setTimeout(() => resolve(`v${index}`), index)))],
      model: scriptedModel([toolCall('lookup', { key: 'k' }), toolCall('lookup', { key: 'j' }), reply(`x${index}`)]),
    });
    const indices = [1, 2, 3, 4, 5, 6, 7, 8];
    const before = actorsStarted.count;
    const results = await Promise.all(indices.map((index) => createLoop(configFor(index)).run({ goal: 'g' })));
    expect(actorsStarted.count).toBe(before);
    for (const [at, index] of indices.entries()) {
      const alone = await createLoop({ ...configFor(index), inspect: () => undefined }).run({ goal: 'g' });
      expect(alone.output).toBe(`x${index}`);
      expect(results[at]).toStrictEqual(alone);
      expect(JSON.stringify(results[at])).toBe(JSON.stringify(alone));
    }
  });
});
