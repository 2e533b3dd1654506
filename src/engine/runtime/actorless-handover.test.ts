/**
 * The probe passed, then a run's transition without an actor throws where an actor's does not (stubbed: an
 * XState whose macrostep asks `scope.system.getSnapshot` on a path the probe never took). The run is not lost: an
 * actor restored from the snapshot before the event takes it and the run goes on through that actor; a warning
 * is given once, and the process's later runs have actors from the start.
 */
import { describe, expect, it, vi } from 'vitest';
import type * as XState from 'xstate';
import { createLoop, type LoopConfig, type RunResult } from 'loopstate';
import { reply, scriptedModel, virtualClock } from '../../testing/index.js';
import { sampleLoopConfig } from '../../../test/support/sample-run.js';
import { actorlessRunsWork } from './actorless-probe.js';

/** Which events' transitions ask the scope for what the inert one lacks (none while the probe runs). */
const scope = vi.hoisted(() => ({ breaksOn: null as string | null, actorsMade: 0 }));
vi.mock('xstate', async (importOriginal) => {
  const xstate = await importOriginal<typeof XState>();
  const prototype = xstate.StateMachine.prototype as unknown as {
    transition(this: unknown, snapshot: unknown, event: { type: string }, actorScope: XState.AnyActorScope): unknown;
  };
  const transition = prototype.transition;
  prototype.transition = function (snapshot, event, actorScope) {
    if (event.type === scope.breaksOn) actorScope.system.getSnapshot();
    return transition.call(this, snapshot, event, actorScope);
  };
  return {
    ...xstate,
    createActor: (...args: Parameters<typeof xstate.createActor>) => {
      scope.actorsMade++;
      return xstate.createActor(...args);
    },
  };
});

const warnings = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
const actorlessWarnings = () =>
  warnings.mock.calls.filter(([, options]) => (options as { code?: string })?.code === 'LOOPSTATE_XSTATE_ACTORLESS');

async function bothWays(make: () => LoopConfig): Promise<[RunResult, RunResult]> {
  const plain = await createLoop(make()).run({ goal: 'Look k1 up' });
  const inspected = await createLoop({ ...make(), inspect: () => undefined }).run({ goal: 'Look k1 up' });
  return [plain, inspected];
}

describe('a run whose transition without an actor throws after the probe passed', () => {
  it('goes on through an actor, ends as it would have, and warns once', async () => {
    expect(actorlessRunsWork()).toBe(true);
    // Mid-run: the reply's transition, after run.started and more went through without an actor.
    scope.breaksOn = 'model.responded';
    const [plain, inspected] = await bothWays(() => sampleLoopConfig(virtualClock(1_000)));
    expect(plain.stopReason).toBe('completed');
    expect(plain).toStrictEqual(inspected);
    expect(JSON.stringify(plain)).toBe(JSON.stringify(inspected));
    expect(actorlessWarnings()).toHaveLength(1);
    expect(actorlessWarnings()[0]![0]).toMatch(
      /^loopstate: xstate 5\.\d+\.\d+ does not compute a run without an XState actor as an actor does \(a run's transition without an actor threw TypeError: .*, and an actor took it\); every run/,
    );
    expect(actorlessRunsWork()).toBe(false);
  });

  it("leaves the process's later runs with an actor from the start, without another warning", async () => {
    // No transition throws now: a run that went without an actor would make none (no hand-over to hide it).
    scope.breaksOn = null;
    const loop = createLoop({ model: scriptedModel([reply('a'), reply('b')]) });
    await loop.run({ goal: 'one' });
    const made = scope.actorsMade;
    const result = await loop.run({ goal: 'two' });
    expect(result.stopReason).toBe('completed');
    expect(scope.actorsMade).toBe(made + 1);
    expect(actorlessWarnings()).toHaveLength(1);
  });
});
