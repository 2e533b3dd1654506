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
const scope = vi.hoisted(() => ({
  mode: 'throws' as 'throws' | 'differs' | 'as-installed' | 'recorded',
  /** In 'recorded' mode, each transition without an actor: the event, the state it was taken in, the output after. */
  seen: [] as { event: string; from: unknown; output: unknown }[],
}));
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
    const next = transition.call(this, snapshot, event, actorScope) as { output?: unknown };
    if (scope.mode === 'recorded' && typeof actorScope.system.getSnapshot !== 'function')
      scope.seen.push({
        event: (event as { type: string }).type,
        from: (snapshot as { value: unknown }).value,
        output: next.output,
      });
    return next;
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
    expect(probeActorlessRuns()).toMatch(/^the probe machine's transition without an actor threw TypeError: /);
    scope.mode = 'differs';
    expect(probeActorlessRuns()).toMatch(/^after event 1 \(add\) an actor has .* a run without one /);
    scope.mode = 'as-installed';
    expect(probeActorlessRuns()).toBeNull();
    expect(actorlessWarnings()).toHaveLength(0);
  });

  it("takes the probe through a parent's handler in a child state, guarded arrays and two actions in order", () => {
    scope.mode = 'recorded';
    scope.seen = [];
    expect(probeActorlessRuns()).toBeNull();
    // `finish` reaches the transition in working.waiting (working's handler takes it), not only after done.
    expect(scope.seen.map(({ event, from }) => [event, from])).toEqual([
      ['add', 'idle'],
      ['noise', { working: 'waiting' }],
      ['add', { working: 'waiting' }],
      ['add', 'idle'],
      ['finish', { working: 'waiting' }],
    ]);
    // Both branches of idle's guarded array, each action pair in its order (`from even` after the add, `from
    // odd` before it), the `and` guard taken, and the parent's handler ending the run.
    expect(scope.seen.at(-1)!.output).toEqual({
      count: 12,
      log: ['idle@0', 'from even@4', 'below@4', 'over@11', 'idle@11', 'from odd@11', 'even@12', 'finish@12', 'done@12'],
    });
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
      /^loopstate: xstate 5\.\d+\.\d+ does not compute a run without an XState actor as an actor does \(the probe machine's transition without an actor threw TypeError: .*\); every run of this process uses an actor instead/,
    );
  });
});
