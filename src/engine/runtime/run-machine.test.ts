/**
 * A run without a store or an inspector takes its events through the machine's transitions alone, without an
 * XState actor: the same result, trace (key order included) and messages as a run through an actor.
 */
import { describe, expect, it, vi } from 'vitest';
import * as XState from 'xstate';
import { z } from 'zod';
import { loopMachine, type LoopSnapshot } from '../../../machines/index.js';
import { createLoop, defineTool, evaluators, type LoopConfig, type RunResult } from 'loopstate';
import { modelError, reply, scriptedModel, toolCall, virtualClock } from '../../testing/index.js';
import { resolveConfig } from '../config/config.js';
import { sampleLoopConfig } from '../../../test/support/sample-run.js';
import { loopSetupOf } from './loop-setup.js';
import { actorlessRunsWork, probeActorlessRuns } from './actorless-probe.js';
import { ActorlessRun, type HandOver } from './run-machine.js';

/** Every XState actor made in this file's process, counted. */
const actorsMade = vi.hoisted(() => ({ count: 0 }));
vi.mock('xstate', async (importOriginal) => {
  const xstate = await importOriginal<typeof XState>();
  return {
    ...xstate,
    createActor: (...args: Parameters<typeof xstate.createActor>) => {
      actorsMade.count++;
      return xstate.createActor(...args);
    },
  };
});

const lookup = defineTool({
  name: 'lookup',
  description: 'Look a key up.',
  input: z.object({ key: z.string() }),
  access: 'read',
  execute: ({ key }) => `value of ${key}`,
});

/** Runs the config a fresh `make()` gives twice: without an inspector (no actor) and with one (an actor). */
async function bothWays(make: () => LoopConfig, goal = 'Look k1 up'): Promise<[RunResult, RunResult]> {
  const actorless = await createLoop(make()).run({ goal });
  const inspected = await createLoop({ ...make(), inspect: () => undefined }).run({ goal });
  return [actorless, inspected];
}

/** Deep-equal and in the same key order (a trace's JSON is public). */
function expectSameRun(actorless: RunResult, inspected: RunResult): void {
  expect(actorless).toStrictEqual(inspected);
  expect(JSON.stringify(actorless)).toBe(JSON.stringify(inspected));
}

const fixed = { generateRunId: () => 'run-fixed', random: () => 0.5 } as const;

describe('a run without a store or an inspector', () => {
  it('makes no XState actor; a run with an inspector makes one', async () => {
    const loop = createLoop({ ...sampleLoopConfig(virtualClock()), model: scriptedModel([reply('{}')]) });
    // The loop's first run works out its initial state once (two actors of XState's own); its runs make none.
    await loop.run({ goal: 'first' }).catch(() => undefined);
    const before = actorsMade.count;
    const plain = createLoop({ model: scriptedModel([reply('a'), reply('b'), reply('c')]) });
    await plain.run({ goal: 'one' });
    const afterFirst = actorsMade.count;
    await plain.run({ goal: 'two' });
    await plain.run({ goal: 'three' });
    expect(actorsMade.count).toBe(afterFirst);
    expect(afterFirst - before).toBeLessThanOrEqual(2);
    const inspected = createLoop({ model: scriptedModel([reply('a'), reply('b')]), inspect: () => undefined });
    await inspected.run({ goal: 'one' });
    const inspectedFirst = actorsMade.count;
    await inspected.run({ goal: 'two' });
    expect(actorsMade.count).toBe(inspectedFirst + 1);
  });

  it('ends as a run through an actor does: an eventful run (retry, tool round, reflection)', async () => {
    const [actorless, inspected] = await bothWays(() => sampleLoopConfig(virtualClock(1_000)));
    expect(actorless.stopReason).toBe('completed');
    expect(actorless.trace.length).toBeGreaterThan(20);
    expectSameRun(actorless, inspected);
  });

  it('ends as a run through an actor does: a step limit, a fatal model error, a nudge, a task skipped', async () => {
    const stepLimit = () => ({
      ...fixed,
      clock: virtualClock(5),
      model: scriptedModel([toolCall('lookup', { key: 'k1' }), toolCall('lookup', { key: 'k2' })]),
      tools: [lookup],
      limits: { maxSteps: 2 },
    });
    const fatal = () => ({
      ...fixed,
      clock: virtualClock(5),
      model: scriptedModel([modelError({ status: 401 })]),
    });
    // The same call twice is no progress: a nudge, then the stop.
    const stalled = () => ({
      ...fixed,
      clock: virtualClock(5),
      model: scriptedModel([
        toolCall('lookup', { key: 'k1' }, { id: 'a' }),
        toolCall('lookup', { key: 'k1' }, { id: 'b' }),
        toolCall('lookup', { key: 'k1' }, { id: 'c' }),
        toolCall('lookup', { key: 'k1' }, { id: 'd' }),
        toolCall('lookup', { key: 'k1' }, { id: 'e' }),
      ]),
      tools: [lookup],
      limits: { maxSteps: 5 },
    });
    const skipped = () => ({
      ...fixed,
      clock: virtualClock(5),
      model: scriptedModel([reply('not json'), reply('{"ok":true}')]),
      limits: { maxRetries: 0 },
      tasks: [
        { id: 'first', prompt: 'Answer in JSON', evaluate: evaluators.json(), onFailure: 'continue' as const },
        { id: 'second', prompt: 'Answer in JSON again', evaluate: evaluators.json() },
      ],
    });
    const stops: string[] = [];
    for (const make of [stepLimit, fatal, stalled, skipped]) {
      const [actorless, inspected] = await bothWays(make);
      stops.push(actorless.stopReason);
      expectSameRun(actorless, inspected);
    }
    expect(stops).toEqual(['max_steps', 'fatal_error', 'no_progress', 'completed']);
  });

  it('ends as a run through an actor does when cancelled before it starts', async () => {
    const results: RunResult[] = [];
    for (const inspect of [undefined, () => undefined]) {
      const controller = new AbortController();
      controller.abort('the user left');
      const loop = createLoop({
        ...fixed,
        clock: virtualClock(5),
        model: scriptedModel([reply('never')]),
        ...(inspect === undefined ? {} : { inspect }),
      });
      results.push(await loop.run({ goal: 'go', signal: controller.signal }));
    }
    const [actorless, inspected] = results as [RunResult, RunResult];
    expect(actorless.stopReason).toBe('cancelled');
    expectSameRun(actorless, inspected);
  });
});

