/**
 * Whether the installed XState computes a run without an actor (`ActorlessRun`) exactly as an actor computes it.
 * `ActorlessRun` hands the machine's `transition` a scope of its own, and what a macrostep reads of its scope is
 * XState's internals: a later 5.x may read a field that scope lacks. So once a process, at the first run without an
 * actor, a small machine built with what the loop machine uses (setup with named guards and params, `and`, named
 * assigns with params, entry actions, eventless `always` chains, nested states, `#id` targets, a parent's handler,
 * a final state, `output`, events not handled and events after done) takes the same events through an actor and
 * through `ActorlessRun`; its snapshots (value, context, status, output) must be the same after every event. If
 * anything differs or throws, every run of the process uses an actor, and a warning naming XState's version says so.
 */
import { and, assign, createActor, setup } from 'xstate';
import type { LoopMachine, LoopSnapshot } from '../../../machines/index.js';
import type { LoopEvent } from '../../../machines/types.js';
import { ActorlessRun } from './run-machine.js';

interface ProbeContext {
  count: number;
  log: string[];
}
type ProbeEvent = { type: 'add'; by: number } | { type: 'finish' } | { type: 'noise' };

/** Made at the probe, not at import: a process whose runs all have actors never builds it. */
function probeMachine() {
  return setup({
    types: {} as {
      context: ProbeContext;
      events: ProbeEvent;
      input: { start: number };
      output: { count: number; log: string[] };
    },
    guards: {
      atLeast: ({ context }, params: { n: number }) => context.count >= params.n,
      isEven: ({ context }) => context.count % 2 === 0,
    },
    actions: {
      add: assign({ count: ({ context, event }) => context.count + (event.type === 'add' ? event.by : 0) }),
      // The count with the tag: the order of a transition's two actions shows in the log.
      note: assign({
        log: ({ context }, params: { tag: string }) => [...context.log, `${params.tag}@${context.count}`],
      }),
    },
  }).createMachine({
    id: 'probe',
    context: ({ input }) => ({ count: input.start, log: [] }),
    initial: 'idle',
    states: {
      idle: {
        entry: { type: 'note', params: { tag: 'idle' } },
        // A guarded array of transitions, each with an array of two actions (their order shows in the log).
        on: {
          add: [
            { guard: 'isEven', target: 'working', actions: ['add', { type: 'note', params: { tag: 'from even' } }] },
            { target: 'working', actions: [{ type: 'note', params: { tag: 'from odd' } }, 'add'] },
          ],
        },
      },
      working: {
        initial: 'checking',
        on: { finish: { target: '#probe.done', actions: { type: 'note', params: { tag: 'finish' } } } },
        states: {
          checking: {
            always: [
              {
                guard: and([{ type: 'atLeast', params: { n: 10 } }, 'isEven']),
                target: 'waiting',
                actions: { type: 'note', params: { tag: 'even' } },
              },
              { guard: { type: 'atLeast', params: { n: 10 } }, target: 'over' },
              { target: 'waiting', actions: { type: 'note', params: { tag: 'below' } } },
            ],
          },
          over: { always: { target: '#probe.idle', actions: { type: 'note', params: { tag: 'over' } } } },
          waiting: { on: { add: { target: 'checking', actions: 'add' } } },
        },
      },
      done: { type: 'final', entry: { type: 'note', params: { tag: 'done' } } },
    },
    output: ({ context }) => ({ count: context.count, log: context.log }),
  });
}

/**
 * Through every kind of step above: both branches of idle's guarded array, below, unhandled, an `always` chain
 * back to idle, the `and` guard taken, the parent's handler taking `finish` in a child state, a final state, and
 * events after done.
 */
const probeEvents: readonly ProbeEvent[] = [
  { type: 'add', by: 4 }, // idle (even) → working → checking → waiting
  { type: 'noise' }, // not handled
  { type: 'add', by: 7 }, // 11: checking → over → idle
  { type: 'add', by: 1 }, // idle (odd) → working → checking, 12 even → waiting
  { type: 'finish' }, // in working.waiting: working's handler → done
  { type: 'add', by: 2 }, // after done
  { type: 'noise' },
];

