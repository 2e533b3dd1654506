/**
 * An XState whose macrostep reads a field of its scope that `ActorlessRun`'s inert scope lacks (stubbed here:
 * every machine's `transition` asks `scope.system.getSnapshot`, which an actor's system has): the probe sees it at
 * the process's first run without an actor, every run then goes through an actor and ends as it would have, and a
 * warning naming XState's version is given once.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type * as XState from 'xstate';
import { createLoop, type LoopConfig, type RunResult } from 'loopstate';
import { reply, scriptedModel, virtualClock } from '../../testing/index.js';
import { sampleLoopConfig } from '../../../test/support/sample-run.js';
import { probeActorlessRuns } from './actorless-probe.js';

/** How the stubbed XState's transitions treat a scope without a system snapshot. */
const scope = vi.hoisted(() => ({ mode: 'throws' as 'throws' | 'differs' | 'as-installed' }));
vi.mock('xstate', async (importOriginal) => {
  const xstate = await importOriginal<typeof XState>();
  const prototype = xstate.StateMachine.prototype as unknown as {
    transition(this: unknown, snapshot: unknown, event: unknown, actorScope: XState.AnyActorScope): unknown;
  };
  const transition = prototype.transition;
  prototype.transition = function (snapshot, event, actorScope) {
    if (scope.mode === 'throws') actorScope.system.getSnapshot();
    // A later XState that, say, takes nothing without a system snapshot: no throw, a different state.
    if (scope.mode === 'differs' && typeof actorScope.system.getSnapshot !== 'function') return snapshot;
    return transition.call(this, snapshot, event, actorScope);
  };
  return xstate;
});

const warnings = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
afterEach(() => {
  scope.mode = 'throws';
});

function actorlessWarnings(): unknown[][] {
  return warnings.mock.calls.filter(
    ([, options]) => (options as { code?: string })?.code === 'LOOPSTATE_XSTATE_ACTORLESS',
  );
}

/** Runs the config a fresh `make()` gives without an inspector, then with one (always an actor). */
async function bothWays(make: () => LoopConfig): Promise<[RunResult, RunResult]> {
  const plain = await createLoop(make()).run({ goal: 'Look k1 up' });
  const inspected = await createLoop({ ...make(), inspect: () => undefined }).run({ goal: 'Look k1 up' });
  return [plain, inspected];
}

describe('an XState that computes a run without an actor otherwise than an actor', () => {
  it('fails the probe, whether its transition throws or takes the event otherwise', () => {
    scope.mode = 'throws';
    expect(probeActorlessRuns()).toMatch(/^a transition without an actor threw: TypeError: /);
    scope.mode = 'differs';
    expect(probeActorlessRuns()).toMatch(/^after event 1 \(add\) an actor has .* a run without one /);
    scope.mode = 'as-installed';
    expect(probeActorlessRuns()).toBeNull();
    expect(actorlessWarnings()).toHaveLength(0);
  });

  it('runs every run through an actor, as it would have ended, and warns once naming the version', async () => {
    const [first, inspected] = await bothWays(() => sampleLoopConfig(virtualClock(1_000)));
    expect(first.stopReason).toBe('completed');
    expect(first).toStrictEqual(inspected);
    expect(JSON.stringify(first)).toBe(JSON.stringify(inspected));
    const second = await createLoop({ model: scriptedModel([reply('done')]) }).run({ goal: 'again' });
    expect(second.stopReason).toBe('completed');
    const said = actorlessWarnings();
    expect(said).toHaveLength(1);
    expect(said[0]![0]).toMatch(
      /^loopstate: xstate 5\.\d+\.\d+ does not compute a run without an XState actor as an actor does \(a transition without an actor threw: TypeError: .*\); every run of this process uses an actor instead/,
    );
  });
});