describe('ActorlessRun', () => {
  const setup = loopSetupOf(resolveConfig({ model: scriptedModel([]) }));

  it('takes no event once stopped, as a stopped actor takes none', () => {
    const machine = setup.createRunMachine();
    machine.start();
    const initial = machine.getSnapshot();
    expect(initial.value).toBe('READY');
    machine.stop();
    machine.send({ type: 'run.started', at: 0, nextRequestTokens: 1 });
    expect(machine.getSnapshot()).toBe(initial);
  });

  it('takes no event once the run is over', () => {
    const machine = setup.createRunMachine();
    machine.send({ type: 'run.started', at: 0, nextRequestTokens: 1 });
    expect(machine.getSnapshot().value).toEqual({ RUNNING: 'deciding' });
    machine.send({ type: 'run.cancelRequested', at: 1, message: 'stop' });
    const done = machine.getSnapshot();
    expect(done.status).toBe('done');
    expect(done.output?.stopReason).toBe('cancelled');
    machine.send({ type: 'run.started', at: 2, nextRequestTokens: 1 });
    expect(machine.getSnapshot()).toBe(done);
  });

  it('starts in the state an actor of the loop starts in, with the same context', () => {
    const snapshot = setup.createRunMachine().getSnapshot();
    const actor = setup.createRunActor().getSnapshot();
    expect(snapshot.value).toEqual(actor.value);
    expect(snapshot.status).toBe(actor.status);
    expect(snapshot.context).toStrictEqual(actor.context);
    expect(snapshot.machine).toBe(loopMachine);
  });

  it('gives each run a context of its own, from the same initial state', () => {
    const [a, b] = [setup.createRunMachine(), setup.createRunMachine()];
    a.send({ type: 'run.started', at: 0, nextRequestTokens: 1 });
    expect(a.getSnapshot().context.startedAt).toBe(0);
    expect(b.getSnapshot().context).not.toBe(a.getSnapshot().context);
    expect(b.getSnapshot().context.startedAt).toBeNull();
    expect(b.getSnapshot().value).toBe('READY');
  });

  it('throws what a transition threw, and is left in an error state that takes no event', () => {
    const broken = new Error('a guard of the machine threw');
    const initial = setup.createRunMachine().getSnapshot();
    const machine = new ActorlessRun(
      {
        transition: () => {
          throw broken;
        },
      },
      initial,
    );
    expect(() => machine.send({ type: 'run.started', at: 0, nextRequestTokens: 1 })).toThrow(broken);
    const failed = machine.getSnapshot() as LoopSnapshot & { error?: unknown };
    expect(failed.status).toBe('error');
    expect(failed.error).toBe(broken);
    expect(() => machine.send({ type: 'run.started', at: 0, nextRequestTokens: 1 })).not.toThrow();
  });

  it("runs the machine's own transition", () => {
    const machine = new ActorlessRun(loopMachine, setup.createRunMachine().getSnapshot());
    machine.send({ type: 'run.started', at: 3, nextRequestTokens: 1 });
    expect(machine.getSnapshot().context.startedAt).toBe(3);
  });

  it('hands a transition that threw to an actor restored from the snapshot before it, which goes on', () => {
    const initial = setup.createRunMachine().getSnapshot();
    const told: string[] = [];
    const handOver: HandOver = {
      actor: (snapshot) =>
        XState.createActor(loopMachine, {
          input: setup.machineInput,
          snapshot: loopMachine.getPersistedSnapshot(snapshot),
        }),
      tookOver: (problem) => told.push(problem),
    };
    const machine = new ActorlessRun(
      {
        transition: () => {
          throw new TypeError("Cannot read properties of undefined (reading 'clock')");
        },
      },
      initial,
      handOver,
    );
    machine.send({ type: 'run.started', at: 4, nextRequestTokens: 1 });
    expect(machine.getSnapshot().value).toEqual({ RUNNING: 'deciding' });
    expect(machine.getSnapshot().context.startedAt).toBe(4);
    expect(told).toEqual([
      "a run's transition without an actor threw TypeError: Cannot read properties of undefined (reading 'clock'), and an actor took it",
    ]);
    machine.send({ type: 'run.cancelRequested', at: 5, message: 'stop' });
    expect(machine.getSnapshot().output?.stopReason).toBe('cancelled');
    expect(told).toHaveLength(1);
  });

  it('shows a later error of the actor it handed over to in its snapshot, which the driver ends the run on', async () => {
    const initial = setup.createRunMachine().getSnapshot();
    const machine = new ActorlessRun(
      {
        transition: () => {
          throw new TypeError('the scope lacks a field');
        },
      },
      initial,
      {
        actor: (snapshot) =>
          XState.createActor(loopMachine, {
            input: setup.machineInput,
            snapshot: loopMachine.getPersistedSnapshot(snapshot),
          }),
        tookOver: () => undefined,
      },
    );
    machine.send({ type: 'run.started', at: 4, nextRequestTokens: 1 });
    expect(machine.getSnapshot().value).toEqual({ RUNNING: 'deciding' });
    const broken = new Error('a guard of the machine threw');
    const uncaught: unknown[] = [];
    const noteUncaught = (error: unknown) => void uncaught.push(error);
    process.on('uncaughtException', noteUncaught);
    const transition = vi.spyOn(loopMachine, 'transition').mockImplementation(() => {
      throw broken;
    });
    try {
      machine.send({ type: 'run.cancelRequested', at: 5, message: 'stop' });
      expect(machine.getSnapshot()).toMatchObject({ status: 'error', error: broken });
      // Observed by the hand-over: XState throws nothing unhandled on a later tick.
      await new Promise((resolve) => setTimeout(resolve, 0));
      expect(uncaught).toEqual([]);
    } finally {
      transition.mockRestore();
      process.off('uncaughtException', noteUncaught);
    }
  });

  it('throws what a transition threw when the actor it is handed to fails too (a bug of the machine)', () => {
    const broken = new Error('a guard of the machine threw');
    const initial = setup.createRunMachine().getSnapshot();
    const told: string[] = [];
    const failing = XState.fromTransition(() => {
      throw broken;
    }, null);
    const machine = new ActorlessRun(
      {
        transition: () => {
          throw broken;
        },
      },
      initial,
      {
        actor: () => XState.createActor(failing) as unknown as XState.Actor<typeof loopMachine>,
        tookOver: (problem) => told.push(problem),
      },
    );
    expect(() => machine.send({ type: 'run.started', at: 0, nextRequestTokens: 1 })).toThrow(broken);
    expect(machine.getSnapshot().status).toBe('error');
    expect(told).toEqual([]);
  });
});

describe('the probe of the installed XState', () => {
  it('finds that it computes a run without an actor as an actor does', () => {
    expect(probeActorlessRuns()).toBeNull();
    expect(actorlessRunsWork()).toBe(true);
  });
});