/** What the two ways must agree on, key order included. */
function observed(snapshot: { value: unknown; context: unknown; status: string; output?: unknown }): string {
  return JSON.stringify({
    value: snapshot.value,
    context: snapshot.context,
    status: snapshot.status,
    output: snapshot.output,
  });
}

/**
 * Drives the probe machine through an actor and through `ActorlessRun` and compares them after every event.
 * @returns null when the two agree throughout, else what differed or what threw.
 * @example
 * const problem = probeActorlessRuns();
 * if (problem !== null) console.warn(`runs keep their actors: ${problem}`);
 */
export function probeActorlessRuns(): string | null {
  try {
    const machine = probeMachine();
    const actor = createActor(machine, { input: { start: 0 } });
    let actorError: unknown = undefined;
    actor.subscribe({ error: (error) => (actorError = error) });
    actor.start();
    // As a run without an actor starts from the state an actor worked out (the loop's kept initial state), but a
    // copy: no object is shared with the actor's, so a write in place by either side shows as a difference.
    const start = actor.getPersistedSnapshot() as unknown as { value: string; context: ProbeContext };
    const actorless = new ActorlessRun(
      machine as unknown as LoopMachine,
      machine.resolveState({ value: start.value, context: structuredClone(start.context) }) as unknown as LoopSnapshot,
    );
    for (const [index, event] of probeEvents.entries()) {
      // A finished actor is stopped (XState's development build warns of an event sent to it): the run is not.
      if (actor.getSnapshot().status === 'active') actor.send(event);
      actorless.send(event as unknown as LoopEvent);
      if (actorError !== undefined) return `an actor of the probe machine failed: ${String(actorError)}`;
      const expected = observed(actor.getSnapshot());
      const actual = observed(actorless.getSnapshot());
      if (actual !== expected)
        return `after event ${index + 1} (${event.type}) an actor has ${expected}, a run without one ${actual}`;
    }
    actor.stop();
    if (actorless.getSnapshot().status !== 'done') return 'the probe machine did not finish';
    return null;
  } catch (error) {
    return `the probe machine's transition without an actor threw ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`;
  }
}

/** What the warning uses of `node:module`. */
interface NodeModules {
  createRequire(path: string): (id: string) => unknown;
}

/** The installed XState's version, for the warning (Node's module loader; a bundle in a browser has none). */
function xstateVersion(): string {
  try {
    const module = globalThis.process?.getBuiltinModule?.('node:module') as NodeModules | undefined;
    const version = (module?.createRequire(import.meta.url)('xstate/package.json') as { version?: unknown })?.version;
    return typeof version === 'string' ? `xstate ${version}` : 'the installed xstate';
  } catch {
    return 'the installed xstate';
  }
}

let verdict: boolean | null = null;

/** Says once a process, where a warning goes (Node's warnings, else the console), that runs keep their actors. */
function warnRunsKeepActors(problem: string): void {
  const message =
    `loopstate: ${xstateVersion()} does not compute a run without an XState actor as an actor does (${problem}); ` +
    'every run of this process uses an actor instead (the same results, a little more time a run)';
  const emit = globalThis.process?.emitWarning;
  if (typeof emit === 'function') emit.call(globalThis.process, message, { code: 'LOOPSTATE_XSTATE_ACTORLESS' });
  else console.warn(message);
}

/**
 * Whether this process's runs without a store or an inspector may run without an actor: the probe, run at the
 * first call and kept; a failed probe warns once. `markActorlessBroken` turns it off for the rest of the process.
 * @example
 * const machine = actorlessRunsWork() ? setup.createRunMachine() : setup.createRunActor();
 */
export function actorlessRunsWork(): boolean {
  if (verdict === null) {
    const problem = probeActorlessRuns();
    verdict = problem === null;
    if (problem !== null) warnRunsKeepActors(problem);
  }
  return verdict;
}

/**
 * A transition without an actor threw where an actor's did not: no later run of the process goes without one.
 * @example
 * markActorlessBroken('TypeError: scope.system.clock is undefined');
 */
export function markActorlessBroken(problem: string): void {
  if (verdict === false) return;
  verdict = false;
  warnRunsKeepActors(problem);
}
